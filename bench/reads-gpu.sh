#!/bin/bash
# reads-gpu.sh: what only a GPU machine shows of "a kernel build reads no file outside its key"
# (Reliability VI), in ONE call after the build (bash .gpu/gpu-check.sh bash bench/reads-gpu.sh):
# (1) the kernel tests on CUDA, NVIDIA OpenCL and PoCL; (2) gpar-bench kernel on CUDA and on
# NVIDIA OpenCL: a disk hit in a new process (create + build) next to the hand loader; (3) the
# probe of NVIDIA's OpenCL compiler and libgpar's guard (bench/probes/p6_clpoison.c); (4) a
# kernel's build on CUDA in a new process, timed by its phases with strace-free clocks: the
# first gpar_kernel_support (the target: the record, or NVRTC) and the build. Logs in $OUT/reads.
set -u
src=$(cd "$(dirname "$0")/.." && pwd) # the checkout (the probes are not in the tarball)
out=${OUT:+$OUT/reads}; out=${out:-/tmp/reads-out}
mkdir -p "$out"
echo "\$ make check TESTS=(kernel tests)"
GPAR_QUIET=1 make -j"$(nproc)" check TEST_SUITE_LOG=test-suite-reads.log TESTS="tests/kernel_reads tests/kernel_names \
  tests/kernel_cache tests/kernel_cache_trust tests/kernel tests/kernel_engine tests/kernel_errors tests/kernel_args \
  tests/f16_bits tests/array tests/array_prepare tests/kernel_reserved.tap tests/comm_lifetime" >"$out/check.log" 2>&1
grep -E '^(FAIL|ERROR)|^# (TOTAL|PASS|SKIP|FAIL|ERROR)' "$out/check.log"
cp test-suite-reads.log "$out/" 2>/dev/null
grep -h -E '^(ok|not ok).*device (0|1|2|3)' tests/kernel_reads.log 2>/dev/null | head -48 >"$out/kernel_reads.txt"
for b in cuda opencl; do
  echo "\$ ./tools/gpar-bench kernel --backend $b --repeat 5 --sizes 20"
  ./tools/gpar-bench kernel --backend $b --repeat 5 --sizes 20 >"$out/kernel-$b.txt" 2>&1
  grep -E 'kernels on|first build|later cold|memory hit|disk hit' "$out/kernel-$b.txt"
done
echo "\$ p6_clpoison"
cc -o /tmp/p6 "$src/bench/probes/p6_clpoison.c" $(pkg-config --cflags --libs OpenCL 2>/dev/null || echo -lOpenCL) \
  >"$out/p6-build.log" 2>&1 && /tmp/p6 | tee "$out/p6.txt"
