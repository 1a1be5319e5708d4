/* gpar_mpi.c: libgpar_mpi, communicators across MPI ranks (issue 15). A transport for the core's
 * communicators (gpar_comm_create_transport) built on the public API only: every MPI operation
 * is one CPU op (gpar_submit on GPAR_HOST) that writes the communicator's token, so operations
 * run in program order, one at a time; device members are staged through GPAR_HOST (pinned)
 * buffers with gpar_copy. The op starts a nonblocking MPI call and polls MPI_Test until it is
 * done or the timeout passes (see gpar_mpi.h: why no progress thread). */
#include <limits.h>
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

/* MPI calls are serialised by this lock when MPI gives less than MPI_THREAD_MULTIPLE. */
static pthread_mutex_t mpi_mu = PTHREAD_MUTEX_INITIALIZER;

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

/* Poll req until done or the communicator's timeout passes: yield between tests for 1 ms
 * (latency), then sleep 20 us between tests. On timeout a receive is cancelled; anything else breaks the communicator
 * (a collective cannot be cancelled, a send may already be matched). */
static int job_wait(gpar__mpi_job *j, MPI_Request *req, const char *what) {
  gpar__mpi_ctx *c = j->c;
  double start = now_s();
  for (;;) {
    int flag = 0;
    if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_lock(&mpi_mu);
    int rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_unlock(&mpi_mu);
    if (rc != MPI_SUCCESS) return mpi_check(rc, what, j);
    if (flag) return GPAR_OK;
    double t = now_s();
    if (t - start > c->timeout) break;
    if (t - start > 1e-3) { /* first 1 ms: yield only (latency); then sleep between tests */
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
  if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_lock(&mpi_mu);
  if (j->kind == JOB_RECV) {
    MPI_Cancel(req);
    MPI_Wait(req, MPI_STATUS_IGNORE);
  } else {
    atomic_store(&c->broken, 1);
  }
  if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_unlock(&mpi_mu);
  return gpar__mpi_fail(GPAR_ETIMEDOUT,
                        "%s #%lu on rank %d of %d: %s not complete after %g s. Every rank must issue the same "
                        "operations on a communicator in the same order (a rank whose input failed skips its part)%s",
                        job_name(j->kind), j->seq, c->rank, c->size, what, c->timeout,
                        j->kind == JOB_RECV ? "" : "; the communicator is broken from now on");
}

/* ---------------------------------------------------------------- the operations (CPU ops) */

#define REDUCE_LOOP(T)                                                      \
  do {                                                                      \
    T *y = acc;                                                             \
    const T *x = src;                                                       \
    for (size_t i = 0; i < n; i++)                                          \
      y[i] = op == GPAR_SUM ? y[i] + x[i] : (op == GPAR_MAX) == (x[i] > y[i]) ? x[i] : y[i]; \
  } while (0)

static void reduce_into(int dtype, int op, void *acc, const void *src, size_t n) {
  if (dtype == GPAR_FLOAT)
    REDUCE_LOOP(float);
  else
    REDUCE_LOOP(double);
}

static MPI_Datatype mpi_type(int dtype) { return dtype == GPAR_FLOAT ? MPI_FLOAT : MPI_DOUBLE; }
static MPI_Op mpi_op(int op) { return op == GPAR_MAX ? MPI_MAX : op == GPAR_MIN ? MPI_MIN : MPI_SUM; }

static int run_allreduce(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  char *acc = j->ptrs[0];
  int st = GPAR_OK;
  /* reduce-scatter reduces every block (each member keeps its own) */
  size_t count = j->count * (j->kind == GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1);
  for (int i = 1; i < j->n; i++) reduce_into(j->dtype, j->op, acc, j->ptrs[i], count);
  for (size_t done = 0; done < count && st == GPAR_OK;) { /* MPI counts are int */
    size_t len = count - done < (size_t)INT_MAX ? count - done : (size_t)INT_MAX;
    MPI_Request req;
    if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_lock(&mpi_mu);
    int rc = MPI_Iallreduce(MPI_IN_PLACE, acc + done * j->esize, (int)len, mpi_type(j->dtype), mpi_op(j->op), c->mc, &req);
    if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_unlock(&mpi_mu);
    if ((st = mpi_check(rc, "MPI_Iallreduce", j)) == GPAR_OK) st = job_wait(j, &req, "MPI_Iallreduce");
    done += len;
  }
  return st;
}

static int run_broadcast(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  int owner = 0;
  while (owner + 1 < c->size && c->firsts[owner + 1] <= j->root) owner++;
  char *buf = owner == c->rank ? j->ptrs[j->root - c->first] : j->ptrs[0];
  size_t bytes = j->count * j->esize;
  int st = GPAR_OK;
  for (size_t done = 0; done < bytes && st == GPAR_OK;) {
    size_t len = bytes - done < (size_t)INT_MAX ? bytes - done : (size_t)INT_MAX;
    MPI_Request req;
    if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_lock(&mpi_mu);
    int rc = MPI_Ibcast(buf + done, (int)len, MPI_BYTE, owner, c->mc, &req);
    if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_unlock(&mpi_mu);
    if ((st = mpi_check(rc, "MPI_Ibcast", j)) == GPAR_OK) st = job_wait(j, &req, "MPI_Ibcast");
    done += len;
  }
  j->result = buf;
  return st;
}

static int run_all_gather(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  size_t blk = j->count * j->esize;
  char *acc = j->ptrs[0];
  if (blk * (size_t)c->nmembers > (size_t)INT_MAX)
    return gpar__mpi_fail(GPAR_ENOTSUP, "gpar_all_gather #%lu: more than 2 GiB in all over MPI", j->seq);
  for (int i = 1; i < j->n; i++)
    memcpy(acc + (size_t)(c->first + i) * blk, (char *)j->ptrs[i] + (size_t)(c->first + i) * blk, blk);
  int *counts = malloc(sizeof *counts * 2 * (size_t)c->size), *displs = counts + c->size;
  if (!counts) return gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  for (int r = 0; r < c->size; r++) {
    counts[r] = (int)((size_t)c->counts[r] * blk);
    displs[r] = (int)((size_t)c->firsts[r] * blk);
  }
  MPI_Request req;
  if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_lock(&mpi_mu);
  int rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, acc, counts, displs, MPI_BYTE, c->mc, &req);
  if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_unlock(&mpi_mu);
  int st = mpi_check(rc, "MPI_Iallgatherv", j);
  if (st == GPAR_OK) st = job_wait(j, &req, "MPI_Iallgatherv");
  free(counts);
  return st;
}

static int run_p2p(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  if (j->bytes > (size_t)INT_MAX)
    return gpar__mpi_fail(GPAR_ENOTSUP, "%s #%lu: messages over 2 GiB are not supported", job_name(j->kind), j->seq);
  MPI_Request req;
  if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_lock(&mpi_mu);
  int rc = j->kind == JOB_SEND ? MPI_Isend(j->ptrs[0], (int)j->bytes, MPI_BYTE, j->peer, j->tag, c->mc, &req)
                               : MPI_Irecv(j->ptrs[0], (int)j->bytes, MPI_BYTE, j->peer, j->tag, c->mc, &req);
  if (c->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_unlock(&mpi_mu);
  const char *what = j->kind == JOB_SEND ? "MPI_Isend" : "MPI_Irecv";
  int st = mpi_check(rc, what, j);
  if (st == GPAR_OK) st = job_wait(j, &req, what);
  return st;
}

/* The CPU op of every MPI operation. */
static int job_run(const gpar_native *nat, void *arg) {
  gpar__mpi_job *j = arg;
  gpar__mpi_ctx *c = j->c;
  int st;
  j->result = j->ptrs[0];
  if (atomic_load(&c->broken))
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
  if (st == GPAR_OK && j->kind < JOB_SEND) { /* the result into every other local member */
    size_t bytes = j->count * j->esize * (j->kind >= GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1);
    for (int i = 0; i < j->n; i++)
      if (j->ptrs[i] != j->result) memcpy(j->ptrs[i], j->result, bytes);
  }
  atomic_store(&j->done, 1);
  return st;
}

/* ---------------------------------------------------------------- jobs */

/* Free the jobs that have run (their ops are done with them). Jobs whose op was skipped stay
 * until the communicator is destroyed. */
static void jobs_sweep(gpar__mpi_ctx *c, int all) {
  pthread_mutex_lock(&c->jobs_mu);
  gpar__mpi_job **p = &c->jobs;
  while (*p) {
    gpar__mpi_job *j = *p;
    if (all || atomic_load(&j->done)) {
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
  gpar__mpi_job *j = calloc(1, sizeof *j + sizeof j->ptrs[0] * (size_t)(n > 0 ? n : 1));
  if (!j) {
    gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
    return NULL;
  }
  j->c = c;
  j->kind = kind;
  j->n = n;
  j->seq = atomic_fetch_add(&c->seq, 1) + 1;
  atomic_init(&j->done, 0);
  pthread_mutex_lock(&c->jobs_mu);
  j->next = c->jobs;
  c->jobs = j;
  pthread_mutex_unlock(&c->jobs_mu);
  return j;
}

/* Host memory for each buffer range: the buffer itself when host code can touch it, else a
 * GPAR_HOST staging buffer (filled by a copy when `in`). Then one CPU op that reads them (reads)
 * and writes them (writes) and writes the token; then the copies back when `out`. A send only
 * reads its buffer, a receive only writes it, a collective does both. */
static int submit_staged(gpar__mpi_ctx *c, gpar__mpi_job *j, const gpar_buffer *bufs, const size_t *offs_bytes,
                         size_t bytes, const int *in, int out, int reads, int writes) {
  int n = j->n, st = GPAR_OK;
  gpar_buffer *rw = calloc((size_t)n + 1, sizeof *rw), *stage = calloc((size_t)n, sizeof *stage);
  if (!rw || !stage) {
    free(rw);
    free(stage);
    return gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  }
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
    if (in[i]) st = gpar_copy(stage[i], 0, bufs[i], offs_bytes[i], bytes);
  }
  rw[n] = c->token;
  if (st == GPAR_OK)
    st = gpar_submit(c->eng, GPAR_HOST, job_run, j, rw, reads ? n : 0, writes ? rw : rw + n, writes ? n + 1 : 1);
  else atomic_store(&j->done, 1); /* never submitted */
  for (int i = 0; i < n && st == GPAR_OK && out; i++)
    if (stage[i].id) st = gpar_copy(bufs[i], offs_bytes[i], stage[i], 0, bytes);
  for (int i = 0; i < n; i++)
    if (stage[i].id) gpar_buffer_release(stage[i]); /* freed once their ops are done */
  free(rw);
  free(stage);
  return st;
}

/* ---------------------------------------------------------------- transport entry points */

static int mpi_collective(void *ctx, const gpar_coll *a) {
  gpar__mpi_ctx *c = ctx;
  if (atomic_load(&c->broken))
    return gpar__mpi_fail(GPAR_ETIMEDOUT, "%s: the communicator is broken by an earlier timeout", job_name(a->kind));
  if (c->nccl) return gpar__mpi_nccl_collective(c, a);
  gpar__mpi_job *j = gpar__mpi_job_new(c, a->kind, c->nlocal);
  if (!j) return GPAR_ENOMEM;
  j->count = a->count;
  j->dtype = a->dtype;
  j->esize = gpar_dtype_size(a->dtype);
  j->op = a->op;
  j->root = a->root;
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
  int st = submit_staged(c, j, a->bufs, offb, bytes, in, 1, 1, 1);
  free(offb);
  free(in);
  return st;
}

static void mpi_destroy(void *ctx) {
  gpar__mpi_ctx *c = ctx;
  gpar_wait(c->token); /* the last operation is done: nothing uses the jobs or MPI any more */
  gpar__mpi_nccl_destroy(c);
  if (!atomic_load(&c->broken)) MPI_Comm_free(&c->mc); /* a broken one may have requests in flight */
  gpar_buffer_release(c->token);
  jobs_sweep(c, 1);
  pthread_mutex_destroy(&c->jobs_mu);
  free(c->counts);
  free(c->devs);
  free(c);
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
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  int ndev_eng = gpar_device_count(eng), st = GPAR_OK;
  char why[256] = "";
  if (ndev_eng < 0)
    st = gpar__mpi_fail(ndev_eng, "gpar_comm_create_mpi: %s", gpar_last_error());
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
  if (st) snprintf(why, sizeof why, "%s", gpar_last_error());
  gpar__mpi_ctx *c = st ? NULL : calloc(1, sizeof *c);
  if (!st && !c) st = gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  MPI_Comm dup = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(mpi_comm, &dup);
  if (rc != MPI_SUCCESS) {
    free(c);
    return mpi_check(rc, "gpar_comm_create_mpi: MPI_Comm_dup", NULL);
  }
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int mine_ok = st == GPAR_OK, all_ok = 0;
  MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, dup);
  if (!all_ok) {
    MPI_Comm_free(&dup);
    free(c);
    return st ? gpar__mpi_fail(st, "%s", why)
              : gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: the call failed on another rank");
  }
  c->eng = eng;
  c->mc = dup;
  c->thread_level = level;
  MPI_Comm_rank(dup, &c->rank);
  MPI_Comm_size(dup, &c->size);
  c->nlocal = ndevs;
  c->counts = malloc(sizeof *c->counts * 2 * (size_t)c->size);
  c->devs = malloc(sizeof *c->devs * (size_t)ndevs);
  pthread_mutex_init(&c->jobs_mu, NULL);
  const char *e = getenv("GPAR_COMM_TIMEOUT");
  c->timeout = e && atof(e) > 0 ? atof(e) : 300.0;
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
    MPI_Comm_free(&c->mc);
    pthread_mutex_destroy(&c->jobs_mu);
    free(c->counts);
    free(c->devs);
    free(c);
    return gpar__mpi_fail(st, "%s", why);
  }
  return GPAR_OK;
}

GPAR_API int gpar_mpi_set_timeout(gpar_comm comm, double seconds) {
  gpar__mpi_ctx *c = gpar_comm_transport_ctx(comm);
  if (!c) return GPAR_EINVAL;
  if (!(seconds > 0)) return gpar__mpi_fail(GPAR_EINVAL, "gpar_mpi_set_timeout: %g s is not positive", seconds);
  c->timeout = seconds;
  return GPAR_OK;
}

GPAR_API int gpar_mpi_info_get(gpar_comm comm, gpar_mpi_info *info) {
  gpar__mpi_ctx *c = gpar_comm_transport_ctx(comm);
  if (!c) return GPAR_EINVAL;
  if (!info) return gpar__mpi_fail(GPAR_EINVAL, "gpar_mpi_info_get: info is NULL");
  *info = (gpar_mpi_info){c->rank, c->size, c->nccl, c->cuda_aware, c->thread_level};
  return GPAR_OK;
}

/* Send / receive: one CPU op on a host range (staged for device buffers). */
static int p2p(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag, int kind) {
  const char *fn = job_name(kind);
  gpar__mpi_ctx *c = gpar_comm_transport_ctx(comm);
  if (!c) return gpar__mpi_fail(GPAR_EINVAL, "%s: %s", fn, gpar_last_error());
  size_t size = 0;
  int dev = 0, st = gpar_buffer_query(buf, &size, &dev);
  if (st) return st;
  if (bytes == 0) return gpar__mpi_fail(GPAR_EINVAL, "%s: size is 0", fn);
  if (off > size || bytes > size - off)
    return gpar__mpi_fail(GPAR_ERANGE, "%s: range [%zu, +%zu) exceeds the buffer's %zu bytes", fn, off, bytes, size);
  if (rank < 0 || rank >= c->size)
    return gpar__mpi_fail(GPAR_EINVAL, "%s: rank %d out of range (communicator of %d ranks)", fn, rank, c->size);
  if (tag < 0) return gpar__mpi_fail(GPAR_EINVAL, "%s: tag %d is negative", fn, tag);
  int member = 0;
  for (int i = 0; i < c->nlocal; i++) member |= c->devs[i] == dev || (dev == GPAR_HOST && c->devs[i] == c->host_dev);
  if (!member)
    return gpar__mpi_fail(GPAR_ENODEV, "%s: the buffer is on device %d, which is not in the communicator", fn, dev);
  if (atomic_load(&c->broken))
    return gpar__mpi_fail(GPAR_ETIMEDOUT, "%s: the communicator is broken by an earlier timeout", fn);
  gpar__mpi_job *j = gpar__mpi_job_new(c, kind, 1);
  if (!j) return GPAR_ENOMEM;
  j->peer = rank;
  j->tag = tag;
  j->bytes = bytes;
  int in = kind == JOB_SEND;
  return submit_staged(c, j, &buf, &off, bytes, &in, !in, in, !in);
}

GPAR_API int gpar_send(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag) {
  return p2p(comm, buf, off, bytes, rank, tag, JOB_SEND);
}

GPAR_API int gpar_recv(gpar_comm comm, gpar_buffer buf, size_t off, size_t bytes, int rank, int tag) {
  return p2p(comm, buf, off, bytes, rank, tag, JOB_RECV);
}
