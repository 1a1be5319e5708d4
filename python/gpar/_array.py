"""_array.py: arrays, a buffer with a dtype, a shape and strides on one device, and their
exchange with NumPy, PyTorch, CuPy and anything else that speaks DLPack, zero-copy both ways:
CUDA memory as kDLCUDA, host memory as kDLCPU. OpenCL buffers are no DLPack device: exporting
one is refused unless copy=True asks for a host copy.

Every op on an array goes through libgpar's engine, ordered by the buffers it reads and writes;
the host waits only where it must see data: numpy(), __array_interface__, and __dlpack__ of host
memory (the consumer reads at once: the array's writers are waited for first, with the GIL
released). A CUDA array's __dlpack__(stream=S) makes S wait for libgpar's ops on the device;
gpar.from_dlpack of CUDA memory makes libgpar's next ops wait for the producer's stream."""
import _gpar

from ._engine import default_engine

# dtype name -> (gpar_dtype or -1 for storage only, DLPack code, bits)
DTYPES = {
    "float32": (0, 2, 32), "float64": (1, 2, 64), "float16": (2, 2, 16), "bfloat16": (3, 4, 16),
    "int32": (4, 0, 32), "int8": (-1, 0, 8), "int16": (-1, 0, 16), "int64": (-1, 0, 64),
    "uint8": (-1, 1, 8), "uint16": (-1, 1, 16), "uint32": (-1, 1, 32), "uint64": (-1, 1, 64),
    "bool": (-1, 6, 8),
}
_BY_DL = {(v[1], v[2]): k for k, v in DTYPES.items()}
_TYPESTR = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int32": "<i4", "int8": "|i1",
            "int16": "<i2", "int64": "<i8", "uint8": "|u1", "uint16": "<u2", "uint32": "<u4",
            "uint64": "<u8", "bool": "|b1"}
kDLCPU, kDLCUDA, kDLCUDAHost, kDLOpenCL, kDLCUDAManaged = 1, 2, 3, 4, 13


def dtype_name(dtype):
    """'float32' for 'float32', numpy.float32, numpy.dtype('float32') or torch.float32."""
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
    name = name.replace("torch.", "")
    if name not in DTYPES:
        raise TypeError("dtype %r: not one of %s" % (dtype, ", ".join(DTYPES)))
    return name


def _compact(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


class _Export:
    """What an exported capsule holds until the consumer's deleter: the array, and a count on
    its engine, so that Engine.close() can refuse while a consumer still views its memory."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array
        array.engine._exports += 1

    def __del__(self):
        self.array.engine._exports -= 1


class Array:
    """An array on one device of an engine. shape and strides (in elements) as NumPy's, row-major
    when compact. Memory is libgpar's (empty, zeros, to) or another library's (from_dlpack,
    asarray), which it then keeps alive until every op queued on it is done."""

    __slots__ = ("_buf", "_off", "engine", "device", "shape", "strides", "dtype", "readonly", "_contig", "_isz",
                 "__weakref__")

    def __init__(self, buf, engine, device, shape, dtype, strides=None, off=0, readonly=False):
        self._buf = buf
        self._off = off
        self.engine = engine
        self.device = device
        self.shape = tuple(shape)
        self.dtype = dtype
        self.strides = tuple(strides) if strides is not None else _compact(self.shape)
        self.readonly = readonly
        # shape, strides and dtype never change (reshape makes a new array): each op reads these
        self._contig = strides is None or all(n == 1 or s == c for n, s, c in
                                              zip(self.shape, self.strides, _compact(self.shape)))
        self._isz = DTYPES[dtype][2] // 8

    # ---- shape ----
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self._isz

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def contiguous(self):
        return self._contig

    def reshape(self, *shape):
        """A view of a contiguous array with another shape of as many elements."""
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        n = 1
        for s in shape:
            n *= s
        if n != self.size or not self.contiguous:
            raise ValueError("cannot reshape %s (%s) into %s" % (self.shape, "contiguous" if self.contiguous
                                                                  else "strided", shape))
        return Array(self._buf, self.engine, self.device, shape, self.dtype, None, self._off, self.readonly)

    def _need_contiguous(self, what):
        if not self._contig:
            _gpar.refuse(_gpar.GPAR_EINVAL, "%s needs a contiguous array (shape %s, strides %s)"
                         % (what, self.shape, self.strides))

    # ---- device ----
    @property
    def backend(self):
        return "host" if self.device < 0 else self.engine.devices[self.device].backend

    def __dlpack_device__(self):
        if self.device < 0:
            return (kDLCPU, 0)
        d = self.engine.devices[self.device]
        if d.backend == "host":
            return (kDLCPU, 0)
        if d.backend == "cuda":
            return (kDLCUDA, d.backend_index)
        return (kDLOpenCL, d.backend_index)

    # ---- moving data ----
    def wait(self):
        """Wait for the ops that write this array (GIL released)."""
        _gpar.wait(self._buf)
        return self

    def to(self, device):
        """A copy on device (an index, a Device or a name: see Engine.device)."""
        self._need_contiguous("to()")
        out = empty(self.shape, self.dtype, device=device, engine=self.engine)
        _gpar.copy(out._buf, out._off, self._buf, self._off, self.nbytes)
        return out

    def copy_(self, src):
        """Copy src (an array of the same shape and dtype, any device) into this one."""
        if src.shape != self.shape or src.dtype != self.dtype:
            _gpar.refuse(_gpar.GPAR_EINVAL, "copy_: %s %s into %s %s" % (src.shape, src.dtype, self.shape,
                                                                         self.dtype))
        self._need_contiguous("copy_")
        src._need_contiguous("copy_")
        _gpar.copy(self._buf, self._off, src._buf, src._off, self.nbytes)
        return self

    def numpy(self):
        """A NumPy copy, made once the array's writers are done (it waits, GIL released)."""
        import numpy as np
        self._need_contiguous("numpy()")
        if self.dtype == "bfloat16":
            _gpar.refuse(_gpar.GPAR_ENOTSUP, "NumPy has no bfloat16: convert on the device first")
        out = np.empty(self.shape, dtype=self.dtype)
        host = from_dlpack(out, engine=self.engine)
        _gpar.copy(host._buf, 0, self._buf, self._off, self.nbytes)
        _gpar.wait(host._buf)
        _gpar.release(host._buf)
        return out

    @property
    def __array_interface__(self):
        """NumPy's view of host memory (the CPU device or GPAR_HOST), after the writers are done."""
        if self.dtype not in _TYPESTR or self.__dlpack_device__()[0] != kDLCPU:
            raise AttributeError("__array_interface__: only host arrays of NumPy's types have one "
                                 "(this one is %s on %s): use numpy()" % (self.dtype, self.backend))
        _gpar.wait(self._buf)
        return {"version": 3, "shape": self.shape, "typestr": _TYPESTR[self.dtype],
                "data": (_gpar.host_ptr(self._buf) + self._off, self.readonly),
                "strides": tuple(s * self.itemsize for s in self.strides)}

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export (versioned when the consumer's max_version allows it). CUDA: the
        consumer's stream waits on the device for libgpar's ops on the array (stream None: the
        legacy default stream; -1: none); host memory: its writers are waited for first (GIL
        released). OpenCL arrays are refused unless copy=True, which exports a host copy."""
        devtype, devid = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != (devtype, devid):
            if copy is False or tuple(dl_device)[0] != kDLCPU:
                raise BufferError("__dlpack__: the array is on %s, not on DLPack device %s"
                                  % ((devtype, devid), tuple(dl_device)))
            return self.to("cpu").__dlpack__(max_version=max_version)
        if devtype == kDLOpenCL:
            if not copy:
                _gpar.refuse(_gpar.GPAR_ENOTSUP, "__dlpack__: OpenCL memory is not a DLPack device: "
                             "pass copy=True for a host copy, or call .to('cpu')")
            return self.to("cpu").__dlpack__(max_version=max_version)
        if copy:
            return self.to(self.device).__dlpack__(max_version=max_version)
        if devtype == kDLCPU and stream not in (None, -1):
            raise BufferError("__dlpack__: stream must be None for host memory")
        if devtype in (kDLCUDA, kDLCUDAManaged):
            # The stream rule, producer's side: the consumer's stream (None: the legacy default
            # stream, DLPack's 1; -1: the consumer orders itself) waits for libgpar's ops on the
            # array on the device; the host waits only until libgpar has issued them.
            if stream == 0:
                raise BufferError("__dlpack__: stream 0 is ambiguous for CUDA (DLPack): pass 1 for the "
                                  "legacy default stream or 2 for the per-thread one")
            if stream != -1:
                _gpar.signal_native(self._buf, 1 if stream is None else int(stream))
        else:
            _gpar.wait(self._buf)
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _gpar.dlpack_export(_Export(self), self._buf, self._off, self.shape, self.strides,
                                   DTYPES[self.dtype][1:], devtype, devid, versioned, self.readonly)

    # ---- lifetime ----
    def release(self):
        """Release the buffer now (its memory goes once its ops are done; collecting the array
        does the same). Views made by reshape share it."""
        _gpar.release(self._buf)

    def __repr__(self):
        return "<gpar.Array %s %s on %s>" % (self.shape, self.dtype, "GPAR_HOST" if self.device < 0 else
                                              repr(self.engine.devices[self.device]))


def _engine_of(engine):
    return engine if engine is not None else default_engine()


def empty(shape, dtype="float32", device=None, engine=None):
    """An uninitialised array on device (see Engine.device; None: the first GPU, else the CPU)."""
    eng = _engine_of(engine)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = dtype_name(dtype)
    dev = eng.device(device)
    n = DTYPES[dtype][2] // 8
    for s in shape:
        if s < 0:
            raise ValueError("negative dimension in %s" % (shape,))
        n *= s
    if n == 0:
        _gpar.refuse(_gpar.GPAR_EINVAL, "an empty array (shape %s): a buffer holds at least one byte" % (shape,))
    return Array(_gpar.buffer_create(eng.handle, dev, n), eng, dev, shape, dtype)


def zeros(shape, dtype="float32", device=None, engine=None):
    a = empty(shape, dtype, device, engine)
    _gpar.fill(a._buf, 0, a.nbytes, 0)
    return a


_LEGACY = set()  # producer types whose __dlpack__ takes no max_version (before DLPack 1.0: NumPy < 2.1)


def _capsule(x, stream):
    t = type(x)
    if t not in _LEGACY:
        try:
            return x.__dlpack__(stream=stream, max_version=(1, 0))
        except TypeError:
            _LEGACY.add(t)
    return x.__dlpack__(stream=stream) if stream is not None else x.__dlpack__()


def from_dlpack(x, engine=None, device=None, copy=None):
    """An array over x's memory (zero-copy), x anything with __dlpack__ (NumPy, PyTorch, CuPy,
    JAX, gpar). Host memory lands on the CPU device, CUDA memory on its CUDA device. libgpar
    keeps x's memory alive until its ops on it are done. copy=True: a copy, on device if given;
    a read-only tensor is refused without it. Raises gpar.Error (ENOTSUP, ENODEV, EINVAL) for
    memory libgpar cannot use in place."""
    eng = _engine_of(engine)
    if isinstance(x, Array) and x.engine is eng and not copy:
        return x if device is None or eng.device(device) == x.device else x.to(device)
    devtype, _ = x.__dlpack_device__()
    # The stream rule, consumer's side: a CUDA producer orders its writes before the legacy default
    # stream (DLPack's stream 1), and libgpar's next ops on the buffer wait for that stream on the
    # device (gpar_buffer_wait_native); the host waits for nothing.
    cap = _capsule(x, None if devtype in (kDLCPU, kDLCUDAHost) else 1)
    buf, (code, bits, lanes), shape, strides, readonly, devtype, devid = \
        _gpar.dlpack_import(eng.handle, cap, bool(copy))
    if devtype in (kDLCUDA, kDLCUDAManaged):
        _gpar.wait_native(buf, 0)
    dtype = _BY_DL.get((code, bits))
    if dtype is None:
        _gpar.release(buf)
        _gpar.refuse(_gpar.GPAR_ENOTSUP, "from_dlpack: element type code %d of %d bits" % (code, bits))
    a = Array(buf, eng, buf.dev, shape, dtype, strides, 0, readonly)
    if copy or (device is not None and eng.device(device) != a.device):
        b = a.to(a.device if device is None else device)
        a.release()
        return b
    return a


def asarray(obj, dtype=None, device=None, engine=None):
    """obj as an array: a gpar Array as it is (moved to device if given), anything with
    __dlpack__ through from_dlpack, anything else through numpy.asarray first (then dtype
    applies). Host data meant for a GPU is copied there; on the CPU device a NumPy array's (or
    a CPU tensor's) own memory is used, as torch.from_numpy does: ops on the result change it."""
    if isinstance(obj, Array) or hasattr(obj, "__dlpack__"):
        a = from_dlpack(obj, engine=engine, device=device)
        if dtype is not None and dtype_name(dtype) != a.dtype:
            _gpar.refuse(_gpar.GPAR_EINVAL, "asarray: %s data asked for as %s (convert before)" % (a.dtype, dtype))
        return a
    import numpy as np
    arr = np.ascontiguousarray(obj, dtype=None if dtype is None else dtype_name(dtype))
    return from_dlpack(arr, engine=engine, device=device)
