/* dlpack.c: DLPack capsules both ways, zero-copy. Import takes a capsule that a producer's
 * __dlpack__ gave (versioned "dltensor_versioned" or legacy "dltensor"), marks it used, and
 * makes a buffer over the tensor's memory with gpar_buffer_import: host memory (kDLCPU,
 * kDLCUDAHost) on the CPU device, CUDA memory on the CUDA device of that ordinal; the
 * producer's deleter runs once libgpar is done with the buffer. Export wraps a buffer's memory
 * in a capsule that holds the exporting array alive until the consumer's deleter. */
#include "dlpack.h"
#include "pygpar.h"

#include <stdlib.h>
#include <string.h>

/* ---- import ---- */

static void delete_legacy(void *ctx) {
  DLManagedTensor *mt = ctx;
  if (mt->deleter) mt->deleter(mt);
}

static void delete_versioned(void *ctx) {
  DLManagedTensorVersioned *mt = ctx;
  if (mt->deleter) mt->deleter(mt);
}

static const char *device_name(int t) {
  switch (t) {
  case kDLCPU: return "kDLCPU";
  case kDLCUDA: return "kDLCUDA";
  case kDLCUDAHost: return "kDLCUDAHost";
  case kDLOpenCL: return "kDLOpenCL";
  case kDLVulkan: return "kDLVulkan";
  case kDLMetal: return "kDLMetal";
  case kDLROCM: return "kDLROCM";
  case kDLROCMHost: return "kDLROCMHost";
  case kDLCUDAManaged: return "kDLCUDAManaged";
  case kDLOneAPI: return "kDLOneAPI";
  default: return "an unknown device type";
  }
}

/* The libgpar device of a DLPack device, or -1 with gpar.Error raised. */
static int device_of(gpar_engine *eng, DLDevice d) {
  if (d.device_type == kDLCPU || d.device_type == kDLCUDAHost) {
    int dev = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0);
    if (dev < 0)
      gpy_refuse(GPAR_ENODEV, "from_dlpack: host memory (%s) needs the CPU device, which this engine lacks",
                 device_name(d.device_type));
    return dev < 0 ? -1 : dev;
  }
  if (d.device_type == kDLCUDA || d.device_type == kDLCUDAManaged) {
    for (int k = 0;; k++) {
      int dev = gpar_device_find(eng, GPAR_BACKEND_CUDA, -1, k);
      if (dev < 0) break;
      gpar_device_props p;
      if (gpar_device_info(eng, dev, &p) == GPAR_OK && p.backend_index == d.device_id) return dev;
    }
    gpy_refuse(GPAR_ENODEV, "from_dlpack: CUDA device %d (%s) is not a device of this engine", (int)d.device_id,
               device_name(d.device_type));
    return -1;
  }
  gpy_refuse(GPAR_ENOTSUP, "from_dlpack: %s memory (DLPack device type %d) is not memory libgpar can use in place",
             device_name(d.device_type), (int)d.device_type);
  return -1;
}

/* Bytes from the tensor's first element to one past its last; 0 with gpar.Error raised. */
static size_t extent_of(const DLTensor *t) {
  if (t->dtype.lanes != 1 || t->dtype.bits == 0 || t->dtype.bits % 8) {
    gpy_refuse(GPAR_ENOTSUP, "from_dlpack: element type code %d, %d bits, %d lanes is not supported", t->dtype.code,
               t->dtype.bits, t->dtype.lanes);
    return 0;
  }
  if (t->ndim < 0 || (t->ndim > 0 && !t->shape)) {
    gpy_refuse(GPAR_EINVAL, "from_dlpack: ndim %d without a shape", (int)t->ndim);
    return 0;
  }
  uint64_t last = 0, compact = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    int64_t n = t->shape[i], s = t->strides ? t->strides[i] : (int64_t)compact;
    const char *why = n < 0    ? "a negative dimension"
                      : n == 0 ? "an empty tensor (a buffer holds at least one byte)"
                      : s < 0  ? "a negative stride (not supported)"
                               : NULL;
    if (why) {
      gpy_refuse(n == 0 || n < 0 ? GPAR_EINVAL : GPAR_ENOTSUP, "from_dlpack: %s: dimension %d of %lld, stride %lld",
                 why, i, (long long)n, (long long)s);
      return 0;
    }
    last += (uint64_t)(n - 1) * (uint64_t)s;
    compact *= (uint64_t)n;
  }
  return (size_t)((last + 1) * (t->dtype.bits / 8));
}

static PyObject *int64_tuple(const int64_t *v, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (!x || PyTuple_SetItem(t, i, x) < 0) {
      Py_DECREF(t);
      return NULL;
    }
  }
  return t;
}

/* Compact row-major strides (elements) of shape. */
static PyObject *compact_strides(const int64_t *shape, int n) {
  int64_t s[64], acc = 1;
  for (int i = n - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i];
  }
  return int64_tuple(s, n);
}

static PyObject *py_dlpack_import(PyObject *self, PyObject *args) {
  PyObject *e, *cap;
  int allow_readonly;
  if (!PyArg_ParseTuple(args, "OOp", &e, &cap, &allow_readonly)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  gpy_owners_drain();
  if (!PyCapsule_CheckExact(cap))
    return gpy_refuse(GPAR_EINVAL, "from_dlpack: __dlpack__ returned something other than a capsule");
  const char *name = PyCapsule_GetName(cap);
  if (!name) return NULL;
  int versioned = strcmp(name, "dltensor_versioned") == 0;
  if (!versioned && strcmp(name, "dltensor") != 0)
    return gpy_refuse(GPAR_EINVAL,
                      strncmp(name, "used_", 5) == 0
                          ? "from_dlpack: the capsule \"%s\" was consumed already (a DLPack capsule is used once)"
                          : "from_dlpack: \"%s\" is not a DLPack capsule",
                      name);
  void *mt = PyCapsule_GetPointer(cap, name);
  if (!mt) return NULL;
  DLTensor *t;
  uint64_t flags = 0;
  if (versioned) {
    DLManagedTensorVersioned *v = mt;
    if (v->version.major > GPAR_DLPACK_MAJOR)
      return gpy_refuse(GPAR_ENOTSUP, "from_dlpack: DLPack %u.%u is newer than %d.%d", v->version.major,
                        v->version.minor, GPAR_DLPACK_MAJOR, GPAR_DLPACK_MINOR);
    t = &v->dl_tensor;
    flags = v->flags;
  } else {
    t = &((DLManagedTensor *)mt)->dl_tensor;
  }
  int readonly = (flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  if (readonly && !allow_readonly)
    return gpy_refuse(GPAR_EINVAL,
                      "from_dlpack: the tensor is read-only (libgpar ops may write any buffer): pass "
                      "copy=True for a writable copy");
  if (t->ndim > 64) return gpy_refuse(GPAR_ENOTSUP, "from_dlpack: %d dimensions (at most 64)", (int)t->ndim);
  size_t bytes = extent_of(t);
  if (!bytes) return NULL;
  int dev = device_of(eng, t->device);
  if (dev < 0) return NULL;
  gpy_owner *o = malloc(sizeof *o);
  if (!o) return PyErr_NoMemory();
  o->fn = versioned ? delete_versioned : delete_legacy;
  o->ctx = mt;
  gpar_buffer h;
  int st = gpar_buffer_import(eng, dev, (char *)t->data + t->byte_offset, bytes, gpy_owner_release, o, &h);
  if (st) {
    free(o); /* the capsule still owns the tensor: its destructor deletes it */
    return gpy_raise(st);
  }
  /* Ours now: the capsule must not delete it. Read what the result needs before the buffer's
   * release can run the deleter (it cannot yet: only our handle refers to the buffer). */
  PyObject *shape = int64_tuple(t->shape, t->ndim);
  PyObject *strides = t->strides ? int64_tuple(t->strides, t->ndim) : compact_strides(t->shape, t->ndim);
  PyObject *buf = gpy_buffer_new(h, dev, bytes);
  PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor");
  PyObject *r = NULL;
  if (shape && strides && buf)
    r = Py_BuildValue("(O(iii)OOiii)", buf, t->dtype.code, t->dtype.bits, t->dtype.lanes, shape, strides, readonly,
                      (int)t->device.device_type, (int)t->device.device_id);
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  Py_XDECREF(buf);
  return r;
}

/* ---- export ---- */

/* What an exported capsule's tensor carries: the array it shows (held until the deleter), and
 * its shape and strides. */
typedef struct {
  PyObject *owner;
  int64_t dims[]; /* shape, then strides */
} export_ctx;

static void export_free(void *mt, export_ctx *ctx) {
  PyGILState_STATE g = PyGILState_Ensure(); /* a consumer may delete from any thread */
  Py_XDECREF(ctx->owner);
  PyGILState_Release(g);
  free(ctx);
  free(mt);
}

static void export_delete_legacy(DLManagedTensor *mt) { export_free(mt, mt->manager_ctx); }
static void export_delete_versioned(DLManagedTensorVersioned *mt) { export_free(mt, mt->manager_ctx); }

/* The capsule's destructor: a capsule never consumed deletes its tensor itself. */
static void capsule_destructor(PyObject *cap) {
  const char *name = PyCapsule_GetName(cap);
  if (!name) {
    PyErr_Clear();
    return;
  }
  if (strcmp(name, "dltensor_versioned") == 0) {
    DLManagedTensorVersioned *mt = PyCapsule_GetPointer(cap, name);
    if (mt) mt->deleter(mt);
  } else if (strcmp(name, "dltensor") == 0) {
    DLManagedTensor *mt = PyCapsule_GetPointer(cap, name);
    if (mt) mt->deleter(mt);
  }
  PyErr_Clear();
}

/* Read a tuple of n ints into v; -1 with an exception set. */
static int read_dims(PyObject *t, int64_t *v, Py_ssize_t n) {
  if (!PyTuple_Check(t) || PyTuple_Size(t) != n) {
    PyErr_SetString(PyExc_ValueError, "shape and strides must be tuples of equal length");
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    v[i] = PyLong_AsLongLong(PyTuple_GetItem(t, i));
    if (v[i] == -1 && PyErr_Occurred()) return -1;
  }
  return 0;
}

static PyObject *py_dlpack_export(PyObject *self, PyObject *args) {
  PyObject *owner, *bufo, *shape, *strides;
  Py_ssize_t off;
  int code, bits, devtype, devid, versioned, readonly;
  if (!PyArg_ParseTuple(args, "OOnOO(ii)iipp", &owner, &bufo, &off, &shape, &strides, &code, &bits, &devtype, &devid,
                        &versioned, &readonly))
    return NULL;
  gpar_buffer h;
  if (gpy_buffer_handle(bufo, &h)) return NULL;
  if (!PyTuple_Check(shape)) return PyErr_Format(PyExc_TypeError, "shape must be a tuple");
  Py_ssize_t nd = PyTuple_Size(shape);
  if (nd > 64) return gpy_refuse(GPAR_ENOTSUP, "__dlpack__: %zd dimensions (at most 64)", nd);
  void *base = gpar_buffer_native(h);
  if (!base) return gpy_raise(GPAR_EBADBUF);
  export_ctx *ctx = malloc(sizeof *ctx + 2 * (size_t)(nd ? nd : 1) * sizeof(int64_t));
  void *mt = calloc(1, versioned ? sizeof(DLManagedTensorVersioned) : sizeof(DLManagedTensor));
  if (!ctx || !mt || read_dims(shape, ctx->dims, nd) < 0 || read_dims(strides, ctx->dims + nd, nd) < 0) {
    free(ctx);
    free(mt);
    return PyErr_Occurred() ? NULL : PyErr_NoMemory();
  }
  ctx->owner = owner;
  DLTensor *t;
  if (versioned) {
    DLManagedTensorVersioned *v = mt;
    v->version = (DLPackVersion){GPAR_DLPACK_MAJOR, GPAR_DLPACK_MINOR};
    v->manager_ctx = ctx;
    v->deleter = export_delete_versioned;
    v->flags = readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    t = &v->dl_tensor;
  } else {
    DLManagedTensor *l = mt;
    l->manager_ctx = ctx;
    l->deleter = export_delete_legacy;
    t = &l->dl_tensor;
  }
  t->data = (char *)base + off;
  t->device = (DLDevice){(DLDeviceType)devtype, devid};
  t->ndim = (int32_t)nd;
  t->dtype = (DLDataType){(uint8_t)code, (uint8_t)bits, 1};
  t->shape = ctx->dims;
  t->strides = ctx->dims + nd;
  t->byte_offset = 0;
  PyObject *cap = PyCapsule_New(mt, versioned ? "dltensor_versioned" : "dltensor", capsule_destructor);
  if (!cap) {
    free(ctx);
    free(mt);
    return NULL;
  }
  Py_INCREF(owner); /* dropped by the deleter */
  return cap;
}

PyMethodDef gpy_dlpack_methods[] = {
    {"dlpack_import", py_dlpack_import, METH_VARARGS,
     "dlpack_import(engine, capsule, allow_readonly) -> (Buffer, (code, bits, lanes), shape, strides, readonly, "
     "device_type, device_id); consumes the capsule"},
    {"dlpack_export", py_dlpack_export, METH_VARARGS,
     "dlpack_export(owner, buffer, byte_offset, shape, strides, (code, bits), device_type, device_id, versioned, "
     "readonly) -> capsule holding owner until the consumer's deleter"},
    {NULL, NULL, 0, NULL}};
