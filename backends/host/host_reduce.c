/* host_reduce.c: the CPU reduction behind staged collectives: sums through OpenBLAS axpy
 * (y += 1 * x), max and min as plain loops (BLAS has no element-wise max) with C's fmax/fmin,
 * NCCL's rule: a NaN loses to a number, so the result does not depend on member order. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "host_internal.h"

#define REDUCE_LOOP(T, FN)                                     \
  do {                                                         \
    T *y = (T *)acc;                                           \
    const T *x = (const T *)src;                               \
    for (size_t i = 0; i < n; i++) y[i] = FN(y[i], x[i]);      \
  } while (0)

/* acc[0..n) = acc op src, element-wise. */
static void reduce_into(int elem, int op, void *acc, const void *src, size_t n) {
  if (op == GPAR_SUM) {
    for (size_t done = 0; done < n;) { /* BLAS counts are int */
      size_t len = n - done < (size_t)INT_MAX ? n - done : (size_t)INT_MAX;
      if (elem == 4)
        cblas_saxpy((int)len, 1.0f, (const float *)src + done, 1, (float *)acc + done, 1);
      else
        cblas_daxpy((int)len, 1.0, (const double *)src + done, 1, (double *)acc + done, 1);
      done += len;
    }
  } else if (op == GPAR_MAX) {
    if (elem == 4) REDUCE_LOOP(float, fmaxf);
    else REDUCE_LOOP(double, fmax);
  } else {
    if (elem == 4) REDUCE_LOOP(float, fminf);
    else REDUCE_LOOP(double, fmin);
  }
}

int gpar__host_reduce(gpar__bdev *dev, const gpar__reduce_args *a) {
  size_t bytes = a->count * (size_t)a->elem_size;
  memcpy(a->dst[0], a->src[0], bytes);
  for (int i = 1; i < a->nsrc; i++) reduce_into(a->elem_size, a->op, a->dst[0], a->src[i], a->count);
  for (int i = 1; i < a->ndst; i++)
    if (a->dst[i] != a->dst[0]) memcpy(a->dst[i], a->dst[0], bytes);
  return GPAR_OK;
}
