/* mpi_p2p.c: gpar_send and gpar_recv: one CPU op on a host range (staged for device buffers,
 * mpi_submit.c). Every limit of MPI (int counts, MPI_TAG_UB) is checked here, before anything
 * is queued. */
#include <limits.h>

#include "mpi_internal.h"

/* A bad argument's message, or GPAR_OK. */
static int p2p_check(const gpar__mpi_ctx *c, const char *fn, gpar_buffer buf, size_t off, size_t bytes, int rank,
                     int tag) {
  size_t size = 0;
  int dev = 0, st = gpar_buffer_query(buf, &size, &dev);
  if (st) return st;
  if (bytes == 0) return gpar__mpi_fail(GPAR_EINVAL, "%s: size is 0", fn);
  if (off > size || bytes > size - off)
    return gpar__mpi_fail(GPAR_ERANGE, "%s: range [%zu, +%zu) exceeds the buffer's %zu bytes", fn, off, bytes, size);
  if (bytes > (size_t)INT_MAX)
    return gpar__mpi_fail(GPAR_ENOTSUP, "%s: %zu bytes: MPI counts are int, so a message is at most INT_MAX (%d) bytes",
                          fn, bytes, INT_MAX);
  if (rank < 0 || rank >= c->size)
    return gpar__mpi_fail(GPAR_EINVAL, "%s: rank %d out of range (communicator of %d ranks)", fn, rank, c->size);
  if (tag < 0) return gpar__mpi_fail(GPAR_EINVAL, "%s: tag %d is negative", fn, tag);
  if (tag > c->tag_ub) return gpar__mpi_fail(GPAR_EINVAL, "%s: tag %d is above MPI_TAG_UB (%d)", fn, tag, c->tag_ub);
  int member = 0;
  for (int i = 0; i < c->nlocal; i++) member |= c->devs[i] == dev || (dev == GPAR_HOST && c->devs[i] == c->host_dev);
  if (!member)
    return gpar__mpi_fail(GPAR_ENODEV, "%s: the buffer is on device %d, which is not in the communicator", fn, dev);
  return GPAR_OK;
}

/* Check and submit one send or receive on context c (held by the caller). */
static int p2p_ctx(gpar__mpi_ctx *c, const char *fn, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag,
                   int kind) {
  int st = p2p_check(c, fn, buf, off, bytes, rank, tag);
  if (st) return st;
  int in = kind == GPAR__MPI_SEND;
  pthread_mutex_lock(&c->submit_mu);
  gpar__mpi_job *j = NULL;
  if (atomic_load(&c->broken))
    st = gpar__mpi_fail(GPAR_ETIMEDOUT, "%s: the communicator is broken by an earlier timeout", fn);
  else if (!(j = gpar__mpi_job_new(c, kind, 1)))
    st = GPAR_ENOMEM;
  if (j) {
    j->peer = rank;
    j->tag = tag;
    j->bytes = bytes;
    st = gpar__mpi_submit(c, j, &buf, &off, bytes, &in, !in, in, !in);
  }
  pthread_mutex_unlock(&c->submit_mu);
  return st;
}

/* The context is held for the whole call: a concurrent gpar_comm_destroy waits for it to return
 * (then for its op) before it frees the context; once destroy has begun, the call is refused. */
static int p2p(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag, int kind) {
  const char *fn = gpar__mpi_kind_name(kind);
  gpar__mpi_lost_sweep();
  void *c = NULL;
  if (gpar_comm_transport_ctx_get(comm, &c)) return gpar__mpi_fail(GPAR_EINVAL, "%s: %s", fn, gpar_last_error());
  int st = p2p_ctx(c, fn, buf, off, bytes, rank, tag, kind);
  gpar_comm_transport_ctx_put(comm);
  return st;
}

GPAR_API int gpar_send(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag) {
  return p2p(comm, buf, off, bytes, rank, tag, GPAR__MPI_SEND);
}

GPAR_API int gpar_recv(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag) {
  return p2p(comm, buf, off, bytes, rank, tag, GPAR__MPI_RECV);
}
