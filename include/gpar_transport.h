/* gpar_transport.h: the transport interface of libgpar's communicators, for libgpar_mpi and
 * other libraries that run collectives across processes (applications need only gpar.h and, for
 * MPI, gpar_mpi.h). A transport runs the collectives of a communicator whose members span
 * processes: gpar_comm_create_transport makes such a communicator, and the core checks every
 * argument of a collective (handles, ranges, devices) before it calls the transport. Installed
 * beside gpar.h, which it includes. */
#ifndef GPAR_TRANSPORT_H
#define GPAR_TRANSPORT_H

#include "gpar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds of collective a transport receives; offs is never NULL. */
typedef enum {
  GPAR_COLL_ALLREDUCE,
  GPAR_COLL_BROADCAST,
  GPAR_COLL_REDUCE_SCATTER,
  GPAR_COLL_ALL_GATHER
} gpar_coll_kind;
/* One collective as the transport receives it (bufs/offs: this process's nlocal members). */
typedef struct gpar_coll {
  gpar_coll_kind kind;
  const gpar_buffer *bufs;
  const size_t *offs;
  size_t count;
  gpar_dtype dtype;
  gpar_redop op;
  int root; /* broadcast: global member index */
} gpar_coll;
/* A transport's entry points: collective submits the work (engine ops) and returns at once;
 * destroy frees ctx after its ops are done. */
typedef struct gpar_comm_transport {
  int (*collective)(void *ctx, const gpar_coll *coll);
  void (*destroy)(void *ctx);
} gpar_comm_transport;
/* Create a communicator of nmembers members, of which this process holds devs[0..ndevs-1] as
 * global members first_local.., run by transport t with context ctx. */
GPAR_API int gpar_comm_create_transport(gpar_engine *eng, const int *devs, int ndevs, int nmembers, int first_local,
                                        const gpar_comm_transport *t, void *ctx, gpar_comm *comm);
/* The ctx of a live transport communicator in *ctx, held: comm's destroy (and gpar_shutdown)
 * waits for the hold before it frees ctx, so ctx stays valid until the matching
 * gpar_comm_transport_ctx_put. GPAR_EINVAL (*ctx NULL) for a destroyed, invalid or stale handle
 * or one without a transport (gpar_last_error says which), and when the thread holds 16 already.
 * Hold it for the length of a call; the holding thread must not destroy comm or shut its engine
 * down (they would wait for it). */
GPAR_API int gpar_comm_transport_ctx_get(gpar_comm comm, void **ctx);
/* Drop the hold of a successful gpar_comm_transport_ctx_get(comm, ...) made by this thread: once
 * per such call. GPAR_EINVAL, with nothing dropped, when this thread holds none of comm's (a put
 * after a failed get, a second put, another thread's hold, a handle never used). */
GPAR_API int gpar_comm_transport_ctx_put(gpar_comm comm);

#ifdef __cplusplus
}
#endif
#endif /* GPAR_TRANSPORT_H */
