/* mpi_internal.h: libgpar_mpi's private types (operations as jobs, the communicator's context)
 * and the calls its files share, listed file by file from the bottom layer up. libgpar_mpi sits
 * above the whole of libgpar and uses its public API only (gpar.h): a transport for the core's
 * communicators (gpar_comm_create_transport) whose every MPI operation is one CPU op.
 *
 * Layers (bottom first): mpi_errors.c mpi_calls.c mpi_abandoned.c mpi_workers.c mpi_jobs.c mpi_wait.c mpi_ops.c mpi_submit.c mpi_nccl.c mpi_nonccl.c mpi_p2p.c mpi_comm.c
 *
 * A file calls only into files listed before it (and MPI, NCCL, libgpar's public API):
 *   mpi_errors.c     this thread's failure message, MPI's error strings, operation names, and
 *                    every rank agreeing on whether a step failed
 *   mpi_calls.c      the MPI calls made from ops, serialised when MPI is not MPI_THREAD_MULTIPLE
 *   mpi_abandoned.c  requests that timed out and that MPI keeps: their memory, the MPI
 *                    communicators they use, the sweep at MPI_Finalize
 *   mpi_workers.c    communicators per engine: each holds one CPU worker while it waits
 *   mpi_jobs.c       jobs (one operation's arguments), their gates, freeing them
 *   mpi_wait.c       polling a request until done or timed out; the scratch memory MPI works on
 *   mpi_ops.c        the CPU op of every MPI operation: reductions, broadcast, all-gather, send,
 *                    receive
 *   mpi_submit.c     one operation's engine work, all or none: staging, the CPU op, copies back
 *   mpi_nccl.c       collectives through NCCL across ranks, and their watchdog (built with NCCL;
 *   mpi_nonccl.c     else this stub: every collective goes through MPI)
 *   mpi_p2p.c        gpar_send, gpar_recv
 *   mpi_comm.c       the transport (collective, destroy), gpar_comm_create_mpi in its steps, the
 *                    timeout and info calls
 *
 * Locks, every one of libgpar_mpi (outer before inner; "->" marks what may be taken while the
 * line above is held). Each is taken and released in one function.
 *   c->issue_mu (core, comm/)  held by the core while it calls the transport's collective
 *     -> submit_mu             a communicator's: one operation's engine ops are submitted
 *                              together, in program order (mpi_comm.c collective, mpi_p2p.c)
 *        -> jobs_mu            a communicator's list of jobs (mpi_jobs.c); held alone
 *        -> the engine's       inside the libgpar calls made while submitting (buffer create,
 *                              query and release, gpar_copy, gpar_submit; in synchronous mode
 *                              the last two also wait for their op, on eng->wait_mu)
 *   lost_mu                    the abandoned requests (mpi_abandoned.c)
 *     -> mpi_mu                serialises MPI calls (mpi_calls.c); held alone otherwise
 *   use (rwlock, NCCL)         read: an NCCL call on the local communicators; write: the abort
 *     -> s->mu                 the watchdog's list (mpi_nccl.c); held alone otherwise (the
 *                              watchdog lets go of it before it takes use)
 *   hook_mu                    the MPI_Finalize hook, set once (mpi_abandoned.c); MPI calls only
 *                              under it
 *   reg_mu                     communicators per engine (mpi_workers.c); held alone
 * An op takes lost_mu, mpi_mu, use and s->mu only (each alone or in the order above), and so does
 * the NCCL watchdog thread.
 *
 * Held across an engine call: submit_mu alone (with the core's issue_mu above it for a
 * collective), never jobs_mu and never a lock an op takes. That cannot deadlock with the
 * engine's own locks (head of core/engine/engine.h): the engine takes and releases each of them
 * within one call and holds none while it runs an op on a worker, and no op or thread of
 * libgpar_mpi takes submit_mu, so a thread that holds it while the engine works (or, in
 * synchronous mode, waits for the op it submitted) waits for nothing that needs it. */
#ifndef GPAR_MPI_INTERNAL_H
#define GPAR_MPI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "gpar_mpi.h"
#include "gpar_transport.h"

#define GPAR__MPI_HIDDEN __attribute__((visibility("hidden")))

typedef struct gpar__mpi_ctx gpar__mpi_ctx;
typedef struct gpar__mpi_job gpar__mpi_job;

/* What a job does: a gpar_coll_kind (0..3), or one of these. */
enum { GPAR__MPI_SEND = 10, GPAR__MPI_RECV = 11 };

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
  int kind;           /* gpar_coll_kind, or GPAR__MPI_SEND / GPAR__MPI_RECV */
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

/* An MPI communicator of ours and its abandoned requests (mpi_abandoned.c): freed with mc once
 * its gpar communicator is destroyed and no abandoned request uses it. Under lost_mu. */
typedef struct gpar__mpi_commref {
  MPI_Comm mc;
  int pending;  /* abandoned requests on mc */
  int released; /* its gpar communicator is destroyed */
} gpar__mpi_commref;

/* A communicator's context: the transport's ctx. Set by gpar_comm_create_mpi, read-only after,
 * but for the fields marked otherwise. */
struct gpar__mpi_ctx {
  gpar_engine *eng;
  MPI_Comm mc;             /* our duplicate, errors returned */
  gpar__mpi_commref *ref;  /* frees mc once no abandoned request uses it */
  int rank, size;
  int nlocal, nmembers, first;
  int *counts, *firsts; /* members per rank, first member of each rank */
  int *devs;
  int host_dev;
  int tag_ub;           /* MPI_TAG_UB */
  int synchronous;      /* the engine's gpar_config.synchronous: no gates (an op completes inside its submit) */
  gpar_buffer token;    /* written by every MPI operation: program order */
  _Atomic double timeout;
  atomic_int broken;
  unsigned long seq;    /* under submit_mu */
  int thread_level, cuda_aware;
  int nccl;             /* collectives through NCCL */
  void *nccl_state;
  pthread_mutex_t submit_mu; /* one operation's engine ops are submitted together (program order) */
  pthread_mutex_t jobs_mu;   /* jobs */
  gpar__mpi_job *jobs;
  void *scratch;        /* the memory MPI works on (mpi_wait.c): used by one op at a time */
  size_t scratch_bytes;
};

/* mpi_errors.c */
/* Record a failure for the calling thread (gpar_last_error) and return status. */
GPAR__MPI_HIDDEN int gpar__mpi_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* GPAR_OK for MPI_SUCCESS, else GPAR_EBACKEND with MPI's message, naming what and the job (j may be NULL). */
GPAR__MPI_HIDDEN int gpar__mpi_check(int rc, const char *what, const gpar__mpi_job *j);
/* The public call behind a job kind ("gpar_allreduce", ..., "gpar_send", "gpar_recv"). */
GPAR__MPI_HIDDEN const char *gpar__mpi_kind_name(int kind);
/* Collective over mc: 1 when ok is nonzero on every rank. */
GPAR__MPI_HIDDEN int gpar__mpi_agree(MPI_Comm mc, int ok);

/* mpi_calls.c: each takes mpi_mu when MPI is not MPI_THREAD_MULTIPLE. */
/* From now on serialise the calls below (the process's MPI gives less than MPI_THREAD_MULTIPLE). */
GPAR__MPI_HIDDEN void gpar__mpi_calls_serialise(void);
GPAR__MPI_HIDDEN int gpar__mpi_test(MPI_Request *req, int *flag, MPI_Status *status);
/* Cancel req, then test it once: *flag set when it is complete (cancelled or not). */
GPAR__MPI_HIDDEN int gpar__mpi_cancel_test(MPI_Request *req, int *flag, MPI_Status *status);
GPAR__MPI_HIDDEN void gpar__mpi_comm_free(MPI_Comm *mc);
/* The nonblocking MPI call of one step of a job. */
enum { GPAR__START_ALLREDUCE, GPAR__START_BCAST, GPAR__START_ALLGATHERV, GPAR__START_ISEND, GPAR__START_IRECV };
typedef struct gpar__mpi_start {
  int what; /* GPAR__START_* */
  void *buf;
  int count, root, peer, tag;
  MPI_Datatype type;
  MPI_Op op;
  const int *counts, *displs;
} gpar__mpi_start;
GPAR__MPI_HIDDEN int gpar__mpi_start_call(MPI_Comm mc, const gpar__mpi_start *s, MPI_Request *req);

/* mpi_abandoned.c */
/* Test every abandoned request; free what MPI has completed. Called by every entry point and op. */
GPAR__MPI_HIDDEN void gpar__mpi_lost_sweep(void);
/* Keep req and its memory until MPI completes it. */
GPAR__MPI_HIDDEN void gpar__mpi_lost_add(gpar__mpi_commref *ref, MPI_Request req, void *mem);
/* The gpar communicator is gone: free its MPI communicator now, or once its abandoned requests
 * are complete. */
GPAR__MPI_HIDDEN void gpar__mpi_commref_release(gpar__mpi_commref *ref);
/* Sweep the abandoned requests at MPI_Finalize (set once per process, after MPI_Init). */
GPAR__MPI_HIDDEN void gpar__mpi_finalize_hook(void);

/* mpi_workers.c */
/* Count one more communicator on eng unless it has limit already (limit <= 0: no limit); 1 when
 * counted, 0 when refused (or out of memory). */
GPAR__MPI_HIDDEN int gpar__mpi_workers_take(gpar_engine *eng, int limit);
/* One communicator fewer on eng. */
GPAR__MPI_HIDDEN void gpar__mpi_workers_give(gpar_engine *eng);

/* mpi_jobs.c */
/* A new job of n local members, numbered; call with c->submit_mu held. */
GPAR__MPI_HIDDEN gpar__mpi_job *gpar__mpi_job_new(gpar__mpi_ctx *c, int kind, int n);
/* A job for a collective of this context's local members, its arguments copied from a. */
GPAR__MPI_HIDDEN gpar__mpi_job *gpar__mpi_coll_job_new(gpar__mpi_ctx *c, const gpar_coll *a);
/* Wait (yielding) until the job's gate is no longer open; 1 when sealed, 0 when cancelled. */
GPAR__MPI_HIDDEN int gpar__mpi_gate_wait(gpar__mpi_job *j);
/* Free the jobs that are done with, or all of them (at destroy, once no op runs). */
GPAR__MPI_HIDDEN void gpar__mpi_jobs_sweep(gpar__mpi_ctx *c, int all);

/* mpi_wait.c */
/* Poll req until it is done or the job's timeout passes; on timeout cancel or abandon it (the
 * communicator is then broken) and fail naming what. */
GPAR__MPI_HIDDEN int gpar__mpi_wait(gpar__mpi_job *j, MPI_Request *req, const char *what);
/* The communicator's scratch memory, at least bytes of it; NULL when out of host memory. */
GPAR__MPI_HIDDEN void *gpar__mpi_scratch(gpar__mpi_ctx *c, size_t bytes);

/* mpi_ops.c */
/* MPI's MAX and MIN with gpar.h's NaN rule, made once per process (after MPI_Init). */
GPAR__MPI_HIDDEN void gpar__mpi_ops_init(void);
/* The CPU op of every MPI operation (arg: its job). */
GPAR__MPI_HIDDEN int gpar__mpi_job_run(const gpar_native *nat, void *arg);

/* mpi_submit.c */
/* Submit a job's work, all of it or none: bufs[i] at offs_bytes[i], bytes each, copied in where
 * in[i], out when out; the op reads (reads) and writes (writes) them. Call with submit_mu. */
GPAR__MPI_HIDDEN int gpar__mpi_submit(gpar__mpi_ctx *c, gpar__mpi_job *j, const gpar_buffer *bufs,
                                      const size_t *offs_bytes, size_t bytes, const int *in, int out, int reads,
                                      int writes);
/* A collective through MPI, staged through host memory (submit_mu held). */
GPAR__MPI_HIDDEN int gpar__mpi_collective_staged(gpar__mpi_ctx *c, const gpar_coll *a);

/* mpi_nccl.c (mpi_nonccl.c without NCCL) */
/* Collective over the ranks (every rank calls it): set c->nccl when every member of every rank
 * is a CUDA device and NCCL is built; ok = 0 when this rank already failed. */
GPAR__MPI_HIDDEN int gpar__mpi_nccl_setup(gpar__mpi_ctx *c, int ok);
/* Submit every local member's part of a collective, or none (c->submit_mu held). */
GPAR__MPI_HIDDEN int gpar__mpi_nccl_collective(gpar__mpi_ctx *c, const gpar_coll *a);
GPAR__MPI_HIDDEN void gpar__mpi_nccl_destroy(gpar__mpi_ctx *c);

#endif
