/* lanes.c: several compute lanes per GPU (gpar_config.lanes 1, 2 and 4) on every device of a GPU
 * backend (OpenCL, CUDA): the configuration is kept; independent user functions are spread over
 * that many lanes (their native streams); independent GEMMs spread over the lanes, then a chain of
 * AXPYs summing their outputs (each AXPY reads a GEMM's output and the previous AXPY's sum, so
 * at least one of its producers is on another lane) sees every GEMM's result, in several rounds.
 * Mutant that this catches (core/engine/dispatch.c, dispatch_one): the same-lane test
 *   if (p->dev == dev && p->lane == op->lane) continue;
 * made `if (p->dev == dev && gpar__lane_compute_index(p->lane) >= 0 &&
 * gpar__lane_compute_index(op->lane) >= 0) continue;` (no event wait for a producer on another
 * compute lane of the device): with 2 and 4 lanes sums come out short ("element 0 is 29, not
 * 36"), while 1 lane (and tests/dag with the default) still passes. */
#include "testutil.h"

#define N 256     /* GEMMs are N x N */
#define P 8       /* producers per round */
#define ROUNDS 3
#define USERS 8   /* independent user functions */

static gpar_engine *eng;

typedef struct seen {
  void *stream;
} seen;

/* Note the lane's stream and hold the dispatcher a while, so the next ones find it loaded. */
static int note_stream(const gpar_native *nat, void *arg) {
  ((seen *)arg)->stream = nat->stream;
  tu_sleep_us(20000);
  return GPAR_OK;
}

/* USERS independent user functions on dev: how many distinct streams they ran on. */
static int streams_used(int dev) {
  seen s[USERS] = {{0}};
  gpar_buffer b[USERS];
  int distinct = 0;
  for (int i = 0; i < USERS; i++) {
    b[i] = tu_buffer(eng, dev, 64);
    gpar_submit(eng, dev, note_stream, &s[i], NULL, 0, &b[i], 1);
  }
  gpar_wait_all(eng);
  for (int i = 0; i < USERS; i++) {
    int j = 0;
    while (j < i && s[j].stream != s[i].stream) j++;
    distinct += j == i && s[i].stream;
    gpar_buffer_release(b[i]);
  }
  return distinct;
}

/* One round on dev: C_i = A_i * B (A_i all (i+1)/N, B all ones: C_i all i+1, exactly), over C_i
 * written with -1000 first; S = 0; S += C_i for each i. Every element of S must be P(P+1)/2. */
static int round_sums(int dev, size_t *bad_at, float *bad_val) {
  const size_t nn = (size_t)N * N;
  gpar_buffer a[P], c[P], b = tu_buffer(eng, dev, nn * 4), s = tu_buffer(eng, dev, nn * 4);
  int st = tu_fill_value(b, nn, 1.0f);
  for (int i = 0; i < P; i++) {
    a[i] = tu_buffer(eng, dev, nn * 4);
    c[i] = tu_buffer(eng, dev, nn * 4);
    if (!st) st = tu_fill_value(a[i], nn, (float)(i + 1) / N);
    if (!st) st = tu_fill_value(c[i], nn, -1000.0f);
  }
  if (!st) st = gpar_wait_all(eng); /* the inputs are in place: the GEMMs start together */
  for (int i = 0; i < P && !st; i++)
    st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 1.0f, a[i], 0, N, b, 0, N, 0.0f, c[i], 0, N);
  if (!st) st = gpar_fill(s, 0, nn * 4, 0);
  for (int i = 0; i < P && !st; i++) st = gpar_saxpy((int)nn, 1.0f, c[i], 0, 1, s, 0, 1);
  float *h = malloc(nn * 4);
  if (!st && h) st = gpar_read(s, 0, h, nn * 4);
  *bad_at = nn;
  for (size_t j = 0; !st && h && j < nn && *bad_at == nn; j++)
    if (h[j] != (float)(P * (P + 1) / 2)) *bad_at = j, *bad_val = h[j];
  free(h);
  gpar_wait_all(eng);
  for (int i = 0; i < P; i++) gpar_buffer_release(a[i]), gpar_buffer_release(c[i]);
  gpar_buffer_release(b);
  gpar_buffer_release(s);
  return st;
}

static void test_device(int dev, int lanes, const tu_devinfo *info) {
  int distinct = streams_used(dev);
  ok(lanes == 1 ? distinct == 1 : distinct >= 2 && distinct <= lanes,
     "dev %d (%s), %d lanes: %d independent user functions ran on %d stream(s)", dev, info->backend, lanes, USERS,
     distinct);
  for (int r = 0; r < ROUNDS; r++) {
    size_t at = 0;
    float v = 0;
    int st = round_sums(dev, &at, &v);
    ok(st == GPAR_OK && at == (size_t)N * N, "dev %d, %d lanes, round %d: %d GEMMs summed on other lanes: %s%s", dev,
       lanes, r, P, gpar_status_name(st), at == (size_t)N * N ? ", every element right" : "");
    if (at != (size_t)N * N) diag("element %zu is %g, not %d", at, v, P * (P + 1) / 2);
  }
}

/* Whether eng has a device of a GPU backend. */
static int has_gpu(void) {
  for (int d = 0; d < gpar_device_count(eng); d++) {
    tu_devinfo info;
    if (tu_device_info(eng, d, &info) == GPAR_OK && info.backend_id != GPAR_BACKEND_HOST) return 1;
  }
  return 0;
}

int main(void) {
  static const int counts[] = {1, 2, 4};
  tap_start();
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    gpar_config cfg, got;
    gpar_config_init(&cfg);
    cfg.lanes = counts[c];
    cfg.quiet = 1;
    if (gpar_init(&eng, &cfg) != GPAR_OK) bail_out("gpar_init failed");
    if (!c && !has_gpu()) {
      gpar_shutdown(eng);
      skip_all("no OpenCL or CUDA device");
    }
    int st = gpar_config_get(eng, &got);
    ok(st == GPAR_OK && got.lanes == counts[c], "%d lanes: gpar_config_get gives %d", counts[c], got.lanes);
    for (int d = 0; d < gpar_device_count(eng); d++) {
      tu_devinfo info;
      tu_device_info(eng, d, &info);
      if (info.backend_id != GPAR_BACKEND_HOST) test_device(d, counts[c], &info);
    }
    is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  }
  return done_testing();
}
