/* comm.h: communicators' private types, shared by comm.c (communicator objects, argument
 * checks, the public collectives) and comm_paths.c (how a checked collective becomes engine
 * ops: the backend path and the staged path, and the engine's hooks that run them). */
#ifndef GPAR_CORE_COMM_H
#define GPAR_CORE_COMM_H

#include "internal.h"

typedef struct gpar__comm {
  int live;      /* 0 once destroyed */
  int refs;      /* 1 while live + calls in progress (registry lock) */
  gpar_engine *eng;      /* internal pointer */
  uint64_t eng_serial;   /* the engine's lifetime it belongs to */
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

/* The collectives' public names, by gpar_coll_kind. */
GPAR__HIDDEN extern const char *const gpar__coll_names[];

/* comm_paths.c: issue a checked collective (m: its nlocal members) as engine ops. */
/* Backend path: one GPAR__OP_COLL per member, c->bops set. */
GPAR__HIDDEN int gpar__comm_backend(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m);
/* Staged path: copies through GPAR_HOST staging and a CPU reduction, or copies only. */
GPAR__HIDDEN int gpar__comm_staged(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m);

#endif
