/* contention.c: many submitting threads against many CPU workers on an engine without a global
 * lock. 16 threads submit at once, to 16 workers, ops that read and write shared buffers in
 * every combination, ops on two shared buffers at once in both orders (two threads linking
 * one op each over the same two buffers in opposite orders must not make a cycle), and
 * private chains. Every value is exact: slot t of a shared buffer changes only through thread
 * t's ops, in its submit order, so a reader thread t submits after its nth increment must see
 * exactly n there, whatever the other threads do to the other slots. Runs under TSan in CI. */
#include <pthread.h>
#include "testutil.h"

#define NTHREADS 16
#define WORKERS 16
#define NSHARED 4
#define ITERS 3000 /* ops per thread; times GPAR_STRESS_SCALE */

static gpar_engine *eng;
static gpar_buffer shared[NSHARED];
static uint64_t *shared_p[NSHARED];
static atomic_int violations;

typedef struct tctx {
  int t, iters;
  uint64_t seed;
  gpar_buffer priv;
  uint64_t *priv_p;
  uint64_t expect_priv;
  uint64_t expect_shared[NSHARED]; /* this thread's increments of each shared buffer */
  struct op_arg {
    struct tctx *ctx;
    int k1, k2;       /* shared buffers */
    uint64_t want1, want2;
  } *args;
  int bad_submits;
} tctx;

/* Non-atomic read-modify-writes: only the engine's ordering keeps them exact. */
static int inc_one(const gpar_native *nat, void *arg) {
  struct op_arg *a = arg;
  (void)nat;
  volatile uint64_t *s = shared_p[a->k1] + a->ctx->t;
  uint64_t v = *s;
  *s = v + 1;
  return GPAR_OK;
}

static int inc_two(const gpar_native *nat, void *arg) {
  struct op_arg *a = arg;
  (void)nat;
  volatile uint64_t *s1 = shared_p[a->k1] + a->ctx->t, *s2 = shared_p[a->k2] + a->ctx->t;
  uint64_t v1 = *s1, v2 = *s2;
  *s1 = v1 + 1;
  *s2 = v2 + 1;
  return GPAR_OK;
}

static int inc_priv(const gpar_native *nat, void *arg) {
  struct op_arg *a = arg;
  (void)nat;
  volatile uint64_t *p = a->ctx->priv_p;
  uint64_t v = *p;
  *p = v + 1;
  return GPAR_OK;
}

/* Reads two shared buffers (and writes the private one): this thread's slots must hold exactly
 * its increments submitted before. */
static int check_read(const gpar_native *nat, void *arg) {
  struct op_arg *a = arg;
  (void)nat;
  if (shared_p[a->k1][a->ctx->t] != a->want1 || shared_p[a->k2][a->ctx->t] != a->want2)
    atomic_fetch_add(&violations, 1);
  return GPAR_OK;
}

static void *submitter(void *arg) {
  tctx *c = arg;
  uint64_t s = c->seed;
  for (int i = 0; i < c->iters; i++) {
    struct op_arg *a = &c->args[i];
    a->ctx = c;
    a->k1 = tu_range(&s, 0, NSHARED - 1);
    a->k2 = (a->k1 + tu_range(&s, 1, NSHARED - 1)) % NSHARED; /* another one, either order */
    int r = tu_range(&s, 0, 99), st;
    if (r < 30) { /* one shared buffer, read-write */
      st = gpar_submit(eng, GPAR_HOST, inc_one, a, &shared[a->k1], 1, &shared[a->k1], 1);
      c->expect_shared[a->k1]++;
    } else if (r < 50) { /* two shared buffers at once, in this thread's random order */
      gpar_buffer two[2] = {shared[a->k1], shared[a->k2]};
      st = gpar_submit(eng, GPAR_HOST, inc_two, a, two, 2, two, 2);
      c->expect_shared[a->k1]++;
      c->expect_shared[a->k2]++;
    } else if (r < 75) { /* a private chain */
      st = gpar_submit(eng, GPAR_HOST, inc_priv, a, &c->priv, 1, &c->priv, 1);
      c->expect_priv++;
    } else { /* readers of two shared buffers, writers of the private one */
      gpar_buffer rd[2] = {shared[a->k1], shared[a->k2]};
      a->want1 = c->expect_shared[a->k1];
      a->want2 = c->expect_shared[a->k2];
      st = gpar_submit(eng, GPAR_HOST, check_read, a, rd, 2, &c->priv, 1);
    }
    if (st != GPAR_OK) c->bad_submits++;
  }
  return NULL;
}

int main(void) {
  tap_start();
  eng = tu_engine(GPAR_BACKEND_HOST, WORKERS, 0);
  int scale = getenv("GPAR_STRESS_SCALE") ? atoi(getenv("GPAR_STRESS_SCALE")) : 1;
  if (scale < 1) scale = 1;
  diag("%d submitting threads x %d ops against %d CPU workers, %d shared buffers", NTHREADS, ITERS * scale, WORKERS,
       NSHARED);
  for (int k = 0; k < NSHARED; k++) {
    shared[k] = tu_buffer(eng, GPAR_HOST, sizeof(uint64_t) * NTHREADS);
    shared_p[k] = gpar_buffer_host_ptr(shared[k]);
    gpar_fill(shared[k], 0, sizeof(uint64_t) * NTHREADS, 0);
  }
  static tctx ctx[NTHREADS];
  pthread_t th[NTHREADS];
  uint64_t seed = tu_seed(0xc047e471);
  for (int t = 0; t < NTHREADS; t++) {
    ctx[t].t = t;
    ctx[t].iters = ITERS * scale;
    ctx[t].seed = tu_mix(seed + (uint64_t)t);
    ctx[t].args = calloc((size_t)ctx[t].iters, sizeof *ctx[t].args);
    ctx[t].priv = tu_buffer(eng, GPAR_HOST, sizeof(uint64_t));
    ctx[t].priv_p = gpar_buffer_host_ptr(ctx[t].priv);
    gpar_fill(ctx[t].priv, 0, sizeof(uint64_t), 0);
  }
  ok(gpar_wait_all(eng) == GPAR_OK, "buffers set up");
  double t0 = gpar_now();
  for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, submitter, &ctx[t]);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  int wa = gpar_wait_all(eng);
  double dt = gpar_now() - t0;
  int bad = 0, badsub = 0;
  for (int t = 0; t < NTHREADS; t++) {
    badsub += ctx[t].bad_submits;
    if (*ctx[t].priv_p != ctx[t].expect_priv) bad++;
    for (int k = 0; k < NSHARED; k++)
      if (shared_p[k][t] != ctx[t].expect_shared[k]) bad++;
  }
  ok(wa == GPAR_OK && !badsub, "every op accepted and run (wait_all %s, %d refused)", gpar_status_name(wa), badsub);
  ok(!bad, "shared and private counters exact (%d wrong of %d)", bad, NTHREADS * (NSHARED + 1));
  ok(!atomic_load(&violations), "every reader saw exactly its thread's earlier writes (%d did not)",
     atomic_load(&violations));
  gpar_stats stats;
  gpar_stats_get(eng, &stats);
  ok(stats.ops_in_flight == 0 && stats.ops_completed == stats.ops_submitted, "counters settled (%llu in flight)",
     (unsigned long long)stats.ops_in_flight);
  diag("%.0f ops/s over %.2f s", (double)NTHREADS * ITERS * scale / dt, dt);
  for (int t = 0; t < NTHREADS; t++) {
    gpar_buffer_release(ctx[t].priv);
    free(ctx[t].args);
  }
  for (int k = 0; k < NSHARED; k++) gpar_buffer_release(shared[k]);
  ok(gpar_shutdown(eng) == GPAR_OK, "shutdown");
  return done_testing();
}
