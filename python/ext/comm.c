/* comm.c: communicators and collectives from Python. A communicator travels as its handle (an
 * int); a collective takes a sequence with one array (or Buffer) per member, each at its byte
 * offset, and returns at once like any op. comm_destroy waits for the collectives in flight, so
 * it lets the GIL go. */
#include "pygpar.h"

#include <stdlib.h>

enum { MAX_MEMBERS = 64 };

static PyObject *py_comm_create(PyObject *self, PyObject *args) {
  PyObject *e, *devs;
  if (!PyArg_ParseTuple(args, "OO!", &e, &PyTuple_Type, &devs)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  Py_ssize_t n = PyTuple_Size(devs);
  if (n < 1 || n > MAX_MEMBERS) return gpy_refuse(GPAR_EINVAL, "comm_create: 1 to %d devices, not %zd", MAX_MEMBERS, n);
  int d[MAX_MEMBERS];
  for (Py_ssize_t i = 0; i < n; i++) {
    d[i] = (int)PyLong_AsLong(PyTuple_GetItem(devs, i));
    if (PyErr_Occurred()) return NULL;
  }
  gpar_comm c;
  int st = gpar_comm_create(eng, d, (int)n, &c);
  return st ? gpy_raise(st) : PyLong_FromUnsignedLongLong(c.id);
}

static PyObject *py_comm_destroy(PyObject *self, PyObject *arg) {
  gpar_comm c = {PyLong_AsUnsignedLongLong(arg)};
  if (PyErr_Occurred()) return NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS st = gpar_comm_destroy(c);
  Py_END_ALLOW_THREADS if (st) return gpy_raise(st);
  Py_RETURN_NONE;
}

/* collective(kind, comm, members, count, dtype, op_or_root): kind 0 allreduce, 1 broadcast,
 * 2 reduce_scatter, 3 all_gather. */
static PyObject *py_collective(PyObject *self, PyObject *args) {
  int kind, dtype, arg;
  unsigned long long id;
  PyObject *members;
  Py_ssize_t count;
  if (!PyArg_ParseTuple(args, "iKO!nii", &kind, &id, &PyTuple_Type, &members, &count, &dtype, &arg)) return NULL;
  Py_ssize_t n = PyTuple_Size(members);
  if (n < 1 || n > MAX_MEMBERS || count < 0)
    return gpy_refuse(GPAR_EINVAL, "collective: 1 to %d members, not %zd; count %zd", MAX_MEMBERS, n, count);
  gpar_buffer b[MAX_MEMBERS];
  size_t off[MAX_MEMBERS];
  for (Py_ssize_t i = 0; i < n; i++)
    if (gpy_buffer_arg(PyTuple_GetItem(members, i), &b[i], &off[i]) < 0) return NULL;
  gpar_comm c = {id};
  int st;
  switch (kind) {
  case 0: st = gpar_allreduce(c, b, off, (size_t)count, (gpar_dtype)dtype, (gpar_redop)arg); break;
  case 1: st = gpar_broadcast(c, b, off, (size_t)count, (gpar_dtype)dtype, arg); break;
  case 2: st = gpar_reduce_scatter(c, b, off, (size_t)count, (gpar_dtype)dtype, (gpar_redop)arg); break;
  case 3: st = gpar_all_gather(c, b, off, (size_t)count, (gpar_dtype)dtype); break;
  default: return gpy_refuse(GPAR_EINVAL, "collective kind %d", kind);
  }
  return gpy_done(st);
}

PyMethodDef gpy_comm_methods[] = {
    {"comm_create", py_comm_create, METH_VARARGS, "comm_create(engine, devices) -> communicator id"},
    {"comm_destroy", py_comm_destroy, METH_O, "comm_destroy(id): after the collectives in flight (GIL released)"},
    {"collective", py_collective, METH_VARARGS,
     "collective(kind, comm, members, count, dtype, op_or_root): 0 allreduce, 1 broadcast, 2 reduce_scatter, "
     "3 all_gather"},
    {NULL, NULL, 0, NULL}};
