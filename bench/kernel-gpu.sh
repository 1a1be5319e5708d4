#!/bin/bash
# kernel-gpu.sh: the portable kernels' measurements in ONE call on the GPU machine, then their
# targets table (bench/kernel-table.py): gpar-bench kernel on CUDA, on NVIDIA's OpenCL, on CUDA
# with every backend open (two devices at once, traced), and on the host pinned to 2 cores; then
# the kernel tests under compute-sanitizer memcheck. Run it from a built tree (cwd holds
# tools/gpar-bench), e.g.:
#   GPU_CHECK_TESTS=0 bash .gpu/gpu-check.sh bash bench/kernel-gpu.sh
# Every command is echoed as run ("$ ..."), each under `timeout`; records (<case>.json), logs
# (.txt), the trace, commands.txt and table.md go to $OUT/kernel (else /tmp/kernel-out).
# Knobs: KERNEL_REPEAT (5), KERNEL_SAN (1: the compute-sanitizer runs). About 4 minutes.
# Exit status: 0 when every case left a record (targets missed do not fail it).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:+$OUT/kernel}; out=${out:-/tmp/kernel-out}
rm -rf "$out" && mkdir -p "$out" || exit 1
rep=${KERNEL_REPEAT:-5}
cmds=$out/commands.txt
: > "$cmds"
fails=0
bench=./tools/gpar-bench
[ -x "$bench" ] || { echo "kernel-gpu.sh: no $bench here (run it from a built tree)"; exit 1; }
export GPAR_CACHE_DIR=$out/cache # (a fresh disk cache: the first builds are cold)

run() { # NAME TIMEOUT COMMAND...
  local name=$1 t=$2
  shift 2
  echo "\$ $*" | tee -a "$cmds"
  timeout "$t" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  tail -40 "$out/$name.txt"
  [ "$rc" -eq 0 ] || { echo "kernel-gpu.sh: $name: exit $rc"; fails=$((fails + 1)); }
}

./tools/gpar-info >"$out/gpar-info.txt" 2>&1
grep -A8 '^kernels' "$out/gpar-info.txt"
run cuda 300 "$bench" kernel --backend cuda --repeat "$rep" --json "$out/cuda.json"
run opencl 300 "$bench" kernel --backend opencl --repeat "$rep" --json "$out/opencl.json"
run overlap 300 "$bench" kernel --backend cuda --all-backends --repeat 3 --sizes 20 --json "$out/overlap.json" \
  --trace "$out/overlap.trace.json"
run host2 300 env GPAR_HOST_THREADS=2 taskset -c 0,1 "$bench" kernel --backend host --repeat "$rep" --sizes 20,24 \
  --json "$out/host2.json"
if [ "${KERNEL_SAN:-1}" = 1 ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  make -j"$(nproc)" tests/kernel tests/kernel_engine >"$out/build.log" 2>&1 || tail -20 "$out/build.log"
  for t in tests/kernel tests/kernel_engine; do
    run "memcheck-$(basename $t)" 500 env GPAR_BACKENDS=host,cuda GPAR_QUIET=1 GPAR_TEST_TIMEOUT=480 \
      "$cs" --tool memcheck --error-exitcode 9 "$t"
  done
fi
python3 "$here/kernel-table.py" "$out" >"$out/table.md" && cat "$out/table.md"
echo "kernel-gpu: $fails run(s) failed"
[ "$fails" -eq 0 ]
