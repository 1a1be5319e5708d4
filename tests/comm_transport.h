/* comm_transport.h: a test transport for gpar_comm_create_transport, shared by the lifetime tests
 * (tests/comm_lifetime.c, tests/lifetime_races.c). Built like libgpar_mpi's: its context holds a
 * token buffer that every one of its CPU ops writes, its destroy waits on that token and then
 * frees the context, and its ops read the context when they run. It simulates one remote member
 * that contributes tt_remote to every element, so an allreduce (float, sum) of the one local member
 * adds tt_remote to each element: a result that shows the op ran exactly once, with its context
 * intact. What the core did wrong (a context used after its destroy, a destroy before the
 * transport's ops ran, destroy called twice) is counted in tt_stats, outside the context, so the
 * counters survive the defects they count. A use of a freed context is also what ASan reports. */
#ifndef GPAR_TESTS_COMM_TRANSPORT_H
#define GPAR_TESTS_COMM_TRANSPORT_H

#include <sched.h>

#include "gpar_transport.h"
#include "testutil.h"

#define TT_MAGIC 0x7472616e73706f72ull /* "transpor" */
#define TT_DEAD 0xdeaddeaddeaddeadull
static const float tt_remote = 10.0f;

typedef struct tt_ctx {
  uint64_t magic;        /* TT_MAGIC while alive; TT_DEAD once destroyed, then freed */
  gpar_engine *eng;
  gpar_buffer token;     /* written by every op of this transport */
  atomic_int submitted;  /* ops submitted */
  atomic_int ran;        /* ops that ran */
} tt_ctx;

/* Counters of the whole program (reset per case with tt_reset). */
typedef struct tt_stats {
  atomic_int destroy_calls;  /* destroy entry calls */
  atomic_int early;          /* destroy called while some of its ops had not run */
  atomic_int bad_ctx;        /* an entry point or an op found a destroyed context */
  atomic_int ops_run;        /* ops that ran (any context) */
  /* A hold in the collective entry (lifetime_races.c): the entry announces it is inside, waits
   * for the destroyer to start, then gives it up to hold_us microseconds to return (or until
   * destroy_returned), and only then touches the context again. */
  atomic_int hold;
  atomic_int inside, destroy_started, destroy_returned;
  long hold_us;
  float x0[64];              /* element 0 after each op that ran, in the order they ran */
} tt_stats;

static tt_stats tt;

static inline void tt_reset(void) {
  atomic_store(&tt.destroy_calls, 0);
  atomic_store(&tt.early, 0);
  atomic_store(&tt.bad_ctx, 0);
  atomic_store(&tt.ops_run, 0);
  atomic_store(&tt.hold, 0);
  atomic_store(&tt.inside, 0);
  atomic_store(&tt.destroy_started, 0);
  atomic_store(&tt.destroy_returned, 0);
  tt.hold_us = 0;
  memset(tt.x0, 0, sizeof tt.x0);
}

typedef struct tt_job {
  tt_ctx *c;
  float *x;
  size_t count;
} tt_job;

/* The transport's CPU op: x += the remote member's contribution. */
static int tt_job_run(const gpar_native *nat, void *arg) {
  tt_job *j = arg;
  (void)nat;
  tt_ctx *c = j->c;
  if (c->magic != TT_MAGIC) { /* freed or destroyed: the core let an op outlive its transport */
    atomic_fetch_add(&tt.bad_ctx, 1);
    free(j);
    return gpar_error_set(GPAR_EINVAL, "test transport: op ran after its context was destroyed");
  }
  for (size_t i = 0; i < j->count; i++) j->x[i] += tt_remote;
  int k = atomic_fetch_add(&tt.ops_run, 1);
  if (k < 64) tt.x0[k] = j->x[0];
  atomic_fetch_add(&c->ran, 1);
  free(j);
  return GPAR_OK;
}

/* Spin (yielding) until *flag or `us` microseconds pass. */
static inline void tt_spin(atomic_int *flag, long us) {
  double end = gpar_now() + (double)us * 1e-6;
  while (!atomic_load(flag) && gpar_now() < end) sched_yield();
}

static int tt_collective(void *ctx, const gpar_coll *a) {
  tt_ctx *c = ctx;
  if (atomic_load(&tt.hold)) {
    atomic_store(&tt.inside, 1);
    tt_spin(&tt.destroy_started, 10000000);
    tt_spin(&tt.destroy_returned, tt.hold_us);
  }
  if (c->magic != TT_MAGIC) {
    atomic_fetch_add(&tt.bad_ctx, 1);
    return gpar_error_set(GPAR_EINVAL, "test transport: collective on a destroyed context");
  }
  if (a->kind != GPAR_COLL_ALLREDUCE || a->dtype != GPAR_FLOAT || a->op != GPAR_SUM)
    return gpar_error_set(GPAR_ENOTSUP, "test transport: float sum allreduce only");
  float *x = gpar_buffer_host_ptr(a->bufs[0]);
  tt_job *j = malloc(sizeof *j);
  if (!x || !j) {
    free(j);
    return gpar_error_set(GPAR_EINVAL, "test transport: a host buffer is needed");
  }
  *j = (tt_job){c, x + a->offs[0], a->count};
  gpar_buffer w[2] = {a->bufs[0], c->token};
  atomic_fetch_add(&c->submitted, 1);
  int st = gpar_submit(c->eng, GPAR_HOST, tt_job_run, j, &a->bufs[0], 1, w, 2);
  if (st != GPAR_OK) {
    atomic_fetch_sub(&c->submitted, 1);
    free(j);
  }
  return st;
}

/* Like libgpar_mpi's: wait for the last op (the token), then free. */
static void tt_destroy(void *ctx) {
  tt_ctx *c = ctx;
  atomic_fetch_add(&tt.destroy_calls, 1);
  if (c->magic != TT_MAGIC) {
    atomic_fetch_add(&tt.bad_ctx, 1);
    return;
  }
  gpar_wait(c->token); /* GPAR_EDEADLK inside an op, GPAR_ESHUTDOWN on a closed engine */
  if (atomic_load(&c->ran) != atomic_load(&c->submitted)) atomic_fetch_add(&tt.early, 1);
  gpar_buffer_release(c->token);
  c->magic = TT_DEAD;
  free(c);
}

static const gpar_comm_transport tt_transport = {tt_collective, tt_destroy};

/* A transport communicator of two members, the local one on device dev (the host CPU). */
static inline int tt_create(gpar_engine *eng, int dev, gpar_comm *comm) {
  tt_ctx *c = calloc(1, sizeof *c);
  if (!c) return GPAR_ENOMEM;
  c->magic = TT_MAGIC;
  c->eng = eng;
  int st = gpar_buffer_create(eng, GPAR_HOST, 64, &c->token);
  if (st == GPAR_OK) st = gpar_comm_create_transport(eng, &dev, 1, 2, 0, &tt_transport, c, comm);
  if (st != GPAR_OK) {
    if (c->token.id) gpar_buffer_release(c->token);
    free(c);
  }
  return st;
}

/* One float sum allreduce of count elements of the GPAR_HOST buffer b. */
static inline int tt_allreduce(gpar_comm comm, gpar_buffer b, size_t count) {
  return gpar_allreduce(comm, &b, NULL, count, GPAR_FLOAT, GPAR_SUM);
}

#endif
