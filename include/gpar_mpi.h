/* gpar_mpi.h: libgpar across processes and hosts through MPI: a separate library,
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
 * Progress: each MPI operation is one engine op on the CPU device. It copies its input into
 * memory the communicator owns (never an engine buffer, never a staging block), starts the
 * nonblocking MPI call on that memory and drives MPI's progress itself by polling MPI_Test from
 * that CPU worker until done or timed out, then copies the result out. No extra progress thread:
 * MPI progresses exactly while one of our operations is outstanding.
 *
 * Rules:
 * - Every rank must issue the same collectives on a communicator in the same order (as with
 *   MPI). The engine never reorders them: every operation of a communicator (collectives, sends,
 *   receives) writes one hidden token, so they run in program order, one at a time. One call's
 *   engine ops are submitted together (a lock per communicator), so calls from several threads
 *   never interleave; their order between threads is the order of the calls.
 * - CPU workers: an operation holds one of the engine's CPU workers (gpar_config.host_threads)
 *   from when its inputs are ready until it completes, that is while it waits for the other
 *   ranks; a communicator holds at most one. An engine therefore takes at most host_threads
 *   communicators made by gpar_comm_create_mpi at a time: one more is refused with
 *   GPAR_ENOTSUP (on every rank). With that, collectives of different communicators may be
 *   issued in different orders on different ranks (as with MPI's nonblocking collectives).
 *   Keep CPU work of your own from holding workers while it waits on other ranks.
 * - Sends and receives match like blocking MPI_Send / MPI_Recv issued in program order: a pair
 *   of ranks that both send first may wait on each other.
 * - Element types: GPAR_FLOAT and GPAR_DOUBLE; the other gpar_dtype values (f16, bf16, int32)
 *   are refused with GPAR_ENOTSUP at the call, nothing enqueued.
 * - MPI's limits are checked at the call, nothing enqueued: a send or receive of more than
 *   INT_MAX bytes and an all-gather of more than INT_MAX bytes in all through MPI (not NCCL):
 *   GPAR_ENOTSUP; a tag above MPI_TAG_UB: GPAR_EINVAL. Allreduce, broadcast and reduce-scatter
 *   of any size are split into calls MPI can take.
 * - Timeout: an operation that does not complete within its communicator's timeout fails with
 *   GPAR_ETIMEDOUT and a message naming the call, its sequence number and the rank. The timeout
 *   is the engine's gpar_config.comm_timeout (env GPAR_COMM_TIMEOUT, read by gpar_config_init;
 *   default 300 s) when the communicator is made, or what gpar_mpi_set_timeout set; each
 *   operation keeps the timeout in force when it was issued.
 *   On timeout a receive is cancelled (MPI_Cancel): the communicator stays usable. Anything MPI
 *   does not cancel stays inside MPI: every collective (MPI cannot cancel one), a send (Open MPI
 *   4.1 ignores MPI_Cancel on sends: the message stays posted), a receive already matched. Its
 *   request and the memory it uses are then kept by libgpar_mpi (never handed back to the engine)
 *   until MPI completes it: a rank that joins late completes it with the data the operation had
 *   when it started (a late receiver gets the bytes as they were when the send started, never
 *   bytes written to the buffer afterwards), and nothing is written into engine buffers. Such
 *   requests are tested by every later libgpar_mpi call and op, by gpar_comm_destroy and at
 *   MPI_Finalize; one still incomplete at MPI_Finalize stays allocated for the life of the
 *   process. The communicator is then broken: every later operation on it fails with
 *   GPAR_ETIMEDOUT, at the call (nothing enqueued) or, for operations already queued, when they
 *   run. Destroy it; its MPI communicator is freed once its abandoned requests are complete.
 * - Collectives through NCCL: a non-blocking NCCL communicator per device. A watchdog thread
 *   checks every collective in flight; one not complete after the timeout (or an asynchronous
 *   NCCL error) aborts this rank's NCCL communicators (ncclCommAbort, as PyTorch's watchdog):
 *   the stuck kernels end, the collectives in flight fail with GPAR_ETIMEDOUT on the buffers
 *   they write (ops reading those are skipped), not before ncclCommAbort has returned, and the
 *   communicator is broken as above; gpar_comm_destroy and gpar_shutdown return. Other ranks
 *   are not told: a collective of theirs in flight on it, or issued later, times out and aborts
 *   theirs in turn. Each NCCL collective adds one CPU op after its members' ops (it carries the
 *   status), so a GPU op that reads the result waits for the host to see the collective
 *   complete. In synchronous mode (gpar_config.synchronous) a rank with several GPUs uses MPI
 *   (staged), since each member's op would complete inside its own submit.
 * - Errors (an MPI error, a failed staging copy, an input whose writer failed) reach the buffers
 *   of the failed operation as everywhere else. A rank whose input failed skips its part, so the
 *   other ranks report a timeout. A call that returns an error communicates nothing on this
 *   rank (none of its members, even when some of its ops were already queued: they do nothing;
 *   in synchronous mode ops run as they are submitted, so a failure after the MPI op leaves it
 *   done); the other ranks' matching operation then times out.
 * - A rank that dies (crash, signal, exit without MPI_Finalize): Open MPI's mpirun aborts the
 *   whole job (every rank is killed; mpirun reports the rank and exits non-zero). libgpar_mpi
 *   does not survive rank failures.
 * - Threads: MPI must be initialised with MPI_THREAD_MULTIPLE (or MPI_THREAD_SERIALIZED, when
 *   the application makes no MPI call of its own while libgpar operations are in flight);
 *   GPAR_ENOTSUP otherwise. Destroy communicators (or shut the engine down) before MPI_Finalize.
 * - Across hosts, MPI's own transports carry the data (tested in CI over Open MPI's TCP
 *   transport alone, --mca btl tcp,self, on one host). */
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
/* Send bytes (at most INT_MAX) of buf from off to rank with tag (0 .. MPI_TAG_UB). Reads buf;
 * the data is copied when the send starts. Returns at once. */
GPAR_API int gpar_send(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag);
/* Receive bytes (at most INT_MAX) into buf at off from rank with tag (0 .. MPI_TAG_UB), a message
 * of exactly that size. Writes buf. */
GPAR_API int gpar_recv(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag);
/* Timeout in seconds of the operations issued on comm from now on (> 0); those already issued
 * keep theirs. Thread-safe. */
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
