/* blas_sweep.c: an sblat3-style sweep of the BLAS calls beyond gpar_sgemm/dgemm, on every device
 * of every backend, against a plain double-precision reference: gpar_[sd]gemm_strided_batched and
 * gpar_gemm_ex (f16/bf16 operands, C in f32 or their type) over shapes with m, n, k in {0, 1,
 * odd}, all four transposes, alpha and beta in {0, 1, others}, leading dimensions above the
 * minimum, offsets, batch counts 0, 1 and odd with strides leaving gaps and strides 0 (a shared A
 * or B); gpar_[sd]gemv (both transposes, increments > 1); gpar_[sd]axpy, gpar_[sd]scal and
 * gpar_[sd]dot (into a result buffer at an offset). Every element of every output buffer is
 * checked: inside what the call may write, against the reference within the tolerance below;
 * outside (rows past m, gaps between batch entries and between increments, before offsets) its
 * bits must be unchanged. The BLAS rules ride along: with alpha == 0 (or k == 0) A and B hold NaN
 * (they must stay unread), with beta == 0 C holds NaN (C must be write-only).
 * Data are multiples of 1/16 in [-2, 2], exact in f16 and bf16, so f16/bf16 operands are exact in
 * f32 and their f32 sums (k <= 17) are exact too. Tolerance per element, with mag = |alpha| *
 * sum |a_ip b_pj| + |beta c_ij|: 2 (k + 3) eps_acc mag + 2 eps_out mag, eps_acc = 2^-24 (f32
 * sums: f32, f16, bf16 operands) or 2^-53 (f64), eps_out = the output type's rounding: 2^-24 f32,
 * 2^-53 f64, 2^-11 f16, 2^-8 bf16 (one unit in the last place of the output). DOT adds 2 n
 * eps_acc. Calls go in back to back, one gpar_wait_all per device and sweep. */
#include <math.h>

#include "testutil.h"

/* ---------------------------------------------------------------- element types on the host */

static size_t tsize(int t) { return gpar_dtype_size((gpar_dtype)t); }

static void enc(int t, void *p, size_t i, double v) {
  if (t == GPAR_FLOAT) ((float *)p)[i] = (float)v;
  else if (t == GPAR_DOUBLE) ((double *)p)[i] = v;
  else if (t == GPAR_HALF) ((uint16_t *)p)[i] = gpar_half_from_float((float)v);
  else ((uint16_t *)p)[i] = gpar_bfloat16_from_float((float)v);
}

static double dec(int t, const void *p, size_t i) {
  if (t == GPAR_FLOAT) return ((const float *)p)[i];
  if (t == GPAR_DOUBLE) return ((const double *)p)[i];
  if (t == GPAR_HALF) return gpar_half_to_float(((const uint16_t *)p)[i]);
  return gpar_bfloat16_to_float(((const uint16_t *)p)[i]);
}

static double eps_of(int t) {
  return t == GPAR_DOUBLE ? 0x1p-53 : t == GPAR_HALF ? 0x1p-11 : t == GPAR_BFLOAT16 ? 0x1p-8 : 0x1p-24;
}

/* ---------------------------------------------------------------- cases */

#define SENTINEL 7.25 /* outside what a call may write */

/* An operand's buffer: its type, its initial values and, for the output, what must come back. */
typedef struct shadow {
  int type;
  size_t n;
  double *v;
  gpar_buffer b;
} shadow;

typedef struct tcase {
  char what[200];
  shadow op[3]; /* op[0]: the output */
  int nop;
  double *ref, *tol; /* per element of op[0]; tol < 0: must be unchanged (its initial bits) */
  int st;
  const void *arg; /* what the call needs besides the buffers */
} tcase;

static uint64_t rs;

static double rnd(void) { return (double)((int)(tu_rand(&rs) % 65) - 32) / 16.0; }

static void shadow_init(shadow *s, int type, size_t n) {
  s->type = type;
  s->n = n ? n : 1;
  s->v = malloc(s->n * sizeof *s->v);
  for (size_t i = 0; i < s->n; i++) s->v[i] = SENTINEL;
  s->b = (gpar_buffer){0, 0};
}

static void case_init(tcase *c, int nop) {
  memset(c, 0, sizeof *c);
  c->nop = nop;
}

/* The output's expectations, after op[0] is set up: everything unchanged. */
static void case_expect(tcase *c) {
  c->ref = malloc(c->op[0].n * sizeof *c->ref);
  c->tol = malloc(c->op[0].n * sizeof *c->tol);
  for (size_t i = 0; i < c->op[0].n; i++) c->ref[i] = c->op[0].v[i], c->tol[i] = -1;
}

static void case_free(tcase *c) {
  for (int i = 0; i < c->nop; i++) {
    if (c->op[i].b.id) gpar_buffer_release(c->op[i].b);
    free(c->op[i].v);
  }
  free(c->ref);
  free(c->tol);
}

/* Create and write the operands' buffers on dev. */
static int case_upload(gpar_engine *eng, int dev, tcase *c) {
  for (int i = 0; i < c->nop; i++) {
    shadow *s = &c->op[i];
    size_t bytes = s->n * tsize(s->type);
    unsigned char *raw = malloc(bytes);
    for (size_t j = 0; j < s->n; j++) enc(s->type, raw, j, s->v[j]);
    int st = gpar_buffer_create(eng, dev, bytes, &s->b);
    if (st == GPAR_OK) st = gpar_write(s->b, 0, raw, bytes);
    free(raw);
    if (st) return st;
  }
  return GPAR_OK;
}

/* Read the output back and check every element; 1 when right, else 0 with why. */
static int case_check(const tcase *c, char *why, size_t len) {
  const shadow *s = &c->op[0];
  const size_t es = tsize(s->type);
  unsigned char *raw = malloc(s->n * es), *init = malloc(es);
  int st = gpar_read(s->b, 0, raw, s->n * es), good = st == GPAR_OK;
  if (!good) snprintf(why, len, "read: %s (%s)", gpar_status_name(st), gpar_last_error());
  for (size_t i = 0; i < s->n && good; i++) {
    double got = dec(s->type, raw, i);
    if (c->tol[i] < 0) {
      enc(s->type, init, 0, c->ref[i]);
      if (memcmp(init, raw + i * es, es))
        good = 0, snprintf(why, len, "element %zu = %g changed (was %g: outside the call's range)", i, got, c->ref[i]);
    } else if (!(fabs(got - c->ref[i]) <= c->tol[i])) {
      good = 0, snprintf(why, len, "element %zu = %.9g, want %.9g (tolerance %.3g)", i, got, c->ref[i], c->tol[i]);
    }
  }
  free(raw);
  free(init);
  return good;
}

/* Run cases[0..n) on dev: upload all, call each, one wait, check each. Returns the failures
 * (the first few are printed); *skipped counts GPAR_ENOTSUP (a device without fp64). */
static int run_cases(gpar_engine *eng, int dev, tcase *cases, int n, int (*call)(tcase *c), int *skipped) {
  int bad = 0;
  *skipped = 0;
  for (int i = 0; i < n; i++) {
    if ((cases[i].st = case_upload(eng, dev, &cases[i])) == GPAR_OK) cases[i].st = call(&cases[i]);
  }
  int wst = gpar_wait_all(eng);
  for (int i = 0; i < n; i++) {
    char why[300] = "";
    int good;
    if (cases[i].st == GPAR_ENOTSUP || (cases[i].st == GPAR_OK && wst == GPAR_ENOTSUP && gpar_wait(cases[i].op[0].b) == GPAR_ENOTSUP)) {
      (*skipped)++;
      continue;
    }
    if (cases[i].st != GPAR_OK)
      good = 0, snprintf(why, sizeof why, "call: %s (%s)", gpar_status_name(cases[i].st), gpar_last_error());
    else
      good = case_check(&cases[i], why, sizeof why);
    if (!good && bad++ < 5) diag("  %s: %s", cases[i].what, why);
  }
  for (int i = 0; i < n; i++) case_free(&cases[i]);
  return bad;
}

/* ---------------------------------------------------------------- GEMM cases */

typedef struct gemm_shape {
  int ab, c; /* types */
  int api;   /* 0: gpar_[sd]gemm_strided_batched, 1: gpar_gemm_ex */
  int ta, tb, m, n, k;
  double alpha, beta;
  int layout; /* 0 one tight entry; 1 three, padded, gaps, B shared; 2 none; 3 two, A shared */
} gemm_shape;

typedef struct gemm_lay {
  int ld[3];
  size_t off[3];
  long long stride[3];
  int batch;
} gemm_lay;

/* Extent in elements of a rows x cols matrix with leading dimension ld (0 when empty). */
static size_t extent(int rows, int cols, int ld) {
  return rows && cols ? (size_t)(cols - 1) * (size_t)ld + (size_t)rows : 0;
}

static gemm_lay gemm_layout(const gemm_shape *g, const int *rows, const int *cols) {
  gemm_lay l;
  static const int pad[4] = {0, 2, 1, 0};
  static const size_t offs[4][3] = {{0, 0, 0}, {5, 3, 1}, {2, 2, 2}, {1, 1, 1}};
  static const int batch[4] = {1, 3, 0, 2};
  for (int i = 0; i < 3; i++) {
    l.ld[i] = (rows[i] > 1 ? rows[i] : 1) + pad[g->layout];
    l.off[i] = offs[g->layout][i];
    size_t e = extent(rows[i], cols[i], l.ld[i]);
    l.stride[i] = g->layout == 1 ? (long long)e + 3 + i : g->layout == 2 ? 10 : g->layout == 3 ? (long long)e + 1 : 0;
  }
  if (g->layout == 1) l.stride[2] = 0; /* one B for every entry */
  if (g->layout == 3) l.stride[1] = 0; /* one A for every entry */
  l.batch = batch[g->layout];
  return l;
}

/* Build case c for shape g: A, B, C with their layouts, and C's expected values. */
static void gemm_build(tcase *c, const gemm_shape *g) {
  const int m = g->m, n = g->n, k = g->k;
  const int rows[3] = {m, g->ta ? k : m, g->tb ? n : k}, cols[3] = {n, g->ta ? m : k, g->tb ? k : n};
  const gemm_lay l = gemm_layout(g, rows, cols);
  const int types[3] = {g->c, g->ab, g->ab};
  const int noread = g->alpha == 0.0 || k == 0;
  case_init(c, 3);
  for (int i = 0; i < 3; i++) {
    size_t last = l.batch > 1 ? (size_t)(l.batch - 1) * (size_t)l.stride[i] : 0;
    shadow_init(&c->op[i], types[i], l.off[i] + last + extent(rows[i], cols[i], l.ld[i]) + 2);
  }
  for (int e = 0; e < l.batch; e++) /* the values each entry sees (a shared A or B gets them once) */
    for (int i = 0; i < 3; i++)
      for (int q = 0; q < cols[i]; q++)
        for (int p = 0; p < rows[i]; p++)
          c->op[i].v[l.off[i] + (size_t)e * (size_t)l.stride[i] + (size_t)q * (size_t)l.ld[i] + (size_t)p] =
              i == 0 ? (g->beta == 0.0 ? NAN : rnd()) : noread ? NAN : rnd();
  case_expect(c);
  const double ea = g->ab == GPAR_DOUBLE ? 0x1p-53 : 0x1p-24, eo = eps_of(g->c);
  for (int e = 0; e < l.batch; e++) {
    const double *A = c->op[1].v + l.off[1] + (size_t)e * (size_t)l.stride[1];
    const double *B = c->op[2].v + l.off[2] + (size_t)e * (size_t)l.stride[2];
    for (int j = 0; j < n; j++)
      for (int i = 0; i < m; i++) {
        const size_t x = l.off[0] + (size_t)e * (size_t)l.stride[0] + (size_t)j * (size_t)l.ld[0] + (size_t)i;
        double sum = 0, mag = 0;
        if (!noread) sum = g->alpha * tu_ref_elem(g->ta, g->tb, i, j, k, A, l.ld[1], B, l.ld[2], &mag);
        mag = fabs(g->alpha) * mag;
        if (g->beta != 0.0) sum += g->beta * c->op[0].v[x], mag += fabs(g->beta * c->op[0].v[x]);
        c->ref[x] = sum;
        c->tol[x] = (2.0 * (k + 3) * ea + 2.0 * eo) * mag;
      }
  }
  static const char *const tn[] = {"gpar_sgemm_strided_batched", "gpar_dgemm_strided_batched", "gpar_gemm_ex"};
  static const char *const ty[] = {"f32", "f64", "f16", "bf16"};
  snprintf(c->what, sizeof c->what, "%s %s/%s %c%c m=%d n=%d k=%d alpha=%g beta=%g ld=%d,%d,%d off=%zu,%zu,%zu "
           "strides=%lld,%lld,%lld batch=%d", tn[g->api ? 2 : g->ab == GPAR_DOUBLE], ty[g->ab], ty[g->c],
           g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', m, n, k, g->alpha, g->beta, l.ld[1], l.ld[2], l.ld[0], l.off[1],
           l.off[2], l.off[0], l.stride[1], l.stride[2], l.stride[0], l.batch);
}

/* What a GEMM case's call needs besides its buffers. */
typedef struct gemm_call_args {
  gemm_shape g;
  gemm_lay l;
} gemm_call_args;

static int gemm_call(tcase *c) {
  const gemm_call_args *a = c->arg;
  const gemm_shape *g = &a->g;
  const gemm_lay *l = &a->l;
  const gpar_trans ta = g->ta ? GPAR_TRANS : GPAR_NO_TRANS, tb = g->tb ? GPAR_TRANS : GPAR_NO_TRANS;
  if (g->api)
    return gpar_gemm_ex(ta, tb, g->m, g->n, g->k, (float)g->alpha, (gpar_dtype)g->ab, c->op[1].b, l->off[1], l->ld[1],
                        l->stride[1], c->op[2].b, l->off[2], l->ld[2], l->stride[2], (float)g->beta, (gpar_dtype)g->c,
                        c->op[0].b, l->off[0], l->ld[0], l->stride[0], l->batch);
  if (g->ab == GPAR_DOUBLE)
    return gpar_dgemm_strided_batched(ta, tb, g->m, g->n, g->k, g->alpha, c->op[1].b, l->off[1], l->ld[1], l->stride[1],
                                      c->op[2].b, l->off[2], l->ld[2], l->stride[2], g->beta, c->op[0].b, l->off[0],
                                      l->ld[0], l->stride[0], l->batch);
  return gpar_sgemm_strided_batched(ta, tb, g->m, g->n, g->k, (float)g->alpha, c->op[1].b, l->off[1], l->ld[1],
                                    l->stride[1], c->op[2].b, l->off[2], l->ld[2], l->stride[2], (float)g->beta,
                                    c->op[0].b, l->off[0], l->ld[0], l->stride[0], l->batch);
}

/* Every combination of the lists below for types ab/c through api; returns the count. */
static int gemm_sweep_build(int ab, int c, int api, tcase **out, gemm_call_args **args) {
  static const int shapes[][3] = {{0, 3, 2}, {3, 0, 2}, {3, 2, 0}, {1, 1, 1}, {5, 3, 4}, {2, 7, 3}, {17, 9, 5}};
  static const double ab_pairs[][2] = {{1, 0}, {0.75, 0}, {1, 1}, {-1.25, 0.625}, {0, 0}, {0, 2.5}, {0, 1}};
  const int nshape = api ? 4 : 7, npair = api ? 4 : 7, nlay = api ? 2 : 4;
  static const int ex_shapes[] = {2, 3, 4, 6}, ex_pairs[] = {0, 3, 4, 5};
  int n = nshape * 4 * npair * nlay, i = 0;
  tcase *cases = calloc((size_t)n, sizeof *cases);
  gemm_call_args *a = calloc((size_t)n, sizeof *a);
  for (int s = 0; s < nshape; s++)
    for (int t = 0; t < 4; t++)
      for (int p = 0; p < npair; p++)
        for (int lay = 0; lay < nlay; lay++, i++) {
          const int *sh = shapes[api ? ex_shapes[s] : s];
          const double *pr = ab_pairs[api ? ex_pairs[p] : p];
          a[i].g = (gemm_shape){ab, c, api, t & 1, t >> 1, sh[0], sh[1], sh[2], pr[0], pr[1], lay};
          const int rows[3] = {sh[0], (t & 1) ? sh[2] : sh[0], (t >> 1) ? sh[1] : sh[2]};
          const int cols[3] = {sh[1], (t & 1) ? sh[0] : sh[2], (t >> 1) ? sh[2] : sh[1]};
          a[i].l = gemm_layout(&a[i].g, rows, cols);
          gemm_build(&cases[i], &a[i].g);
          cases[i].arg = &a[i];
        }
  *out = cases;
  *args = a;
  return n;
}

static void gemm_sweep(gpar_engine *eng, int dev, const char *bk, int ab, int c, int api) {
  static const char *const ty[] = {"f32", "f64", "f16", "bf16"};
  tcase *cases;
  gemm_call_args *args;
  int n = gemm_sweep_build(ab, c, api, &cases, &args), skipped;
  int bad = run_cases(eng, dev, cases, n, gemm_call, &skipped);
  const char *fn = api ? "gpar_gemm_ex" : ab == GPAR_DOUBLE ? "gpar_dgemm_strided_batched" : "gpar_sgemm_strided_batched";
  if (skipped == n)
    printf("ok %d # SKIP dev %d (%s): %s %s/%s: not supported here\n", ++tap_count, dev, bk, fn, ty[ab], ty[c]);
  else
    ok(bad == 0, "dev %d (%s): %s %s/%s: %d cases (%d wrong): shapes, transposes, alpha/beta, ld, offsets, batches",
       dev, bk, fn, ty[ab], ty[c], n, bad);
  free(args);
  free(cases);
}

/* ---------------------------------------------------------------- GEMV and level 1 */

enum { V_GEMV, V_AXPY, V_SCAL, V_DOT };

typedef struct vec_args {
  int fn, dbl, trans, m, n; /* AXPY, SCAL, DOT: n elements */
  double alpha, beta;
  int lda, inc[3];          /* inc[0]: the output's (y; x for SCAL) */
  size_t off[3];
} vec_args;

/* A vector of len elements, inc apart from off, filled with f(); returns its buffer size. */
static size_t vec_len(size_t off, int len, int inc) { return len ? off + (size_t)(len - 1) * (size_t)inc + 1 : off; }

static void vec_fill(shadow *s, size_t off, int len, int inc, int nan) {
  for (int i = 0; i < len; i++) s->v[off + (size_t)i * (size_t)inc] = nan ? NAN : rnd();
}

/* Case c for v: operands (output first), their values, the output's expected values. */
static void vec_build(tcase *c, const vec_args *v) {
  const int t = v->dbl ? GPAR_DOUBLE : GPAR_FLOAT, nt = v->trans;
  const int lx = v->fn == V_GEMV ? (nt ? v->m : v->n) : v->n, ly = v->fn == V_GEMV ? (nt ? v->n : v->m) : v->n;
  const int ly_out = v->fn == V_DOT ? 1 : ly;
  const int nop = v->fn == V_SCAL ? 1 : v->fn == V_AXPY ? 2 : 3;
  const int read_in = v->fn == V_GEMV ? v->alpha != 0.0 : v->fn != V_AXPY || v->alpha != 0.0;
  case_init(c, nop);
  shadow_init(&c->op[0], t, vec_len(v->off[0], ly_out, v->inc[0]) + 2);
  int out_nan = (v->fn == V_GEMV && v->beta == 0.0) || (v->fn == V_SCAL && v->alpha == 0.0) || v->fn == V_DOT;
  vec_fill(&c->op[0], v->off[0], ly_out, v->inc[0], out_nan);
  if (v->fn == V_GEMV) {
    shadow_init(&c->op[1], t, v->off[1] + extent(v->m, v->n, v->lda) + 2);
    for (int j = 0; j < v->n; j++) vec_fill(&c->op[1], v->off[1] + (size_t)j * (size_t)v->lda, v->m, 1, !read_in);
    shadow_init(&c->op[2], t, vec_len(v->off[2], lx, v->inc[2]) + 2);
    vec_fill(&c->op[2], v->off[2], lx, v->inc[2], !read_in);
  } else {
    for (int i = 1; i < nop; i++) {
      shadow_init(&c->op[i], t, vec_len(v->off[i], v->n, v->inc[i]) + 2);
      vec_fill(&c->op[i], v->off[i], v->n, v->inc[i], !read_in);
    }
  }
  case_expect(c);
  const double eps = v->dbl ? 0x1p-53 : 0x1p-24;
  const int quick = (v->fn == V_GEMV && (v->m == 0 || v->n == 0 || (v->alpha == 0.0 && v->beta == 1.0))) ||
                    (v->fn == V_AXPY && (v->n == 0 || v->alpha == 0.0)) || (v->fn == V_SCAL && v->n == 0);
  for (int i = 0; i < ly_out && !quick; i++) {
    const size_t yi = v->off[0] + (size_t)i * (size_t)v->inc[0];
    double sum = 0, mag = 0, y0 = c->op[0].v[yi];
    const int terms = v->fn == V_GEMV ? lx : v->fn == V_DOT ? v->n : 1;
    for (int j = 0; j < terms && read_in; j++) {
      double a, x;
      if (v->fn == V_GEMV) {
        a = c->op[1].v[v->off[1] + (nt ? (size_t)j + (size_t)i * v->lda : (size_t)i + (size_t)j * v->lda)];
        x = c->op[2].v[v->off[2] + (size_t)j * (size_t)v->inc[2]];
      } else if (v->fn == V_DOT) {
        a = c->op[1].v[v->off[1] + (size_t)j * (size_t)v->inc[1]];
        x = c->op[2].v[v->off[2] + (size_t)j * (size_t)v->inc[2]];
      } else {
        a = v->fn == V_AXPY ? c->op[1].v[v->off[1] + (size_t)i * (size_t)v->inc[1]] : y0;
        x = 1;
      }
      sum += a * x;
      mag += fabs(a * x);
    }
    if (v->fn != V_DOT) sum *= v->alpha, mag *= fabs(v->alpha);
    if (v->fn == V_SCAL && v->alpha == 0.0) sum = 0, mag = 0; /* exact zeros over NaN */
    if (v->fn == V_GEMV && v->beta != 0.0) sum += v->beta * y0, mag += fabs(v->beta * y0);
    if (v->fn == V_AXPY) sum += y0, mag += fabs(y0);
    c->ref[yi] = sum;
    c->tol[yi] = (2.0 * (terms + 3) * eps + 2.0 * eps) * mag;
  }
  static const char *const fn[2][4] = {{"sgemv", "saxpy", "sscal", "sdot"}, {"dgemv", "daxpy", "dscal", "ddot"}};
  snprintf(c->what, sizeof c->what, "gpar_%s %c m=%d n=%d alpha=%g beta=%g lda=%d inc=%d,%d,%d off=%zu,%zu,%zu",
           fn[v->dbl][v->fn], nt ? 'T' : 'N', v->m, v->n, v->alpha, v->beta, v->lda, v->inc[0], v->inc[1], v->inc[2],
           v->off[0], v->off[1], v->off[2]);
}

static int vec_call(tcase *c) {
  const vec_args *v = c->arg;
  const gpar_buffer o = c->op[0].b, p = c->op[1].b, q = c->op[2].b;
  const gpar_trans t = v->trans ? GPAR_TRANS : GPAR_NO_TRANS;
  switch (v->fn) {
  case V_GEMV:
    return v->dbl ? gpar_dgemv(t, v->m, v->n, v->alpha, p, v->off[1], v->lda, q, v->off[2], v->inc[2], v->beta, o,
                               v->off[0], v->inc[0])
                  : gpar_sgemv(t, v->m, v->n, (float)v->alpha, p, v->off[1], v->lda, q, v->off[2], v->inc[2],
                               (float)v->beta, o, v->off[0], v->inc[0]);
  case V_AXPY:
    return v->dbl ? gpar_daxpy(v->n, v->alpha, p, v->off[1], v->inc[1], o, v->off[0], v->inc[0])
                  : gpar_saxpy(v->n, (float)v->alpha, p, v->off[1], v->inc[1], o, v->off[0], v->inc[0]);
  case V_SCAL:
    return v->dbl ? gpar_dscal(v->n, v->alpha, o, v->off[0], v->inc[0])
                  : gpar_sscal(v->n, (float)v->alpha, o, v->off[0], v->inc[0]);
  default:
    return v->dbl ? gpar_ddot(v->n, p, v->off[1], v->inc[1], q, v->off[2], v->inc[2], o, v->off[0])
                  : gpar_sdot(v->n, p, v->off[1], v->inc[1], q, v->off[2], v->inc[2], o, v->off[0]);
  }
}

/* GEMV: shapes x transposes x alpha/beta x two layouts; AXPY, SCAL, DOT: n x alpha x layouts. */
static int vec_sweep_build(int dbl, tcase **out, vec_args **args) {
  static const int gshapes[][2] = {{0, 3}, {3, 0}, {1, 1}, {5, 3}, {4, 9}, {17, 2}};
  static const double pairs[][2] = {{1, 0}, {0.75, 0}, {1, 1}, {-1.25, 0.625}, {0, 0}, {0, 2.5}, {0, 1}};
  static const int lens[] = {0, 1, 7, 33};
  static const double alphas[] = {0, 1, -0.75, 2.5};
  int n = 6 * 2 * 7 * 2 + 4 * 3 * 2 + 4 * 4 * 2 + 4 * 2, i = 0;
  vec_args *a = calloc((size_t)n, sizeof *a);
  for (int s = 0; s < 6; s++)
    for (int t = 0; t < 2; t++)
      for (int p = 0; p < 7; p++)
        for (int l = 0; l < 2; l++)
          a[i++] = (vec_args){V_GEMV, dbl, t, gshapes[s][0], gshapes[s][1], pairs[p][0], pairs[p][1],
                              (gshapes[s][0] > 1 ? gshapes[s][0] : 1) + 2 * l, {1 + 2 * l, 1, 1 + l}, {3 * l, l, 2 * l}};
  for (int fn = V_AXPY; fn <= V_DOT; fn++)
    for (int e = 0; e < 4; e++)
      for (int al = 0; al < (fn == V_AXPY ? 3 : fn == V_SCAL ? 4 : 1); al++)
        for (int l = 0; l < 2; l++)
          a[i++] = (vec_args){fn, dbl, 0, 0, lens[e], alphas[al], 0, 0, {1 + 2 * l, 1 + l, 1 + 3 * l}, {3 * l, l, 2 * l}};
  tcase *cases = calloc((size_t)n, sizeof *cases);
  for (int k = 0; k < n; k++) {
    vec_build(&cases[k], &a[k]);
    cases[k].arg = &a[k];
  }
  *out = cases;
  *args = a;
  return n;
}

static void vec_sweep(gpar_engine *eng, int dev, const char *bk, int dbl) {
  tcase *cases;
  vec_args *args;
  int n = vec_sweep_build(dbl, &cases, &args), skipped;
  int bad = run_cases(eng, dev, cases, n, vec_call, &skipped);
  const char *what = dbl ? "gpar_dgemv, gpar_daxpy, gpar_dscal, gpar_ddot" : "gpar_sgemv, gpar_saxpy, gpar_sscal, gpar_sdot";
  if (skipped == n)
    printf("ok %d # SKIP dev %d (%s): %s: not supported here\n", ++tap_count, dev, bk, what);
  else
    ok(bad == 0, "dev %d (%s): %s: %d cases (%d wrong): shapes, transposes, alpha/beta, increments, offsets", dev, bk,
       what, n, bad);
  free(args);
  free(cases);
}

/* gpar_gemm_ex rounds C to nearest, ties to even, once (from the f32 sum): k = 2 sums that are
 * exact in f32 and fall on a tie, or past the largest finite value, in the output type. */
static void rounding(gpar_engine *eng, int dev, const char *bk) {
  static const double h[4][3] = {{1, 0x1p-11, 1}, {1 + 0x1p-10, 0x1p-11, 1 + 0x1p-9}, {65504, 16, INFINITY}, {-1, -0x1p-11, -1}};
  static const double b[4][3] = {{1, 0x1p-8, 1}, {1 + 0x1p-7, 0x1p-8, 1 + 0x1p-6}, {0x1.fep127, 0x1p119, INFINITY},
                                 {-1, -0x1p-8, -1}};
  for (int t = GPAR_HALF; t <= GPAR_BFLOAT16; t++) {
    const double(*v)[3] = t == GPAR_HALF ? h : b;
    uint16_t a[8], one[2], c[4];
    for (int i = 0; i < 4; i++) enc(t, a, (size_t)i, v[i][0]), enc(t, a, (size_t)i + 4, v[i][1]);
    enc(t, one, 0, 1), enc(t, one, 1, 1);
    gpar_buffer ba = tu_buffer(eng, dev, sizeof a), bb = tu_buffer(eng, dev, sizeof one), bc = tu_buffer(eng, dev, sizeof c);
    int st = gpar_write(ba, 0, a, sizeof a);
    if (!st) st = gpar_write(bb, 0, one, sizeof one);
    if (!st) st = gpar_gemm_ex(GPAR_NO_TRANS, GPAR_NO_TRANS, 4, 1, 2, 1.0f, (gpar_dtype)t, ba, 0, 4, 0, bb, 0, 2, 0, 0.0f,
                               (gpar_dtype)t, bc, 0, 4, 0, 1);
    if (!st) st = gpar_read(bc, 0, c, sizeof c);
    int good = st == GPAR_OK;
    for (int i = 0; i < 4 && good; i++)
      if (dec(t, c, (size_t)i) != v[i][2]) {
        diag("  %s: %.9g + %.9g gave %.9g, want %.9g", t == GPAR_HALF ? "f16" : "bf16", v[i][0], v[i][1], dec(t, c, (size_t)i),
             v[i][2]);
        good = 0;
      }
    if (st) diag("  %s (%s)", gpar_status_name(st), gpar_last_error());
    ok(good, "dev %d (%s): gpar_gemm_ex %s/%s rounds C once to nearest even (ties, overflow to infinity)", dev, bk,
       t == GPAR_HALF ? "f16" : "bf16", t == GPAR_HALF ? "f16" : "bf16");
    gpar_buffer_release(ba), gpar_buffer_release(bb), gpar_buffer_release(bc);
  }
}

/* Read sets are exact: a call that reads no element of an operand (alpha 0; DOT of n 0) does not
 * wait for that operand's writer. A CPU op that holds A and x (in its write set) until released
 * runs first; the calls below must all complete while it holds them (each gpar_wait returns
 * before the release). Were A or x in their read sets, the waits would last until the holder
 * gives up after 30 s, and the test fails then. */
typedef struct gate {
  atomic_int release, done;
} gate;

static int gate_fn(const gpar_native *nat, void *p) {
  gate *g = p;
  (void)nat;
  tu_wait_flag(&g->release, 30.0);
  atomic_store(&g->done, 1);
  return GPAR_OK;
}

static void deps(gpar_engine *eng, int dev, const char *bk) {
  gpar_buffer a = tu_buffer(eng, dev, 256), b = tu_buffer(eng, dev, 256), x = tu_buffer(eng, dev, 256);
  gpar_buffer out[5];
  for (int i = 0; i < 5; i++) out[i] = tu_buffer(eng, dev, 256), gpar_fill(out[i], 0, 256, 0xff); /* NaN */
  gpar_fill(a, 0, 256, 0), gpar_fill(b, 0, 256, 0), gpar_fill(x, 0, 256, 0);
  gpar_wait_all(eng);
  static gate g;
  atomic_store(&g.release, 0), atomic_store(&g.done, 0);
  const gpar_buffer held[2] = {a, x};
  const gpar_trans N = GPAR_NO_TRANS;
  int st[6], early = 1;
  st[0] = gpar_submit(eng, GPAR_HOST, gate_fn, &g, NULL, 0, held, 2);
  st[1] = gpar_sgemm(N, N, 4, 4, 4, 0.0f, a, 0, 4, b, 0, 4, 0.0f, out[0], 0, 4);
  st[2] = gpar_sgemm_strided_batched(N, N, 4, 4, 4, 0.0f, a, 0, 4, 16, b, 0, 4, 16, 0.0f, out[1], 0, 4, 16, 2);
  st[3] = gpar_gemm_ex(N, N, 4, 4, 4, 0.0f, GPAR_HALF, a, 0, 4, 16, b, 0, 4, 16, 0.0f, GPAR_FLOAT, out[2], 0, 4, 16, 2);
  st[4] = gpar_sgemv(N, 8, 8, 0.0f, a, 0, 8, x, 0, 1, 0.0f, out[3], 0, 1);
  st[5] = gpar_sdot(0, x, 0, 1, x, 0, 1, out[4], 3);
  for (int i = 0; i < 5; i++) early &= gpar_wait(out[i]) == GPAR_OK && !atomic_load(&g.done);
  atomic_store(&g.release, 1);
  int all = gpar_wait_all(eng) == GPAR_OK;
  float v[2] = {1, 1};
  all &= gpar_read(out[0], 0, &v[0], 4) == GPAR_OK && gpar_read(out[4], 12, &v[1], 4) == GPAR_OK;
  for (int i = 0; i < 6; i++) all &= st[i] == GPAR_OK;
  ok(all && early && v[0] == 0.0f && v[1] == 0.0f,
     "dev %d (%s): alpha 0 GEMMs (plain, batched, f16), alpha 0 GEMV and a DOT of 0 elements wait for no writer of "
     "what they do not read (results %g, %g)", dev, bk, v[0], v[1]);
  gpar_buffer_release(a), gpar_buffer_release(b), gpar_buffer_release(x);
  for (int i = 0; i < 5; i++) gpar_buffer_release(out[i]);
}

/* The new calls inside an op graph (a CUDA part is captured into one CUDA graph, others replay):
 * a strided batch, an f16 GEMM, a GEMV and a DOT into a buffer, recorded once and launched twice,
 * give what they give eagerly (the second launch starts from the first one's y). */
static void graphed(gpar_engine *eng, int dev, const char *bk) {
  enum { M = 6 };
  float a[2 * M * M], x[M], one = 1.0f;
  uint16_t h[M * M];
  for (int i = 0; i < 2 * M * M; i++) a[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < M; i++) x[i] = (float)i * 0.5f;
  for (int i = 0; i < M * M; i++) h[i] = gpar_half_from_float(a[i]);
  gpar_buffer ba = tu_buffer(eng, dev, sizeof a), bh = tu_buffer(eng, dev, sizeof h), bx = tu_buffer(eng, dev, sizeof x);
  gpar_buffer bc = tu_buffer(eng, dev, sizeof a), be = tu_buffer(eng, dev, M * M * 4), by = tu_buffer(eng, dev, sizeof x);
  gpar_buffer br = tu_buffer(eng, dev, 8);
  gpar_write(ba, 0, a, sizeof a), gpar_write(bh, 0, h, sizeof h), gpar_write(bx, 0, x, sizeof x);
  gpar_write(by, 0, x, sizeof x), gpar_write(br, 0, &one, 4);
  gpar_graph *g = NULL;
  const gpar_trans N = GPAR_NO_TRANS;
  int st = gpar_graph_begin(eng);
  if (!st) st = gpar_sgemm_strided_batched(N, N, M, M, M, 1.0f, ba, 0, M, M * M, ba, 0, M, 0, 0.0f, bc, 0, M, M * M, 2);
  if (!st) st = gpar_gemm_ex(N, GPAR_TRANS, M, M, M, 1.0f, GPAR_HALF, bh, 0, M, 0, bh, 0, M, 0, 0.0f, GPAR_FLOAT, be, 0, M, 0, 1);
  if (!st) st = gpar_sgemv(GPAR_TRANS, M, M, 0.25f, ba, 0, M, bx, 0, 1, 1.0f, by, 0, 1);
  if (!st) st = gpar_sdot(M, by, 0, 1, bx, 0, 1, br, 1);
  int end = gpar_graph_end(eng, &g);
  if (!st) st = end;
  for (int l = 0; l < 2 && !st; l++) st = gpar_graph_launch(g);
  if (!st) st = gpar_wait_all(eng);
  float c[2 * M * M], e[M * M], y[M], r[2];
  if (!st) st = gpar_read(bc, 0, c, sizeof c) || gpar_read(be, 0, e, sizeof e) || gpar_read(by, 0, y, sizeof y) ||
                gpar_read(br, 0, r, sizeof r);
  int good = st == GPAR_OK;
  double yr[M], dot = 0;
  for (int i = 0; i < M; i++) yr[i] = x[i];
  for (int l = 0; l < 2; l++)
    for (int j = 0; j < M; j++) {
      double sum = 0;
      for (int p = 0; p < M; p++) sum += a[p + j * M] * x[p];
      yr[j] += 0.25 * sum;
    }
  for (int i = 0; i < M; i++) dot += yr[i] * x[i];
  for (int b = 0; b < 2 && good; b++)
    for (int j = 0; j < M && good; j++)
      for (int i = 0; i < M && good; i++) {
        double want = 0, want_e = 0;
        for (int p = 0; p < M; p++) want += a[b * M * M + i + p * M] * a[p + j * M], want_e += a[i + p * M] * a[j + p * M];
        good = c[b * M * M + i + j * M] == (float)want && (b || e[i + j * M] == (float)want_e);
      }
  for (int i = 0; i < M && good; i++) good = fabs(y[i] - yr[i]) <= 1e-5 * (1 + fabs(yr[i]));
  good = good && fabs(r[1] - dot) <= 1e-4 * (1 + fabs(dot)) && r[0] == 1.0f;
  if (st) diag("  %s (%s)", gpar_status_name(st), gpar_last_error());
  ok(good, "dev %d (%s): a batched, an f16 GEMM, a GEMV and a DOT recorded in a graph, launched twice", dev, bk);
  if (g) gpar_graph_destroy(g);
  gpar_buffer bs[7] = {ba, bh, bx, bc, be, by, br};
  for (int i = 0; i < 7; i++) gpar_buffer_release(bs[i]);
}

int main(void) {
  setenv("GPAR_TEST_TIMEOUT", "600", 0); /* every GEMM kind on every device: minutes under ASan on 2 cores */
  gpar_engine *eng = tu_engine(0, 4, 0); /* deps() holds one CPU worker */
  int ndev = gpar_device_count(eng);
  static const int gemms[][3] = {{GPAR_FLOAT, GPAR_FLOAT, 0}, {GPAR_DOUBLE, GPAR_DOUBLE, 0}, {GPAR_HALF, GPAR_FLOAT, 1},
                                 {GPAR_HALF, GPAR_HALF, 1},   {GPAR_BFLOAT16, GPAR_FLOAT, 1}, {GPAR_BFLOAT16, GPAR_BFLOAT16, 1}};
  const int ngemm = (int)(sizeof gemms / sizeof gemms[0]);
  rs = tu_seed(27);
  plan(ndev * (ngemm + 6) + 1);
  for (int dev = 0; dev < ndev; dev++) {
    tu_devinfo info;
    if (tu_device_info(eng, dev, &info)) snprintf(info.backend, sizeof info.backend, "?");
    for (int g = 0; g < ngemm; g++) gemm_sweep(eng, dev, info.backend, gemms[g][0], gemms[g][1], gemms[g][2]);
    for (int dbl = 0; dbl < 2; dbl++) vec_sweep(eng, dev, info.backend, dbl);
    rounding(eng, dev, info.backend);
    deps(eng, dev, info.backend);
    graphed(eng, dev, info.backend);
  }
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
