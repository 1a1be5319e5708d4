#!/bin/bash
# reliability-gpu.sh: what only a GPU shows of the kernels' and array ops' reliability fixes and
# of the compute lanes, in ONE call after make check (bash .gpu/gpu-check.sh bash
# bench/reliability-gpu.sh), from a built tree: (1) compute-sanitizer over the tests
# (bench/check-gpu.sh); (2) the lanes' tests and the engine's semantics tests with 4 compute
# lanes on every device; (3) the fresh-thread GPAR_HOST test against the CUDA device bracket as it
# was (cudaSetDevice skipped when cudaGetDevice names the device): it must fail there, then pass
# again once rebuilt. Logs go to $OUT/rel (else /tmp/rel-out). REL_SAN=0 leaves out (1),
# REL_LANES=0 (2).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:+$OUT/rel}; out=${out:-/tmp/rel-out}
mkdir -p "$out"
fails=0
if [ "${REL_SAN:-1}" = 1 ]; then bash "$here/check-gpu.sh" || fails=$((fails + 1)); fi
if [ "${REL_LANES:-1}" = 1 ]; then
echo "\$ GPAR_LANES=4 make check TESTS=..."
GPAR_LANES=4 GPAR_QUIET=1 make -j"$(nproc)" check TEST_SUITE_LOG=test-suite-lanes4.log \
  TESTS="tests/lanes tests/lanes_matrix.tap tests/conformance tests/graph tests/dag tests/faults tests/comm tests/kernel \
  tests/kernel_engine tests/array tests/array_alias tests/array_train tests/runs tests/contention tests/shutdown" \
  >"$out/lanes4.log" 2>&1 || fails=$((fails + 1))
grep -E '^(FAIL|ERROR)|^# (TOTAL|PASS|SKIP|FAIL|ERROR)' "$out/lanes4.log"
cp test-suite-lanes4.log "$out/" 2>/dev/null
fi
# The mutant: the device bracket before the fix.
f=backends/cuda/cuda_device.c # an in-tree build (gpu-check.sh's), else the source beside it
[ -f "$f" ] || f=$(sed -n 's/^abs_top_srcdir = //p' Makefile)/backends/cuda/cuda_device.c
cp "$f" "$out/cuda_device.c.orig"
python3 - "$f" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
a = '  return gpar__cuda_check(cudaSetDevice(d->ordinal), "cudaSetDevice");\n}\n\nvoid gpar__cuda_exit'
assert a in s, "fix not found"
s = s.replace(a, '  if (cur == d->ordinal) return GPAR_OK;\n' + a, 1)
open(p, "w").write(s)
PY
make -j"$(nproc)" >"$out/mutant-build.log" 2>&1 && make tests/kernel_host_threads >>"$out/mutant-build.log" 2>&1
echo "\$ (mutant: bracket without cudaSetDevice) GPAR_BACKENDS=host,cuda tests/kernel_host_threads"
GPAR_BACKENDS=host,cuda GPAR_QUIET=1 ./tests/kernel_host_threads >"$out/mutant-host-threads.txt" 2>&1
echo "mutant: exit $?, $(grep -c '^not ok' "$out/mutant-host-threads.txt") not ok"
grep -m3 -A1 '^not ok' "$out/mutant-host-threads.txt"
cp "$out/cuda_device.c.orig" "$f"
make -j"$(nproc)" >"$out/rebuild.log" 2>&1 && make tests/kernel_host_threads >>"$out/rebuild.log" 2>&1
GPAR_BACKENDS=host,cuda GPAR_QUIET=1 ./tests/kernel_host_threads >"$out/fixed-host-threads.txt" 2>&1
rc=$?
echo "fixed: exit $rc, $(grep -c '^ok' "$out/fixed-host-threads.txt") ok, $(grep -c '^not ok' "$out/fixed-host-threads.txt") not ok"
[ $rc -eq 0 ] || fails=$((fails + 1))
echo "reliability-gpu: $fails part(s) failed"
[ "$fails" -eq 0 ]
