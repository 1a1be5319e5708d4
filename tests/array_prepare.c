/* array_prepare.c: gpar_array_prepare builds up front the array kernels a training step needs.
 * On every device: after it, the array calls of tools/train/train_mlp.c's step (bias add in place,
 * ReLU in place, softmax cross-entropy with loss and gradient, range sums of one and two passes,
 * per-row sums of one and two passes) and the rest of the GPAR_FLOAT array ops build nothing
 * and make no kernel (gpar_stats: builds, disk hits, memory hits, live kernels); a second call
 * builds nothing; -1 prepares every device. Bad input (no such device, a call from inside an op,
 * a shut-down engine) is refused with nothing built.
 * Mutant seen failing: prepare.c's list without the per-row sum's second pass ({GPAR__AK_ROWRED,
 * 2} left out): "device 1 ...: the step built 1 kernel(s) and made 1 kernel object(s)". */
#include "testutil.h"

enum { M = 16, N = 40, LONG = 10000 }; /* N > 32 columns: a per-row sum in two passes; LONG > 8192: a range too */

/* Builds of every origin so far, and the kernel objects alive, in *live. */
static uint64_t builds(gpar_engine *eng, uint64_t *live) {
  gpar_stats s;
  *live = UINT64_MAX;
  if (gpar_stats_get(eng, &s) != GPAR_OK) return UINT64_MAX;
  *live = s.kernels_live;
  return s.kernel_builds + s.kernel_disk_hits + s.kernel_memory_hits;
}

#define STEP(call)                                                                \
  do {                                                                            \
    if (st == GPAR_OK && (st = (call)) != GPAR_OK)                                \
      diag("  %s: %s (%s)", #call, gpar_status_name(st), gpar_last_error());     \
  } while (0)

/* A training step's array calls on dev, then the other GPAR_FLOAT array ops, waited for. */
static int step(gpar_engine *eng, int dev) {
  gpar_buffer z = tu_buffer(eng, dev, 4 * M * N), g = tu_buffer(eng, dev, 4 * M * N), b = tu_buffer(eng, dev, 4 * M);
  gpar_buffer lab = tu_buffer(eng, dev, 4 * N), loss = tu_buffer(eng, dev, 4 * N), s = tu_buffer(eng, dev, 4 * M);
  gpar_buffer lng = tu_buffer(eng, dev, 4 * LONG), idx = tu_buffer(eng, dev, 4 * N);
  int st = GPAR_OK;
  STEP(gpar_fill(z, 0, 4 * M * N, 0));
  STEP(gpar_fill(b, 0, 4 * M, 0));
  STEP(gpar_fill(lab, 0, 4 * N, 0));
  STEP(gpar_fill(lng, 0, 4 * LONG, 0));
  STEP(gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, M, N, z, 0, M, b, 0, GPAR_PER_ROW, z, 0, M));
  STEP(gpar_unary(GPAR_UN_RELU, GPAR_FLOAT, (size_t)M * N, z, 0, z, 0));
  STEP(gpar_softmax_xent(GPAR_FLOAT, M, N, z, 0, M, lab, 0, 1.0 / N, loss, 0, g, 0, M));
  STEP(gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, N, loss, 0, s, 0));
  STEP(gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, LONG, lng, 0, s, 0));
  STEP(gpar_reduce_matrix(GPAR_SUM, GPAR_FLOAT, M, N, g, 0, M, GPAR_PER_ROW, s, 0));
  STEP(gpar_reduce_matrix(GPAR_SUM, GPAR_FLOAT, M, 8, g, 0, M, GPAR_PER_ROW, s, 0));
  /* the rest: other variants and kinds */
  STEP(gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, (size_t)M * N, z, 0, g, 0));
  STEP(gpar_binary(GPAR_BIN_MUL, GPAR_FLOAT, (size_t)M * N, z, 0, g, 0, g, 0));
  STEP(gpar_binary(GPAR_BIN_MUL, GPAR_FLOAT, (size_t)M * N, z, 0, g, 0, z, 0));
  STEP(gpar_binary(GPAR_BIN_ADD, GPAR_FLOAT, M, z, 0, z, 0, z, 0));
  STEP(gpar_binary(GPAR_BIN_SUB, GPAR_FLOAT, M, z, 0, z, 0, g, 0));
  STEP(gpar_binary_bcast(GPAR_BIN_MUL, GPAR_FLOAT, M, N, z, 0, M, b, 0, GPAR_PER_ROW, g, 0, M));
  STEP(gpar_softmax_xent(GPAR_FLOAT, M, N, z, 0, M, lab, 0, 1.0 / N, loss, 0, (gpar_buffer){0}, 0, M));
  STEP(gpar_softmax_xent(GPAR_FLOAT, M, N, z, 0, M, lab, 0, 1.0 / N, (gpar_buffer){0}, 0, g, 0, M));
  STEP(gpar_reduce_matrix(GPAR_MAX, GPAR_FLOAT, M, N, g, 0, M, GPAR_PER_COLUMN, loss, 0));
  STEP(gpar_argmax(GPAR_FLOAT, M, N, z, 0, M, idx, 0));
  STEP(gpar_wait_all(eng));
  gpar_buffer all[] = {z, g, b, lab, loss, s, lng, idx};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gpar_buffer_release(all[i]);
  return st;
}

/* Inside an op: gpar_array_prepare must say GPAR_EDEADLK. */
typedef struct inside_arg {
  gpar_engine *eng;
  int dev, st;
} inside_arg;
static int inside(const gpar_native *native, void *arg) {
  (void)native;
  inside_arg *a = arg;
  a->st = gpar_array_prepare(a->eng, a->dev);
  return GPAR_OK;
}

static void bad_input(gpar_engine *eng) {
  int n = gpar_device_count(eng), bad[3] = {n, n + 1000, -2};
  uint64_t live0 = 0, live1 = 0, b0 = builds(eng, &live0);
  for (int i = 0; i < 3; i++) {
    int st = gpar_array_prepare(eng, bad[i]);
    ok(st == GPAR_ENODEV, "device %d of %d: GPAR_ENODEV (%s: %s)", bad[i], n, gpar_status_name(st), gpar_last_error());
  }
  inside_arg a = {eng, n - 1, 99};
  int st = gpar_submit(eng, GPAR_HOST, inside, &a, NULL, 0, NULL, 0);
  if (st == GPAR_OK) st = gpar_wait_all(eng);
  ok(st == GPAR_OK && a.st == GPAR_EDEADLK, "from inside an op: GPAR_EDEADLK (%s)", gpar_status_name(a.st));
  ok(gpar_array_prepare(NULL, 0) != GPAR_OK, "a NULL engine is refused");
  ok(builds(eng, &live1) == b0 && live1 == live0, "  ... with nothing built and no kernel made");
  gpar_engine *gone = tu_engine(0, 0, 0);
  gpar_shutdown(gone);
  st = gpar_array_prepare(gone, -1);
  ok(st != GPAR_OK, "a shut-down engine is refused (%s: %s)", gpar_status_name(st), gpar_last_error());
}

int main(void) {
  gpar_engine *eng = tu_engine(0, 0, 0);
  int n = gpar_device_count(eng);
  plan(8 + 3 * n);
  bad_input(eng);
  for (int d = 0; d < n; d++) {
    tu_devinfo p;
    tu_device_info(eng, d, &p);
    double t0 = gpar_now();
    int st = gpar_array_prepare(eng, d);
    ok(st == GPAR_OK, "device %d (%s: %s): prepared in %.0f ms (%s %s)", d, p.backend, p.name, (gpar_now() - t0) * 1e3,
       gpar_status_name(st), st ? gpar_last_error() : "");
    uint64_t live0 = 0, live1 = 0, b0 = builds(eng, &live0);
    st = step(eng, d);
    uint64_t b1 = builds(eng, &live1);
    ok(st == GPAR_OK && b1 == b0 && live1 == live0,
       "device %d (%s: %s): the step built %llu kernel(s) and made %lld kernel object(s) (%s)", d, p.backend, p.name,
       (unsigned long long)(b1 - b0), (long long)(live1 - live0), gpar_status_name(st));
    b0 = builds(eng, &live0);
    st = gpar_array_prepare(eng, d);
    ok(st == GPAR_OK && builds(eng, &live1) == b0 && live1 == live0, "device %d: prepared again, nothing built", d);
  }
  uint64_t live0 = 0, live1 = 0, b0 = builds(eng, &live0);
  int st = gpar_array_prepare(eng, -1);
  ok(st == GPAR_OK && builds(eng, &live1) == b0, "-1: every device prepared, already (%s)", gpar_status_name(st));
  gpar_shutdown(eng);
  return done_testing();
}
