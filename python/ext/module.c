/* module.c: the _gpar module: its exception class (gpar.Error, carrying the status code, its
 * name and libgpar's message), the one helper that raises it, and the method table that joins
 * the other files' functions. */
#include "pygpar.h"

#include <stdarg.h>
#include <stdio.h>

PyObject *gpy_error;

/* Raise gpar.Error(message) with attributes status, name and message. */
static PyObject *raise_error(int status, const char *message) {
  char text[1200];
  snprintf(text, sizeof text, "%s: %s", gpar_status_name(status), message);
  PyObject *exc = PyObject_CallFunction(gpy_error, "s", text);
  if (!exc) return NULL;
  PyObject *st = PyLong_FromLong(status), *name = PyUnicode_FromString(gpar_status_name(status)),
           *msg = PyUnicode_FromString(message);
  if (st && name && msg && PyObject_SetAttrString(exc, "status", st) == 0 &&
      PyObject_SetAttrString(exc, "name", name) == 0 && PyObject_SetAttrString(exc, "message", msg) == 0)
    PyErr_SetObject(gpy_error, exc);
  Py_XDECREF(st);
  Py_XDECREF(name);
  Py_XDECREF(msg);
  Py_DECREF(exc);
  return NULL;
}

PyObject *gpy_raise(int status) {
  const char *m = gpar_last_error();
  return raise_error(status, m && *m ? m : gpar_strerror(status));
}

PyObject *gpy_refuse(int status, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return raise_error(status, msg);
}

gpar_engine *gpy_engine(PyObject *o) {
  void *p = PyLong_AsVoidPtr(o);
  if (!p && !PyErr_Occurred()) gpy_refuse(GPAR_EINVAL, "not an engine handle");
  return p;
}

static PyObject *py_refuse(PyObject *self, PyObject *args) {
  int status;
  const char *message;
  if (!PyArg_ParseTuple(args, "is", &status, &message)) return NULL;
  return raise_error(status, message);
}

static PyMethodDef module_methods[] = {
    {"refuse", py_refuse, METH_VARARGS, "refuse(status, message): raise gpar.Error for the Python layer's checks"},
    {NULL, NULL, 0, NULL}};

/* Append table t to the module. */
static int add_functions(PyObject *m, PyMethodDef *t) {
  for (; t->ml_name; t++) {
    PyObject *f = PyCFunction_NewEx(t, NULL, PyModule_GetNameObject(m));
    if (!f || PyModule_AddObject(m, t->ml_name, f) < 0) {
      Py_XDECREF(f);
      return -1;
    }
  }
  return 0;
}

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_gpar",
                                        "libgpar's engine, buffers, kernels and BLAS (the gpar package's core).",
                                        -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__gpar(void);
PyMODINIT_FUNC PyInit__gpar(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  PyMethodDef *tables[] = {module_methods, gpy_engine_methods, gpy_buffer_methods, gpy_dlpack_methods, gpy_kernel_methods,
                           gpy_blas_methods,   gpy_graph_methods,  gpy_owner_methods};
  for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
    if (add_functions(m, tables[i]) < 0) goto fail;
  gpy_error = PyErr_NewExceptionWithDoc("gpar.Error",
                                        "A libgpar call failed: status (the code), name (e.g. 'GPAR_EINVAL') and "
                                        "message (libgpar's detail).",
                                        PyExc_RuntimeError, NULL);
  if (!gpy_error || PyModule_AddObject(m, "Error", gpy_error) < 0) goto fail;
  Py_INCREF(gpy_error); /* the module's reference went to the module; keep ours */
  if (gpy_buffer_type_init(m) < 0) goto fail;
#define GPY_STATUS_CONST(name, value, text) \
  if (PyModule_AddIntConstant(m, "GPAR_" #name, value) < 0) goto fail;
  GPAR_STATUS_MAP(GPY_STATUS_CONST)
#undef GPY_STATUS_CONST
  if (PyModule_AddIntConstant(m, "HOST", GPAR_HOST) < 0) goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
