#!/bin/bash
# call 5: the final tree (graph.c / comm.c split) on 2 x H200: graph, comm, cublasLt and
# conformance tests on every device, graph under memcheck, one graph benchmark.
cat > /tmp/post5.sh <<'EOB'
export GPAR_QUIET=1
GPAR_BACKENDS=host,cuda GPAR_TEST_TIMEOUT=900 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests/graph > /tmp/cs5.txt 2>&1; echo "memcheck graph: exit $? $(grep 'ERROR SUMMARY' /tmp/cs5.txt)"
timeout 60 ./tools/gpar-bench multi-device --backend cuda --devices 1 --size 256 --iters 2000 --graph --raw --repeat 3 --quiet 2>&1 | grep -E "libgpar/raw|graph of"
EOB
GPU_CHECK_TESTS="tests/graph tests/comm tests/cuda_gemm_lt tests/conformance tests/mpi/np2.tap" bash .gpu/gpu-check.sh bash /tmp/post5.sh
