#!/usr/bin/env python3
"""python-bench.py: the Python front's costs, side by side in one process, in interleaved
rounds (min, median, max of --repeat rounds):
  - a tiny kernel launched eagerly from Python (gpar.Kernel.__call__) against the same launch
    from C (_gpar.launch_loop: arguments converted once, gpar_kernel_launch in a C loop);
  - gpar.from_dlpack(x) and the peer's from_dlpack(gpar array), per call, for NumPy and (where
    importable) PyTorch CPU and CUDA tensors;
  - a portable kernel on a torch CUDA tensor against the same kernel in CuPy's RawKernel
    (where both are importable and a CUDA device is there).
Run from a build tree as tests/python-tap.sh does (PYTHONPATH = build/python/.libs and
python/), e.g. `PYTHONPATH=build/python/.libs:python LD_LIBRARY_PATH=build/.libs python3
bench/python-bench.py --device cuda`. --json FILE writes the figures; --quick runs tiny counts
(the test that this script runs, never a timing)."""
import argparse
import json
import statistics
import sys
import time

import _gpar
import gpar


def stats(xs):
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def show(name, ours, theirs=None, unit="us"):
    line = "  %-52s %9.3f %s (%.3f..%.3f)" % (name, ours["median"], unit, ours["min"], ours["max"])
    if theirs:
        line += "   vs %9.3f (%.3f..%.3f)   diff %+.3f, ratio %.3f" % (
            theirs["median"], theirs["min"], theirs["max"], ours["median"] - theirs["median"],
            ours["median"] / theirs["median"] if theirs["median"] else float("nan"))
    print(line, flush=True)


def launches(eng, dev, iters, repeat):
    k = gpar.Kernel("tiny", "u64 n, inout f32 *x", "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) x[i] += 1.0f;",
                    engine=eng)
    x = gpar.zeros((32,), engine=eng, device=dev)
    k.build(dev)
    args = (32, x)
    py, c = [], []
    for _ in range(repeat):
        eng.wait_all()
        t0 = time.perf_counter()
        _gpar.launch_loop(k._id, dev, (1,), (32,), k._kinds, args, iters)
        t1 = time.perf_counter()
        eng.wait_all()
        c.append((t1 - t0) / iters * 1e6)
        t0 = time.perf_counter()
        for _ in range(iters):
            k((1,), (32,), args)
        t1 = time.perf_counter()
        eng.wait_all()
        py.append((t1 - t0) / iters * 1e6)
    got = x.numpy()[0]
    want = 2.0 * iters * repeat
    if got != want:
        print("wrong result: x[0] = %g, want %g" % (got, want))
        sys.exit(1)
    return stats(py), stats(c)


def exchange(eng, make, consume, iters, repeat):
    """us per gpar.from_dlpack(make()) and per consume(gpar array)."""
    imp, exp = [], []
    srcs = [make() for _ in range(iters)]
    a = gpar.from_dlpack(srcs[0], engine=eng)
    for _ in range(repeat):
        t0 = time.perf_counter()
        arrays = [gpar.from_dlpack(s, engine=eng) for s in srcs]
        t1 = time.perf_counter()
        imp.append((t1 - t0) / iters * 1e6)
        del arrays
        t0 = time.perf_counter()
        views = [consume(a) for _ in range(iters)]
        t1 = time.perf_counter()
        exp.append((t1 - t0) / iters * 1e6)
        del views
        eng.wait_all()
    return stats(imp), stats(exp)


def cupy_vs_gpar(eng, dev, n, iters, repeat):
    import cupy
    import torch
    src = r'extern "C" __global__ void scale(unsigned long long n, float a, float *x)' \
          r'{ unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }'
    raw = cupy.RawKernel(src, "scale")
    k = gpar.Kernel("scale", "u64 n, f32 a, inout f32 *x",
                    "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) x[i] *= a;", engine=eng)
    t = torch.ones(n, device="cuda")
    g = gpar.from_dlpack(t, engine=eng)
    c = cupy.from_dlpack(t)
    k.build(g.device)
    grid, block = ((n + 255) // 256,), (256,)
    ours, theirs = [], []
    for _ in range(repeat):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            k(grid, block, (n, 1.0, g))
        eng.wait_all()
        ours.append((time.perf_counter() - t0) / iters * 1e6)
        t0 = time.perf_counter()
        for _ in range(iters):
            raw(grid, block, (cupy.uint64(n), cupy.float32(1.0), c))
        cupy.cuda.get_current_stream().synchronize()
        theirs.append((time.perf_counter() - t0) / iters * 1e6)
    return stats(ours), stats(theirs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="device for the launches (default: first GPU, else CPU)")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="tiny counts: check that it runs")
    ap.add_argument("--json", default=None)
    o = ap.parse_args()
    if o.quick:
        o.iters, o.repeat = 50, 2
    eng = gpar.Engine()
    dev = eng.device(o.device)
    d = eng.devices[dev]
    print("device %d: %s %s; %d launches x %d rounds" % (dev, d.backend, d.name, o.iters, o.repeat), flush=True)
    rec = {"device": d.__dict__, "iters": o.iters, "repeat": o.repeat}
    print("tiny kernel, eager launch, us per launch (Python vs the same launch from C):")
    py, c = launches(eng, dev, o.iters, o.repeat)
    show("gpar.Kernel call from Python", py, c)
    rec["launch"] = {"python": py, "c": c}
    print("DLPack exchange, us per call (import vs export):")
    import numpy as np
    n_ex = max(o.iters // 20, 10)
    imp, exp = exchange(eng, lambda: np.ones(16, np.float32), np.from_dlpack, n_ex, o.repeat)
    show("gpar.from_dlpack(numpy array)", imp)
    show("numpy.from_dlpack(gpar array)", exp)
    rec["numpy"] = {"import": imp, "export": exp}
    try:
        import torch
    except ImportError:
        torch = None
        print("  (PyTorch not importable: no torch rows)")
    if torch is not None:
        imp, exp = exchange(eng, lambda: torch.ones(16), torch.from_dlpack, n_ex, o.repeat)
        show("gpar.from_dlpack(torch CPU tensor)", imp)
        show("torch.from_dlpack(gpar CPU array)", exp)
        rec["torch_cpu"] = {"import": imp, "export": exp}
        if torch.cuda.is_available() and any(x.backend == "cuda" for x in eng.devices):
            imp, exp = exchange(eng, lambda: torch.ones(16, device="cuda"), torch.from_dlpack, n_ex, o.repeat)
            show("gpar.from_dlpack(torch CUDA tensor)", imp)
            show("torch.from_dlpack(gpar CUDA array)", exp)
            rec["torch_cuda"] = {"import": imp, "export": exp}
            try:
                ours, theirs = cupy_vs_gpar(eng, dev, 1 << 20, max(o.iters // 20, 10), o.repeat)
                print("portable kernel on a torch CUDA tensor (2^20 floats), us per launch:")
                show("gpar.Kernel vs CuPy RawKernel", ours, theirs)
                rec["cupy"] = {"gpar": ours, "cupy": theirs}
            except ImportError:
                print("  (CuPy not importable)")
    eng.close(force=True)
    if o.json:
        with open(o.json, "w") as f:
            json.dump(rec, f, indent=1)


if __name__ == "__main__":
    main()
