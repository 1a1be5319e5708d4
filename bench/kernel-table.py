#!/usr/bin/env python3
"""kernel-table.py DIR: the portable kernels' targets table (Markdown) from the records that
bench/kernel-gpu.sh leaves in DIR (cuda.json, opencl.json, overlap.json, host2.json, each from
`gpar-bench kernel --json`). Each row: libgpar's median, the hand loop's, their ratio, the target
and whether it is met; a record that is missing leaves its rows out."""
import json
import os
import sys


def load(d, name):
    try:
        with open(os.path.join(d, name)) as f:
            return json.load(f)["results"]
    except (OSError, ValueError, KeyError):
        return None


def med(r, key, who):
    try:
        return r[key][who]["median"]
    except (KeyError, TypeError):
        return None


def fmt(v, unit):
    if v is None:
        return "-"
    return f"{v:.3f} {unit}" if unit else f"{v:.3f}"


def main():
    d = sys.argv[1]
    recs = {n: load(d, n + ".json") for n in ("cuda", "opencl", "overlap", "host2")}
    rows = []

    def ratio_row(rec, label, key, unit, op, target):
        r = recs[rec]
        if not r:
            return
        lib, hand = med(r, key, "libgpar"), med(r, key, "hand")
        ratio = lib / hand if lib is not None and hand else None
        met = None if ratio is None else (ratio <= target if op == "<=" else ratio >= target)
        rows.append((label, fmt(lib, unit), fmt(hand, unit), fmt(ratio, ""), f"{op} {target} x hand", met))

    def abs_row(rec, label, key, unit, scale, limit):
        r = recs[rec]
        v = med(r, key, "libgpar") if r else None
        if v is None:
            return
        rows.append((label, fmt(v * scale, unit), "", "", f"<= {limit} {unit}", v * scale <= limit))

    ratio_row("cuda", "tiny kernel, eager launch loop (CUDA, us per launch)", "tiny_eager", "us", "<=", 1.0)
    ratio_row("cuda", "tiny kernel in a graph (CUDA, us per kernel)", "tiny_graph", "us", "<=", 1.10)
    ratio_row("cuda", "saxpy 2^28 bandwidth, CUDA (GB/s)", "saxpy_268435456_GBs", "GB/s", ">=", 0.98)
    ratio_row("opencl", "saxpy 2^28 bandwidth, NVIDIA OpenCL (GB/s)", "saxpy_268435456_GBs", "GB/s", ">=", 0.98)
    ratio_row("cuda", "saxpy 2^20, CUDA (us per call)", "saxpy_1048576_us", "us", "<=", 1.10)
    ratio_row("opencl", "saxpy 2^20, NVIDIA OpenCL (us per call)", "saxpy_1048576_us", "us", "<=", 1.10)
    abs_row("cuda", "build: first in the process (CUDA)", "build_first", "ms", 1, 100)
    abs_row("cuda", "build: memory hit (CUDA)", "build_memory", "us", 1000, 5)
    abs_row("cuda", "build: disk hit in a new process (CUDA)", "build_process", "ms", 1, 1)
    abs_row("cuda", "  (before it, once per process: NVRTC loaded)", "build_process_ident", "ms", 1, 1e9)
    ratio_row("host2", "host saxpy 2^24 on 2 cores, all workers (GB/s)", "saxpy_16777216_GBs", "GB/s", ">=", 0.9)
    ov = recs["overlap"]
    v = med(ov, "overlap_ratio", "libgpar") if ov else None
    if v is not None:
        rows.append(("two kernels, CUDA + NVIDIA OpenCL, one wait: both / longer alone", fmt(v, "x"), "", "",
                     "overlap (about 1; 2 = one after the other)", v < 1.2))
    print("| case | libgpar | hand | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for label, lib, hand, ratio, target, met in rows:
        print(f"| {label} | {lib} | {hand} | {ratio} | {target} | {'yes' if met else 'NO' if met is not None else '?'} |")


if __name__ == "__main__":
    main()
