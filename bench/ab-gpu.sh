#!/bin/bash
# ab-gpu.sh OLD: the speed of kernels, array ops and the training step before and after a change,
# in ONE call on the GPU machine. OLD is an older built tree (it holds tools/gpar-bench). Each
# case runs on this tree, then on OLD, then (AB_ABBA=1) on OLD and this tree again; every
# gpar-bench run interleaves libgpar's rounds with the hand-written loop's itself, so compare the
# libgpar/hand ratios of the two builds, not absolute times across processes. Run from a built
# tree, e.g. GPU_CHECK_TESTS=0 bash .gpu/gpu-check.sh bash bench/ab-gpu.sh /tmp/old/libgpar-0.1.0
# Records (<case>.<build>.json), logs and commands.txt go to $OUT/ab (else /tmp/ab-out). Knobs:
# AB_REPEAT (3), AB_CASES (kernel-cuda kernel-opencl array-cuda train-cuda train-opencl).
set -u
old=${1:?usage: ab-gpu.sh OLD_BUILT_TREE}
out=${OUT:+$OUT/ab}; out=${out:-/tmp/ab-out}
rm -rf "$out" && mkdir -p "$out" || exit 1
rep=${AB_REPEAT:-3}
fails=0
args_of() { # CASE: gpar-bench's arguments for it
  case $1 in
  kernel-cuda) echo kernel --backend cuda --repeat "$rep" ;;
  kernel-opencl) echo kernel --backend opencl --repeat "$rep" ;;
  array-cuda) echo array --backend cuda --repeat "$rep" ;;
  train-cuda) echo train --backend cuda --devices 1 --iters 100 --repeat "$rep" ;;
  train-opencl) echo train --backend opencl --devices 1 --iters 100 --repeat "$rep" ;;
  esac
}
one() { # CASE BUILD DIR
  local f="$out/$1.$2"
  # shellcheck disable=SC2046
  echo "\$ (cd $3 && GPAR_CACHE_DIR=$out/cache-$2 ./tools/gpar-bench $(args_of "$1") --json $f.json)" | tee -a "$out/commands.txt"
  # shellcheck disable=SC2046
  (cd "$3" && GPAR_CACHE_DIR="$out/cache-$2" timeout 300 ./tools/gpar-bench $(args_of "$1") --json "$f.json") >"$f.txt" 2>&1 ||
    { echo "(exit $?)"; fails=$((fails + 1)); }
  grep -iE 'ratio|median|us per|GB/s|step' "$f.txt" | head -30
}
new=$(pwd)
for c in ${AB_CASES:-kernel-cuda kernel-opencl array-cuda train-cuda train-opencl}; do
  echo "=== $c"
  one "$c" new "$new"
  one "$c" old "$old"
  if [ "${AB_ABBA:-0}" = 1 ]; then one "$c" old2 "$old"; one "$c" new2 "$new"; fi
done
echo "ab-gpu: $fails run(s) failed"
[ "$fails" -eq 0 ]
