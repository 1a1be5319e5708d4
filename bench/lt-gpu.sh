#!/bin/bash
# lt-gpu.sh: on the GPU machine: CUDA GEMMs through cached cublasLt plans.
# First the correctness tests on the CUDA devices (tests/cuda_gemm_lt: Lt vs cublasSgemm/Dgemm
# vs a double reference, and that Lt really ran; blas_rules, conformance, graph), cuda_gemm_lt
# once more under compute-sanitizer memcheck when installed; then gpar-bench with the plans
# (default) and without (GPAR_CUBLASLT=0): one GPU at 256^3 x 2000 and 64^3 x 10000 against the
# raw cublasSgemm loop, and the 4000^3 rate. Run it from a built tree (./configure --with-cuda;
# make). Prints each test's exit status and the benchmark lines; exits 1 when a test or a
# benchmark failed. Logs go to $OUT/lt (else /tmp/lt-out). Timings are printed, not
# judged: compare the GPAR_CUBLASLT=1 and =0 lines.
set -u
out=${OUT:-/tmp}/lt; [ -n "${OUT:-}" ] || out=/tmp/lt-out
rm -rf "$out"; mkdir -p "$out"
fails=0
make -s tests/cuda_gemm_lt tests/blas_rules tests/conformance tests/graph tools/gpar-bench > "$out/make.txt" 2>&1 ||
  { tail "$out/make.txt"; exit 1; }
nvidia-smi --query-gpu=index,name --format=csv,noheader
for t in cuda_gemm_lt blas_rules conformance graph; do
  echo "### tests/$t (CUDA devices)"
  GPAR_BACKENDS=host,cuda GPAR_QUIET=1 "./tests/$t" > "$out/$t.txt" 2>&1; rc=$?
  grep -v '^ok' "$out/$t.txt" | head -40; echo "tests/$t exit $rc"; [ $rc = 0 ] || fails=$((fails + 1))
done
if command -v compute-sanitizer >/dev/null; then
  echo "### compute-sanitizer memcheck tests/cuda_gemm_lt"
  GPAR_QUIET=1 GPAR_TEST_TIMEOUT=900 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests/cuda_gemm_lt \
    > "$out/memcheck-cuda_gemm_lt.txt" 2>&1; rc=$?
  tail -3 "$out/memcheck-cuda_gemm_lt.txt"; echo "memcheck exit $rc"; [ $rc = 0 ] || fails=$((fails + 1))
fi
b=./tools/gpar-bench
bench() { # NAME LT ARGS...: one gpar-bench run with GPAR_CUBLASLT=LT; its key lines
  local name=$1 lt=$2; shift 2
  echo "### GPAR_CUBLASLT=$lt gpar-bench $*"
  GPAR_CUBLASLT=$lt timeout 600 "$b" "$@" --quiet --json "$out/$name-lt$lt.json" > "$out/$name-lt$lt.txt" 2>&1
  local rc=$?
  grep -E 'time:|single wait|per GEMM|libgpar/raw|libgpar =|raw .*=|cuda gemms|FAIL|WRONG|rror' "$out/$name-lt$lt.txt"
  [ $rc = 0 ] || { echo "gpar-bench exit $rc"; fails=$((fails + 1)); }
}
for lt in 1 0; do bench m256 $lt multi-device --backend cuda --devices 1 --size 256 --iters 2000 --raw --repeat 5; done
for lt in 1 0; do bench m64 $lt multi-device --backend cuda --devices 1 --size 64 --iters 10000 --raw --repeat 5; done
for lt in 1 0; do bench m256x2 $lt multi-device --backend cuda --devices 2 --size 256 --iters 2000 --raw --repeat 5; done
for lt in 1 0; do bench g4000 $lt gemm --backend cuda --raw --repeat 3; done
echo "failures: $fails (logs and JSON in $out)"
[ $fails = 0 ]
