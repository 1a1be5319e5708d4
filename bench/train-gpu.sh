#!/bin/bash
# train-gpu.sh: the array-op and training-step measurements in ONE call on the GPU machine, then
# their targets table: `gpar-bench array` on CUDA and on NVIDIA OpenCL (the binary op and the map
# against the hand saxpy, the sum against the hand two-pass sum, at 2^20, 2^24, 2^28 floats),
# `gpar-bench train` on one CUDA GPU (and on two when there are), and bench/train_torch.py, the
# PyTorch peer (same weights and data, TF32 off on both sides). Run it from a built tree (cwd
# holds tools/gpar-bench), e.g.:
#   GPU_CHECK_TESTS=0 bash .gpu/gpu-check.sh bash bench/train-gpu.sh
# Every command is echoed as run ("$ ..."), each under `timeout`; records (*.json), logs (*.txt)
# and table.md go to $OUT/train (else /tmp/train-out). Knobs: TRAIN_REPEAT (rounds, 5),
# TRAIN_STEPS (100). About 3 minutes on one H200 (the 2^28 cases allocate 3 GiB).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:+$OUT/train}; out=${out:-/tmp/train-out}
rm -rf "$out" && mkdir -p "$out" || exit 1
rep=${TRAIN_REPEAT:-5}
steps=${TRAIN_STEPS:-100}
fails=0
run() { # NAME CMD...: echo, run under timeout, keep the log
  local name=$1
  shift
  echo "\$ $*" | tee -a "$out/commands.txt"
  timeout 900 "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  cat "$out/$name.txt"
  [ $rc -eq 0 ] || { echo "(exit $rc)"; fails=$((fails + 1)); }
}

bench=./tools/gpar-bench
[ -x "$bench" ] || { echo "train-gpu.sh: run from a built tree (no $bench)"; exit 1; }
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
run array-cuda "$bench" array --backend cuda --repeat "$rep" --json "$out/array-cuda.json"
run array-opencl "$bench" array --backend opencl --repeat "$rep" --json "$out/array-opencl.json"
run train-cuda-1 "$bench" train --backend cuda --devices 1 --iters "$steps" --repeat "$rep" --json "$out/train-cuda-1.json"
[ "$ngpu" -ge 2 ] && run train-cuda-2 "$bench" train --backend cuda --devices 2 --iters "$steps" --repeat "$rep" \
  --json "$out/train-cuda-2.json"
run train-opencl-1 "$bench" train --backend opencl --devices 1 --iters "$steps" --repeat "$rep" \
  --json "$out/train-opencl-1.json"
if python3 -c "import torch" 2>/dev/null; then
  run train-torch python3 "$here/train_torch.py" --steps "$steps" --repeat "$rep" --json "$out/train-torch.json"
else
  echo "train-gpu.sh: no PyTorch here: the PyTorch column stays empty"
fi

python3 - "$out" <<'EOF' | tee "$out/table.md"
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
def fmt(v, f="%.3f"):
    return f % v if isinstance(v, (int, float)) else "-"
print("| case | libgpar | reference, same run | ratio | target |")
print("|---|---|---|---|---|")
for be in ("cuda", "opencl"):
    a = load("array-" + be)
    for s in (a or {}).get("results", {}).get("sizes", []):
        n = "2^%d" % s["log2_n"]
        for case, ref, target in (("gpar_binary add", "hand saxpy", ">= 0.95"), ("map saxpy", "hand saxpy", ">= 0.95"),
                                  ("gpar_reduce_range sum", "hand sum", ">= 0.90")):
            c, r = s.get(case, {}), s.get(ref, {})
            print("| %s %s %s f32 | %s GB/s | %s %s GB/s | %s | %s |" % (be, case, n, fmt(c.get("gbs"), "%.0f"), ref,
                  fmt(r.get("gbs"), "%.0f"), fmt(c.get("bandwidth_ratio")), target if s["log2_n"] == 28 else ""))
t = load("train-torch") or {}
for name in ("train-cuda-1", "train-cuda-2", "train-opencl-1"):
    g = load(name)
    if not g:
        continue
    for key, res in g.get("results", {}).items():
        if not isinstance(res, dict):
            continue
        nd = res.get("devices")
        for mode, tk, target in (("eager", "eager_us", "<= 1.0"), ("graph", "graph_us", "<= 1.05")):
            us = res.get(tk, {}).get("median")
            ref = t.get(tk, {}).get("med") if nd == 1 and name.startswith("train-cuda") else None
            print("| %s, %d device(s), step %s | %s us | PyTorch %s %s us | %s | %s |" % (name, nd, mode, fmt(us, "%.1f"),
                  "CUDA graph" if mode == "graph" else "eager", fmt(ref, "%.1f"),
                  fmt(us / ref if us and ref else None), target if ref else ""))
        for mode in ("eager", "graph"):
            lg, lt = res.get("loss_" + mode), t.get("loss_" + mode)
            rel = abs(lg - lt) / abs(lt) if lg is not None and lt else None
            print("| %s, %d device(s), loss after the steps (%s) | %s | PyTorch %s | %s | rel. diff <= 1e-3 |" % (
                  name, nd, mode, fmt(lg, "%.7f"), fmt(lt, "%.7f"), fmt(rel, "%.2e")))
    if "speedup_eager" in g.get("results", {}):
        r = g["results"]
        print("| %s, all devices vs 1 | eager %s x, graph %s x | | | >= 1.9 |" % (name, fmt(r["speedup_eager"]),
              fmt(r["speedup_graph"])))
EOF
echo "records in $out; $fails command(s) failed"
exit $((fails > 0))
