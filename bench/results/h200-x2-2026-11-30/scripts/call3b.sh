#!/bin/bash
# call 3b: retirement A/B (ab-gpu.sh), cublasLt vs cublasSgemm, GPAR_HOST rates with every backend
# open, OpenCL small ops and the 4000^3 chapter figures; from 3a's build.
R=$(cd "$(dirname "$0")/.." && pwd)
. $R/.gpu/opencl-env.sh $R/.gpu/debs >/dev/null 2>&1
d=$(ls -d /tmp/gpu-build/*/ 2>/dev/null | head -1)
if [ ! -x "$d/tools/gpar-bench" ]; then GPU_CHECK_TESTS=0 bash $R/.gpu/gpu-check.sh true >/dev/null 2>&1; d=$(ls -d /tmp/gpu-build/*/ | head -1); fi
cd "$d" || exit 1
export GPAR_QUIET=1; O=/tmp/o3b; rm -rf $O; mkdir -p $O
b=./tools/gpar-bench
run() { local name=$1; shift; echo "### $name: $*"; timeout 100 env "$@" --quiet --json $O/$name.json > $O/$name.txt 2>&1; echo "exit $?"; grep -E "time:|single wait|libgpar/raw|ratio to ideal|bandwidth|TFLOP|cuda gemms|both|all /" $O/$name.txt | head -14; }
OUT=$O timeout 240 bash $R/bench/ab-gpu.sh > $O/ab.txt 2>&1; echo "ab-gpu exit $?"; grep -vE "^\s*$" $O/ab.txt | head -70
for lt in 1 0; do run lt$lt-m256 GPAR_CUBLASLT=$lt $b multi-device --backend cuda --devices 1 --size 256 --iters 2000 --raw --repeat 5; done
for lt in 1 0; do run lt$lt-m64 GPAR_CUBLASLT=$lt $b multi-device --backend cuda --devices 1 --size 64 --iters 10000 --raw --repeat 5; done
run lt1-g4000 GPAR_CUBLASLT=1 $b gemm --backend cuda --raw --repeat 3
tar czf $OUT/o3b.tgz -C /tmp o3b
