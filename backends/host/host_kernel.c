/* host_kernel.c: kernels on the host CPU. The generated C (the host dialect header, the portable
 * part, the guard against what reads files, the preamble, then the entry point) is compiled by
 * the system compiler (host_cc.c) with FLAGS below into a shared object, which is loaded
 * from memory (a memfd, dlopen RTLD_NOW | RTLD_LOCAL). The entry point runs a range of
 * work-groups; core/kernel/ spreads a launch's groups over the CPU workers. Within a group the
 * work-items run one after the other, dimension 0 as an `omp simd` loop (the compiler may
 * vectorise across work-items, as a GPU runs them side by side; ids are 64-bit loop variables,
 * groups are stepped through without a division each), so a body with a group barrier
 * or group-local memory cannot run here: it is refused, naming PoCL (an OpenCL CPU device) as
 * the way to run it. -march=native: the source names the CPU's model and feature flags, so a
 * cache entry built on another CPU is another key, never loaded here. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "host_internal.h"

/* -march=native (the source names the CPU): on x86 also 512-bit vectors where the CPU has them
 * (the work-items' loop ran 1.5 x faster in cache with them, on this project's Xeon). */
#if defined(__x86_64__) || defined(__i386__)
#define FLAGS_NATIVE "-march=native -mprefer-vector-width=512 "
#else
#define FLAGS_NATIVE "-march=native "
#endif
#define FLAGS "-O2 -fopenmp-simd -fno-math-errno -fPIC -shared -nostdinc"

/* The host dialect header (GPAR_KERNEL_DIALECT; gpar.h documents the names). */
static const char header[] =
    "/* libgpar kernel dialect 1: host (C11) */\n"
    /* no system header: the build reads no file but its own source (-nostdinc; what the dialect
       offers of float.h, math.h and stdint.h is declared here) */
    "typedef __INT8_TYPE__ int8_t; typedef __UINT8_TYPE__ uint8_t; typedef __INT16_TYPE__ int16_t;\n"
    "typedef __UINT16_TYPE__ uint16_t; typedef __INT32_TYPE__ int32_t; typedef __UINT32_TYPE__ uint32_t;\n"
    "typedef __INT64_TYPE__ int64_t; typedef __UINT64_TYPE__ uint64_t; typedef __SIZE_TYPE__ size_t;\n"
    "void *memcpy(void *, const void *, size_t); void *memset(void *, int, size_t);\n"
    "float acosf(float), asinf(float), atanf(float), acoshf(float), asinhf(float), atanhf(float),\n"
    "cbrtf(float), ceilf(float), cosf(float), coshf(float), erff(float), erfcf(float), expf(float),\n"
    "exp2f(float), expm1f(float), fabsf(float), floorf(float), lgammaf(float), logf(float),\n"
    "log10f(float), log1pf(float), log2f(float), logbf(float), nearbyintf(float), rintf(float),\n"
    "roundf(float), sinf(float), sinhf(float), sqrtf(float), tanf(float), tanhf(float), tgammaf(float),\n"
    "truncf(float);\n"
    "float atan2f(float, float), copysignf(float, float), fdimf(float, float), fmaxf(float, float),\n"
    "fminf(float, float), fmodf(float, float), hypotf(float, float), nextafterf(float, float),\n"
    "powf(float, float), remainderf(float, float);\n"
    "float fmaf(float, float, float), frexpf(float, int *), ldexpf(float, int), modff(float, float *),\n"
    "remquof(float, float, int *);\n"
    "float scalbnf(float, int), scalblnf(float, long), nanf(const char *), nexttowardf(float, long\n"
    "double);\n"
    "int ilogbf(float); long lrintf(float), lroundf(float); long long llrintf(float), llroundf(float);\n"
    "double acos(double), asin(double), atan(double), acosh(double), asinh(double), atanh(double),\n"
    "cbrt(double), ceil(double), cos(double), cosh(double), erf(double), erfc(double), exp(double),\n"
    "exp2(double), expm1(double), fabs(double), floor(double), lgamma(double), log(double),\n"
    "log10(double), log1p(double), log2(double), logb(double), nearbyint(double), rint(double),\n"
    "round(double), sin(double), sinh(double), sqrt(double), tan(double), tanh(double), tgamma(double),\n"
    "trunc(double);\n"
    "double atan2(double, double), copysign(double, double), fdim(double, double), fmax(double, double),\n"
    "fmin(double, double), fmod(double, double), hypot(double, double), nextafter(double, double),\n"
    "pow(double, double), remainder(double, double);\n"
    "double fma(double, double, double), frexp(double, int *), ldexp(double, int), modf(double, double\n"
    "*), remquo(double, double, int *);\n"
    "double scalbn(double, int), scalbln(double, long), nan(const char *), nexttoward(double, long\n"
    "double);\n"
    "int ilogb(double); long lrint(double), lround(double); long long llrint(double), llround(double);\n"
    "#define INFINITY (__builtin_inff())\n#define NAN (__builtin_nanf(\"\"))\n#define HUGE_VALF "
    "(__builtin_huge_valf())\n"
    "#define HUGE_VAL (__builtin_huge_val())\n#define FLT_MAX __FLT_MAX__\n#define FLT_MIN __FLT_MIN__\n"
    "#define FLT_EPSILON __FLT_EPSILON__\n#define DBL_MAX __DBL_MAX__\n#define DBL_MIN __DBL_MIN__\n"
    "#define DBL_EPSILON __DBL_EPSILON__\n#define isnan(x) __builtin_isnan(x)\n#define isinf(x) __builtin_isinf(x)\n"
    "#define isfinite(x) __builtin_isfinite(x)\n#define isnormal(x) __builtin_isnormal(x)\n"
    "#define signbit(x) __builtin_signbit(x)\n"
    "#define INT32_MAX __INT32_MAX__\n#define INT32_MIN (-__INT32_MAX__ - 1)\n#define UINT32_MAX __UINT32_MAX__\n"
    "#define INT64_MAX __INT64_MAX__\n#define INT64_MIN (-__INT64_MAX__ - 1)\n#define UINT64_MAX __UINT64_MAX__\n"
    "#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__\n"
    "#error libgpar host kernels assume a little-endian CPU\n#endif\n"
    "#define GPAR_ON_HOST 1\n"
    "typedef int8_t gpar_i8; typedef uint8_t gpar_u8; typedef int16_t gpar_i16; typedef uint16_t gpar_u16;\n"
    "typedef int32_t gpar_i32; typedef uint32_t gpar_u32; typedef int64_t gpar_i64; typedef uint64_t gpar_u64;\n"
    "typedef float gpar_f32; typedef double gpar_f64; typedef uint16_t gpar_f16; typedef uint16_t gpar_bf16;\n"
    "typedef struct { void *mem; gpar_u64 bits; } gpar__karg;\n"
    "typedef struct { gpar_u32 groups[3], size[3]; } gpar__grid;\n"
    "#define GPAR_FN static inline\n#define GPAR_GLOBAL_MEM\n#define GPAR_LOCAL_MEM\n"
    "#define GPAR__ID(v, d) ((d) == 0 ? v##0 : (d) == 1 ? v##1 : v##2)\n"
    "#define GPAR_LOCAL_ID(d) ((gpar_u32)GPAR__ID(gpar__l, d))\n"
    "#define GPAR_GROUP_ID(d) GPAR__ID(gpar__g, d)\n"
    "#define GPAR_GROUP_SIZE(d) (gpar__G->size[d])\n"
    "#define GPAR_NUM_GROUPS(d) (gpar__G->groups[d])\n"
    "#define GPAR_GLOBAL_ID(d) (GPAR__ID(gpar__b, d) + GPAR__ID(gpar__l, d))\n"
    "#define GPAR_GLOBAL_SIZE(d) ((gpar_u64)GPAR_NUM_GROUPS(d) * GPAR_GROUP_SIZE(d))\n"
    "GPAR_FN gpar_u32 gpar_as_u32(gpar_f32 v) { gpar_u32 u; memcpy(&u, &v, 4); return u; }\n"
    "GPAR_FN gpar_f32 gpar_as_f32(gpar_u32 v) { gpar_f32 f; memcpy(&f, &v, 4); return f; }\n"
    "GPAR_FN gpar_u64 gpar_as_u64(gpar_f64 v) { gpar_u64 u; memcpy(&u, &v, 8); return u; }\n"
    "GPAR_FN gpar_f64 gpar_as_f64(gpar_u64 v) { gpar_f64 f; memcpy(&f, &v, 8); return f; }\n"
    /* f16 numbers in software, rounding as CUDA's cvt.rn.f16.f32 and OpenCL's vstore_half_rte do
       (NaNs: the portable part) */
    "GPAR_FN gpar_f32 gpar__f16_to_f32_num(gpar_f16 h) {\n"
    "  gpar_u32 s = (gpar_u32)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  if (e == 0x1f) return gpar_as_f32(s | 0x7f800000u | (m << 13));\n"
    "  if (e == 0) return gpar_as_f32(s | gpar_as_u32((gpar_f32)m * 5.9604644775390625e-8f));\n"
    "  return gpar_as_f32(s | ((e + 112u) << 23) | (m << 13));\n"
    "}\n"
    "GPAR_FN gpar_f16 gpar__f32_to_f16_num(gpar_f32 f) {\n"
    "  gpar_u32 u = gpar_as_u32(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
    "  if (a >= 0x477ff000u) return (gpar_f16)(s | 0x7c00u);\n"
    "  if (a <= 0x33000000u) return (gpar_f16)s;\n"
    "  if (a < 0x38800000u) {\n"
    "    gpar_u32 m = (a & 0x7fffffu) | 0x800000u, sh = 126u - (a >> 23), r = m >> sh, rem = m & ((1u << sh) - 1u);\n"
    "    gpar_u32 half = 1u << (sh - 1u);\n"
    "    return (gpar_f16)(s | (r + (rem > half || (rem == half && (r & 1u)))));\n"
    "  }\n"
    "  a -= 0x38000000u;\n"
    "  return (gpar_f16)(s | ((a + 0xfffu + ((a >> 13) & 1u)) >> 13));\n"
    "}\n"
    /* atomics: the value before, relaxed as on GPUs (the engine orders what follows the launch) */
    "#define GPAR__A __ATOMIC_RELAXED\n"
    "#define gpar_atomic_add_i32(p, v) __atomic_fetch_add((p), (gpar_i32)(v), GPAR__A)\n"
    "#define gpar_atomic_add_u32(p, v) __atomic_fetch_add((p), (gpar_u32)(v), GPAR__A)\n"
    "#define gpar_atomic_add_i64(p, v) __atomic_fetch_add((p), (gpar_i64)(v), GPAR__A)\n"
    "#define gpar_atomic_add_u64(p, v) __atomic_fetch_add((p), (gpar_u64)(v), GPAR__A)\n"
    "#define gpar_atomic_xchg_i32(p, v) __atomic_exchange_n((p), (gpar_i32)(v), GPAR__A)\n"
    "#define gpar_atomic_xchg_u32(p, v) __atomic_exchange_n((p), (gpar_u32)(v), GPAR__A)\n"
    "#define GPAR__CAS(name, T) GPAR_FN T gpar_atomic_cas_##name(T *p, T cmp, T val) {\\\n"
    "  __atomic_compare_exchange_n(p, &cmp, val, 0, GPAR__A, GPAR__A); return cmp; }\n"
    "GPAR__CAS(i32, gpar_i32) GPAR__CAS(u32, gpar_u32)\n"
    "#define GPAR__MINMAX(name, T, better) GPAR_FN T gpar_atomic_##name(T *p, T v) {\\\n"
    "  T old = __atomic_load_n(p, GPAR__A);\\\n"
    "  while (better && !__atomic_compare_exchange_n(p, &old, v, 1, GPAR__A, GPAR__A)) {}\\\n"
    "  return old; }\n"
    "GPAR__MINMAX(min_i32, gpar_i32, v < old) GPAR__MINMAX(min_u32, gpar_u32, v < old)\n"
    "GPAR__MINMAX(max_i32, gpar_i32, v > old) GPAR__MINMAX(max_u32, gpar_u32, v > old)\n"
    "GPAR_FN gpar_f32 gpar_atomic_add_f32(gpar_f32 *p, gpar_f32 v) {\n"
    "  gpar_u32 *q = (gpar_u32 *)p, old = __atomic_load_n(q, GPAR__A);\n"
    "  while (!__atomic_compare_exchange_n(q, &old, gpar_as_u32(gpar_as_f32(old) + v), 1, GPAR__A, GPAR__A)) {}\n"
    "  return gpar_as_f32(old);\n"
    "}\n"
    "#define GPAR_BARRIER() gpar_barrier_is_not_supported_on_the_host\n"
    "#define GPAR_LOCAL(type, name, count) gpar_local_memory_is_not_supported_on_the_host\n";

/* ---------------------------------------------------------------- the generated source */

/* The entry point: gpar_kernel_NAME(grid, first, count, args) runs groups first..+count. */
static void write_entry(FILE *f, const gpar__kernel_def *def) {
  fprintf(f, "static inline void gpar__item(const gpar__grid *gpar__G, gpar_u32 gpar__g0, gpar_u32 gpar__g1, "
             "gpar_u32 gpar__g2,\n    gpar_u64 gpar__l0, gpar_u64 gpar__l1, gpar_u64 gpar__l2, gpar_u64 gpar__b0, "
             "gpar_u64 gpar__b1, gpar_u64 gpar__b2");
  for (int i = 0; i < def->nparams; i++) {
    const gpar__kparam *p = &def->params[i];
    fprintf(f, ",\n    %s%s %s%s", p->dir == GPAR__KDIR_SCALAR || p->dir == GPAR__KDIR_IN ? "const " : "", p->ctype,
            p->dir == GPAR__KDIR_SCALAR ? "" : "*", p->name);
  }
  fprintf(f, ") {\n%s\n}\n\n", def->body);
  fprintf(f, "void gpar_kernel_%s(const gpar_u32 *gpar__grid6, gpar_u64 gpar__first, gpar_u64 gpar__count,\n"
             "    const gpar__karg *gpar__a) {\n"
             "  const gpar__grid gpar__G = {{gpar__grid6[0], gpar__grid6[1], gpar__grid6[2]},\n"
             "                              {gpar__grid6[3], gpar__grid6[4], gpar__grid6[5]}};\n",
          def->name);
  for (int i = 0; i < def->nparams; i++) {
    const gpar__kparam *p = &def->params[i];
    if (p->dir == GPAR__KDIR_SCALAR)
      fprintf(f, "  %s %s;\n  memcpy(&%s, &gpar__a[%d].bits, sizeof %s);\n", p->ctype, p->name, p->name, i, p->name);
    else
      fprintf(f, "  %s%s *%s = (%s%s *)((char *)gpar__a[%d].mem + gpar__a[%d].bits);\n",
              p->dir == GPAR__KDIR_IN ? "const " : "", p->ctype, p->name, p->dir == GPAR__KDIR_IN ? "const " : "",
              p->ctype, i, i);
  }
  fprintf(f, "  const gpar_u32 gpar__s0 = gpar__G.size[0], gpar__s1 = gpar__G.size[1], gpar__s2 = gpar__G.size[2];\n"
             "  gpar_u32 gpar__g0 = (gpar_u32)(gpar__first %% gpar__G.groups[0]);\n"
             "  gpar_u32 gpar__g1 = (gpar_u32)(gpar__first / gpar__G.groups[0] %% gpar__G.groups[1]);\n"
             "  gpar_u32 gpar__g2 = (gpar_u32)(gpar__first / gpar__G.groups[0] / gpar__G.groups[1]);\n"
             "  for (gpar_u64 gpar__c = 0; gpar__c < gpar__count; gpar__c++) {\n"
             "    const gpar_u64 gpar__b0 = (gpar_u64)gpar__g0 * gpar__s0, gpar__b1 = (gpar_u64)gpar__g1 * gpar__s1;\n"
             "    const gpar_u64 gpar__b2 = (gpar_u64)gpar__g2 * gpar__s2;\n"
             "    for (gpar_u64 gpar__l2 = 0; gpar__l2 < gpar__s2; gpar__l2++)\n"
             "      for (gpar_u64 gpar__l1 = 0; gpar__l1 < gpar__s1; gpar__l1++)\n"
             "        _Pragma(\"omp simd\") for (gpar_u64 gpar__l0 = 0; gpar__l0 < gpar__s0; gpar__l0++)\n"
             "          gpar__item(&gpar__G, gpar__g0, gpar__g1, gpar__g2, gpar__l0, gpar__l1, gpar__l2, gpar__b0, "
             "gpar__b1, gpar__b2");
  for (int i = 0; i < def->nparams; i++) fprintf(f, ", %s", def->params[i].name);
  fprintf(f, ");\n"
             "    if (++gpar__g0 == gpar__G.groups[0]) { /* the next group, dimension 0 fastest */\n"
             "      gpar__g0 = 0;\n"
             "      if (++gpar__g1 == gpar__G.groups[1]) gpar__g1 = 0, gpar__g2++;\n"
             "    }\n"
             "  }\n}\n");
}

int gpar__host_kernel_source(gpar__bdev *dev, const char *target, const gpar__kernel_def *def, char **src, char *opts,
                             size_t optcap) {
  const gpar__backend *be = (const gpar__backend *)dev;
  (void)target;
  if (def->uses_group_memory)
    return gpar__errorf(GPAR_ENOTSUP, "the host device runs no group barrier or group-local memory (GPAR_BARRIER, "
                                      "GPAR_LOCAL): run this kernel on an OpenCL CPU device (PoCL) instead");
  int native = !strstr(be->cc, "-march") && !strstr(be->cc, "-mcpu");
  snprintf(opts, optcap, "%s%s", native ? FLAGS_NATIVE : "", FLAGS);
  char model[128] = "", flags[2048] = "";
  gpar__host_cpuinfo("model name", model, sizeof model);
  gpar__host_cpuinfo("flags", flags, sizeof flags);
  if (!*flags) gpar__host_cpuinfo("Features", flags, sizeof flags);
  size_t n = 0;
  FILE *f = open_memstream(src, &n);
  if (!f) return gpar__errorf(GPAR_ENOMEM, "host: out of host memory");
  fprintf(f, "/* host kernel '%s' for %s; cpu flags: %s */\n%s%s", def->name, *model ? model : "(unknown cpu)",
          native ? flags : "(no -march=native)", header, def->common);
  gpar__kernel_poison(f, src, "kernel.c");
  if (*def->preamble) fprintf(f, "/* preamble */\n%s\n", def->preamble);
  write_entry(f, def);
  if (fclose(f) != 0) return gpar__errorf(GPAR_ENOMEM, "host: out of host memory");
  return GPAR_OK;
}

/* ---------------------------------------------------------------- load, launch */

/* A loaded kernel: the shared object and its entry point. */
typedef void (*host_entry)(const uint32_t *grid, uint64_t first, uint64_t count, const gpar__karg *args);
typedef struct host_module {
  void *dl;
  host_entry fn;
  int fd; /* the memfd it was loaded from, open while loaded: dlopen knows objects by path, and a
             closed fd's number (so its /proc/self/fd path) would come back for the next kernel */
} host_module;

int gpar__host_kernel_load(gpar__bdev *dev, const void *bin, size_t len, const char *name, void **module,
                           gpar__klimits *lim) {
  (void)dev;
  char path[64], sym[96];
  host_module *m = malloc(sizeof *m);
  if (!m) return gpar__errorf(GPAR_ENOMEM, "host: out of host memory");
  int fd = memfd_create("gpar-kernel", MFD_CLOEXEC);
  if (fd < 0 || (size_t)write(fd, bin, len) != len) {
    if (fd >= 0) close(fd);
    free(m);
    return gpar__errorf(GPAR_EBACKEND, "host kernels: memfd_create/write: %s", strerror(errno));
  }
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  m->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  m->fd = fd;
  if (!m->dl) {
    const char *why = dlerror();
    close(fd);
    free(m);
    return gpar__errorf(GPAR_EBACKEND, "host kernels: dlopen: %s", why ? why : "failed");
  }
  snprintf(sym, sizeof sym, "gpar_kernel_%s", name);
  *(void **)&m->fn = dlsym(m->dl, sym);
  if (!m->fn) {
    dlclose(m->dl);
    close(fd);
    free(m);
    return gpar__errorf(GPAR_EBACKEND, "host kernels: no symbol %s in the shared object", sym);
  }
  *lim = (gpar__klimits){1024, {1024, 1024, 1024}, {UINT32_MAX, UINT32_MAX, UINT32_MAX}, 1};
  *module = m;
  return GPAR_OK;
}

void gpar__host_kernel_unload(gpar__bdev *dev, void *module) {
  (void)dev;
  host_module *m = module;
  dlclose(m->dl);
  close(m->fd);
  free(m);
}

int gpar__host_kernel_launch(gpar__bdev *dev, int lane, void *module, const gpar__kernel_launch *l) {
  (void)dev;
  (void)lane;
  const uint32_t grid[6] = {l->groups[0], l->groups[1], l->groups[2], l->group_size[0], l->group_size[1], l->group_size[2]};
  ((host_module *)module)->fn(grid, l->first, l->count, l->args);
  return GPAR_OK;
}

int gpar__host_kernel_host_ptr(gpar__bdev *dev, void *ptr, void **mem) {
  (void)dev;
  *mem = ptr;
  return GPAR_OK;
}
