#!/bin/sh
# run.sh NP PROGRAM: run an MPI test program under mpirun with NP ranks on this host (as root
# here and in CI, so --allow-run-as-root; --oversubscribe for machines with fewer cores).
# Skips (TAP) when libgpar_mpi or mpirun is absent. GPAR_MPIRUN_ARGS adds mpirun arguments
# (CI: "--mca btl tcp,self", Open MPI's TCP transport only, as between separate hosts).
# Sanitizer builds: the ranks are leak-checked (LeakSanitizer) with tests/lsan.supp and
# ThreadSanitizer reads tests/tsan.supp, unless the caller's LSAN_OPTIONS / TSAN_OPTIONS name
# suppressions already. Both suppress Open MPI's own reports by library name, never libgpar's.
np=$1
prog=$2
if [ ! -x "$prog" ]; then echo "1..0 # SKIP libgpar_mpi not built (configure found no MPI)"; exit 0; fi
mpirun=${MPIRUN:-mpirun}
if ! command -v "$mpirun" >/dev/null 2>&1; then echo "1..0 # SKIP no mpirun"; exit 0; fi
supp=$(cd "${0%/*}/.." && pwd)
# The slow unwinder: Open MPI is built without frame pointers, so the fast one stops at its first
# frame, and the components it has unloaded by exit leave frames of no module.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
case ":${LSAN_OPTIONS-}:" in
  *:suppressions=*) ;;
  *) LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$supp/lsan.supp:print_suppressions=0" ;;
esac
case ":${TSAN_OPTIONS-}:" in
  *:suppressions=*) ;;
  *) TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$supp/tsan.supp" ;;
esac
export ASAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS
set --
for v in ASAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS UBSAN_OPTIONS POCL_DEVICES GPAR_QUIET GPAR_TEST_SEED GPAR_TEST_TIMEOUT \
  GPAR_COMM_TIMEOUT GPAR_BACKENDS GPAR_MPI_TEST_CUDA GPAR_MPI_TEST_EXPECT_NCCL GPAR_COMM_STAGED; do
  eval "test -n \"\${$v+set}\"" && set -- "$@" -x "$v"
done
# shellcheck disable=SC2086 # GPAR_MPIRUN_ARGS is a list of arguments
exec "$mpirun" --allow-run-as-root --oversubscribe --bind-to none \
  ${GPAR_MPIRUN_ARGS-} -np "$np" "$@" "$prog"
