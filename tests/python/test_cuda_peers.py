"""test_cuda_peers.py: DLPack with PyTorch and CuPy on a CUDA device, both ways, on the real
peers (skipped wholly without torch CUDA and a libgpar CUDA device). Zero-copy: a write on one
side is seen on the other. The stream rule: a torch tensor written on a busy side stream and
handed to gpar.from_dlpack is read by libgpar after those writes (the producer orders them
before DLPack's stream 1, libgpar waits on it with gpar_buffer_wait_native); a gpar array
written behind a slow kernel and handed to torch.from_dlpack is read by torch after libgpar's
writes. Lifetimes: a tensor dropped by Python while libgpar still uses it stays alive."""
import gc

import tap

try:
    import numpy as np
    import torch
except ImportError:
    tap.skip_all("PyTorch or NumPy is not installed")
if not torch.cuda.is_available():
    tap.skip_all("PyTorch sees no CUDA device")

import _gpar
import gpar

eng = gpar.Engine()
cuda = [d for d in eng.devices if d.backend == "cuda"]
if not cuda:
    tap.skip_all("libgpar has no CUDA device (configure --with-cuda)")
dev = cuda[0].index
n = 1 << 20
slow = gpar.Kernel("slow_set", "u64 n, u64 iters, f32 v, inout f32 *x",
                   "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) { gpar_f32 s = 0.0f;"
                   " for (gpar_u64 j = 0; j < iters; j++) s = s * 0.5f + 1.0f; x[i] = v + s - s; }",
                   engine=eng)
slow.build(dev)

# ---- torch -> gpar: zero-copy, and gpar's writes are torch's
t = torch.arange(16, dtype=torch.float32, device="cuda")
a = gpar.from_dlpack(t, engine=eng)
tap.is_((a.backend, a.device, a.shape), ("cuda", dev, (16,)), "gpar.from_dlpack(torch CUDA tensor): on the CUDA device")
gpar.multiply(a, a, out=a)
a.wait()
tap.ok(torch.equal(t.cpu(), torch.arange(16, dtype=torch.float32) ** 2),
       "gpar's in-place multiply on it is seen by torch (zero-copy)")

# ---- the stream rule, consumer side: torch writes on a busy side stream, gpar reads at once
side = torch.cuda.Stream()
for r in range(3):
    t = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # tens of milliseconds of GPU time on the side stream
        t.fill_(3.0 + r)
        a = gpar.from_dlpack(t, engine=eng)  # torch's current stream is `side` here
    s = gpar.sum(a)
    got = float(s.numpy().reshape(-1)[0])
    tap.is_(got, (3.0 + r) * n, "round %d: gpar.sum of a tensor torch filled on a busy side stream sees the fill" % r)

# ---- the stream rule, producer side: gpar writes behind a slow kernel, torch reads at once;
# the host does not wait for the kernel (torch's stream, waiting on it, is still busy)
for r in range(3):
    g = gpar.zeros((n,), engine=eng, device=dev)
    torch.cuda.synchronize()
    slow((n // 256,), (256,), [n, 200000, 5.0 + r, g])
    t = torch.from_dlpack(g)
    busy = not torch.cuda.current_stream().query()
    tap.is_(float(t.sum().item()), (5.0 + r) * n,
            "round %d: torch.from_dlpack of an array a slow kernel is writing reads the kernel's values" % r)
    tap.ok(busy, "round %d:   and returned before the kernel ended (torch's stream waits on the device)" % r)
    del t
g = gpar.zeros((16,), engine=eng, device=dev)
try:
    g.__dlpack__(stream=0)
    tap.ok(False, "__dlpack__(stream=0) on CUDA is refused (ambiguous in DLPack)")
except BufferError as e:
    tap.ok("ambiguous" in str(e), "__dlpack__(stream=0) on CUDA is refused (ambiguous in DLPack): %s" % e)

# ---- BLAS on torch's memory: the same product as torch
x = torch.randn(256, 128, device="cuda")
w = torch.randn(128, 64, device="cuda")
y = gpar.matmul(gpar.from_dlpack(x, engine=eng), gpar.from_dlpack(w, engine=eng))
ref = (x @ w).cpu().numpy()
tap.ok(np.allclose(y.numpy(), ref, rtol=1e-3, atol=1e-3), "gpar.matmul of two torch CUDA tensors matches torch's")
yt = torch.from_dlpack(y)
tap.ok(yt.device.type == "cuda" and yt.data_ptr() == _gpar.native(y._buf) + y._off,
       "torch.from_dlpack(gpar CUDA array): a CUDA tensor over the array's memory")

# ---- lifetime: the tensor is dropped while libgpar still has work on it
t = torch.full((n,), 2.0, device="cuda")
a = gpar.from_dlpack(t, engine=eng)
out = gpar.zeros((n,), engine=eng, device=dev)
slow((n // 256,), (256,), [n, 200000, 0.0, out])
gpar.add(a, a, out=out)
del t
gc.collect()
torch.cuda.empty_cache()
junk = torch.full((n,), 99.0, device="cuda")  # would take the memory if it were freed
tap.is_(float(out.numpy().sum()), 4.0 * n, "a tensor dropped by Python while gpar reads it stays alive for the read")
del a, junk

# ---- CuPy, both ways
try:
    import cupy
except ImportError:
    cupy = None
if cupy is None:
    tap.diag("CuPy is not installed: no CuPy rows")
else:
    c = cupy.arange(32, dtype=cupy.float32)
    ca = gpar.from_dlpack(c, engine=eng)
    gpar.add(ca, ca, out=ca)
    ca.wait()
    tap.ok(bool((c == 2 * cupy.arange(32, dtype=cupy.float32)).all()), "gpar.from_dlpack(CuPy array): gpar's add is seen by CuPy")
    g = gpar.zeros((n,), engine=eng, device=dev)
    slow((n // 256,), (256,), [n, 200000, 7.0, g])
    cg = cupy.from_dlpack(g)
    tap.is_(float(cg.sum()), 7.0 * n, "cupy.from_dlpack of an array a slow kernel is writing reads the kernel's values")

eng.close(force=True)
tap.done()
