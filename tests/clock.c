/* clock.c: gpar_now is the monotonic clock in seconds, callable without an engine and from any
 * thread: every reading lies between two CLOCK_MONOTONIC readings taken around it (so it is that
 * clock, in seconds, not another clock or unit), readings never go back within a thread, and
 * four threads reading at once each see a clock that never goes back. */
#include <pthread.h>
#include <time.h>
#include "testutil.h"

#define READS 200000

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Readings of one thread: 1 when none went back. */
static void *reader(void *arg) {
  int *ok_out = arg;
  double last = gpar_now();
  *ok_out = 1;
  for (int i = 0; i < READS; i++) {
    double t = gpar_now();
    if (t < last) *ok_out = 0;
    last = t;
  }
  return NULL;
}

int main(void) {
  plan(4);
  int inside = 1;
  double worst = 0;
  for (int i = 0; i < 1000; i++) {
    double a = mono(), t = gpar_now(), b = mono();
    if (!(a <= t && t <= b)) inside = 0;
    if (b - a > worst) worst = b - a;
    if (i % 100 == 0) tu_sleep_us(100);
  }
  ok(inside, "gpar_now lies between two CLOCK_MONOTONIC readings around it, 1000 times (no engine)");
  diag("widest bracket %.3g s", worst);
  int mono_ok;
  reader(&mono_ok);
  ok(mono_ok, "%d readings in one thread never go back", READS);
  double t0 = gpar_now();
  tu_sleep_us(20000);
  double dt = gpar_now() - t0, a = mono();
  ok(dt >= 0.02 && gpar_now() >= a, "a 20 ms sleep advances it by at least 0.02 s (%.4f s)", dt);
  pthread_t th[4];
  int res[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, reader, &res[i]);
  int all = 1;
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    all &= res[i];
  }
  ok(all, "4 threads reading at once: none sees it go back");
  return done_testing();
}
