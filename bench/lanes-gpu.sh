#!/bin/bash
# lanes-gpu.sh: the measurements of "automatic parallelism inside one GPU" in ONE call on the GPU
# machine, from a built tree (GPU_CHECK_TESTS=0 bash .gpu/gpu-check.sh bash $PWD/bench/lanes-gpu.sh):
# gpar-bench branches (K=4 L=8 at 256^3 and 64^3, K=2 L=16 at 256^3) against hand CUDA on K
# streams and a hand CUDA graph; gpar-bench lanes (independent 256^3 and 64^3 SGEMMs, tiny
# kernels, a chain) at 1 and 4 lanes against T threads x T streams; the chapter's exp.2 at 4000^3
# and 1024^3 and the training step at the default lanes and at GPAR_LANES=1, interleaved
# (default, 1, default, 1); NVIDIA OpenCL lanes 1 and 4. Every command echoed; logs in
# $OUT/lanes (else /tmp/lanes-out). LANES_REPEAT (rounds, 5).
set -u
out=${OUT:+$OUT/lanes}; out=${out:-/tmp/lanes-out}
rm -rf "$out" && mkdir -p "$out" || exit 1
rep=${LANES_REPEAT:-5}
run() { # NAME CMD...: echo, run under timeout, keep the log
  local name=$1
  shift
  echo "\$ $*" | tee -a "$out/commands.txt"
  timeout 300 "$@" >"$out/$name.txt" 2>&1 || echo "(exit $?)"
  grep -v '^gpar-bench: ' "$out/$name.txt" | grep -E "$FILTER" | head -40
}
bench=./tools/gpar-bench
export GPAR_QUIET=1
FILTER='us per layer|per layer:|compute lanes'
run branches-4x8-256 $bench branches --backend cuda --size 256 --branches 4 --layers 8 --repeat "$rep"
run branches-4x8-64 $bench branches --backend cuda --size 64 --branches 4 --layers 8 --repeat "$rep"
run branches-2x16-256 $bench branches --backend cuda --size 256 --branches 2 --layers 16 --repeat "$rep"
FILTER='lanes [0-9]|hand'
run lanes-cuda $bench lanes --backend cuda --lanes 1,4 --repeat "$rep"
run lanes-opencl env GPAR_BACKENDS=opencl $bench lanes --backend opencl --lanes 1,4 --repeat 3
FILTER='ratio|ideal|overlap|copy|run '
for r in 1 2; do
  run "exp2-4000-default-$r" $bench copy-overlap --backend cuda --size 4000 --iters 50 --repeat 3
  run "exp2-4000-lanes1-$r" env GPAR_LANES=1 $bench copy-overlap --backend cuda --size 4000 --iters 50 --repeat 3
  run "exp2-1024-default-$r" $bench copy-overlap --backend cuda --size 1024 --iters 400 --repeat 3
  run "exp2-1024-lanes1-$r" env GPAR_LANES=1 $bench copy-overlap --backend cuda --size 1024 --iters 400 --repeat 3
done
FILTER='step|loss|eager|graph'
for r in 1 2; do
  run "train-default-$r" $bench train --backend cuda --repeat "$rep"
  run "train-lanes1-$r" env GPAR_LANES=1 $bench train --backend cuda --repeat "$rep"
done
