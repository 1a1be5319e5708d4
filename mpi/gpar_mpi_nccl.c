/* gpar_mpi_nccl.c: collectives of an MPI communicator through NCCL when every member of every
 * rank is a CUDA device (issue 15). Rank 0 makes the NCCL unique id and MPI_Bcast sends it; each
 * rank joins its devices with ncclCommInitRank inside one group. A collective is one user op per
 * local member on that device (gpar_submit): the device's dispatcher thread enqueues the NCCL call
 * on the op's stream, so each rank's NCCL calls come from one thread per device, in the order the
 * member's token imposes. MPI never sees a device pointer.
 * Watchdog: NCCL cannot cancel a collective that another rank never joins, so a thread polls an
 * event recorded after each collective and names on stderr, once, one that is not complete after
 * the communicator's timeout (it does not abort it: the op keeps waiting). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "gpar_mpi_internal.h"

#define WATCH_MAX 256

/* A collective being watched: its event, when it was enqueued, what it was. */
typedef struct watched {
  cudaEvent_t ev;
  double t;
  unsigned long seq;
  int kind, warned;
} watched;

typedef struct nccl_state {
  int n;
  gpar_buffer *tokens; /* one per local member: program order on each device */
  pthread_t watchdog;
  int watching, stop;
  pthread_mutex_t mu;
  watched w[WATCH_MAX];
  int nw;
  ncclComm_t comms[];
} nccl_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *kind_name(int kind) {
  static const char *const n[] = {"gpar_allreduce", "gpar_broadcast", "gpar_reduce_scatter", "gpar_all_gather"};
  return n[kind];
}

/* Every 100 ms: forget finished collectives, name those pending past the timeout. */
static void *watchdog(void *arg) {
  gpar__mpi_ctx *c = arg;
  nccl_state *s = c->nccl_state;
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    for (int i = 0; i < s->nw;) {
      watched *w = &s->w[i];
      cudaError_t q = cudaEventQuery(w->ev);
      if (q != cudaErrorNotReady) { /* done (or failed: the op reports that itself) */
        cudaEventDestroy(w->ev);
        *w = s->w[--s->nw];
        continue;
      }
      double waited = now_s() - w->t;
      if (!w->warned && waited > c->timeout) {
        w->warned = 1;
        fprintf(stderr,
                "libgpar_mpi: rank %d: %s #%lu through NCCL not complete after %.0f s: every rank must issue a "
                "communicator's collectives in the same order; NCCL cannot cancel it and still waits\n",
                c->rank, kind_name(w->kind), w->seq, waited);
      }
      i++;
    }
    pthread_mutex_unlock(&s->mu);
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Watch the collective just enqueued on stream (dispatcher thread, device current). */
static void watch(gpar__mpi_job *j, cudaStream_t stream) {
  nccl_state *s = j->c->nccl_state;
  cudaEvent_t ev;
  if (!s->watching || cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) return;
  if (cudaEventRecord(ev, stream) != cudaSuccess) {
    cudaEventDestroy(ev);
    return;
  }
  pthread_mutex_lock(&s->mu);
  if (s->nw < WATCH_MAX)
    s->w[s->nw++] = (watched){ev, now_s(), j->seq, j->kind, 0};
  else
    cudaEventDestroy(ev); /* too many in flight to watch each: the older ones are watched */
  pthread_mutex_unlock(&s->mu);
}

static int nccl_fail(ncclResult_t r, const char *what) {
  return gpar__mpi_fail(GPAR_EBACKEND, "%s: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(NULL));
}

int gpar__mpi_nccl_setup(gpar__mpi_ctx *c, int ok) {
  const char *e = getenv("GPAR_COMM_STAGED");
  int mine = ok && !(e && atoi(e)), all = 0;
  for (int i = 0; i < c->nlocal && mine; i++) {
    gpar_device_props p;
    mine = gpar_device_info(c->eng, c->devs[i], &p) == GPAR_OK && p.backend_id == GPAR_BACKEND_CUDA;
  }
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, c->mc);
  c->nccl = 0;
  if (!all) return GPAR_OK;
  struct {
    int ok;
    ncclUniqueId id;
  } msg;
  memset(&msg, 0, sizeof msg);
  msg.ok = 1;
  int st = GPAR_OK;
  if (c->rank == 0) msg.ok = ncclGetUniqueId(&msg.id) == ncclSuccess;
  MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, c->mc); /* every rank learns whether it worked */
  if (!msg.ok) return gpar__mpi_fail(GPAR_EBACKEND, "ncclGetUniqueId failed on rank 0");
  ncclUniqueId id = msg.id;
  nccl_state *s = calloc(1, sizeof *s + sizeof s->comms[0] * (size_t)c->nlocal);
  if (s) s->tokens = calloc((size_t)c->nlocal, sizeof *s->tokens);
  if (!s || !s->tokens) {
    if (s) free(s);
    return gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  }
  s->n = c->nlocal;
  int prev = 0;
  cudaGetDevice(&prev);
  ncclResult_t r = ncclGroupStart();
  for (int i = 0; i < c->nlocal && r == ncclSuccess; i++) {
    gpar_device_props p;
    gpar_device_info(c->eng, c->devs[i], &p);
    cudaSetDevice(p.backend_index);
    r = ncclCommInitRank(&s->comms[i], c->nmembers, id, c->first + i);
  }
  ncclResult_t r2 = ncclGroupEnd();
  cudaSetDevice(prev);
  if (r == ncclSuccess) r = r2;
  if (st == GPAR_OK && r != ncclSuccess) st = nccl_fail(r, "ncclCommInitRank");
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++) st = gpar_buffer_create(c->eng, GPAR_HOST, 64, &s->tokens[i]);
  pthread_mutex_init(&s->mu, NULL);
  c->nccl_state = s;
  c->nccl = st == GPAR_OK;
  if (st == GPAR_OK) s->watching = pthread_create(&s->watchdog, NULL, watchdog, c) == 0;
  return st;
}

/* The user op of one member: enqueue its NCCL call on the device's stream (in place). */
static int nccl_run(const gpar_native *nat, void *arg) {
  gpar__mpi_job *j = arg;
  nccl_state *s = j->c->nccl_state;
  ncclComm_t comm = s->comms[j->n];
  cudaStream_t st = (cudaStream_t)nat->stream;
  ncclDataType_t dt = j->dtype == GPAR_FLOAT ? ncclFloat : ncclDouble;
  ncclRedOp_t op = j->op == GPAR_MAX ? ncclMax : j->op == GPAR_MIN ? ncclMin : ncclSum;
  char *p = j->ptrs[0], *mine = p + (size_t)(j->c->first + j->n) * j->count * j->esize;
  ncclResult_t r;
  switch (j->kind) {
  case GPAR_COLL_ALLREDUCE: r = ncclAllReduce(p, p, j->count, dt, op, comm, st); break;
  case GPAR_COLL_BROADCAST: r = ncclBroadcast(p, p, j->count, dt, j->root, comm, st); break;
  case GPAR_COLL_REDUCE_SCATTER: r = ncclReduceScatter(p, mine, j->count, dt, op, comm, st); break;
  default: r = ncclAllGather(mine, p, j->count, dt, comm, st); break;
  }
  if (r == ncclSuccess) watch(j, st);
  ncclResult_t ae = ncclSuccess;
  if (r == ncclSuccess && ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae != ncclSuccess && ae != ncclInProgress)
    r = ae;
  atomic_store(&j->done, 1);
  return r == ncclSuccess ? GPAR_OK : nccl_fail(r, "NCCL collective");
}

int gpar__mpi_nccl_collective(gpar__mpi_ctx *c, const gpar_coll *a) {
  nccl_state *s = c->nccl_state;
  int st = GPAR_OK;
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++) {
    gpar__mpi_job *j = gpar__mpi_job_new(c, a->kind, 1);
    if (!j) return GPAR_ENOMEM;
    j->n = i;
    j->count = a->count;
    j->dtype = a->dtype;
    j->esize = gpar_dtype_size(a->dtype);
    j->op = a->op;
    j->root = a->root;
    char *base = gpar_buffer_native(a->bufs[i]);
    j->ptrs[0] = base + a->offs[i] * j->esize;
    gpar_buffer w[2] = {a->bufs[i], s->tokens[i]};
    st = gpar_submit(c->eng, c->devs[i], nccl_run, j, w, 1, w, 2);
    if (st) atomic_store(&j->done, 1);
  }
  return st;
}

void gpar__mpi_nccl_destroy(gpar__mpi_ctx *c) {
  nccl_state *s = c->nccl_state;
  if (!s) return;
  for (int i = 0; i < s->n; i++)
    if (s->tokens[i].id) gpar_wait(s->tokens[i]);
  if (s->watching) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->watchdog, NULL);
  }
  for (int i = 0; i < s->nw; i++) cudaEventDestroy(s->w[i].ev);
  pthread_mutex_destroy(&s->mu);
  for (int i = 0; i < s->n; i++) {
    ncclResult_t ae = ncclSuccess;
    if (!s->comms[i]) continue;
    ncclCommGetAsyncError(s->comms[i], &ae);
    if (ae != ncclSuccess && ae != ncclInProgress)
      ncclCommAbort(s->comms[i]);
    else
      ncclCommDestroy(s->comms[i]);
  }
  for (int i = 0; i < s->n; i++)
    if (s->tokens[i].id) gpar_buffer_release(s->tokens[i]);
  free(s->tokens);
  free(s);
  c->nccl_state = NULL;
}
