/* cuda_nccl.c: collectives between CUDA devices of one process through NCCL, on a
 * non-blocking clique that any thread can check and abort (the watchdog's abort). Calls
 * cuda_errors.c; maps NCCL's own statuses here (the only file built against NCCL).
 *
 * comm_create makes the clique: one ncclCommInitRankConfig per member (blocking = 0) inside one
 * ncclGroupStart/End, with one ncclGetUniqueId, then polls ncclCommGetAsyncError until every
 * member leaves ncclInProgress, as NCCL asks of non-blocking communicators. Each member's part
 * of a collective is enqueued by that device's own dispatcher thread on the lane the core
 * picked (the peer lane): one thread per rank, NCCL's supported model, so no group call is
 * needed; the core issues every communicator's collectives in the same order on all members.
 * On a non-blocking communicator NCCL launches the kernel from a thread of its own and the call
 * returns ncclInProgress meanwhile, so coll polls the member's state until the launch is done
 * (the core records the op's event right after coll returns: it must follow the kernel). That
 * takes microseconds; it takes longer only when NCCL has a connection to make at this call,
 * which needs every member (see warm_up), and never longer than GPAR_COMM_TIMEOUT: then the
 * clique is aborted and the op fails with GPAR_ETIMEDOUT.
 *
 * Failure and abort (the model is PyTorch's ProcessGroupNCCL watchdog): comm_check reports a
 * member's ncclCommGetAsyncError failure; comm_abort calls ncclCommAbort on every member. A
 * collective's kernels in flight then see NCCL's abort flag and return (no CUDA error: their
 * lane goes on and the event behind them completes, see cuda_events.c); NCCL frees the clique
 * at the last member's abort, after waiting for every member's streams. The clique's first
 * failure (or the abort) stays: every later coll, comm_check and coll already waiting report it
 * without calling NCCL again.
 *
 * Locks: each member's lock is held around every NCCL call on its communicator (NCCL's calls on
 * one communicator are not thread-safe: ncclCommGetAsyncError joins the launch thread, the
 * abort frees the communicator) and never while waiting; abort_mu makes a second abort wait
 * for the first; fail_mu guards the recorded failure. Built only when configure found NCCL
 * (HAVE_NCCL); otherwise these weak entries are NULL and CUDA collectives are staged through
 * host memory. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nccl.h>

#include "cuda_internal.h"

/* Looks at a member's state with only a yield in between, before the sleeps start. */
#define NCCL_POLL_SPINS 1000
/* Longest sleep between two looks (ns). */
#define NCCL_POLL_MAX_NS 1000000L
/* Making a clique waits at least this long (s) before giving up: a process's first NCCL init can
 * take seconds (topology, plugins), and a short GPAR_COMM_TIMEOUT is meant for collectives. */
#define NCCL_CREATE_MIN_WAIT 60.0

struct cuda_nccl_member {
  pthread_mutex_t mu; /* around every NCCL call on comm; never held while waiting */
  ncclComm_t comm;    /* NULL: never made */
  int ordinal;        /* its CUDA device */
  int gone;           /* comm was aborted or destroyed: NCCL frees it; never touched again */
};

/* A clique: m[r] is rank r (member r of the communicator). */
struct cuda_nccl {
  int n;
  double timeout;           /* GPAR_COMM_TIMEOUT, seconds */
  pthread_mutex_t abort_mu; /* one abort at a time */
  pthread_mutex_t fail_mu;  /* fail, why */
  int fail;                 /* GPAR_OK, or the clique's first failure */
  char why[512];
  struct cuda_nccl_member m[];
};

/* ---- statuses, failures, time ---- */

static int nccl_status(ncclResult_t r) {
  return r == ncclSystemError ? GPAR_ENOMEM : r == ncclInvalidArgument || r == ncclInvalidUsage ? GPAR_EINVAL : GPAR_EBACKEND;
}

static int nccl_check(ncclResult_t r, const char *what) {
  if (r == ncclSuccess) return GPAR_OK;
  return gpar__errorf(nccl_status(r), "%s: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(NULL));
}

/* Record the clique's failure; the first one stays. */
static void clique_fail(struct cuda_nccl *c, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void clique_fail(struct cuda_nccl *c, int st, const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&c->fail_mu);
  if (c->fail == GPAR_OK) {
    c->fail = st;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&c->fail_mu);
}

/* The clique's failure, quietly (GPAR_OK: none); *why gets its message when there is one. */
static int clique_status(struct cuda_nccl *c, char *why, size_t len) {
  pthread_mutex_lock(&c->fail_mu);
  int st = c->fail;
  if (st && why) snprintf(why, len, "%s", c->why);
  pthread_mutex_unlock(&c->fail_mu);
  return st;
}

/* GPAR_OK, or the clique's failure reported again for the calling thread. */
static int clique_failed(struct cuda_nccl *c) {
  char why[sizeof c->why];
  int st = clique_status(c, why, sizeof why);
  return st ? gpar__errorf(st, "%s", why) : GPAR_OK;
}

/* Member r failed with r's NCCL state ae: the clique's failure, reported. */
static int member_failed(struct cuda_nccl *c, int r, ncclResult_t ae, const char *what) {
  clique_fail(c, nccl_status(ae), "NCCL member %d (CUDA device %d): %s: %s (%s)", r, c->m[r].ordinal, what,
              ncclGetErrorString(ae), ncclGetLastError(NULL));
  return clique_failed(c);
}

/* Between two looks: a yield for the first NCCL_POLL_SPINS, then sleeps doubling from 10 us. */
static void nap(long *looks) {
  if (++*looks <= NCCL_POLL_SPINS) {
    sched_yield();
    return;
  }
  long ns = 10000L << (*looks - NCCL_POLL_SPINS < 7 ? *looks - NCCL_POLL_SPINS : 7);
  struct timespec t = {0, ns < NCCL_POLL_MAX_NS ? ns : NCCL_POLL_MAX_NS};
  nanosleep(&t, NULL);
}

/* NCCL switches the calling thread's current device (init, abort, destroy): the caller's is put
 * back afterwards. */
static int device_get(void) {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    (void)cudaGetLastError();
    d = -1;
  }
  return d;
}

static void device_put(int d) {
  if (d >= 0 && cudaSetDevice(d) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- members ---- */

enum { MEMBER_READY, MEMBER_BUSY, MEMBER_FAILED, MEMBER_GONE };

/* One look at member r: ncclCommGetAsyncError under its lock (*ae: the state). */
static int member_state(struct cuda_nccl *c, int r, ncclResult_t *ae) {
  struct cuda_nccl_member *m = &c->m[r];
  int s = MEMBER_GONE;
  *ae = ncclSuccess;
  pthread_mutex_lock(&m->mu);
  if (!m->gone && m->comm) {
    ncclResult_t q = ncclCommGetAsyncError(m->comm, ae);
    if (q != ncclSuccess) *ae = q;
    s = *ae == ncclSuccess ? MEMBER_READY : *ae == ncclInProgress ? MEMBER_BUSY : MEMBER_FAILED;
  }
  pthread_mutex_unlock(&m->mu);
  return s;
}

/* Wait until member r's last NCCL call is no longer in progress: NCCL asks this of a
 * non-blocking communicator before its next call and before anything else is enqueued on the
 * call's stream. GPAR_OK when the call succeeded; its failure; the clique's failure once the
 * clique is aborted or failed meanwhile; GPAR_ETIMEDOUT past deadline (recorded as the
 * clique's failure: the caller aborts the clique). The member's lock is not held in between. */
static int member_wait(struct cuda_nccl *c, int r, double deadline, const char *what) {
  long looks = 0;
  const double t0 = gpar__now();
  for (;;) {
    ncclResult_t ae;
    switch (member_state(c, r, &ae)) {
    case MEMBER_READY: return GPAR_OK;
    case MEMBER_FAILED: return member_failed(c, r, ae, what);
    case MEMBER_GONE:
      if (clique_status(c, NULL, 0) == GPAR_OK)
        clique_fail(c, GPAR_EBACKEND, "NCCL member %d (CUDA device %d): %s: no communicator", r, c->m[r].ordinal, what);
      return clique_failed(c);
    default: break;
    }
    if (clique_status(c, NULL, 0) != GPAR_OK) return clique_failed(c); /* an abort is on its way */
    double t = gpar__now();
    if (t > deadline) {
      clique_fail(c, GPAR_ETIMEDOUT,
                  "NCCL member %d (CUDA device %d): %s still in progress after %.0f s (GPAR_COMM_TIMEOUT %.0f s); "
                  "the communicator is aborted",
                  r, c->m[r].ordinal, what, t - t0, c->timeout);
      return clique_failed(c);
    }
    nap(&looks);
  }
}

/* End every member still there with end (ncclCommAbort or ncclCommDestroy), each under its
 * lock so no NCCL call races it; a failure is logged, the member is gone either way. */
static void members_end(struct cuda_nccl *c, ncclResult_t (*end)(ncclComm_t), const char *what) {
  for (int r = 0; r < c->n; r++) {
    struct cuda_nccl_member *m = &c->m[r];
    pthread_mutex_lock(&m->mu);
    if (!m->gone && m->comm) {
      ncclResult_t res = end(m->comm);
      if (res != ncclSuccess)
        gpar__log("cuda: %s (member %d, CUDA device %d): %s", what, r, m->ordinal, ncclGetErrorString(res));
      m->gone = 1;
    }
    pthread_mutex_unlock(&m->mu);
  }
}

/* ncclCommAbort on every member still there, under its lock so no NCCL call races it. Kernels
 * in flight see the abort flag and return; at the last member NCCL waits for every member's
 * streams and frees the whole clique. A second caller waits for the first and finds nothing
 * left. Any thread; its current device is kept. */
static void clique_abort(struct cuda_nccl *c) {
  int dev0 = device_get();
  pthread_mutex_lock(&c->abort_mu);
  members_end(c, ncclCommAbort, "ncclCommAbort");
  pthread_mutex_unlock(&c->abort_mu);
  device_put(dev0);
}

/* Nothing of NCCL's is left (every member gone or never made). */
static void clique_free(struct cuda_nccl *c) {
  for (int r = 0; r < c->n; r++) pthread_mutex_destroy(&c->m[r].mu);
  pthread_mutex_destroy(&c->abort_mu);
  pthread_mutex_destroy(&c->fail_mu);
  free(c);
}

/* Poll stream s until its work is done (GPAR_ETIMEDOUT past deadline). */
static int stream_wait(cudaStream_t s, double deadline, const char *what) {
  long looks = 0;
  const double t0 = gpar__now();
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return GPAR_OK;
    if (e != cudaErrorNotReady) return gpar__cuda_check(e, what);
    (void)cudaGetLastError();
    double t = gpar__now();
    if (t > deadline) return gpar__errorf(GPAR_ETIMEDOUT, "%s: not done after %.0f s", what, t - t0);
    nap(&looks);
  }
}

/* ---- creation ---- */

/* Every member's communicator, non-blocking, made in one group from this thread; returns once
 * every member is ready. */
static int clique_init(struct cuda_nccl *c) {
  ncclUniqueId id;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  int st = nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (st) return st;
  if ((st = nccl_check(ncclGroupStart(), "ncclGroupStart"))) return st;
  ncclResult_t res = ncclSuccess;
  for (int r = 0; r < c->n && st == GPAR_OK && res == ncclSuccess; r++)
    if ((st = gpar__cuda_check(cudaSetDevice(c->m[r].ordinal), "cudaSetDevice")) == GPAR_OK)
      res = ncclCommInitRankConfig(&c->m[r].comm, c->n, id, r, &cfg);
  /* The group is ended even after a failure: members already in it start their init, which then
   * waits for the missing ones until the caller's abort. */
  ncclResult_t end = ncclGroupEnd();
  if (st) return st;
  if (res == ncclSuccess && end != ncclInProgress) res = end;
  if ((st = nccl_check(res, "ncclCommInitRankConfig (non-blocking)"))) return st;
  double deadline = gpar__now() + (c->timeout > NCCL_CREATE_MIN_WAIT ? c->timeout : NCCL_CREATE_MIN_WAIT);
  for (int r = 0; r < c->n && st == GPAR_OK; r++) st = member_wait(c, r, deadline, "ncclCommInitRankConfig");
  return st;
}

/* One tiny allreduce on every member, grouped from this thread, so NCCL makes now the
 * connections it makes at a communicator's first collective (runtime connection, which then
 * waits for every member). Later, each device's dispatcher issues its own member's calls, and
 * the first of them would otherwise hold that dispatcher until the other devices' dispatchers
 * reach the same collective. NCCL connects each algorithm at its first use: one that a later
 * collective's size makes NCCL pick, and that this allreduce did not use, still connects there
 * (bounded by GPAR_COMM_TIMEOUT like any launch). On failure the clique is aborted before the
 * buffers are freed (cudaFree waits for the device). */
static int warm_up(struct cuda_nccl *c) {
  const int n = c->n;
  if (n < 1) return GPAR_OK;
  float **buf = calloc((size_t)n, sizeof *buf);
  cudaStream_t *s = calloc((size_t)n, sizeof *s);
  int st = buf && s ? GPAR_OK : gpar__errorf(GPAR_ENOMEM, "out of host memory for the NCCL warm-up");
  for (int r = 0; r < n && st == GPAR_OK; r++) {
    if ((st = gpar__cuda_check(cudaSetDevice(c->m[r].ordinal), "cudaSetDevice"))) break;
    if ((st = gpar__cuda_check(cudaMalloc((void **)&buf[r], sizeof(float)), "cudaMalloc (NCCL warm-up)"))) break;
    st = gpar__cuda_check(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  if (st == GPAR_OK && (st = nccl_check(ncclGroupStart(), "ncclGroupStart")) == GPAR_OK) {
    ncclResult_t res = ncclSuccess;
    for (int r = 0; r < n && res == ncclSuccess; r++)
      res = ncclAllReduce(buf[r], buf[r], 1, ncclFloat, ncclSum, c->m[r].comm, s[r]);
    ncclResult_t end = ncclGroupEnd();
    if (res == ncclSuccess && end != ncclInProgress) res = end;
    st = nccl_check(res, "ncclAllReduce (warm-up)");
  }
  double deadline = gpar__now() + (c->timeout > NCCL_CREATE_MIN_WAIT ? c->timeout : NCCL_CREATE_MIN_WAIT);
  for (int r = 0; r < n && st == GPAR_OK; r++) st = member_wait(c, r, deadline, "ncclAllReduce (warm-up)");
  for (int r = 0; r < n && st == GPAR_OK; r++) st = stream_wait(s[r], deadline, "ncclAllReduce (warm-up)");
  if (st) clique_abort(c);
  for (int r = 0; r < n && buf && s; r++) {
    if (cudaSetDevice(c->m[r].ordinal) != cudaSuccess) continue;
    if (s[r]) cudaStreamDestroy(s[r]);
    if (buf[r]) cudaFree(buf[r]);
  }
  (void)cudaGetLastError();
  free(buf);
  free(s);
  return st;
}

int gpar__cuda_comm_create(gpar__backend *be, const int *bidx, int n, void **out) {
  if (n < 1) return gpar__errorf(GPAR_EINVAL, "NCCL communicator of %d members", n);
  struct cuda_nccl *c = calloc(1, sizeof *c + sizeof c->m[0] * (size_t)n);
  if (!c) return gpar__errorf(GPAR_ENOMEM, "out of host memory for an NCCL communicator");
  c->n = n;
  c->timeout = be->comm_timeout > 0 ? be->comm_timeout : 300.0;
  pthread_mutex_init(&c->abort_mu, NULL);
  pthread_mutex_init(&c->fail_mu, NULL);
  for (int r = 0; r < n; r++) {
    pthread_mutex_init(&c->m[r].mu, NULL);
    c->m[r].ordinal = bidx[r];
  }
  int dev0 = device_get();
  int st = clique_init(c);
  if (st == GPAR_OK) st = warm_up(c);
  if (st) clique_abort(c); /* every member made: its failure, or its wait for the others, ends */
  device_put(dev0);
  if (st) {
    clique_free(c);
    return st;
  }
  *out = c;
  return GPAR_OK;
}

/* ---- the entries ---- */

void gpar__cuda_comm_destroy(void *comm) {
  struct cuda_nccl *c = comm;
  int dev0 = device_get();
  /* A member whose last call is in progress or failed would keep ncclCommDestroy waiting for
   * work that may never end: then the whole clique is aborted instead (ncclCommDestroy on some
   * members and ncclCommAbort on others would leave the destroyed ones' kernels running). */
  int healthy = clique_status(c, NULL, 0) == GPAR_OK;
  double deadline = gpar__now() + c->timeout;
  for (int r = 0; r < c->n && healthy; r++) healthy = member_wait(c, r, deadline, "ncclCommDestroy") == GPAR_OK;
  if (!healthy) clique_abort(c);
  members_end(c, ncclCommDestroy, "ncclCommDestroy");
  device_put(dev0);
  clique_free(c);
}

/* Any thread. A member whose lock is busy (its dispatcher in a call, or an abort) is looked at
 * next time rather than waited for. */
int gpar__cuda_comm_check(void *comm) {
  struct cuda_nccl *c = comm;
  int st = clique_failed(c);
  for (int r = 0; r < c->n && st == GPAR_OK; r++) {
    struct cuda_nccl_member *m = &c->m[r];
    ncclResult_t ae = ncclSuccess;
    if (pthread_mutex_trylock(&m->mu)) continue;
    if (!m->gone && m->comm) {
      ncclResult_t q = ncclCommGetAsyncError(m->comm, &ae);
      if (q != ncclSuccess) ae = q;
    }
    pthread_mutex_unlock(&m->mu);
    if (ae != ncclSuccess && ae != ncclInProgress) st = member_failed(c, r, ae, "ncclCommGetAsyncError");
  }
  return st;
}

/* Any thread. The reason is the clique's failure when comm_check found one; otherwise the core
 * aborts because a collective outlived GPAR_COMM_TIMEOUT. */
void gpar__cuda_comm_abort(void *comm) {
  struct cuda_nccl *c = comm;
  clique_fail(c, GPAR_ETIMEDOUT,
              "NCCL communicator aborted: a collective on it did not complete within %.0f s (GPAR_COMM_TIMEOUT)",
              c->timeout);
  clique_abort(c);
}

/* One member's part, in place (NCCL's in-place layouts for reduce-scatter and all-gather).
 * Returns once the kernel is enqueued on the lane (GPAR_OK), or once nothing of the call can run
 * any more: a call that failed, or did not launch within GPAR_COMM_TIMEOUT, aborts the clique
 * (NCCL's non-blocking communicators cannot be used after an error anyway), so no kernel of it
 * touches the op's buffers after the op failed. Nothing is called on a failed or aborted
 * clique: its failure is returned. */
int gpar__cuda_coll(gpar__bdev *dev, int lane, const gpar__coll_args *a) {
  struct cuda_nccl *c = a->comm;
  struct cuda_nccl_member *m = &c->m[a->rank];
  cudaStream_t s = dev->d.lane[lane];
  const ncclDataType_t dt = a->dtype == GPAR_DOUBLE      ? ncclDouble
                            : a->dtype == GPAR_HALF      ? ncclFloat16
                            : a->dtype == GPAR_BFLOAT16  ? ncclBfloat16
                            : a->dtype == GPAR_INT32     ? ncclInt32
                                                         : ncclFloat;
  ncclRedOp_t op = a->op == GPAR_MAX ? ncclMax : a->op == GPAR_MIN ? ncclMin : ncclSum;
  char *p = (char *)a->mem + a->off, *mine = p + (size_t)a->rank * a->count * (size_t)a->elem_size;
  const char *what = a->kind == GPAR_COLL_ALLREDUCE        ? "ncclAllReduce"
                     : a->kind == GPAR_COLL_BROADCAST      ? "ncclBroadcast"
                     : a->kind == GPAR_COLL_REDUCE_SCATTER ? "ncclReduceScatter"
                                                           : "ncclAllGather";
  ncclResult_t r = ncclSuccess;
  int gone;
  int st = clique_failed(c);
  if (st) return st;
  pthread_mutex_lock(&m->mu);
  gone = m->gone || !m->comm;
  if (!gone) switch (a->kind) {
    case GPAR_COLL_ALLREDUCE: r = ncclAllReduce(p, p, a->count, dt, op, m->comm, s); break;
    case GPAR_COLL_BROADCAST: r = ncclBroadcast(p, p, a->count, dt, a->root, m->comm, s); break;
    case GPAR_COLL_REDUCE_SCATTER: r = ncclReduceScatter(p, mine, a->count, dt, op, m->comm, s); break;
    default: r = ncclAllGather(mine, p, a->count, dt, m->comm, s); break;
    }
  pthread_mutex_unlock(&m->mu);
  if (gone) /* aborted: the clique's failure is recorded first */
    return (st = clique_failed(c)) ? st : gpar__errorf(GPAR_EBACKEND, "%s: NCCL member %d: no communicator", what, a->rank);
  /* The launch is done once the member leaves ncclInProgress; a failure found by NCCL's own
   * threads (a peer lost, a network error) shows there too. */
  if (r != ncclSuccess && r != ncclInProgress)
    st = member_failed(c, a->rank, r, what);
  else
    st = member_wait(c, a->rank, gpar__now() + c->timeout, what);
  if (st) {
    clique_abort(c);
    st = clique_failed(c);
  }
  return st;
}
