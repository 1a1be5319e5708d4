"""kernel_inplace.py: a portable gpar.Kernel run in place on another library's tensor through DLPack, zero-copy.

The peer is PyTorch when it imports (a CUDA tensor when torch sees a GPU, else a CPU one),
else NumPy. gpar.from_dlpack(t) wraps the tensor's own memory (no copy); a kernel written once
for every device (y = a * y + b) runs on it; after eng.wait_all() the tensor itself holds the
result. Then the other way: the peer wraps a gpar array (torch.from_dlpack / np.from_dlpack),
and a second launch shows through it, as both name one memory.

    python3 kernel_inplace.py [--device DEV] [--peer auto|torch|numpy] [-n N]

--device: where the tensor lives, as gpar names devices: by default the first CUDA GPU when
PyTorch has one, else the CPU ("cpu", "cuda:1", ...). OpenCL memory is no DLPack device, so an
OpenCL device cannot share a tensor zero-copy: it is refused (exit 2). Exits 1 on a wrong
value, 77 when the device cannot build kernels (no C compiler for the CPU, no NVRTC for CUDA)."""
import argparse
import sys

import numpy as np

import gpar

AXPB = ("axpb", "u64 n, f32 a, f32 b, inout f32 *y",
        "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * y[i] + b;")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", help="where the tensor lives (default: the first CUDA GPU with PyTorch, else the CPU)")
    ap.add_argument("--peer", choices=("auto", "torch", "numpy"), default="auto",
                    help="the other library (default auto: PyTorch if it imports, else NumPy)")
    ap.add_argument("-n", type=int, default=100000, help="elements (default 100000)")
    args = ap.parse_args()
    torch = None
    if args.peer in ("auto", "torch"):
        try:
            import torch
        except ImportError:
            if args.peer == "torch":
                ap.error("PyTorch is not importable here")
    eng = gpar.default_engine()
    try:
        if args.device:
            dev = eng.device(int(args.device) if args.device.isdigit() else args.device)
        else:
            dev = eng.device("cuda" if torch is not None and torch.cuda.is_available() else "cpu")
    except (ValueError, gpar.Error) as e:   # no such device
        ap.error(str(e))
    info = eng.devices[dev]
    if info.backend == "opencl":
        ap.error("device %d is OpenCL: its memory is no DLPack device, so nothing shares it zero-copy "
                 "(use the CPU or a CUDA GPU)" % dev)
    if info.backend == "cuda" and torch is None:
        ap.error("a CUDA tensor needs PyTorch (--peer torch)")

    # The peer's tensor: 0, 1, 2, ... in float32 (small integers: 2 * y + 1 is exact everywhere).
    n = args.n
    if torch is not None:
        where = "cuda:%d" % info.backend_index if info.backend == "cuda" else "cpu"
        t = torch.arange(n, dtype=torch.float32, device=where)
        peer = "PyTorch %s (tensor on %s)" % (torch.__version__, where)
        to_numpy = lambda v: v.cpu().numpy()  # noqa: E731
        what = "torch tensor"
    else:
        t = np.arange(n, dtype=np.float32)
        peer = "NumPy %s" % np.__version__
        to_numpy = np.asarray  # noqa: E731
        what = "NumPy array"
    print("peer: %s; device %d: %s %s" % (peer, dev, info.backend, info.name))

    # Zero-copy: y is the tensor's memory, on the device that memory belongs to.
    y = gpar.from_dlpack(t)
    if y.device != dev:
        fail("the tensor landed on device %d, not %d" % (y.device, dev))
    if torch is None and y.__array_interface__["data"][0] != t.ctypes.data:
        fail("gpar.from_dlpack copied the NumPy array")     # host memory: the same address
    k = gpar.Kernel(*AXPB)
    try:  # built up front: a device that cannot build kernels is a skip (exit 77), as in the C examples
        k.build(dev)
    except gpar.Error as e:
        if e.name != "GPAR_ENOTSUP":
            raise
        print("skipped: " + e.message)
        sys.exit(77)
    block = 64
    k((n + block - 1) // block, block, (n, 2.0, 1.0, y))   # returns at once; runs on y's device
    eng.wait_all()                                          # the peer reads the tensor now
    want = 2.0 * np.arange(n, dtype=np.float32) + 1.0
    if not np.array_equal(to_numpy(t), want):
        fail("the tensor did not change in place to 2 * i + 1")
    print("kernel %s on %d elements: the %s changed in place" % (k.name, n, what))

    # The other way: the peer wraps gpar's array (its writers are waited for first), again zero-copy.
    u = torch.from_dlpack(y) if torch is not None else np.from_dlpack(y)
    k((n + block - 1) // block, block, (n, 1.0, -1.0, y))  # y = y - 1, seen through t and u
    eng.wait_all()
    want -= 1.0
    if not (np.array_equal(to_numpy(u), want) and np.array_equal(to_numpy(t), want)):
        fail("the second launch does not show through both views")
    print("second launch seen through the tensor and through %s.from_dlpack(gpar array): one memory"
          % ("torch" if torch is not None else "np"))
    del u                 # the peer's view of gpar memory goes before the engine that owns it
    k.release()
    eng.close()


def fail(msg):
    print("kernel_inplace.py: wrong result: " + msg, file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
