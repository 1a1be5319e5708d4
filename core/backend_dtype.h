/* backend_dtype.h: the conversions between f32 and IEEE binary16 (f16) / bfloat16 (bf16), rounding
 * to nearest even, once for the whole library (layer 0, included by backend.h): dtype.c exports
 * them (gpar_half_from_float...) and converts arrays; the host backend inlines them in its array
 * loops. Integer arithmetic only, so the rounding mode does not matter. */
#ifndef GPAR_BACKEND_DTYPE_H
#define GPAR_BACKEND_DTYPE_H

#include <stdint.h>
#include <string.h>

static inline uint32_t gpar__f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static inline float gpar__f32_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* f32 -> f16, ties to even. Normal halves rebias the exponent and round the 23-bit mantissa to
 * 10 bits (a carry into the exponent is the right rounding up); below 2^-14 the value is a
 * multiple of 2^-24 (subnormal), rounded the same way; at or past 65520 it is infinity. */
static inline uint16_t gpar__half_from(float x) {
  const uint32_t u = gpar__f32_bits(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) { /* NaN: the sign and the payload's top 10 bits, never 0 (numpy's rule) */
    const uint32_t m = (a >> 13) & 0x3ffu;
    return (uint16_t)(sign | 0x7c00u | (m ? m : 1u));
  }
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
 * exponent 255 (a NaN keeps its sign and payload, quiet or signalling); zero and subnormals are
 * renormalised by one exact f32 subtraction of 2^-14. */
static inline float gpar__half_to(uint16_t h) {
  uint32_t o = (uint32_t)(h & 0x7fffu) << 13;
  const uint32_t e = o & 0x0f800000u;
  o += 0x38000000u;
  if (e == 0x0f800000u)
    o += 0x38000000u;
  else if (e == 0)
    o = gpar__f32_bits(gpar__f32_of(o + 0x00800000u) - gpar__f32_of(0x38800000u));
  return gpar__f32_of(o | (uint32_t)(h & 0x8000u) << 16);
}

/* f32 -> bf16, ties to even; NaN stays NaN (quiet). */
static inline uint16_t gpar__bf16_from(float x) {
  uint32_t u = gpar__f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN, quiet */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* bf16 -> f32: the high half of a float. */
static inline float gpar__bf16_to(uint16_t h) { return gpar__f32_of((uint32_t)h << 16); }

#endif
