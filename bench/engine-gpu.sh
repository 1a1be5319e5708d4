#!/bin/bash
# engine-gpu.sh: the measurements of the engine without its global lock in ONE call on the
# GPU machine, then their targets table (bench/engine-table.py): empty host ops at several CPU
# worker counts with the per-op breakdown and on 2 cores, CUDA small ops against the hand
# cublasSgemm and cublasLt loops, copy overlap at 256, and the 4000^3 and graph figures that must
# stay unchanged. Every gpar-bench run interleaves libgpar's and the raw loops' rounds itself.
# Run it from a built tree (cwd holds tools/gpar-bench), e.g. on the GPU machine:
#   GPU_CHECK_TESTS=0 bash .gpu/gpu-check.sh bash bench/engine-gpu.sh [OLD]
# OLD (optional): an older libgpar to measure before/after in the same call: a built tree (it
# holds tools/gpar-bench), a folder with a gpar-bench binary and its libgpar.so*, or a `make
# dist` tarball, built first in /tmp/engine-old with gpu-check.sh's configure line. Each case
# then runs on the new build, then the old (ENGINE_ABBA=1: new, old, old, new). An old gpar-bench
# without --workers runs one process per worker count (GPAR_HOST_THREADS).
# Every command is echoed as run ("$ ..."), each under `timeout`. Records (<case>.<build>.json),
# logs (.txt), commands.txt and table.md go to $OUT/engine (else /tmp/engine-out).
# Knobs: ENGINE_GROUPS (any of host cuda chapter graph; default all), ENGINE_WORKERS (2,4,8,16,0;
# 0 = one per core), ENGINE_OPS (host ops per case and round, 100000), ENGINE_REPEAT (5),
# ENGINE_ABBA (0), ENGINE_NEW (the new build, default .). Estimated time per build on 2 x H200:
# host 80 s, cuda 30 s, chapter 50 s, graph 40 s; the old tarball's build 1-2 min.
# Exit status: 0 when every case that should run left a record (targets missed do not fail it).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:+$OUT/engine}; out=${out:-/tmp/engine-out}
rm -rf "$out" && mkdir -p "$out" || exit 1
groups=${ENGINE_GROUPS:-host cuda chapter graph}
workers=${ENGINE_WORKERS:-2,4,8,16,0}
ops=${ENGINE_OPS:-100000}
rep=${ENGINE_REPEAT:-5}
cmds=$out/commands.txt
: > "$cmds"
fails=0

# The gpar-bench of a build folder (BIN[b]) and what its environment needs (ENV[b], for `env`):
# libtool's wrapper in a built tree (it finds its own libgpar and keeps LD_LIBRARY_PATH, which
# gpu-check.sh's OpenCL loader needs), or a binary beside its libgpar.so* (that folder is put in
# front of LD_LIBRARY_PATH, never in its place). Paths without blanks.
declare -A BIN ENV
bench_of() { # BUILD DIR
  local d
  d=$(cd "$2" 2>/dev/null && pwd) || return 1
  if [ -f "$d/tools/gpar-bench" ] && [ -x "$d/tools/gpar-bench" ]; then
    BIN[$1]=$d/tools/gpar-bench ENV[$1]=
  elif [ -f "$d/gpar-bench" ] && [ -x "$d/gpar-bench" ]; then
    BIN[$1]=$d/gpar-bench ENV[$1]=LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  else
    return 1
  fi
}

# Build a `make dist` tarball in /tmp/engine-old as gpu-check.sh does; prints the build folder.
build_tarball() {
  local dir=/tmp/engine-old src cfg=()
  rm -rf "$dir" && mkdir -p "$dir" && tar -xzf "$1" -C "$dir" || return 1
  src=$(ls -d "$dir"/*/ | head -1)
  [ -d /usr/local/cuda ] && cfg+=(--with-cuda=/usr/local/cuda
    "NVCCFLAGS=${NVCCFLAGS:--gencode arch=compute_90,code=[sm_90,compute_90]}")
  pkg-config --exists OpenCL clblast 2>/dev/null && cfg+=(--with-opencl)
  echo "\$ (cd $src && ./configure ${cfg[*]} && make -j$(nproc))" >&2
  (cd "$src" && ./configure "${cfg[@]}" > configure.log 2>&1 && make -j"$(nproc)" > make.log 2>&1) ||
    { tail -20 "$src/configure.log" "$src/make.log" >&2; return 1; }
  echo "$src"
}

bench_of new "${ENGINE_NEW:-.}" ||
  { echo "engine-gpu.sh: no tools/gpar-bench in ${ENGINE_NEW:-$PWD}: run it from a built tree"; exit 1; }
builds=new
if [ $# -gt 0 ]; then
  old=$1
  case $old in *.tar.gz | *.tgz) old=$(build_tarball "$old") || { echo "engine-gpu.sh: building $1 failed"; exit 1; } ;; esac
  bench_of old "$old" || { echo "engine-gpu.sh: no gpar-bench in $old (a built tree, or gpar-bench with its libgpar.so*)"; exit 1; }
  builds="new old"
fi
# Each build must start before anything is measured (a missing library shows here, not as an
# empty table).
for b in $builds; do
  # shellcheck disable=SC2086
  if ! v=$(env ${ENV[$b]} "${BIN[$b]}" --version 2>&1); then
    echo "engine-gpu.sh: the $b build's gpar-bench does not run: ${ENV[$b]} ${BIN[$b]} --version said:"; echo "$v"; exit 1
  fi
  echo "$b: ${ENV[$b]:+${ENV[$b]} }${BIN[$b]}: $(echo "$v" | tr '\n' ' ')"
done
order=$builds
[ "${ENGINE_ABBA:-0}" = 1 ] && [ "$builds" = "new old" ] && order="new old old new"
old_workers=0
# shellcheck disable=SC2086
[ -n "${BIN[old]:-}" ] && env ${ENV[old]} "${BIN[old]}" --help 2>&1 | grep -q -- '--workers' && old_workers=1

date -u
echo "machine: $(nproc) cores online ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
nvidia-smi -L 2>/dev/null
echo "results: $out"

# one NAME BUILD SUFFIX LIMIT [VAR=VALUE...] [WRAPPER...] -- ARGS...: one gpar-bench run, echoed,
# its record in NAME.BUILD.SUFFIX.json and its output in .txt; prints the lines with results.
# GPAR_HOST_THREADS and GPAR_BACKENDS are cleared: the arguments say what runs.
one() {
  local name=$1 build=$2 suffix=$3 limit=$4 set=() wrap=()
  shift 4
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    if [ ${#wrap[@]} = 0 ] && [[ $1 =~ ^[A-Z_][A-Z0-9_]*= ]]; then set+=("$1"); else wrap+=("$1"); fi
    shift
  done
  shift
  local base=$out/$name.$build$suffix
  # shellcheck disable=SC2206
  local cmd=(timeout "$limit" env -u GPAR_HOST_THREADS -u GPAR_BACKENDS GPAR_QUIET=1 ${ENV[$build]} "${set[@]}"
             "${wrap[@]}" "${BIN[$build]}" "$@" --quiet --json "$base.json")
  echo "\$ ${cmd[*]}" | tee -a "$cmds"
  "${cmd[@]}" > "$base.txt" 2>&1
  local rc=$?
  grep -E 'libgpar/raw|ratio to ideal|all / max|^ *[0-9]+\*? +[a-z]|^(no buffers|independent|chain|fan-in)|workers /|direct call|hand-off|TFLOP|rror|WRONG' \
    "$base.txt" | head -40
  if [ $rc != 0 ]; then echo "exit $rc (log: $base.txt)"; tail -5 "$base.txt"; fails=$((fails + 1)); fi
}

# ab NAME LIMIT [PREFIX...] -- ARGS...: the case on each build in order (new, old[, old, new]).
ab() {
  local name=$1 n=0 b
  for b in $order; do
    n=$((n + 1)); local sfx=""
    [ $n -gt 2 ] && sfx=.2
    one "$name" "$b" "$sfx" "${@:2}"
  done
}

# ov NAME LIMIT COUNTS [PREFIX...] -- ARGS...: overhead at the CPU worker counts COUNTS: one process
# with --workers, or, for an old gpar-bench without it, one process per count (GPAR_HOST_THREADS).
ov() {
  local name=$1 limit=$2 counts=$3 n=0 b w
  shift 3
  for b in $order; do
    n=$((n + 1)); local sfx=""
    [ $n -gt 2 ] && sfx=.2
    if [ "$b" = new ] || [ $old_workers = 1 ]; then
      one "$name" "$b" "$sfx" "$limit" "$@" --workers "$counts"
    else
      for w in ${counts//,/ }; do
        local env_w=()
        [ "$w" != 0 ] && env_w=("GPAR_HOST_THREADS=$w")
        one "$name" "$b" ".w$w$sfx" "$limit" "${env_w[@]}" "$@"
      done
    fi
  done
}

skip() { # NAME REASON: the table says why a case has no record
  local b
  for b in $builds; do echo "$2" > "$out/$1.$b.skip"; done
  echo "### $1: not run: $2"
}

want() { case " $groups " in *" $1 "*) return 0 ;; esac; return 1; }

host_cases="h-workers h-breakdown h-2core h-allbe"
cuda_cases="c-overlap256 c-m64 c-m256"
chapter_cases="k-multi k-overlap k-gemm"
graph_cases="g-m256 g-m64 g-overlap256 g-m256x2"

if want host; then
  hops=(--iters "$ops" --repeat "$rep")
  echo "### host: empty ops, one worker per core and at $workers workers (rows 1-3)"
  ov h-workers 300 "$workers" -- overhead --backend host "${hops[@]}"
  echo "### host: the per-op breakdown, complete + retire (row 4)"
  ov h-breakdown 200 "2,16,0" -- overhead --backend host --breakdown --iters "$ops" --repeat 3
  echo "### host: 2 cores (taskset -c 0,1, 2 workers), host only (row 5)"
  if command -v taskset > /dev/null && [ "$(nproc)" -ge 2 ]; then
    ov h-2core 120 2 taskset -c 0,1 -- overhead --backend host "${hops[@]}"
  else
    skip h-2core "taskset missing or fewer than 2 cores"
  fi
  echo "### host: every backend open, default workers (as an application runs it)"
  ab h-allbe 200 -- overhead "${hops[@]}"
else
  for c in $host_cases; do skip "$c" "ENGINE_GROUPS leaves out host"; done
fi

gpu_ok=1
[ "$ngpu" -ge 1 ] || gpu_ok=0
if want cuda && [ $gpu_ok = 1 ]; then
  echo "### cuda: small ops, eager, against the hand cublasSgemm and cublasLt loops (rows 6-8)"
  ab c-overlap256 120 -- copy-overlap --backend cuda --size 256 --iters 2000 --raw --repeat 5
  ab c-m64 120 -- multi-device --backend cuda --devices 1 --size 64 --iters 10000 --raw --repeat 5
  ab c-m256 120 -- multi-device --backend cuda --devices 1 --size 256 --iters 2000 --raw --repeat 5
else
  for c in $cuda_cases; do skip "$c" "$(want cuda && echo 'no NVIDIA GPU (nvidia-smi -L)' || echo 'ENGINE_GROUPS leaves out cuda')"; done
fi
if want chapter && [ $gpu_ok = 1 ]; then
  echo "### chapter: 4000^3 x 50 (unchanged)"
  if [ "$ngpu" -ge 2 ]; then
    ab k-multi 200 -- multi-device --backend cuda --devices 2 --raw --repeat 3
  else
    skip k-multi "one GPU"
  fi
  ab k-overlap 200 -- copy-overlap --backend cuda --raw --repeat 3
  ab k-gemm 200 -- gemm --backend cuda --raw --repeat 3
else
  for c in $chapter_cases; do skip "$c" "$(want chapter && echo 'no NVIDIA GPU (nvidia-smi -L)' || echo 'ENGINE_GROUPS leaves out chapter')"; done
fi
if want graph && [ $gpu_ok = 1 ]; then
  echo "### graph: op graphs against the raw loop and its hand-captured CUDA graph (unchanged)"
  ab g-m256 120 -- multi-device --backend cuda --devices 1 --size 256 --iters 2000 --graph --raw --repeat 5
  ab g-m64 120 -- multi-device --backend cuda --devices 1 --size 64 --iters 10000 --graph --raw --repeat 5
  ab g-overlap256 120 -- copy-overlap --backend cuda --size 256 --iters 2000 --graph --raw --repeat 5
  if [ "$ngpu" -ge 2 ]; then
    ab g-m256x2 120 -- multi-device --backend cuda --devices 2 --size 256 --iters 2000 --graph --raw --repeat 5
  else
    skip g-m256x2 "one GPU"
  fi
else
  for c in $graph_cases; do skip "$c" "$(want graph && echo 'no NVIDIA GPU (nvidia-smi -L)' || echo 'ENGINE_GROUPS leaves out graph')"; done
fi

date -u
echo "### the table ($out/table.md)"
python3 "$here/engine-table.py" "$out" | tee "$out/table.md"
trc=${PIPESTATUS[0]}
echo "runs that failed: $fails; table exit $trc"
[ $fails = 0 ] && [ "$trc" = 0 ]
