/* retire.c: both retirement modes (gpar_config.retire: combining and direct) with more CPU
 * workers than cores, so finishing workers contend: no op may be lost or retired early, the
 * last op before a wait must retire (a hang is a failure: tap.h's watchdog), and failures
 * propagate along the data edges as before. */
#include "testutil.h"

#define NBUF 32
#define CHAIN 300
#define FAULT_LEN 50
#define FAULT_AT 20
#define PINGS 2000

static atomic_long nobuf_runs;

typedef struct cell {
  gpar_buffer b;
  long *p; /* host pointer of b */
} cell;

static int add_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  long *p = arg;
  *p += 1; /* non-atomic: only this buffer's ops, ordered by the engine, touch it */
  return GPAR_OK;
}

static int count_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  (void)arg;
  atomic_fetch_add(&nobuf_runs, 1);
  return GPAR_OK;
}

static void run_mode(int mode, const char *name) {
  gpar_config cfg;
  gpar_config_init(&cfg);
  cfg.retire = mode;
  cfg.host_threads = 8;
  cfg.backends = GPAR_BACKEND_HOST;
  gpar_engine *eng;
  int st = gpar_init(&eng, &cfg);
  ok(st == GPAR_OK, "%s: init with 8 CPU workers (%s)", name, gpar_status_name(st));
  if (st != GPAR_OK) return;
  int dev = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);

  /* Many RW chains interleaved with independent ops without buffers. */
  cell c[NBUF];
  int bad = 0;
  for (int i = 0; i < NBUF; i++) {
    bad |= gpar_buffer_create(eng, dev, sizeof(long), &c[i].b) != GPAR_OK;
    c[i].p = bad ? NULL : gpar_buffer_host_ptr(c[i].b);
    bad |= !c[i].p;
    if (!bad) *c[i].p = 0;
  }
  ok(!bad, "%s: %d host buffers", name, NBUF);
  if (bad) {
    gpar_shutdown(eng);
    return;
  }
  atomic_store(&nobuf_runs, 0);
  gpar_stats s0, s1;
  gpar_stats_get(eng, &s0);
  int sub_bad = 0;
  for (int k = 0; k < CHAIN; k++)
    for (int i = 0; i < NBUF; i++) {
      sub_bad |= gpar_submit(eng, dev, add_fn, c[i].p, &c[i].b, 1, &c[i].b, 1) != GPAR_OK;
      if (i % 4 == 0) sub_bad |= gpar_submit(eng, dev, count_fn, NULL, NULL, 0, NULL, 0) != GPAR_OK;
    }
  st = gpar_wait_all(eng);
  ok(st == GPAR_OK && !sub_bad, "%s: %d chains of %d plus ops without buffers: wait_all %s", name, NBUF, CHAIN,
     gpar_status_name(st));
  int wrong = 0;
  for (int i = 0; i < NBUF; i++) wrong += *c[i].p != CHAIN;
  long want_nobuf = (long)CHAIN * ((NBUF + 3) / 4);
  ok(wrong == 0 && atomic_load(&nobuf_runs) == want_nobuf,
     "%s: every chain ran each of its ops once, in order (%d wrong); ops without buffers ran %ld of %ld", name,
     wrong, atomic_load(&nobuf_runs), want_nobuf);
  gpar_stats_get(eng, &s1);
  uint64_t n = s1.ops_submitted - s0.ops_submitted, done = s1.ops_completed - s0.ops_completed;
  ok(n == (uint64_t)(NBUF * CHAIN + want_nobuf) && done == n && s1.ops_in_flight == 0 && s1.ops_failed == s0.ops_failed,
     "%s: counters: %llu submitted, %llu completed, %llu in flight", name, (unsigned long long)n,
     (unsigned long long)done, (unsigned long long)s1.ops_in_flight);

  /* The last op before a wait retires, again and again (a finished op left on the combining
   * list would hang here). */
  int ping_bad = 0;
  for (int i = 0; i < PINGS && !ping_bad; i++) {
    ping_bad |= gpar_submit(eng, dev, add_fn, c[i % NBUF].p, NULL, 0, &c[i % NBUF].b, 1) != GPAR_OK;
    if (i % 2) ping_bad |= gpar_submit(eng, dev, count_fn, NULL, NULL, 0, NULL, 0) != GPAR_OK;
    ping_bad |= gpar_wait(c[i % NBUF].b) != GPAR_OK;
  }
  ok(!ping_bad, "%s: %d submit-then-wait round trips returned", name, PINGS);
  ok(gpar_wait_all(eng) == GPAR_OK, "%s: wait_all after the round trips", name);

  /* A failure in one chain: its op fails, every later op of the chain is skipped. */
  *c[0].p = 0;
  gpar_stats_get(eng, &s0);
  gpar_fault_inject(eng, "user", FAULT_AT);
  for (int k = 0; k < FAULT_LEN; k++) gpar_submit(eng, dev, add_fn, c[0].p, &c[0].b, 1, &c[0].b, 1);
  int w = gpar_wait(c[0].b), wa = gpar_wait_all(eng);
  gpar_stats_get(eng, &s1);
  ok(w == GPAR_EDEPFAILED && wa == GPAR_EFAULT, "%s: fault at op %d of %d: wait %s, wait_all %s", name, FAULT_AT,
     FAULT_LEN, gpar_status_name(w), gpar_status_name(wa));
  ok(*c[0].p == FAULT_AT - 1 && s1.ops_failed - s0.ops_failed == FAULT_LEN - FAULT_AT + 1,
     "%s: %ld ops ran (want %d), %llu failed or skipped (want %d)", name, *c[0].p, FAULT_AT - 1,
     (unsigned long long)(s1.ops_failed - s0.ops_failed), FAULT_LEN - FAULT_AT + 1);

  for (int i = 0; i < NBUF; i++) gpar_buffer_release(c[i].b);
  ok(gpar_shutdown(eng) == GPAR_OK, "%s: shutdown", name);
}

int main(void) {
  plan(20);
  run_mode(GPAR_RETIRE_COMBINE, "combine");
  run_mode(GPAR_RETIRE_DIRECT, "direct");
  return done_testing();
}
