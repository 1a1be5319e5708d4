"""_kernel.py: portable kernels and maps. A Kernel is one source in libgpar's dialect that runs
on every device (gpar_kernel_*; the dialect: man gpar-kernel), called as CuPy's RawKernel is:
k(grid, block, args). A Map is an elementwise kernel (gpar_map_*), as CuPy's ElementwiseKernel:
m(*args) over the arrays' elements. Both take arrays and Python numbers; the signature decides
each scalar's type, read once here."""
import _gpar

from ._engine import default_engine

_SCALAR = {"i32": "i", "u32": "I", "i64": "l", "u64": "L", "f32": "f", "f64": "d"}


def _kinds(params, is_array):
    kinds = ""
    for p in filter(None, (q.strip() for q in params.split(","))):
        words = p.replace("*", " * ").split()
        if is_array(words):
            kinds += "b"
        else:
            t = [w for w in words if w in _SCALAR]
            if not t:
                _gpar.refuse(_gpar.GPAR_EINVAL, "parameter %r: a scalar's type is one of %s" % (p, ", ".join(_SCALAR)))
            kinds += _SCALAR[t[0]]
    return kinds


class Kernel:
    """Kernel(name, params, body, preamble=None, engine=None): params as gpar_kernel_create
    ("u64 n, f32 a, in f32 *x, inout f32 *y"). Called k(grid, block, args, device=None): grid
    and block are 1-3 sizes (groups, work-items per group), args one per parameter; device
    defaults to the first array argument's. The first launch on a device builds the kernel (GIL
    released); build(device) does it up front."""

    def __init__(self, name, params, body, preamble=None, engine=None):
        self.engine = engine if engine is not None else default_engine()
        self.name = name
        self._kinds = _kinds(params, lambda w: "*" in w)
        self._first_buf = self._kinds.find("b")
        self._id = _gpar.kernel_create(self.engine.handle, name, params, body, preamble)
        self._built = set()

    def build(self, device):
        dev = self.engine.device(device)
        _gpar.kernel_build(self._id, dev)
        self._built.add(dev)

    def log(self, device):
        return _gpar.kernel_log(self._id, self.engine.device(device))

    def __call__(self, grid, block, args, device=None):
        if device is None:
            if self._first_buf < 0:
                _gpar.refuse(_gpar.GPAR_EINVAL, "%s: no array argument: name the device" % self.name)
            dev = getattr(args[self._first_buf], "device", None)
            if type(dev) is not int:
                raise TypeError("%s: argument %d is not a gpar array (from_dlpack or asarray makes one)"
                                % (self.name, self._first_buf))
        else:
            dev = self.engine.device(device)
        if dev not in self._built:
            self.build(dev)
        _gpar.kernel_launch(self._id, dev, grid if type(grid) is tuple else (grid,),
                            block if type(block) is tuple else (block,), self._kinds,
                            args if type(args) is tuple else tuple(args))

    def release(self):
        if self._id:
            k, self._id = self._id, 0
            _gpar.kernel_release(k)


class Map:
    """Map(name, params, expr, engine=None): params as gpar_map_create ("f32 a, in f32 x, inout f32
    y"), expr C run for each index i. Called m(*args, n=None): n defaults to the first array's
    size; it runs on the device of the first out or inout array."""

    def __init__(self, name, params, expr, engine=None):
        self.engine = engine if engine is not None else default_engine()
        self.name = name
        self._kinds = _kinds(params, lambda w: w[0] in ("in", "out", "inout"))
        self._first_buf = self._kinds.find("b")
        self._id = _gpar.map_create(self.engine.handle, name, params, expr)

    def __call__(self, *args, n=None):
        if n is None:
            n = args[self._first_buf].size
        _gpar.map_launch(self._id, n, self._kinds, args)

    def release(self):
        if self._id:
            m, self._id = self._id, 0
            _gpar.map_release(m)
