#!/bin/bash
# run.sh: build and run the standalone GPU probes of bench/probes (see README.md) on a GPU
# machine; prints compact results (about 1 minute). From the project's root:
#   . .gpu/opencl-env.sh .gpu/debs; bash bench/probes/run.sh [p1 p2 p3 p4]
# (When OCL_ICD_VENDORS is unset and .gpu/opencl-env.sh exists, it is sourced here.)
# Each probe builds on its own; a build or run failure is printed and the next one goes on.
# Env: CUDA_HOME (default /usr/local/cuda), PROBE_BUILD (default /tmp/gpar-probes),
# PROBE_TIMEOUT (s per probe, default 150), PROBE_REPS / PROBE_ITERS / PROBE_MB (see README),
# PROBE_GPAR_BUILD (p5: the libgpar build folder, default build/ of this tree).
# A copy of the output goes to $OUT/probes.txt when OUT is set.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${OCL_ICD_VENDORS:-}" ] && [ -f .gpu/opencl-env.sh ] && [ -d .gpu/debs ]; then
  . .gpu/opencl-env.sh .gpu/debs >/dev/null 2>&1
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
bd=${PROBE_BUILD:-/tmp/gpar-probes}
mkdir -p "$bd"
log=/dev/null
if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then log=$OUT/probes.txt; fi
exec > >(tee "$log") 2>&1

cflags="-O2 -std=gnu11 -Wall -Wextra -pthread -I$cuda/include"
cudalibs="-L$cuda/lib64 -Wl,-rpath,$cuda/lib64"
cllibs=""
# Where opencl-env.sh unpacks the ICD loader, CL headers and CLBlast.
for r in /tmp/ocl/usr; do
  [ -d "$r/include" ] && cflags="$cflags -I$r/include"
  [ -d "$r/lib/x86_64-linux-gnu" ] && cllibs="-L$r/lib/x86_64-linux-gnu -Wl,-rpath,$r/lib/x86_64-linux-gnu"
done

declare -A libs=(
  [p1_pinned]="$cudalibs $cllibs -lOpenCL -lcudart"
  [p2_pageable]="$cudalibs -lcudart"
  [p3_cublas]="$cudalibs -lcudart -lcublas -lcublasLt"
  [p4_clblast]="$cllibs -lclblast -lOpenCL"
  [p5_libgpar]="-I$here/../../include -L${PROBE_GPAR_BUILD:-$here/../../build}/.libs -Wl,-rpath,${PROBE_GPAR_BUILD:-$here/../../build}/.libs -lgpar"
)
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(p1 p2 p3 p4 p5)

date -u
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"
echo "OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-unset}: $(cat "${OCL_ICD_VENDORS:-/nonexistent}"/*.icd 2>/dev/null | tr '\n' ' ')"
t_all=$SECONDS
for w in "${want[@]}"; do
  src=$(ls "$here/$w"_*.c 2>/dev/null | head -1)
  [ -n "$src" ] || { echo "### $w: no such probe"; continue; }
  name=$(basename "$src" .c)
  echo
  echo "### $name"
  # shellcheck disable=SC2086
  if ! gcc $cflags "$src" -o "$bd/$name" ${libs[$name]:-} >"$bd/$name.build.log" 2>&1; then
    echo "BUILD FAILED: $name (gcc $cflags $src ${libs[$name]:-})"
    grep -E 'error|undefined|cannot find' "$bd/$name.build.log" | head -15
    continue
  fi
  grep -m3 -i warning "$bd/$name.build.log"
  t0=$SECONDS
  timeout "${PROBE_TIMEOUT:-150}" "$bd/$name"
  rc=$?
  [ $rc -ne 0 ] && echo "RUN FAILED: $name exit $rc$([ $rc -eq 124 ] && echo ' (timeout)')"
  echo "($name: $((SECONDS - t0)) s)"
done
echo
echo "probes done in $((SECONDS - t_all)) s"
