/* array_alias.c: every call that takes several operands with all of them in ONE buffer, on
 * every device of every backend (and GPAR_HOST memory): array ops (unary, binary, broadcasts per
 * row and per column, reductions of ranges and matrices in one and two passes, softmax
 * cross-entropy, argmax), elementwise maps, and AXPY, SCAL, DOT and GEMV. Disjoint ranges in
 * either order (the output before and after each input), exact in place where gpar.h allows
 * it; each result against a plain C reference over the same elements, every other element of
 * the buffer unchanged. Ranges that overlap without being equal are refused with GPAR_EALIAS,
 * nothing enqueued. f32 and f16 (f32 and f64 for the BLAS calls). Values are halves in [-4, 4],
 * so that sums and products are exact in every type. Guards the GPU path's choice of a kernel
 * variant by the operands' ranges, not their buffers. Mutant: gpu_unary's in-place test back to
 * `c->op[0].b == c->op[1].b` (same buffer) fails "unary neg f32, y after x" on OpenCL. */
#include <math.h>
#include <stdarg.h>
#include "array_ref.h"
#include "testutil.h"

static gpar_engine *eng;
static int cur_dev;
static const char *cur_name;
static const int dtypes[2] = {GPAR_FLOAT, GPAR_HALF};

/* -------------------------------------------------------------- one buffer and its image */

/* A buffer of n elements of dt on the device under test, what was written into it, and what
 * it must hold after a call: the bytes of every element compared exactly (exp), or, for an
 * element a call writes as a float (isout), a value within a tolerance (want). */
typedef struct img {
  int dt;
  size_t n, es;
  gpar_buffer b;
  unsigned char *h, *exp, *isout;
  double *want;
} img;

static double pattern(size_t i) { return (double)((int)((i * 7 + 3) % 17) - 8) / 2; }

static img img_new(int dt, size_t n) {
  img m = {dt,
           n,
           ar_size(dt),
           {0, 0},
           malloc(n * ar_size(dt)),
           malloc(n * ar_size(dt)),
           calloc(n, 1),
           calloc(n, sizeof(double))};
  if (!m.h || !m.exp || !m.isout || !m.want) bail_out("out of memory");
  for (size_t i = 0; i < n; i++) ar_store(dt, m.h, i, pattern(i));
  return m;
}
/* Int32 element k of the buffer (labels, indices) set to v before the upload. */
static void img_i32(img *m, size_t k, int32_t v) { memcpy(m->h + k * 4, &v, 4); }
/* Write the image into a new buffer; the expected bytes start as what was written. */
static void img_upload(img *m) {
  memcpy(m->exp, m->h, m->n * m->es);
  m->b = tu_buffer(eng, cur_dev, m->n * m->es);
  if (gpar_write(m->b, 0, m->h, m->n * m->es) != GPAR_OK) bail_out("gpar_write");
}
static double in(const img *m, size_t i) { return ar_load(m->dt, m->h, i); }
static void expect(img *m, size_t i, double v) {
  m->want[i] = ar_round(m->dt, v);
  m->isout[i] = 1;
}
static void expect_i32(img *m, size_t k, int32_t v) { memcpy(m->exp + k * 4, &v, 4); }

/* The buffer against the image; a diagnostic names the first wrong element. */
static int img_check(const img *m, double rel, double abs, const char *what) {
  unsigned char *got = malloc(m->n * m->es);
  int st = got ? gpar_read(m->b, 0, got, m->n * m->es) : GPAR_ENOMEM, good = st == GPAR_OK;
  if (st) diag("  %s: gpar_read %s (%s)", what, gpar_status_name(st), gpar_last_error());
  for (size_t i = 0; i < m->n && good; i++) {
    double g = ar_load(m->dt, got, i);
    if (m->isout[i] ? !ar_close(g, m->want[i], rel, abs) : memcmp(got + i * m->es, m->exp + i * m->es, m->es) != 0) {
      good = 0;
      diag("  %s: element %zu is %.9g, want %.9g%s", what, i, g, m->isout[i] ? m->want[i] : ar_load(m->dt, m->exp, i),
           m->isout[i] ? "" : " (not an output, or an int32 there)");
    }
  }
  free(got);
  return good;
}
static void img_free(img *m) {
  gpar_buffer_release(m->b);
  free(m->h), free(m->exp), free(m->isout), free(m->want);
}

static const char *say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *say(const char *fmt, ...) {
  static char s[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s, sizeof s, fmt, ap);
  va_end(ap);
  return s;
}

static uint64_t submitted(void) {
  gpar_stats s;
  gpar_stats_get(eng, &s);
  return s.ops_submitted;
}

/* A call that must succeed: its status and the buffer against the image (GPAR_ENOTSUP: skipped). */
static void finish(img *m, int st, double rel, double abs, const char *what) {
  if (st == GPAR_ENOTSUP) {
    printf("ok %d # SKIP %s: %s: %s\n", ++tap_count, cur_name, what, gpar_last_error());
  } else {
    if (st) diag("  %s: %s (%s)", what, gpar_status_name(st), gpar_last_error());
    ok(st == GPAR_OK && img_check(m, rel, abs, what), "%s: %s", cur_name, what);
  }
  img_free(m);
}
/* A call that must be refused (GPAR_EALIAS) with nothing enqueued and the buffer unchanged;
 * before: submitted() just before the call. */
static void refused(img *m, int st, uint64_t before, const char *what) {
  uint64_t after = submitted();
  if (st != GPAR_EALIAS) diag("  %s: %s (%s)", what, gpar_status_name(st), gpar_last_error());
  ok(st == GPAR_EALIAS && after == before && img_check(m, 0, 0, what),
     "%s: %s refused with GPAR_EALIAS, nothing enqueued", cur_name, what);
  img_free(m);
}

/* Exact within a storage ulp (the values are exact; a wrong element is far off). */
static double tol(int dt) { return 16 * ar_eps_compute(dt) + ar_eps_store(dt); }
/* The elements of an m x n matrix at off (leading dimension ld): its last one + 1. */
static size_t ext(int m, int n, int ld) { return (size_t)(n - 1) * (size_t)ld + (size_t)m; }

/* -------------------------------------------------------------- elementwise */

static void t_unary(int dt) {
  const size_t n = 1000;
  static const struct {
    const char *what;
    size_t x, y;
  } L[] = {{"y after x", 0, 1000}, {"y before x", 1003, 1}, {"in place", 5, 5}};
  for (int k = 0; k < 3; k++) {
    img m = img_new(dt, 2 * n + 9);
    img_upload(&m);
    for (size_t i = 0; i < n; i++) expect(&m, L[k].y + i, -in(&m, L[k].x + i));
    int st = gpar_unary(GPAR_UN_NEG, dt, n, m.b, L[k].x, m.b, L[k].y);
    finish(&m, st, tol(dt), 0, say("unary neg %s, %s", ar_name(dt), L[k].what));
  }
  img m = img_new(dt, 2 * n);
  img_upload(&m);
  uint64_t s0 = submitted();
  refused(&m, gpar_unary(GPAR_UN_NEG, dt, n, m.b, 0, m.b, 1), s0, say("unary %s, y one element past x", ar_name(dt)));
}

static void t_binary(int dt) {
  const size_t n = 1000;
  static const struct {
    const char *what;
    size_t a, b, c;
  } L[] = {{"a, b, c", 0, 1000, 2000}, {"c, a, b", 1001, 2002, 0}, {"b, c, a", 2002, 0, 1001},
           {"a, c, b", 0, 2003, 1001}, {"c is a", 7, 1007, 7},     {"c is b", 1007, 7, 7},
           {"a is b", 3, 3, 1003},     {"a, b, c one", 2, 2, 2}};
  for (int k = 0; k < 8; k++) {
    img m = img_new(dt, 3 * n + 9);
    img_upload(&m);
    for (size_t i = 0; i < n; i++) expect(&m, L[k].c + i, in(&m, L[k].a + i) - in(&m, L[k].b + i));
    int st = gpar_binary(GPAR_BIN_SUB, dt, n, m.b, L[k].a, m.b, L[k].b, m.b, L[k].c);
    finish(&m, st, tol(dt), 0, say("binary sub %s, %s", ar_name(dt), L[k].what));
  }
  static const size_t bad[2][3] = {{0, 1000, 1}, {0, 1000, 1001}};
  for (int k = 0; k < 2; k++) {
    img m = img_new(dt, 3 * n);
    img_upload(&m);
    uint64_t s0 = submitted();
    int st = gpar_binary(GPAR_BIN_SUB, dt, n, m.b, bad[k][0], m.b, bad[k][1], m.b, bad[k][2]);
    refused(&m, st, s0, say("binary %s, c one element past %s", ar_name(dt), k ? "b" : "a"));
  }
}

/* C = A - v per row or per column, A 37 x 20 (lda 40), C (ldc 39, or 40 in place). */
static void t_bcast(int dt, int axis) {
  const int M = 37, N = 20, lv = axis == GPAR_PER_ROW ? M : N;
  const size_t ea = ext(M, N, 40), ec = ext(M, N, 39);
  const size_t total = ea + ec + (size_t)lv + 8;
  static const char *const what[5] = {"A, v, C", "C, A, v", "v, C, A", "A, C, v", "C is A"};
  const size_t pos[5][3] = {/* A, v, C */
                            {1, ea + 2, ea + lv + 3},
                            {ec + 1, ec + ea + 2, 0},
                            {lv + ec + 5, 2, lv + 3},
                            {0, ea + ec + 2, ea + 1},
                            {3, ea + 4, 3}};
  for (int k = 0; k < 5; k++) {
    size_t a = pos[k][0], v = pos[k][1], c = pos[k][2];
    int ldc = k == 4 ? 40 : 39;
    img m = img_new(dt, total);
    img_upload(&m);
    for (int j = 0; j < N; j++)
      for (int i = 0; i < M; i++)
        expect(&m, c + i + (size_t)j * ldc,
               in(&m, a + i + (size_t)j * 40) - in(&m, v + (axis == GPAR_PER_ROW ? i : j)));
    int st = gpar_binary_bcast(GPAR_BIN_SUB, dt, M, N, m.b, a, 40, m.b, v, axis, m.b, c, ldc);
    finish(&m, st, tol(dt), 0,
           say("bcast per %s %s, %s", axis == GPAR_PER_ROW ? "row" : "column", ar_name(dt), what[k]));
  }
  for (int k = 0; k < 2; k++) { /* v inside C; C one element past A */
    img m = img_new(dt, total);
    img_upload(&m);
    uint64_t s0 = submitted();
    int st = k ? gpar_binary_bcast(GPAR_BIN_SUB, dt, M, N, m.b, 0, 40, m.b, ea + ec, axis, m.b, 1, 40)
               : gpar_binary_bcast(GPAR_BIN_SUB, dt, M, N, m.b, 0, 40, m.b, ea + 5, axis, m.b, ea + 1, 39);
    refused(&m, st, s0,
            say("bcast per %s %s, %s", axis == GPAR_PER_ROW ? "row" : "column", ar_name(dt),
                k ? "C one element past A" : "v inside C"));
  }
}

/* -------------------------------------------------------------- reductions, softmax, argmax */

static void t_reduce_range(int dt) {
  static const size_t counts[2] = {100, 10000}; /* one pass; two passes */
  for (int c = 0; c < 2; c++) {
    const size_t n = counts[c];
    for (int k = 0; k < 2; k++) { /* out after x; out before x */
      size_t x = k ? 3 : 0, o = k ? 1 : n + 2;
      img m = img_new(dt, n + 5);
      img_upload(&m);
      double s = 0;
      for (size_t i = 0; i < n; i++) s += in(&m, x + i);
      expect(&m, o, s);
      int st = gpar_reduce_range(GPAR_SUM, dt, n, m.b, x, m.b, o);
      finish(&m, st, tol(dt), 0, say("reduce range sum %s of %zu, out %s x", ar_name(dt), n, k ? "before" : "after"));
    }
    img m = img_new(dt, n + 5);
    img_upload(&m);
    uint64_t s0 = submitted();
    refused(&m, gpar_reduce_range(GPAR_SUM, dt, n, m.b, 0, m.b, n / 2), s0,
            say("reduce range %s of %zu, out inside x", ar_name(dt), n));
  }
}

/* A 37 x 70 (lda 40) per row (two passes over column chunks) and per column. */
static void t_reduce_matrix(int dt, int axis) {
  const int M = 37, N = 70, no = axis == GPAR_PER_ROW ? M : N;
  const size_t ea = ext(M, N, 40), total = ea + (size_t)no + 4;
  const char *ax = axis == GPAR_PER_ROW ? "row" : "column";
  for (int k = 0; k < 2; k++) {
    size_t a = k ? (size_t)no + 2 : 0, o = k ? 1 : ea + 3;
    img m = img_new(dt, total);
    img_upload(&m);
    for (int r = 0; r < no; r++) {
      double s = 0;
      for (int t = 0; t < (axis == GPAR_PER_ROW ? N : M); t++)
        s += axis == GPAR_PER_ROW ? in(&m, a + r + (size_t)t * 40) : in(&m, a + t + (size_t)r * 40);
      expect(&m, o + r, s);
    }
    int st = gpar_reduce_matrix(GPAR_SUM, dt, M, N, m.b, a, 40, axis, m.b, o);
    finish(&m, st, tol(dt), 0, say("reduce matrix per %s %s, out %s A", ax, ar_name(dt), k ? "before" : "after"));
  }
  img m = img_new(dt, total);
  img_upload(&m);
  uint64_t s0 = submitted();
  refused(&m, gpar_reduce_matrix(GPAR_SUM, dt, M, N, m.b, 0, 40, axis, m.b, ea - 3), s0,
          say("reduce matrix per %s %s, out over A's end", ax, ar_name(dt)));
}

/* Reference softmax cross-entropy of column j into loss and G (either may be absent). */
static void softmax_ref(img *m, int K, size_t z, int ldz, size_t lab, int j, size_t loss, size_t g, int ldg,
                        int with_loss, int with_g) {
  double mx = -INFINITY, s = 0, sc = 0.5;
  int32_t y;
  memcpy(&y, m->h + (lab + (size_t)j) * 4, 4);
  for (int i = 0; i < K; i++) mx = ar_max(mx, in(m, z + i + (size_t)j * ldz));
  for (int i = 0; i < K; i++) s += exp(in(m, z + i + (size_t)j * ldz) - mx);
  if (with_loss) expect(m, loss + (size_t)j, log(s) - (in(m, z + (size_t)y + (size_t)j * ldz) - mx));
  for (int i = 0; i < K && with_g; i++)
    expect(m, g + i + (size_t)j * ldg, sc * (exp(in(m, z + i + (size_t)j * ldz) - mx) / s - (i == y)));
}

/* Z 10 x 33 (ldz 12), labels (int32), loss and G 10 x 33 (ldg 11) in one buffer. Offsets in
 * elements of dt; labels' (int32) at an even element for f16. */
static void t_softmax(int dt) {
  const int K = 10, N = 33, per = 4 / (int)ar_size(dt); /* dt elements per int32 */
  const size_t ez = ext(K, N, 12), eg = ext(K, N, 11), el = (size_t)N * per;
  const size_t total = ez + eg + el + N + 16;
  static const char *const what[4] = {"Z, labels, loss, G", "G, loss, labels, Z", "loss only, before Z",
                                      "G only, after Z"};
  for (int k = 0; k < 4; k++) {
    size_t z, lab, loss = 0, g = 0; /* lab: in dt elements, even */
    if (k == 0)
      z = 1, lab = ez + 3, loss = lab + el + 1, g = loss + N + 1;
    else if (k == 1)
      g = 0, loss = eg + 1, lab = eg + N + 3, z = lab + el + 1;
    else if (k == 2)
      loss = 1, z = N + 2, lab = z + ez + 1;
    else
      z = 0, lab = ez + 1, g = lab + el + 1;
    lab += lab % 2;
    int wl = k != 3, wg = k != 2;
    img m = img_new(dt, total);
    for (int j = 0; j < N; j++) img_i32(&m, lab / per + (size_t)j, (int32_t)((j * 3) % K));
    img_upload(&m);
    for (int j = 0; j < N; j++) softmax_ref(&m, K, z, 12, lab / per, j, loss, g, 11, wl, wg);
    int st = gpar_softmax_xent(dt, K, N, m.b, z, 12, m.b, lab / per, 0.5, wl ? m.b : (gpar_buffer){0, 0}, loss,
                               wg ? m.b : (gpar_buffer){0, 0}, g, 11);
    double rel = 64 * ar_eps_compute(dt) + 2 * ar_eps_store(dt);
    finish(&m, st, rel, rel, say("softmax xent %s, %s", ar_name(dt), what[k]));
  }
  for (int k = 0; k < 2; k++) { /* loss inside G; G one element past Z */
    img m = img_new(dt, total);
    size_t lab = (ez + eg + 4) & ~(size_t)1;
    for (int j = 0; j < N; j++) img_i32(&m, lab / per + (size_t)j, 0);
    img_upload(&m);
    uint64_t s0 = submitted();
    int st = k ? gpar_softmax_xent(dt, K, N, m.b, 0, 12, m.b, lab / per, 0.5, (gpar_buffer){0, 0}, 0, m.b, 1, 11)
               : gpar_softmax_xent(dt, K, N, m.b, 0, 12, m.b, lab / per, 0.5, m.b, ez + 5, m.b, ez + 1, 11);
    refused(&m, st, s0, say("softmax xent %s, %s", ar_name(dt), k ? "G one element past Z" : "loss inside G"));
  }
}

/* A 37 x 20 (lda 40) and idx (int32) in one buffer. */
static void t_argmax(int dt) {
  const int M = 37, N = 20, per = 4 / (int)ar_size(dt);
  const size_t ea = ext(M, N, 40), total = ea + (size_t)N * per + 8;
  for (int k = 0; k < 3; k++) { /* idx after A; idx before A; idx inside A (refused) */
    size_t a = k == 1 ? (size_t)N * per + 2 : 0, idx = k == 0 ? (ea + 2) & ~(size_t)1 : k == 1 ? 0 : 4;
    img m = img_new(dt, total);
    img_upload(&m);
    for (int j = 0; j < N && k < 2; j++) {
      int best = 0;
      for (int i = 1; i < M; i++)
        if (in(&m, a + i + (size_t)j * 40) > in(&m, a + best + (size_t)j * 40)) best = i;
      expect_i32(&m, idx / per + (size_t)j, best);
    }
    uint64_t s0 = submitted();
    int st = gpar_argmax(dt, M, N, m.b, a, 40, m.b, idx / per);
    if (k < 2)
      finish(&m, st, 0, 0, say("argmax %s, idx %s A", ar_name(dt), k ? "before" : "after"));
    else
      refused(&m, st, s0, say("argmax %s, idx inside A", ar_name(dt)));
  }
}

/* -------------------------------------------------------------- elementwise maps */

/* Maps of type dt: y = 2x - 1; c = a - b; y = y - x (y inout). */
static void t_map(int dt) {
  const char *t = ar_name(dt);
  gpar_map mp[3];
  char p[3][96];
  snprintf(p[0], sizeof p[0], "in %s x, out %s y", t, t);
  snprintf(p[1], sizeof p[1], "in %s a, in %s b, out %s c", t, t, t);
  snprintf(p[2], sizeof p[2], "in %s x, inout %s y", t, t);
  if (gpar_map_create(eng, "alias_lin", p[0], "y = 2 * x - 1", &mp[0]) ||
      gpar_map_create(eng, "alias_sub", p[1], "c = a - b", &mp[1]) ||
      gpar_map_create(eng, "alias_acc", p[2], "y = y - x", &mp[2]))
    bail_out("gpar_map_create");
  const size_t n = 500, es = ar_size(dt);
  static const struct {
    int map;
    const char *what;
    size_t o[3];
  } L[] = {{0, "y after x", {0, 500}},       {0, "y before x", {503, 1}},      {0, "y is x", {4, 4}},
           {1, "a, b, c", {0, 500, 1000}},   {1, "c, a, b", {501, 1002, 0}},   {1, "c is b", {1002, 2, 2}},
           {2, "inout y after x", {0, 501}}, {2, "inout y before x", {502, 0}}};
  for (int k = 0; k < 8; k++) {
    const size_t *o = L[k].o;
    img m = img_new(dt, 3 * n + 9);
    img_upload(&m);
    for (size_t i = 0; i < n; i++) {
      double x = in(&m, o[0] + i), y = in(&m, o[1] + i);
      if (L[k].map == 0)
        expect(&m, o[1] + i, 2 * x - 1);
      else if (L[k].map == 1)
        expect(&m, o[2] + i, x - y);
      else
        expect(&m, o[1] + i, y - x);
    }
    gpar_arg a[3] = {gpar_arg_buffer(m.b, o[0] * es), gpar_arg_buffer(m.b, o[1] * es), gpar_arg_buffer(m.b, o[2] * es)};
    int st = gpar_map_launch(mp[L[k].map], n, a, L[k].map == 1 ? 3 : 2);
    finish(&m, st, tol(dt), 0, say("map %s %s, %s", p[L[k].map], t, L[k].what));
  }
  for (int k = 0; k < 2; k++) { /* y one element past x; c one element past b */
    img m = img_new(dt, 3 * n + 9);
    img_upload(&m);
    gpar_arg a[3] = {gpar_arg_buffer(m.b, 0), gpar_arg_buffer(m.b, (k ? n : 1) * es),
                     gpar_arg_buffer(m.b, (n + 1) * es)};
    uint64_t s0 = submitted();
    int st = gpar_map_launch(mp[k], n, a, k ? 3 : 2);
    refused(&m, st, s0, say("map %s, %s", t, k ? "c one element past b" : "y one element past x"));
  }
  for (int k = 0; k < 3; k++) gpar_map_release(mp[k]);
}

/* -------------------------------------------------------------- AXPY, SCAL, DOT, GEMV */

static void t_axpy_scal(int dbl) {
  const int dt = dbl ? GPAR_DOUBLE : GPAR_FLOAT, n = 300;
  const char *t = dbl ? "d" : "s";
  for (int k = 0; k < 4; k++) { /* y after x; y before x (incy 2); y is x (refused); y one past x (refused) */
    size_t x = k == 1 ? 2 * n + 1 : 0, y = k == 0 ? n + 3 : k == 1 ? 0 : k == 2 ? 0 : 1;
    int incy = k == 1 ? 2 : 1;
    img m = img_new(dt, 3 * n + 5);
    img_upload(&m);
    for (int i = 0; i < n && k < 2; i++)
      expect(&m, y + (size_t)i * incy, 0.5 * in(&m, x + i) + in(&m, y + (size_t)i * incy));
    uint64_t s0 = submitted();
    int st = dbl ? gpar_daxpy(n, 0.5, m.b, x, 1, m.b, y, incy) : gpar_saxpy(n, 0.5f, m.b, x, 1, m.b, y, incy);
    static const char *const what[4] = {"y after x", "y before x, incy 2", "y is x", "y one element past x"};
    if (k < 2)
      finish(&m, st, tol(dt), 0, say("%saxpy, %s", t, what[k]));
    else
      refused(&m, st, s0, say("%saxpy, %s", t, what[k]));
  }
  img m = img_new(dt, (size_t)n + 20);
  img_upload(&m);
  for (int i = 0; i < n; i++) expect(&m, 7 + (size_t)i, -2 * in(&m, 7 + (size_t)i));
  finish(&m, dbl ? gpar_dscal(n, -2, m.b, 7, 1) : gpar_sscal(n, -2, m.b, 7, 1), tol(dt), 0,
         say("%sscal inside a larger buffer", t));
}

static void t_dot(int dbl) {
  const int dt = dbl ? GPAR_DOUBLE : GPAR_FLOAT, n = 300;
  const char *t = dbl ? "d" : "s";
  static const struct {
    const char *what;
    size_t x, y, r;
  } L[] = {{"x, y, result", 0, 300, 600},
           {"result, x, y", 1, 302, 0},
           {"y is x, result after", 0, 0, 301},
           {"x and y overlap, result before", 2, 3, 0},
           {"result inside x (refused)", 0, 300, 5}};
  for (int k = 0; k < 5; k++) {
    img m = img_new(dt, 2 * (size_t)n + 5);
    img_upload(&m);
    double s = 0;
    for (int i = 0; i < n; i++) s += in(&m, L[k].x + i) * in(&m, L[k].y + i);
    if (k < 4) expect(&m, L[k].r, s);
    uint64_t s0 = submitted();
    int st = dbl ? gpar_ddot(n, m.b, L[k].x, 1, m.b, L[k].y, 1, m.b, L[k].r)
                 : gpar_sdot(n, m.b, L[k].x, 1, m.b, L[k].y, 1, m.b, L[k].r);
    if (k < 4)
      finish(&m, st, tol(dt), 0, say("%sdot, %s", t, L[k].what));
    else
      refused(&m, st, s0, say("%sdot, %s", t, L[k].what));
  }
}

/* y = A x + 0.5 y, A 13 x 9 (lda 15), plain and transposed. */
static void t_gemv(int dbl, int trans) {
  const int dt = dbl ? GPAR_DOUBLE : GPAR_FLOAT, M = 13, N = 9, lx = trans ? M : N, ly = trans ? N : M;
  const size_t ea = ext(M, N, 15), total = ea + 2 * (size_t)lx + 2 * (size_t)ly + 8;
  const char *t = dbl ? "d" : "s", *tr = trans ? "transposed" : "plain";
  for (int k = 0; k < 4; k++) { /* A, x, y; y, A, x (incx 2); x, y, A; y over A's end (refused) */
    const size_t pos[4][3] = {  /* A, x, y */
                              {0, ea + 1, ea + lx + 2},
                              {ly + 2, ly + ea + 3, 1},
                              {lx + ly + 3, 0, lx + 1},
                              {0, ea + 2, ea - 2}};
    size_t a = pos[k][0], x = pos[k][1], y = pos[k][2];
    int incx = k == 1 ? 2 : 1;
    img m = img_new(dt, total);
    img_upload(&m);
    for (int i = 0; i < ly && k < 3; i++) {
      double s = 0;
      for (int j = 0; j < lx; j++)
        s += (trans ? in(&m, a + j + (size_t)i * 15) : in(&m, a + i + (size_t)j * 15)) * in(&m, x + (size_t)j * incx);
      expect(&m, y + i, s + 0.5 * in(&m, y + i));
    }
    uint64_t s0 = submitted();
    gpar_trans tt = trans ? GPAR_TRANS : GPAR_NO_TRANS;
    int st = dbl ? gpar_dgemv(tt, M, N, 1, m.b, a, 15, m.b, x, incx, 0.5, m.b, y, 1)
                 : gpar_sgemv(tt, M, N, 1, m.b, a, 15, m.b, x, incx, 0.5f, m.b, y, 1);
    static const char *const what[4] = {"A, x, y", "y, A, x (incx 2)", "x, y, A", "y over A's end"};
    if (k < 3)
      finish(&m, st, tol(dt), 0, say("%sgemv %s, %s", t, tr, what[k]));
    else
      refused(&m, st, s0, say("%sgemv %s, %s", t, tr, what[k]));
  }
}

/* -------------------------------------------------------------- main */

static void run_device(void) {
  for (int d = 0; d < 2; d++) {
    int dt = dtypes[d];
    t_unary(dt);
    t_binary(dt);
    t_bcast(dt, GPAR_PER_ROW);
    t_bcast(dt, GPAR_PER_COLUMN);
    t_reduce_range(dt);
    t_reduce_matrix(dt, GPAR_PER_ROW);
    t_reduce_matrix(dt, GPAR_PER_COLUMN);
    t_softmax(dt);
    t_argmax(dt);
    t_map(dt);
  }
  for (int dbl = 0; dbl < 2; dbl++) {
    t_axpy_scal(dbl);
    t_dot(dbl);
    t_gemv(dbl, 0);
    t_gemv(dbl, 1);
  }
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all");
}

int main(void) {
  tap_start();
  eng = tu_engine(0, 0, 0);
  int ndev = gpar_device_count(eng);
  if (ndev < 1) skip_all("no device");
  for (int t = -1; t < ndev; t++) {
    char name[200];
    cur_dev = t < 0 ? GPAR_HOST : t;
    if (t < 0)
      snprintf(name, sizeof name, "GPAR_HOST memory");
    else {
      tu_devinfo info;
      tu_device_info(eng, t, &info);
      snprintf(name, sizeof name, "dev %d (%s %s)", t, info.backend, info.name);
    }
    cur_name = name;
    run_device();
  }
  gpar_stats st;
  gpar_stats_get(eng, &st);
  ok(st.ops_failed == 0 && st.buffers_live == 0, "counters: failed %llu, buffers live %llu",
     (unsigned long long)st.ops_failed, (unsigned long long)st.buffers_live);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
