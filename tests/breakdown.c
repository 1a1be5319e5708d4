/* breakdown.c: the per-op host-time breakdown behind the trace switch (gpar_breakdown_get):
 * counted only with tracing on, one measurement per retired op, phases that add up, and a
 * CPU op's own run time lands in "dispatch" (a lower bound, no timing target). */
#include "testutil.h"

static int sleepy(const gpar_native *nat, void *arg) {
  (void)nat;
  tu_sleep_us(*(long *)arg);
  return GPAR_OK;
}

int main(void) {
  plan(9);
  gpar_config cfg;
  gpar_config_init(&cfg);
  cfg.backends = GPAR_BACKEND_HOST;
  cfg.quiet = 1;
  cfg.host_threads = 2;
  cfg.trace_path = NULL;
  gpar_engine *off = NULL, *eng = NULL;
  if (gpar_init(&off, &cfg) != GPAR_OK) bail_out("gpar_init");
  gpar_breakdown bd;
  is_status(gpar_breakdown_get(off, &bd, 0), GPAR_ENOTSUP, "tracing off: ENOTSUP");
  ok(bd.ops == 0, "  and nothing measured");
  gpar_shutdown(off);

  cfg.trace_path = ""; /* time ops, write no file */
  if (gpar_init(&eng, &cfg) != GPAR_OK) bail_out("gpar_init");
  gpar_buffer b;
  if (gpar_buffer_create(eng, GPAR_HOST, 64, &b) != GPAR_OK) bail_out("buffer");
  is_status(gpar_breakdown_get(eng, &bd, 1), GPAR_OK, "tracing on: OK (reset)");
  enum { N = 20 };
  long us = 2000;
  for (int i = 0; i < N; i++) gpar_submit(eng, GPAR_HOST, sleepy, &us, &b, 1, &b, 1); /* a chain */
  is_status(gpar_wait_all(eng), GPAR_OK, "a chain of sleeping ops ran");
  is_status(gpar_breakdown_get(eng, &bd, 1), GPAR_OK, "breakdown");
  is_int((long long)bd.ops, N, "one measurement per retired op");
  ok(bd.submit_us >= 0 && bd.handoff_us >= 0 && bd.complete_us >= 0 && bd.retire_us >= 0,
     "phases are not negative (submit %.2f, handoff %.2f, complete %.2f, retire %.2f us)", bd.submit_us,
     bd.handoff_us, bd.complete_us, bd.retire_us);
  ok(bd.dispatch_us >= (double)us, "the op's own 2 ms are in dispatch (%.1f us)", bd.dispatch_us);
  gpar_breakdown_get(eng, &bd, 0);
  ok(bd.ops == 0, "reset starts a new measurement");
  gpar_buffer_release(b);
  gpar_shutdown(eng);
  return done_testing();
}
