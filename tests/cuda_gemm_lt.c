/* cuda_gemm_lt.c: CUDA GEMMs through cached cublasLt plans (the default) against the same GEMMs
 * by cublasSgemm/Dgemm (a second engine with cublaslt = -1, i.e. GPAR_CUBLASLT=0) and a double
 * reference, on every CUDA device: transposes, odd leading dimensions, unaligned offsets, alpha
 * and beta, float and double, TF32, more shapes than the plan cache holds, and a GEMM captured
 * into a CUDA graph. gpar_stats' gemm_lt_calls / gemm_lt_fallbacks tell which path ran. Skips
 * wholly without a CUDA device. */
#include <math.h>

#include "testutil.h"

typedef struct lt_case {
  const char *what;
  int ta, tb, m, n, k;
  int pad_a, pad_b, pad_c; /* leading dimension = rows + pad */
  size_t off_a, off_b, off_c;
  double alpha, beta;
  int must_lt; /* aligned operands: cublasLt must have an algorithm */
} lt_case;

static const lt_case cases[] = {
    {"NN 256^3", 0, 0, 256, 256, 256, 0, 0, 0, 0, 0, 0, 1.0, 0.0, 1},
    {"NN 64^3, beta 1", 0, 0, 64, 64, 64, 0, 0, 0, 0, 0, 0, 1.0, 1.0, 1},
    {"TN 200x120x72, padded lds, alpha 0.5, beta -1", 1, 0, 200, 120, 72, 8, 4, 16, 0, 0, 0, 0.5, -1.0, 1},
    {"NT 96x80x40, offsets of 64 elements, beta 0.25", 0, 1, 96, 80, 40, 0, 8, 32, 64, 128, 64, 1.0, 0.25, 1},
    {"TT 1000x3x500, tall and skinny", 1, 1, 1000, 3, 500, 4, 4, 24, 0, 0, 0, -2.0, 0.0, 1},
    {"NT 33x65x17, odd lds, odd offsets", 0, 1, 33, 65, 17, 1, 2, 3, 1, 3, 5, 1.5, 0.5, 0},
    {"TT 129x31x257, odd lds, odd offsets", 1, 1, 129, 31, 257, 3, 1, 2, 7, 1, 3, 1.0, 2.0, 0},
    {"NN 1x1x1", 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 3.0, 0.0, 0},
    {"alpha 0: C = beta C, neither path", 0, 0, 48, 40, 32, 0, 0, 0, 0, 0, 0, 0.0, 0.5, 0},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* Host data of one case: A, B, C0 (double values exact in float too when elem is 4). */
typedef struct lt_data {
  int lda, ldb, ldc;
  size_t na, nb, nc; /* elements, offsets included */
  double *A, *B, *C0, *want, *tol;
} lt_data;

static double uni(uint64_t *s) { return (double)(int64_t)(tu_rand(s) >> 11) / 4503599627370496.0 - 1.0; }

/* Fill data for case c (elem 4: values rounded to float) and the reference with its tolerance. */
static void make_data(const lt_case *c, int elem, int tf32, uint64_t seed, lt_data *d) {
  const int ar = c->ta ? c->k : c->m, ac = c->ta ? c->m : c->k, br = c->tb ? c->n : c->k, bc = c->tb ? c->k : c->n;
  uint64_t s = seed;
  d->lda = ar + c->pad_a;
  d->ldb = br + c->pad_b;
  d->ldc = c->m + c->pad_c;
  d->na = c->off_a + (size_t)d->lda * (size_t)ac;
  d->nb = c->off_b + (size_t)d->ldb * (size_t)bc;
  d->nc = c->off_c + (size_t)d->ldc * (size_t)c->n;
  d->A = malloc(d->na * sizeof(double));
  d->B = malloc(d->nb * sizeof(double));
  d->C0 = malloc(d->nc * sizeof(double));
  d->want = malloc(d->nc * sizeof(double));
  d->tol = malloc(d->nc * sizeof(double));
  if (!d->A || !d->B || !d->C0 || !d->want || !d->tol) bail_out("out of host memory");
  double *arr[3] = {d->A, d->B, d->C0};
  size_t cnt[3] = {d->na, d->nb, d->nc};
  for (int t = 0; t < 3; t++)
    for (size_t i = 0; i < cnt[t]; i++) {
      double v = uni(&s);
      arr[t][i] = elem == 4 ? (double)(float)v : v;
    }
  /* Worst-case bounds (k terms, any summation order or split): 2k eps |alpha| sum|a b|, plus 4 eps
   * of the final alpha * AB + beta * C. TF32 cuts inputs to 10 mantissa bits (truncated, at
   * worst): 2^-9 more per product. */
  const double eps = elem == 4 ? 5.96e-8 : 1.11e-16, in = elem == 4 && tf32 ? 1.96e-3 : 0.0;
  for (size_t i = 0; i < d->nc; i++) d->want[i] = d->C0[i], d->tol[i] = 0.0; /* outside C: untouched */
  for (int j = 0; j < c->n; j++)
    for (int i = 0; i < c->m; i++) {
      size_t x = c->off_c + (size_t)i + (size_t)j * (size_t)d->ldc;
      double absum = 0, ab = 0;
      if (c->alpha != 0.0)
        ab = tu_ref_elem(c->ta, c->tb, i, j, c->k, d->A + c->off_a, d->lda, d->B + c->off_b, d->ldb, &absum);
      double bc0 = c->beta == 0.0 ? 0.0 : c->beta * d->C0[x];
      d->want[x] = c->alpha * ab + bc0;
      d->tol[x] = (2.0 * c->k * eps + in) * fabs(c->alpha) * absum + 4.0 * eps * (fabs(bc0) + fabs(c->alpha * ab)) +
                  1e-300;
    }
}

static void free_data(lt_data *d) {
  free(d->A);
  free(d->B);
  free(d->C0);
  free(d->want);
  free(d->tol);
}

static int write_elems(gpar_buffer b, const double *v, size_t n, int elem) {
  unsigned char *raw = malloc(n * (size_t)elem);
  if (!raw) return GPAR_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    if (elem == 4) {
      float f = (float)v[i];
      memcpy(raw + i * 4, &f, 4);
    } else {
      memcpy(raw + i * 8, &v[i], 8);
    }
  }
  int st = gpar_write(b, 0, raw, n * (size_t)elem);
  free(raw);
  return st;
}

static int read_elems(gpar_buffer b, double *v, size_t n, int elem) {
  unsigned char *raw = malloc(n * (size_t)elem);
  if (!raw) return GPAR_ENOMEM;
  int st = gpar_read(b, 0, raw, n * (size_t)elem);
  for (size_t i = 0; st == GPAR_OK && i < n; i++) {
    if (elem == 4) {
      float f;
      memcpy(&f, raw + i * 4, 4);
      v[i] = f;
    } else {
      memcpy(&v[i], raw + i * 8, 8);
    }
  }
  free(raw);
  return st;
}

static int gemm(const lt_case *c, int elem, const lt_data *d, gpar_buffer a, gpar_buffer b, gpar_buffer cb) {
  gpar_trans ta = c->ta ? GPAR_TRANS : GPAR_NO_TRANS, tb = c->tb ? GPAR_TRANS : GPAR_NO_TRANS;
  if (elem == 4)
    return gpar_sgemm(ta, tb, c->m, c->n, c->k, (float)c->alpha, a, c->off_a, d->lda, b, c->off_b, d->ldb,
                      (float)c->beta, cb, c->off_c, d->ldc);
  return gpar_dgemm(ta, tb, c->m, c->n, c->k, c->alpha, a, c->off_a, d->lda, b, c->off_b, d->ldb, c->beta, cb,
                    c->off_c, d->ldc);
}

/* Run case c on device dev of eng into got[nc]; the stats deltas in *dlt / *dfb. A status. */
static int run(gpar_engine *eng, int dev, const lt_case *c, int elem, const lt_data *d, double *got, uint64_t *dlt,
               uint64_t *dfb) {
  gpar_buffer a = tu_buffer(eng, dev, d->na * (size_t)elem), b = tu_buffer(eng, dev, d->nb * (size_t)elem),
              cb = tu_buffer(eng, dev, d->nc * (size_t)elem);
  gpar_stats s0, s1;
  int st;
  if ((st = write_elems(a, d->A, d->na, elem)) || (st = write_elems(b, d->B, d->nb, elem)) ||
      (st = write_elems(cb, d->C0, d->nc, elem)) || (st = gpar_wait_all(eng)) || (st = gpar_stats_get(eng, &s0)) ||
      (st = gemm(c, elem, d, a, b, cb)) || (st = read_elems(cb, got, d->nc, elem)) || (st = gpar_stats_get(eng, &s1)))
    diag("  %s: %s (%s)", c->what, gpar_status_name(st), gpar_last_error());
  else {
    *dlt = s1.gemm_lt_calls - s0.gemm_lt_calls;
    *dfb = s1.gemm_lt_fallbacks - s0.gemm_lt_fallbacks;
  }
  gpar_buffer_release(a);
  gpar_buffer_release(b);
  gpar_buffer_release(cb);
  return st;
}

/* Entries of got outside want +- k * tol; the first is printed. */
static size_t count_bad(const lt_data *d, const double *got, double k, const char *what) {
  size_t bad = 0;
  for (size_t i = 0; i < d->nc; i++) {
    double err = fabs(got[i] - d->want[i]);
    if (!(err <= k * d->tol[i])) {
      if (!bad) diag("  %s: C[%zu] = %.17g, want %.17g (tolerance %.3g)", what, i, got[i], d->want[i], k * d->tol[i]);
      bad++;
    }
  }
  return bad;
}

static gpar_engine *engine(int cublaslt, int tf32) {
  gpar_config cfg;
  gpar_engine *eng = NULL;
  gpar_config_init(&cfg);
  cfg.backends = GPAR_BACKEND_CUDA;
  cfg.cublaslt = cublaslt;
  cfg.tf32 = tf32;
  cfg.quiet = 1;
  int st = gpar_init(&eng, &cfg);
  if (st != GPAR_OK || !eng) return NULL;
  return eng;
}

/* CUDA devices of eng, in backend order. */
static int cuda_devs(gpar_engine *eng, int *dev, int max) {
  int n = 0, count = gpar_device_count(eng);
  for (int bi = 0; bi < count && n < max; bi++)
    for (int d = 0; d < count; d++) {
      gpar_device_props p;
      if (gpar_device_info(eng, d, &p) == GPAR_OK && p.backend_id == GPAR_BACKEND_CUDA && p.backend_index == bi)
        dev[n++] = d;
    }
  return n;
}

/* Every case, float and double, on one device: Lt engine vs BLAS engine vs reference. */
static void check_cases(gpar_engine *lt, int dl, gpar_engine *bl, int db, gpar_engine *tf, int dt, int ord,
                        uint64_t seed) {
  for (int e = 0; e < 2; e++) {
    const int elem = e ? 8 : 4;
    for (int ci = 0; ci < NCASES; ci++) {
      const lt_case *c = &cases[ci];
      lt_data d;
      uint64_t l_lt = 0, l_fb = 0, b_lt = 0, b_fb = 0;
      const int counted = c->alpha != 0.0 && c->k > 0;
      make_data(c, elem, 0, seed + (uint64_t)ci * 1000 + (uint64_t)elem, &d);
      double *gl = calloc(d.nc, sizeof(double)), *gb = calloc(d.nc, sizeof(double));
      if (!gl || !gb) bail_out("out of host memory");
      int sl = run(lt, dl, c, elem, &d, gl, &l_lt, &l_fb), sb = run(bl, db, c, elem, &d, gb, &b_lt, &b_fb);
      char what[160];
      snprintf(what, sizeof what, "cuda %d %cgemm %s", ord, elem == 4 ? 's' : 'd', c->what);
      if (ok(sl == GPAR_OK && sb == GPAR_OK, "%s: both engines ran it", what)) {
        size_t bad_l = count_bad(&d, gl, 1.0, "cublasLt engine"), bad_b = count_bad(&d, gb, 1.0, "cuBLAS engine");
        size_t differ = 0;
        for (size_t i = 0; i < d.nc; i++)
          if (!(fabs(gl[i] - gb[i]) <= 2.0 * d.tol[i])) differ++;
        ok(bad_l == 0 && bad_b == 0 && differ == 0, "%s: Lt and cuBLAS results match the reference and each other",
           what);
        if (bad_l || bad_b || differ) diag("  wrong: Lt %zu, cuBLAS %zu; Lt vs cuBLAS %zu", bad_l, bad_b, differ);
        if (!counted)
          ok(l_lt == 0 && l_fb == 0 && b_lt == 0 && b_fb == 0, "%s: counted on neither path", what);
        else if (c->must_lt)
          ok(l_lt == 1 && l_fb == 0 && b_lt == 0 && b_fb == 1, "%s: ran through cublasLt (and cuBLAS when off)", what);
        else
          ok(l_lt + l_fb == 1 && b_lt == 0 && b_fb == 1, "%s: counted once (%s)", what,
             l_lt ? "cublasLt" : "cuBLAS fallback: no cublasLt algorithm");
        if (counted && (l_lt != 1 || l_fb != 0 || b_lt != 0 || b_fb != 1))
          diag("  Lt engine: lt %llu fallback %llu; cuBLAS engine: lt %llu fallback %llu", (unsigned long long)l_lt,
               (unsigned long long)l_fb, (unsigned long long)b_lt, (unsigned long long)b_fb);
      } else {
        skip(2, "not run");
      }
      free_data(&d);
      /* TF32 (sgemm only): Lt with CUBLAS_COMPUTE_32F_FAST_TF32, right within TF32's tolerance. */
      if (elem == 4 && counted) {
        make_data(c, elem, 1, seed + (uint64_t)ci * 1000 + 99, &d);
        double *gt = realloc(gl, d.nc * sizeof(double));
        uint64_t t_lt = 0, t_fb = 0;
        if (!gt) bail_out("out of host memory");
        gl = gt;
        int stt = run(tf, dt, c, elem, &d, gt, &t_lt, &t_fb);
        ok(stt == GPAR_OK && count_bad(&d, gt, 1.0, "TF32 engine") == 0 && t_lt + t_fb == 1 &&
               (!c->must_lt || t_lt == 1),
           "cuda %d sgemm %s with tf32: right within TF32 tolerance, %s", ord, c->what,
           t_lt ? "through cublasLt" : "cuBLAS fallback");
        free_data(&d);
      }
      free(gl);
      free(gb);
    }
  }
}

/* More distinct shapes than the plan cache holds (CUDA_LT_PLANS = 32), then the first ones
 * again (their plans were evicted and are made anew): all right, all through cublasLt. */
static void check_eviction(gpar_engine *lt, int dl, int ord, uint64_t seed) {
  const int nshape = 40, again = 4;
  size_t bad = 0;
  uint64_t sum_lt = 0, sum_fb = 0;
  int fails = 0;
  for (int r = 0; r < nshape + again; r++) {
    const int i = r < nshape ? r : r - nshape;
    lt_case c = {"cache", i & 1, 0, 8 * (i + 1), 16 + 8 * (i % 3), 24, 0, 0, 0, 0, 0, 0, 1.0, 0.5, 1};
    lt_data d;
    uint64_t dlt = 0, dfb = 0;
    make_data(&c, 4, 0, seed + (uint64_t)r, &d);
    double *g = calloc(d.nc, sizeof(double));
    if (!g) bail_out("out of host memory");
    if (run(lt, dl, &c, 4, &d, g, &dlt, &dfb) != GPAR_OK) fails++;
    else bad += count_bad(&d, g, 1.0, "cache shape");
    sum_lt += dlt;
    sum_fb += dfb;
    free(g);
    free_data(&d);
  }
  ok(fails == 0 && bad == 0, "cuda %d: %d distinct sgemm shapes, then %d evicted ones again: all right", ord, nshape,
     again);
  ok(sum_lt == (uint64_t)(nshape + again) && sum_fb == 0,
     "cuda %d: all %d ran through cublasLt (lt %llu, fallback %llu)", ord, nshape + again,
     (unsigned long long)sum_lt, (unsigned long long)sum_fb);
}

/* A GEMM recorded into a gpar graph becomes part of a CUDA graph: the cublasLt call is captured
 * (no allocation or synchronisation inside). Two launches, new A between them. */
static void check_graph(gpar_engine *lt, int dl, int ord, uint64_t seed) {
  const lt_case c = {"graph", 0, 1, 128, 96, 64, 0, 0, 0, 0, 0, 0, 1.0, 0.0, 1};
  lt_data d;
  gpar_graph *g = NULL;
  gpar_stats s0, s1;
  int st;
  memset(&s0, 0, sizeof s0);
  memset(&s1, 0, sizeof s1);
  size_t bad = 0;
  make_data(&c, 4, 0, seed, &d);
  double *got = calloc(d.nc, sizeof(double));
  if (!got) bail_out("out of host memory");
  gpar_buffer a = tu_buffer(lt, dl, d.na * 4), b = tu_buffer(lt, dl, d.nb * 4), cb = tu_buffer(lt, dl, d.nc * 4);
  if ((st = write_elems(a, d.A, d.na, 4)) || (st = write_elems(b, d.B, d.nb, 4)) || (st = gpar_wait_all(lt)) ||
      (st = gpar_stats_get(lt, &s0)) || (st = gpar_graph_begin(lt)) || (st = gemm(&c, 4, &d, a, b, cb)) ||
      (st = gpar_graph_end(lt, &g)) || (st = gpar_graph_launch(g)) || (st = read_elems(cb, got, d.nc, 4)))
    diag("  graph: %s (%s)", gpar_status_name(st), gpar_last_error());
  else
    bad = count_bad(&d, got, 1.0, "graph launch 1");
  if (st == GPAR_OK) {
    for (size_t i = 0; i < d.na; i++) d.A[i] = -d.A[i]; /* C = -AB */
    for (size_t i = 0; i < d.nc; i++) d.want[i] = -d.want[i];
    if ((st = write_elems(a, d.A, d.na, 4)) || (st = gpar_graph_launch(g)) || (st = read_elems(cb, got, d.nc, 4)) ||
        (st = gpar_stats_get(lt, &s1)))
      diag("  graph: %s (%s)", gpar_status_name(st), gpar_last_error());
    else
      bad += count_bad(&d, got, 1.0, "graph launch 2");
  }
  ok(st == GPAR_OK && bad == 0, "cuda %d: sgemm in a graph, two launches: right", ord);
  ok(st == GPAR_OK && s1.graph_native_launches - s0.graph_native_launches == 2 &&
         s1.gemm_lt_calls - s0.gemm_lt_calls == 1,
     "cuda %d: a CUDA graph ran it, the cublasLt call captured once (native launches %llu, lt calls %llu)",
     ord, st == GPAR_OK ? (unsigned long long)(s1.graph_native_launches - s0.graph_native_launches) : 0ull,
     st == GPAR_OK ? (unsigned long long)(s1.gemm_lt_calls - s0.gemm_lt_calls) : 0ull);
  if (g) gpar_graph_destroy(g);
  gpar_buffer_release(a);
  gpar_buffer_release(b);
  gpar_buffer_release(cb);
  free(got);
  free_data(&d);
}

int main(void) {
  int dl[64], db[64], dt[64];
  gpar_engine *lt = engine(1, 0);
  const char *why = "";
  int n = 0;
  if (lt) {
    n = cuda_devs(lt, dl, 64);
    if (n == 0) gpar_backend_status(lt, GPAR_BACKEND_CUDA, NULL, &why);
  }
  if (n == 0) {
    char reason[256];
    snprintf(reason, sizeof reason, "no CUDA device (%s)", lt ? why : gpar_last_error());
    if (lt) gpar_shutdown(lt);
    skip_all(reason);
  }
  tap_start();
  gpar_engine *bl = engine(-1, 0), *tf = engine(1, 1);
  if (!bl || !tf || cuda_devs(bl, db, 64) != n || cuda_devs(tf, dt, 64) != n)
    bail_out("second or third engine: not the same CUDA devices");
  uint64_t seed = tu_seed(20261130);
  for (int i = 0; i < n; i++) {
    check_cases(lt, dl[i], bl, db[i], tf, dt[i], i, seed);
    check_eviction(lt, dl[i], i, seed + 7);
    check_graph(lt, dl[i], i, seed + 11);
  }
  gpar_stats s;
  if (gpar_stats_get(bl, &s) == GPAR_OK)
    ok(s.gemm_lt_calls == 0 && s.gemm_lt_fallbacks > 0,
       "GPAR_CUBLASLT=0 engine: no cublasLt call at all (%llu cuBLAS)", (unsigned long long)s.gemm_lt_fallbacks);
  ok(gpar_shutdown(lt) == GPAR_OK && gpar_shutdown(bl) == GPAR_OK && gpar_shutdown(tf) == GPAR_OK, "shutdown");
  return done_testing();
}
