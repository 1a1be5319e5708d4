"""test_errors.py: each class of bad input that libgpar's C API refuses, reached from Python,
comes back as gpar.Error with its status code, name and message, and the engine keeps working:
EINVAL, ERANGE, EBADBUF, EENGINE, ESHUTDOWN, EALIAS, ENODEV, ENOTSUP, EBUILD, ERECORDING,
EFAULT, EDEPFAILED, ENOMEM/EDEVMEM. (EDEADLK and ETIMEDOUT need a user function or a
communicator that Python does not reach.)"""
import tap

try:
    import numpy as np
except ImportError:
    tap.skip_all("NumPy is not installed (python3-numpy)")

import _gpar
import gpar

eng = gpar.Engine()
a = gpar.asarray(np.ones((4, 4), np.float32), engine=eng)
b = gpar.asarray(np.ones((4, 4), np.float32), engine=eng)


def works(what):
    r = gpar.add(a, b).numpy()
    tap.ok(np.all(r == 2), "  the engine works on after %s" % what)


try:
    gpar.empty((0,), engine=eng)
except gpar.Error as e:
    tap.ok(isinstance(e, RuntimeError) and e.status == _gpar.GPAR_EINVAL and e.name == "GPAR_EINVAL"
           and "empty" in e.message and str(e).startswith("GPAR_EINVAL: "),
           "gpar.Error is a RuntimeError with status, name and message (%s)" % e)

tap.raises(lambda: gpar.matmul(a, gpar.asarray(np.ones((3, 4), np.float32), engine=eng)), "GPAR_EINVAL",
           "EINVAL: matmul of mismatched shapes", "shapes")
works("EINVAL")
big = gpar.Array(a._buf, eng, a.device, (5, 4), "float32")  # claims more than its buffer holds
tap.raises(lambda: big.to(eng.cpu), "GPAR_ERANGE", "ERANGE: a copy past the buffer's end", "exceeds")
works("ERANGE")
gone = gpar.asarray(np.ones(4, np.float32), engine=eng)
gone.release()
tap.raises(lambda: gone.numpy(), "GPAR_EBADBUF", "EBADBUF: a released array", "released")
tap.raises(lambda: gone.release(), "GPAR_EBADBUF", "EBADBUF: a second release", "released")
works("EBADBUF")
other = gpar.Engine(backends="host")
foreign = gpar.asarray(np.ones((4, 4), np.float32), engine=other)
tap.raises(lambda: gpar.add(a, foreign), "GPAR_EENGINE", "EENGINE: another engine's array in an op", "another engine")
works("EENGINE")
other.close()
tap.raises(lambda: gpar.empty((4,), engine=other), "GPAR_ESHUTDOWN", "ESHUTDOWN: a closed engine", "shut down")
tap.raises(lambda: foreign.numpy(), "GPAR_ESHUTDOWN", "  its arrays: ESHUTDOWN", "shut down")
works("ESHUTDOWN")
tap.raises(lambda: gpar.matmul(a, b, out=a), "GPAR_EALIAS", "EALIAS: matmul into one of its inputs", "overlaps")
works("EALIAS")
tap.raises(lambda: gpar.empty((4,), engine=eng, device=99), "GPAR_ENODEV", "ENODEV: device 99")
tap.raises(lambda: gpar.empty((4,), engine=eng, device="cuda:7"), "GPAR_ENODEV", "ENODEV: device 'cuda:7'", "cuda:7")
works("ENODEV")
ints = gpar.asarray(np.ones(4, np.int32), engine=eng)
tap.raises(lambda: gpar.relu(gpar.asarray(np.ones(4, np.int64), engine=eng)), "GPAR_EINVAL",
           "EINVAL: an array op on int64", "int64")
tap.raises(lambda: gpar.relu(ints), "GPAR_EINVAL", "EINVAL: libgpar refuses int32 in relu")
k = gpar.Kernel("nope", "inout f32 *x", "x[0] = 1 +;", engine=eng)
tap.raises(lambda: k.build(eng.cpu), "GPAR_EBUILD", "EBUILD: a kernel that does not compile", "error")
works("EBUILD")


def nested():
    with eng.graph():
        with eng.graph():
            pass


tap.raises(nested, "GPAR_ERECORDING", "ERECORDING: a graph inside a graph")
works("ERECORDING")

opencl = [d for d in eng.devices if d.backend == "opencl"]
if opencl:
    tap.raises(lambda: a.to(opencl[0].index).__dlpack__(), "GPAR_ENOTSUP", "ENOTSUP: DLPack of OpenCL memory")
else:
    tap.skip(1, "no OpenCL device")

eng.fault_inject("alloc", 1)
tap.raises(lambda: gpar.empty((4,), engine=eng, device=eng.cpu), "GPAR_EFAULT", "EFAULT: an injected allocation fault")
eng.fault_inject("gemm", 1)
c = gpar.matmul(a, b)
tap.raises(lambda: c.wait(), "GPAR_EFAULT", "EFAULT at the wait on the failed GEMM's output")
d = gpar.relu(c)
tap.raises(lambda: d.wait(), "GPAR_EDEPFAILED", "EDEPFAILED at the wait on what read it")
tap.raises(lambda: eng.wait_all(), "GPAR_EFAULT", "  wait_all reports the first error once")
works("the faults")
tap.raises(lambda: gpar.empty((1 << 62,), "uint8", engine=eng, device=eng.cpu), "GPAR_ENOMEM",
           "ENOMEM: 2^62 bytes on the CPU device")
works("ENOMEM")
eng.close()
tap.done()
