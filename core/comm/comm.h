/* comm.h: communicators' private types, shared by comm.c (communicator objects, handles,
 * shutdown), paths.c (how a checked collective becomes engine ops: the backend path and the
 * staged path, and their kinds) and collectives.c (argument checks, the public collectives);
 * each file uses the ones before it.
 *
 * Handles and lifetime (the one rule of engine/handle.c): a gpar_comm is {slot, serial} of the
 * table of live communicators. A communicator lives while its handle or a call in progress
 * uses it; its ops write its member tokens, so destroy ends the handle, waits for the calls in
 * progress to leave, waits for the last op on each token, and only then destroys the backend's
 * communicator (NCCL) and the transport's context. From inside an op destroy is refused
 * (GPAR_EDEADLK): it would wait for itself. gpar_shutdown destroys the engine's communicators
 * after its drain (gpar__comm_shutdown).
 * Lock order: c->issue_mu (a collective's member ops issued together) before the engine's. */
#ifndef GPAR_CORE_COMM_H
#define GPAR_CORE_COMM_H

#include "api/api.h"

typedef struct gpar__comm {
  uint32_t slot;         /* its handle: {slot, serial} in the table of live communicators */
  uint64_t serial;
  gpar_engine *token;    /* its engine's user handle (entered with the serial check) */
  gpar_engine *eng;
  pthread_mutex_t issue_mu; /* one collective's ops are issued whole, in one order on every member */
  int nlocal, nmembers, first_local;
  int *devs;             /* flat device index of each local member */
  gpar_buffer *tokens;   /* one per local member: written by every ordered collective */
  const gpar__backend_ops *bops; /* backend collectives (NCCL), or NULL: staged */
  void *bcomm;
  gpar_comm_transport t; /* transport (t.collective non-NULL) */
  void *ctx;
} gpar__comm;

/* One local member of a checked collective. */
typedef struct gpar__comm_member {
  gpar_buffer h;
  size_t off;  /* bytes */
  int host;    /* host code can touch its memory */
} gpar__comm_member;

/* comm.c: the collectives' public names, by gpar_coll_kind. */
GPAR__HIDDEN extern const char *const gpar__coll_names[];
/* Take a reference on a live communicator (GPAR_EINVAL with a message otherwise); drop it. */
GPAR__HIDDEN int gpar__comm_get(gpar_comm h, const char *fn, gpar__comm **out);
GPAR__HIDDEN void gpar__comm_put(gpar__comm *c);

/* paths.c: issue a checked collective (m: its nlocal members) as engine ops. */
/* Backend path: one member op per member, all submitted at once, c->bops set. */
GPAR__HIDDEN int gpar__comm_backend(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m);
/* Staged path: copies through GPAR_HOST staging and a CPU reduction, or copies only. */
GPAR__HIDDEN int gpar__comm_staged(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m);

/* comm.c: destroy every communicator of eng (lifecycle/: after the drain, no call inside). */
GPAR__HIDDEN void gpar__comm_shutdown(gpar_engine *eng);

#endif
