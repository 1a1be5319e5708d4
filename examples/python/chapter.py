"""chapter.py: D2L's "Automatic Parallelism" chapter in Python on libgpar: SGEMMs on every device at once.

Experiment 1: N SGEMMs y = x @ x of size S on each device alone, then on all of them at once
from this one thread (every call returns at once; one engine.wait_all() collects them all).
Experiment 2: on one device, N SGEMMs alone, then N copies of their results to pinned host
memory alone, then each SGEMM followed at once by its copy, so the copies overlap later SGEMMs.

    python3 chapter.py [--device LIST] [--size S] [-n N]

--device: a comma list of devices ("0,2", "opencl:0,cpu"); by default the GPUs if any, else
every device of the engine (the CPU and OpenCL CPU devices such as PoCL's). Experiment 2 runs
on the first GPU of the list, else on its last device. Results are checked against NumPy: a
wrong one exits with status 1."""
import argparse
import sys
import time

import numpy as np

import gpar


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", help="comma list of devices (default: the GPUs, else every device)")
    ap.add_argument("--size", "-s", type=int, default=256, help="matrix size S (default 256)")
    ap.add_argument("-n", type=int, default=10, help="SGEMMs per device (default 10)")
    args = ap.parse_args()
    eng = gpar.default_engine()
    if args.device:
        try:
            devs = [eng.device(int(d) if d.strip().isdigit() else d.strip()) for d in args.device.split(",")]
        except (ValueError, gpar.Error) as e:   # no such device
            ap.error(str(e))
    else:
        devs = [d.index for d in eng.devices if d.type == "gpu"] or [d.index for d in eng.devices]
    for d in devs:
        print("device %d: %s %s" % (d, eng.devices[d].backend, eng.devices[d].name))
    S, N = args.size, args.n

    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((S, S), dtype=np.float32)
    want = x_host @ x_host
    x = {d: gpar.asarray(x_host, device=d) for d in devs}   # on each device (the CPU's is x_host itself)
    y = {d: gpar.empty((S, S), device=d) for d in devs}
    for d in devs:                                            # warm-up: BLAS kernels built, pools grown
        gpar.matmul(x[d], x[d], out=y[d])
    eng.wait_all()

    # Experiment 1: each device alone, then all at once.
    alone = {}
    for d in devs:
        t = time.perf_counter()
        for _ in range(N):
            gpar.matmul(x[d], x[d], out=y[d])
        eng.wait_all()
        alone[d] = time.perf_counter() - t
        print("  %d SGEMMs of %d^3 on device %d alone: %.4f s" % (N, S, d, alone[d]))
    t = time.perf_counter()
    for _ in range(N):
        for d in devs:                                        # returns at once: the devices run in parallel
            gpar.matmul(x[d], x[d], out=y[d])
    eng.wait_all()                                            # one wait for them all
    together = time.perf_counter() - t
    total = sum(alone.values())
    print("  the same on %d device(s) at once: %.4f s (sum of the alone times %.4f s: ratio %.2f)"
          % (len(devs), together, total, total / together))
    for d in devs:
        check(y[d].numpy(), want, "experiment 1, device %d" % d)

    # Experiment 2: compute alone, copy alone, then compute with each copy right after its SGEMM.
    d = next((d for d in devs if eng.devices[d].type == "gpu"), devs[-1])
    outs = [gpar.empty((S, S), device=d) for _ in range(N)]
    # Pinned host memory (device -1: GPAR_HOST), made before the clocks; hosts2 for the overlapped run.
    hosts = [gpar.empty((S, S), device=-1) for _ in range(N)]
    hosts2 = [gpar.zeros((S, S), device=-1) for _ in range(N)]
    t = time.perf_counter()
    for i in range(N):
        gpar.matmul(x[d], x[d], out=outs[i])
    eng.wait_all()
    t_run = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(N):
        hosts[i].copy_(outs[i])
    eng.wait_all()
    t_copy = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(N):
        gpar.matmul(x[d], x[d], out=outs[i])
        hosts2[i].copy_(outs[i])                              # ordered after the SGEMM that writes outs[i]
    eng.wait_all()
    t_both = time.perf_counter() - t
    print("device %d: %d SGEMMs %.4f s, %d copies to host %.4f s, both overlapped %.4f s "
          "(run + copy %.4f s: ratio %.2f)" % (d, N, t_run, N, t_copy, t_both, t_run + t_copy,
                                              (t_run + t_copy) / t_both))
    for i, h in enumerate(hosts + hosts2):
        check(np.asarray(h), want, "experiment 2, copy %d" % i)   # host memory: read in place
    print("results checked against NumPy")
    eng.close()


def check(got, want, what):
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    if not err < 1e-4:
        print("%s: wrong result (max relative error %.3g)" % (what, err), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
