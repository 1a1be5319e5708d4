/* host_gemm.c: sgemm and dgemm on the CPU device and on GPAR_HOST buffers against a plain
 * triple loop: odd sizes, all transposes, alpha/beta (beta 0 over a NaN-filled C), padded
 * leading dimensions and element offsets; bytes outside C's matrix must stay untouched. Large
 * cases at and above gpar-bench's CPU size (512) with random data are checked against sampled
 * reference entries (every entry of the small ones). */
#include <math.h>
#include "testutil.h"

typedef struct gcase {
  int es, ta, tb, m, n, k, lda, ldb, ldc;
  size_t aoff, boff, coff, na, nb, nc; /* elements */
  double alpha, beta;
  int where;                           /* 0: all on the CPU device, 1: all GPAR_HOST, 2: mixed */
  int sample;                          /* > 1: check about one in `sample` entries of C (large cases) */
  double *a, *b, *c0, *got;
  gpar_buffer ba, bb, bc;
  int st;
} gcase;

static const double SENTINEL = -777.0;

static void to_elems(const double *src, size_t n, int es, void *dst) {
  for (size_t i = 0; i < n; i++) {
    if (es == 4) ((float *)dst)[i] = (float)src[i];
    else ((double *)dst)[i] = src[i];
  }
}

static void from_elems(const void *src, size_t n, int es, double *dst) {
  for (size_t i = 0; i < n; i++) dst[i] = es == 4 ? (double)((const float *)src)[i] : ((const double *)src)[i];
}

static gpar_buffer upload(gpar_engine *eng, int dev, const double *v, size_t n, int es) {
  gpar_buffer b = {0};
  void *tmp = malloc(n * (size_t)es);
  to_elems(v, n, es, tmp);
  if (gpar_buffer_create(eng, dev, n * (size_t)es, &b) != GPAR_OK) bail_out("create");
  if (gpar_write(b, 0, tmp, n * (size_t)es) != GPAR_OK) bail_out("write");
  free(tmp);
  return b;
}

static void setup(gpar_engine *eng, int cpu, gcase *g, uint64_t *rs) {
  int ra = g->ta ? g->k : g->m, ca = g->ta ? g->m : g->k;
  int rb = g->tb ? g->n : g->k, cb = g->tb ? g->k : g->n;
  int pad = tu_range(rs, 0, 1);
  g->lda = ra + (pad ? 3 : 0);
  g->ldb = rb + (pad ? 5 : 0);
  g->ldc = g->m + (pad ? 2 : 0);
  g->aoff = pad ? 3 : 0;
  g->boff = pad ? 5 : 0;
  g->coff = pad ? 7 : 0;
  g->na = g->aoff + (size_t)g->lda * (size_t)ca + 4;
  g->nb = g->boff + (size_t)g->ldb * (size_t)cb + 4;
  g->nc = g->coff + (size_t)g->ldc * (size_t)g->n + 4;
  g->a = malloc(g->na * sizeof(double));
  g->b = malloc(g->nb * sizeof(double));
  g->c0 = malloc(g->nc * sizeof(double));
  g->got = malloc(g->nc * sizeof(double));
  for (size_t i = 0; i < g->na; i++) g->a[i] = (double)(tu_rand(rs) % 2001) / 1000.0 - 1.0;
  for (size_t i = 0; i < g->nb; i++) g->b[i] = (double)(tu_rand(rs) % 2001) / 1000.0 - 1.0;
  for (size_t i = 0; i < g->nc; i++) g->c0[i] = SENTINEL;
  for (int j = 0; j < g->n; j++)
    for (int i = 0; i < g->m; i++)
      g->c0[g->coff + (size_t)j * g->ldc + i] = g->beta == 0 ? NAN : (double)(tu_rand(rs) % 2001) / 1000.0 - 1.0;
  int da = g->where == 1 ? GPAR_HOST : cpu, db = g->where == 0 ? cpu : GPAR_HOST;
  int dc = g->where == 1 ? GPAR_HOST : cpu;
  g->ba = upload(eng, da, g->a, g->na, g->es);
  g->bb = upload(eng, db, g->b, g->nb, g->es);
  g->bc = upload(eng, dc, g->c0, g->nc, g->es);
}

static void submit(gcase *g) {
  gpar_trans ta = g->ta ? GPAR_TRANS : GPAR_NO_TRANS, tb = g->tb ? GPAR_TRANS : GPAR_NO_TRANS;
  if (g->es == 4)
    g->st = gpar_sgemm(ta, tb, g->m, g->n, g->k, (float)g->alpha, g->ba, g->aoff, g->lda, g->bb, g->boff,
                       g->ldb, (float)g->beta, g->bc, g->coff, g->ldc);
  else
    g->st = gpar_dgemm(ta, tb, g->m, g->n, g->k, g->alpha, g->ba, g->aoff, g->lda, g->bb, g->boff, g->ldb,
                       g->beta, g->bc, g->coff, g->ldc);
}

/* Returns a message, or NULL when C is right. */
static const char *check(gcase *g, char *why, size_t len) {
  void *tmp = malloc(g->nc * (size_t)g->es);
  int st = gpar_read(g->bc, 0, tmp, g->nc * (size_t)g->es);
  const char *res = NULL;
  if (g->st != GPAR_OK || st != GPAR_OK) {
    snprintf(why, len, "gemm %s, read %s", gpar_status_name(g->st), gpar_status_name(st));
    free(tmp);
    return why;
  }
  from_elems(tmp, g->nc, g->es, g->got);
  free(tmp);
  double tol = g->es == 4 ? 1e-4 : 1e-12;
  for (size_t idx = 0; idx < g->nc && !res; idx++) {
    size_t rel = idx - g->coff;
    int inside = idx >= g->coff && rel / (size_t)g->ldc < (size_t)g->n && (int)(rel % (size_t)g->ldc) < g->m;
    if (!inside) {
      if (g->got[idx] != SENTINEL) {
        snprintf(why, len, "element %zu outside C changed: %g", idx, g->got[idx]);
        res = why;
      }
      continue;
    }
    int i = (int)(rel % (size_t)g->ldc), j = (int)(rel / (size_t)g->ldc);
    if (g->sample > 1 && tu_mix(idx) % (uint64_t)g->sample && !(i == g->m - 1 && j == g->n - 1)) continue;
    double absum;
    double ab = tu_ref_elem(g->ta, g->tb, i, j, g->k, g->a + g->aoff, g->lda, g->b + g->boff, g->ldb, &absum);
    double c0 = g->beta == 0 ? 0 : g->c0[idx];
    double want = g->alpha * ab + g->beta * c0;
    double scale = fabs(g->alpha) * absum + fabs(g->beta * c0) + 1e-30;
    if (!(fabs(g->got[idx] - want) <= tol * scale)) {
      snprintf(why, len, "C(%d,%d) = %.17g, want %.17g", i, j, g->got[idx], want);
      res = why;
    }
  }
  return res;
}

int main(void) {
  static const int shapes[][3] = {{1, 1, 1}, {7, 7, 7}, {33, 33, 33}, {65, 17, 9}, {9, 65, 17}};
  static const double ab[][2] = {{1.0, 0.0}, {0.5, 2.0}, {-1.25, 1.0}, {0.0, -0.5}};
  /* large: {es, ta, tb, m, n, k, sample} */
  static const int large[][7] = {{4, 0, 0, 512, 512, 512, 1}, {8, 1, 0, 512, 512, 512, 1},
                                 {4, 0, 1, 1031, 1000, 1100, 2048}, {4, 1, 1, 777, 1200, 901, 2048}};
  enum { NS = 5, NP = 4, NL = 4, NSMALL = 2 * NS * 4 * NP, NC = NSMALL + NL };
  static gcase cases[NC];
  tap_start();
  uint64_t rs = tu_seed(4242);
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 4, 0);
  int cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  if (cpu < 0) bail_out("no CPU device");
  int n = 0;
  for (int es = 4; es <= 8; es += 4)
    for (int s = 0; s < NS; s++)
      for (int t = 0; t < 4; t++)
        for (int p = 0; p < NP; p++, n++) {
          gcase *g = &cases[n];
          g->es = es;
          g->m = shapes[s][0], g->n = shapes[s][1], g->k = shapes[s][2];
          g->ta = t & 1, g->tb = t >> 1;
          g->alpha = ab[p][0], g->beta = ab[p][1];
          g->where = n % 3;
          setup(eng, cpu, g, &rs);
        }
  for (int l = 0; l < NL; l++, n++) {
    gcase *g = &cases[n];
    g->es = large[l][0], g->ta = large[l][1], g->tb = large[l][2];
    g->m = large[l][3], g->n = large[l][4], g->k = large[l][5], g->sample = large[l][6];
    g->alpha = l & 1 ? -0.75 : 1.0, g->beta = l & 2 ? 0.5 : 0.0;
    g->where = l % 3;
    setup(eng, cpu, g, &rs);
  }
  /* Everything is submitted before anything is read: independent GEMMs run side by side. */
  for (int i = 0; i < NC; i++) submit(&cases[i]);
  for (int i = 0; i < NC; i++) {
    gcase *g = &cases[i];
    char why[160];
    const char *bad = check(g, why, sizeof why);
    ok(!bad, "%cgemm %c%c %dx%dx%d alpha %g beta %g%s lda %d ldb %d ldc %d offs %zu/%zu/%zu %s%s",
       g->es == 4 ? 's' : 'd', g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n, g->k, g->alpha, g->beta,
       g->beta == 0 ? " (C was NaN)" : "", g->lda, g->ldb, g->ldc, g->aoff, g->boff, g->coff,
       g->where == 0 ? "cpu" : g->where == 1 ? "GPAR_HOST" : "mixed",
       g->sample > 1 ? " (sampled reference entries, all outside C)" : "");
    if (bad) diag("  %s", bad);
  }
  /* The same C updated twice in a row: the second GEMM reads the first one's result. */
  {
    gcase *g = &cases[2 * 4 * NP + 1]; /* a 33^3 float case with beta 2 */
    char why[160];
    memcpy(g->c0, g->got, g->nc * sizeof(double));
    submit(g);
    const char *bad = check(g, why, sizeof why);
    ok(!bad && g->m == 33, "a second sgemm into the same C accumulates on the first result");
    if (bad) diag("  %s", bad);
  }
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all");
  for (int i = 0; i < NC; i++) {
    gpar_buffer_release(cases[i].ba);
    gpar_buffer_release(cases[i].bb);
    gpar_buffer_release(cases[i].bc);
    free(cases[i].a), free(cases[i].b), free(cases[i].c0), free(cases[i].got);
  }
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
