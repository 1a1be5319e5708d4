/* gpar_mpi_internal.h: libgpar_mpi's private types, shared by gpar_mpi.c (MPI) and
 * gpar_mpi_nccl.c (NCCL across ranks; gpar_mpi_nonccl.c when built without NCCL). */
#ifndef GPAR_MPI_INTERNAL_H
#define GPAR_MPI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "gpar_mpi.h"

#define GPAR__MPI_HIDDEN __attribute__((visibility("hidden")))

typedef struct gpar__mpi_ctx gpar__mpi_ctx;

/* One operation's arguments, read by its op when it runs (kept until it has run). */
typedef struct gpar__mpi_job {
  struct gpar__mpi_job *next;
  atomic_int done;
  gpar__mpi_ctx *c;
  int kind;            /* gpar_coll_kind, or send / receive */
  unsigned long seq;   /* 1, 2, ... per communicator: named in timeout messages */
  size_t count, esize;
  int dtype, op, root;
  int peer, tag;
  size_t bytes;
  void *result;        /* the range holding the result, copied into the other members' */
  int n;               /* local members (MPI path) or the member index (NCCL path) */
  void *ptrs[];        /* host range of each local member (MPI) / device range (NCCL) */
} gpar__mpi_job;

struct gpar__mpi_ctx {
  gpar_engine *eng;
  MPI_Comm mc;          /* our duplicate, errors returned */
  int rank, size;
  int nlocal, nmembers, first;
  int *counts, *firsts; /* members per rank, first member of each rank */
  int *devs;
  int host_dev;
  gpar_buffer token;    /* written by every MPI operation: program order */
  double timeout;
  atomic_int broken;
  atomic_ulong seq;
  int thread_level, cuda_aware;
  int nccl;             /* collectives through NCCL */
  void *nccl_state;
  pthread_mutex_t jobs_mu;
  gpar__mpi_job *jobs;
};

GPAR__MPI_HIDDEN int gpar__mpi_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
GPAR__MPI_HIDDEN gpar__mpi_job *gpar__mpi_job_new(gpar__mpi_ctx *c, int kind, int n);
/* Collective over the ranks (every rank calls it): set c->nccl when every member of every rank
 * is a CUDA device and NCCL is built; ok = 0 when this rank already failed. */
GPAR__MPI_HIDDEN int gpar__mpi_nccl_setup(gpar__mpi_ctx *c, int ok);
GPAR__MPI_HIDDEN int gpar__mpi_nccl_collective(gpar__mpi_ctx *c, const gpar_coll *a);
GPAR__MPI_HIDDEN void gpar__mpi_nccl_destroy(gpar__mpi_ctx *c);

#endif
