#!/bin/bash
# sweep-gpu.sh: the size sweeps behind a machine's report (where N devices start to pay): CUDA, OpenCL (the vendor's
# GPUs and PoCL's two CPU devices: two groups), and the host, each in its own process under a
# time limit, records (JSON), charts (SVG) and tables (.txt) into $OUT, else ./sweep-out.
# On the GPU machine, from the project's root after pack.sh:
#   GPU_CHECK_TESTS=0 bash .gpu/gpu-check.sh bash bench/sweep-gpu.sh
# then where gpar-bench report was built (it needs jansson):
#   build/tools/gpar-bench report OUT/sweep-*.json --outdir DIR > DIR/report.md
# LABEL names the machine in the charts (default H200); SWEEP_ARGS adds options, e.g.
# "--sizes 64,256,1024,4096 --repeat 1" for a shorter run.
set -u
out=${OUT:-./sweep-out}
mkdir -p "$out"
label=${LABEL:-H200}
export POCL_DEVICES=${POCL_DEVICES:-pthread pthread}
./tools/gpar-info 2>&1 | tee "$out/gpar-info.txt"
sweep() { # sweep NAME SECONDS OPTIONS...
  local name=$1 limit=$2
  shift 2
  echo "### sweep-$name: gpar-bench sweep $* (limit ${limit}s)"
  # shellcheck disable=SC2086
  timeout "$limit" ./tools/gpar-bench sweep --label "$label" --quiet "$@" ${SWEEP_ARGS:-} \
    --json "$out/sweep-$name.json" --svg "$out/sweep-$name.svg" 2>&1 | tee "$out/sweep-$name.txt"
  echo "exit ${PIPESTATUS[0]}"
}
t0=$(date +%s)
sweep cuda 90 --backend cuda
sweep opencl 120 --backend opencl
sweep host 30 --backend host
echo "sweeps took $(($(date +%s) - t0)) s"
ls -l "$out"
