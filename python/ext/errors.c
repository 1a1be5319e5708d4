/* errors.c: gpar.Error, the one way the module reports a failure: libgpar's status code, its
 * name and message as attributes (status, name, message), from a libgpar call (gpy_raise: the
 * thread's gpar_last_error) or from the module's own checks (gpy_refuse). Also the engine handle
 * check every call on an engine makes. */
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

PyObject *gpy_done(int status) {
  if (status) return gpy_raise(status);
  Py_RETURN_NONE;
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

PyMethodDef gpy_error_methods[] = {
    {"refuse", py_refuse, METH_VARARGS, "refuse(status, message): raise gpar.Error for the Python layer's checks"},
    {NULL, NULL, 0, NULL}};
