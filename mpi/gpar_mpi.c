/* gpar_mpi.c: libgpar_mpi, communicators across MPI ranks (issue 15). A transport for the core's
 * communicators (gpar_comm_create_transport) built on the public API only: every MPI operation
 * is one CPU op (gpar_submit on GPAR_HOST) that writes the communicator's token, so operations
 * run in program order, one at a time; device members are staged through GPAR_HOST (pinned)
 * buffers with gpar_copy. MPI never sees memory the engine may hand on: the op copies its input
 * into the communicator's own scratch memory, starts the nonblocking MPI call on it, polls
 * MPI_Test until it is done or the timeout passes, and copies the result out. A request that
 * times out and cannot be cancelled keeps its memory on the process-wide abandoned list until
 * MPI completes it (see gpar_mpi.h). */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpar_mpi.h"
#include "gpar_mpi_internal.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif

enum { JOB_SEND = 10, JOB_RECV = 11 };

/* MPI calls are serialised by this lock when MPI gives less than MPI_THREAD_MULTIPLE (the level
 * is process-wide: set by the first gpar_comm_create_mpi). */
static pthread_mutex_t mpi_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int mpi_serialised;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Record a failure for the calling thread (gpar_last_error) and return status. */
int gpar__mpi_fail(int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gpar_error_set(status, msg);
}

static int mpi_check(int rc, const char *what, const gpar__mpi_job *j) {
  if (rc == MPI_SUCCESS) return GPAR_OK;
  char es[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, es, &len);
  return gpar__mpi_fail(GPAR_EBACKEND, "%s (operation #%lu on rank %d): %s", what, j ? j->seq : 0UL,
                        j ? j->c->rank : -1, es);
}

static const char *job_name(int kind) {
  static const char *const n[] = {"gpar_allreduce", "gpar_broadcast", "gpar_reduce_scatter", "gpar_all_gather"};
  return kind == JOB_SEND ? "gpar_send" : kind == JOB_RECV ? "gpar_recv" : n[kind];
}

/* ---------------------------------------------------------------- MPI calls made from ops
 * Each takes mpi_mu when MPI is not MPI_THREAD_MULTIPLE. */

static int m_test(MPI_Request *req, int *flag, MPI_Status *status) {
  int ser = atomic_load(&mpi_serialised);
  if (ser) pthread_mutex_lock(&mpi_mu);
  int rc = MPI_Test(req, flag, status);
  if (ser) pthread_mutex_unlock(&mpi_mu);
  return rc;
}

/* Cancel req, then test it once: *flag set when it is complete (cancelled or not). */
static int m_cancel_test(MPI_Request *req, int *flag, MPI_Status *status) {
  int ser = atomic_load(&mpi_serialised);
  if (ser) pthread_mutex_lock(&mpi_mu);
  int rc = MPI_Cancel(req);
  if (rc == MPI_SUCCESS) rc = MPI_Test(req, flag, status);
  if (ser) pthread_mutex_unlock(&mpi_mu);
  return rc;
}

static void m_comm_free(MPI_Comm *mc) {
  int ser = atomic_load(&mpi_serialised);
  if (ser) pthread_mutex_lock(&mpi_mu);
  MPI_Comm_free(mc);
  if (ser) pthread_mutex_unlock(&mpi_mu);
}

/* Start the nonblocking MPI call of one step of a job (kind: what to start). */
enum { START_ALLREDUCE, START_BCAST, START_ALLGATHERV, START_ISEND, START_IRECV };
typedef struct start_args {
  int what;
  void *buf;
  int count, root, peer, tag;
  MPI_Datatype type;
  MPI_Op op;
  const int *counts, *displs;
} start_args;

static int m_start(MPI_Comm mc, const start_args *s, MPI_Request *req) {
  int ser = atomic_load(&mpi_serialised), rc;
  if (ser) pthread_mutex_lock(&mpi_mu);
  switch (s->what) {
  case START_ALLREDUCE: rc = MPI_Iallreduce(MPI_IN_PLACE, s->buf, s->count, s->type, s->op, mc, req); break;
  case START_BCAST: rc = MPI_Ibcast(s->buf, s->count, s->type, s->root, mc, req); break;
  case START_ALLGATHERV:
    rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s->buf, s->counts, s->displs, s->type, mc, req);
    break;
  case START_ISEND: rc = MPI_Isend(s->buf, s->count, s->type, s->peer, s->tag, mc, req); break;
  default: rc = MPI_Irecv(s->buf, s->count, s->type, s->peer, s->tag, mc, req); break;
  }
  if (ser) pthread_mutex_unlock(&mpi_mu);
  return rc;
}

/* ---------------------------------------------------------------- abandoned requests
 * A request that timed out and that MPI did not cancel may still read or write its memory when
 * a late rank joins. It stays here, with its memory, until MPI_Test says it is complete: tested
 * by every later libgpar_mpi call and op, by gpar_comm_destroy, and at MPI_Finalize (an
 * attribute of MPI_COMM_SELF). The MPI communicator of a destroyed gpar communicator is freed
 * once none of its requests is here any more. What is still here at MPI_Finalize stays
 * allocated (reachable from this list) for the life of the process. */

typedef struct gpar__mpi_commref {
  MPI_Comm mc;
  int pending;  /* abandoned requests on mc */
  int released; /* its gpar communicator is destroyed */
} commref;

typedef struct lost {
  struct lost *next;
  MPI_Request req;
  void *mem;
  commref *ref;
} lost;

static pthread_mutex_t lost_mu = PTHREAD_MUTEX_INITIALIZER;
static lost *lost_list;
static atomic_int lost_count;
static atomic_int mpi_finalizing; /* MPI_Finalize has begun: no more MPI calls from here */

/* Test every abandoned request; free what MPI has completed. */
static void lost_sweep(void) {
  if (atomic_load(&lost_count) == 0 || atomic_load(&mpi_finalizing)) return;
  pthread_mutex_lock(&lost_mu);
  for (lost **p = &lost_list; *p;) {
    lost *l = *p;
    int flag = 0;
    if (m_test(&l->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) flag = 1; /* failed: MPI let go of it */
    if (!flag) {
      p = &l->next;
      continue;
    }
    *p = l->next;
    atomic_fetch_sub(&lost_count, 1);
    free(l->mem);
    if (--l->ref->pending == 0 && l->ref->released) {
      m_comm_free(&l->ref->mc);
      free(l->ref);
    }
    free(l);
  }
  pthread_mutex_unlock(&lost_mu);
}

/* Keep req and its memory until MPI completes it. Returns 0 when out of host memory (then the
 * memory is never freed: MPI may still use it). */
static void *lost_unrecorded[64]; /* lost_add out of memory: kept reachable, never freed */
static atomic_int lost_nunrecorded;

static int lost_add(commref *ref, MPI_Request req, void *mem) {
  lost *l = malloc(sizeof *l);
  if (!l) {
    int k = atomic_fetch_add(&lost_nunrecorded, 1);
    if (k < 64) lost_unrecorded[k] = mem;
    return 0;
  }
  l->req = req;
  l->mem = mem;
  l->ref = ref;
  pthread_mutex_lock(&lost_mu);
  l->next = lost_list;
  lost_list = l;
  ref->pending++;
  atomic_fetch_add(&lost_count, 1);
  pthread_mutex_unlock(&lost_mu);
  return 1;
}

/* The gpar communicator is gone: free its MPI communicator now, or once its abandoned requests
 * are complete. */
static void commref_release(commref *ref) {
  pthread_mutex_lock(&lost_mu);
  ref->released = 1;
  int now = ref->pending == 0;
  pthread_mutex_unlock(&lost_mu);
  if (now) {
    m_comm_free(&ref->mc);
    free(ref);
  }
}

static int at_finalize(MPI_Comm comm, int keyval, void *attr, void *extra) {
  (void)comm, (void)keyval, (void)attr, (void)extra;
  lost_sweep();
  atomic_store(&mpi_finalizing, 1);
  return MPI_SUCCESS;
}

/* Test the abandoned requests at MPI_Finalize: MPI deletes MPI_COMM_SELF's attributes first. */
static void finalize_hook(void) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static int set;
  pthread_mutex_lock(&mu);
  int kv = MPI_KEYVAL_INVALID;
  if (!set && MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &kv, NULL) == MPI_SUCCESS) {
    set = MPI_Comm_set_attr(MPI_COMM_SELF, kv, NULL) == MPI_SUCCESS;
    MPI_Comm_free_keyval(&kv); /* freed by MPI once the attribute is deleted */
  }
  pthread_mutex_unlock(&mu);
}

/* ---------------------------------------------------------------- communicators per engine
 * Each communicator holds one CPU worker while one of its operations waits for other ranks (see
 * gpar_mpi.h): an engine gets at most gpar_config.host_threads of them. */

typedef struct eng_count {
  struct eng_count *next;
  gpar_engine *eng; /* engine handles are never reused by the process */
  int n;
} eng_count;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static eng_count *reg;

/* Add delta to eng's count of communicators unless that makes it exceed limit (limit <= 0: no
 * limit); returns the count before, or -1 when refused (or out of memory). */
static int reg_add(gpar_engine *eng, int delta, int limit) {
  pthread_mutex_lock(&reg_mu);
  eng_count **p = &reg;
  while (*p && (*p)->eng != eng) p = &(*p)->next;
  if (!*p && (*p = calloc(1, sizeof **p))) (*p)->eng = eng;
  int before = *p ? (*p)->n : -1;
  if (before >= 0 && limit > 0 && before + delta > limit) before = -1;
  if (before >= 0) (*p)->n += delta;
  if (*p && (*p)->n == 0) {
    eng_count *e = *p;
    *p = e->next;
    free(e);
  }
  pthread_mutex_unlock(&reg_mu);
  return before;
}

/* ---------------------------------------------------------------- waiting */

/* Poll req until done or the job's timeout passes: yield between tests for 1 ms (latency), then
 * sleep 20 us between tests. On timeout a send or receive is cancelled; a request MPI does not
 * cancel (every collective; a send in Open MPI; a receive already matched) goes to the abandoned
 * list with the scratch memory it uses, and the communicator is broken. */
static int job_wait(gpar__mpi_job *j, MPI_Request *req, const char *what) {
  gpar__mpi_ctx *c = j->c;
  double start = now_s();
  for (;;) {
    int flag = 0;
    int rc = m_test(req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_check(rc, what, j);
    if (flag) return GPAR_OK;
    double t = now_s();
    if (t - start > j->timeout) break;
    if (t - start > 1e-3) { /* first 1 ms: yield only (latency); then sleep between tests */
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
  int p2p = j->kind == JOB_SEND || j->kind == JOB_RECV;
  if (p2p) {
    MPI_Status status;
    int flag = 0, cancelled = 0;
    if (m_cancel_test(req, &flag, &status) == MPI_SUCCESS && flag) {
      MPI_Test_cancelled(&status, &cancelled);
      if (!cancelled) return GPAR_OK; /* it completed at the deadline */
      return gpar__mpi_fail(GPAR_ETIMEDOUT,
                            "%s #%lu on rank %d of %d: %s with rank %d, tag %d, not complete after %g s: cancelled. "
                            "Every rank must issue the same operations on a communicator in the same order",
                            job_name(j->kind), j->seq, c->rank, c->size, what, j->peer, j->tag, j->timeout);
    }
  }
  /* MPI keeps the request: its memory is MPI's until MPI completes it. */
  lost_add(c->ref, *req, c->scratch);
  c->scratch = NULL;
  c->scratch_bytes = 0;
  atomic_store(&c->broken, 1);
  return gpar__mpi_fail(
      GPAR_ETIMEDOUT,
      "%s #%lu on rank %d of %d: %s not complete after %g s%s. Every rank must issue the same operations on a "
      "communicator in the same order (a rank whose input failed skips its part); the communicator is broken from "
      "now on",
      job_name(j->kind), j->seq, c->rank, c->size, what, j->timeout,
      j->kind == JOB_SEND   ? " and MPI did not cancel it (Open MPI never cancels a send): the message stays posted "
                              "with the data it had when the send started"
      : j->kind == JOB_RECV ? " and MPI could not cancel it (already matched)"
                            : "");
}

/* The communicator's scratch memory, at least bytes of it (one op uses it at a time: the token
 * orders them). NULL when out of host memory. */
static void *scratch_get(gpar__mpi_ctx *c, size_t bytes) {
  if (c->scratch_bytes < bytes) {
    free(c->scratch);
    c->scratch = malloc(bytes ? bytes : 1);
    c->scratch_bytes = c->scratch ? bytes : 0;
  }
  return c->scratch;
}

/* ---------------------------------------------------------------- the operations (CPU ops) */

/* MAX and MIN follow gpar.h's rule on every path (NCCL's): fmax/fmin, so a NaN loses to a
 * number and the result is NaN only where every member holds NaN. */
#define REDUCE_LOOP(T, MAXF, MINF)                                                         \
  do {                                                                                     \
    T *y = acc;                                                                            \
    const T *x = src;                                                                      \
    for (size_t i = 0; i < n; i++) y[i] = op == GPAR_SUM ? y[i] + x[i] : op == GPAR_MAX ? MAXF(x[i], y[i]) : MINF(x[i], y[i]); \
  } while (0)

static void reduce_into(int dtype, int op, void *acc, const void *src, size_t n) {
  if (dtype == GPAR_FLOAT)
    REDUCE_LOOP(float, fmaxf, fminf);
  else
    REDUCE_LOOP(double, fmax, fmin);
}

/* MPI's own MPI_MAX and MPI_MIN promise nothing about NaN: user ops with fmax/fmin instead,
 * made once per process (after MPI_Init: the first gpar_comm_create_mpi). */
static void user_fmax(void *in, void *inout, int *len, MPI_Datatype *type) {
  reduce_into(*type == MPI_FLOAT ? GPAR_FLOAT : GPAR_DOUBLE, GPAR_MAX, inout, in, (size_t)*len);
}
static void user_fmin(void *in, void *inout, int *len, MPI_Datatype *type) {
  reduce_into(*type == MPI_FLOAT ? GPAR_FLOAT : GPAR_DOUBLE, GPAR_MIN, inout, in, (size_t)*len);
}
static MPI_Op op_fmax = MPI_OP_NULL, op_fmin = MPI_OP_NULL;
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
static void ops_make(void) {
  MPI_Op_create(user_fmax, 1, &op_fmax);
  MPI_Op_create(user_fmin, 1, &op_fmin);
}

static MPI_Datatype mpi_type(int dtype) { return dtype == GPAR_FLOAT ? MPI_FLOAT : MPI_DOUBLE; }
static MPI_Op mpi_op(int op) { return op == GPAR_MAX ? op_fmax : op == GPAR_MIN ? op_fmin : MPI_SUM; }

static int no_memory(gpar__mpi_job *j) {
  return gpar__mpi_fail(GPAR_ENOMEM, "%s #%lu on rank %d: out of host memory", job_name(j->kind), j->seq, j->c->rank);
}

/* Copy the result (bytes of scratch) into every local member's range. */
static void result_out(gpar__mpi_job *j, const void *res, size_t bytes) {
  for (int i = 0; i < j->n; i++) memcpy(j->ptrs[i], res, bytes);
}

static int run_allreduce(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  /* reduce-scatter reduces every block (each member keeps its own) */
  size_t count = j->count * (j->kind == GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1);
  char *acc = scratch_get(c, count * j->esize);
  if (!acc) return no_memory(j);
  memcpy(acc, j->ptrs[0], count * j->esize);
  for (int i = 1; i < j->n; i++) reduce_into(j->dtype, j->op, acc, j->ptrs[i], count);
  int st = GPAR_OK;
  for (size_t done = 0; done < count && st == GPAR_OK;) { /* MPI counts are int */
    size_t len = count - done < (size_t)INT_MAX ? count - done : (size_t)INT_MAX;
    start_args s = {.what = START_ALLREDUCE, .buf = acc + done * j->esize, .count = (int)len,
                    .type = mpi_type(j->dtype), .op = mpi_op(j->op)};
    MPI_Request req;
    if ((st = mpi_check(m_start(c->mc, &s, &req), "MPI_Iallreduce", j)) == GPAR_OK)
      st = job_wait(j, &req, "MPI_Iallreduce");
    done += len;
  }
  if (st == GPAR_OK) result_out(j, acc, count * j->esize);
  return st;
}

static int run_broadcast(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  int owner = 0;
  while (owner + 1 < c->size && c->firsts[owner + 1] <= j->root) owner++;
  size_t bytes = j->count * j->esize;
  char *buf = scratch_get(c, bytes);
  if (!buf) return no_memory(j);
  if (owner == c->rank) memcpy(buf, j->ptrs[j->root - c->first], bytes);
  int st = GPAR_OK;
  for (size_t done = 0; done < bytes && st == GPAR_OK;) {
    size_t len = bytes - done < (size_t)INT_MAX ? bytes - done : (size_t)INT_MAX;
    start_args s = {.what = START_BCAST, .buf = buf + done, .count = (int)len, .type = MPI_BYTE, .root = owner};
    MPI_Request req;
    if ((st = mpi_check(m_start(c->mc, &s, &req), "MPI_Ibcast", j)) == GPAR_OK) st = job_wait(j, &req, "MPI_Ibcast");
    done += len;
  }
  if (st == GPAR_OK) result_out(j, buf, bytes);
  return st;
}

/* Sizes are checked at the call (gpar_all_gather over 2 GiB is refused there). */
static int run_all_gather(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  size_t blk = j->count * j->esize, bytes = blk * (size_t)c->nmembers;
  char *acc = scratch_get(c, bytes);
  int *counts = malloc(sizeof *counts * 2 * (size_t)c->size), *displs = counts ? counts + c->size : NULL;
  if (!acc || !counts) {
    free(counts);
    return no_memory(j);
  }
  for (int i = 0; i < j->n; i++)
    memcpy(acc + (size_t)(c->first + i) * blk, (char *)j->ptrs[i] + (size_t)(c->first + i) * blk, blk);
  for (int r = 0; r < c->size; r++) {
    counts[r] = (int)((size_t)c->counts[r] * blk);
    displs[r] = (int)((size_t)c->firsts[r] * blk);
  }
  start_args s = {.what = START_ALLGATHERV, .buf = acc, .type = MPI_BYTE, .counts = counts, .displs = displs};
  MPI_Request req;
  int st = mpi_check(m_start(c->mc, &s, &req), "MPI_Iallgatherv", j);
  if (st == GPAR_OK) st = job_wait(j, &req, "MPI_Iallgatherv");
  free(counts);
  if (st == GPAR_OK) result_out(j, acc, bytes);
  return st;
}

/* Sizes and tags are checked at the call. */
static int run_p2p(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  char *buf = scratch_get(c, j->bytes);
  if (!buf) return no_memory(j);
  int send = j->kind == JOB_SEND;
  if (send) memcpy(buf, j->ptrs[0], j->bytes);
  start_args s = {.what = send ? START_ISEND : START_IRECV, .buf = buf, .count = (int)j->bytes, .type = MPI_BYTE,
                  .peer = j->peer, .tag = j->tag};
  const char *what = send ? "MPI_Isend" : "MPI_Irecv";
  MPI_Request req;
  int st = mpi_check(m_start(c->mc, &s, &req), what, j);
  if (st == GPAR_OK) st = job_wait(j, &req, what);
  if (st == GPAR_OK && !send) memcpy(j->ptrs[0], buf, j->bytes);
  return st;
}

int gpar__mpi_gate_wait(gpar__mpi_job *j) {
  int g;
  while ((g = atomic_load(&j->gate)) == GPAR__GATE_OPEN) sched_yield();
  return g == GPAR__GATE_SEALED;
}

/* The CPU op of every MPI operation. */
static int job_run(const gpar_native *nat, void *arg) {
  (void)nat;
  gpar__mpi_job *j = arg;
  gpar__mpi_ctx *c = j->c;
  int st;
  lost_sweep();
  if (!gpar__mpi_gate_wait(j))
    st = gpar__mpi_fail(GPAR_EBACKEND, "%s #%lu on rank %d: not run: the call could not submit all of its work",
                        job_name(j->kind), j->seq, c->rank);
  else if (atomic_load(&c->broken))
    st = gpar__mpi_fail(GPAR_ETIMEDOUT, "%s #%lu on rank %d: the communicator is broken by an earlier timeout",
                        job_name(j->kind), j->seq, c->rank);
  else if (j->kind == JOB_SEND || j->kind == JOB_RECV)
    st = run_p2p(j);
  else if (j->kind == GPAR_COLL_BROADCAST)
    st = run_broadcast(j);
  else if (j->kind == GPAR_COLL_ALL_GATHER)
    st = run_all_gather(j);
  else
    st = run_allreduce(j);
  atomic_store(&j->done, 1);
  return st;
}

/* ---------------------------------------------------------------- jobs */

/* Free the jobs that are done with (their ops have run, no watchdog entry points at them).
 * Jobs whose op was skipped stay until the communicator is destroyed. */
static void jobs_sweep(gpar__mpi_ctx *c, int all) {
  pthread_mutex_lock(&c->jobs_mu);
  gpar__mpi_job **p = &c->jobs;
  while (*p) {
    gpar__mpi_job *j = *p;
    if (all || (atomic_load(&j->done) && atomic_load(&j->watched) == 0)) {
      *p = j->next;
      free(j);
    } else {
      p = &j->next;
    }
  }
  pthread_mutex_unlock(&c->jobs_mu);
}

gpar__mpi_job *gpar__mpi_job_new(gpar__mpi_ctx *c, int kind, int n) {
  jobs_sweep(c, 0);
  if (n < 1) n = 1;
  gpar__mpi_job *j = calloc(1, sizeof *j + (sizeof j->ptrs[0] + sizeof j->members[0]) * (size_t)n);
  if (!j) {
    gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
    return NULL;
  }
  j->c = c;
  j->kind = kind;
  j->n = n;
  j->members = (gpar__mpi_member *)(j->ptrs + n);
  j->seq = ++c->seq;
  j->timeout = atomic_load(&c->timeout);
  atomic_init(&j->done, 0);
  atomic_init(&j->watched, 0);
  atomic_init(&j->gate, c->synchronous ? GPAR__GATE_SEALED : GPAR__GATE_OPEN);
  atomic_init(&j->aborted, 0);
  atomic_init(&j->issued, 0);
  atomic_init(&j->status, 0);
  pthread_mutex_lock(&c->jobs_mu);
  j->next = c->jobs;
  c->jobs = j;
  pthread_mutex_unlock(&c->jobs_mu);
  return j;
}

gpar__mpi_job *gpar__mpi_coll_job_new(gpar__mpi_ctx *c, const gpar_coll *a) {
  gpar__mpi_job *j = gpar__mpi_job_new(c, a->kind, c->nlocal);
  if (!j) return NULL;
  j->count = a->count;
  j->dtype = a->dtype;
  j->esize = gpar_dtype_size(a->dtype);
  j->op = a->op;
  j->root = a->root;
  return j;
}

/* Submit a job's work, all of it or (as far as this rank's communication goes) none: host
 * memory for each buffer range (the buffer itself when host code can touch it, else a GPAR_HOST
 * staging buffer; every staging buffer is made before anything is queued); the copies into the
 * staging buffers (`in`); one CPU op that reads the ranges (reads) and writes them (writes) and
 * writes the token; the copies back (`out`). The op waits at its gate until every part is
 * submitted; when a part fails to submit, the op communicates nothing and fails. A send only
 * reads its buffer, a receive only writes it, a collective does both. Called with submit_mu. */
static int submit_job(gpar__mpi_ctx *c, gpar__mpi_job *j, const gpar_buffer *bufs, const size_t *offs_bytes,
                      size_t bytes, const int *in, int out, int reads, int writes) {
  int n = j->n, st = GPAR_OK, submitted = 0;
  gpar_buffer *rw = calloc((size_t)n + 1, sizeof *rw), *stage = calloc((size_t)n, sizeof *stage);
  if (!rw || !stage) st = gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  for (int i = 0; i < n && st == GPAR_OK; i++) {
    int dev = GPAR_HOST;
    gpar_buffer_query(bufs[i], NULL, &dev);
    char *hp = dev == GPAR_HOST || dev == c->host_dev ? gpar_buffer_host_ptr(bufs[i]) : NULL;
    if (hp) {
      rw[i] = bufs[i];
      j->ptrs[i] = hp + offs_bytes[i];
      continue;
    }
    if ((st = gpar_buffer_create(c->eng, GPAR_HOST, bytes, &stage[i]))) break;
    rw[i] = stage[i];
    j->ptrs[i] = gpar_buffer_host_ptr(stage[i]);
  }
  for (int i = 0; i < n && st == GPAR_OK; i++)
    if (stage[i].id && in[i]) st = gpar_copy(stage[i], 0, bufs[i], offs_bytes[i], bytes);
  if (st == GPAR_OK) {
    rw[n] = c->token;
    st = gpar_submit(c->eng, GPAR_HOST, job_run, j, rw, reads ? n : 0, writes ? rw : rw + n, writes ? n + 1 : 1);
    submitted = st == GPAR_OK;
  }
  for (int i = 0; i < n && st == GPAR_OK && out; i++)
    if (stage[i].id) st = gpar_copy(bufs[i], offs_bytes[i], stage[i], 0, bytes);
  atomic_store(&j->gate, st == GPAR_OK ? GPAR__GATE_SEALED : GPAR__GATE_CANCELLED);
  if (!submitted) atomic_store(&j->done, 1);
  for (int i = 0; stage && i < n; i++)
    if (stage[i].id) gpar_buffer_release(stage[i]); /* freed once their ops are done */
  free(rw);
  free(stage);
  return st;
}

/* ---------------------------------------------------------------- transport entry points */

static int mpi_collective_staged(gpar__mpi_ctx *c, const gpar_coll *a) {
  gpar__mpi_job *j = gpar__mpi_coll_job_new(c, a);
  if (!j) return GPAR_ENOMEM;
  size_t blocks = a->kind >= GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1;
  size_t bytes = a->count * blocks * j->esize;
  size_t *offb = malloc(sizeof *offb * (size_t)c->nlocal);
  int *in = malloc(sizeof *in * (size_t)c->nlocal);
  if (!offb || !in) {
    free(offb);
    free(in);
    atomic_store(&j->done, 1);
    return gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  }
  for (int i = 0; i < c->nlocal; i++) {
    offb[i] = a->offs[i] * j->esize;
    in[i] = a->kind != GPAR_COLL_BROADCAST || c->first + i == a->root;
  }
  int st = submit_job(c, j, a->bufs, offb, bytes, in, 1, 1, 1);
  free(offb);
  free(in);
  return st;
}

static int mpi_collective(void *ctx, const gpar_coll *a) {
  gpar__mpi_ctx *c = ctx;
  lost_sweep();
  size_t esize = gpar_dtype_size(a->dtype);
  if (a->dtype != GPAR_FLOAT && a->dtype != GPAR_DOUBLE) /* the reductions and MPI types below know these two */
    return gpar__mpi_fail(GPAR_ENOTSUP, "%s: element type %d across processes: libgpar_mpi takes GPAR_FLOAT and "
                                        "GPAR_DOUBLE only", job_name(a->kind), (int)a->dtype);
  if (!c->nccl && a->kind == GPAR_COLL_ALL_GATHER && a->count * esize * (size_t)c->nmembers > (size_t)INT_MAX)
    return gpar__mpi_fail(GPAR_ENOTSUP,
                          "gpar_all_gather: %zu elements x %d members = %zu bytes in all: over MPI, an all-gather "
                          "moves at most INT_MAX (%d) bytes in all",
                          a->count, c->nmembers, a->count * esize * (size_t)c->nmembers, INT_MAX);
  int st;
  pthread_mutex_lock(&c->submit_mu);
  if (atomic_load(&c->broken))
    st = gpar__mpi_fail(GPAR_ETIMEDOUT, "%s: the communicator is broken by an earlier timeout", job_name(a->kind));
  else if (c->nccl)
    st = gpar__mpi_nccl_collective(c, a);
  else
    st = mpi_collective_staged(c, a);
  pthread_mutex_unlock(&c->submit_mu);
  return st;
}

static void ctx_free(gpar__mpi_ctx *c) {
  pthread_mutex_destroy(&c->jobs_mu);
  pthread_mutex_destroy(&c->submit_mu);
  free(c->scratch);
  free(c->counts);
  free(c->devs);
  free(c);
}

static void mpi_destroy(void *ctx) {
  gpar__mpi_ctx *c = ctx;
  gpar_wait(c->token); /* the last operation is done: nothing of ours uses the jobs or MPI any more */
  gpar__mpi_nccl_destroy(c);
  lost_sweep();
  commref_release(c->ref); /* MPI_Comm_free now, or once its abandoned requests are complete */
  gpar_buffer_release(c->token);
  jobs_sweep(c, 1);
  reg_add(c->eng, -1, 0);
  ctx_free(c);
}

static const gpar_comm_transport mpi_transport = {mpi_collective, mpi_destroy};

/* Check a local argument error before any communication, then agree on it: every rank fails
 * together rather than some waiting forever for the others. */
GPAR_API int gpar_comm_create_mpi(gpar_engine *eng, MPI_Comm mpi_comm, const int *devs, int ndevs, gpar_comm *comm) {
  if (comm) comm->id = 0;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: MPI is not initialised (or finalised)");
  pthread_once(&ops_once, ops_make); /* MAX and MIN with gpar.h's NaN rule */
  lost_sweep();
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  gpar_config cfg;
  int ndev_eng = gpar_device_count(eng), st = GPAR_OK, reserved = 0;
  char why[512] = "";
  if (ndev_eng < 0)
    st = gpar__mpi_fail(ndev_eng, "gpar_comm_create_mpi: %s", gpar_last_error());
  else if ((st = gpar_config_get(eng, &cfg)))
    st = gpar__mpi_fail(st, "gpar_comm_create_mpi: %s", gpar_last_error());
  else if (!comm)
    st = gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: comm is NULL");
  else if (!devs || ndevs < 1)
    st = gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: no devices (%d)", ndevs);
  else if (level < MPI_THREAD_SERIALIZED)
    st = gpar__mpi_fail(GPAR_ENOTSUP, "gpar_comm_create_mpi: MPI gives thread level %d; libgpar needs "
                                      "MPI_THREAD_MULTIPLE (or MPI_THREAD_SERIALIZED): use MPI_Init_thread", level);
  for (int i = 0; st == GPAR_OK && i < ndevs; i++)
    if (devs[i] < 0 || devs[i] >= ndev_eng)
      st = gpar__mpi_fail(GPAR_ENODEV, "gpar_comm_create_mpi: device %d does not exist (%d devices)", devs[i], ndev_eng);
  if (st == GPAR_OK) {
    int before = reg_add(eng, 1, cfg.host_threads);
    reserved = before >= 0;
    if (!reserved)
      st = gpar__mpi_fail(GPAR_ENOTSUP,
                          "gpar_comm_create_mpi: the engine has %d CPU worker thread(s) (gpar_config.host_threads) and "
                          "as many libgpar_mpi communicators already. An operation holds a worker while it waits for "
                          "other ranks, so communicators used in different orders on different ranks could wait on "
                          "each other until the timeout: use at least one host thread per communicator",
                          cfg.host_threads);
  }
  if (st) snprintf(why, sizeof why, "%s", gpar_last_error());
  gpar__mpi_ctx *c = st ? NULL : calloc(1, sizeof *c);
  commref *ref = st ? NULL : calloc(1, sizeof *ref);
  if (!st && (!c || !ref)) {
    st = gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
    snprintf(why, sizeof why, "%s", gpar_last_error());
  }
  MPI_Comm dup = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(mpi_comm, &dup);
  if (rc != MPI_SUCCESS) {
    if (reserved) reg_add(eng, -1, 0);
    free(c);
    free(ref);
    return mpi_check(rc, "gpar_comm_create_mpi: MPI_Comm_dup", NULL);
  }
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int mine_ok = st == GPAR_OK, all_ok = 0;
  MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, dup);
  if (!all_ok) {
    MPI_Comm_free(&dup);
    if (reserved) reg_add(eng, -1, 0);
    free(c);
    free(ref);
    return st ? gpar__mpi_fail(st, "%s", why)
              : gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: the call failed on another rank");
  }
  if (level < MPI_THREAD_MULTIPLE) atomic_store(&mpi_serialised, 1);
  finalize_hook();
  ref->mc = dup;
  c->ref = ref;
  c->eng = eng;
  c->mc = dup;
  c->thread_level = level;
  c->synchronous = cfg.synchronous;
  MPI_Comm_rank(dup, &c->rank);
  MPI_Comm_size(dup, &c->size);
  int *ub = NULL, has_ub = 0;
  MPI_Comm_get_attr(dup, MPI_TAG_UB, &ub, &has_ub);
  c->tag_ub = has_ub && ub ? *ub : 32767; /* the least MPI guarantees */
  c->nlocal = ndevs;
  c->counts = malloc(sizeof *c->counts * 2 * (size_t)c->size);
  c->devs = malloc(sizeof *c->devs * (size_t)ndevs);
  pthread_mutex_init(&c->jobs_mu, NULL);
  pthread_mutex_init(&c->submit_mu, NULL);
  atomic_init(&c->timeout, cfg.comm_timeout > 0 ? cfg.comm_timeout : 300.0);
  c->host_dev = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0);
  /* Every rank reaches the same calls below, whatever failed locally. */
  MPI_Allgather(&ndevs, 1, MPI_INT, c->counts ? c->counts : &c->nmembers, 1, MPI_INT, dup);
  st = c->counts && c->devs ? GPAR_OK : gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  if (st == GPAR_OK) {
    c->firsts = c->counts + c->size;
    for (int r = 0; r < c->size; r++) {
      c->firsts[r] = c->nmembers;
      c->nmembers += c->counts[r];
    }
    c->first = c->firsts[c->rank];
    memcpy(c->devs, devs, sizeof *devs * (size_t)ndevs);
    st = gpar_buffer_create(eng, GPAR_HOST, 64, &c->token);
  }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  c->cuda_aware = MPIX_Query_cuda_support();
#endif
  int nccl_st = gpar__mpi_nccl_setup(c, st == GPAR_OK); /* collective over the ranks */
  if (st == GPAR_OK) st = nccl_st;
  if (st == GPAR_OK) st = gpar_comm_create_transport(eng, devs, ndevs, c->nmembers, c->first, &mpi_transport, c, comm);
  mine_ok = st == GPAR_OK;
  MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, dup);
  if (!all_ok) {
    if (st == GPAR_OK) {
      gpar_comm_destroy(*comm); /* frees c through mpi_destroy */
      comm->id = 0;
      return gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: the call failed on another rank");
    }
    snprintf(why, sizeof why, "%s", gpar_last_error());
    gpar__mpi_nccl_destroy(c);
    if (c->token.id) gpar_buffer_release(c->token);
    commref_release(ref);
    reg_add(eng, -1, 0);
    ctx_free(c);
    return gpar__mpi_fail(st, "%s", why);
  }
  return GPAR_OK;
}

GPAR_API int gpar_mpi_set_timeout(gpar_comm comm, double seconds) {
  lost_sweep();
  gpar__mpi_ctx *c = gpar_comm_transport_ctx(comm);
  if (!c) return GPAR_EINVAL;
  if (!(seconds > 0)) return gpar__mpi_fail(GPAR_EINVAL, "gpar_mpi_set_timeout: %g s is not positive", seconds);
  atomic_store(&c->timeout, seconds);
  return GPAR_OK;
}

GPAR_API int gpar_mpi_info_get(gpar_comm comm, gpar_mpi_info *info) {
  gpar__mpi_ctx *c = gpar_comm_transport_ctx(comm);
  if (!c) return GPAR_EINVAL;
  if (!info) return gpar__mpi_fail(GPAR_EINVAL, "gpar_mpi_info_get: info is NULL");
  *info = (gpar_mpi_info){c->rank, c->size, c->nccl, c->cuda_aware, c->thread_level};
  return GPAR_OK;
}

/* Send / receive: one CPU op on a host range (staged for device buffers). Every limit of MPI
 * (int counts, MPI_TAG_UB) is checked here, before anything is queued. */
static int p2p(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag, int kind) {
  const char *fn = job_name(kind);
  lost_sweep();
  gpar__mpi_ctx *c = gpar_comm_transport_ctx(comm);
  if (!c) return gpar__mpi_fail(GPAR_EINVAL, "%s: %s", fn, gpar_last_error());
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
  int in = kind == JOB_SEND;
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
    st = submit_job(c, j, &buf, &off, bytes, &in, !in, in, !in);
  }
  pthread_mutex_unlock(&c->submit_mu);
  return st;
}

GPAR_API int gpar_send(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag) {
  return p2p(comm, buf, off, bytes, rank, tag, JOB_SEND);
}

GPAR_API int gpar_recv(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag) {
  return p2p(comm, buf, off, bytes, rank, tag, JOB_RECV);
}
