/* raw_nccl.h: the raw NCCL baseline of gpar-bench allreduce (tools/raw/raw_nccl.c, built with
 * NCCL; the weak symbol is NULL otherwise). */
#ifndef GPAR_TOOLS_RAW_NCCL_H
#define GPAR_TOOLS_RAW_NCCL_H

#include <stddef.h>

/* ncclAllReduce (float sum, in place) of bytes on CUDA devices ordinals[0..n-1], from one
 * thread with group calls, as nccl-tests runs it: seconds per call over iters (after warm-up).
 * Returns 0, or -1 after printing why on stderr. */
int gpar_raw_nccl_allreduce(int n, const int *ordinals, size_t bytes, int iters, double *seconds) __attribute__((weak));

#ifdef GPAR_MPI_H
/* The same across MPI ranks, one GPU (ordinal) per rank (tools/raw/raw_nccl_mpi.c). */
int gpar_raw_nccl_mpi_allreduce(MPI_Comm comm, int ordinal, size_t bytes, int iters, double *seconds)
    __attribute__((weak));
#endif

#endif
