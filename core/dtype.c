/* dtype.c: element types at the bottom of core/ (layer 0, beside backend.h): their sizes and the
 * exported conversions between f32 and IEEE binary16 (f16) / bfloat16 (bf16), one element or
 * an array, through backend_dtype.h (which the host backend's loops inline too). */
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

GPAR_API uint16_t gpar_half_from_float(float x) { return gpar__half_from(x); }
GPAR_API float gpar_half_to_float(uint16_t h) { return gpar__half_to(h); }
GPAR_API uint16_t gpar_bfloat16_from_float(float x) { return gpar__bf16_from(x); }
GPAR_API float gpar_bfloat16_to_float(uint16_t h) { return gpar__bf16_to(h); }

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
  if (dst_type == GPAR_FLOAT && src_type == GPAR_HALF) CONVERT_LOOP(float, uint16_t, ID, gpar__half_to);
  else if (dst_type == GPAR_FLOAT) CONVERT_LOOP(float, uint16_t, ID, gpar__bf16_to);
  else if (dst_type == GPAR_HALF && src_type == GPAR_FLOAT) CONVERT_LOOP(uint16_t, float, gpar__half_from, ID);
  else if (dst_type == GPAR_HALF) CONVERT_LOOP(uint16_t, uint16_t, gpar__half_from, gpar__bf16_to);
  else if (src_type == GPAR_FLOAT) CONVERT_LOOP(uint16_t, float, gpar__bf16_from, ID);
  else CONVERT_LOOP(uint16_t, uint16_t, gpar__bf16_from, gpar__half_to);
  return GPAR_OK;
}
