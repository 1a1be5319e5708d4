/* f16_bits.c: f16 <-> f32 conversions give the same bits on every device, NaNs included, by one
 * rule (numpy's, gpar.h): f16 -> f32 keeps a NaN's sign and payload (the 10 bits shifted left 13,
 * quiet or signalling as it was); f32 -> f16 keeps its sign and the payload's top 10 bits, and
 * sets the lowest when those are all zero, so it stays a NaN. A conformance body over every
 * device converts a table of special values (NaNs with payloads, signalling and quiet, both
 * signs, infinities, signed zeros, subnormals, the largest values, ties) both ways through a
 * kernel (gpar_f32_to_f16, gpar_f16_to_f32, gpar_store_f16, gpar_load_f16), through maps and
 * through gpar_unary on f16 arrays, and compares the bits with the host's plain C rule
 * (gpar_half_from_float / gpar_half_to_float, gpar_convert), itself checked against the rule.
 * Mutant caught: in dialect.c's gpar_f32_to_f16, `(m ? m : 1u)` -> `m` (a payload below the
 * top 10 bits becomes infinity on every device). */
#include <math.h>

#include "kernel_util.h"

#define N 64

static gpar_engine *eng;
static uint32_t f32s[N];
static uint16_t f16s[N];
static int n32, n16;

static float f_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static uint32_t ref_to32(uint16_t h) { return bits_of(gpar_half_to_float(h)); }
static uint16_t ref_to16(uint32_t u) { return gpar_half_from_float(f_of(u)); }

static void tables(void) {
  static const uint32_t a[] = {0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x477fe000, 0x477fefff, 0x477ff000,
                               0xc77ff000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
                               0x7f800001, 0xff800001, 0x7f802000, 0xff802000, 0x7fc00001, 0x7fc02000, 0x7fffffff,
                               0xffffffff, 0x7fa00000, 0x7f801fff, 0x7f804000, 0x7fbfffff, 0xffa02001, 0x00000001,
                               0x80000001, 0x007fffff, 0x33800000, 0x33000000, 0xb3000000, 0x33400000, 0x32800000,
                               0x33c00000, 0x34200000, 0x387fc000, 0x387fe000, 0x38800000, 0x3f801000, 0x3f803000,
                               0x3f801001, 0xbf801000, 0x3f800fff, 0x3dcccccd, 0x40490fdb, 0x3c7ff000, 0x7f000000};
  static const uint16_t b[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0200, 0x0400, 0x3c00,
                               0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7c01, 0xfc01, 0x7d00, 0x7dff,
                               0x7e00, 0xfe00, 0x7e01, 0x7fff, 0xffff, 0x7c10, 0xfe55, 0x3555, 0x0155};
  n32 = (int)(sizeof a / sizeof a[0]);
  n16 = (int)(sizeof b / sizeof b[0]);
  memcpy(f32s, a, sizeof a);
  memcpy(f16s, b, sizeof b);
}

/* The rule for NaNs, written out (the host's functions must follow it). */
static void test_host_rule(void) {
  int bad = 0;
  for (int i = 0; i < n32; i++) {
    uint32_t u = f32s[i], a = u & 0x7fffffffu, m = (a >> 13) & 0x3ffu;
    if (a > 0x7f800000u && ref_to16(u) != (uint16_t)(((u >> 16) & 0x8000u) | 0x7c00u | (m ? m : 1u)) && !bad++)
      diag("  host: f32 %#010x -> f16 %#06x", u, ref_to16(u));
  }
  for (int i = 0; i < n16; i++) {
    uint16_t h = f16s[i];
    if ((h & 0x7fffu) > 0x7c00u &&
        ref_to32(h) != (((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13)) && !bad++)
      diag("  host: f16 %#06x -> f32 %#010x", h, ref_to32(h));
  }
  ok(!bad, "host: NaNs convert by the rule (sign and payload kept, a NaN stays a NaN)");
  ok(ref_to16(0x7fc00000u) == 0x7e00 && ref_to16(0x7f800001u) == 0x7c01 && ref_to16(0xffc02000u) == 0xfe01 &&
         ref_to32(0x7c01) == 0x7f802000u && ref_to32(0xfe00) == 0xffc00000u,
     "host: 0x7fc00000 -> 0x7e00, 0x7f800001 -> 0x7c01, 0x7c01 -> 0x7f802000");
  static uint16_t h[N];
  static uint32_t f[N];
  int st = gpar_convert(h, GPAR_HALF, f32s, GPAR_FLOAT, (size_t)n32);
  if (!st) st = gpar_convert(f, GPAR_FLOAT, f16s, GPAR_HALF, (size_t)n16);
  bad = st != GPAR_OK;
  for (int i = 0; i < n32 && !bad; i++) bad = h[i] != ref_to16(f32s[i]);
  for (int i = 0; i < n16 && !bad; i++) bad = f[i] != ref_to32(f16s[i]);
  ok(!bad, "gpar_convert follows the same rule both ways");
}

/* Count the differences of got (from the device) and want; the first is shown. */
static int differ16(const char *what, int d, const uint32_t *in, const uint16_t *got, const uint16_t *want, int n) {
  int bad = 0;
  for (int i = 0; i < n; i++)
    if (got[i] != want[i] && !bad++) diag("  dev %d %s: %#010x -> %#06x, want %#06x", d, what, in[i], got[i], want[i]);
  return bad;
}
static int differ32(const char *what, int d, const uint16_t *in, const uint32_t *got, const uint32_t *want, int n) {
  int bad = 0;
  for (int i = 0; i < n; i++)
    if (got[i] != want[i] && !bad++) diag("  dev %d %s: %#06x -> %#010x, want %#010x", d, what, in[i], got[i], want[i]);
  return bad;
}

static gpar_kernel k_conv;
static gpar_map m_to32, m_to16, m_16;

/* Through the kernel dialect's conversions, single values and loads/stores. */
static void test_kernel(int d) {
  static uint16_t h[N], s[N], want16[N], want16b[N];
  static uint32_t y[N], l[N], want32[N], in32[N];
  for (int i = 0; i < N; i++) want16[i] = ref_to16(f32s[i]), want32[i] = ref_to32(f16s[i]), in32[i] = f16s[i];
  gpar_buffer bx = ku_buffer_with(eng, d, f32s, sizeof f32s), bg = ku_buffer_with(eng, d, f16s, sizeof f16s);
  gpar_buffer bh = tu_buffer(eng, d, sizeof h), bs = tu_buffer(eng, d, sizeof s), by = tu_buffer(eng, d, sizeof y),
              bl = tu_buffer(eng, d, sizeof l);
  gpar_arg a[] = {gpar_arg_u32(N),        gpar_arg_buffer(bx, 0), gpar_arg_buffer(bh, 0), gpar_arg_buffer(bg, 0),
                  gpar_arg_buffer(by, 0), gpar_arg_buffer(bs, 0), gpar_arg_buffer(bl, 0)};
  gpar_grid g = {{2}, {32}};
  int st = gpar_kernel_launch(k_conv, d, &g, a, 7);
  if (!st) st = gpar_read(bh, 0, h, sizeof h);
  if (!st) st = gpar_read(bs, 0, s, sizeof s);
  if (!st) st = gpar_read(by, 0, y, sizeof y);
  if (!st) st = gpar_read(bl, 0, l, sizeof l);
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  ok(!st && !differ16("gpar_f32_to_f16", d, f32s, h, want16, n32), "dev %s: gpar_f32_to_f16 gives the host's bits",
     ku_devname(eng, d));
  ok(!st && !differ16("gpar_store_f16", d, f32s, s, want16, n32), "dev %s: gpar_store_f16 gives the host's bits",
     ku_devname(eng, d));
  ok(!st && !differ32("gpar_f16_to_f32", d, f16s, y, want32, n16), "dev %s: gpar_f16_to_f32 gives the host's bits",
     ku_devname(eng, d));
  ok(!st && !differ32("gpar_load_f16", d, f16s, l, want32, n16), "dev %s: gpar_load_f16 gives the host's bits",
     ku_devname(eng, d));

  /* maps: f16 -> f32, f32 -> f16, f16 -> f32 -> f16 (the round trip keeps every f16 NaN) */
  gpar_arg a1[] = {gpar_arg_buffer(bg, 0), gpar_arg_buffer(by, 0)},
           a2[] = {gpar_arg_buffer(bx, 0), gpar_arg_buffer(bh, 0)},
           a3[] = {gpar_arg_buffer(bg, 0), gpar_arg_buffer(bs, 0)};
  st = gpar_map_launch(m_to32, N, a1, 2);
  if (!st) st = gpar_map_launch(m_to16, N, a2, 2);
  if (!st) st = gpar_map_launch(m_16, N, a3, 2);
  if (!st) st = gpar_read(by, 0, y, sizeof y);
  if (!st) st = gpar_read(bh, 0, h, sizeof h);
  if (!st) st = gpar_read(bs, 0, s, sizeof s);
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  ok(!st && !differ32("map f16 -> f32", d, f16s, y, want32, n16) &&
         !differ16("map f32 -> f16", d, f32s, h, want16, n32) && !differ16("map f16 -> f16", d, in32, s, f16s, n16),
     "dev %s: maps convert with the host's bits; an f16 round trip keeps every value", ku_devname(eng, d));

  /* gpar_unary on f16: -x, loaded to f32 and stored back (negation flips the sign bit only) */
  for (int i = 0; i < N; i++) want16b[i] = ref_to16(ref_to32(f16s[i]) ^ 0x80000000u);
  st = gpar_unary(GPAR_UN_NEG, GPAR_HALF, N, bg, 0, bs, 0);
  if (!st) st = gpar_read(bs, 0, s, sizeof s);
  int bad = st || differ16("gpar_unary neg f16", d, in32, s, want16b, n16);
  /* and |x|, which clears it (NVIDIA's neg and abs instructions gave their canonical NaN 0x7fff) */
  for (int i = 0; i < N; i++) want16b[i] = ref_to16(ref_to32(f16s[i]) & 0x7fffffffu);
  if (!st) st = gpar_unary(GPAR_UN_ABS, GPAR_HALF, N, bg, 0, bs, 0);
  if (!st) st = gpar_read(bs, 0, s, sizeof s);
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  bad = bad || st || differ16("gpar_unary abs f16", d, in32, s, want16b, n16);
  ok(!bad, "dev %s: gpar_unary neg and abs on f16 keep NaN payloads", ku_devname(eng, d));
  gpar_buffer all[] = {bx, bg, bh, bs, by, bl};
  for (int i = 0; i < 6; i++) gpar_buffer_release(all[i]);
}

int main(void) {
  tap_start();
  tables();
  test_host_rule();
  eng = ku_engine(0);
  int ndev = gpar_device_count(eng);
  k_conv = ku_kernel(eng, "f16_bits", "u32 n, in f32 *x, out f16 *h, in f16 *g, out f32 *y, out f16 *s, out f32 *l",
                     "gpar_u64 i = GPAR_GLOBAL_ID(0);\n"
                     "if (i < n) { h[i] = gpar_f32_to_f16(x[i]); y[i] = gpar_f16_to_f32(g[i]);\n"
                     "  gpar_store_f16(s, i, x[i]); l[i] = gpar_load_f16(g, i); }",
                     NULL);
  if (gpar_map_create(eng, "to32", "in f16 g, out f32 y", "y = g", &m_to32) ||
      gpar_map_create(eng, "to16", "in f32 x, out f16 h", "h = x", &m_to16) ||
      gpar_map_create(eng, "f16_copy", "in f16 g, out f16 s", "s = g", &m_16))
    bail_out("gpar_map_create failed");
  for (int d = 0; d < ndev; d++) {
    char what[256];
    if (gpar_kernel_support(eng, d, what, sizeof what) != GPAR_OK) {
      ok(0, "dev %s builds kernels: %s", ku_devname(eng, d), what);
      continue;
    }
    test_kernel(d);
  }
  gpar_map_release(m_to32), gpar_map_release(m_to16), gpar_map_release(m_16);
  gpar_kernel_release(k_conv);
  gpar_shutdown(eng);
  return done_testing();
}
