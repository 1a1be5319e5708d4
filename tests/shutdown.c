/* shutdown.c: gpar_shutdown racing work that is still arriving (first found by the fuzzer). Ops that
 * running ops submit are drained before anything is freed; a thread that keeps submitting while
 * the engine shuts down sees only GPAR_OK or GPAR_ESHUTDOWN, and every op it got accepted ran
 * before gpar_shutdown returned. Run it under TSan and ASan too. */
#include <pthread.h>

#include "testutil.h"

/* ---------------------------------------------------------------- ops submitting ops */

typedef struct nested {
  gpar_engine *eng;
  gpar_buffer x;
  unsigned char *xmem;   /* host pointer of x */
  atomic_int inner_ran, check_ran;
  int inner_st, fill_st, check_st;
  unsigned char seen;    /* x[0] as the check op saw it */
} nested;

static int inner_fn(const gpar_native *nat, void *arg) {
  nested *n = arg;
  (void)nat;
  tu_sleep_us(100000);
  n->xmem[0] = 1;
  atomic_store(&n->inner_ran, 1);
  return GPAR_OK;
}

static int check_fn(const gpar_native *nat, void *arg) {
  nested *n = arg;
  (void)nat;
  n->seen = n->xmem[0];
  atomic_store(&n->check_ran, 1);
  return GPAR_OK;
}

/* The sequence: sleep 20 ms, then submit a slow writer of x and a fill of x (and a
 * reader that records what the fill left). */
static int outer_fn(const gpar_native *nat, void *arg) {
  nested *n = arg;
  (void)nat;
  tu_sleep_us(20000);
  n->inner_st = gpar_submit(n->eng, GPAR_HOST, inner_fn, n, NULL, 0, &n->x, 1);
  n->fill_st = gpar_fill(n->x, 0, 64, 7);
  n->check_st = gpar_submit(n->eng, GPAR_HOST, check_fn, n, &n->x, 1, NULL, 0);
  return GPAR_OK;
}

static void test_nested(int round) {
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  int cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  static nested n;
  memset(&n, 0, sizeof n);
  n.eng = eng;
  int st = gpar_buffer_create(eng, cpu, 64, &n.x);
  n.xmem = st == GPAR_OK ? gpar_buffer_host_ptr(n.x) : NULL;
  if (!n.xmem) bail_out("host buffer");
  st = gpar_submit(eng, cpu, outer_fn, &n, NULL, 0, NULL, 0);
  int sd = gpar_shutdown(eng); /* at once: the outer op has not submitted anything yet */
  ok(st == GPAR_OK && sd == GPAR_OK, "round %d: submit %s, shutdown %s", round, gpar_status_name(st),
     gpar_status_name(sd));
  ok(n.inner_st == GPAR_OK && n.fill_st == GPAR_OK && n.check_st == GPAR_OK,
     "round %d: the running op's submissions were accepted during shutdown (%s, %s, %s)", round,
     gpar_status_name(n.inner_st), gpar_status_name(n.fill_st), gpar_status_name(n.check_st));
  ok(atomic_load(&n.inner_ran) && atomic_load(&n.check_ran) && n.seen == 7,
     "round %d: they ran, in order, before shutdown returned (inner %d, check %d, saw %u)", round,
     atomic_load(&n.inner_ran), atomic_load(&n.check_ran), n.seen);
  is_status(gpar_fill(n.x, 0, 64, 0), GPAR_EBADBUF, "after shutdown the buffer handle is refused");
}

/* ---------------------------------------------------------------- a thread submitting */

typedef struct racer {
  gpar_engine *eng;
  gpar_buffer x;
  atomic_int started;
  long accepted, other;   /* submits that returned OK / anything but OK or ESHUTDOWN */
  int last;               /* the status that ended the loop */
} racer;

static atomic_long ran;

static int count_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  (void)arg;
  atomic_fetch_add(&ran, 1);
  return GPAR_OK;
}

static void *racer_main(void *arg) {
  racer *r = arg;
  atomic_store(&r->started, 1);
  for (long i = 0;; i++) {
    int st;
    if (i % 7 == 3) {
      gpar_buffer b;
      st = gpar_buffer_create(r->eng, GPAR_HOST, 64, &b);
      if (st == GPAR_OK) st = gpar_submit(r->eng, GPAR_HOST, count_fn, NULL, &b, 1, &r->x, 1);
    } else {
      st = gpar_submit(r->eng, GPAR_HOST, count_fn, NULL, NULL, 0, &r->x, 1);
    }
    if (st == GPAR_OK) {
      r->accepted++;
      continue;
    }
    if (st != GPAR_ESHUTDOWN) r->other++;
    r->last = st;
    break;
  }
  return NULL;
}

/* One lifetime of an engine with `workers` CPU workers, shut down up to max_sleep_us after a
 * thread started submitting into it; the shutdown's status, with the ops that had run when it
 * returned in *ran_at_return. */
static int race_shutdown(racer *r, int workers, int max_sleep_us, uint64_t *seed, long *ran_at_return) {
  memset(r, 0, sizeof *r);
  atomic_store(&ran, 0);
  r->eng = tu_engine(GPAR_BACKEND_HOST, workers, 0);
  if (gpar_buffer_create(r->eng, GPAR_HOST, 64, &r->x) != GPAR_OK) bail_out("buffer");
  pthread_t th;
  if (pthread_create(&th, NULL, racer_main, r)) bail_out("pthread_create");
  tu_wait_flag(&r->started, 10);
  tu_sleep_us(tu_range(seed, 0, max_sleep_us));
  int sd = gpar_shutdown(r->eng);
  *ran_at_return = atomic_load(&ran);
  pthread_join(th, NULL);
  return sd;
}

static void test_racer(int round, uint64_t *seed) {
  racer r;
  long ran_at_return;
  int sd = race_shutdown(&r, 2, 3000, seed, &ran_at_return);
  ok(sd == GPAR_OK && r.other == 0 && r.last == GPAR_ESHUTDOWN,
     "round %d: shutdown %s; the racing thread saw only OK or ESHUTDOWN (%ld accepted, ended on %s)", round,
     gpar_status_name(sd), r.accepted, gpar_status_name(r.last));
  ok(ran_at_return == r.accepted && atomic_load(&ran) == r.accepted,
     "round %d: every accepted op ran before shutdown returned (%ld ran, %ld accepted)", round, ran_at_return,
     r.accepted);
}

/* Many short lifetimes, each shut down while a thread submits bufferless ops as fast as it can:
 * a submission that counted itself in flight just before the drain closed the engine, then saw
 * it closed and took itself off again, must wake the drain (it once went back to sleep for
 * good; the fuzzer found it as a timeout). A hang here ends in the watchdog (GPAR_TEST_TIMEOUT).
 * The window is a few instructions wide (a call that entered before the shutdown, counted between
 * the drain's last look and its close): this loop exercises it but rarely hits it; the
 * library without the fix passed it 8 times in 8 (idle and with 3 spinning threads). With the
 * window widened by hand (usleep(100) in the drain before it closes, usleep(300) in a submission
 * after it counted itself once the engine is closing), the library without the fix hangs here
 * (Bail out! timeout) and with it passes. */
static void test_close_race(int rounds, uint64_t *seed) {
  long accepted = 0, ran_total = 0, bad = 0;
  double t0 = gpar_now();
  for (int i = 0; i < rounds; i++) {
    racer r;
    long ran_at_return;
    if (race_shutdown(&r, 1, 200, seed, &ran_at_return) != GPAR_OK) bad++;
    if (r.other || r.last != GPAR_ESHUTDOWN || atomic_load(&ran) != r.accepted) bad++;
    accepted += r.accepted;
    ran_total += atomic_load(&ran);
  }
  ok(bad == 0, "%d lifetimes shut down under a submitting thread: none hung, %ld bad, %ld ops accepted and %ld ran "
     "(%.1f s)", rounds, bad, accepted, ran_total, gpar_now() - t0);
}

int main(void) {
  enum { NESTED = 4, RACES = 12, CLOSE_RACES = 1000 };
  plan(NESTED * 4 + RACES * 2 + 1);
  uint64_t seed = tu_seed(16);
  for (int i = 0; i < NESTED; i++) test_nested(i);
  for (int i = 0; i < RACES; i++) test_racer(i, &seed);
  test_close_race(CLOSE_RACES, &seed);
  return done_testing();
}
