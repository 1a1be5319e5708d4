/* gpar_mpi_internal.h: libgpar_mpi's private types, shared by gpar_mpi.c (MPI) and
 * gpar_mpi_nccl.c (NCCL across ranks; gpar_mpi_nonccl.c when built without NCCL). */
#ifndef GPAR_MPI_INTERNAL_H
#define GPAR_MPI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "gpar_mpi.h"

#define GPAR__MPI_HIDDEN __attribute__((visibility("hidden")))

typedef struct gpar__mpi_ctx gpar__mpi_ctx;
typedef struct gpar__mpi_job gpar__mpi_job;

/* Gate of a job whose engine ops are submitted in several calls: its ops run only once every
 * one of them is submitted (SEALED), or do nothing when a later submission failed (CANCELLED). */
enum { GPAR__GATE_OPEN = 0, GPAR__GATE_SEALED = 1, GPAR__GATE_CANCELLED = 2 };

/* One member's op of a job (NCCL path: one op per local member). */
typedef struct gpar__mpi_member {
  gpar__mpi_job *j;
  int i;
} gpar__mpi_member;

/* One operation's arguments, read by its ops when they run. Freed once `done` is set and no
 * watchdog entry refers to it (`watched` is 0). */
struct gpar__mpi_job {
  gpar__mpi_job *next;
  atomic_int done;
  atomic_int watched; /* NCCL watchdog entries that point here */
  atomic_int gate;    /* GPAR__GATE_* */
  atomic_int aborted; /* NCCL: the watchdog aborted the communicator while this one was in flight */
  atomic_int issued;  /* NCCL: members whose call was enqueued */
  atomic_int status;  /* NCCL: the ncclResult_t of a failed call (0: none) */
  gpar__mpi_ctx *c;
  int kind;           /* gpar_coll_kind, or send / receive */
  unsigned long seq;  /* 1, 2, ... per communicator, in the order of submission */
  double timeout;     /* seconds, the communicator's when the operation was issued */
  size_t count, esize;
  int dtype, op, root;
  int peer, tag;
  size_t bytes;
  int n;                     /* local members */
  gpar__mpi_member *members; /* n of them (NCCL path) */
  void *ptrs[];              /* host range of each local member (MPI) / device range (NCCL) */
};

struct gpar__mpi_ctx {
  gpar_engine *eng;
  MPI_Comm mc; /* our duplicate, errors returned */
  struct gpar__mpi_commref *ref; /* frees mc once no abandoned request uses it */
  int rank, size;
  int nlocal, nmembers, first;
  int *counts, *firsts; /* members per rank, first member of each rank */
  int *devs;
  int host_dev;
  int tag_ub;           /* MPI_TAG_UB */
  int synchronous;      /* the engine's gpar_config.synchronous: no gates (an op runs inside its submit) */
  gpar_buffer token;    /* written by every MPI operation: program order */
  _Atomic double timeout;
  atomic_int broken;
  unsigned long seq;    /* under submit_mu */
  int thread_level, cuda_aware;
  int nccl;             /* collectives through NCCL */
  void *nccl_state;
  pthread_mutex_t submit_mu; /* one operation's engine ops are submitted together (program order) */
  pthread_mutex_t jobs_mu;
  gpar__mpi_job *jobs;
  void *scratch;        /* the memory MPI works on (see gpar_mpi.c): used by one op at a time */
  size_t scratch_bytes;
};

GPAR__MPI_HIDDEN int gpar__mpi_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A new job of n local members, numbered; call with c->submit_mu held. */
GPAR__MPI_HIDDEN gpar__mpi_job *gpar__mpi_job_new(gpar__mpi_ctx *c, int kind, int n);
/* A job for a collective of this context's local members, its arguments copied from a. */
GPAR__MPI_HIDDEN gpar__mpi_job *gpar__mpi_coll_job_new(gpar__mpi_ctx *c, const gpar_coll *a);
/* Wait (yielding) until the job's gate is no longer open; 1 when sealed, 0 when cancelled. */
GPAR__MPI_HIDDEN int gpar__mpi_gate_wait(gpar__mpi_job *j);
/* Collective over the ranks (every rank calls it): set c->nccl when every member of every rank
 * is a CUDA device and NCCL is built; ok = 0 when this rank already failed. */
GPAR__MPI_HIDDEN int gpar__mpi_nccl_setup(gpar__mpi_ctx *c, int ok);
/* Submit every local member's part of a collective, or none (c->submit_mu held). */
GPAR__MPI_HIDDEN int gpar__mpi_nccl_collective(gpar__mpi_ctx *c, const gpar_coll *a);
GPAR__MPI_HIDDEN void gpar__mpi_nccl_destroy(gpar__mpi_ctx *c);

#endif
