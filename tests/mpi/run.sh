#!/bin/sh
# run.sh NP PROGRAM: run an MPI test program under mpirun with NP ranks on this host (as root
# here and in CI, so --allow-run-as-root; --oversubscribe for machines with fewer cores).
# Skips (TAP) when libgpar_mpi or mpirun is absent.
np=$1
prog=$2
if [ ! -x "$prog" ]; then echo "1..0 # SKIP libgpar_mpi not built (configure found no MPI)"; exit 0; fi
mpirun=${MPIRUN:-mpirun}
if ! command -v "$mpirun" >/dev/null 2>&1; then echo "1..0 # SKIP no mpirun"; exit 0; fi
set --
for v in POCL_DEVICES GPAR_QUIET GPAR_TEST_SEED GPAR_TEST_TIMEOUT GPAR_COMM_TIMEOUT GPAR_BACKENDS GPAR_MPI_TEST_CUDA GPAR_MPI_TEST_EXPECT_NCCL GPAR_COMM_STAGED; do
  eval "test -n \"\${$v+set}\"" && set -- "$@" -x "$v"
done
exec "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$@" "$prog"
