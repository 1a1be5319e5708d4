#!/bin/bash
# call 4: re-check the fixes from call 3 (peer access once per pair under memcheck, MPI staged
# receive, fuzz replay with CUDA plain and under memcheck), then the NVIDIA OpenCL sweep.
R=$(cd "$(dirname "$0")/.." && pwd)
cat > /tmp/post4.sh <<'EOB'
set -u; export GPAR_QUIET=1; O=/tmp/o4; rm -rf $O; mkdir -p $O
cs() { local tool=$1 name=$2 lim=$3; shift 3; GPAR_TEST_TIMEOUT=900 timeout $lim compute-sanitizer --tool $tool --error-exitcode 9 "$@" > $O/cs-$tool-$name.txt 2>&1; echo "compute-sanitizer $tool $name: exit $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/cs-$tool-$name.txt | tail -1)"; }
GPAR_BACKENDS=host,cuda cs memcheck cuda_gemm_lt 100 ./tests/cuda_gemm_lt
GPAR_BACKENDS=host,cuda cs memcheck conformance 120 ./tests/conformance
GPAR_BACKENDS=host,cuda cs racecheck graph 120 ./tests/graph
if [ -x tests/mpi/comm_mpi ]; then
  GPAR_MPI_TEST_CUDA=1 GPAR_MPI_TEST_EXPECT_NCCL=1 timeout 90 sh tests/mpi/run.sh 2 ./tests/mpi/comm_mpi > $O/mpi-cuda.txt 2>&1; echo "mpi np2 cuda exit $?"; grep -cE "^ok" $O/mpi-cuda.txt; grep -E "not ok|Bail" $O/mpi-cuda.txt | head -4
fi
mkdir -p /tmp/sub && ls tests/fuzz/corpus | head -150 | while read f; do cp tests/fuzz/corpus/$f /tmp/sub/; done
timeout 150 bash tests/fuzz/replay.sh . $O/fuzz "host,cuda host,opencl" 2>&1 | tail -7
CORPUS=/tmp/sub WRAP="compute-sanitizer --tool memcheck --error-exitcode 1" timeout 150 bash tests/fuzz/replay.sh . $O/fuzzcs "host,cuda" 2>&1 | tail -4
tar czf $OUT/o4.tgz -C /tmp o4
export POCL_DEVICES="pthread pthread"
echo "### sweep opencl"
timeout 200 ./tools/gpar-bench sweep --backend opencl --label H200 --sizes 64,128,256,512,1024,2048 --repeat 1 --quiet \
  --json $OUT/sweep-opencl.json --svg $OUT/sweep-opencl.svg > $OUT/sweep-opencl.txt 2>&1; echo "sweep exit $?"; cat $OUT/sweep-opencl.txt | head -30
EOB
GPU_CHECK_TESTS="tests/cuda_gemm_lt tests/graph tests/mpi/np2.tap" bash .gpu/gpu-check.sh bash /tmp/post4.sh
