/* mpi_nonccl.c: libgpar_mpi built without NCCL: every collective goes through MPI. */
#include "mpi_internal.h"

int gpar__mpi_nccl_setup(gpar__mpi_ctx *c, int ok) {
  c->nccl = 0;
  return GPAR_OK;
}

int gpar__mpi_nccl_collective(gpar__mpi_ctx *c, const gpar_coll *a) {
  return gpar__mpi_fail(GPAR_ENOTSUP, "libgpar_mpi was built without NCCL");
}

void gpar__mpi_nccl_destroy(gpar__mpi_ctx *c) {}
