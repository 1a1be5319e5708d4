/* host_array.c: the array ops (core/array/) on the CPU in plain C, one CPU worker per op:
 * elementwise unary and binary ops, broadcasts, reductions (float types summed in double, in
 * a fixed order), softmax cross-entropy and argmax, for f32 and f64, and for f16 and bf16
 * stored as uint16_t and computed in float (stores round to nearest even). host_array_t.h
 * holds the loops, included once per element type. */
#include <stdint.h>
#include <string.h>
#include <tgmath.h>

#include "host_internal.h"

/* max and min that propagate NaN: a NaN operand gives NaN. */
#define MAXOF(p, q) ((p) != (p) || (p) > (q) ? (p) : (q))
#define MINOF(p, q) ((p) != (p) || (p) < (q) ? (p) : (q))

static double reduce_identity(int op) { return op == GPAR_SUM ? 0.0 : op == GPAR_MAX ? -INFINITY : INFINITY; }

static inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* IEEE binary16 <-> float. */
static inline float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
  if (exp == 0) {                                                       /* zero, subnormal */
    float f = (float)man * 0x1p-24f;
    return sign ? -f : f;
  }
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}
static inline uint16_t float_to_half(float f) {
  uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 | ((a >> 13) & 0x3ff) : 0));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504: inf */
  if (a < 0x38800000u) {                                  /* below the smallest normal half */
    float r = bits_f32(a) * 0x1p24f;                      /* exact scaling; rint rounds to even */
    return (uint16_t)(sign | (uint32_t)nearbyintf(r));
  }
  uint32_t r = a - 0x38000000u; /* rebias the exponent: (exp - 112) << 23 */
  r += 0xfffu + ((r >> 13) & 1); /* round to nearest even at bit 13 */
  return (uint16_t)(sign | (r >> 13));
}
/* bfloat16 <-> float: the high half of a float. */
static inline float bf16_to_float(uint16_t b) { return bits_f32((uint32_t)b << 16); }
static inline uint16_t float_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN (quiet) */
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

#define ID(v) (v)

#define S float
#define C float
#define LOAD ID
#define STORE ID
#define SUFFIX f32
#include "host_array_t.h"
#undef S
#undef C
#undef LOAD
#undef STORE
#undef SUFFIX

#define S double
#define C double
#define LOAD ID
#define STORE ID
#define SUFFIX f64
#include "host_array_t.h"
#undef S
#undef C
#undef LOAD
#undef STORE
#undef SUFFIX

#define S uint16_t
#define C float
#define LOAD half_to_float
#define STORE float_to_half
#define SUFFIX f16
#include "host_array_t.h"
#undef LOAD
#undef STORE
#undef SUFFIX

#define LOAD bf16_to_float
#define STORE float_to_bf16
#define SUFFIX bf16
#include "host_array_t.h"
#undef S
#undef C
#undef LOAD
#undef STORE
#undef SUFFIX

int gpar__host_array(gpar__bdev *dev, const gpar__array_args *a) {
  (void)dev;
  switch (a->dtype) {
  case GPAR_FLOAT: return run_f32(a);
  case GPAR_DOUBLE: return run_f64(a);
  case GPAR_HALF: return run_f16(a);
  case GPAR_BFLOAT16: return run_bf16(a);
  default: return gpar__errorf(GPAR_EINVAL, "host array: element type %d", a->dtype);
  }
}
