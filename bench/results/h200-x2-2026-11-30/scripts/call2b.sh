#!/bin/bash
# call 2b: graphs, collectives, GPAR_HOST across backends,
# from the build call 2a left in /tmp/gpu-build (rebuilt without tests when absent).
R=$(cd "$(dirname "$0")/.." && pwd)
. $R/.gpu/opencl-env.sh $R/.gpu/debs >/dev/null 2>&1
d=$(ls -d /tmp/gpu-build/*/ 2>/dev/null | head -1)
if [ ! -x "$d/tools/gpar-bench" ]; then GPU_CHECK_TESTS=0 bash $R/.gpu/gpu-check.sh true >/dev/null 2>&1; d=$(ls -d /tmp/gpu-build/*/ | head -1); fi
cd "$d" || exit 1
export GPAR_QUIET=1
mkdir -p $OUT/p
echo "=== GPAR_HOST across backends"
b=./tools/gpar-bench
for c in "copy-overlap --backend opencl --all-backends --raw --repeat 5" "copy-overlap --backend opencl --raw --repeat 3" \
         "copy-overlap --backend cuda --all-backends --raw --repeat 5" "copy-overlap --backend cuda --all-backends --pageable --repeat 3" \
         "copy-overlap --backend opencl --all-backends --size 1024 --iters 400 --raw --repeat 3"; do
  echo "### $c"; timeout 100 $b $c --quiet 2>&1 | grep -vE "^\s*$" | tail -12
done
PROBE_GPAR_BUILD=$d timeout 100 bash $R/bench/probes/run.sh p1 p5 > $OUT/p/probes-p1p5.txt 2>&1; grep -E "^c2|p5|GPAR_HOST|pageable|every" $OUT/p/probes-p1p5.txt | head -30
echo "=== collectives"
mpirun="mpirun --allow-run-as-root --bind-to none"
timeout 60 ./tests/comm > $OUT/p/test-comm.txt 2>&1; echo "tests/comm exit $?"; grep -cE "^ok" $OUT/p/test-comm.txt; grep -E "not ok|set 2" $OUT/p/test-comm.txt | head -5
if [ -x tests/mpi/comm_mpi ]; then
  GPAR_MPI_TEST_CUDA=1 GPAR_MPI_TEST_EXPECT_NCCL=1 timeout 90 sh tests/mpi/run.sh 2 ./tests/mpi/comm_mpi > $OUT/p/mpi-cuda.txt 2>&1; echo "mpi cuda np2 exit $?"; grep -E "NCCL|not ok|Bail" $OUT/p/mpi-cuda.txt | head -5
  timeout 60 $mpirun -np 2 ./tools/gpar-bench-mpi --backend cuda 2>&1 | tail -22
else echo "no MPI build"; fi
timeout 120 $b allreduce --backend cuda --devices 2 --raw --quiet 2>&1 | tail -25
timeout 150 $b data-parallel --backend cuda --devices 2 --repeat 3 --quiet 2>&1 | tail -12
echo "=== graphs"
timeout 280 bash $R/bench/graph-gpu.sh 2>&1 | grep -E "PASS|FAIL|exit|###|not ok|graph of|libgpar/raw|GEMM" | head -80
