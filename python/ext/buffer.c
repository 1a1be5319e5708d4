/* buffer.c: _gpar.Buffer, a buffer handle that Python owns (released when collected: the
 * memory goes once the ops on it are done), and the calls on buffers: create, import of raw
 * memory, copy, fill, write, read, wait, host and native pointers. Reads and waits let the
 * GIL go. */
#include "pygpar.h"

#include <stdlib.h>
#include <structmember.h>

PyTypeObject *gpy_buffer_type;
static PyObject *name_buf, *name_off; /* "_buf" and "_off", interned once: launches look them up */

PyObject *gpy_buffer_new(gpar_buffer h, int dev, size_t bytes) {
  gpy_buffer *b = PyObject_New(gpy_buffer, gpy_buffer_type);
  if (!b) {
    gpar_buffer_release(h);
    return NULL;
  }
  b->h = h;
  b->dev = dev;
  b->bytes = bytes;
  return (PyObject *)b;
}

static void buffer_dealloc(PyObject *o) {
  gpy_buffer *b = (gpy_buffer *)o;
  PyTypeObject *t = Py_TYPE(o);
  if (b->h.id) gpar_buffer_release(b->h); /* a shut-down engine's handle: refused, nothing to free */
  PyObject_Free(o);
  Py_DECREF(t);
}

int gpy_buffer_handle(PyObject *o, gpar_buffer *h) {
  if (Py_TYPE(o) != gpy_buffer_type) {
    PyErr_Format(PyExc_TypeError, "expected a _gpar.Buffer");
    return -1;
  }
  *h = ((gpy_buffer *)o)->h;
  return 0;
}

int gpy_buffer_arg(PyObject *o, gpar_buffer *h, size_t *off) {
  if (Py_TYPE(o) == gpy_buffer_type) {
    *h = ((gpy_buffer *)o)->h;
    *off = 0;
    return 0;
  }
  PyObject *b = PyObject_GetAttr(o, name_buf);
  if (!b) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "expected a gpar array or buffer");
    return -1;
  }
  PyObject *offo = PyObject_GetAttr(o, name_off);
  int r = offo && gpy_buffer_handle(b, h) == 0 ? 0 : -1;
  if (r == 0) {
    *off = PyLong_AsSize_t(offo);
    if (*off == (size_t)-1 && PyErr_Occurred()) r = -1;
  }
  Py_DECREF(b);
  Py_XDECREF(offo);
  return r;
}

static PyObject *buffer_repr(PyObject *o) {
  gpy_buffer *b = (gpy_buffer *)o;
  return PyUnicode_FromFormat("<_gpar.Buffer %zu bytes on device %d>", b->bytes, b->dev);
}

static PyMemberDef buffer_members[] = {
    {"dev", T_INT, offsetof(gpy_buffer, dev), READONLY, "device index (-1: GPAR_HOST)"},
    {"nbytes", T_PYSSIZET, offsetof(gpy_buffer, bytes), READONLY, "size in bytes"},
    {NULL, 0, 0, 0, NULL}};

static PyType_Slot buffer_slots[] = {{Py_tp_dealloc, (void *)buffer_dealloc},
                                     {Py_tp_repr, (void *)buffer_repr},
                                     {Py_tp_members, buffer_members},
                                     {Py_tp_doc, (void *)"A libgpar buffer handle, released when collected."},
                                     {0, NULL}};

static PyType_Spec buffer_spec = {"_gpar.Buffer", sizeof(gpy_buffer), 0, Py_TPFLAGS_DEFAULT, buffer_slots};

int gpy_buffer_type_init(PyObject *module) {
  if (!(name_buf = PyUnicode_InternFromString("_buf")) || !(name_off = PyUnicode_InternFromString("_off"))) return -1;
  gpy_buffer_type = (PyTypeObject *)PyType_FromSpec(&buffer_spec);
  if (!gpy_buffer_type) return -1;
  Py_INCREF(gpy_buffer_type);
  if (PyModule_AddObject(module, "Buffer", (PyObject *)gpy_buffer_type) < 0) {
    Py_DECREF(gpy_buffer_type);
    return -1;
  }
  return 0;
}

/* ---- calls ---- */

static PyObject *py_buffer_create(PyObject *self, PyObject *args) {
  PyObject *e;
  int dev;
  Py_ssize_t bytes;
  if (!PyArg_ParseTuple(args, "Oin", &e, &dev, &bytes)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  if (bytes < 0) return gpy_refuse(GPAR_EINVAL, "buffer size %zd is negative", bytes);
  gpar_buffer h;
  int st = gpar_buffer_create(eng, dev, (size_t)bytes, &h);
  return st ? gpy_raise(st) : gpy_buffer_new(h, dev, (size_t)bytes);
}

/* The owner of raw memory imported with import_ptr: a Python object, dropped under the GIL. */
static void drop_object(void *ctx) { Py_DECREF((PyObject *)ctx); }

static PyObject *py_import_ptr(PyObject *self, PyObject *args) {
  PyObject *e, *owner;
  int dev;
  unsigned long long ptr;
  Py_ssize_t bytes;
  if (!PyArg_ParseTuple(args, "OiKnO", &e, &dev, &ptr, &bytes, &owner)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  if (bytes < 0) return gpy_refuse(GPAR_EINVAL, "import of %zd bytes", bytes);
  gpy_owner *o = malloc(sizeof *o);
  if (!o) return PyErr_NoMemory();
  o->fn = drop_object;
  o->ctx = owner;
  gpar_buffer h;
  int st = gpar_buffer_import(eng, dev, (void *)(uintptr_t)ptr, (size_t)bytes, gpy_owner_release, o, &h);
  if (st) {
    free(o);
    return gpy_raise(st);
  }
  Py_INCREF(owner); /* dropped by the release, once the buffer is done */
  return gpy_buffer_new(h, dev, (size_t)bytes);
}

static PyObject *py_release(PyObject *self, PyObject *arg) {
  if (Py_TYPE(arg) != gpy_buffer_type) return PyErr_Format(PyExc_TypeError, "expected a _gpar.Buffer");
  /* The handle stays: later calls with it are refused by libgpar ("released"), and so is the
   * release when the object goes (handles are never reused). */
  int st = gpar_buffer_release(((gpy_buffer *)arg)->h);
  gpy_owners_drain();
  return gpy_done(st);
}

static PyObject *py_copy(PyObject *self, PyObject *args) {
  PyObject *d, *s;
  Py_ssize_t doff, soff, n;
  gpar_buffer dh, sh;
  if (!PyArg_ParseTuple(args, "OnOnn", &d, &doff, &s, &soff, &n)) return NULL;
  if (gpy_buffer_handle(d, &dh) || gpy_buffer_handle(s, &sh)) return NULL;
  if (doff < 0 || soff < 0 || n < 0) return gpy_refuse(GPAR_EINVAL, "copy: negative offset or size");
  int st = gpar_copy(dh, (size_t)doff, sh, (size_t)soff, (size_t)n);
  return gpy_done(st);
}

static PyObject *py_fill(PyObject *self, PyObject *args) {
  PyObject *b;
  Py_ssize_t off, n;
  unsigned char v;
  gpar_buffer h;
  if (!PyArg_ParseTuple(args, "Onnb", &b, &off, &n, &v)) return NULL;
  if (gpy_buffer_handle(b, &h)) return NULL;
  if (off < 0 || n < 0) return gpy_refuse(GPAR_EINVAL, "fill: negative offset or size");
  int st = gpar_fill(h, (size_t)off, (size_t)n, v);
  return gpy_done(st);
}

static PyObject *py_write(PyObject *self, PyObject *args) {
  PyObject *b, *data;
  Py_ssize_t off;
  gpar_buffer h;
  if (!PyArg_ParseTuple(args, "OnO!", &b, &off, &PyBytes_Type, &data)) return NULL;
  if (gpy_buffer_handle(b, &h)) return NULL;
  char *p;
  Py_ssize_t n;
  if (PyBytes_AsStringAndSize(data, &p, &n) < 0) return NULL;
  if (off < 0) return gpy_refuse(GPAR_EINVAL, "write: negative offset");
  int st = gpar_write(h, (size_t)off, p, (size_t)n); /* staged: returns at once */
  return gpy_done(st);
}

static PyObject *py_read(PyObject *self, PyObject *args) {
  PyObject *b;
  Py_ssize_t off, n;
  gpar_buffer h;
  if (!PyArg_ParseTuple(args, "Onn", &b, &off, &n)) return NULL;
  if (gpy_buffer_handle(b, &h)) return NULL;
  if (off < 0 || n <= 0) return gpy_refuse(GPAR_EINVAL, "read: offset %zd, size %zd", off, n);
  char *mem = malloc((size_t)n);
  if (!mem) return PyErr_NoMemory();
  int st;
  Py_BEGIN_ALLOW_THREADS st = gpar_read(h, (size_t)off, mem, (size_t)n);
  Py_END_ALLOW_THREADS PyObject *r = st ? gpy_raise(st) : PyBytes_FromStringAndSize(mem, n);
  free(mem);
  return r;
}

static PyObject *py_wait(PyObject *self, PyObject *arg) {
  gpar_buffer h;
  if (gpy_buffer_handle(arg, &h)) return NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS st = gpar_wait(h);
  Py_END_ALLOW_THREADS gpy_owners_drain();
  return gpy_done(st);
}

/* wait_native and signal_native: (buf, stream as an int) to call(buf, stream), GIL released (a
 * signal waits until libgpar has issued the buffer's ops; on host memory for its writers). */
static PyObject *native_call(PyObject *args, int (*call)(gpar_buffer, void *)) {
  PyObject *b;
  unsigned long long stream;
  gpar_buffer h;
  int st;
  if (!PyArg_ParseTuple(args, "OK", &b, &stream)) return NULL;
  if (gpy_buffer_handle(b, &h)) return NULL;
  Py_BEGIN_ALLOW_THREADS st = call(h, (void *)(uintptr_t)stream);
  Py_END_ALLOW_THREADS gpy_owners_drain(); /* what a host-memory wait let go */
  return gpy_done(st);
}

static PyObject *py_wait_native(PyObject *self, PyObject *args) { return native_call(args, gpar_buffer_wait_native); }

static PyObject *py_signal_native(PyObject *self, PyObject *args) {
  return native_call(args, gpar_buffer_signal_native);
}

static PyObject *py_host_ptr(PyObject *self, PyObject *arg) {
  gpar_buffer h;
  if (gpy_buffer_handle(arg, &h)) return NULL;
  void *p = gpar_buffer_host_ptr(h);
  if (!p) return gpy_raise(GPAR_EINVAL);
  return PyLong_FromVoidPtr(p);
}

static PyObject *py_native(PyObject *self, PyObject *arg) {
  gpar_buffer h;
  if (gpy_buffer_handle(arg, &h)) return NULL;
  void *p = gpar_buffer_native(h);
  if (!p) return gpy_raise(GPAR_EBADBUF);
  return PyLong_FromVoidPtr(p);
}

PyMethodDef gpy_buffer_methods[] = {
    {"buffer_create", py_buffer_create, METH_VARARGS, "buffer_create(engine, dev, nbytes) -> Buffer"},
    {"import_ptr", py_import_ptr, METH_VARARGS,
     "import_ptr(engine, dev, ptr, nbytes, owner) -> Buffer over memory owner keeps alive (held until the "
     "buffer's ops are done)"},
    {"release", py_release, METH_O, "release(buffer): release the handle now (the memory goes after its ops)"},
    {"copy", py_copy, METH_VARARGS, "copy(dst, dst_off, src, src_off, nbytes)"},
    {"fill", py_fill, METH_VARARGS, "fill(buf, off, nbytes, byte)"},
    {"write", py_write, METH_VARARGS, "write(buf, off, data: bytes)"},
    {"read", py_read, METH_VARARGS, "read(buf, off, nbytes) -> bytes (GIL released while it waits)"},
    {"wait", py_wait, METH_O, "wait(buf): wait for the ops that write it (GIL released)"},
    {"wait_native", py_wait_native, METH_VARARGS,
     "wait_native(buf, stream): later ops on buf wait for the work enqueued so far on another library's stream "
     "(cudaStream_t as an int; 0: the legacy default stream), on the device"},
    {"signal_native", py_signal_native, METH_VARARGS,
     "signal_native(buf, stream): another library's stream (cudaStream_t as an int; 0: the legacy default "
     "stream) waits on the device for libgpar's ops on buf; the host waits only until they are issued (GIL "
     "released)"},
    {"host_ptr", py_host_ptr, METH_O, "host_ptr(buf) -> int (host memory only)"},
    {"native", py_native, METH_O, "native(buf) -> int: CUDA device pointer, cl_mem or host pointer"},
    {NULL, NULL, 0, NULL}};
