"""test_arrays.py: NumPy round trips and the array ops from Python on every device of every
backend: dtypes and shapes there and back, copies between devices, matmul and the elementwise
ops and sums against NumPy, a recorded graph against the eager run, __array_interface__ on host
memory, and the GIL let go during a wait (another thread runs meanwhile)."""
import threading
import time

import tap

try:
    import numpy as np
except ImportError:
    tap.skip_all("NumPy is not installed (python3-numpy)")

import _gpar
import gpar

eng = gpar.Engine()
rng = np.random.default_rng(7)
tap.diag("devices: %s" % eng.devices)

# ---- round trips: every dtype NumPy and libgpar share, several shapes, every device ----
for d in eng.devices:
    bad = []
    for dtype in ("float32", "float64", "float16", "int32", "int8", "uint8", "int64"):
        for shape in ((1,), (7,), (3, 5), (2, 3, 4)):
            host = (rng.standard_normal(shape) * 100).astype(dtype)
            a = gpar.asarray(host, engine=eng, device=d.index)
            back = a.numpy()
            if a.device != d.index or a.shape == () or not np.array_equal(back, host) or back.dtype != host.dtype:
                bad.append((dtype, shape))
    tap.ok(not bad, "device %d (%s): 7 dtypes x 4 shapes there and back (%s)" % (d.index, d.backend, bad or "all equal"))

# ---- copies between every pair of devices ----
src = rng.standard_normal(1000).astype(np.float32)
bad = []
for d1 in eng.devices:
    a = gpar.asarray(src, engine=eng, device=d1.index)
    for d2 in eng.devices:
        if not np.array_equal(a.to(d2.index).numpy(), src):
            bad.append((d1.index, d2.index))
tap.ok(not bad, "to(): every device pair copies exactly (%s)" % (bad or "all"))

# ---- ops against NumPy on every device ----
A = rng.standard_normal((33, 17)).astype(np.float32)
B = rng.standard_normal((17, 9)).astype(np.float32)
X = rng.standard_normal((33, 17)).astype(np.float32)
V = rng.standard_normal(17).astype(np.float32)
for d in eng.devices:
    a, b, x, v = (gpar.asarray(h, engine=eng, device=d.index) for h in (A, B, X, V))
    c = gpar.matmul(a, b)
    tap.ok(np.allclose(c.numpy(), A @ B, rtol=1e-4, atol=1e-4), "device %d: matmul 33x17 @ 17x9" % d.index)
    ct = gpar.matmul(x, a, transpose_a=True)
    cbt = gpar.matmul(a, x, transpose_b=True)
    tap.ok(np.allclose(ct.numpy(), X.T @ A, rtol=1e-4, atol=1e-4) and
           np.allclose(cbt.numpy(), A @ X.T, rtol=1e-4, atol=1e-4), "device %d: matmul a.T @ b, a @ b.T" % d.index)
    ops = {"add": A + X, "subtract": A - X, "multiply": A * X, "maximum": np.maximum(A, X)}
    bad = [n for n, want in ops.items() if not np.allclose(getattr(gpar, n)(a, x).numpy(), want, rtol=1e-6)]
    tap.ok(not bad, "device %d: add, subtract, multiply, maximum (%s)" % (d.index, bad or "equal"))
    r = gpar.relu(a)
    tap.ok(np.array_equal(r.numpy(), np.maximum(A, 0)), "device %d: relu" % d.index)
    y = gpar.asarray(A.copy(), engine=eng, device=d.index)  # on the CPU: A's copy itself (zero-copy)
    gpar.exp(y, out=y)
    tap.ok(np.allclose(y.numpy(), np.exp(A), rtol=1e-5), "device %d: exp in place (out=x)" % d.index)
    tap.ok(np.allclose(gpar.add_rows(a, v).numpy(), A + V, rtol=1e-6), "device %d: add_rows (a bias)" % d.index)
    s = gpar.sum(a).numpy()[0]
    tap.ok(abs(s - A.sum(dtype=np.float64)) < 1e-3, "device %d: sum %.6f (NumPy %.6f)" % (d.index, s, A.sum()))

# ---- a graph replays what it recorded ----
for d in eng.devices:
    a = gpar.asarray(A.copy(), engine=eng, device=d.index)
    b = gpar.asarray(B, engine=eng, device=d.index)
    c = gpar.empty((33, 9), engine=eng, device=d.index)
    r = gpar.empty((33, 9), engine=eng, device=d.index)
    with eng.graph() as g:
        gpar.matmul(a, b, out=c)
        gpar.relu(c, out=r)
    info = g.info()
    g.launch()
    first = r.numpy()
    a.copy_(gpar.asarray(2 * A, engine=eng, device=d.index))
    g.launch()
    second = r.numpy()
    tap.ok(info["ops"] == 2 and np.allclose(first, np.maximum(A @ B, 0), rtol=1e-4, atol=1e-4)
           and np.allclose(second, np.maximum(2 * A @ B, 0), rtol=1e-4, atol=1e-4),
           "device %d: a graph of matmul + relu replays, and sees new inputs (%s)" % (d.index, info))
    g.destroy()

# ---- host memory as NumPy sees it, without copying ----
a = gpar.asarray(A, engine=eng, device=eng.cpu)
tap.ok(_gpar.host_ptr(a._buf) == A.ctypes.data, "asarray of a NumPy array on the CPU device uses its memory")
view = np.asarray(a)
tap.ok(np.array_equal(view, A) and view.ctypes.data == _gpar.host_ptr(a._buf),
       "__array_interface__: NumPy views the CPU device's memory in place")
gpu_like = [d for d in eng.devices if d.backend != "host"]
if gpu_like:
    b = a.to(gpu_like[0].index)
    try:
        b.__array_interface__
        tap.ok(False, "__array_interface__ refused for device memory")
    except AttributeError as e:
        tap.ok("numpy()" in str(e), "__array_interface__ refused for device memory: %s" % e)
else:
    tap.skip(1, "no device besides the CPU")

# ---- non-contiguous arrays are refused where an op needs contiguous memory ----
t = gpar.from_dlpack(np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2], engine=eng)
tap.diag("strided array: shape %s strides %s" % (t.shape, t.strides))
tap.is_((t.shape, t.strides), ((4, 3), (6, 2)), "from_dlpack keeps a strided view's shape and strides")
tap.raises(lambda: t.numpy(), "GPAR_EINVAL", "numpy() of a strided array refused", "contiguous")
tap.raises(lambda: gpar.relu(t), "GPAR_EINVAL", "an array op on a strided array refused", "contiguous")
tap.ok(np.array_equal(np.from_dlpack(t), np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]),
       "a strided array exports with its strides (NumPy reads the same view)")

# ---- the GIL goes while a wait blocks ----
slow = gpar.Kernel("slow", "u64 n, u64 iters, inout f32 *x",
                   "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) { gpar_f32 v = x[i];"
                   " for (gpar_u64 j = 0; j < iters; j++) v = v * 0.999999f + 0.000001f; x[i] = v; }", engine=eng)
x = gpar.zeros((64,), engine=eng, device=eng.cpu)
slow.build(eng.cpu)
ticks = [0]
stop = threading.Event()


def spin():
    while not stop.is_set():
        ticks[0] += 1


th = threading.Thread(target=spin)
th.start()
t0, k0 = time.perf_counter(), ticks[0]
time.sleep(0.05)  # the spinner's own rate, while this thread sleeps without the GIL
rate = (ticks[0] - k0) / (time.perf_counter() - t0)
slow((1,), (64,), (64, 3000000, x))
before = ticks[0]
t0 = time.perf_counter()
x.wait()
waited = time.perf_counter() - t0
during = ticks[0] - before
stop.set()
th.join()
tap.ok(during > 0.1 * rate * waited, "another Python thread ran %d loops during a %.0f ms wait, %.0f%% of its "
       "rate alone (the GIL was let go)" % (during, waited * 1e3, 100 * during / (rate * waited)))

eng.close()
tap.done()
