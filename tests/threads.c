/* threads.c: several threads submit at once to one engine, on shared and private buffers:
 * no op may be lost or reordered within its buffer's history, and waits from many threads at
 * once must all return. */
#include <pthread.h>
#include "testutil.h"

#define NTHREADS 6
#define ITERS 1500
#define PWORDS (1 + 2 * ITERS)

static gpar_engine *eng;
static int cpu;
static gpar_buffer shared_s, shared_c; /* S: counters (RW by all); C: constants (read by all) */
static uint64_t cvals[16];
static atomic_int violations;

typedef struct tctx {
  int t;
  uint64_t seed;
  gpar_buffer p, p2;
  uint64_t *s, *c, *pp;
  int incs, fails;
  char why[160];
  /* per-op arguments; live until the thread's final wait */
  struct targ {
    struct tctx *ctx;
    uint64_t v;
  } args[ITERS];
} tctx;

/* S[0] += 1 and S[1+t] += 1, as a deliberately non-atomic read-modify-write. */
static int inc_fn(const gpar_native *nat, void *arg) {
  struct targ *a = arg;
  (void)nat;
  volatile uint64_t *s = a->ctx->s;
  uint64_t g = s[0], m = s[1 + a->ctx->t];
  for (volatile int spin = 0; spin < 200; spin++) {
  }
  s[0] = g + 1;
  s[1 + a->ctx->t] = m + 1;
  return GPAR_OK;
}

/* Append v ^ C[v % 16] to the private log. */
static int append_fn(const gpar_native *nat, void *arg) {
  struct targ *a = arg;
  (void)nat;
  uint64_t *p = a->ctx->pp;
  p[1 + p[0]] = a->v ^ a->ctx->c[a->v % 16];
  p[0]++;
  return GPAR_OK;
}

/* Append this thread's counter in S (deterministic: only this thread's ops change it, in its
 * submit order); S[0] must never be below it. */
static int snap_fn(const gpar_native *nat, void *arg) {
  struct targ *a = arg;
  (void)nat;
  uint64_t *p = a->ctx->pp, mine = a->ctx->s[1 + a->ctx->t], all = a->ctx->s[0];
  if (all < mine) atomic_fetch_add(&violations, 1);
  p[1 + p[0]] = mine;
  p[0]++;
  return GPAR_OK;
}

static void *worker(void *arg) {
  tctx *x = arg;
  uint64_t rs = x->seed, ref[PWORDS], ref2[PWORDS], tmp[PWORDS];
  int st;
#define TFAIL(...) do { if (!x->fails++) snprintf(x->why, sizeof x->why, __VA_ARGS__); } while (0)
  memset(ref, 0, sizeof ref);
  memset(ref2, 0, sizeof ref2);
  if (gpar_buffer_create(eng, cpu, sizeof ref, &x->p) != GPAR_OK ||
      gpar_buffer_create(eng, x->t % 2 ? GPAR_HOST : cpu, sizeof ref, &x->p2) != GPAR_OK) {
    TFAIL("create failed");
    return NULL;
  }
  x->pp = gpar_buffer_native(x->p);
  gpar_write(x->p, 0, ref, sizeof ref);
  gpar_write(x->p2, 0, ref2, sizeof ref2);
  for (int i = 0; i < ITERS; i++) {
    struct targ *a = &x->args[i];
    int p = tu_range(&rs, 0, 99);
    a->ctx = x;
    a->v = tu_rand(&rs);
    gpar_buffer pc[2] = {x->p, shared_c}, ps[2] = {x->p, shared_s};
    if (p < 40) {
      st = gpar_submit(eng, cpu, inc_fn, a, &shared_s, 1, &shared_s, 1);
      x->incs++;
    } else if (p < 65) {
      st = gpar_submit(eng, cpu, append_fn, a, pc, 2, &x->p, 1);
      ref[1 + ref[0]] = a->v ^ cvals[a->v % 16];
      ref[0]++;
    } else if (p < 80) {
      st = gpar_submit(eng, cpu, snap_fn, a, ps, 2, &x->p, 1);
      ref[1 + ref[0]] = (uint64_t)x->incs;
      ref[0]++;
    } else if (p < 88) {
      st = gpar_copy(x->p2, 0, x->p, 0, sizeof ref);
      memcpy(ref2, ref, sizeof ref);
    } else if (p < 93) {
      st = gpar_read(x->p2, 0, tmp, sizeof tmp);
      if (st == GPAR_OK && memcmp(tmp, ref2, sizeof tmp)) TFAIL("iteration %d: read of the private copy differs", i);
    } else if (p < 97) {
      st = gpar_wait(shared_s); /* many threads wait on the shared buffer at once */
    } else {
      st = gpar_wait(x->p);
      if (st == GPAR_OK && memcmp(x->pp, ref, sizeof ref)) TFAIL("iteration %d: private log after wait differs", i);
    }
    if (st != GPAR_OK) TFAIL("iteration %d: %s", i, gpar_status_name(st));
  }
  st = gpar_read(x->p, 0, tmp, sizeof tmp);
  if (st != GPAR_OK) TFAIL("final read: %s", gpar_status_name(st));
  else if (memcmp(tmp, ref, sizeof tmp)) TFAIL("final private log differs from the replay (len %llu want %llu)",
                                               (unsigned long long)tmp[0], (unsigned long long)ref[0]);
  st = gpar_wait_all(eng); /* all threads at once */
  if (st != GPAR_OK) TFAIL("wait_all: %s", gpar_status_name(st));
  if (gpar_buffer_release(x->p) != GPAR_OK || gpar_buffer_release(x->p2) != GPAR_OK) TFAIL("release");
  return NULL;
#undef TFAIL
}

int main(void) {
  static tctx ctx[NTHREADS];
  pthread_t th[NTHREADS];
  uint64_t zero[16] = {0};
  tap_start();
  uint64_t seed = tu_seed(77);
  eng = tu_engine(GPAR_BACKEND_HOST, 4, 0);
  cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  if (cpu < 0) bail_out("no CPU device");
  for (int i = 0; i < 16; i++) cvals[i] = tu_mix(seed + (uint64_t)i);
  if (gpar_buffer_create(eng, cpu, sizeof zero, &shared_s) != GPAR_OK ||
      gpar_buffer_create(eng, GPAR_HOST, sizeof cvals, &shared_c) != GPAR_OK)
    bail_out("gpar_buffer_create");
  gpar_write(shared_s, 0, zero, sizeof zero);
  gpar_write(shared_c, 0, cvals, sizeof cvals);
  gpar_wait_all(eng);
  double t0 = gpar_now();
  for (int t = 0; t < NTHREADS; t++) {
    ctx[t].t = t;
    ctx[t].seed = tu_mix(seed * 31 + (uint64_t)t);
    ctx[t].s = gpar_buffer_native(shared_s);
    ctx[t].c = gpar_buffer_native(shared_c);
    if (pthread_create(&th[t], NULL, worker, &ctx[t])) bail_out("pthread_create");
  }
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  int total = 0;
  for (int t = 0; t < NTHREADS; t++) {
    ok(ctx[t].fails == 0, "thread %d: private results equal its sequential replay", t);
    if (ctx[t].fails) diag("  seed %llu thread %d: %d failures, first: %s", (unsigned long long)seed, t,
                           ctx[t].fails, ctx[t].why);
    total += ctx[t].incs;
  }
  uint64_t s[16];
  is_status(gpar_read(shared_s, 0, s, sizeof s), GPAR_OK, "read the shared counters");
  is_int((long long)s[0], total, "shared counter: no increment lost");
  int per = 1;
  for (int t = 0; t < NTHREADS; t++) per &= s[1 + t] == (uint64_t)ctx[t].incs;
  ok(per, "per-thread counters in the shared buffer exact");
  is_int(atomic_load(&violations), 0, "no snapshot saw the total below a thread's own count");
  is_status(gpar_wait_all(eng), GPAR_OK, "final wait_all");
  gpar_stats st;
  gpar_stats_get(eng, &st);
  ok(st.ops_in_flight == 0 && st.ops_completed == st.ops_submitted && st.ops_failed == 0 &&
         st.ops_submitted >= (uint64_t)(NTHREADS * ITERS / 2),
     "counters: %llu submitted, %llu completed, %llu failed", (unsigned long long)st.ops_submitted,
     (unsigned long long)st.ops_completed, (unsigned long long)st.ops_failed);
  gpar_buffer_release(shared_s);
  gpar_buffer_release(shared_c);
  gpar_stats_get(eng, &st);
  is_int((long long)st.buffers_live, 0, "every buffer freed");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  diag("%d threads x %d ops in %.2f s", NTHREADS, ITERS, gpar_now() - t0);
  return done_testing();
}
