/* array_ref.h: plain references for the array-op tests, written apart from the library: element
 * encodings (f32, f64, f16 and bf16 through frexp/ldexp rounding in double), the ops in double
 * with the NaN rules gpar.h states, and a tolerance model per element type. Header-only. */
#ifndef GPAR_TESTS_ARRAY_REF_H
#define GPAR_TESTS_ARRAY_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "gpar.h"

static inline size_t ar_size(int dt) { return dt == GPAR_DOUBLE ? 8 : dt == GPAR_FLOAT || dt == GPAR_INT32 ? 4 : 2; }
static inline const char *ar_name(int dt) {
  return dt == GPAR_FLOAT ? "f32" : dt == GPAR_DOUBLE ? "f64" : dt == GPAR_HALF ? "f16" : dt == GPAR_BFLOAT16 ? "bf16" : "i32";
}

/* Round v to a binary format with `man` explicit mantissa bits, minimum normal exponent emin
 * and largest finite max, to nearest even (nearbyint, default rounding); in double. */
static inline double ar_round_fmt(double v, int man, int emin, double max) {
  if (v != v || v == 0 || isinf(v)) return v;
  int e;
  frexp(v, &e); /* v = f * 2^e, 0.5 <= |f| < 1 */
  e -= 1;       /* v = g * 2^e, 1 <= |g| < 2 */
  if (e < emin) e = emin; /* subnormal: fixed quantum */
  double q = ldexp(1.0, e - man), r = nearbyint(v / q) * q;
  if (fabs(r) > max) return v > 0 ? INFINITY : -INFINITY;
  return r;
}
/* The value v takes once stored as dt. */
static inline double ar_round(int dt, double v) {
  switch (dt) {
  case GPAR_FLOAT: return (double)(float)v;
  case GPAR_HALF: return ar_round_fmt(v, 10, -14, 65504.0);
  case GPAR_BFLOAT16: return ar_round_fmt(v, 7, -126, 3.3895313892515355e38);
  default: return v;
  }
}

static inline void ar_store(int dt, void *p, size_t i, double v) {
  if (dt == GPAR_DOUBLE) {
    ((double *)p)[i] = v;
    return;
  }
  if (dt == GPAR_FLOAT) {
    ((float *)p)[i] = (float)v;
    return;
  }
  double r = ar_round(dt, v);
  uint16_t h;
  if (dt == GPAR_BFLOAT16) { /* the high half of the float holding r exactly (or NaN) */
    float f = r != r ? NAN : (float)r;
    uint32_t u;
    memcpy(&u, &f, 4);
    h = (uint16_t)(u >> 16);
  } else {
    uint16_t s = signbit(r) ? 0x8000 : 0;
    double a = fabs(r);
    if (a != a) h = 0x7e00;
    else if (isinf(a)) h = s | 0x7c00;
    else if (a < 0x1p-14) h = s | (uint16_t)(a * 0x1p24);
    else {
      int e;
      double f = frexp(a, &e); /* a = f 2^e, f in [0.5, 1) */
      h = s | (uint16_t)((e + 14) << 10) | (uint16_t)((f * 2 - 1) * 1024);
    }
  }
  ((uint16_t *)p)[i] = h;
}

static inline double ar_load(int dt, const void *p, size_t i) {
  if (dt == GPAR_DOUBLE) return ((const double *)p)[i];
  if (dt == GPAR_FLOAT) return ((const float *)p)[i];
  if (dt == GPAR_INT32) return ((const int32_t *)p)[i];
  uint16_t h = ((const uint16_t *)p)[i];
  if (dt == GPAR_BFLOAT16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double s = (h & 0x8000) ? -1 : 1;
  if (e == 0x1f) return m ? NAN : s * INFINITY;
  if (e == 0) return s * ldexp(m, -24);
  return s * ldexp(1024 + m, e - 25);
}

/* NaN-propagating max and min (gpar.h's rule for array ops). */
static inline double ar_max(double a, double b) { return a != a || b != b ? NAN : a > b ? a : b; }
static inline double ar_min(double a, double b) { return a != a || b != b ? NAN : a < b ? a : b; }

static inline double ar_unary(int op, double x) {
  switch (op) {
  case GPAR_UN_RELU: return x != x ? x : x > 0 ? x : 0;
  case GPAR_UN_EXP: return exp(x);
  case GPAR_UN_LOG: return log(x);
  case GPAR_UN_TANH: return tanh(x);
  case GPAR_UN_SIGMOID: return 1 / (1 + exp(-x));
  case GPAR_UN_ABS: return fabs(x);
  case GPAR_UN_SQRT: return sqrt(x);
  default: return -x;
  }
}
static inline double ar_binary(int op, double a, double b) {
  switch (op) {
  case GPAR_BIN_ADD: return a + b;
  case GPAR_BIN_SUB: return a - b;
  case GPAR_BIN_MUL: return a * b;
  case GPAR_BIN_DIV: return a / b;
  case GPAR_BIN_MAX: return ar_max(a, b);
  default: return ar_min(a, b);
  }
}

/* Relative precision of what dt computes in (f16 and bf16 compute in float). */
static inline double ar_eps_compute(int dt) { return dt == GPAR_DOUBLE ? 0x1p-52 : 0x1p-23; }
/* One unit in the last place of dt's storage, relative. */
static inline double ar_eps_store(int dt) {
  return dt == GPAR_DOUBLE ? 0x1p-52 : dt == GPAR_FLOAT ? 0x1p-23 : dt == GPAR_HALF ? 0x1p-10 : 0x1p-7;
}

/* got matches want within a relative tolerance rel (of |want|) plus abs; NaN matches NaN, an
 * infinity only the same infinity. */
static inline int ar_close(double got, double want, double rel, double abs) {
  if (want != want) return got != got;
  if (isinf(want) || isinf(got)) return got == want;
  return fabs(got - want) <= rel * fabs(want) + abs;
}

#endif
