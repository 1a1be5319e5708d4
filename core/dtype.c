/* dtype.c: element types at the bottom of core/ (layer 0, beside backend.h): their sizes and the
 * host conversions between f32 and IEEE binary16 (f16) / bfloat16 (bf16), rounding to nearest
 * even. The core, the host backend (mixed-precision GEMM, staged reductions) and users
 * (filling f16 buffers) all convert through these. */
#include <string.h>

#include "backend.h"

GPAR_API size_t gpar_dtype_size(gpar_dtype dtype) {
  switch (dtype) {
  case GPAR_FLOAT: return 4;
  case GPAR_DOUBLE: return 8;
  case GPAR_HALF: return 2;
  case GPAR_BFLOAT16: return 2;
  case GPAR_INT32: return 4;
  }
  return 0;
}

static inline uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static inline float f32_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* f32 -> f16, ties to even. Normal halves rebias the exponent and round the 23-bit mantissa to
 * 10 bits (a carry into the exponent is the right rounding up); below 2^-14 the value is a
 * multiple of 2^-24 (subnormal), rounded the same way; at or past 65520 it is infinity. */
static inline uint16_t half_from(float x) {
  const uint32_t u = f32_bits(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN, quiet */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                        /* overflow, inf */
  if (a >= 0x38800000u) {                                                          /* normal */
    uint32_t r = a - 0x38000000u;                                                  /* exponent - 112 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  const uint32_t e = a >> 23;
  if (e < 102) return (uint16_t)sign; /* below 2^-25 (2^-25 itself ties to 0 below) */
  const uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  uint32_t q = m >> shift;
  q += rem > half || (rem == half && (q & 1u));
  return (uint16_t)(sign | q);
}

/* f16 -> f32: move the exponent and fraction into place and rebias by 112; infinity and NaN get
 * exponent 255; zero and subnormals are renormalised by one exact f32 subtraction of 2^-14. */
static inline float half_to(uint16_t h) {
  uint32_t o = (uint32_t)(h & 0x7fffu) << 13;
  const uint32_t e = o & 0x0f800000u;
  o += 0x38000000u;
  if (e == 0x0f800000u)
    o += 0x38000000u;
  else if (e == 0)
    o = f32_bits(f32_of(o + 0x00800000u) - f32_of(0x38800000u));
  return f32_of(o | (uint32_t)(h & 0x8000u) << 16);
}

static inline uint16_t bf16_from(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN, quiet */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float bf16_to(uint16_t h) { return f32_of((uint32_t)h << 16); }

GPAR_API uint16_t gpar_half_from_float(float x) { return half_from(x); }
GPAR_API float gpar_half_to_float(uint16_t h) { return half_to(h); }
GPAR_API uint16_t gpar_bfloat16_from_float(float x) { return bf16_from(x); }
GPAR_API float gpar_bfloat16_to_float(uint16_t h) { return bf16_to(h); }

/* dst[i] = TO(FROM(src[i])) for n elements: one loop per pair of types, so each loop is
 * straight code the compiler can vectorise (no type test per element). */
#define CONVERT_LOOP(DT, ST, TO, FROM)                                           \
  do {                                                                           \
    DT *d_ = dst;                                                                \
    const ST *s_ = src;                                                          \
    for (size_t i = 0; i < n; i++) d_[i] = TO(FROM(s_[i]));                      \
  } while (0)
#define ID(x) (x)

GPAR_API int gpar_convert(void *dst, gpar_dtype dst_type, const void *src, gpar_dtype src_type, size_t n) {
  const int ok_src = src_type == GPAR_FLOAT || src_type == GPAR_HALF || src_type == GPAR_BFLOAT16;
  const int ok_dst = dst_type == GPAR_FLOAT || dst_type == GPAR_HALF || dst_type == GPAR_BFLOAT16;
  if (!ok_src || !ok_dst)
    return gpar__errorf(GPAR_EINVAL, "gpar_convert: types %d -> %d: only GPAR_FLOAT, GPAR_HALF and GPAR_BFLOAT16",
                        (int)src_type, (int)dst_type);
  if (n && (!dst || !src)) return gpar__errorf(GPAR_EINVAL, "gpar_convert: NULL pointer");
  if (dst_type == src_type) {
    if (dst != src) memmove(dst, src, n * gpar_dtype_size(dst_type));
    return GPAR_OK;
  }
  if (dst_type == GPAR_FLOAT && src_type == GPAR_HALF) CONVERT_LOOP(float, uint16_t, ID, half_to);
  else if (dst_type == GPAR_FLOAT) CONVERT_LOOP(float, uint16_t, ID, bf16_to);
  else if (dst_type == GPAR_HALF && src_type == GPAR_FLOAT) CONVERT_LOOP(uint16_t, float, half_from, ID);
  else if (dst_type == GPAR_HALF) CONVERT_LOOP(uint16_t, uint16_t, half_from, bf16_to);
  else if (src_type == GPAR_FLOAT) CONVERT_LOOP(uint16_t, float, bf16_from, ID);
  else CONVERT_LOOP(uint16_t, uint16_t, bf16_from, half_to);
  return GPAR_OK;
}
