/* kernel.c: the kernel conformance body, one kernel text run unchanged on every device of every
 * backend (host, each PoCL device, CUDA, NVIDIA OpenCL). Integer results, ids, f16/bf16
 * conversions and atomics must be bitwise what the C reference here computes; float results
 * within the tolerances stated at each check (a backend may contract a * b + c into an FMA; math
 * functions are checked against double precision). A group barrier with group-local memory runs
 * everywhere but the host device, which refuses it naming PoCL. */
#include <math.h>

#include "kernel_util.h"

static gpar_engine *eng;
static int ndev;

/* ---------------------------------------------------------------- the kernels */

static const char saxpy_body[] = "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * x[i] + y[i];";
static const char stride_body[] =
    "for (gpar_u64 i = GPAR_GLOBAL_ID(0); i < n; i += GPAR_GLOBAL_SIZE(0)) y[i] = a * x[i] + y[i];";
static const char saxpy_params[] = "u64 n, f32 a, in f32 *x, inout f32 *y";

static const char ints_params[] =
    "u32 n, i32 s, u64 big, in i8 *a8, in u8 *b8, in i16 *a16, in u16 *b16, in i32 *a32, in u32 *b32, "
    "in i64 *a64, in u64 *b64, out i64 *r";
static const char ints_body[] =
    "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0);\n"
    "if (i >= n) return;\n"
    "gpar_u64 h = (gpar_u64)(gpar_i64)a8[i] * (gpar_u64)0x9E3779B97F4A7C15;\n"
    "h ^= (gpar_u64)b8[i] << 8;\n"
    "h += (gpar_u64)(gpar_i64)a16[i] * 31u;\n"
    "h ^= (gpar_u64)b16[i] << 17;\n"
    "h += (gpar_u64)(gpar_u32)(a32[i] / (s | 1));\n"
    "h ^= (gpar_u64)(gpar_i64)(a32[i] >> 3);\n"
    "h += (gpar_u64)(b32[i] % 977u) * (gpar_u64)(gpar_u32)(b32[i] * 2654435761u);\n"
    "h ^= (gpar_u64)a64[i] * 3u + (b64[i] >> 7) + big;\n"
    "h = (h << 13) | (h >> 51);\n"
    "r[i] = (gpar_i64)h;";

static uint64_t ints_ref(uint32_t i, int32_t s, uint64_t big, const int8_t *a8, const uint8_t *b8, const int16_t *a16,
                         const uint16_t *b16, const int32_t *a32, const uint32_t *b32, const int64_t *a64,
                         const uint64_t *b64) {
  uint64_t h = (uint64_t)(int64_t)a8[i] * (uint64_t)0x9E3779B97F4A7C15;
  h ^= (uint64_t)b8[i] << 8;
  h += (uint64_t)(int64_t)a16[i] * 31u;
  h ^= (uint64_t)b16[i] << 17;
  h += (uint64_t)(uint32_t)(a32[i] / (s | 1));
  h ^= (uint64_t)(int64_t)(a32[i] >> 3);
  h += (uint64_t)(b32[i] % 977u) * (uint64_t)(uint32_t)(b32[i] * 2654435761u);
  h ^= (uint64_t)a64[i] * 3u + (b64[i] >> 7) + big;
  return (h << 13) | (h >> 51);
}

static const char ids_body[] =
    "gpar_u64 lin = GPAR_GLOBAL_ID(0) + GPAR_GLOBAL_SIZE(0) * (GPAR_GLOBAL_ID(1) + GPAR_GLOBAL_SIZE(1) * GPAR_GLOBAL_ID(2));\n"
    "for (int d = 0; d < 3; d++) {\n"
    "  o[lin * 9 + d] = (gpar_u32)GPAR_GLOBAL_ID(d);\n"
    "  o[lin * 9 + 3 + d] = GPAR_LOCAL_ID(d);\n"
    "  o[lin * 9 + 6 + d] = GPAR_GROUP_ID(d);\n"
    "}\n"
    "if (lin == 0) {\n"
    "  gpar_u64 end = GPAR_GLOBAL_SIZE(0) * GPAR_GLOBAL_SIZE(1) * GPAR_GLOBAL_SIZE(2) * 9;\n"
    "  for (int d = 0; d < 3; d++) {\n"
    "    o[end + d] = GPAR_GROUP_SIZE(d);\n"
    "    o[end + 3 + d] = GPAR_NUM_GROUPS(d);\n"
    "    o[end + 6 + d] = (gpar_u32)GPAR_GLOBAL_SIZE(d);\n"
    "  }\n"
    "}";

static const char halfs_body[] =
    "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0);\n"
    "if (i >= n) return;\n"
    "gpar_store_f16(h, i, x[i]);\n"
    "gpar_store_bf16(b, i, x[i]);\n"
    "back[2 * i] = gpar_load_f16(h, i);\n"
    "back[2 * i + 1] = gpar_bf16_to_f32(gpar_f32_to_bf16(x[i]));";

static const char atomics_params[] = "u32 n, out u32 *old, inout u32 *ctr, out f32 *fold, inout f32 *fsum, "
                                     "inout i32 *mm, inout i64 *c64";
static const char atomics_body[] =
    "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0);\n"
    "if (i >= n) return;\n"
    "old[i] = gpar_atomic_add_u32(&ctr[0], 1u);\n"
    "fold[i] = gpar_atomic_add_f32(&fsum[0], 1.0f);\n"
    "gpar_atomic_max_i32(&mm[0], (gpar_i32)i - 7);\n"
    "gpar_atomic_min_i32(&mm[1], 100 - (gpar_i32)i);\n"
    "gpar_atomic_max_u32(&ctr[1], i * 3u);\n"
    "gpar_atomic_min_u32(&ctr[2], i + 5u);\n"
    "gpar_atomic_add_i64(&c64[0], -(gpar_i64)i);\n"
    "gpar_atomic_add_u64((GPAR_GLOBAL_MEM gpar_u64 *)&c64[1], (gpar_u64)i << 33);\n"
    "if (gpar_atomic_cas_u32(&ctr[3], 0u, i + 1u) == 0u) gpar_atomic_add_u32(&ctr[4], 1u);\n"
    "gpar_atomic_xchg_u32(&ctr[5], 7u);\n"
    "gpar_atomic_add_i32(&mm[2], -2);";

#define NMATH 10
static const char math_body[] =
    "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0);\n"
    "if (i >= n) return;\n"
    "gpar_f32 v = x[i];\n"
    "GPAR_GLOBAL_MEM gpar_f32 *o = y + 10 * i;\n"
    "o[0] = sqrtf(fabsf(v)); o[1] = expf(v); o[2] = logf(fabsf(v) + 1.0f); o[3] = sinf(v);\n"
    "o[4] = tanhf(v); o[5] = powf(fabsf(v), 1.5f); o[6] = fmaf(v, v, 1.0f); o[7] = fminf(v, 0.5f) + fmaxf(v, -0.5f);\n"
    "o[8] = floorf(v * 3.0f); o[9] = erff(v);";
static double math_ref(int k, double v) {
  switch (k) {
  case 0: return sqrt(fabs(v));
  case 1: return exp(v);
  case 2: return log(fabs(v) + 1.0);
  case 3: return sin(v);
  case 4: return tanh(v);
  case 5: return pow(fabs(v), 1.5);
  case 6: return v * v + 1.0;
  case 7: return fmin(v, 0.5) + fmax(v, -0.5);
  case 8: return floor((double)(float)(v * 3.0f));
  default: return erf(v);
  }
}

static const char dmath_body[] =
    "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0);\n"
    "if (i >= n) return;\n"
    "gpar_f64 v = x[i];\n"
    "y[4 * i] = sqrt(fabs(v)); y[4 * i + 1] = exp(v); y[4 * i + 2] = sin(v) * cos(v); y[4 * i + 3] = pow(fabs(v), 0.25);";

static const char group_body[] =
    "GPAR_LOCAL(gpar_u32, t, 64);\n"
    "gpar_u32 l = GPAR_LOCAL_ID(0);\n"
    "gpar_u64 i = GPAR_GLOBAL_ID(0);\n"
    "t[l] = i < n ? x[i] : 0u;\n"
    "GPAR_BARRIER();\n"
    "for (gpar_u32 s = 32; s > 0; s >>= 1) {\n"
    "  if (l < s) t[l] += t[l + s];\n"
    "  GPAR_BARRIER();\n"
    "}\n"
    "if (l == 0) sums[GPAR_GROUP_ID(0)] = t[0];";

static const char scalars_params[] = "i32 a, u32 b, i64 c, u64 d, f32 e, f64 f, out i64 *o";
static const char scalars_body[] =
    "o[0] = a; o[1] = (gpar_i64)b; o[2] = c; o[3] = (gpar_i64)d;\n"
    "o[4] = (gpar_i64)gpar_as_u32(e); o[5] = (gpar_i64)gpar_as_u64(f); o[6] = (gpar_i64)(f * 2.0);";

/* A preamble helper with a global-memory pointer. */
static const char helper_pre[] = "GPAR_FN gpar_f32 twice(const GPAR_GLOBAL_MEM gpar_f32 *p, gpar_u64 i) { return 2.0f * p[i]; }";
static const char helper_body[] = "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = twice(x, i) + a;";

static gpar_kernel k_saxpy, k_stride, k_ints, k_ids, k_halfs, k_atomics, k_math, k_dmath, k_group, k_scalars, k_helper;

/* ---------------------------------------------------------------- checks */

/* |got - want| <= rel * |want| + abs */
static int near(double got, double want, double rel, double abs_) {
  double e = got - want;
  if (e < 0) e = -e;
  return e <= rel * (want < 0 ? -want : want) + abs_;
}

static int launch1(gpar_kernel k, int d, uint32_t groups, uint32_t size, const gpar_arg *a, int n) {
  gpar_grid g = {{groups}, {size}};
  return gpar_kernel_launch(k, d, &g, a, n);
}

static void test_saxpy(int d) {
  enum { N = 1000, OX = 4, OY = 8, TOT = N + 16 };
  static float x[TOT], y[TOT], out[TOT];
  for (int i = 0; i < TOT; i++) x[i] = (float)(i % 97) * 0.25f - 3.0f, y[i] = (float)(i % 13) - 6.5f;
  for (int variant = 0; variant < 3; variant++) {
    gpar_buffer bx = ku_buffer_with(eng, d, x, sizeof x), by = ku_buffer_with(eng, d, y, sizeof y);
    gpar_kernel k = variant == 0 ? k_saxpy : variant == 1 ? k_stride : k_helper;
    gpar_arg a[4] = {gpar_arg_u64(N), gpar_arg_f32(1.5f), gpar_arg_buffer(bx, OX * 4), gpar_arg_buffer(by, OY * 4)};
    int st = launch1(k, d, variant == 1 ? 3 : (N + 63) / 64 + 1, variant == 1 ? 32 : 64, a, 4);
    st = st ? st : gpar_read(by, 0, out, sizeof out);
    int bad = -1;
    for (int i = 0; i < TOT && st == GPAR_OK && bad < 0; i++) {
      int in = i >= OY && i < OY + N;
      double want = !in ? y[i] : variant == 2 ? 2.0 * x[i - OY + OX] + 1.5 : 1.5 * x[i - OY + OX] + y[i];
      if (in ? !near(out[i], want, 6e-8, 0) : memcmp(&out[i], &y[i], 4) != 0) bad = i;
    }
    ok(st == GPAR_OK && bad < 0, "dev %s: %s with byte offsets, within 1 ulp, nothing else touched", ku_devname(eng, d),
       variant == 0 ? "saxpy" : variant == 1 ? "saxpy as a grid-stride loop over 3 groups" : "a preamble's helper");
    if (st != GPAR_OK) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
    if (bad >= 0) diag("  element %d: %.9g", bad, out[bad]);
    gpar_buffer_release(bx);
    gpar_buffer_release(by);
  }
}

static void test_ints(int d) {
  enum { N = 777 };
  static int8_t a8[N];
  static uint8_t b8[N];
  static int16_t a16[N];
  static uint16_t b16[N];
  static int32_t a32[N];
  static uint32_t b32[N];
  static int64_t a64[N], r[N];
  static uint64_t b64[N];
  uint64_t s = 12345;
  for (int i = 0; i < N; i++) {
    a8[i] = (int8_t)tu_rand(&s), b8[i] = (uint8_t)tu_rand(&s), a16[i] = (int16_t)tu_rand(&s), b16[i] = (uint16_t)tu_rand(&s);
    a32[i] = (int32_t)tu_rand(&s), b32[i] = (uint32_t)tu_rand(&s), a64[i] = (int64_t)tu_rand(&s), b64[i] = tu_rand(&s);
  }
  gpar_buffer b[9] = {ku_buffer_with(eng, d, a8, sizeof a8),   ku_buffer_with(eng, d, b8, sizeof b8),
                      ku_buffer_with(eng, d, a16, sizeof a16), ku_buffer_with(eng, d, b16, sizeof b16),
                      ku_buffer_with(eng, d, a32, sizeof a32), ku_buffer_with(eng, d, b32, sizeof b32),
                      ku_buffer_with(eng, d, a64, sizeof a64), ku_buffer_with(eng, d, b64, sizeof b64),
                      tu_buffer(eng, d, sizeof r)};
  gpar_arg a[12] = {gpar_arg_u32(N), gpar_arg_i32(-37), gpar_arg_u64(0xfedcba9876543210ull)};
  for (int i = 0; i < 9; i++) a[3 + i] = gpar_arg_buffer(b[i], 0);
  int st = launch1(k_ints, d, (N + 127) / 128, 128, a, 12);
  st = st ? st : gpar_read(b[8], 0, r, sizeof r);
  int bad = -1;
  for (uint32_t i = 0; i < N && st == GPAR_OK && bad < 0; i++)
    if ((uint64_t)r[i] != ints_ref(i, -37, 0xfedcba9876543210ull, a8, b8, a16, b16, a32, b32, a64, b64)) bad = (int)i;
  ok(st == GPAR_OK && bad < 0, "dev %s: every integer type in and i64 out, bitwise as C computes it", ku_devname(eng, d));
  if (st != GPAR_OK) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  if (bad >= 0) diag("  element %d differs", bad);
  for (int i = 0; i < 9; i++) gpar_buffer_release(b[i]);
}

static void test_ids(int d) {
  const uint32_t g[3] = {3, 2, 2}, s[3] = {4, 2, 2};
  enum { ITEMS = 12 * 16, WORDS = ITEMS * 9 + 9 };
  static uint32_t o[WORDS];
  gpar_buffer b = tu_buffer(eng, d, sizeof o);
  gpar_arg a = gpar_arg_buffer(b, 0);
  gpar_grid grid = {{g[0], g[1], g[2]}, {s[0], s[1], s[2]}};
  int st = gpar_kernel_launch(k_ids, d, &grid, &a, 1);
  st = st ? st : gpar_read(b, 0, o, sizeof o);
  int bad = -1;
  for (uint32_t z = 0; z < g[2] * s[2] && bad < 0; z++)
    for (uint32_t y = 0; y < g[1] * s[1] && bad < 0; y++)
      for (uint32_t x = 0; x < g[0] * s[0] && bad < 0; x++) {
        const uint32_t gid[3] = {x, y, z}, *w = o + ((z * g[1] * s[1] + y) * g[0] * s[0] + x) * 9;
        for (int k = 0; k < 3; k++)
          if (w[k] != gid[k] || w[3 + k] != gid[k] % s[k] || w[6 + k] != gid[k] / s[k]) bad = (int)(w - o);
      }
  for (int k = 0; k < 3 && bad < 0; k++)
    if (o[ITEMS * 9 + k] != s[k] || o[ITEMS * 9 + 3 + k] != g[k] || o[ITEMS * 9 + 6 + k] != g[k] * s[k]) bad = ITEMS * 9;
  ok(st == GPAR_OK && bad < 0, "dev %s: global, local and group ids and sizes of a 3-D grid", ku_devname(eng, d));
  if (st != GPAR_OK) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  if (bad >= 0) diag("  word %d", bad);
  gpar_buffer_release(b);
}

/* The nearest f16 of v by search (ties to even; from 65520 on: infinity): an independent reference. */
static double f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
static uint16_t f16_ref(float f) {
  double v = fabs((double)f);
  uint16_t sign = signbit(f) ? 0x8000 : 0, best = 0;
  if (v >= 65520.0) return sign | 0x7c00;
  for (uint16_t h = 1; h < 0x7c00; h++) {
    double e = fabs(f16_value(h) - v), eb = fabs(f16_value(best) - v);
    if (e < eb || (e == eb && !(h & 1))) best = h;
  }
  return sign | best;
}
static uint16_t bf16_ref(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  float fl, fh;
  memcpy(&fl, &lo, 4);
  memcpy(&fh, &hi, 4);
  double el = fabs((double)f - fl), eh = fabs((isinf(fh) ? ldexp(1.0, 128) : (double)fh) - f); /* IEEE: 2^128 */
  if ((lo & 0x7f800000u) == 0x7f800000u) return (uint16_t)(lo >> 16); /* infinity stays */
  return (uint16_t)((eh < el || (eh == el && (hi >> 16 & 1) == 0) ? hi : lo) >> 16);
}

static void test_halfs(int d) {
  enum { N = 64 };
  static float x[N], back[2 * N];
  static uint16_t h[N], bf[N];
  static const float special[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e30f, -1e30f, 5.9604645e-8f,
                                  2.9802322e-8f, 2.9802326e-8f, 1e-8f, 6.1035156e-5f, 6.1e-5f, 1.00048828125f,
                                  1.00146484375f, 1.00390625f, 1.01171875f, 3.3895313892515355e38f, 3.4028235e38f, -2.5f, 0.1f};
  size_t ns = sizeof special / sizeof special[0];
  uint64_t s = 99;
  for (int i = 0; i < N; i++) {
    uint32_t u = (uint32_t)tu_rand(&s) & 0xbfffffffu; /* finite (exponent below 0x7f), normal */
    if (!(u & 0x7f800000u)) u |= 0x00800000u;
    memcpy(&x[i], &u, 4);
    if ((size_t)i < ns) x[i] = special[i];
    else if (i & 1) x[i] = (float)((int)(tu_rand(&s) % 200000) - 100000) / 7.0f;
  }
  x[ns] = INFINITY;
  x[ns + 1] = -INFINITY;
  gpar_buffer bx = ku_buffer_with(eng, d, x, sizeof x), bh = tu_buffer(eng, d, sizeof h), bb = tu_buffer(eng, d, sizeof bf),
              bk = tu_buffer(eng, d, sizeof back);
  gpar_arg a[5] = {gpar_arg_u32(N), gpar_arg_buffer(bx, 0), gpar_arg_buffer(bh, 0), gpar_arg_buffer(bb, 0),
                   gpar_arg_buffer(bk, 0)};
  int st = launch1(k_halfs, d, 2, 32, a, 5);
  if (!st) st = gpar_read(bh, 0, h, sizeof h);
  if (!st) st = gpar_read(bb, 0, bf, sizeof bf);
  if (!st) st = gpar_read(bk, 0, back, sizeof back);
  int bad = -1;
  for (int i = 0; i < N && !st && bad < 0; i++) {
    float b1 = (float)f16_value(h[i]), b2;
    uint32_t u = (uint32_t)bf[i] << 16;
    memcpy(&b2, &u, 4);
    if (h[i] != f16_ref(x[i]) || bf[i] != bf16_ref(x[i]) || memcmp(&back[2 * i], &b1, 4) || memcmp(&back[2 * i + 1], &b2, 4))
      bad = i;
  }
  ok(!st && bad < 0, "dev %s: f16 and bf16 stores round to nearest even, loads are exact (bitwise)", ku_devname(eng, d));
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  if (bad >= 0)
    diag("  x[%d] = %.9g: f16 %04x (want %04x), bf16 %04x (want %04x)", bad, x[bad], h[bad], f16_ref(x[bad]), bf[bad],
         bf16_ref(x[bad]));
  gpar_buffer_release(bx), gpar_buffer_release(bh), gpar_buffer_release(bb), gpar_buffer_release(bk);
}

static void test_atomics(int d) {
  enum { N = 1000 };
  static uint32_t old[N], ctr[6];
  static float fold[N], fsum[1];
  static int32_t mm[3];
  static int64_t c64[2];
  uint32_t ctr0[6] = {0, 0, UINT32_MAX, 0, 0, 0};
  int32_t mm0[3] = {INT32_MIN, INT32_MAX, 5};
  int64_t c0[2] = {0, 0};
  float f0 = 0;
  gpar_buffer bo = tu_buffer(eng, d, sizeof old), bc = ku_buffer_with(eng, d, ctr0, sizeof ctr0),
              bf = tu_buffer(eng, d, sizeof fold), bs = ku_buffer_with(eng, d, &f0, 4), bm = ku_buffer_with(eng, d, mm0, sizeof mm0),
              b64 = ku_buffer_with(eng, d, c0, sizeof c0);
  gpar_arg a[7] = {gpar_arg_u32(N), gpar_arg_buffer(bo, 0), gpar_arg_buffer(bc, 0), gpar_arg_buffer(bf, 0),
                   gpar_arg_buffer(bs, 0), gpar_arg_buffer(bm, 0), gpar_arg_buffer(b64, 0)};
  int st = launch1(k_atomics, d, (N + 127) / 128, 128, a, 7);
  if (!st) st = gpar_read(bo, 0, old, sizeof old);
  if (!st) st = gpar_read(bc, 0, ctr, sizeof ctr);
  if (!st) st = gpar_read(bf, 0, fold, sizeof fold);
  if (!st) st = gpar_read(bs, 0, fsum, sizeof fsum);
  if (!st) st = gpar_read(bm, 0, mm, sizeof mm);
  if (!st) st = gpar_read(b64, 0, c64, sizeof c64);
  static char seen[N], fseen[N];
  memset(seen, 0, N);
  memset(fseen, 0, N);
  int perm = 1;
  for (int i = 0; i < N && !st; i++) {
    if (old[i] >= N || seen[old[i]]++) perm = 0;
    if (!(fold[i] >= 0 && fold[i] < N && fold[i] == (float)(int)fold[i]) || fseen[(int)fold[i]]++) perm = 0;
  }
  uint64_t sum33 = 0;
  int64_t neg = 0;
  for (uint64_t i = 0; i < N; i++) sum33 += i << 33, neg -= (int64_t)i;
  ok(!st && perm && ctr[0] == N && fsum[0] == (float)N, "dev %s: atomic adds (u32, f32) return the value before: "
     "each work-item saw a different one of 0..n-1", ku_devname(eng, d));
  ok(!st && mm[0] == N - 1 - 7 && mm[1] == 100 - (N - 1) && ctr[1] == (N - 1) * 3 && ctr[2] == 5 && c64[0] == neg &&
         (uint64_t)c64[1] == sum33 && ctr[3] >= 1 && ctr[3] <= N && ctr[4] == 1 && ctr[5] == 7 && mm[2] == 5 - 2 * N,
     "dev %s: atomic min/max (i32, u32), i64/u64 adds, i32 add, one CAS winner, exchange", ku_devname(eng, d));
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  else if (!perm || ctr[4] != 1)
    diag("  ctr %u %u %u %u %u %u, mm %d %d %d, c64 %lld %llu, fsum %g", ctr[0], ctr[1], ctr[2], ctr[3], ctr[4], ctr[5],
         mm[0], mm[1], mm[2], (long long)c64[0], (unsigned long long)c64[1], fsum[0]);
  gpar_buffer_release(bo), gpar_buffer_release(bc), gpar_buffer_release(bf), gpar_buffer_release(bs),
      gpar_buffer_release(bm), gpar_buffer_release(b64);
}

static void test_math(int d) {
  enum { N = 200 };
  static float x[N], y[N * NMATH];
  static double xd[N], yd[N * 4];
  for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) / 23.0f, xd[i] = (double)(i - N / 2) / 17.0;
  gpar_buffer bx = ku_buffer_with(eng, d, x, sizeof x), by = tu_buffer(eng, d, sizeof y);
  gpar_arg a[3] = {gpar_arg_u32(N), gpar_arg_buffer(bx, 0), gpar_arg_buffer(by, 0)};
  int st = launch1(k_math, d, (N + 63) / 64, 64, a, 3), bad = -1;
  if (!st) st = gpar_read(by, 0, y, sizeof y);
  for (int i = 0; i < N * NMATH && !st && bad < 0; i++)
    if (!near(y[i], math_ref(i % NMATH, x[i / NMATH]), 4e-6, 2e-6)) bad = i;
  /* 4e-6 relative (about 32 ulp) + 2e-6 absolute: OpenCL 1.2 allows up to 4 ulp (exp, log, pow: 16) */
  ok(!st && bad < 0, "dev %s: C99 float math (sqrtf expf logf sinf tanhf powf fmaf fminf fmaxf floorf erff) within "
     "4e-6 relative of double", ku_devname(eng, d));
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  if (bad >= 0) diag("  function %d of x = %.9g: %.9g, want %.9g", bad % NMATH, x[bad / NMATH], y[bad], math_ref(bad % NMATH, x[bad / NMATH]));
  gpar_buffer_release(bx);
  gpar_buffer_release(by);
  gpar_buffer dx = ku_buffer_with(eng, d, xd, sizeof xd), dy = tu_buffer(eng, d, sizeof yd);
  gpar_arg b[3] = {gpar_arg_u32(N), gpar_arg_buffer(dx, 0), gpar_arg_buffer(dy, 0)};
  st = launch1(k_dmath, d, (N + 63) / 64, 64, b, 3), bad = -1;
  if (st == GPAR_ENOTSUP) {
    skip(1, "no fp64 on this device");
  } else {
    if (!st) st = gpar_read(dy, 0, yd, sizeof yd);
    for (int i = 0; i < N && !st && bad < 0; i++) {
      double v = xd[i], w[4] = {sqrt(fabs(v)), exp(v), sin(v) * cos(v), pow(fabs(v), 0.25)};
      for (int k = 0; k < 4; k++)
        if (!near(yd[4 * i + k], w[k], 1e-13, 1e-15)) bad = 4 * i + k;
    }
    ok(!st && bad < 0, "dev %s: double math (sqrt exp sin cos pow) within 1e-13 relative", ku_devname(eng, d));
    if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  }
  gpar_buffer_release(dx);
  gpar_buffer_release(dy);
}

static void test_group(int d) {
  enum { N = 1000, G = (N + 63) / 64 };
  static uint32_t x[N], sums[G];
  for (int i = 0; i < N; i++) x[i] = (uint32_t)(i * 2654435761u) >> 8;
  gpar_buffer bx = ku_buffer_with(eng, d, x, sizeof x), bs = tu_buffer(eng, d, sizeof sums);
  gpar_arg a[3] = {gpar_arg_u32(N), gpar_arg_buffer(bx, 0), gpar_arg_buffer(bs, 0)};
  gpar_stats s0, s1;
  gpar_stats_get(eng, &s0);
  int st = launch1(k_group, d, G, 64, a, 3);
  gpar_stats_get(eng, &s1);
  if (ku_backend(eng, d) == GPAR_BACKEND_HOST) {
    ok(st == GPAR_ENOTSUP && strstr(gpar_last_error(), "PoCL") && s1.ops_submitted == s0.ops_submitted,
       "dev %s: a group barrier with group-local memory is refused on the host (GPAR_ENOTSUP naming PoCL), nothing enqueued",
       ku_devname(eng, d));
    diag("  %s", gpar_last_error());
  } else {
    if (!st) st = gpar_read(bs, 0, sums, sizeof sums);
    int bad = -1;
    for (int g = 0; g < G && !st && bad < 0; g++) {
      uint32_t want = 0;
      for (int i = g * 64; i < N && i < g * 64 + 64; i++) want += x[i];
      if (sums[g] != want) bad = g;
    }
    ok(!st && bad < 0, "dev %s: a tree sum in group-local memory with group barriers, exact", ku_devname(eng, d));
    if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  }
  gpar_buffer_release(bx);
  gpar_buffer_release(bs);
}

static void test_scalars(int d) {
  int64_t o[7];
  gpar_buffer bo = tu_buffer(eng, d, sizeof o);
  gpar_arg a[7] = {gpar_arg_i32(-123456789), gpar_arg_u32(4000000000u), gpar_arg_i64(-0x123456789abcdefll),
                   gpar_arg_u64(0xf0e1d2c3b4a59687ull), gpar_arg_f32(-1.25f), gpar_arg_f64(3.141592653589793),
                   gpar_arg_buffer(bo, 0)};
  int st = launch1(k_scalars, d, 1, 1, a, 7);
  if (st == GPAR_ENOTSUP) {
    skip(1, "no fp64 on this device");
  } else {
    if (!st) st = gpar_read(bo, 0, o, sizeof o);
    uint32_t fe;
    uint64_t ff;
    float e = -1.25f;
    double f = 3.141592653589793;
    memcpy(&fe, &e, 4);
    memcpy(&ff, &f, 8);
    ok(!st && o[0] == -123456789 && o[1] == 4000000000ll && o[2] == -0x123456789abcdefll &&
           (uint64_t)o[3] == 0xf0e1d2c3b4a59687ull && (uint64_t)o[4] == fe && (uint64_t)o[5] == ff && o[6] == 6,
       "dev %s: every scalar type arrives with its bits", ku_devname(eng, d));
    if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  }
  gpar_buffer_release(bo);
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  tap_start();
  eng = ku_engine(0);
  ndev = gpar_device_count(eng);
  k_saxpy = ku_kernel(eng, "saxpy", saxpy_params, saxpy_body, NULL);
  k_stride = ku_kernel(eng, "saxpy_stride", saxpy_params, stride_body, NULL);
  k_helper = ku_kernel(eng, "twice_plus", saxpy_params, helper_body, helper_pre);
  k_ints = ku_kernel(eng, "ints", ints_params, ints_body, NULL);
  k_ids = ku_kernel(eng, "ids", "out u32 *o", ids_body, NULL);
  k_halfs = ku_kernel(eng, "halfs", "u32 n, in f32 *x, out f16 *h, out bf16 *b, out f32 *back", halfs_body, NULL);
  k_atomics = ku_kernel(eng, "atomics", atomics_params, atomics_body, NULL);
  k_math = ku_kernel(eng, "math", "u32 n, in f32 *x, out f32 *y", math_body, NULL);
  k_dmath = ku_kernel(eng, "dmath", "u32 n, in f64 *x, out f64 *y", dmath_body, NULL);
  k_group = ku_kernel(eng, "group_sum", "u32 n, in u32 *x, out u32 *sums", group_body, NULL);
  k_scalars = ku_kernel(eng, "scalars", scalars_params, scalars_body, NULL);
  for (int d = 0; d < ndev; d++) {
    char what[256];
    int st = gpar_kernel_support(eng, d, what, sizeof what);
    diag("device %s: %s%s", ku_devname(eng, d), st ? "cannot build kernels: " : "", what);
    if (st != GPAR_OK) { /* say so: a device that cannot build kernels is a failure here */
      ok(0, "dev %s builds kernels", ku_devname(eng, d));
      continue;
    }
    test_saxpy(d);
    test_ints(d);
    test_ids(d);
    test_halfs(d);
    test_atomics(d);
    test_math(d);
    test_group(d);
    test_scalars(d);
  }
  is_status(gpar_wait_all(eng), GPAR_OK, "no failure left for wait_all");
  gpar_kernel all[] = {k_saxpy, k_stride, k_helper, k_ints, k_ids, k_halfs, k_atomics, k_math, k_dmath, k_group, k_scalars};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gpar_kernel_release(all[i]);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
