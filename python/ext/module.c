/* module.c: the _gpar module's entry point: it makes the exception class gpar.Error (errors.c
 * raises it), the Buffer type, the status constants, and joins the other files' functions. */
#include "pygpar.h"

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

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                                        "_gpar",
                                        "libgpar's engine, buffers, kernels and BLAS (the gpar package's core).",
                                        -1,
                                        NULL,
                                        NULL,
                                        NULL,
                                        NULL,
                                        NULL};

PyMODINIT_FUNC PyInit__gpar(void);
PyMODINIT_FUNC PyInit__gpar(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  PyMethodDef *tables[] = {gpy_error_methods,  gpy_engine_methods, gpy_buffer_methods,
                           gpy_dlpack_methods, gpy_kernel_methods, gpy_blas_methods,
                           gpy_graph_methods,  gpy_comm_methods,   gpy_owner_methods};
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
