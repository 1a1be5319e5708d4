#!/bin/bash
# tests/fuzz/replay.sh: replays the fuzz corpus without libFuzzer (tests/fuzz/replay_main.c), with
# any C compiler, e.g. on a GPU machine with gcc and without clang:
#   replay.sh SRCDIR OUTDIR [BACKEND_SETS]
# BACKEND_SETS: space-separated GPAR_BACKENDS values (default "host host,cuda host,opencl").
# Env: CC (default gcc), CUDA=DIR (build the CUDA backend from DIR, default /usr/local/cuda when
# it has include/cuda_runtime.h), SAN=asan (ASan+UBSan build; with CUDA ASAN_OPTIONS gets
# protect_shadow_gap=0), WRAP="compute-sanitizer --tool memcheck --error-exitcode 1" (a plain build
# run under that command), CORPUS=DIR (replay DIR instead of tests/fuzz/corpus, e.g. a subset for
# a slow WRAP). Exit status 0 when every set replayed clean.
set -u
src=$(cd "${1:?SRCDIR}" && pwd)
out=${2:?OUTDIR}
sets=${3:-host host,cuda host,opencl}
mkdir -p "$out" && out=$(cd "$out" && pwd)
cc=${CC:-gcc}
cuda=${CUDA-}
[ -z "$cuda" ] && [ -f /usr/local/cuda/include/cuda_runtime.h ] && cuda=/usr/local/cuda
. "$src/tests/fuzz/sources.sh"
[ "${SAN:-}" = asan ] && flags+=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
echo "building $out/api_replay with $cc (CUDA: ${cuda:-no}; ${SAN:-no sanitizer})"
"$cc" "${flags[@]}" "${srcs[@]}" "$src/tests/fuzz/api_fuzz.c" "$src/tests/fuzz/replay_main.c" "${libs[@]}" \
  -o "$out/api_replay" >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
export POCL_DEVICES="${POCL_DEVICES-pthread pthread}" GPAR_QUIET=1
export GPAR_CACHE_DIR="${GPAR_CACHE_DIR:-${TMPDIR:-/tmp}/gpar-fuzz-kernels}" # (built kernels: loaded, not rebuilt, by later inputs)
if [ "${SAN:-}" = asan ]; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:protect_shadow_gap=0}"
  export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$src/tests/lsan.supp:print_suppressions=0}"
fi
corpus=${CORPUS:-$src/tests/fuzz/corpus}
status=0
for set in $sets; do
  tag=${set//,/+}
  echo "=== backends $set: $(ls "$corpus" | wc -l) inputs from $corpus"
  GPAR_BACKENDS=$set timeout 3600 ${WRAP:-} "$out/api_replay" "$corpus" >"$out/replay-$tag.log" 2>&1
  rc=$?
  grep -E "^api_replay" "$out/replay-$tag.log"; tail -2 "$out/replay-$tag.log" | grep -v "^api_replay"
  [ $rc = 0 ] || { echo "replay $set: exit $rc (log $out/replay-$tag.log)"; status=1; }
done
[ $status = 0 ] && echo "replay: clean" || echo "replay: FAILED"
exit $status
