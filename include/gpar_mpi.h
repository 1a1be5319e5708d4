/* gpar_mpi.h: libgpar across processes and hosts through MPI (issue 15): a separate library,
 * libgpar_mpi (pkg-config gpar_mpi), so that libgpar itself never needs MPI.
 *
 * A communicator made by gpar_comm_create_mpi has as members every rank's listed devices,
 * numbered rank by rank (rank 0's devices first). gpar_allreduce, gpar_broadcast,
 * gpar_reduce_scatter and gpar_all_gather (gpar.h) work on it with this process's buffers;
 * gpar_send / gpar_recv move a buffer range to or from one rank.
 *
 * Paths: host memory goes through MPI. Other devices are staged through pinned host memory by
 * the engine's copies; device pointers are never handed to MPI (Open MPI 4.1 on the GPU machine
 * is not CUDA-aware; MPIX_Query_cuda_support is queried only for gpar_mpi_info). When every
 * member of every rank is a CUDA device and libgpar_mpi was built with NCCL, collectives go
 * through NCCL across ranks (the unique id travels over MPI); send/recv stay on MPI.
 *
 * Progress: each MPI operation is one engine op on the CPU device. It starts the nonblocking MPI
 * call and drives MPI's progress itself by polling MPI_Test from that CPU worker until done or
 * timed out. No extra progress thread: MPI progresses exactly while one of our operations is
 * outstanding, and at most one per communicator is (they are serialised, below), so one CPU
 * worker per communicator is the cost.
 *
 * Rules:
 * - Every rank must issue the same collectives on a communicator in the same order (as with
 *   MPI). The engine never reorders them: every operation of a communicator (collectives, sends,
 *   receives) writes one hidden token, so they run in program order, one at a time.
 * - Sends and receives match like blocking MPI_Send / MPI_Recv issued in program order: a pair
 *   of ranks that both send first may wait on each other.
 * - A mismatched call never hangs silently: an operation that does not complete within the
 *   timeout (env GPAR_COMM_TIMEOUT in seconds, default 300; gpar_mpi_set_timeout) fails with
 *   GPAR_ETIMEDOUT and a message naming the call, its sequence number and the rank. A timed-out
 *   receive or send is cancelled; a timed-out collective cannot be cancelled in MPI, so the
 *   communicator is then broken: every later operation on it fails with GPAR_ETIMEDOUT at once.
 *   Collectives through NCCL cannot be cancelled: one not complete after the timeout is named
 *   on stderr (operation number, rank) and keeps waiting.
 * - Errors (an MPI error, a failed staging copy, an input whose writer failed) reach the buffers
 *   of the failed operation as everywhere else. A rank whose input failed skips its part, so the
 *   other ranks report a timeout.
 * - Threads: MPI must be initialised with MPI_THREAD_MULTIPLE (or MPI_THREAD_SERIALIZED, when
 *   the application makes no MPI call of its own while libgpar operations are in flight);
 *   GPAR_ENOTSUP otherwise. */
#ifndef GPAR_MPI_H
#define GPAR_MPI_H

#include <mpi.h>

#include "gpar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over mpi_comm (every rank calls it, in the same order as its other collective
 * calls on mpi_comm): members are every rank's devs[0..ndevs-1] of eng. ndevs may differ between
 * ranks (at least 1). mpi_comm is duplicated, so the caller may free it. */
GPAR_API int gpar_comm_create_mpi(gpar_engine *eng, MPI_Comm mpi_comm, const int *devs, int ndevs, gpar_comm *comm);
/* Send bytes of buf from off to rank with tag (>= 0). Reads buf. Returns at once. */
GPAR_API int gpar_send(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag);
/* Receive bytes into buf at off from rank with tag (a message of exactly that size). Writes buf. */
GPAR_API int gpar_recv(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag);
/* Timeout in seconds of this communicator's later operations (> 0). */
GPAR_API int gpar_mpi_set_timeout(gpar_comm comm, double seconds);

/* What a communicator made by gpar_comm_create_mpi uses. */
typedef struct gpar_mpi_info {
  int rank, size;     /* in the duplicated MPI communicator */
  int nccl;           /* 1: collectives go through NCCL */
  int cuda_aware_mpi; /* MPIX_Query_cuda_support (0 where absent): informational only */
  int thread_level;   /* MPI_Query_thread */
} gpar_mpi_info;
/* Describe an MPI communicator. */
GPAR_API int gpar_mpi_info_get(gpar_comm comm, gpar_mpi_info *info);

#ifdef __cplusplus
}
#endif
#endif /* GPAR_MPI_H */
