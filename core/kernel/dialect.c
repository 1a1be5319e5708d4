/* dialect.c: the portable part of the kernel dialect (GPAR_KERNEL_DIALECT, gpar.h), the same
 * text on every backend: written against what each backend's own dialect header defines (the
 * gpar_* types, gpar_as_* bit casts, GPAR_FN, GPAR_GLOBAL_MEM, gpar_f16_to_f32 and
 * gpar_f32_to_f16), so that bf16 rounds bitwise alike everywhere. It goes after that header and
 * before the user's preamble. */
#include "kernel/kernel.h"

const char gpar__kernel_common[] =
    "/* libgpar kernel dialect: portable part */\n"
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
