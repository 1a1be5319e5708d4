#!/bin/bash
# call 3c: GPAR_HOST with every backend open, OpenCL small ops at 256^3 and the 4000^3
# chapter figures, then the sweeps over op sizes.
R=$(cd "$(dirname "$0")/.." && pwd)
. $R/.gpu/opencl-env.sh $R/.gpu/debs >/dev/null 2>&1
d=$(ls -d /tmp/gpu-build/*/ 2>/dev/null | head -1)
if [ ! -x "$d/tools/gpar-bench" ]; then GPU_CHECK_TESTS=0 bash $R/.gpu/gpu-check.sh true >/dev/null 2>&1; d=$(ls -d /tmp/gpu-build/*/ | head -1); fi
cd "$d" || exit 1
export GPAR_QUIET=1; O=/tmp/o3c; rm -rf $O; mkdir -p $O
b=./tools/gpar-bench
run() { local name=$1; shift; echo "### $name: $*"; timeout 100 "$@" --quiet --json $O/$name.json > $O/$name.txt 2>&1; echo "exit $?"; grep -E "time:|single wait|libgpar/raw|ratio to ideal|bandwidth|TFLOP|both|all /|Copy|Run" $O/$name.txt | head -16; }
run i12-ocl-all $b copy-overlap --backend opencl --all-backends --raw --repeat 5
run i12-ocl-alone $b copy-overlap --backend opencl --raw --repeat 3
run i12-cuda-all $b copy-overlap --backend cuda --all-backends --raw --repeat 5
run i12-cuda-pageable $b copy-overlap --backend cuda --all-backends --pageable --repeat 3
run i11-ocl256 $b multi-device --backend opencl --devices 2 --size 256 --iters 2000 --raw --repeat 5
run i11-cuda256x2 $b multi-device --backend cuda --devices 2 --size 256 --iters 2000 --raw --repeat 5
run i11-cudaco256 $b copy-overlap --backend cuda --size 256 --iters 2000 --raw --repeat 5
run ch-cuda-multi $b multi-device --backend cuda --devices 2 --raw --repeat 3
run ch-cuda-overlap $b copy-overlap --backend cuda --raw --repeat 3
run ch-ocl-multi $b multi-device --backend opencl --devices 2 --raw --repeat 3
run ch-ocl-gemm $b gemm --backend opencl --raw --repeat 3
tar czf $OUT/o3c.tgz -C /tmp o3c
OUT=$O/sweep timeout 250 bash bench/sweep-gpu.sh > $O/sweep.txt 2>&1; echo "sweep exit $?"; grep -E "exit|took" $O/sweep.txt
tar czf $OUT/sweep.tgz -C $O sweep
