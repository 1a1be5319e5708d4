#!/bin/bash
# ab-gpu.sh: A/B of the engine's retirement modes (GPAR_RETIRE=direct | combine, issue 11 item 3)
# in ONE built tree, interleaved so that both modes see the same machine state. Run it on the GPU
# machine from a built tree (the directory holding tools/gpar-bench), e.g.
#   cd build && bash ../bench/ab-gpu.sh        (or bash bench/ab-gpu.sh from an in-place build)
# About 2-3 minutes (each step under `timeout`): empty host ops (overhead, 10 interleaved
# rounds of 200k ops per case), the same with fewer CPU workers (combine only), the per-phase
# breakdown of each mode, then CUDA at
# 256^3 (one GPU, two GPUs, copy-overlap) in A B B A order, each with the raw loop beside (--raw),
# and the per-phase host time of one traced 256^3 run per mode.
# Output: stdout, and $OUT/ab-gpu.txt when $OUT is set.
set -u
here=$(cd "$(dirname "$0")" && pwd)
b=./tools/gpar-bench
[ -x "$b" ] || { echo "ab-gpu.sh: run from a built tree ($b not found in $PWD)"; exit 1; }
log=/dev/null
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && log=$OUT/ab-gpu.txt; fi
{
date -u
nproc
nvidia-smi --query-gpu=index,name --format=csv,noheader 2>/dev/null
git -C "$here" log --oneline -1 2>/dev/null
echo "### overhead A/B: us/op min/median/max over 10 rounds, 200k ops per case (32 CPU workers by default)"
timeout 150 python3 "$here/overhead-ab.py" 10 200000 .:GPAR_RETIRE=direct .:GPAR_RETIRE=combine
echo "### CPU worker count under combine (5 rounds, 200k ops): 8, 16 workers vs the default"
timeout 75 python3 "$here/overhead-ab.py" 5 200000 .:GPAR_RETIRE=combine,GPAR_HOST_THREADS=8 \
  .:GPAR_RETIRE=combine,GPAR_HOST_THREADS=16 .:GPAR_RETIRE=combine
for m in direct combine; do
  echo "### breakdown, GPAR_RETIRE=$m: gpar-bench overhead --iters 200000 --repeat 1 --breakdown"
  GPAR_RETIRE=$m GPAR_BACKENDS=host timeout 60 "$b" overhead --iters 200000 --repeat 1 --breakdown --quiet
done
gpu() { # mode, gpar-bench arguments
  local m=$1; shift
  echo "### GPAR_RETIRE=$m gpar-bench $*"
  GPAR_RETIRE=$m timeout 45 "$b" "$@" --quiet
}
for args in "multi-device --backend cuda --devices 1 --size 256 --iters 2000 --raw --repeat 5" \
            "multi-device --backend cuda --devices 2 --size 256 --iters 2000 --raw --repeat 5" \
            "copy-overlap --backend cuda --size 256 --iters 2000 --raw --repeat 5"; do
  for m in direct combine combine direct; do gpu $m $args; done
done
for m in direct combine; do
  echo "### GPAR_RETIRE=$m: per-phase host time of the 256^3 GEMMs on one GPU (trace, bench/breakdown-trace.py)"
  GPAR_RETIRE=$m timeout 60 "$b" multi-device --backend cuda --devices 1 --size 256 --iters 2000 --quiet \
    --trace /tmp/ab-gpu-$m.json >/dev/null && python3 "$here/breakdown-trace.py" /tmp/ab-gpu-$m.json
done
date -u
} 2>&1 | tee "$log"
