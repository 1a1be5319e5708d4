/* host_reduce.c: the CPU reduction behind staged collectives: sums through OpenBLAS axpy
 * (y += 1 * x), max and min as plain loops (BLAS has no element-wise max) with C's fmax/fmin,
 * NCCL's rule: a NaN loses to a number, so the result does not depend on member order. f16 and
 * bf16 are reduced in f32 over all members, a chunk at a time, and rounded to nearest even once
 * (gpar_convert); int32 sums wrap modulo 2^32, as NCCL's do. */
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

static inline int32_t i32_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline int32_t i32_max(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t i32_min(int32_t a, int32_t b) { return a < b ? a : b; }
static inline float f32_add(float a, float b) { return a + b; }

/* acc[0..n) = acc op src, element-wise (float, double, int32). */
static void reduce_into(int dtype, int op, void *acc, const void *src, size_t n) {
  if (dtype == GPAR_INT32) {
    if (op == GPAR_SUM) REDUCE_LOOP(int32_t, i32_add);
    else if (op == GPAR_MAX) REDUCE_LOOP(int32_t, i32_max);
    else REDUCE_LOOP(int32_t, i32_min);
  } else if (op == GPAR_SUM) {
    for (size_t done = 0; done < n;) { /* BLAS counts are int */
      size_t len = n - done < (size_t)INT_MAX ? n - done : (size_t)INT_MAX;
      if (dtype == GPAR_FLOAT)
        cblas_saxpy((int)len, 1.0f, (const float *)src + done, 1, (float *)acc + done, 1);
      else
        cblas_daxpy((int)len, 1.0, (const double *)src + done, 1, (double *)acc + done, 1);
      done += len;
    }
  } else if (op == GPAR_MAX) {
    if (dtype == GPAR_FLOAT) REDUCE_LOOP(float, fmaxf);
    else REDUCE_LOOP(double, fmax);
  } else {
    if (dtype == GPAR_FLOAT) REDUCE_LOOP(float, fminf);
    else REDUCE_LOOP(double, fmin);
  }
}

/* f16 / bf16: dst[0] = round(src[0] op src[1] op ... in f32), a chunk at a time. */
#define HALF_CHUNK 1024
static void reduce_half(const gpar__reduce_args *a) {
  float acc[HALF_CHUNK], conv[HALF_CHUNK];
  const gpar_dtype t = (gpar_dtype)a->dtype;
  for (size_t done = 0; done < a->count;) {
    size_t n = a->count - done < HALF_CHUNK ? a->count - done : HALF_CHUNK;
    gpar_convert(acc, GPAR_FLOAT, (const uint16_t *)a->src[0] + done, t, n);
    for (int s = 1; s < a->nsrc; s++) {
      const void *src = conv;
      gpar_convert(conv, GPAR_FLOAT, (const uint16_t *)a->src[s] + done, t, n);
      if (a->op == GPAR_SUM) REDUCE_LOOP(float, f32_add);
      else if (a->op == GPAR_MAX) REDUCE_LOOP(float, fmaxf);
      else REDUCE_LOOP(float, fminf);
    }
    gpar_convert((uint16_t *)a->dst[0] + done, t, acc, GPAR_FLOAT, n);
    done += n;
  }
}

int gpar__host_reduce(gpar__bdev *dev, const gpar__reduce_args *a) {
  size_t bytes = a->count * (size_t)a->elem_size;
  if (a->dtype == GPAR_HALF || a->dtype == GPAR_BFLOAT16) {
    reduce_half(a);
  } else {
    memcpy(a->dst[0], a->src[0], bytes);
    for (int i = 1; i < a->nsrc; i++) reduce_into(a->dtype, a->op, a->dst[0], a->src[i], a->count);
  }
  for (int i = 1; i < a->ndst; i++)
    if (a->dst[i] != a->dst[0]) memcpy(a->dst[i], a->dst[0], bytes);
  return GPAR_OK;
}
