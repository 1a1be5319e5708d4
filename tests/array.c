/* array.c: conformance of the array ops on every device of every backend (and on GPAR_HOST
 * memory), against the plain references of array_ref.h: unary and binary ops over ranges with
 * offsets, broadcasts per row and per column, reductions of ranges and matrices over odd and
 * empty sizes (and the same bits twice), softmax cross-entropy with its gradient, argmax, in
 * place, NaN and infinity where gpar.h defines them; f32, f64, f16 and bf16; elementwise maps
 * (byte offsets, f16/bf16, integer types with the index, in place, a compile error). */
#include <math.h>
#include "array_ref.h"
#include "testutil.h"

static gpar_engine *eng;
static uint64_t rs;
static const int dtypes[4] = {GPAR_FLOAT, GPAR_DOUBLE, GPAR_HALF, GPAR_BFLOAT16};
static const char *const unames[8] = {"relu", "exp", "log", "tanh", "sigmoid", "abs", "sqrt", "neg"};
static const char *const bnames[6] = {"add", "sub", "mul", "div", "max", "min"};
static const char *const rnames[3] = {"sum", "max", "min"};
#define SENTINEL 1000.0 /* exact in every type: elements an op must leave alone */

static double uni(double lo, double hi) { return lo + (hi - lo) * (double)(tu_rand(&rs) >> 11) * 0x1p-53; }

/* A buffer on dev holding n values of dt (encoded from v, or SENTINEL where v is NULL). */
static gpar_buffer put(int dev, int dt, const double *v, size_t n) {
  size_t es = ar_size(dt);
  gpar_buffer b = tu_buffer(eng, dev, (n ? n : 1) * es);
  unsigned char *h = malloc((n ? n : 1) * es);
  for (size_t i = 0; i < n; i++) ar_store(dt, h, i, v ? v[i] : SENTINEL);
  if (n) gpar_write(b, 0, h, n * es);
  free(h);
  return b;
}
/* Read n values of dt back, decoded; a status. */
static int get(gpar_buffer b, int dt, size_t n, double *out) {
  size_t es = ar_size(dt);
  unsigned char *h = malloc(n * es);
  int st = gpar_read(b, 0, h, n * es);
  for (size_t i = 0; i < n && st == GPAR_OK; i++) out[i] = ar_load(dt, h, i);
  free(h);
  return st;
}
/* Round every value to dt (inputs are what the device holds). */
static void quantize(int dt, double *v, size_t n) {
  for (size_t i = 0; i < n; i++) v[i] = ar_round(dt, v[i]);
}

/* Elementwise tolerance: 16 compute ulps (vendor math libraries) plus one storage ulp. */
static double tol_rel(int dt) { return 16 * ar_eps_compute(dt) + ar_eps_store(dt); }
static double tol_abs(int dt) { return dt == GPAR_HALF ? 0x1p-24 : dt == GPAR_BFLOAT16 ? 0x1p-133 : 1e-300; }

/* Compare got[off .. off + n) with want and the rest with SENTINEL; diagnostics on the first. */
static int check_range(const double *got, size_t total, size_t off, const double *want, size_t n, int dt,
                       double rel, double abs, const char *what) {
  for (size_t i = 0; i < total; i++) {
    int in = i >= off && i < off + n;
    double w = in ? want[i - off] : SENTINEL;
    if (in ? !ar_close(got[i], w, rel, abs) : got[i] != w) {
      diag("  %s: element %zu is %.17g, want %.17g%s", what, i, got[i], w, in ? "" : " (outside the range)");
      return 0;
    }
  }
  return 1;
}

static void gen_unary(int op, double *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    x[i] = op == GPAR_UN_EXP ? uni(-8, 8) : op == GPAR_UN_LOG || op == GPAR_UN_SQRT ? uni(0.01, 100) : uni(-4, 4);
}


/* Unary ops over ranges at offsets, for counts 1 .. 65537; then one in place. */
static void test_unary(int dev, const char *name, int dt) {
  static const size_t counts[] = {1, 7, 1000, 65537};
  for (int op = 0; op < 8; op++) {
    int good = 1;
    for (size_t c = 0; c < 4 && good; c++) {
      size_t n = counts[c], xo = 3, yo = 5, yt = n + 9;
      double *x = malloc((n + xo) * 8), *want = malloc(n * 8), *got = malloc(yt * 8);
      gen_unary(op, x, n + xo);
      quantize(dt, x, n + xo);
      for (size_t i = 0; i < n; i++) want[i] = ar_round(dt, ar_unary(op, x[xo + i]));
      gpar_buffer bx = put(dev, dt, x, n + xo), by = put(dev, dt, NULL, yt);
      int st = gpar_unary(op, dt, n, bx, xo, by, yo);
      if (st == GPAR_OK) st = get(by, dt, yt, got);
      good = st == GPAR_OK && check_range(got, yt, yo, want, n, dt, tol_rel(dt), tol_abs(dt), unames[op]);
      if (st) diag("  %s: %s (%s)", unames[op], gpar_status_name(st), gpar_last_error());
      if (good && c == 2) { /* in place: y = op(y) over x's elements */
        st = gpar_unary(op, dt, n, bx, xo, bx, xo);
        double *all = malloc((n + xo) * 8);
        if (st == GPAR_OK) st = get(bx, dt, n + xo, all);
        good = st == GPAR_OK && check_range(all + xo, n, 0, want, n, dt, tol_rel(dt), tol_abs(dt), "in place") &&
               !memcmp(all, x, xo * 8);
        free(all);
      }
      gpar_buffer_release(bx), gpar_buffer_release(by);
      free(x), free(want), free(got);
    }
    ok(good, "%s: unary %s %s, counts 1..65537 at offsets, in place", name, unames[op], ar_name(dt));
  }
}

/* Operand values for a binary op: left-hand (rhs 0) in [-4, 4]; right-hand too, or of
 * magnitude 0.5 .. 4 for a divisor. */
static void gen_operand(int op, int rhs, double *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    x[i] = rhs && op == GPAR_BIN_DIV ? (tu_rand(&rs) & 1 ? 1 : -1) * uni(0.5, 4) : uni(-4, 4);
}

/* Binary ops over ranges at offsets; c = a op a in place for one size. */
static void test_binary(int dev, const char *name, int dt) {
  static const size_t counts[] = {1, 5, 1000, 65537};
  for (int op = 0; op < 6; op++) {
    int good = 1;
    for (size_t c = 0; c < 4 && good; c++) {
      size_t n = counts[c], ao = 1, bo = 4, co = 2, ct = n + 5;
      double *a = malloc((n + ao) * 8), *b = malloc((n + bo) * 8), *want = malloc(n * 8), *got = malloc(ct * 8);
      gen_operand(op, 0, a, n + ao), gen_operand(op, 1, b, n + bo);
      quantize(dt, a, n + ao), quantize(dt, b, n + bo);
      for (size_t i = 0; i < n; i++) want[i] = ar_round(dt, ar_binary(op, a[ao + i], b[bo + i]));
      gpar_buffer ba = put(dev, dt, a, n + ao), bb = put(dev, dt, b, n + bo), bc = put(dev, dt, NULL, ct);
      int st = gpar_binary(op, dt, n, ba, ao, bb, bo, bc, co);
      if (st == GPAR_OK) st = get(bc, dt, ct, got);
      good = st == GPAR_OK && check_range(got, ct, co, want, n, dt, tol_rel(dt), tol_abs(dt), bnames[op]);
      if (st) diag("  %s: %s (%s)", bnames[op], gpar_status_name(st), gpar_last_error());
      if (good && c == 2) { /* b = a op b, in place on b */
        st = gpar_binary(op, dt, n, ba, ao, bb, bo, bb, bo);
        if (st == GPAR_OK) st = get(bb, dt, n + bo, got);
        good = st == GPAR_OK && check_range(got + bo, n, 0, want, n, dt, tol_rel(dt), tol_abs(dt), "in place");
      }
      gpar_buffer_release(ba), gpar_buffer_release(bb), gpar_buffer_release(bc);
      free(a), free(b), free(want), free(got);
    }
    ok(good, "%s: binary %s %s, counts 1..65537 at offsets, in place", name, bnames[op], ar_name(dt));
  }
}

/* NaN, infinities and signed zeros through every unary op and every pair of binary operands. */
static void test_special(int dev, const char *name, int dt) {
  const double sp[8] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5};
  double a[64], b[64], want[64], got[64];
  int good = 1;
  for (int op = 0; op < 8 && good; op++) {
    for (int i = 0; i < 8; i++) want[i] = ar_round(dt, ar_unary(op, sp[i]));
    gpar_buffer bx = put(dev, dt, sp, 8), by = put(dev, dt, NULL, 8);
    int st = gpar_unary(op, dt, 8, bx, 0, by, 0);
    if (st == GPAR_OK) st = get(by, dt, 8, got);
    good = st == GPAR_OK && check_range(got, 8, 0, want, 8, dt, tol_rel(dt), tol_abs(dt), unames[op]);
    gpar_buffer_release(bx), gpar_buffer_release(by);
  }
  for (int i = 0; i < 64; i++) a[i] = sp[i % 8], b[i] = sp[i / 8];
  for (int op = 0; op < 6 && good; op++) {
    for (int i = 0; i < 64; i++) want[i] = ar_round(dt, ar_binary(op, a[i], b[i]));
    gpar_buffer ba = put(dev, dt, a, 64), bb = put(dev, dt, b, 64), bc = put(dev, dt, NULL, 64);
    int st = gpar_binary(op, dt, 64, ba, 0, bb, 0, bc, 0);
    if (st == GPAR_OK) st = get(bc, dt, 64, got);
    good = st == GPAR_OK && check_range(got, 64, 0, want, 64, dt, tol_rel(dt), tol_abs(dt), bnames[op]);
    gpar_buffer_release(ba), gpar_buffer_release(bb), gpar_buffer_release(bc);
  }
  ok(good, "%s: %s NaN, +-inf, +-0 through every unary and binary op (max/min propagate NaN)", name, ar_name(dt));
}

/* C = A op v per row and per column, lda > m and ldc > m (rows past m untouched), and in place. */
static void test_bcast(int dev, const char *name, int dt) {
  static const int shapes[][2] = {{1, 1}, {7, 3}, {33, 65}, {1000, 7}};
  for (int axis = 0; axis < 2; axis++) {
    int good = 1;
    for (int op = 0; op < 6 && good; op++)
      for (int s = 0; s < 4 && good; s++) {
        int m = shapes[s][0], n = shapes[s][1], lda = m + 2, ldc = m + 1, nv = axis == GPAR_PER_ROW ? m : n;
        size_t ao = 3, vo = 1, co = 4, na = ao + (size_t)lda * n, nc = co + (size_t)ldc * n;
        double *a = malloc(na * 8), *v = malloc((nv + vo) * 8), *c = malloc(nc * 8), *got = malloc(nc * 8);
        gen_operand(op, 0, a, na), gen_operand(op, 1, v, (size_t)nv + vo);
        quantize(dt, a, na), quantize(dt, v, nv + vo);
        for (size_t i = 0; i < nc; i++) c[i] = SENTINEL;
        for (int j = 0; j < n; j++)
          for (int i = 0; i < m; i++)
            c[co + i + (size_t)j * ldc] =
                ar_round(dt, ar_binary(op, a[ao + i + (size_t)j * lda], v[vo + (axis == GPAR_PER_ROW ? i : j)]));
        gpar_buffer ba = put(dev, dt, a, na), bv = put(dev, dt, v, nv + vo), bc = put(dev, dt, NULL, nc);
        int st = gpar_binary_bcast(op, dt, m, n, ba, ao, lda, bv, vo, axis, bc, co, ldc);
        if (st == GPAR_OK) st = get(bc, dt, nc, got);
        good = st == GPAR_OK && check_range(got, nc, 0, c, nc, dt, tol_rel(dt), tol_abs(dt), bnames[op]);
        if (good && s == 2) { /* in place on A: its gaps (rows past m) stay */
          st = gpar_binary_bcast(op, dt, m, n, ba, ao, lda, bv, vo, axis, ba, ao, lda);
          double *all = malloc(na * 8);
          if (st == GPAR_OK) st = get(ba, dt, na, all);
          for (int j = 0; j < n && st == GPAR_OK && good; j++)
            for (int i = 0; i < lda && good; i++) {
              size_t e = ao + i + (size_t)j * lda;
              double w = i < m ? c[co + i + (size_t)j * ldc] : a[e];
              if (!ar_close(all[e], w, tol_rel(dt), tol_abs(dt))) good = 0, diag("  in place: A(%d,%d)", i, j);
            }
          free(all);
        }
        if (st) diag("  %s %dx%d: %s (%s)", bnames[op], m, n, gpar_status_name(st), gpar_last_error()), good = 0;
        gpar_buffer_release(ba), gpar_buffer_release(bv), gpar_buffer_release(bc);
        free(a), free(v), free(c), free(got);
      }
    ok(good, "%s: broadcast %s, every op, %s, 1x1..1000x7, lda/ldc > m, in place", name,
       axis == GPAR_PER_ROW ? "per row" : "per column", ar_name(dt));
  }
}

/* Sum tolerance over n terms of total magnitude mag: rounding of a tree or a loop in the compute
 * type, and the result's storage rounding. */
static double sum_tol(int dt, size_t n, double mag, double want) {
  return (4 * sqrt((double)n) + 8) * ar_eps_compute(dt) * mag + ar_eps_store(dt) * fabs(want) + tol_abs(dt);
}

/* Reference reduction of x[0 .. n) with stride s; *mag gets sum |x|. */
static double ref_reduce(int op, const double *x, size_t n, size_t s, double *mag) {
  double r = op == GPAR_SUM ? 0 : op == GPAR_MAX ? -INFINITY : INFINITY;
  *mag = 0;
  for (size_t i = 0; i < n; i++) {
    double v = x[i * s];
    r = op == GPAR_SUM ? r + v : op == GPAR_MAX ? ar_max(r, v) : ar_min(r, v);
    *mag += fabs(v);
  }
  return r;
}

static int reduce_ok(int op, int dt, double got, double want, size_t n, double mag) {
  if (want != want) return got != got;
  if (op != GPAR_SUM) return got == ar_round(dt, want);
  return fabs(got - want) <= sum_tol(dt, n, mag, want) || (isinf(want) && got == want);
}

/* Range reductions over 0 .. 2^20 + 3 elements at an offset; the same bits twice. */
static void test_reduce_range(int dev, const char *name, int dt) {
  static const size_t counts[] = {0, 1, 3, 1000, 65537, 1048579};
  for (int op = 0; op < 3; op++) {
    int good = 1, same = 1;
    for (size_t c = 0; c < 6 && good; c++) {
      size_t n = counts[c], xo = 7;
      double *x = malloc((n + xo) * 8), mag, got[3] = {0}, got2[3] = {0};
      for (size_t i = 0; i < n + xo; i++) x[i] = uni(-1, 1);
      quantize(dt, x, n + xo);
      double want = ref_reduce(op, x + xo, n, 1, &mag);
      gpar_buffer bx = put(dev, dt, x, n + xo), bo = put(dev, dt, NULL, 3);
      int st = gpar_reduce_range(op, dt, n, bx, xo, bo, 1);
      if (st == GPAR_OK) st = get(bo, dt, 3, got);
      good = st == GPAR_OK && reduce_ok(op, dt, got[1], want, n, mag) && got[0] == SENTINEL && got[2] == SENTINEL;
      if (!good) diag("  %s n=%zu: %s, got %.17g want %.17g", rnames[op], n, gpar_status_name(st), got[1], want);
      if (good && n > 1000) { /* again: the same bits */
        st = gpar_reduce_range(op, dt, n, bx, xo, bo, 1);
        if (st == GPAR_OK) st = get(bo, dt, 3, got2);
        same = same && st == GPAR_OK && !memcmp(&got[1], &got2[1], 8);
      }
      gpar_buffer_release(bx), gpar_buffer_release(bo);
      free(x);
    }
    ok(good, "%s: reduce range %s %s, 0..2^20+3 elements at an offset (empty: identity)", name, rnames[op],
       ar_name(dt));
    ok(same, "%s: reduce range %s %s twice gives the same bits", name, rnames[op], ar_name(dt));
  }
}

/* NaN makes every reduction NaN; +inf and -inf make a sum NaN; an infinity wins max/min. */
static void test_reduce_special(int dev, const char *name, int dt) {
  const size_t n = 4099;
  double *x = malloc(n * 8), got[1];
  int good = 1;
  for (int cse = 0; cse < 3 && good; cse++)
    for (int op = 0; op < 3 && good; op++) {
      for (size_t i = 0; i < n; i++) x[i] = uni(-1, 1);
      if (cse == 0) x[n / 3] = NAN;
      if (cse >= 1) x[17] = INFINITY;
      if (cse == 2) x[n - 2] = -INFINITY;
      quantize(dt, x, n);
      double mag, want = ref_reduce(op, x, n, 1, &mag);
      gpar_buffer bx = put(dev, dt, x, n), bo = put(dev, dt, NULL, 1);
      int st = gpar_reduce_range(op, dt, n, bx, 0, bo, 0);
      if (st == GPAR_OK) st = get(bo, dt, 1, got);
      good = st == GPAR_OK && (want != want ? got[0] != got[0] : got[0] == want);
      if (!good) diag("  case %d %s: got %g want %g", cse, rnames[op], got[0], want);
      gpar_buffer_release(bx), gpar_buffer_release(bo);
    }
  free(x);
  ok(good, "%s: reduce %s with NaN (NaN), +inf (+inf for sum/max), +inf and -inf (sum NaN)", name, ar_name(dt));
}

/* Matrix reductions per row and per column, odd and empty shapes, lda > m. */
static void test_reduce_matrix(int dev, const char *name, int dt) {
  static const int shapes[][2] = {{1, 1}, {5, 0}, {0, 5}, {37, 129}, {1024, 33}, {3, 5000}};
  for (int axis = 0; axis < 2; axis++) {
    int good = 1;
    for (int op = 0; op < 3 && good; op++)
      for (int s = 0; s < 6 && good; s++) {
        int m = shapes[s][0], n = shapes[s][1], lda = m + 3, nout = axis == GPAR_PER_ROW ? m : n;
        size_t ao = 2, oo = 1, na = ao + (size_t)lda * (n ? n : 1), no = oo + nout + 1;
        double *a = malloc(na * 8), *got = malloc(no * 8), *want = malloc((nout + 1) * 8), *mag = malloc((nout + 1) * 8);
        for (size_t i = 0; i < na; i++) a[i] = uni(-1, 1);
        quantize(dt, a, na);
        for (int r = 0; r < nout; r++)
          want[r] = axis == GPAR_PER_ROW ? ref_reduce(op, a + ao + r, (size_t)n, (size_t)lda, &mag[r])
                                         : ref_reduce(op, a + ao + (size_t)r * lda, (size_t)m, 1, &mag[r]);
        gpar_buffer ba = put(dev, dt, a, na), bo = put(dev, dt, NULL, no);
        int st = gpar_reduce_matrix(op, dt, m, n, ba, ao, lda, axis, bo, oo);
        if (st == GPAR_OK) st = get(bo, dt, no, got);
        good = st == GPAR_OK && got[0] == SENTINEL && got[no - 1] == SENTINEL;
        for (int r = 0; r < nout && good; r++)
          if (!reduce_ok(op, dt, got[oo + r], want[r], axis == GPAR_PER_ROW ? (size_t)n : (size_t)m, mag[r]))
            good = 0, diag("  %s %dx%d: out[%d] = %.17g, want %.17g", rnames[op], m, n, r, got[oo + r], want[r]);
        if (st) diag("  %s %dx%d: %s (%s)", rnames[op], m, n, gpar_status_name(st), gpar_last_error());
        gpar_buffer_release(ba), gpar_buffer_release(bo);
        free(a), free(got), free(want), free(mag);
      }
    ok(good, "%s: reduce matrix %s, sum/max/min %s, odd and empty shapes (identity), lda > m", name,
       axis == GPAR_PER_ROW ? "per row" : "per column", ar_name(dt));
  }
}

/* Reference softmax cross-entropy of one column (z: k values) into *loss and g. */
static void ref_softmax(const double *z, int k, int y, double scale, double *loss, double *g) {
  double mx = -INFINITY, s = 0;
  for (int i = 0; i < k; i++) mx = ar_max(mx, z[i]);
  for (int i = 0; i < k; i++) s += exp(z[i] - mx);
  int in = y >= 0 && y < k;
  *loss = in ? log(s) - (z[y] - mx) : NAN;
  for (int i = 0; i < k; i++) g[i] = scale * (exp(z[i] - mx) / s - (in && i == y ? 1 : 0));
}

static int softmax_case(int dev, int dt, int k, int n, int with_loss, int with_grad) {
  int ldz = k + 1, ldg = k + 2;
  size_t zo = 3, lo = 2, go = 1, yo = 1, nz = zo + (size_t)ldz * n, ng = go + (size_t)ldg * n, nl = lo + n;
  double *z = malloc(nz * 8), *lab = malloc((n + yo) * 8), *gl = malloc(nl * 8), *gg = malloc(ng * 8);
  double *wl = malloc(nl * 8), *wg = malloc(ng * 8), scale = 1.0 / n;
  int32_t *y = malloc((n + yo) * 4);
  for (size_t i = 0; i < nz; i++) z[i] = uni(-6, 6);
  for (int j = 0; j < n + (int)yo; j++) y[j] = (int32_t)(tu_rand(&rs) % (uint64_t)k);
  if (n > 4) y[yo + 1] = -1, y[yo + 2] = k, z[zo + 3 * (size_t)ldz] = NAN; /* out of range; a NaN column */
  quantize(dt, z, nz);
  for (size_t i = 0; i < nl; i++) wl[i] = SENTINEL;
  for (size_t i = 0; i < ng; i++) wg[i] = SENTINEL;
  for (int j = 0; j < n; j++) {
    ref_softmax(z + zo + (size_t)j * ldz, k, y[yo + j], scale, &wl[lo + j], &wg[go + (size_t)j * ldg]);
    wl[lo + j] = ar_round(dt, wl[lo + j]);
    for (int i = 0; i < k; i++) wg[go + i + (size_t)j * ldg] = ar_round(dt, wg[go + i + (size_t)j * ldg]);
  }
  for (int j = 0; j < n + (int)yo; j++) lab[j] = y[j];
  gpar_buffer bz = put(dev, dt, z, nz), by = tu_buffer(eng, dev, (n + yo) * 4);
  gpar_buffer bl = with_loss ? put(dev, dt, NULL, nl) : (gpar_buffer){0, 0};
  gpar_buffer bg = with_grad ? put(dev, dt, NULL, ng) : (gpar_buffer){0, 0};
  gpar_write(by, 0, y, (n + yo) * 4);
  int st = gpar_softmax_xent(dt, k, n, bz, zo, ldz, by, yo, scale, bl, lo, bg, go, ldg), good = st == GPAR_OK;
  double rel = 4 * k * ar_eps_compute(dt) + 2 * ar_eps_store(dt) + 16 * ar_eps_compute(dt);
  if (good && with_loss && (st = get(bl, dt, nl, gl)) == GPAR_OK)
    good = check_range(gl, nl, lo, wl + lo, n, dt, rel, tol_abs(dt) + rel, "loss");
  if (good && with_grad && (st = get(bg, dt, ng, gg)) == GPAR_OK)
    for (size_t i = 0; i < ng && good; i++)
      if (!ar_close(gg[i], wg[i], rel, rel * scale + tol_abs(dt))) good = 0, diag("  G element %zu: %.17g, want %.17g", i, gg[i], wg[i]);
  if (st) good = 0, diag("  softmax %dx%d: %s (%s)", k, n, gpar_status_name(st), gpar_last_error());
  gpar_buffer_release(bz), gpar_buffer_release(by);
  if (with_loss) gpar_buffer_release(bl);
  if (with_grad) gpar_buffer_release(bg);
  free(z), free(lab), free(gl), free(gg), free(wl), free(wg), free(y);
  return good;
}

static void test_softmax(int dev, const char *name, int dt) {
  int good = softmax_case(dev, dt, 10, 37, 1, 1) && softmax_case(dev, dt, 1, 3, 1, 1) &&
             softmax_case(dev, dt, 100, 5, 1, 1) && softmax_case(dev, dt, 1000, 9, 1, 1) &&
             softmax_case(dev, dt, 10, 256, 1, 0) && softmax_case(dev, dt, 10, 33, 0, 1);
  ok(good, "%s: softmax cross-entropy %s, k 1..1000, loss and/or G, labels out of range, a NaN column", name,
     ar_name(dt));
}

/* argmax per column: random columns (ties in the short types), a NaN, explicit ties, m == 0. */
static void test_argmax(int dev, const char *name, int dt) {
  static const int shapes[][2] = {{10, 37}, {1, 4}, {1000, 7}, {0, 3}};
  int good = 1;
  for (int s = 0; s < 4 && good; s++) {
    int m = shapes[s][0], n = shapes[s][1], lda = m + 1;
    size_t ao = 2, io = 1, na = ao + (size_t)lda * n;
    double *a = malloc(na * 8);
    int32_t *want = malloc((n + io) * 4), *got = malloc((n + io) * 4);
    for (size_t i = 0; i < na; i++) a[i] = uni(-3, 3);
    if (m >= 10) a[ao + 4 + (size_t)lda * 2] = NAN, a[ao + 7 + (size_t)lda * 2] = NAN; /* the first NaN wins */
    if (m >= 10) a[ao + 1 + (size_t)lda * 3] = a[ao + 8 + (size_t)lda * 3] = 99; /* a tie: the first row */
    quantize(dt, a, na);
    for (int j = 0; j < n; j++) {
      int best = m ? 0 : -1;
      for (int i = 1; i < m; i++) {
        double v = a[ao + i + (size_t)j * lda], b = a[ao + best + (size_t)j * lda];
        if (b != b) break;
        if (v > b || v != v) best = i;
      }
      want[io + j] = best;
    }
    gpar_buffer ba = put(dev, dt, a, na), bi = tu_buffer(eng, dev, (n + io) * 4);
    gpar_fill(bi, 0, (n + io) * 4, 0x7f);
    int st = gpar_argmax(dt, m, n, ba, ao, lda, bi, io);
    if (st == GPAR_OK) st = gpar_read(bi, 0, got, (n + io) * 4);
    good = st == GPAR_OK && got[0] == 0x7f7f7f7f && !memcmp(got + io, want + io, (size_t)n * 4);
    for (int j = 0; j < n && !good && st == GPAR_OK; j++)
      if (got[io + j] != want[io + j]) {
        diag("  %dx%d column %d: %d, want %d", m, n, j, got[io + j], want[io + j]);
        break;
      }
    if (st) diag("  argmax %dx%d: %s (%s)", m, n, gpar_status_name(st), gpar_last_error());
    gpar_buffer_release(ba), gpar_buffer_release(bi);
    free(a), free(want), free(got);
  }
  ok(good, "%s: argmax %s per column, ties (first row), NaN (first NaN), m == 0 (-1)", name, ar_name(dt));
}


/* The integer map: q = p * k + c + i over i32, u64, u8 into i64, exact. */
static void test_map_ints(int dev, const char *name, gpar_map m, size_t n) {
  int32_t *p = malloc(sizeof *p * n);
  uint8_t *c = malloc(n);
  int64_t *q = malloc(sizeof *q * n);
  for (size_t i = 0; i < n; i++) p[i] = (int32_t)(tu_rand(&rs) % 200001) - 100000, c[i] = (uint8_t)tu_rand(&rs);
  gpar_buffer bp = tu_buffer(eng, dev, n * 4), bc = tu_buffer(eng, dev, n), bq = tu_buffer(eng, dev, n * 8);
  gpar_write(bp, 0, p, n * 4);
  gpar_write(bc, 0, c, n);
  gpar_arg a[4] = {gpar_arg_buffer(bp, 0), gpar_arg_u64(3000000000ull), gpar_arg_buffer(bq, 0), gpar_arg_buffer(bc, 0)};
  int st = gpar_map_launch(m, n, a, 4), good;
  if (st == GPAR_OK) st = gpar_read(bq, 0, q, n * 8);
  good = st == GPAR_OK;
  for (size_t i = 0; i < n && good; i++)
    if (q[i] != (int64_t)p[i] * 3000000000ll + c[i] + (int64_t)i) good = 0, diag("  ints: q[%zu] = %lld", i, (long long)q[i]);
  ok(good, "%s: map over i32, u64, u8 into i64 with the index i, exact (%s)", name, gpar_status_name(st));
  gpar_buffer_release(bp), gpar_buffer_release(bc), gpar_buffer_release(bq);
  free(p), free(c), free(q);
}

/* A map whose expression does not compile: GPAR_EBUILD at its launch, with the compiler's log. */
static void test_map_build_error(int dev, const char *name) {
  gpar_map m;
  gpar_kernel k;
  char log[4096] = "";
  size_t len = 0;
  int st = gpar_map_create(eng, "broken", "in f32 x, out f32 y", "y = x +", &m);
  gpar_buffer bx = tu_buffer(eng, dev, 64), by = tu_buffer(eng, dev, 64);
  gpar_arg a[2] = {gpar_arg_buffer(bx, 0), gpar_arg_buffer(by, 0)};
  if (st == GPAR_OK) st = gpar_map_launch(m, 16, a, 2);
  int dev_index = dev == GPAR_HOST ? gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0) : dev;
  if (gpar_map_kernel(m, &k) == GPAR_OK) gpar_kernel_log(k, dev_index, log, sizeof log, &len);
  ok(st == GPAR_EBUILD && len > 0, "%s: a map that does not compile: GPAR_EBUILD at the launch, log of %zu bytes (%s)", name,
     len, gpar_status_name(st));
  gpar_map_release(m);
  gpar_buffer_release(bx), gpar_buffer_release(by);
}

/* A map's outputs against want within rel (of |want|) + abs; diagnostics name the map. */
static int map_check(const double *got, const double *want, size_t n, double rel, double abs, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (!ar_close(got[i], want[i], rel, abs)) {
      diag("  map %s: element %zu is %.17g, want %.17g", what, i, got[i], want[i]);
      return 0;
    }
  return 1;
}

/* Elementwise maps: f32 saxpy at byte offsets, f16/bf16 in and out, integer types with the
 * index i, an f64 in place with the count n, n == 0, and a body that does not compile. */
static void test_map(int dev, const char *name) {
  const size_t n = 1000;
  double *x = malloc(sizeof *x * (n + 8)), *y = malloc(sizeof *y * (n + 8)), *want = malloc(sizeof *want * n),
         *got = malloc(sizeof *got * (n + 8));
  gpar_map m[4];
  int st = gpar_map_create(eng, "saxpy", "f32 a, in f32 x, inout f32 y", "y = a * x + y", &m[0]);
  if (!st) st = gpar_map_create(eng, "halves", "in f16 h, in bf16 b, out f32 s, out f16 p", "s = h + b; p = h * b", &m[1]);
  if (!st) st = gpar_map_create(eng, "ints", "in i32 p, u64 k, out i64 q, in u8 c", "q = (gpar_i64)p * (gpar_i64)k + c + (gpar_i64)i", &m[2]);
  if (!st) st = gpar_map_create(eng, "inplace", "inout f64 z", "z = sqrt(z) + (gpar_f64)n", &m[3]);
  is_status(st, GPAR_OK, "map_create: four maps");
  if (st) return;
  for (size_t i = 0; i < n + 8; i++) x[i] = ar_round(GPAR_FLOAT, uni(-4, 4)), y[i] = ar_round(GPAR_FLOAT, uni(-4, 4));
  for (size_t i = 0; i < n; i++) want[i] = ar_round(GPAR_FLOAT, 0.5f * (float)x[2 + i] + (float)y[3 + i]);
  gpar_buffer bx = put(dev, GPAR_FLOAT, x, n + 8), by = put(dev, GPAR_FLOAT, y, n + 8);
  gpar_arg a0[3] = {gpar_arg_f32(0.5f), gpar_arg_buffer(bx, 8), gpar_arg_buffer(by, 12)};
  st = gpar_map_launch(m[0], n, a0, 3);
  if (st == GPAR_OK) st = get(by, GPAR_FLOAT, n + 8, got);
  ok(st == GPAR_OK && map_check(got + 3, want, n, 2 * 0x1p-23, 1e-30, "saxpy") && got[0] == y[0] && got[n + 3] == y[n + 3],
     "%s: map saxpy f32 at byte offsets (%s)", name, gpar_status_name(st));
  /* f16 and bf16 in, f32 and f16 out */
  gpar_buffer bh = put(dev, GPAR_HALF, x, n), bb = put(dev, GPAR_BFLOAT16, y, n), bs = put(dev, GPAR_FLOAT, NULL, n),
              bp = put(dev, GPAR_HALF, NULL, n);
  gpar_arg a1[4] = {gpar_arg_buffer(bh, 0), gpar_arg_buffer(bb, 0), gpar_arg_buffer(bs, 0), gpar_arg_buffer(bp, 0)};
  st = gpar_map_launch(m[1], n, a1, 4);
  double *got2 = malloc(sizeof *got2 * n), *want2 = malloc(sizeof *want2 * n);
  for (size_t i = 0; i < n; i++) {
    double h = ar_round(GPAR_HALF, x[i]), b = ar_round(GPAR_BFLOAT16, y[i]);
    want[i] = ar_round(GPAR_FLOAT, h + b), want2[i] = ar_round(GPAR_HALF, (float)h * (float)b);
  }
  if (st == GPAR_OK) st = get(bs, GPAR_FLOAT, n, got);
  if (st == GPAR_OK) st = get(bp, GPAR_HALF, n, got2);
  ok(st == GPAR_OK && map_check(got, want, n, 0x1p-23, 0, "f16+bf16") && map_check(got2, want2, n, 0x1p-10, 0x1p-24, "f16*bf16"),
     "%s: map over f16 and bf16 in, f32 and f16 out (%s)", name, gpar_status_name(st));
  free(got2), free(want2);
  gpar_buffer_release(bh), gpar_buffer_release(bb), gpar_buffer_release(bs), gpar_buffer_release(bp);
  test_map_ints(dev, name, m[2], n);
  /* f64 in place, the count n in the expression */
  for (size_t i = 0; i < n; i++) x[i] = uni(0, 100), want[i] = sqrt(x[i]) + (double)n;
  gpar_buffer bz = put(dev, GPAR_DOUBLE, x, n);
  gpar_arg a3[1] = {gpar_arg_buffer(bz, 0)};
  st = gpar_map_launch(m[3], n, a3, 1);
  if (st == GPAR_OK) st = get(bz, GPAR_DOUBLE, n, got);
  if (st == GPAR_ENOTSUP)
    printf("ok %d # SKIP %s: map f64 in place: no fp64 on this device\n", ++tap_count, name);
  else
    ok(st == GPAR_OK && map_check(got, want, n, 4 * 0x1p-52, 0, "f64"), "%s: map f64 in place with n (%s)", name,
       gpar_status_name(st));
  gpar_stats s0, s1;
  gpar_stats_get(eng, &s0);
  is_status(gpar_map_launch(m[0], 0, a0, 3), GPAR_OK, "map launch over n == 0");
  gpar_stats_get(eng, &s1);
  ok(s1.ops_submitted == s0.ops_submitted, "%s: ... enqueues nothing", name);
  gpar_buffer_release(bx), gpar_buffer_release(by), gpar_buffer_release(bz);
  for (int k = 0; k < 4; k++) gpar_map_release(m[k]);
  free(x), free(y), free(want), free(got);
  test_map_build_error(dev, name);
}

static void run_device(int dev, const char *name) {
  for (int t = 0; t < 4; t++) {
    int dt = dtypes[t];
    test_unary(dev, name, dt);
    test_binary(dev, name, dt);
    test_special(dev, name, dt);
    test_bcast(dev, name, dt);
    test_reduce_range(dev, name, dt);
    test_reduce_special(dev, name, dt);
    test_reduce_matrix(dev, name, dt);
    test_softmax(dev, name, dt);
    test_argmax(dev, name, dt);
  }
  test_map(dev, name);
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all");
}

int main(void) {
  tap_start();
  rs = tu_seed(2718);
  eng = tu_engine(0, 0, 0);
  int ndev = gpar_device_count(eng);
  if (ndev < 1) bail_out("no device");
  for (int t = -1; t < ndev; t++) {
    int dev = t < 0 ? GPAR_HOST : t;
    char name[200];
    if (dev == GPAR_HOST) snprintf(name, sizeof name, "GPAR_HOST memory");
    else {
      tu_devinfo info;
      tu_device_info(eng, dev, &info);
      snprintf(name, sizeof name, "dev %d (%s %s)", dev, info.backend, info.name);
    }
    double t0 = gpar_now();
    run_device(dev, name);
    diag("%s done in %.2f s", name, gpar_now() - t0);
  }
  gpar_stats st;
  gpar_stats_get(eng, &st);
  ok(st.ops_failed == 0 && st.ops_in_flight == 0 && st.buffers_live == 0,
     "counters: failed %llu, in flight %llu, buffers live %llu", (unsigned long long)st.ops_failed,
     (unsigned long long)st.ops_in_flight, (unsigned long long)st.buffers_live);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
