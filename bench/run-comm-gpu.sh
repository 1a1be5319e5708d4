#!/bin/bash
# run-comm-gpu.sh: the collectives and libgpar_mpi on the GPU machine (2 x H200): builds this tree with NCCL and MPI,
# runs the collective tests (one process x 2 GPUs through NCCL; mpirun -np 2 with one GPU per
# rank through NCCL across ranks; host/PoCL over MPI) and the benchmarks with their targets.
#   bash bench/run-comm-gpu.sh            (from the source tree; builds in ./build-comm)
# Logs go to $OUT/comm (or ./comm-out). Every step prints what it runs; nothing is skipped
# silently.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$src}/comm; [ -n "${OUT:-}" ] || out=$src/comm-out
mkdir -p "$out"
step() { echo; echo "### $*"; }
cd "$src" || exit 1
step build
{ autoreconf -fi && mkdir -p build-comm && cd build-comm && ../configure --with-nccl --with-mpi &&
  make -j16 && make -j16 check TESTS=; } > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
grep -A8 "configuration summary" "$out/build.log"
export GPAR_QUIET=1
mpirun="mpirun --allow-run-as-root --bind-to none"
nvidia-smi --query-gpu=index,name --format=csv,noheader

step "1. one process, 2 GPUs (NCCL local): tests/comm (its CUDA set uses NCCL)"
./tests/comm 2>&1 | tee "$out/test-comm.txt" | grep -E "CUDA|cuda|set 2|not ok|^1\.\.|failed"
step "2. mpirun -np 2, one GPU per rank (NCCL across ranks, unique id over MPI)"
GPAR_MPI_TEST_CUDA=1 GPAR_MPI_TEST_EXPECT_NCCL=1 sh ../tests/mpi/run.sh 2 ./tests/mpi/comm_mpi 2>&1 |
  tee "$out/test-mpi-cuda-np2.txt" | grep -E "NCCL|not ok|^1\.\.|failed|Bail"
step "3. mpirun -np 2 and -np 3, host (+PoCL where present) over MPI"
sh ../tests/mpi/run.sh 2 ./tests/mpi/comm_mpi 2>&1 | tee "$out/test-mpi-np2.txt" | grep -E "not ok|^1\.\.|failed|Bail"
sh ../tests/mpi/run.sh 3 ./tests/mpi/comm_mpi 2>&1 | tee "$out/test-mpi-np3.txt" | grep -E "not ok|^1\.\.|failed|Bail"

step "4. gpar-bench allreduce, 1 process x 2 GPUs, libgpar (NCCL) beside raw ncclAllReduce"
echo "targets: busbw libgpar/raw >= 0.95 at 64-512 MB (ratio column); 8 B time <= raw + 3 us"
./tools/gpar-bench allreduce --backend cuda --devices 2 --raw --quiet --json "$out/allreduce.json" 2>&1 | tee "$out/allreduce.txt"
step "5. the same through the staged path (GPAR_COMM_STAGED=1), up to 64 MB, for comparison"
GPAR_COMM_STAGED=1 ./tools/gpar-bench allreduce --backend cuda --devices 2 --size 64 --quiet 2>&1 | tee "$out/allreduce-staged.txt"
step "6. mpirun -np 2, one GPU per rank: gpar-bench-mpi beside raw ncclAllReduce across ranks"
echo "targets: busbw ratio >= 0.95 at 64-512 MB; anchor: 9 us at 32 KB, 15 us at 1 MB (nccl-tests)"
$mpirun -np 2 ./tools/gpar-bench-mpi --backend cuda 2>&1 | tee "$out/allreduce-mpi-cuda.txt"
step "7. mpirun -np 2, host memory: gpar-bench-mpi beside an MPI_Allreduce loop (report it)"
$mpirun -np 2 ./tools/gpar-bench-mpi --backend host --max-mb 64 2>&1 | tee "$out/allreduce-mpi-host.txt"
step "8. gpar-bench data-parallel, 8 layers of 4096, 1 vs 2 GPUs, with/without allreduce"
echo "targets: throughput 2 GPUs vs 1 >= 1.9 x; step with/without allreduce <= 1.05"
./tools/gpar-bench data-parallel --backend cuda --devices 2 --repeat 3 --quiet --json "$out/data-parallel.json" 2>&1 | tee "$out/data-parallel.txt"
./tools/gpar-bench data-parallel --backend cuda --devices 2 --repeat 3 --tf32 --quiet 2>&1 | tee "$out/data-parallel-tf32.txt"
step "9. trace of one data-parallel run (SVG timeline: NCCL on the peer lane beside the GEMMs)"
./tools/gpar-bench data-parallel --backend cuda --devices 2 --iters 2 --quiet --svg "$out/data-parallel.svg" 2>&1 | tail -3
echo; echo "logs: $out"
