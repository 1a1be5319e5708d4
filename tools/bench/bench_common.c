/* bench_common.c: the helpers every part of gpar-bench uses (its clock is gpar_now): statistics over
 * --repeat runs and their formatting, progress and failure messages, number parsing, and the
 * matrix fill and spot check of the GEMM experiments. Calls nothing else of the tool. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

bench_stat bench_stats(const double *v, int count) {
  bench_stat s = {0, 0, 0, count};
  if (count <= 0) return s;
  double tmp[count];
  memcpy(tmp, v, sizeof tmp);
  qsort(tmp, (size_t)count, sizeof tmp[0], cmp_double);
  s.min = tmp[0];
  s.max = tmp[count - 1];
  s.med = (count & 1) ? tmp[count / 2] : 0.5 * (tmp[count / 2 - 1] + tmp[count / 2]);
  return s;
}

const char *bench_fmt_rate(char *buf, size_t len, double flop, double sec) {
  double r = sec > 0 ? flop / sec : 0;
  if (r >= 1e12)
    snprintf(buf, len, "%.2f TFLOP/s", r * 1e-12);
  else
    snprintf(buf, len, "%.1f GFLOP/s", r * 1e-9);
  return buf;
}

const char *bench_fmt_stat(char *buf, size_t len, bench_stat s) {
  if (s.count > 1)
    snprintf(buf, len, "%.4f sec (median; min %.4f, max %.4f, %d runs)", s.med, s.min, s.max,
             s.count);
  else
    snprintf(buf, len, "%.4f sec", s.med);
  return buf;
}

void bench_progress(bench_ctx *ctx, const char *fmt, ...) {
  if (ctx->o.quiet) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gpar-bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

int bench_fail(const char *what, int st) {
  const char *detail = gpar_last_error();
  fprintf(stderr, "gpar-bench: %s: %s%s%s%s\n", what, gpar_status_name(st),
          detail && *detail ? " (" : "", detail ? detail : "", detail && *detail ? ")" : "");
  return st;
}

/* ---- helpers shared by the subcommands ---- */

int bench_fill_matrix(gpar_buffer buf, int n, float value) {
  size_t count = (size_t)n * (size_t)n;
  float *h = malloc(count * sizeof *h);
  if (!h) return GPAR_ENOMEM;
  for (size_t i = 0; i < count; i++) h[i] = value;
  int st = gpar_write(buf, 0, h, count * sizeof *h); /* staged: h may be freed on return */
  free(h);
  return st;
}

int bench_check(bench_ctx *ctx, const char *what, const float *v, size_t count, float want) {
  /* A handful of entries spread over the array, first and last included. */
  size_t idx[8] = {0, count / 7, count / 3, count / 2, 2 * (count / 3), count - count / 5,
                   count > 1 ? count - 2 : 0, count - 1};
  if (count == 0) return 0;
  for (int i = 0; i < 8; i++) {
    if (idx[i] >= count) idx[i] = count - 1;
    if (v[idx[i]] != want) {
      fprintf(stderr, "gpar-bench: check failed: %s[%zu] = %g, want %g\n", what, idx[i],
              (double)v[idx[i]], (double)want);
      ctx->check_failed = 1;
      return -1;
    }
  }
  return 0;
}

/* Parse an integer in [lo, hi]; -1 when s is not one. */
long bench_parse_int(const char *s, long lo, long hi) {
  char *end;
  errno = 0;
  double v = strtod(s, &end); /* accepts 1e6 */
  if (errno || end == s || *end || v != (double)(long)v || v < lo || v > hi) return -1;
  return (long)v;
}

