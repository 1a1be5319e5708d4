#!/bin/sh
# run.sh NP PROGRAM: run an MPI test program under mpirun with NP ranks on this host (as root
# here and in CI, so --allow-run-as-root; --oversubscribe for machines with fewer cores).
# Skips (TAP) when libgpar_mpi or mpirun is absent.
np=$1
prog=$2
if [ ! -x "$prog" ]; then echo "1..0 # SKIP libgpar_mpi not built (configure found no MPI)"; exit 0; fi
mpirun=${MPIRUN:-mpirun}
if ! command -v "$mpirun" >/dev/null 2>&1; then echo "1..0 # SKIP no mpirun"; exit 0; fi
# Under ASan, Open MPI's own allocations (libmpi, and MCA components it dlcloses, which leave
# "<unknown module>" frames no suppression can name) are reported as leaks at exit: leak checking
# is off for the ranks. libgpar's communicator code is leak-checked by tests/comm in the same run.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
set --
for v in ASAN_OPTIONS POCL_DEVICES GPAR_QUIET GPAR_TEST_SEED GPAR_TEST_TIMEOUT GPAR_COMM_TIMEOUT GPAR_BACKENDS GPAR_MPI_TEST_CUDA GPAR_MPI_TEST_EXPECT_NCCL GPAR_COMM_STAGED; do
  eval "test -n \"\${$v+set}\"" && set -- "$@" -x "$v"
done
exec "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$@" "$prog"
