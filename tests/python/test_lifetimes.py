"""test_lifetimes.py: who keeps memory alive. A NumPy array handed to libgpar and dropped by
Python while ops on it are still queued stays alive until they are done (a copy queued behind a
slow kernel still reads the right values), then goes; a DLPack view of a gpar array keeps it
alive after Python drops the array, and an engine refuses to close under it; many imports all
go back to their owners; arrays of a closed engine are refused, not dereferenced."""
import gc
import weakref

import tap

try:
    import numpy as np
except ImportError:
    tap.skip_all("NumPy is not installed (python3-numpy)")

import _gpar
import gpar

eng = gpar.Engine()
slow = gpar.Kernel("slow_fill", "u64 n, u64 iters, inout f32 *x",
                   "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) { gpar_f32 v = 0.0f;"
                   " for (gpar_u64 j = 0; j < iters; j++) v = v * 0.5f + 1.0f; x[i] = v + (gpar_f32)i; }",
                   engine=eng)
slow.build(eng.cpu)
n = 4096
for d in eng.devices:
    host = np.zeros(n, np.float32)
    seen = weakref.ref(host)
    a = gpar.from_dlpack(host, engine=eng)
    out = gpar.zeros((n,), engine=eng, device=d.index)
    slow((n // 64,), (64,), (n, 50000, a))   # about 0.1 s on the CPU device
    out.copy_(a)                               # queued behind it, reads host's memory
    del host, a
    gc.collect()
    alive = seen() is not None
    got = out.numpy()
    tap.ok(alive, "device %d: the NumPy array stays alive while ops on it are queued" % d.index)
    tap.ok(np.array_equal(got, 2.0 + np.arange(n, dtype=np.float32)),
           "device %d: the queued copy read the kernel's results from it" % d.index)
    eng.wait_all()
    gc.collect()
    tap.ok(seen() is None, "device %d: and goes once they are done" % d.index)
    del out

# ---- a DLPack view outlives the gpar array ----
a = gpar.asarray(np.arange(16, dtype=np.float32), engine=eng, device=eng.cpu).to(eng.cpu)
view = np.from_dlpack(a)
ref = weakref.ref(a)
del a
gc.collect()
tap.ok(ref() is not None and np.array_equal(view, np.arange(16, dtype=np.float32)),
       "a NumPy view keeps the gpar array alive and reads it")
tap.raises(lambda: eng.close(), "GPAR_EINVAL", "the engine refuses to close under a live export", "still alive")
del view
gc.collect()
tap.ok(ref() is None, "dropping the view lets the array go")

# ---- many imports, all given back ----
hosts = [np.full(64, i, np.float32) for i in range(200)]
refs = [weakref.ref(h) for h in hosts]
arrays = [gpar.from_dlpack(h, engine=eng) for h in hosts]
for x in arrays:
    gpar.relu(x, out=x)
del hosts, arrays, x
gc.collect()
eng.wait_all()
gc.collect()
tap.is_(sum(r() is not None for r in refs), 0, "200 imports: every owner given back after wait_all")
tap.is_(eng.stats()["buffers_live"], 0, "  no buffer left in the engine")

# ---- a closed engine's arrays ----
b = gpar.asarray(np.ones(8, np.float32), engine=eng, device=eng.cpu)
eng.close()
tap.raises(lambda: b.numpy(), "GPAR_ESHUTDOWN", "an array of a closed engine is refused", "shut down")
del b
gc.collect()
tap.ok(True, "and collected without harm")
tap.done()
