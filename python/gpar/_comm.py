"""_comm.py: communicators and collectives over an engine's devices (gpar_comm_*): NCCL between
CUDA GPUs of one process, staged through host memory otherwise. A collective takes one array
per member, each on its member's device, and returns at once; its results are ordered like any
op's (wait on the arrays, or engine.wait_all())."""
import _gpar

from ._array import DTYPES
from ._engine import default_engine

_OPS = {"sum": 0, "max": 1, "min": 2}


class Comm:
    """Comm(devices, engine=None): a communicator over distinct devices (indices, Devices or
    names, see Engine.device); member i is devices[i]."""

    def __init__(self, devices, engine=None):
        self.engine = engine if engine is not None else default_engine()
        self.devices = tuple(self.engine.device(d) for d in devices)
        self._id = _gpar.comm_create(self.engine.handle, self.devices)

    def _run(self, kind, arrays, count, arg):
        arrays = tuple(arrays)
        if len(arrays) != len(self.devices):
            _gpar.refuse(_gpar.GPAR_EINVAL, "%d arrays for %d members" % (len(arrays), len(self.devices)))
        dtype = arrays[0].dtype
        for a in arrays:
            a._need_contiguous("a collective")
            if a.dtype != dtype or DTYPES[dtype][0] < 0:
                _gpar.refuse(_gpar.GPAR_EINVAL, "collective: one element type of float32, float64, float16, "
                             "bfloat16 or int32, not %s" % sorted({x.dtype for x in arrays}))
        _gpar.collective(kind, self._id, arrays, arrays[0].size if count is None else count, DTYPES[dtype][0], arg)
        return arrays

    def allreduce(self, arrays, op="sum"):
        """Every member's array becomes the element-wise op ('sum', 'max', 'min') over members."""
        return self._run(0, arrays, None, _OPS[op])

    def broadcast(self, arrays, root=0):
        """Every member's array becomes member root's."""
        return self._run(1, arrays, None, root)

    def reduce_scatter(self, arrays, op="sum"):
        """Each array holds len(devices) blocks; member r's block r becomes the reduction of block r."""
        return self._run(2, arrays, arrays[0].size // len(self.devices), _OPS[op])

    def all_gather(self, arrays):
        """Each array holds len(devices) blocks; member r gives block r, every member gets all."""
        return self._run(3, arrays, arrays[0].size // len(self.devices), 0)

    def destroy(self):
        if self._id:
            c, self._id = self._id, 0
            _gpar.comm_destroy(c)
