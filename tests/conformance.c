/* conformance.c: one test body run on every device of every backend in the flat list (CPU,
 * OpenCL, CUDA): write/read, copies in every direction and between every device pair, fills,
 * sgemm/dgemm against a reference, cross-lane and cross-device ordering, out-of-memory,
 * user-fn natives, and injected faults in each kind of backend call. */
#include <math.h>
#include "testutil.h"

#define SZ 4096

static gpar_engine *eng;
static int ndev;
static uint64_t rs;

static void randfill(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)tu_rand(&rs);
}

static gpar_buffer mk(int dev, size_t bytes) { return tu_buffer(eng, dev, bytes); }

/* Read a whole buffer and compare it with its shadow. */
static int same(gpar_buffer b, const unsigned char *shadow, size_t n, const char *what) {
  return tu_same(b, shadow, n, what);
}

static void test_rw_copy_fill(int d, const tu_devinfo *info) {
  static unsigned char sx[SZ], sy[SZ], sh[SZ], sh2[SZ], pat[SZ], out[SZ];
  gpar_buffer x = mk(d, SZ), y = mk(d, SZ), h = mk(GPAR_HOST, SZ), h2 = mk(GPAR_HOST, SZ);
  size_t bytes = 0;
  int dv = -99, st;

  st = gpar_buffer_query(x, &bytes, &dv);
  ok(st == GPAR_OK && bytes == SZ && dv == d, "dev %d: buffer_query: %zu bytes on %d", d, bytes, dv);
  int hostmem = info->backend_id == GPAR_BACKEND_HOST;
  ok((gpar_buffer_host_ptr(x) != NULL) == hostmem && gpar_buffer_host_ptr(h) != NULL &&
         gpar_buffer_native(x) != NULL,
     "dev %d: host_ptr only for host memory, native always", d);

  /* write/read with offsets */
  memset(sx, 0x11, SZ);
  randfill(pat, SZ);
  gpar_fill(x, 0, SZ, 0x11);
  is_status(gpar_write(x, 13, pat, 1000), GPAR_OK, "write at an offset");
  memcpy(sx + 13, pat, 1000);
  memset(out, 0, SZ);
  st = gpar_read(x, 100, out, 50);
  ok(st == GPAR_OK && !memcmp(out, pat + 87, 50), "dev %d: read at an offset", d);
  ok(same(x, sx, SZ, "x"), "dev %d: write/read round trip leaves the rest untouched", d);

  /* copies, all chained without waits, checked at the end */
  randfill(sh, SZ);
  randfill(sh2, SZ);
  randfill(sy, SZ);
  gpar_write(h, 0, sh, SZ);
  gpar_write(h2, 0, sh2, SZ);
  gpar_write(y, 0, sy, SZ);
  gpar_copy(x, 7, h, 33, 777); /* host -> dev */
  memcpy(sx + 7, sh + 33, 777);
  gpar_copy(h, 101, x, 5, 555); /* dev -> host */
  memcpy(sh + 101, sx + 5, 555);
  gpar_copy(y, 3, x, 900, 400); /* dev -> dev, same device */
  memcpy(sy + 3, sx + 900, 400);
  gpar_copy(x, 2048, x, 1, 1500); /* within one buffer, disjoint */
  memcpy(sx + 2048, sx + 1, 1500);
  gpar_copy(h2, 9, h, 100, 3000); /* host -> host */
  memcpy(sh2 + 9, sh + 100, 3000);
  gpar_fill(y, 1001, 77, 0xab); /* fill at an offset */
  memset(sy + 1001, 0xab, 77);
  gpar_copy(h, 0, y, 990, 100); /* the fill, seen from the host */
  memcpy(sh, sy + 990, 100);
  ok(same(x, sx, SZ, "x"), "dev %d: host->dev copy and copy within a buffer", d);
  ok(same(y, sy, SZ, "y"), "dev %d: dev->dev copy and fill with offsets", d);
  ok(same(h, sh, SZ, "h"), "dev %d: dev->host copies", d);
  ok(same(h2, sh2, SZ, "h2"), "dev %d: host->host copy", d);

  /* to and from every other device */
  for (int e = 0; e < ndev; e++) {
    if (e == d) continue;
    static unsigned char sz_[SZ];
    tu_devinfo oi;
    tu_device_info(eng, e, &oi);
    gpar_buffer z = mk(e, SZ);
    randfill(sz_, SZ);
    gpar_write(z, 0, sz_, SZ);
    st = gpar_copy(z, 17, x, 29, 1234); /* d -> e */
    memcpy(sz_ + 17, sx + 29, 1234);
    gpar_copy(x, 3000, z, 10, 1000); /* e -> d, reading what was just copied */
    memcpy(sx + 3000, sz_ + 10, 1000);
    ok(st == GPAR_OK && same(z, sz_, SZ, "z") && same(x, sx, SZ, "x"),
       "dev %d (%s) <-> dev %d (%s): copies both ways", d, info->backend, e, oi.backend);
    gpar_buffer_release(z);
  }

  /* write after read: the copy out must see the old contents, the fill the new */
  gpar_copy(h, 0, x, 0, SZ);
  gpar_fill(x, 0, SZ, 0xcd);
  ok(same(h, sx, SZ, "h"), "dev %d: a fill right after a copy out does not overtake it", d);
  memset(sx, 0xcd, SZ);
  ok(same(x, sx, SZ, "x"), "dev %d: ... and then lands", d);

  /* the same with 8 MB, where a missing dependency has a wide window */
  {
    size_t big = (size_t)8 << 20;
    gpar_buffer bx = mk(d, big), bh = mk(GPAR_HOST, big);
    unsigned char *v = malloc(big), *w = malloc(big);
    for (size_t i = 0; i < big; i++) v[i] = (unsigned char)(i * 7 + (i >> 12));
    gpar_write(bx, 0, v, big);
    gpar_copy(bh, 0, bx, 0, big);
    gpar_fill(bx, 0, big, 0);
    gpar_write(bx, big / 2, v, 4096);
    st = gpar_read(bh, 0, w, big);
    ok(st == GPAR_OK && !memcmp(v, w, big), "dev %d: 8 MB copy out, then fill: copy holds the old data", d);
    gpar_buffer_release(bx);
    gpar_buffer_release(bh);
    free(v), free(w);
  }
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all after copies");
  gpar_buffer_release(x);
  gpar_buffer_release(y);
  gpar_buffer_release(h);
  gpar_buffer_release(h2);
}

/* One GEMM of the given precision on device d, checked through a copy to GPAR_HOST memory. */
static void gemm_case(int d, int es, int ta, int tb, double alpha, double beta) {
  const int m = 33, n = 65, k = 17;
  int ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
  int lda = ra + 1, ldb = rb + 2, ldc = m + 3;
  size_t aoff = 2, boff = 1, coff = 5;
  size_t na = aoff + (size_t)lda * ca, nb = boff + (size_t)ldb * cb, nc = coff + (size_t)ldc * n;
  double *a = malloc(na * 8), *b = malloc(nb * 8), *c = malloc(nc * 8);
  void *ta_ = malloc(na * es), *tb_ = malloc(nb * es), *tc_ = malloc(nc * es);
  for (size_t i = 0; i < na; i++) a[i] = (double)(tu_rand(&rs) % 2001) / 1000 - 1;
  for (size_t i = 0; i < nb; i++) b[i] = (double)(tu_rand(&rs) % 2001) / 1000 - 1;
  for (size_t i = 0; i < nc; i++) c[i] = beta == 0 ? NAN : (double)(tu_rand(&rs) % 2001) / 1000 - 1;
  for (size_t i = 0; i < na; i++) es == 4 ? (void)(((float *)ta_)[i] = (float)a[i]) : (void)(((double *)ta_)[i] = a[i]);
  for (size_t i = 0; i < nb; i++) es == 4 ? (void)(((float *)tb_)[i] = (float)b[i]) : (void)(((double *)tb_)[i] = b[i]);
  for (size_t i = 0; i < nc; i++) es == 4 ? (void)(((float *)tc_)[i] = (float)c[i]) : (void)(((double *)tc_)[i] = c[i]);
  gpar_buffer A = mk(d, na * es), B = mk(d, nb * es), C = mk(d, nc * es), H = mk(GPAR_HOST, nc * es);
  gpar_write(A, 0, ta_, na * es);
  gpar_write(B, 0, tb_, nb * es);
  gpar_write(C, 0, tc_, nc * es);
  gpar_trans TA = ta ? GPAR_TRANS : GPAR_NO_TRANS, TB = tb ? GPAR_TRANS : GPAR_NO_TRANS;
  int st = es == 4 ? gpar_sgemm(TA, TB, m, n, k, (float)alpha, A, aoff, lda, B, boff, ldb, (float)beta, C, coff, ldc)
                   : gpar_dgemm(TA, TB, m, n, k, alpha, A, aoff, lda, B, boff, ldb, beta, C, coff, ldc);
  char name[128];
  snprintf(name, sizeof name, "dev %d: %cgemm %c%c %dx%dx%d alpha %g beta %g", d, es == 4 ? 's' : 'd',
           ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, beta);
  if (es == 8 && st == GPAR_ENOTSUP) {
    printf("ok %d # SKIP %s: no fp64 on this device\n", ++tap_count, name);
  } else {
    /* ordering across lanes: the copy to host memory must see the GEMM's output */
    int cst = gpar_copy(H, 0, C, 0, nc * es);
    int wst = gpar_wait(H);
    const void *hp = gpar_buffer_host_ptr(H);
    char why[160] = "";
    if (st != GPAR_OK || cst != GPAR_OK || wst != GPAR_OK || !hp)
      snprintf(why, sizeof why, "gemm %s, copy %s, wait %s (%s)", gpar_status_name(st), gpar_status_name(cst),
               gpar_status_name(wst), gpar_last_error());
    double tol = es == 4 ? 1e-4 : 1e-12;
    for (size_t idx = 0; idx < nc && !why[0]; idx++) {
      double got = es == 4 ? ((const float *)hp)[idx] : ((const double *)hp)[idx];
      size_t rel = idx - coff;
      int inside = idx >= coff && (int)(rel % ldc) < m;
      if (!inside) {
        double want = es == 4 ? (double)(float)c[idx] : c[idx];
        if (!(got == want || (isnan(got) && isnan(want))))
          snprintf(why, sizeof why, "element %zu outside C changed", idx);
        continue;
      }
      int i = (int)(rel % ldc), j = (int)(rel / ldc);
      double absum, ab = tu_ref_elem(ta, tb, i, j, k, a + aoff, lda, b + boff, ldb, &absum);
      if (es == 4) { /* the reference from the float-rounded inputs */
        double s = 0;
        absum = 0;
        for (int p = 0; p < k; p++) {
          double x = (float)(ta ? a[aoff + p + (size_t)i * lda] : a[aoff + i + (size_t)p * lda]);
          double y = (float)(tb ? b[boff + j + (size_t)p * ldb] : b[boff + p + (size_t)j * ldb]);
          s += x * y;
          absum += fabs(x * y);
        }
        ab = s;
      }
      double c0 = beta == 0 ? 0 : (es == 4 ? (double)(float)c[idx] : c[idx]);
      double want = alpha * ab + beta * c0;
      if (!(fabs(got - want) <= tol * (fabs(alpha) * absum + fabs(beta * c0) + 1e-30)))
        snprintf(why, sizeof why, "C(%d,%d) = %.10g, want %.10g", i, j, got, want);
    }
    ok(!why[0], "%s", name);
    if (why[0]) diag("  %s", why);
  }
  gpar_buffer_release(A);
  gpar_buffer_release(B);
  gpar_buffer_release(C);
  gpar_buffer_release(H);
  free(a), free(b), free(c), free(ta_), free(tb_), free(tc_);
}

static void test_gemm(int d) {
  gemm_case(d, 4, 0, 0, 1.0, 0.0);
  gemm_case(d, 4, 1, 0, 0.5, -1.0);
  gemm_case(d, 4, 0, 1, -2.0, 0.5);
  gemm_case(d, 4, 1, 1, 1.5, 1.0);
  gemm_case(d, 8, 0, 0, 1.0, 0.0);
  gemm_case(d, 8, 1, 1, -0.75, 2.0);
}

/* A chain across two devices with no wait in between: sgemm on d, its C copied to e, an sgemm
 * there reading it, the result copied back to d and then to host memory. */
static void test_pipeline(int d, int e) {
  enum { M = 33, K = 17 }; /* C1 = A1 (MxK) * B1 (KxM); C2 = C1 (MxM) * B2 (MxK) */
  static float a1[M * K], b1[K * M], b2[M * K], out[M * K];
  static double c1[M * M], c2[M * K];
  for (int i = 0; i < M * K; i++) a1[i] = (float)(tu_rand(&rs) % 9) - 4, b1[i] = (float)(tu_rand(&rs) % 7) - 3,
                                 b2[i] = (float)(tu_rand(&rs) % 5) - 2;
  for (int j = 0; j < M; j++)
    for (int i = 0; i < M; i++) {
      double s = 0;
      for (int p = 0; p < K; p++) s += (double)a1[i + p * M] * b1[p + j * K];
      c1[i + j * M] = s;
    }
  for (int j = 0; j < K; j++)
    for (int i = 0; i < M; i++) {
      double s = 0;
      for (int p = 0; p < M; p++) s += c1[i + p * M] * b2[p + j * M];
      c2[i + j * M] = s;
    }
  gpar_buffer A1 = mk(d, sizeof a1), B1 = mk(d, sizeof b1), C1 = mk(d, sizeof c1 / 2);
  gpar_buffer X = mk(e, sizeof c1 / 2), B2 = mk(e, sizeof b2), C2 = mk(e, sizeof out);
  gpar_buffer Y = mk(d, sizeof out), H = mk(GPAR_HOST, sizeof out);
  int st[8];
  st[0] = gpar_write(A1, 0, a1, sizeof a1);
  st[1] = gpar_write(B1, 0, b1, sizeof b1);
  st[2] = gpar_write(B2, 0, b2, sizeof b2);
  st[3] = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, M, M, K, 1.f, A1, 0, M, B1, 0, K, 0.f, C1, 0, M);
  st[4] = gpar_copy(X, 0, C1, 0, sizeof c1 / 2);
  st[5] = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, M, K, M, 1.f, X, 0, M, B2, 0, M, 0.f, C2, 0, M);
  st[6] = gpar_copy(Y, 0, C2, 0, sizeof out);
  st[7] = gpar_copy(H, 0, Y, 0, sizeof out);
  int good = 1, wst = gpar_wait(H);
  for (int i = 0; i < 8; i++) good &= st[i] == GPAR_OK;
  if (good && wst == GPAR_OK) {
    memcpy(out, gpar_buffer_host_ptr(H), sizeof out);
    for (int i = 0; i < M * K && good; i++)
      if (out[i] != (float)c2[i]) { /* small integers: exact */
        diag("  element %d: %g, want %g", i, out[i], c2[i]);
        good = 0;
      }
  }
  ok(good && wst == GPAR_OK, "dev %d -> dev %d: sgemm, copy, sgemm, copy back, copy to host (wait %s)", d, e,
     gpar_status_name(wst));
  gpar_buffer all[] = {A1, B1, C1, X, B2, C2, Y, H};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gpar_buffer_release(all[i]);
}

static void test_oom(int d, const tu_devinfo *info) {
  int host = info->backend_id == GPAR_BACKEND_HOST;
  gpar_buffer b = {0};
  char name[96];
  snprintf(name, sizeof name, "dev %d: a buffer of twice the device memory fails", d);
  int overcommit = 0;
  FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
  if (f) {
    overcommit = fgetc(f) == '1';
    fclose(f);
  }
  if (info->memory_bytes == 0) {
    printf("ok %d # SKIP %s: memory size unknown\n", ++tap_count, name);
  } else if (host && overcommit) {
    printf("ok %d # SKIP %s: vm.overcommit_memory=1 lets any malloc succeed\n", ++tap_count, name);
  } else {
    int st = gpar_buffer_create(eng, d, (size_t)info->memory_bytes * 2, &b);
    is_status(st, host ? GPAR_ENOMEM : GPAR_EDEVMEM, name);
    if (st == GPAR_OK) gpar_buffer_release(b);
  }
  unsigned char in[64], out[64];
  randfill(in, sizeof in);
  gpar_buffer x = mk(d, 4096);
  int s1 = gpar_write(x, 100, in, 64), s2 = gpar_read(x, 100, out, 64);
  ok(s1 == GPAR_OK && s2 == GPAR_OK && !memcmp(in, out, 64), "dev %d: a normal op right after works", d);
  gpar_buffer_release(x);
}

/* Fault injection on this device, with the statuses gpar.h documents: the failed op reports
 * GPAR_EFAULT through its output (or is refused at submit with GPAR_EFAULT, nothing enqueued),
 * a reader of that output is skipped (GPAR_EDEPFAILED), gpar_read of it returns GPAR_EDEPFAILED
 * and copies nothing, wait_all reports GPAR_EFAULT, and the engine goes on working. Every status
 * is observed, none is set by hand: with the fault not armed the check fails. */
static void fault_op(int d, const tu_devinfo *info, const char *kind) {
  static unsigned char v[SZ], got[SZ];
  int gpu = info->backend_id != GPAR_BACKEND_HOST;
  char name[96], why[256] = "";
  snprintf(name, sizeof name, "dev %d: injected '%s' fault", d, kind);
  if (!gpu && (!strcmp(kind, "event") || !strcmp(kind, "completion"))) {
    printf("ok %d # SKIP %s: the CPU device has no events\n", ++tap_count, name);
    return;
  }
  gpar_buffer x = mk(d, SZ), y = mk(d, SZ), h = mk(GPAR_HOST, SZ), n = {0};
  randfill(v, SZ);
  gpar_write(x, 0, v, SZ);
  gpar_fill(y, 0, SZ, 0);
  int st_setup = gpar_wait_all(eng);
  int st0 = gpar_fault_inject(eng, kind, 1), st1, sw = GPAR_OK, sr, swr, srd, sall;
  gpar_buffer out = y; /* the buffer the failed op writes */
  if (!strcmp(kind, "alloc")) {
    n.id = 0x5a5a; /* gpar.h: the null handle on failure */
    st1 = gpar_buffer_create(eng, d, SZ, &n);
    if (st1 != GPAR_OK && n.id != 0) snprintf(why, sizeof why, "create failed but *buf is not the null handle");
    if (st1 != GPAR_OK) n.id = 0;
    out = n;
    if (st1 == GPAR_OK) st1 = gpar_write(n, 0, v, SZ); /* a stream-ordered allocation fails at first use */
  } else if (!strcmp(kind, "copy") || !strcmp(kind, "event") || !strcmp(kind, "completion"))
    st1 = gpar_copy(y, 0, x, 0, SZ);
  else if (!strcmp(kind, "fill"))
    st1 = gpar_fill(y, 0, SZ, 0x5a);
  else if (!strcmp(kind, "gemm"))
    st1 = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, 16, 16, 16, 1.f, x, 0, 16, x, 0, 16, 0.f, y, 0, 16);
  else /* pinned: a staged write */
    st1 = gpar_write(y, 0, v, SZ);
  int refused = st1 == GPAR_EFAULT;
  if (st1 == GPAR_OK) {
    sw = gpar_wait(out);
    sr = gpar_copy(h, 0, out, 0, SZ); /* reads the failed output: skipped */
    swr = gpar_wait(h);
    memset(got, 0xee, SZ);
    srd = gpar_read(out, 0, got, SZ);
    if (!(sw == GPAR_EFAULT && sr == GPAR_OK && swr == GPAR_EDEPFAILED && srd == GPAR_EDEPFAILED))
      snprintf(why + strlen(why), sizeof why - strlen(why), " output %s (want EFAULT), reader %s/%s (want OK/EDEPFAILED), read %s (want EDEPFAILED)",
               gpar_status_name(sw), gpar_status_name(sr), gpar_status_name(swr), gpar_status_name(srd));
    else if (!tu_all_bytes(got, SZ, 0xee))
      snprintf(why + strlen(why), sizeof why - strlen(why), " read of the failed buffer copied data");
  } else if (!refused) {
    snprintf(why + strlen(why), sizeof why - strlen(why), " submit returned %s (want OK or EFAULT)", gpar_status_name(st1));
  }
  gpar_fault_inject(eng, kind, 0);
  sall = gpar_wait_all(eng);
  if (st1 == GPAR_OK && sall != GPAR_EFAULT)
    snprintf(why + strlen(why), sizeof why - strlen(why), " wait_all %s after the async failure (want EFAULT)", gpar_status_name(sall));
  int rec = gpar_copy(y, 0, x, 0, SZ) == GPAR_OK && gpar_copy(h, 0, y, 0, SZ) == GPAR_OK &&
            gpar_read(h, 0, got, SZ) == GPAR_OK && !memcmp(got, v, SZ);
  ok(st_setup == GPAR_OK && st0 == GPAR_OK && (st1 == GPAR_OK || refused) && !why[0] && rec,
     "%s: %s, wait_all %s; recovered %d", name, refused ? "refused at submit with EFAULT" : "failed through its output",
     gpar_status_name(sall), rec);
  if (why[0]) diag(" %s", why);
  gpar_wait_all(eng);
  gpar_buffer_release(x);
  gpar_buffer_release(y);
  gpar_buffer_release(h);
  if (n.id) gpar_buffer_release(n);
}

static void test_faults(int d, const tu_devinfo *info) {
  static const char *const kinds[] = {"copy", "fill", "gemm", "alloc", "pinned", "event", "completion"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) fault_op(d, info, kinds[i]);
}

typedef struct natrec {
  gpar_native n;
  char backend[16];
  atomic_int ran;
} natrec;

static int nat_fn(const gpar_native *nat, void *arg) {
  natrec *r = arg;
  r->n = *nat;
  snprintf(r->backend, sizeof r->backend, "%s", nat->backend ? nat->backend : "(null)");
  atomic_store(&r->ran, 1);
  return GPAR_OK;
}

static void test_native(int d, const tu_devinfo *info) {
  natrec r;
  memset(&r, 0, sizeof r);
  gpar_buffer x = mk(d, 256);
  int st = gpar_submit(eng, d, nat_fn, &r, NULL, 0, &x, 1);
  int wst = gpar_wait(x);
  int gpu = info->backend_id != GPAR_BACKEND_HOST;
  ok(st == GPAR_OK && wst == GPAR_OK && atomic_load(&r.ran), "dev %d: user fn ran (%s, %s)", d,
     gpar_status_name(st), gpar_status_name(wst));
  ok(!strcmp(r.backend, info->backend) && r.n.device == d && r.n.backend_index == info->backend_index,
     "dev %d: native names backend %s, device %d, backend index %d", d, r.backend, r.n.device,
     r.n.backend_index);
  ok(gpu ? r.n.stream != NULL : r.n.stream == NULL, "dev %d: native stream %s", d,
     gpu ? "non-NULL on a GPU backend" : "NULL on the CPU");
  ok((info->backend_id == GPAR_BACKEND_OPENCL) == (r.n.context != NULL) &&
         (info->backend_id == GPAR_BACKEND_CUDA) == (r.n.blas != NULL),
     "dev %d: native context only on OpenCL, blas only on CUDA", d);
  gpar_buffer_release(x);
}

int main(void) {
  tap_start();
  rs = tu_seed(31337);
  eng = tu_engine(0, 0, 0);
  ndev = gpar_device_count(eng);
  if (ndev < 1) bail_out("no device");
  for (int d = 0; d < ndev; d++) {
    tu_devinfo info;
    double t0 = gpar_now();
    is_status(tu_device_info(eng, d, &info), GPAR_OK, "device_info");
    diag("device %d: %s %s (%s), %llu MB, peer mask %#llx", d, info.backend, info.name, info.vendor,
         (unsigned long long)(info.memory_bytes >> 20), (unsigned long long)info.peer_mask);
    test_rw_copy_fill(d, &info);
    test_gemm(d);
    for (int e = 0; e < ndev; e++)
      if (e != d) test_pipeline(d, e);
    test_oom(d, &info);
    test_native(d, &info);
    is_status(gpar_wait_all(eng), GPAR_OK, "wait_all");
    diag("device %d done in %.2f s", d, gpar_now() - t0);
  }
  gpar_stats st;
  gpar_stats_get(eng, &st);
  ok(st.ops_failed == 0 && st.ops_in_flight == 0 && st.buffers_live == 0,
     "counters: failed %llu, in flight %llu, buffers live %llu", (unsigned long long)st.ops_failed,
     (unsigned long long)st.ops_in_flight, (unsigned long long)st.buffers_live);
  for (int d = 0; d < ndev; d++) {
    tu_devinfo info;
    tu_device_info(eng, d, &info);
    test_faults(d, &info);
  }
  gpar_stats_get(eng, &st);
  ok(st.ops_in_flight == 0 && st.buffers_live == 0, "after faults: in flight %llu, buffers live %llu",
     (unsigned long long)st.ops_in_flight, (unsigned long long)st.buffers_live);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
