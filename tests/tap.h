/* tap.h: a minimal TAP producer for libgpar's test programs (static inline, one header).
 * plan() or tap_start() also arms a watchdog: after GPAR_TEST_TIMEOUT seconds (default 120) the
 * program prints "Bail out! timeout" and exits, so a hang is a failure, never a stuck `make check`. */
#ifndef GPAR_TESTS_TAP_H
#define GPAR_TESTS_TAP_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_count, tap_failed, tap_planned = -1;

static inline void tap__on_alarm(int sig) {
  static const char msg[] = "Bail out! timeout\n";
  (void)sig;
  (void)!write(1, msg, sizeof msg - 1);
  _exit(1);
}

/* Arm the watchdog (no plan yet: done_testing prints it). */
static inline void tap_start(void) {
  const char *e = getenv("GPAR_TEST_TIMEOUT");
  unsigned secs = e && atoi(e) > 0 ? (unsigned)atoi(e) : 120;
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, tap__on_alarm);
  alarm(secs);
}

static inline void plan(int n) {
  tap_start();
  tap_planned = n;
  printf("1..%d\n", n);
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("# ", stdout);
  vprintf(fmt, ap);
  fputs("\n", stdout);
  va_end(ap);
}

static inline int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int ok(int cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%sok %d - ", cond ? "" : "not ", ++tap_count);
  vprintf(fmt, ap);
  fputs("\n", stdout);
  va_end(ap);
  if (!cond) tap_failed++;
  return cond;
}

static inline int is_int(long long got, long long want, const char *name) {
  int r = ok(got == want, "%s", name);
  if (!r) diag("  got: %lld, want: %lld", got, want);
  return r;
}

#ifdef GPAR_H
/* is_int for gpar statuses: the failure diagnostic names both codes. */
static inline int is_status(int got, int want, const char *name) {
  int r = ok(got == want, "%s", name);
  if (!r) diag("  got: %s (%d), want: %s (%d); last error: %s", gpar_status_name(got), got,
               gpar_status_name(want), want, gpar_last_error());
  return r;
}
#endif

/* n planned tests that cannot run here. */
static inline void skip(int n, const char *reason) {
  while (n-- > 0) printf("ok %d # SKIP %s\n", ++tap_count, reason);
}

/* The whole program does not apply here: no plan may have been printed yet. After tests have
 * run it is a mistake in the program, reported as a failure rather than a skip. */
static inline void skip_all(const char *reason) __attribute__((noreturn));
static inline void skip_all(const char *reason) {
  if (tap_count > 0 || tap_planned >= 0) {
    printf("Bail out! skip_all(\"%s\") after %d tests\n", reason, tap_count);
    fflush(stdout);
    exit(1);
  }
  printf("1..0 # SKIP %s\n", reason);
  fflush(stdout);
  exit(0);
}

static inline void bail_out(const char *reason) __attribute__((noreturn));
static inline void bail_out(const char *reason) {
  printf("Bail out! %s\n", reason);
  fflush(stdout);
  exit(1);
}

/* Print the plan if none was given; return the exit status (0 when all passed). Main returns
 * it (`return done_testing();`): a program's exit status is its result. No test at all is a
 * failure, not a pass (a program that does not apply calls skip_all instead). */
static inline int done_testing(void) {
  if (tap_planned < 0 && tap_count == 0) {
    printf("Bail out! no test ran\n");
    fflush(stdout);
    return 1;
  }
  if (tap_planned < 0) {
    printf("1..%d\n", tap_count);
  } else if (tap_planned != tap_count) {
    diag("planned %d tests but ran %d", tap_planned, tap_count);
    return 1;
  }
  if (tap_failed) diag("failed %d of %d tests", tap_failed, tap_count);
  fflush(stdout);
  return tap_failed ? 1 : 0;
}

#endif
