/* dialect.c: the portable part of the kernel dialect (GPAR_KERNEL_DIALECT, gpar.h), the same
 * text on every backend: written against what each backend's own dialect header defines (the
 * gpar_* types, gpar_as_* bit casts, GPAR_FN, GPAR_GLOBAL_MEM, and gpar__f16_to_f32_num and
 * gpar__f32_to_f16_num: f16 conversions of numbers, the hardware's where it has one), so that
 * f16 NaNs and bf16 convert bitwise alike everywhere. It goes after that header and before the
 * user's preamble. f16 NaNs follow numpy's rule (gpar.h), which hardware conversions do not
 * (CUDA's cvt and OpenCL's vload_half / vstore_half give one canonical NaN): f16 -> f32 keeps the
 * sign and the payload, shifted left 13 (a signalling NaN stays one); f32 -> f16 keeps the sign
 * and the payload's top 10 bits, and sets the lowest when those are all zero (still a NaN). */
#include "kernel/kernel.h"

const char gpar__kernel_common[] =
    "/* libgpar kernel dialect: portable part */\n"
    "GPAR_FN gpar_f32 gpar_f16_to_f32(gpar_f16 h) {\n"
    "  if ((h & 0x7fffu) > 0x7c00u) /* NaN: sign and payload kept */\n"
    "    return gpar_as_f32(((gpar_u32)(h & 0x8000u) << 16) | 0x7f800000u | ((gpar_u32)(h & 0x3ffu) << 13));\n"
    "  return gpar__f16_to_f32_num(h);\n"
    "}\n"
    "GPAR_FN gpar_f16 gpar_f32_to_f16(gpar_f32 f) {\n"
    "  gpar_u32 u = gpar_as_u32(f), m = (u >> 13) & 0x3ffu;\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: sign and the payload's top bits kept, never 0 */\n"
    "    return (gpar_f16)(((u >> 16) & 0x8000u) | 0x7c00u | (m ? m : 1u));\n"
    "  return gpar__f32_to_f16_num(f);\n"
    "}\n"
    "GPAR_FN gpar_f32 gpar_bf16_to_f32(gpar_bf16 h) { return gpar_as_f32((gpar_u32)h << 16); }\n"
    "GPAR_FN gpar_bf16 gpar_f32_to_bf16(gpar_f32 f) {\n"
    "  gpar_u32 u = gpar_as_u32(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (gpar_bf16)((u >> 16) | 0x40u); /* NaN stays NaN */\n"
    "  return (gpar_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* to nearest, ties to even */\n"
    "}\n"
    "GPAR_FN gpar_f32 gpar_load_f16(const GPAR_GLOBAL_MEM gpar_f16 *p, gpar_u64 i) { return gpar_f16_to_f32(p[i]); }\n"
    "GPAR_FN void gpar_store_f16(GPAR_GLOBAL_MEM gpar_f16 *p, gpar_u64 i, gpar_f32 v) { p[i] = gpar_f32_to_f16(v); }\n"
    "GPAR_FN gpar_f32 gpar_load_bf16(const GPAR_GLOBAL_MEM gpar_bf16 *p, gpar_u64 i) { return gpar_bf16_to_f32(p[i]); }\n"
    "GPAR_FN void gpar_store_bf16(GPAR_GLOBAL_MEM gpar_bf16 *p, gpar_u64 i, gpar_f32 v) { p[i] = gpar_f32_to_bf16(v); }\n";
