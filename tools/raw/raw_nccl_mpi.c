/* raw_nccl_mpi.c: the raw baseline of gpar-bench-mpi on CUDA: ncclAllReduce across MPI ranks,
 * one GPU per rank (unique id over MPI_Bcast), on one stream, timed after a stream sync. */
#include <stdio.h>

#include <mpi.h>
#include "gpar_mpi.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "raw_nccl.h"

static ncclComm_t comm;
static cudaStream_t stream;
static void *buf;
static size_t cap;

static int loop(size_t count, int iters) {
  for (int i = 0; i < iters; i++)
    if (ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream) != ncclSuccess) return -1;
  return cudaStreamSynchronize(stream) == cudaSuccess ? 0 : -1;
}

int gpar_raw_nccl_mpi_allreduce(MPI_Comm mc, int ordinal, size_t bytes, int iters, double *seconds) {
  cudaSetDevice(ordinal);
  if (!comm) {
    int rank, size;
    ncclUniqueId id;
    MPI_Comm_rank(mc, &rank);
    MPI_Comm_size(mc, &size);
    if (rank == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, mc);
    if (ncclCommInitRank(&comm, size, id, rank) != ncclSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
      fprintf(stderr, "raw nccl: ncclCommInitRank failed\n");
      return -1;
    }
  }
  if (bytes > cap) {
    if (cap) cudaFree(buf);
    if (cudaMalloc(&buf, bytes) != cudaSuccess) return -1;
    cudaMemset(buf, 0, bytes);
    cudaDeviceSynchronize();
    cap = bytes;
  }
  if (loop(bytes / 4, 3)) return -1;
  MPI_Barrier(mc);
  double t0 = gpar_now();
  if (loop(bytes / 4, iters)) return -1;
  *seconds = (gpar_now() - t0) / iters;
  return 0;
}
