"""test_kernels.py: portable kernels and maps from Python on every device: one source, scalars of
each type the signature names, buffers at offsets (views), a map over arrays, a kernel recorded in
a graph, and the refusals (signature, build errors with the compiler's log, argument counts and
kinds) with nothing launched."""
import tap

try:
    import numpy as np
except ImportError:
    tap.skip_all("NumPy is not installed (python3-numpy)")

import gpar

eng = gpar.Engine()
saxpy = gpar.Kernel("saxpy", "u64 n, f32 a, in f32 *x, inout f32 *y",
                    "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * x[i] + y[i];", engine=eng)
scalars = gpar.Kernel("scalars", "i32 a, u32 b, i64 c, u64 d, f32 e, f64 f, out f64 *r",
                      "if (GPAR_GLOBAL_ID(0) == 0) { r[0] = a; r[1] = b; r[2] = (double)c; r[3] = (double)d;"
                      " r[4] = e; r[5] = f; }", engine=eng)
axpy = gpar.Map("axpy_map", "f32 a, in f32 x, inout f32 y", "y = a * x + y", engine=eng)
n = 1000
X = np.linspace(-1, 1, n, dtype=np.float32)
Y = np.arange(n, dtype=np.float32)
for d in eng.devices:
    x = gpar.asarray(X, engine=eng, device=d.index)
    y = gpar.asarray(Y.copy(), engine=eng, device=d.index)
    saxpy(((n + 63) // 64,), (64,), (n, 2.5, x, y))
    tap.ok(np.allclose(y.numpy(), 2.5 * X + Y, rtol=1e-6), "device %d (%s): saxpy kernel" % (d.index, d.backend))
    r = gpar.zeros((6,), "float64", engine=eng, device=d.index)
    try:
        scalars((1,), (1,), (-7, 4000000000, -(2 ** 40), 2 ** 50, 0.5, 1e-300, r))
        got = r.numpy().tolist()
        tap.is_(got, [-7.0, 4e9, -(2.0 ** 40), 2.0 ** 50, 0.5, 1e-300],
                "device %d: i32, u32, i64, u64, f32, f64 scalars arrive as typed" % d.index)
    except gpar.Error as e:
        if e.name == "GPAR_ENOTSUP":
            tap.skip(1, "device %d has no f64: %s" % (d.index, e.message))
        else:
            tap.ok(False, "device %d: scalars: %s" % (d.index, e))
    y = gpar.asarray(Y.copy(), engine=eng, device=d.index)
    axpy(0.5, x, y)
    tap.ok(np.allclose(y.numpy(), 0.5 * X + Y, rtol=1e-6), "device %d: map y = a * x + y" % d.index)
    tail = gpar.Array(y._buf, eng, y.device, (n - 100,), "float32", off=100 * 4)  # a view from element 100
    axpy(1.0, gpar.Array(x._buf, eng, x.device, (n - 100,), "float32", off=100 * 4), tail)
    want = 0.5 * X + Y
    want[100:] += X[100:]
    tap.ok(np.allclose(y.numpy(), want, rtol=1e-6), "device %d: a map on views at a byte offset" % d.index)
    y = gpar.asarray(Y.copy(), engine=eng, device=d.index)
    with eng.graph() as g:
        saxpy(((n + 63) // 64,), (64,), (n, 1.0, x, y))
    g.launch()
    g.launch()
    tap.ok(np.allclose(y.numpy(), 2 * X + Y, rtol=1e-6), "device %d: a kernel recorded once, launched twice" % d.index)
    g.destroy()

# ---- refusals ----
tap.raises(lambda: gpar.Kernel("bad", "u64 n, f32 *x", "", engine=eng), "GPAR_EINVAL",
           "a pointer parameter without in/out/inout refused at create")
tap.raises(lambda: gpar.Kernel("bad2", "f16 a", "", engine=eng), "GPAR_EINVAL",
           "a scalar type the dialect lacks refused", "f16")
broken = gpar.Kernel("broken", "u64 n, inout f32 *x", "x[0] = undefined_name;", engine=eng)
tap.raises(lambda: broken.build(eng.cpu), "GPAR_EBUILD", "a compile error is GPAR_EBUILD at build",
           "undefined_name")
tap.ok("undefined_name" in broken.log(eng.cpu), "  and the compiler's log names the error")
y = gpar.asarray(Y.copy(), engine=eng)
x = gpar.asarray(X, engine=eng)
before = eng.stats()["kernel_launches"]
tap.raises(lambda: saxpy((1,), (64,), (n, 2.5, x)), "GPAR_EINVAL", "too few arguments refused", "3 arguments")
try:
    saxpy((1,), (64,), (n, 2.5, y, 7))
    tap.ok(False, "a number where an array goes refused (TypeError)")
except TypeError as e:
    tap.ok("array" in str(e), "a number where an array goes refused (TypeError: %s)" % e)
tap.raises(lambda: saxpy((1, 2, 3, 4), (64,), (n, 2.5, x, y)), "GPAR_EINVAL", "a 4-D grid refused", "1 to 3")
tap.raises(lambda: saxpy((1,), (64,), (n, 2.5, x, y), device=99), "GPAR_ENODEV", "device 99 refused")
tap.is_(eng.stats()["kernel_launches"], before, "  nothing launched by the refusals")
saxpy(((n + 63) // 64,), (64,), (n, 1.0, x, y))
tap.ok(np.allclose(y.numpy(), X + Y), "the kernel still runs after them")
eng.close()
tap.done()
