#!/bin/bash
# run-gpu.sh: the benchmark batch behind bench/results/h200.md. Run from a built tree (the
# `make dist` build that .gpu/gpu-check.sh makes on the GPU machine):
#   bash .gpu/gpu-check.sh bash bench/run-gpu.sh          (2 x H200: the chapter, issue 8 cases)
#   bash .gpu/gpu-check.sh bash bench/run-gpu.sh scaling  (4 x H200: all GPUs at once)
# Writes every log, JSON file, trace and SVG into $OUT/bench.tgz (the device tool brings back
# few files), or ./bench-out without $OUT.
set -u
out=/tmp/bench-out; rm -rf "$out"; mkdir -p "$out"
b=./tools/gpar-bench
run() { local name=$1; shift; echo "### $name: gpar-bench $*"; timeout 240 "$b" "$@" --quiet --json "$out/$name.json" 2>&1 | tee "$out/$name.txt"; }
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
./tools/gpar-info | tee "$out/gpar-info.txt"
ngpu=$(nvidia-smi -L | wc -l)
if [ "${1:-}" = scaling ]; then
  run cuda-multi-all multi-device --backend cuda --raw --repeat 5
  run cuda-overlap-all copy-overlap --backend cuda --devices "$ngpu" --raw --repeat 3
  run cuda-small256-all multi-device --backend cuda --size 256 --iters 2000 --raw --repeat 5
  run cuda-small256-2 multi-device --backend cuda --devices 2 --size 256 --iters 2000 --raw --repeat 5
  run cuda-small1024-2 multi-device --backend cuda --devices 2 --size 1024 --iters 400 --raw --repeat 5
  run cuda-overlap1024 copy-overlap --backend cuda --size 1024 --iters 400 --raw --repeat 5 --trace "$out/cuda-overlap1024.trace.json"
  run cuda-overlap copy-overlap --backend cuda --raw --repeat 5 --trace "$out/cuda-overlap.trace.json" --svg "$out/cuda-overlap.svg"
  run ocl-overlap copy-overlap --backend opencl --raw --repeat 3
  run ocl-small256-2 multi-device --backend opencl --devices 2 --size 256 --iters 2000 --raw --repeat 5
  run overhead overhead
  echo "gpus: $ngpu"
  if [ -n "${OUT:-}" ]; then tar -czf "$OUT/bench.tgz" -C /tmp bench-out; fi
  exit 0
fi
# The chapter's experiments, CUDA, with the raw cuBLAS loop in the same process.
run cuda-multi multi-device --backend cuda --raw --repeat 5
run cuda-overlap copy-overlap --backend cuda --raw --repeat 5 --trace "$out/cuda-overlap.trace.json" --svg "$out/cuda-overlap.svg"
run cuda-overlap-pageable copy-overlap --backend cuda --pageable --repeat 3
run cuda-gemm gemm --backend cuda --raw --repeat 5
run cuda-gemm-tf32 gemm --backend cuda --raw --repeat 5 --tf32
# Small operations (issue 8): one submitting thread, raw loop side by side.
run cuda-small256 multi-device --backend cuda --size 256 --iters 2000 --raw --repeat 5
run cuda-small1024 multi-device --backend cuda --size 1024 --iters 400 --raw --repeat 5
run cuda-overlap1024 copy-overlap --backend cuda --size 1024 --iters 400 --raw --repeat 5
# OpenCL on the NVIDIA platform, with the raw CLBlast loop.
run ocl-multi multi-device --backend opencl --raw --repeat 3
run ocl-overlap copy-overlap --backend opencl --raw --repeat 3
run ocl-gemm gemm --backend opencl --raw --repeat 3
run ocl-small256 multi-device --backend opencl --size 256 --iters 2000 --raw --repeat 5
# Engine cost per op on the host.
run overhead overhead
echo "gpus: $ngpu"
if [ -n "${OUT:-}" ]; then tar -czf "$OUT/bench.tgz" -C /tmp bench-out; else rm -rf bench-out; cp -r "$out" bench-out; fi
