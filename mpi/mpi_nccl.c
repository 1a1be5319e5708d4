/* mpi_nccl.c: collectives of an MPI communicator through NCCL when every member of every rank
 * is a CUDA device. Rank 0 makes the NCCL unique id and MPI_Bcast sends it; each rank joins its
 * devices to a non-blocking NCCL communicator (ncclCommInitRankConfig, blocking 0) inside one
 * group. MPI never sees a device pointer.
 * A collective is, on this rank, one user op per local member on that device (the device's
 * dispatcher enqueues the NCCL call on the op's stream, in the order the member's token imposes)
 * and one CPU op after them (the check op) that carries the collective's status to its buffers.
 * Every op of a collective is submitted under the communicator's submit lock, and the member ops
 * wait at the job's gate until all of them are submitted, so members of two collectives never
 * interleave and a failed submission leaves nothing issued (all or none).
 * Watchdog (as PyTorch's): a thread polls an event recorded after each member's NCCL call and
 * ncclCommGetAsyncError; a collective not complete after the communicator's timeout, or an
 * asynchronous NCCL error, aborts every local NCCL communicator (ncclCommAbort): the stuck
 * kernels end, the check ops fail the collectives' buffers with GPAR_ETIMEDOUT (they return
 * only once the abort has returned, so the buffers are not reused before), the communicator is
 * broken, and destroy and shutdown return. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "mpi_internal.h"

/* A member's NCCL call being watched: an event recorded after it, when it was enqueued. */
typedef struct watched {
  cudaEvent_t ev;
  double t;
  gpar__mpi_job *j; /* kept alive by j->watched */
} watched;

typedef struct nccl_state {
  int n;
  int *cuda_index;          /* CUDA ordinal of each local member */
  gpar_buffer *tokens;      /* one per local member: program order on each device */
  gpar_buffer check_token;  /* written by every check op: destroy waits for them */
  pthread_t watchdog;
  int watching, stop;
  pthread_mutex_t mu; /* w, nw, cap, stop; taken inside use, never around it */
  pthread_cond_t cv;
  watched *w;
  int nw, cap;
  pthread_rwlock_t use;     /* read: NCCL calls on comms; write: the abort */
  atomic_int aborting, abort_done;
  ncclComm_t comms[];
} nccl_state;

static int nccl_fail(ncclResult_t r, const char *what) {
  return gpar__mpi_fail(GPAR_EBACKEND, "%s: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(NULL));
}

/* Abort every local NCCL communicator (once; later callers return at once): no NCCL call is in
 * progress on them when it starts (the write lock), the collectives in flight are marked
 * aborted, their kernels end. Sets abort_done once ncclCommAbort has returned. */
static void nccl_abort(gpar__mpi_ctx *c, const char *why) {
  nccl_state *s = c->nccl_state;
  if (atomic_exchange(&s->aborting, 1)) return;
  atomic_store(&c->broken, 1);
  fprintf(stderr, "libgpar_mpi: rank %d: %s: aborting the NCCL communicator (ncclCommAbort); it is broken from now on\n",
          c->rank, why);
  pthread_rwlock_wrlock(&s->use);
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->nw; i++) atomic_store(&s->w[i].j->aborted, 1);
  pthread_mutex_unlock(&s->mu);
  int prev = 0;
  cudaGetDevice(&prev);
  for (int i = 0; i < s->n; i++) {
    if (!s->comms[i]) continue;
    cudaSetDevice(s->cuda_index[i]);
    ncclCommAbort(s->comms[i]);
    s->comms[i] = NULL;
  }
  cudaSetDevice(prev);
  pthread_rwlock_unlock(&s->use);
  atomic_store(&s->abort_done, 1);
}

/* An asynchronous error on any local communicator (ncclSuccess when none). */
static ncclResult_t async_error(nccl_state *s) {
  ncclResult_t worst = ncclSuccess;
  pthread_rwlock_rdlock(&s->use);
  for (int i = 0; i < s->n && worst == ncclSuccess; i++) {
    ncclResult_t ae = ncclSuccess;
    if (s->comms[i] && ncclCommGetAsyncError(s->comms[i], &ae) == ncclSuccess && ae != ncclInProgress) worst = ae;
  }
  pthread_rwlock_unlock(&s->use);
  return worst;
}

/* Every 20 ms: forget finished calls; abort when one is pending past its timeout or NCCL reports
 * an asynchronous error. */
static void *watchdog(void *arg) {
  gpar__mpi_ctx *c = arg;
  nccl_state *s = c->nccl_state;
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    char why[256] = "";
    for (int i = 0; i < s->nw;) {
      watched *w = &s->w[i];
      if (cudaEventQuery(w->ev) != cudaErrorNotReady) { /* done (or failed: the check op reports that) */
        cudaEventDestroy(w->ev);
        atomic_fetch_sub(&w->j->watched, 1);
        *w = s->w[--s->nw];
        continue;
      }
      double waited = gpar_now() - w->t;
      if (!*why && waited > w->j->timeout)
        snprintf(why, sizeof why, "%s #%lu through NCCL not complete after %.1f s (every rank must issue a "
                 "communicator's collectives in the same order)", gpar__mpi_kind_name(w->j->kind), w->j->seq, waited);
      i++;
    }
    pthread_mutex_unlock(&s->mu);
    ncclResult_t ae = atomic_load(&s->aborting) ? ncclSuccess : async_error(s);
    if (!*why && ae != ncclSuccess)
      snprintf(why, sizeof why, "asynchronous NCCL error: %s", ncclGetErrorString(ae));
    if (*why && !atomic_load(&s->aborting)) nccl_abort(c, why);
    pthread_mutex_lock(&s->mu);
    if (s->stop) break;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->cv, &s->mu, &until);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Watch the call just enqueued on stream (dispatcher thread, device current). 0: not watched. */
static int watch(gpar__mpi_job *j, cudaStream_t stream) {
  nccl_state *s = j->c->nccl_state;
  cudaEvent_t ev;
  if (!s->watching || cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) return 0;
  if (cudaEventRecord(ev, stream) != cudaSuccess) {
    cudaEventDestroy(ev);
    return 0;
  }
  int ok = 1;
  pthread_mutex_lock(&s->mu);
  if (s->nw == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    watched *w = realloc(s->w, sizeof *w * (size_t)cap);
    if (w) {
      s->w = w;
      s->cap = cap;
    }
  }
  if (s->nw < s->cap) {
    atomic_fetch_add(&j->watched, 1);
    s->w[s->nw++] = (watched){ev, gpar_now(), j};
  } else {
    ok = 0;
  }
  pthread_mutex_unlock(&s->mu);
  if (!ok) cudaEventDestroy(ev);
  return ok;
}

/* Wait until comm's pending non-blocking work is done or deadline passes; its state. */
static ncclResult_t settle(ncclComm_t comm, double deadline) {
  ncclResult_t ae = ncclInProgress;
  while (ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclInProgress && gpar_now() < deadline) sched_yield();
  return ae;
}

static void state_free(nccl_state *s) {
  if (!s) return;
  free(s->cuda_index);
  free(s->tokens);
  free(s->w);
  free(s);
}

/* 1 when this rank wants NCCL: every member a CUDA device (ok: nothing failed so far). */
static int all_cuda(gpar__mpi_ctx *c, int ok) {
  const char *e = getenv("GPAR_COMM_STAGED");
  /* Synchronous mode runs each member's op inside its submit: several local members would wait
   * on each other, so those go through MPI. */
  int mine = ok && !(e && atoi(e)) && !(c->synchronous && c->nlocal > 1);
  for (int i = 0; i < c->nlocal && mine; i++) {
    gpar_device_props p;
    mine = gpar_device_info(c->eng, c->devs[i], &p) == GPAR_OK && p.backend_id == GPAR_BACKEND_CUDA;
  }
  return mine;
}

/* The state of c's local members, their CUDA ordinals filled in; NULL when out of memory. */
static nccl_state *state_new(gpar__mpi_ctx *c) {
  nccl_state *s = calloc(1, sizeof *s + sizeof s->comms[0] * (size_t)c->nlocal);
  if (s) {
    s->tokens = calloc((size_t)c->nlocal, sizeof *s->tokens);
    s->cuda_index = calloc((size_t)c->nlocal, sizeof *s->cuda_index);
  }
  if (!s || !s->tokens || !s->cuda_index) {
    state_free(s);
    return NULL;
  }
  s->n = c->nlocal;
  for (int i = 0; i < c->nlocal; i++) {
    gpar_device_props p;
    gpar_device_info(c->eng, c->devs[i], &p);
    s->cuda_index[i] = p.backend_index;
  }
  return s;
}

/* Join every local member to the NCCL communicator of id, in one group, and wait (at most the
 * timeout) for the non-blocking initialisation of every rank's. */
static int comms_init(gpar__mpi_ctx *c, nccl_state *s, ncclUniqueId id) {
  int prev = 0;
  cudaGetDevice(&prev);
  ncclResult_t r = ncclGroupStart();
  for (int i = 0; i < c->nlocal && (r == ncclSuccess || r == ncclInProgress); i++) {
    cudaSetDevice(s->cuda_index[i]);
#if defined(NCCL_CONFIG_INITIALIZER)
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0; /* calls return at once; the watchdog can abort a stuck one */
    r = ncclCommInitRankConfig(&s->comms[i], c->nmembers, id, c->first + i, &cfg);
#else
    r = ncclCommInitRank(&s->comms[i], c->nmembers, id, c->first + i);
#endif
  }
  ncclResult_t r2 = ncclGroupEnd();
  if (r == ncclSuccess || r == ncclInProgress) r = r2;
  double deadline = gpar_now() + atomic_load(&c->timeout);
  for (int i = 0; i < c->nlocal && (r == ncclSuccess || r == ncclInProgress); i++)
    if (s->comms[i]) r = settle(s->comms[i], deadline);
  cudaSetDevice(prev);
  if (r == ncclSuccess) return GPAR_OK;
  return r == ncclInProgress ? gpar__mpi_fail(GPAR_ETIMEDOUT, "ncclCommInitRankConfig: not complete after %g s",
                                              atomic_load(&c->timeout))
                             : nccl_fail(r, "ncclCommInitRankConfig");
}

int gpar__mpi_nccl_setup(gpar__mpi_ctx *c, int ok) {
  c->nccl = 0;
  if (!gpar__mpi_agree(c->mc, all_cuda(c, ok))) return GPAR_OK;
  struct {
    int ok;
    ncclUniqueId id;
  } msg;
  memset(&msg, 0, sizeof msg);
  msg.ok = 1;
  if (c->rank == 0) msg.ok = ncclGetUniqueId(&msg.id) == ncclSuccess;
  MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, c->mc); /* every rank learns whether it worked */
  if (!msg.ok) return gpar__mpi_fail(GPAR_EBACKEND, "ncclGetUniqueId failed on rank 0");
  nccl_state *s = state_new(c);
  if (!s) return gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  int st = comms_init(c, s, msg.id);
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++) st = gpar_buffer_create(c->eng, GPAR_HOST, 64, &s->tokens[i]);
  if (st == GPAR_OK) st = gpar_buffer_create(c->eng, GPAR_HOST, 64, &s->check_token);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  pthread_rwlock_init(&s->use, NULL);
  atomic_init(&s->aborting, 0);
  atomic_init(&s->abort_done, 0);
  c->nccl_state = s;
  c->nccl = st == GPAR_OK;
  if (st == GPAR_OK) s->watching = pthread_create(&s->watchdog, NULL, watchdog, c) == 0;
  if (st == GPAR_OK && !s->watching)
    st = gpar__mpi_fail(GPAR_ENOMEM, "gpar_comm_create_mpi: cannot start the NCCL watchdog thread");
  return st;
}

/* The user op of one member: enqueue its NCCL call on the device's stream (in place). Returns
 * GPAR_OK whether or not the call was issued (the call may still run on the stream): the check
 * op reports the collective's status. */
static int nccl_run(const gpar_native *nat, void *arg) {
  gpar__mpi_member *m = arg;
  gpar__mpi_job *j = m->j;
  gpar__mpi_ctx *c = j->c;
  nccl_state *s = c->nccl_state;
  if (!gpar__mpi_gate_wait(j)) return GPAR_OK; /* the call failed to submit every op: issue none */
  cudaStream_t stream = (cudaStream_t)nat->stream;
  ncclDataType_t dt = j->dtype == GPAR_FLOAT ? ncclFloat : ncclDouble;
  ncclRedOp_t op = j->op == GPAR_MAX ? ncclMax : j->op == GPAR_MIN ? ncclMin : ncclSum;
  char *p = j->ptrs[m->i], *mine = p + (size_t)(c->first + m->i) * j->count * j->esize;
  ncclResult_t r = ncclInvalidUsage;
  int issued = 0;
  pthread_rwlock_rdlock(&s->use);
  ncclComm_t comm = atomic_load(&s->aborting) ? NULL : s->comms[m->i];
  if (comm) {
    switch (j->kind) {
    case GPAR_COLL_ALLREDUCE: r = ncclAllReduce(p, p, j->count, dt, op, comm, stream); break;
    case GPAR_COLL_BROADCAST: r = ncclBroadcast(p, p, j->count, dt, j->root, comm, stream); break;
    case GPAR_COLL_REDUCE_SCATTER: r = ncclReduceScatter(p, mine, j->count, dt, op, comm, stream); break;
    default: r = ncclAllGather(mine, p, j->count, dt, comm, stream); break;
    }
    /* Non-blocking: the enqueue may finish later (it may wait for peers to connect). */
    double start = gpar_now();
    while (r == ncclInProgress && !atomic_load(&s->aborting) && gpar_now() - start <= j->timeout) {
      sched_yield();
      if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) r = ncclInternalError;
    }
    issued = r == ncclSuccess;
    if (issued) {
      atomic_fetch_add(&j->issued, 1);
      watch(j, stream);
    }
  }
  pthread_rwlock_unlock(&s->use);
  if (comm && !issued) {
    char why[256];
    snprintf(why, sizeof why, "%s #%lu: NCCL call of member %d %s", gpar__mpi_kind_name(j->kind), j->seq,
             c->first + m->i, r == ncclInProgress ? "still not enqueued after the timeout" : ncclGetErrorString(r));
    if (r != ncclInProgress) atomic_store(&j->status, (int)r);
    nccl_abort(c, why); /* the other members' calls would wait for it forever */
  }
  return GPAR_OK;
}

/* The check op: after every member's op of the collective. Fails its buffers when the
 * collective was aborted or not issued, once the abort has returned. */
static int nccl_check(const gpar_native *nat, void *arg) {
  (void)nat;
  gpar__mpi_job *j = arg;
  gpar__mpi_ctx *c = j->c;
  nccl_state *s = c->nccl_state;
  int st = GPAR_OK;
  int failed = atomic_load(&j->aborted) || atomic_load(&j->issued) < j->n;
  if (failed || atomic_load(&s->aborting))
    while (atomic_load(&s->aborting) && !atomic_load(&s->abort_done)) sched_yield();
  if (atomic_load(&j->status) != 0)
    st = gpar__mpi_fail(GPAR_EBACKEND, "%s #%lu on rank %d through NCCL: %s", gpar__mpi_kind_name(j->kind), j->seq,
                        c->rank, ncclGetErrorString((ncclResult_t)atomic_load(&j->status)));
  else if (failed)
    st = gpar__mpi_fail(GPAR_ETIMEDOUT,
                        "%s #%lu on rank %d of %d through NCCL: %s (timeout %g s); the NCCL communicator was aborted "
                        "and the communicator is broken",
                        gpar__mpi_kind_name(j->kind), j->seq, c->rank, c->size,
                        atomic_load(&j->aborted) ? "aborted while in flight" : "not issued", j->timeout);
  atomic_store(&j->done, 1);
  return st;
}

int gpar__mpi_nccl_collective(gpar__mpi_ctx *c, const gpar_coll *a) {
  nccl_state *s = c->nccl_state;
  gpar__mpi_job *j = gpar__mpi_coll_job_new(c, a);
  if (!j) return GPAR_ENOMEM;
  gpar_buffer *w = calloc((size_t)c->nlocal + 1, sizeof *w);
  if (!w) {
    atomic_store(&j->done, 1);
    return gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  }
  for (int i = 0; i < c->nlocal; i++) {
    j->ptrs[i] = (char *)gpar_buffer_native(a->bufs[i]) + a->offs[i] * j->esize;
    j->members[i] = (gpar__mpi_member){j, i};
    w[i] = a->bufs[i];
  }
  w[c->nlocal] = s->check_token;
  int st = GPAR_OK, queued = 0;
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++) {
    gpar_buffer mw[2] = {a->bufs[i], s->tokens[i]};
    st = gpar_submit(c->eng, c->devs[i], nccl_run, &j->members[i], mw, 1, mw, 2);
    queued += st == GPAR_OK;
  }
  /* The check op reads the buffers too, so that it never succeeds over a failed one. */
  if (st == GPAR_OK) st = gpar_submit(c->eng, GPAR_HOST, nccl_check, j, w, c->nlocal, w, c->nlocal + 1);
  atomic_store(&j->gate, st == GPAR_OK ? GPAR__GATE_SEALED : GPAR__GATE_CANCELLED);
  if (st && !queued) atomic_store(&j->done, 1); /* else freed at destroy: queued member ops use it */
  free(w);
  return st;
}

void gpar__mpi_nccl_destroy(gpar__mpi_ctx *c) {
  nccl_state *s = c->nccl_state;
  if (!s) return;
  /* The last collectives are done (a stuck one is aborted by the watchdog after the timeout). */
  for (int i = 0; i < s->n; i++)
    if (s->tokens[i].id) gpar_wait(s->tokens[i]);
  if (s->check_token.id) gpar_wait(s->check_token);
  if (s->watching) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->watchdog, NULL);
  }
  for (int i = 0; i < s->nw; i++) {
    cudaEventDestroy(s->w[i].ev);
    atomic_fetch_sub(&s->w[i].j->watched, 1);
  }
  s->nw = 0;
  int prev = 0;
  cudaGetDevice(&prev);
  double deadline = gpar_now() + atomic_load(&c->timeout);
  for (int i = 0; i < s->n; i++) {
    if (!s->comms[i]) continue; /* aborted */
    cudaSetDevice(s->cuda_index[i]);
    ncclResult_t ae = ncclSuccess;
    ncclCommGetAsyncError(s->comms[i], &ae);
    if (ae == ncclSuccess || ae == ncclInProgress) {
      ae = ncclCommFinalize(s->comms[i]); /* flushes; non-blocking: settle below */
      if (ae == ncclSuccess || ae == ncclInProgress) ae = settle(s->comms[i], deadline);
    }
    if (ae == ncclSuccess)
      ncclCommDestroy(s->comms[i]);
    else
      ncclCommAbort(s->comms[i]);
    s->comms[i] = NULL;
  }
  cudaSetDevice(prev);
  pthread_rwlock_destroy(&s->use);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  for (int i = 0; i < s->n; i++)
    if (s->tokens[i].id) gpar_buffer_release(s->tokens[i]);
  if (s->check_token.id) gpar_buffer_release(s->check_token);
  state_free(s);
  c->nccl_state = NULL;
}
