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
#define LOAD gpar__half_to
#define STORE gpar__half_from
#define SUFFIX f16
#include "host_array_t.h"
#undef LOAD
#undef STORE
#undef SUFFIX

#define LOAD gpar__bf16_to
#define STORE gpar__bf16_from
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
