/* dtypes.c: the element types and their host conversions (gpar.h): gpar_dtype_size of every
 * type; every one of the 65536 f16 and bf16 values decoded exactly (against an independent
 * decoder built on ldexp) and encoded back to itself; round to nearest, ties to even, at every
 * midpoint between neighbouring finite f16 and bf16 values (and one f32 step either side);
 * overflow, underflow, signed zeros and NaN; gpar_convert over arrays, and its refusals. No
 * engine: these run on the host. */
#include <math.h>

#include "testutil.h"

/* Independent decoders: sign, exponent and fraction fields put together with ldexp. */
static double ref_half(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, f = h & 1023;
  double v = e == 31 ? (f ? NAN : INFINITY) : e == 0 ? ldexp(f, -24) : ldexp(1024 + f, e - 25);
  return s ? -v : v;
}
static double ref_bf16(uint16_t h) {
  int s = h >> 15, e = (h >> 7) & 255, f = h & 127;
  double v = e == 255 ? (f ? NAN : INFINITY) : e == 0 ? ldexp(f, -133) : ldexp(128 + f, e - 134);
  return s ? -v : v;
}

typedef struct fmt {
  const char *name;
  double (*ref)(uint16_t);
  uint16_t (*from)(float);
  float (*to)(uint16_t);
  uint16_t inf;  /* +infinity */
  uint16_t emax; /* exponent mask */
} fmt;

static uint16_t from_h(float x) { return gpar_half_from_float(x); }
static float to_h(uint16_t h) { return gpar_half_to_float(h); }
static uint16_t from_b(float x) { return gpar_bfloat16_from_float(x); }
static float to_b(uint16_t h) { return gpar_bfloat16_to_float(h); }

static int is_nan16(const fmt *f, uint16_t h) { return (h & f->emax) == f->emax && (h & (uint16_t)~(f->emax | 0x8000)); }

/* Every value: decoded exactly, encoded back to itself (NaN to a NaN). */
static void all_values(const fmt *f) {
  long bad_dec = 0, bad_enc = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    double want = f->ref((uint16_t)h), got = f->to((uint16_t)h);
    if (isnan(want) ? !isnan(got) : (got != want || signbit(got) != signbit(want))) {
      if (!bad_dec++) diag("  %s %#06x decodes to %g, want %g", f->name, h, got, want);
    }
    uint16_t back = f->from((float)want);
    if (isnan(want) ? !is_nan16(f, back) : back != h) {
      if (!bad_enc++) diag("  %s %#06x (%g) encodes back to %#06x", f->name, h, want, back);
    }
  }
  ok(bad_dec == 0, "%s: all 65536 values decode exactly (%ld wrong)", f->name, bad_dec);
  ok(bad_enc == 0, "%s: every value encodes back to itself, NaN to NaN (%ld wrong)", f->name, bad_enc);
}

/* Between each finite positive value h and h + 1 (the next one up, possibly infinity): the
 * midpoint goes to the even one of the two, a step of f32 below to h, above to h + 1; the same
 * for the negatives. */
static void midpoints(const fmt *f) {
  long bad = 0;
  for (uint32_t h = 0; h < f->inf; h++) {
    double lo = f->ref((uint16_t)h), hi = f->ref((uint16_t)(h + 1));
    if (h + 1 == f->inf) hi = 2 * lo - f->ref((uint16_t)(h - 1)); /* where the next value would be */
    float mid = (float)((lo + hi) / 2); /* exact in f32: one bit more than the format has */
    const uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    struct { float x; uint16_t want; } t[3] = {{mid, even}, {nextafterf(mid, -INFINITY), (uint16_t)h},
                                                {nextafterf(mid, INFINITY), (uint16_t)(h + 1)}};
    for (int i = 0; i < 3; i++)
      for (int sign = 0; sign < 2; sign++) {
        float x = sign ? -t[i].x : t[i].x;
        uint16_t want = (uint16_t)(t[i].want | (sign ? 0x8000 : 0)), got = f->from(x);
        if (got != want && !bad++) diag("  %s: %.9g encodes to %#06x, want %#06x", f->name, x, got, want);
      }
  }
  ok(bad == 0, "%s: round to nearest, ties to even, at every midpoint (%ld wrong)", f->name, bad);
}

static void edges(void) {
  ok(gpar_half_from_float(65504.0f) == 0x7bff && gpar_half_from_float(65519.99f) == 0x7bff &&
         gpar_half_from_float(65520.0f) == 0x7c00 && gpar_half_from_float(1e10f) == 0x7c00 &&
         gpar_half_from_float(-1e10f) == 0xfc00 && gpar_half_from_float(INFINITY) == 0x7c00,
     "f16: 65504 is the largest; from 65520 on, infinity (both signs)");
  ok(gpar_half_from_float(ldexpf(1, -24)) == 0x0001 && gpar_half_from_float(ldexpf(1, -25)) == 0x0000 &&
         gpar_half_from_float(ldexpf(1.5f, -25)) == 0x0001 && gpar_half_from_float(-ldexpf(1, -26)) == 0x8000 &&
         gpar_half_from_float(1e-30f) == 0 && gpar_half_from_float(-0.0f) == 0x8000 &&
         gpar_half_from_float(ldexpf(1023, -24)) == 0x03ff && gpar_half_from_float(ldexpf(2047, -25)) == 0x0400,
     "f16: subnormals, underflow to signed zero, rounding up into the normals");
  ok(is_nan16(&(fmt){"f16", 0, 0, 0, 0x7c00, 0x7c00}, gpar_half_from_float(NAN)) &&
         isnan(gpar_half_to_float(0x7e00)) && isnan(gpar_bfloat16_to_float(0x7fc0)) &&
         is_nan16(&(fmt){"bf16", 0, 0, 0, 0x7f80, 0x7f80}, gpar_bfloat16_from_float(-NAN)),
     "NaN stays NaN both ways in both formats");
  ok(gpar_bfloat16_from_float(3.4028235e38f) == 0x7f80 && gpar_bfloat16_from_float(3.3895314e38f) == 0x7f7f &&
         gpar_bfloat16_from_float(-0.0f) == 0x8000 && gpar_bfloat16_from_float(1.0f) == 0x3f80 &&
         gpar_bfloat16_from_float(1.00390625f) == 0x3f80 && gpar_bfloat16_from_float(1.01171875f) == 0x3f82,
     "bf16: overflow past its largest value to infinity, ties to even, signed zero");
  ok(gpar_dtype_size(GPAR_FLOAT) == 4 && gpar_dtype_size(GPAR_DOUBLE) == 8 && gpar_dtype_size(GPAR_HALF) == 2 &&
         gpar_dtype_size(GPAR_BFLOAT16) == 2 && gpar_dtype_size(GPAR_INT32) == 4 && gpar_dtype_size((gpar_dtype)5) == 0 &&
         gpar_dtype_size((gpar_dtype)-1) == 0,
     "gpar_dtype_size of every type, 0 for unknown ones");
  ok(GPAR_FLOAT == 0 && GPAR_DOUBLE == 1 && GPAR_HALF == 2 && GPAR_BFLOAT16 == 3 && GPAR_INT32 == 4,
     "gpar_dtype values: the old ones keep their meaning, the new ones appended");
}

static void convert(void) {
  enum { N = 1000 };
  float f[N], g[N];
  uint16_t h[N], b[N], hb[N];
  uint64_t s = 5;
  for (int i = 0; i < N; i++) f[i] = (float)((int)(tu_rand(&s) % 200001) - 100000) / 997.0f;
  int st1 = gpar_convert(h, GPAR_HALF, f, GPAR_FLOAT, N), st2 = gpar_convert(b, GPAR_BFLOAT16, f, GPAR_FLOAT, N);
  int st3 = gpar_convert(hb, GPAR_BFLOAT16, h, GPAR_HALF, N), st4 = gpar_convert(g, GPAR_FLOAT, hb, GPAR_BFLOAT16, N);
  int good = st1 == GPAR_OK && st2 == GPAR_OK && st3 == GPAR_OK && st4 == GPAR_OK;
  for (int i = 0; i < N && good; i++)
    good = h[i] == gpar_half_from_float(f[i]) && b[i] == gpar_bfloat16_from_float(f[i]) &&
           hb[i] == gpar_bfloat16_from_float(gpar_half_to_float(h[i])) && g[i] == gpar_bfloat16_to_float(hb[i]);
  ok(good, "gpar_convert: f32 -> f16, f32 -> bf16, f16 -> bf16, bf16 -> f32 as the scalar conversions");
  memcpy(g, f, sizeof f);
  is_status(gpar_convert(g, GPAR_FLOAT, g, GPAR_FLOAT, N), GPAR_OK, "gpar_convert: equal types in place");
  ok(!memcmp(f, g, sizeof f), "... leaves the data as it was");
  is_status(gpar_convert(g, GPAR_DOUBLE, f, GPAR_FLOAT, N), GPAR_EINVAL, "gpar_convert: GPAR_DOUBLE refused");
  is_status(gpar_convert(g, GPAR_FLOAT, f, GPAR_INT32, N), GPAR_EINVAL, "gpar_convert: GPAR_INT32 refused");
  is_status(gpar_convert(NULL, GPAR_HALF, f, GPAR_FLOAT, 1), GPAR_EINVAL, "gpar_convert: NULL destination refused");
  is_status(gpar_convert(NULL, GPAR_HALF, NULL, GPAR_FLOAT, 0), GPAR_OK, "gpar_convert: nothing to convert");
}

int main(void) {
  static const fmt half = {"f16", ref_half, from_h, to_h, 0x7c00, 0x7c00};
  static const fmt bf16 = {"bf16", ref_bf16, from_b, to_b, 0x7f80, 0x7f80};
  plan(19);
  all_values(&half);
  all_values(&bf16);
  midpoints(&half);
  midpoints(&bf16);
  edges();
  convert();
  return done_testing();
}
