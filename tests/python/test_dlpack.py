"""test_dlpack.py: DLPack both ways. Capsules are also made and read by hand here (ctypes, the
DLPack 1.0 structs) so that versions, flags, devices and the deleter's calls are checked without
trusting a peer: versioned and legacy imports, a newer major version, read-only tensors (refused,
or copied with copy=True), a capsule used twice, devices libgpar cannot use in place, element
types and layouts it cannot take; exports: capsule names by max_version, the struct's fields,
the owner held until the consumer's deleter, OpenCL refused unless copied, NumPy sharing memory."""
import ctypes
import gc
import sys

import tap

try:
    import numpy as np
except ImportError:
    tap.skip_all("NumPy is not installed (python3-numpy)")

import _gpar
import gpar

kDLCPU, kDLCUDA, kDLOpenCL, kDLROCM = 1, 2, 4, 10


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


class Legacy(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
capsule_ptr.restype = ctypes.c_void_p
capsule_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_name = ctypes.pythonapi.PyCapsule_GetName
capsule_name.restype = ctypes.c_char_p
capsule_name.argtypes = [ctypes.py_object]
capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]

NAMES = {True: b"dltensor_versioned", False: b"dltensor"}


class Producer:
    """A hand-made DLPack producer over a NumPy array's memory; counts its deleter's calls."""

    def __init__(self, host, versioned=True, major=1, devtype=kDLCPU, devid=0, flags=0, code=None, bits=None,
                 lanes=1, shape=None, strides=None):
        self.host = host
        self.deleted = 0
        self.versioned = versioned
        self._shape = (ctypes.c_int64 * max(host.ndim, 1))(*(shape or host.shape))
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self._deleter = DELETER(self._delete)
        t = DLTensor(host.ctypes.data, DLDevice(devtype, devid), host.ndim if shape is None else len(shape),
                     DLDataType(code if code is not None else {"f": 2, "i": 0, "u": 1}[host.dtype.kind],
                                bits or host.dtype.itemsize * 8, lanes),
                     self._shape, self._strides, 0)
        if versioned:
            self.mt = Versioned(major, 0, None, self._deleter, flags, t)
        else:
            self.mt = Legacy(t, None, self._deleter)
        self.devtype, self.devid = devtype, devid

    def _delete(self, ptr):
        self.deleted += 1

    def __dlpack_device__(self):
        return (self.devtype, self.devid)

    def __dlpack__(self, stream=None, max_version=None):
        if not self.versioned and max_version is not None:
            raise TypeError("a producer before DLPack 1.0")
        return capsule_new(ctypes.addressof(self.mt), NAMES[self.versioned], None)


eng = gpar.Engine()


def settle():
    """Let libgpar finish and hand imports back (their deleters run under the GIL)."""
    gc.collect()
    eng.wait_all()
    _gpar.drain()


# ---- imports ----
for versioned in (True, False):
    kind = "versioned" if versioned else "legacy"
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    p = Producer(host, versioned=versioned)
    a = gpar.from_dlpack(p, engine=eng)
    tap.ok(a.shape == (3, 4) and a.dtype == "float32" and a.device == eng.cpu and _gpar.host_ptr(a._buf)
           == host.ctypes.data, "%s capsule: zero-copy on the CPU device, shape and dtype kept" % kind)
    gpar.relu(gpar.negative(a, out=a), out=a)  # in place in the producer's memory
    a.wait()
    tap.ok(np.all(host == 0), "%s: ops write the producer's memory in place" % kind)
    tap.is_(p.deleted, 0, "%s: deleter not called while the array lives" % kind)
    del a
    settle()
    tap.is_(p.deleted, 1, "%s: deleter called once, after the array went and its ops were done" % kind)

host = np.ones(4, dtype=np.float32)
p = Producer(host, major=2)
tap.raises(lambda: gpar.from_dlpack(p, engine=eng), "GPAR_ENOTSUP", "DLPack 2.0 refused", "newer")
tap.is_(p.deleted, 0, "  the refused capsule is not deleted by libgpar")

p = Producer(host, flags=1)
tap.raises(lambda: gpar.from_dlpack(p, engine=eng), "GPAR_EINVAL", "a read-only tensor refused", "copy=True")
c = gpar.from_dlpack(Producer(host, flags=1), engine=eng, copy=True)
tap.ok(not c.readonly and _gpar.host_ptr(c._buf) != host.ctypes.data and np.array_equal(c.numpy(), host),
       "copy=True: a writable copy of a read-only tensor")

p = Producer(host)
cap = p.__dlpack__(max_version=(1, 0))
first = _gpar.dlpack_import(eng.handle, cap, False)
tap.ok(capsule_name(cap) == b"used_dltensor_versioned", "an imported capsule is renamed used_dltensor_versioned")
tap.raises(lambda: _gpar.dlpack_import(eng.handle, cap, False), "GPAR_EINVAL", "a capsule used twice refused",
           "consumed already")
del first
settle()
tap.is_(p.deleted, 1, "  the first import's deleter ran once")

for devtype, devid, status, text, what in (
        (kDLOpenCL, 0, "GPAR_ENOTSUP", "kDLOpenCL", "OpenCL memory (kDLOpenCL)"),
        (kDLROCM, 0, "GPAR_ENOTSUP", "kDLROCM", "ROCm memory"),
        (kDLCUDA, 97, "GPAR_ENODEV", "CUDA device 97", "a CUDA device this engine lacks")):
    tap.raises(lambda: gpar.from_dlpack(Producer(host, devtype=devtype, devid=devid), engine=eng), status,
               "%s refused" % what, text)

for kw, status, text, what in (
        (dict(lanes=4), "GPAR_ENOTSUP", "4 lanes", "vector lanes"),
        (dict(bits=12, code=2), "GPAR_ENOTSUP", "12 bits", "a 12-bit float"),
        (dict(shape=(0,)), "GPAR_EINVAL", "empty tensor", "an empty tensor"),
        (dict(shape=(2,), strides=(-1,)), "GPAR_ENOTSUP", "negative stride", "a negative stride"),
        (dict(code=5, bits=64), "GPAR_ENOTSUP", "element type code 5", "complex64")):
    tap.raises(lambda: gpar.from_dlpack(Producer(host, **kw), engine=eng), status, "%s refused" % what, text)

tap.is_(eng.stats()["buffers_live"] >= 0 and gpar.relu(gpar.asarray(host, engine=eng)).numpy().tolist(),
        [1.0] * 4, "the engine works on after the refusals")

# ---- exports ----
a = gpar.asarray(np.arange(6, dtype=np.float64).reshape(2, 3), engine=eng, device=eng.cpu)
refs = sys.getrefcount(a)
cap = a.__dlpack__(max_version=(1, 0))
tap.ok(capsule_name(cap) == b"dltensor_versioned", "max_version (1, 0): a versioned capsule")
mt = Versioned.from_address(capsule_ptr(cap, b"dltensor_versioned"))
t = mt.dl_tensor
tap.ok((mt.major, mt.minor, mt.flags) == (1, 0, 0) and t.device.device_type == kDLCPU and t.ndim == 2
       and [t.shape[i] for i in range(2)] == [2, 3] and [t.strides[i] for i in range(2)] == [3, 1]
       and (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 64, 1) and t.data == _gpar.host_ptr(a._buf),
       "  version 1.0, kDLCPU, shape (2, 3), strides (3, 1), float64, the array's own memory")
tap.is_(sys.getrefcount(a), refs + 1, "  the capsule holds the array")
capsule_set_name(cap, b"used_dltensor_versioned")  # consumed by hand: the consumer calls the deleter
mt.deleter(ctypes.addressof(mt))
del cap, mt, t
tap.is_(sys.getrefcount(a), refs, "  the consumer's deleter lets it go")
cap = a.__dlpack__()
tap.ok(capsule_name(cap) == b"dltensor", "no max_version: a legacy capsule")
del cap
tap.is_(sys.getrefcount(a), refs, "an unconsumed capsule's destructor lets the array go")

view = np.from_dlpack(a)  # read-only in NumPy < 2; np.asarray (the array interface) is writable
np.asarray(a)[0, 0] = 42.0
tap.ok(view.ctypes.data == _gpar.host_ptr(a._buf) and view[0, 0] == 42.0 and a.numpy()[0, 0] == 42.0,
       "NumPy's from_dlpack shares the array's memory")

ro = gpar.Array(a._buf, eng, a.device, a.shape, a.dtype, readonly=True)
tap.raises(lambda: gpar.from_dlpack(ro, engine=gpar.Engine(backends="host")), "GPAR_EINVAL",
           "a read-only export carries the flag (another engine's import refuses it)", "read-only")
other = gpar.Engine(backends="host")
b = gpar.from_dlpack(a, engine=other)
tap.ok(_gpar.host_ptr(b._buf) == _gpar.host_ptr(a._buf), "another engine imports a gpar array zero-copy")
del b
other.close()

opencl = [d for d in eng.devices if d.backend == "opencl"]
if opencl:
    o = a.to(opencl[0].index)
    tap.is_(o.__dlpack_device__(), (kDLOpenCL, opencl[0].backend_index), "an OpenCL array's DLPack device")
    tap.raises(lambda: o.__dlpack__(), "GPAR_ENOTSUP", "exporting OpenCL memory refused", "copy=True")
    tap.ok(np.array_equal(np.from_dlpack(gpar.from_dlpack(o, engine=eng, device="cpu")), a.numpy()),
           "  from_dlpack(device='cpu') of it gives a host copy")
    cap = o.__dlpack__(copy=True, max_version=(1, 0))
    mt = Versioned.from_address(capsule_ptr(cap, b"dltensor_versioned"))
    tap.is_(mt.dl_tensor.device.device_type, kDLCPU, "  copy=True exports a host copy")
    del mt, cap
else:
    tap.skip(4, "no OpenCL device")
try:
    a.__dlpack__(stream=5)
    tap.ok(False, "a stream for host memory refused")
except BufferError as e:
    tap.ok("None" in str(e), "a stream for host memory refused: %s" % e)
try:
    a.__dlpack__(dl_device=(kDLCUDA, 0), copy=False)
    tap.ok(False, "another dl_device without a copy refused")
except BufferError as e:
    tap.ok(True, "another dl_device without a copy refused: %s" % e)

del view
gc.collect()
eng.close()
tap.done()
