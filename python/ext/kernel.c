/* kernel.c: portable kernels and maps from Python. Handles travel as ints; a launch takes its
 * arguments as a tuple with a kinds string that gpar/ derives once from the signature ('b' a
 * buffer or array, 'i' i32, 'I' u32, 'l' i64, 'L' u64, 'f' f32, 'd' f64), so a launch converts
 * without parsing. Builds let the GIL go; launches do not (they return at once). */
#include "pygpar.h"

#include <string.h>

enum { MAX_ARGS = 64 };

/* Convert args (a tuple) by kinds into a[]; the count, or -1 with an exception set. */
static int convert_args(PyObject *args, const char *kinds, gpar_arg *a) {
  Py_ssize_t n = PyTuple_Size(args);
  if (n < 0) return -1;
  if ((size_t)n != strlen(kinds) || n > MAX_ARGS) {
    gpy_refuse(GPAR_EINVAL, "%zd arguments for %zu parameters", n, strlen(kinds));
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PyTuple_GetItem(args, i);
    switch (kinds[i]) {
    case 'b': {
      gpar_buffer h;
      size_t off;
      if (gpy_buffer_arg(o, &h, &off) < 0) return -1;
      a[i] = gpar_arg_buffer(h, off);
      break;
    }
    case 'i': a[i] = gpar_arg_i32((int32_t)PyLong_AsLong(o)); break;
    case 'I': a[i] = gpar_arg_u32((uint32_t)PyLong_AsUnsignedLongMask(o)); break;
    case 'l': a[i] = gpar_arg_i64(PyLong_AsLongLong(o)); break;
    case 'L': a[i] = gpar_arg_u64(PyLong_AsUnsignedLongLongMask(o)); break;
    case 'f': a[i] = gpar_arg_f32((float)PyFloat_AsDouble(o)); break;
    case 'd': a[i] = gpar_arg_f64(PyFloat_AsDouble(o)); break;
    default: gpy_refuse(GPAR_EINVAL, "argument kind '%c'", kinds[i]); return -1;
    }
    if (PyErr_Occurred()) return -1;
  }
  return (int)n;
}

/* A 1-3 element tuple of sizes into v (missing ones 1 for sizes, 0 stays for groups[1..2]). */
static int read_dims3(PyObject *t, uint32_t v[3], const char *what) {
  Py_ssize_t n = PyTuple_Check(t) ? PyTuple_Size(t) : -1;
  if (n < 1 || n > 3) {
    gpy_refuse(GPAR_EINVAL, "%s: a tuple of 1 to 3 sizes", what);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    unsigned long x = PyLong_AsUnsignedLong(PyTuple_GetItem(t, i));
    if (PyErr_Occurred() || x > UINT32_MAX) {
      PyErr_Clear();
      gpy_refuse(GPAR_EINVAL, "%s[%zd]: a size from 0 to 2^32-1", what, i);
      return -1;
    }
    v[i] = (uint32_t)x;
  }
  return 0;
}

static PyObject *py_kernel_create(PyObject *self, PyObject *args) {
  PyObject *e;
  const char *name, *params, *body, *preamble;
  if (!PyArg_ParseTuple(args, "Osssz", &e, &name, &params, &body, &preamble)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  gpar_kernel k;
  int st = gpar_kernel_create(eng, name, params, body, preamble, &k);
  return st ? gpy_raise(st) : PyLong_FromUnsignedLongLong(k.id);
}

static PyObject *py_kernel_release(PyObject *self, PyObject *arg) {
  gpar_kernel k = {PyLong_AsUnsignedLongLong(arg)};
  if (PyErr_Occurred()) return NULL;
  int st = gpar_kernel_release(k);
  return gpy_done(st);
}

static PyObject *py_kernel_build(PyObject *self, PyObject *args) {
  unsigned long long id;
  int dev, st;
  if (!PyArg_ParseTuple(args, "Ki", &id, &dev)) return NULL;
  Py_BEGIN_ALLOW_THREADS st = gpar_kernel_build((gpar_kernel){id}, dev);
  Py_END_ALLOW_THREADS if (st) return gpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_kernel_log(PyObject *self, PyObject *args) {
  unsigned long long id;
  int dev;
  if (!PyArg_ParseTuple(args, "Ki", &id, &dev)) return NULL;
  char buf[16384];
  int st = gpar_kernel_log((gpar_kernel){id}, dev, buf, sizeof buf, NULL);
  return st ? gpy_raise(st) : PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
}

static PyObject *py_kernel_launch(PyObject *self, PyObject *args) {
  unsigned long long id;
  int dev;
  PyObject *groups, *sizes, *a;
  const char *kinds;
  if (!PyArg_ParseTuple(args, "KiOOsO!", &id, &dev, &groups, &sizes, &kinds, &PyTuple_Type, &a)) return NULL;
  gpar_grid g = {{0, 0, 0}, {1, 1, 1}};
  gpar_arg av[MAX_ARGS];
  if (read_dims3(groups, g.groups, "groups") < 0 || read_dims3(sizes, g.group_size, "group_size") < 0) return NULL;
  int n = convert_args(a, kinds, av);
  if (n < 0) return NULL;
  int st = gpar_kernel_launch((gpar_kernel){id}, dev, &g, av, n);
  return gpy_done(st);
}

/* The same launch from C, n times (arguments converted once, GIL held as a launch holds it):
 * what benchmarks set a Python launch loop against, in one process. */
static PyObject *py_launch_loop(PyObject *self, PyObject *args) {
  unsigned long long id;
  int dev;
  Py_ssize_t n;
  PyObject *groups, *sizes, *a;
  const char *kinds;
  if (!PyArg_ParseTuple(args, "KiOOsO!n", &id, &dev, &groups, &sizes, &kinds, &PyTuple_Type, &a, &n)) return NULL;
  gpar_grid g = {{0, 0, 0}, {1, 1, 1}};
  gpar_arg av[MAX_ARGS];
  if (read_dims3(groups, g.groups, "groups") < 0 || read_dims3(sizes, g.group_size, "group_size") < 0) return NULL;
  int na = convert_args(a, kinds, av);
  if (na < 0) return NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    int st = gpar_kernel_launch((gpar_kernel){id}, dev, &g, av, na);
    if (st) return gpy_raise(st);
  }
  Py_RETURN_NONE;
}

static PyObject *py_map_create(PyObject *self, PyObject *args) {
  PyObject *e;
  const char *name, *params, *expr;
  if (!PyArg_ParseTuple(args, "Osss", &e, &name, &params, &expr)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  gpar_map m;
  int st = gpar_map_create(eng, name, params, expr, &m);
  return st ? gpy_raise(st) : PyLong_FromUnsignedLongLong(m.id);
}

static PyObject *py_map_release(PyObject *self, PyObject *arg) {
  gpar_map m = {PyLong_AsUnsignedLongLong(arg)};
  if (PyErr_Occurred()) return NULL;
  int st = gpar_map_release(m);
  return gpy_done(st);
}

static PyObject *py_map_kernel(PyObject *self, PyObject *arg) {
  gpar_map m = {PyLong_AsUnsignedLongLong(arg)};
  if (PyErr_Occurred()) return NULL;
  gpar_kernel k;
  int st = gpar_map_kernel(m, &k);
  return st ? gpy_raise(st) : PyLong_FromUnsignedLongLong(k.id);
}

static PyObject *py_map_launch(PyObject *self, PyObject *args) {
  unsigned long long id;
  Py_ssize_t n;
  PyObject *a;
  const char *kinds;
  if (!PyArg_ParseTuple(args, "KnsO!", &id, &n, &kinds, &PyTuple_Type, &a)) return NULL;
  if (n < 0) return gpy_refuse(GPAR_EINVAL, "map launch over %zd elements", n);
  gpar_arg av[MAX_ARGS];
  int na = convert_args(a, kinds, av);
  if (na < 0) return NULL;
  int st = gpar_map_launch((gpar_map){id}, (size_t)n, av, na);
  return gpy_done(st);
}

PyMethodDef gpy_kernel_methods[] = {
    {"kernel_create", py_kernel_create, METH_VARARGS, "kernel_create(engine, name, params, body, preamble) -> id"},
    {"kernel_release", py_kernel_release, METH_O, "kernel_release(id)"},
    {"kernel_build", py_kernel_build, METH_VARARGS, "kernel_build(id, dev): build now (GIL released)"},
    {"kernel_log", py_kernel_log, METH_VARARGS, "kernel_log(id, dev) -> the compiler's log"},
    {"kernel_launch", py_kernel_launch, METH_VARARGS,
     "kernel_launch(id, dev, groups, group_size, kinds, args): kinds one letter per argument (b i I l L f d)"},
    {"launch_loop", py_launch_loop, METH_VARARGS,
     "launch_loop(id, dev, groups, group_size, kinds, args, n): the same launch n times from C (benchmarks)"},
    {"map_create", py_map_create, METH_VARARGS, "map_create(engine, name, params, expr) -> id"},
    {"map_release", py_map_release, METH_O, "map_release(id)"},
    {"map_kernel", py_map_kernel, METH_O, "map_kernel(id) -> the map's kernel id"},
    {"map_launch", py_map_launch, METH_VARARGS, "map_launch(id, n, kinds, args)"},
    {NULL, NULL, 0, NULL}};
