#!/bin/bash
# check-gpu.sh: after `make check` on the GPU machine (bash .gpu/gpu-check.sh bash bench/check-gpu.sh),
# the CUDA tests once more under compute-sanitizer (memcheck: out-of-bounds and misaligned
# accesses, leaks of device memory; racecheck: shared-memory hazards of our own kernels, of
# which there are none, but cuBLAS's are checked too), each on host + CUDA only, then a copy of
# test-suite.log (when make check ran). Logs go to $OUT/check (else /tmp/check-out), a one-line verdict per run here.
set -u
out=${OUT:+$OUT/check}; out=${out:-/tmp/check-out}
mkdir -p "$out"
fails=0
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "check-gpu.sh: no compute-sanitizer"; exit 1; }
# The tests it runs, built when `make check` did not run first (GPU_CHECK_TESTS=0).
make -j"$(nproc)" tests/conformance tests/graph tests/dag tests/faults tests/runs tests/kernel_host_threads \
  tests/array_alias tests/f16_bits tests/lanes >"$out/build.log" 2>&1 ||
  { tail -20 "$out/build.log"; exit 1; }
san() { # TOOL TEST [ARGS...]
  local tool=$1 t=$2 log
  shift 2
  log="$out/$tool-$(basename "$t").txt"
  echo "\$ GPAR_BACKENDS=host,cuda compute-sanitizer --tool $tool --error-exitcode 9 $t $*" | tee "$log"
  GPAR_BACKENDS=host,cuda GPAR_QUIET=1 GPAR_TEST_TIMEOUT=500 timeout 520 "$cs" --tool "$tool" --error-exitcode 9 \
    "$t" "$@" >>"$log" 2>&1
  local rc=$?
  local notok summary
  notok=$(grep -c '^not ok' "$log")
  summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$log" | tail -1)
  echo "$tool $t: exit $rc, $(grep -c '^ok' "$log") ok, $notok not ok; ${summary:-no summary}"
  [ "$rc" -eq 0 ] && [ "$notok" -eq 0 ] || fails=$((fails + 1))
}
san memcheck tests/conformance
san memcheck tests/graph
san memcheck tests/dag
san memcheck tests/faults
san memcheck tests/runs
san memcheck tests/kernel_host_threads # fresh threads, GPAR_HOST operands
san memcheck tests/array_alias         # one buffer, several ranges
san memcheck tests/f16_bits            # the NaN rule in CUDA's dialect
san memcheck tests/lanes               # 1, 2 and 4 compute lanes
san racecheck tests/graph
cp test-suite.log "$out/" 2>/dev/null
echo "check-gpu: $fails run(s) failed"
[ "$fails" -eq 0 ]
