"""test_collectives.py: communicators and the array ops a training step needs, from Python, on
the devices present: allreduce (sum, max), broadcast, reduce_scatter and all_gather over every
device against NumPy; softmax cross-entropy (loss and gradient) and sums along each axis on
every device; and the refusals (too few arrays, mixed types, a destroyed communicator)."""
import tap

try:
    import numpy as np
except ImportError:
    tap.skip_all("NumPy is not installed (python3-numpy)")

import _gpar
import gpar

eng = gpar.Engine()
devs = [d.index for d in eng.devices]
rng = np.random.default_rng(3)
if len(devs) < 2:
    tap.skip(6, "one device: no collective across devices")
else:
    comm = gpar.Comm(devs, engine=eng)
    n = len(devs)
    hs = [rng.standard_normal(n * 8).astype(np.float32) for _ in devs]
    arrays = [gpar.asarray(h.copy(), engine=eng, device=d) for h, d in zip(hs, devs)]  # CPU: no copy
    comm.allreduce(arrays)
    want = sum(hs)
    tap.ok(all(np.allclose(a.numpy(), want, rtol=1e-5) for a in arrays), "allreduce sum over %d devices" % n)
    arrays = [gpar.asarray(h.copy(), engine=eng, device=d) for h, d in zip(hs, devs)]  # CPU: no copy
    comm.allreduce(arrays, op="max")
    tap.ok(all(np.array_equal(a.numpy(), np.maximum.reduce(hs)) for a in arrays), "allreduce max")
    arrays = [gpar.asarray(h.copy(), engine=eng, device=d) for h, d in zip(hs, devs)]  # CPU: no copy
    comm.broadcast(arrays, root=n - 1)
    tap.ok(all(np.array_equal(a.numpy(), hs[-1]) for a in arrays), "broadcast from the last member")
    arrays = [gpar.asarray(h.copy(), engine=eng, device=d) for h, d in zip(hs, devs)]  # CPU: no copy
    comm.reduce_scatter(arrays)
    tap.ok(all(np.allclose(a.numpy()[r * 8:(r + 1) * 8], want[r * 8:(r + 1) * 8], rtol=1e-5, atol=1e-6)
               for r, a in enumerate(arrays)), "reduce_scatter: member r holds block r of the sum")
    arrays = [gpar.asarray(h.copy(), engine=eng, device=d) for h, d in zip(hs, devs)]  # CPU: no copy
    comm.all_gather(arrays)
    gathered = np.concatenate([hs[r][r * 8:(r + 1) * 8] for r in range(n)])
    tap.ok(all(np.array_equal(a.numpy(), gathered) for a in arrays), "all_gather: every member holds every block")
    tap.raises(lambda: comm.allreduce(arrays[:-1]), "GPAR_EINVAL", "one array short refused", "members")
    comm.destroy()

for d in devs:
    z = rng.standard_normal((6, 5)).astype(np.float32)
    y = np.array([0, 4, 2, 1, 3, 0], np.int32)
    loss, grad = gpar.softmax_xent(gpar.asarray(z, engine=eng, device=d), gpar.asarray(y, engine=eng, device=d))
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want_loss = -np.log(p[np.arange(6), y])
    want_grad = (p - np.eye(5)[y]) / 6
    tap.ok(np.allclose(loss.numpy(), want_loss, rtol=1e-5, atol=1e-6) and
           np.allclose(grad.numpy(), want_grad, rtol=1e-5, atol=1e-7),
           "device %d: softmax_xent loss and gradient" % d)
    x = rng.standard_normal((7, 3)).astype(np.float32)
    xa = gpar.asarray(x, engine=eng, device=d)
    tap.ok(np.allclose(gpar.sum(xa, axis=0).numpy(), x.sum(0), rtol=1e-5, atol=1e-6) and
           np.allclose(gpar.max(xa, axis=1).numpy(), x.max(1)), "device %d: sum over axis 0, max over axis 1" % d)
gpar.prepare(eng)
tap.ok(True, "prepare: every device's array kernels built")

if len(devs) >= 2:
    comm = gpar.Comm(devs[:2], engine=eng)
    a = gpar.zeros((4,), engine=eng, device=devs[0])
    b = gpar.zeros((4,), "float64", engine=eng, device=devs[1])
    c = gpar.zeros((4,), engine=eng, device=devs[1])
    tap.raises(lambda: comm.allreduce([a, b]), "GPAR_EINVAL", "mixed element types refused", "one element type")
    stale = comm._id
    comm.destroy()
    tap.raises(lambda: _gpar.collective(0, stale, (a, c), 4, 0, 0), "GPAR_EINVAL",
               "a destroyed communicator's handle refused")
else:
    tap.skip(2, "one device")
eng.close()
tap.done()
