/* raw_array_host.c: the host's hand sum for `gpar-bench array` (raw_array.h): a float sum over
 * a range, plain C on the calling thread (libgpar runs an array op on one CPU worker, so one
 * thread is the like-for-like reference). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpar.h" /* gpar_now */
#include "raw_array.h"

/* Eight running sums in a fixed order, as libgpar's host reduction (summed in double). */
static double sum(const float *x, size_t n) {
  double p[8] = {0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) p[l] += x[i + l];
  for (; i < n; i++) p[0] += x[i];
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

int gpar_raw_sum_host(const gpar_raw_sum_case *c, double *seconds, double *out) {
  float *x = malloc(c->n * sizeof *x);
  if (!x) {
    fprintf(stderr, "raw_array_host: out of memory\n");
    return -1;
  }
  for (size_t i = 0; i < c->n; i++) x[i] = 1.0f;
  volatile double sink = sum(x, c->n); /* the warm-up */
  double t0 = gpar_now();
  for (int it = 0; it < c->iters; it++) sink = sum(x, c->n);
  *seconds = gpar_now() - t0;
  *out = sink;
  free(x);
  return 0;
}
