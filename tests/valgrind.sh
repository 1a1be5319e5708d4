#!/bin/sh
# valgrind.sh: runs tests/engine, tests/badinput, tests/dag (fewer DAGs) and tests/faults under valgrind
# memcheck, host backend only; prints TAP, exits non-zero on any memcheck error, definite leak or failed test.
#
# Usage: tests/valgrind.sh [BUILDDIR]   (BUILDDIR: a configured and built tree, default "."; the
# test programs are built by `make check TESTS=` or `make check`). Logs: BUILDDIR/tests/*.vg.log.
# Env: VALGRIND (default valgrind), VG_DAGS (DAGs per mode in tests/dag, default 100).
set -u
B=${1:-.}
VALGRIND=${VALGRIND:-valgrind}
if ! command -v "$VALGRIND" >/dev/null 2>&1; then
  echo "1..0 # SKIP valgrind not found"
  exit 0
fi
if [ ! -x "$B/libtool" ] || [ ! -e "$B/tests/engine" ]; then
  echo "Bail out! $B is not a built tree (run make check TESTS= there first)"
  exit 1
fi
# Host backend only: no PoCL/CUDA/OpenCL runtime noise. GPAR_BACKENDS=host covers engines made with
# gpar_init(NULL) / gpar_config_init; tests that set cfg.backends themselves (badinput) also find no
# GPU: the OpenCL ICD loader gets an empty vendor directory, the CUDA runtime no visible device.
# Valgrind runs threads one at a time, so the tests get a longer watchdog; --fair-sched keeps the
# engine's spinning workers from starving the others.
mkdir -p "$B/tests/vg-no-icd"
GPAR_BACKENDS=host GPAR_QUIET=1 GPAR_TEST_TIMEOUT=900 GPAR_TEST_DAGS=${VG_DAGS:-100} GPAR_TEST_EXPECT=host
OCL_ICD_VENDORS="$B/tests/vg-no-icd" OPENCL_VENDOR_PATH="$B/tests/vg-no-icd" CUDA_VISIBLE_DEVICES=
export GPAR_BACKENDS GPAR_QUIET GPAR_TEST_TIMEOUT GPAR_TEST_DAGS GPAR_TEST_EXPECT OCL_ICD_VENDORS OPENCL_VENDOR_PATH CUDA_VISIBLE_DEVICES
# Suppressions: vendor libraries only, each commented. They are loaded (linked) even when unused.
SUPP="$B/tests/vg-vendor.supp"
cat >"$SUPP" <<'SUPPEOF'
# libcublasLt's constructor dlopen()s a library with an rpath; glibc's word-at-a-time strncmp in the
# dynamic loader (is_dst) reads up to 8 bytes past the rpath string: a false positive at load time.
{
   vendor-cublasLt-ctor-dlopen-rpath-strncmp
   Memcheck:Addr8
   fun:strncmp
   fun:is_dst
   ...
   obj:*/libcublasLt.so*
}
SUPPEOF
VGFLAGS="--tool=memcheck --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
--errors-for-leak-kinds=definite --fair-sched=yes --num-callers=30 --suppressions=$SUPP"
tests="engine badinput dag faults"
n=0
failed=0
echo "1..4"
for t in $tests; do
  n=$((n + 1))
  log="$B/tests/$t.vg.log"
  start=$(date +%s)
  "$B/libtool" --mode=execute "$VALGRIND" $VGFLAGS --log-file="$log.vg" "$B/tests/$t" >"$log" 2>&1
  rc=$?
  cat "$log.vg" >>"$log" && rm -f "$log.vg"
  secs=$(($(date +%s) - start))
  errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -n 1)
  notok=$(grep -c '^not ok' "$log")
  if [ "$rc" -eq 0 ] && [ "${errs:-1}" = 0 ]; then
    echo "ok $n - $t under memcheck: 0 errors, no definite leak, TAP passed (${secs} s)"
  else
    failed=$((failed + 1))
    why="exit $rc"
    [ "$rc" -eq 99 ] && why="memcheck errors or definite leaks"
    echo "not ok $n - $t under memcheck: $why; ${errs:-?} errors, $notok failed TAP tests (${secs} s; $log)"
    grep -E '^not ok|^Bail out|definitely lost|Invalid|uninitialised|ERROR SUMMARY' "$log" | head -n 20 | sed 's/^/# /'
  fi
done
[ "$failed" -eq 0 ] || echo "# $failed of 4 programs failed under valgrind"
exit $([ "$failed" -eq 0 ] && echo 0 || echo 1)
