"""gpar: libgpar from Python. One engine runs independent work in parallel across devices (CPU,
CUDA, OpenCL) and their compute and copy engines, ordered by the buffers each op reads and
writes; the host waits only where it must see data.

    import gpar, numpy as np
    x = gpar.asarray(np.arange(8, dtype=np.float32), device="gpu")   # the first GPU, else the CPU
    y = gpar.relu(x)                                                   # returns at once
    print(y.numpy())                                                   # waits for y's writers

Arrays trade memory with NumPy, PyTorch, CuPy and JAX through DLPack without copying
(gpar.from_dlpack, torch.from_dlpack(arr)). Kernels are written once for every device
(gpar.Kernel, gpar.Map); `with engine.graph() as g:` records ops for g.launch(). Failures raise
gpar.Error, which carries libgpar's status (e.status, e.name) and message."""
from _gpar import Error  # noqa: F401

from ._array import Array, DTYPES, asarray, empty, from_dlpack, zeros  # noqa: F401
from ._comm import Comm  # noqa: F401
from ._engine import Device, Engine, Graph, default_engine  # noqa: F401
from ._kernel import Kernel, Map  # noqa: F401
from ._ops import (abs, add, add_rows, divide, exp, log, matmul, max, maximum, min, minimum,  # noqa: F401,A004
                   multiply, negative, prepare, relu, sigmoid, softmax_xent, sqrt, subtract, sum, tanh)

__all__ = ["Error", "Array", "DTYPES", "asarray", "empty", "from_dlpack", "zeros", "Device", "Engine", "Graph",
           "default_engine", "Kernel", "Map", "Comm", "prepare", "softmax_xent", "abs", "add", "add_rows", "divide", "exp", "log", "matmul", "max",
           "maximum", "min", "minimum", "multiply", "negative", "relu", "sigmoid", "sqrt", "subtract", "sum", "tanh"]
