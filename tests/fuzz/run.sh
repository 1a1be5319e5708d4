#!/bin/bash
# tests/fuzz/run.sh: builds the API fuzzer (tests/fuzz/api_fuzz.c) with clang's libFuzzer,
# ASan and UBSan against the library sources, then replays the seed corpus and fuzzes, once per
# backend set. Called by `make fuzz` and .ci/run.
#   run.sh SRCDIR OUTDIR SECONDS [BACKEND_SETS]
# SECONDS of fuzzing per backend set (0: replay only). BACKEND_SETS: space-separated
# GPAR_BACKENDS values, default "host host,opencl" (opencl only when it was built in).
# Env: FUZZ_CC (default clang-14, else clang), FUZZ_CUDA=DIR (add the CUDA backend, for a GPU
# machine), FUZZ_COVERAGE=1 (also build a coverage binary and print llvm-cov's report),
# FUZZ_JOBS (libFuzzer -jobs), POCL_DEVICES (default "pthread pthread"), GPAR_FUZZ_KNOWN (the known
# defects to call into rather than step around: see api_fuzz.c and tests/fuzz/found/README; the
# default, "all", calls into every one, all fixed today).
# Exit status: 0 clean, 1 a finding (the crash file is under OUTDIR), 77 no fuzzing clang.
set -u
src=$(cd "${1:?SRCDIR}" && pwd)
out=${2:?OUTDIR}
secs=${3:-60}
sets=${4:-}
mkdir -p "$out" && out=$(cd "$out" && pwd)

cc=${FUZZ_CC:-}
if [ -z "$cc" ]; then
  for c in clang-14 clang; do command -v "$c" >/dev/null 2>&1 && { cc=$c; break; }; done
fi
probe="$out/probe.c"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return d && n; }' >"$probe"
if [ -z "$cc" ] || ! "$cc" -fsanitize=fuzzer,address,undefined "$probe" -o "$out/probe" >/dev/null 2>&1; then
  echo "make fuzz: no clang with -fsanitize=fuzzer found (install clang-14, or set FUZZ_CC)"
  exit 77
fi

cuda=${FUZZ_CUDA:-}
. "$src/tests/fuzz/sources.sh"
san=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
echo "building $out/api_fuzz with $cc (OpenCL: $have_ocl, CUDA: ${FUZZ_CUDA:-no}; known defects called into: ${GPAR_FUZZ_KNOWN:-all})"
"$cc" "${flags[@]}" "${san[@]}" "${srcs[@]}" "$src/tests/fuzz/api_fuzz.c" "${libs[@]}" -o "$out/api_fuzz" \
  >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
if [ "${FUZZ_COVERAGE:-0}" = 1 ]; then
  "$cc" "${flags[@]}" -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping "${srcs[@]}" \
    "$src/tests/fuzz/api_fuzz.c" "${libs[@]}" -o "$out/api_fuzz_cov" >>"$out/build.log" 2>&1 ||
    { cat "$out/build.log"; exit 1; }
fi

[ -n "$sets" ] || { sets="host"; [ $have_ocl = 1 ] && sets="host host,opencl"; }
export POCL_DEVICES="${POCL_DEVICES-pthread pthread}" GPAR_QUIET=1
export GPAR_CACHE_DIR="${GPAR_CACHE_DIR:-${TMPDIR:-/tmp}/gpar-fuzz-kernels}" # (built kernels: loaded, not rebuilt, by later inputs)
# (cudart maps memory over ASan's shadow gap: CUDA needs protect_shadow_gap=0, as replay.sh has it)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1${cuda:+:protect_shadow_gap=0}}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$src/tests/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
opts=(-timeout=30 -rss_limit_mb=4096 -max_len=512 -print_final_stats=1)
status=0
for set in $sets; do
  tag=${set//,/+}
  work="$out/corpus-$tag"
  mkdir -p "$work" "$out/crash-$tag"
  export GPAR_BACKENDS=$set GPAR_FUZZ_DUMP="$out/crash-$tag/violation-" # (api_fuzz.c: fail())
  echo "=== backends $set: replay of the seed corpus ($(ls "$src/tests/fuzz/corpus" | wc -l) inputs)"
  "$out/api_fuzz" "${opts[@]}" -runs=0 -artifact_prefix="$out/crash-$tag/" "$src/tests/fuzz/corpus" \
    >"$out/replay-$tag.log" 2>&1 || { tail -40 "$out/replay-$tag.log"; status=1; continue; }
  grep -E 'INITED|DONE' "$out/replay-$tag.log" | tail -2
  grep -h 'left out for known defects' "$out/replay-$tag.log" | tail -1
  [ "$secs" -gt 0 ] || continue
  echo "=== backends $set: fuzzing for $secs s (corpus $work)"
  "$out/api_fuzz" "${opts[@]}" -max_total_time="$secs" ${FUZZ_JOBS:+-jobs=$FUZZ_JOBS -workers=$FUZZ_JOBS} \
    -artifact_prefix="$out/crash-$tag/" "$work" "$src/tests/fuzz/corpus" >"$out/fuzz-$tag.log" 2>&1 ||
    { tail -60 "$out/fuzz-$tag.log"; status=1; continue; }
  grep -E '^#[0-9]+.*(DONE|pulse)|stat::(number_of_executed_units|average_exec_per_sec|peak_rss)' "$out/fuzz-$tag.log" | tail -5
  grep -h 'left out for known defects' "$out/fuzz-$tag.log" | tail -1
done
# Line coverage of the library over the corpora (seed + what this run found), per backend set.
if [ "${FUZZ_COVERAGE:-0}" = 1 ] && command -v llvm-cov-14 >/dev/null; then
  for set in $sets; do
    tag=${set//,/+}
    echo "=== backends $set: line coverage over the seed corpus and $out/corpus-$tag"
    GPAR_BACKENDS=$set LLVM_PROFILE_FILE="$out/cov-$tag.profraw" "$out/api_fuzz_cov" -runs=0 "$out/corpus-$tag" \
      "$src/tests/fuzz/corpus" >"$out/cov-$tag.log" 2>&1
    llvm-profdata-14 merge -sparse "$out/cov-$tag.profraw" -o "$out/cov-$tag.profdata" &&
      llvm-cov-14 report "$out/api_fuzz_cov" -instr-profile="$out/cov-$tag.profdata" "${srcs[@]}" | tail -12
  done
fi
[ $status = 0 ] && echo "fuzz: clean" || echo "fuzz: FINDING (see $out/crash-*)"
exit $status
