#!/bin/bash
# run-gpu.sh: libgpar_mpi's GPU checks (the NCCL path) on a machine with 2 CUDA GPUs,
# NCCL and Open MPI: builds this tree in ./build-mpi-gpu, then runs
#   1. tests/mpi/nccl_mpi with 1 rank x 2 GPUs (two threads on one NCCL communicator),
#   2. tests/mpi/nccl_mpi with 2 ranks x 1 GPU (a collective one rank never issues: the watchdog
#      aborts it after 3 s; destroy and shutdown return),
#   3. tests/mpi/comm_mpi with 2 ranks x 1 GPU through NCCL (the non-blocking communicators),
#   4. tests/mpi/faults_mpi with 2 ranks (host, MPI path) as a regression check,
#   5. gpar-bench-mpi --backend cuda (the check op each NCCL collective now adds: compare with
#      bench/results).
#   bash tests/mpi/run-gpu.sh          (from the source tree; logs in $OUT/mpi-gpu or ./mpi-gpu-out)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$src}/mpi-gpu; [ -n "${OUT:-}" ] || out=$src/mpi-gpu-out
mkdir -p "$out"
step() { echo; echo "### $*"; }
cd "$src" || exit 1
step build
{ autoreconf -fi && mkdir -p build-mpi-gpu && cd build-mpi-gpu && ../configure --with-nccl --with-mpi --enable-werror &&
  make -j16 && make -j16 tests/mpi/comm_mpi tests/mpi/faults_mpi tests/mpi/nccl_mpi; } > "$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 1; }
grep -A8 "configuration summary" "$out/build.log"
export GPAR_QUIET=1 GPAR_TEST_TIMEOUT=300
nvidia-smi --query-gpu=index,name --format=csv,noheader
fail=0
run() { # name np program [env...]
  local name=$1 np=$2 prog=$3; shift 3
  step "$name"
  env "$@" sh ../tests/mpi/run.sh "$np" "$prog" > "$out/$name.txt" 2>&1; local rc=$?
  grep -E "^(ok|not ok)|^1\.\.|Bail|SKIP|^# (rank|message)|libgpar_mpi: rank" "$out/$name.txt"
  echo "exit status $rc"
  if [ $rc -ne 0 ] || grep -qE "^not ok|Bail out|^1\.\.0" "$out/$name.txt"; then fail=1; fi
}
run nccl-np1 1 ./tests/mpi/nccl_mpi
run nccl-np2 2 ./tests/mpi/nccl_mpi
run comm-mpi-cuda-np2 2 ./tests/mpi/comm_mpi GPAR_MPI_TEST_CUDA=1 GPAR_MPI_TEST_EXPECT_NCCL=1
run faults-np2 2 ./tests/mpi/faults_mpi
step "gpar-bench-mpi, 2 ranks x 1 GPU (NCCL): compare with bench/results"
mpirun --allow-run-as-root --bind-to none -np 2 ./tools/gpar-bench-mpi --backend cuda > "$out/bench-mpi-cuda.txt" 2>&1
cat "$out/bench-mpi-cuda.txt"
echo; echo "logs: $out"; [ $fail -eq 0 ] && echo "run-gpu: all passed" || echo "run-gpu: FAILED"
exit $fail
