#!/bin/bash
# call 3a: full make check of the merged tree on 2 x H200, then compute-sanitizer (graph, cublasLt,
# dag), the fuzz corpus against CUDA and NVIDIA OpenCL (plain; memcheck on a subset), MPI ranks.
R=$(cd "$(dirname "$0")/.." && pwd)
cat > /tmp/post3a.sh <<'EOB'
set -u; export GPAR_QUIET=1; O=/tmp/o3a; rm -rf $O; mkdir -p $O
cs() { local tool=$1 name=$2 lim=$3; shift 3; GPAR_TEST_TIMEOUT=900 timeout $lim compute-sanitizer --tool $tool --error-exitcode 9 "$@" > $O/cs-$tool-$name.txt 2>&1; echo "compute-sanitizer $tool $name: exit $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/cs-$tool-$name.txt | tail -1)"; }
GPAR_BACKENDS=host,cuda timeout 90 ./tests/graph > $O/graph.txt 2>&1; echo "tests/graph (host,cuda) exit $?"; grep -E "peer access|capture failing|CUDA graph launches|not ok" $O/graph.txt | head -8
GPAR_BACKENDS=host,cuda timeout 90 ./tests/cuda_gemm_lt > $O/lt.txt 2>&1; echo "tests/cuda_gemm_lt exit $?"; grep -vE "^ok" $O/lt.txt | head -12
GPAR_BACKENDS=host,cuda cs memcheck graph 150 ./tests/graph
GPAR_BACKENDS=host,cuda cs memcheck cuda_gemm_lt 100 ./tests/cuda_gemm_lt
GPAR_BACKENDS=host,cuda cs memcheck dag 120 ./tests/dag
GPAR_BACKENDS=host,cuda cs racecheck dag 100 ./tests/dag
GPAR_BACKENDS=host,cuda cs memcheck faults 120 ./tests/faults
mkdir -p /tmp/sub && ls tests/fuzz/corpus | head -120 | while read f; do cp tests/fuzz/corpus/$f /tmp/sub/; done
timeout 150 bash tests/fuzz/replay.sh . $O/fuzz "host,cuda host,opencl" 2>&1 | tail -6
CORPUS=/tmp/sub WRAP="compute-sanitizer --tool memcheck --error-exitcode 1" timeout 120 bash tests/fuzz/replay.sh . $O/fuzzcs "host,cuda" 2>&1 | tail -4
if [ -x tests/mpi/comm_mpi ]; then
  GPAR_MPI_TEST_CUDA=1 GPAR_MPI_TEST_EXPECT_NCCL=1 timeout 90 sh tests/mpi/run.sh 2 ./tests/mpi/comm_mpi > $O/mpi-cuda.txt 2>&1; echo "mpi np2 cuda exit $?"; grep -cE "^ok" $O/mpi-cuda.txt; grep -E "NCCL|not ok|Bail" $O/mpi-cuda.txt | head -4
  timeout 90 mpirun --allow-run-as-root --bind-to none -np 2 ./tools/gpar-bench-mpi --backend cuda > $O/mpi-bench-cuda.txt 2>&1; echo "gpar-bench-mpi cuda exit $?"; tail -28 $O/mpi-bench-cuda.txt
  timeout 60 mpirun --allow-run-as-root --bind-to none -np 2 ./tools/gpar-bench-mpi --backend host --max-mb 64 > $O/mpi-bench-host.txt 2>&1; echo "gpar-bench-mpi host exit $?"; tail -8 $O/mpi-bench-host.txt
else grep -iE "mpi" config.log | tail -5; fi
cp test-suite.log $O/ 2>/dev/null; tar czf $OUT/o3a.tgz -C /tmp o3a
EOB
bash .gpu/gpu-check.sh bash /tmp/post3a.sh
