/* kernel_engine.c: kernels as engine ops. Dependencies come from the signature: two kernels
 * that only read a buffer run at once (the first waits, on the host, for a flag the second sets:
 * were readers ordered, it would wait in vain); a reader never starts beside the out or inout
 * writer before it (which waits a while for the reader's flag, in vain); writers and readers of
 * one buffer keep program order on every device. The host spreads a launch's groups over its workers (group 0 waits for
 * the last group). Graphs record launches (host, PoCL, CUDA parts; a CUDA part is captured),
 * and keep a released kernel alive. A kernel released while its launch runs is freed after it
 * (gpar_stats.kernels_live). Traces name kernels. An op that launches a kernel with no build
 * is refused (GPAR_EDEADLK: engine threads never compile), one with a build runs. */
#include "kernel_util.h"

static gpar_engine *eng;
static int ndev, host;

/* Spin, with atomics, until flag[0] is set; done[0] = 1 if it was, 0 after ~2^31 tries. */
static const char waiter_body[] =
    "gpar_u32 seen = 0;\n"
    "for (gpar_u64 t = 0; t < ((gpar_u64)1 << 31) && !seen; t++) seen = gpar_atomic_add_u32((GPAR_GLOBAL_MEM gpar_u32 *)flag, 0u);\n"
    "done[0] = seen ? 1u : 0u;";
static const char setter_body[] = "gpar_atomic_xchg_u32((GPAR_GLOBAL_MEM gpar_u32 *)flag, 1u); done[0] = 2u;";

static void test_readers_together(void) {
  gpar_kernel kw = ku_kernel(eng, "waiter", "in u32 *flag, out u32 *done", waiter_body, NULL);
  gpar_kernel ks = ku_kernel(eng, "setter", "in u32 *flag, out u32 *done", setter_body, NULL);
  gpar_buffer flag = tu_buffer(eng, host, 4), d1 = tu_buffer(eng, host, 4), d2 = tu_buffer(eng, host, 4);
  gpar_fill(flag, 0, 4, 0);
  gpar_kernel_build(kw, host);
  gpar_kernel_build(ks, host);
  gpar_grid g = {{1}, {1}};
  gpar_arg a1[2] = {gpar_arg_buffer(flag, 0), gpar_arg_buffer(d1, 0)}, a2[2] = {gpar_arg_buffer(flag, 0), gpar_arg_buffer(d2, 0)};
  int st = gpar_kernel_launch(kw, host, &g, a1, 2);
  if (!st) st = gpar_kernel_launch(ks, host, &g, a2, 2);
  uint32_t r1 = 9, r2 = 9;
  if (!st) st = gpar_read(d1, 0, &r1, 4);
  if (!st) st = gpar_read(d2, 0, &r2, 4);
  ok(!st && r1 == 1 && r2 == 2, "two kernels that only read a buffer ran at once (the first saw the second's flag)");
  if (st || r1 != 1) diag("  %s %s; waiter %u, setter %u", gpar_status_name(st), gpar_last_error(), r1, r2);
  gpar_buffer_release(flag), gpar_buffer_release(d1), gpar_buffer_release(d2);
  gpar_kernel_release(kw);
  gpar_kernel_release(ks);
}

/* W1 out y = i; W2 inout y = 3y + 1; R in y -> z = y + 5; a fill of y (after R: write after read);
 * W3 inout y += 2: every device, no wait between. */
static void test_writers_order(int d) {
  enum { N = 1 << 16 };
  static uint32_t y[N], z[N];
  gpar_kernel w1 = ku_kernel(eng, "w1", "u32 n, out u32 *y", "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0); if (i < n) y[i] = i;", NULL);
  gpar_kernel w2 = ku_kernel(eng, "w2", "u32 n, inout u32 *y", "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0); if (i < n) y[i] = 3u * y[i] + 1u;", NULL);
  gpar_kernel r = ku_kernel(eng, "r", "u32 n, in u32 *y, out u32 *z", "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0); if (i < n) z[i] = y[i] + 5u;", NULL);
  gpar_kernel w3 = ku_kernel(eng, "w3", "u32 n, inout u32 *y", "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0); if (i < n) y[i] += 2u;", NULL);
  gpar_buffer by = tu_buffer(eng, d, sizeof y), bz = tu_buffer(eng, d, sizeof z);
  gpar_grid g = {{N / 128}, {128}};
  gpar_arg ay[2] = {gpar_arg_u32(N), gpar_arg_buffer(by, 0)}, ayz[3] = {gpar_arg_u32(N), gpar_arg_buffer(by, 0), gpar_arg_buffer(bz, 0)};
  int st = GPAR_OK;
  for (int rep = 0; rep < 3 && st == GPAR_OK; rep++) {
    st = gpar_kernel_launch(w1, d, &g, ay, 2);
    if (!st) st = gpar_kernel_launch(w2, d, &g, ay, 2);
    if (!st) st = gpar_kernel_launch(r, d, &g, ayz, 3);
    if (!st) st = gpar_fill(by, 0, sizeof y, 0);
    if (!st) st = gpar_kernel_launch(w3, d, &g, ay, 2);
  }
  if (!st) st = gpar_read(by, 0, y, sizeof y);
  if (!st) st = gpar_read(bz, 0, z, sizeof z);
  int bad = -1;
  for (uint32_t i = 0; i < N && !st && bad < 0; i++)
    if (y[i] != 2 || z[i] != 3 * i + 6) bad = (int)i;
  ok(!st && bad < 0, "dev %s: out, inout and in order writers and readers as written (with a fill between)",
     ku_devname(eng, d));
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  if (bad >= 0) diag("  element %d: y %u z %u", bad, y[bad], z[bad]);
  gpar_buffer_release(by), gpar_buffer_release(bz);
  gpar_kernel_release(w1), gpar_kernel_release(w2), gpar_kernel_release(r), gpar_kernel_release(w3);
}

/* A reader of y never starts before y's writer (out, or inout) ends: the writer waits a while
 * for a flag that only the reader sets, so it must give up (y = 2); had the reader started
 * beside it, it would have seen the flag (y = 1). On the host, two workers. */
static void test_reader_waits(void) {
  static const char *const params[2] = {"in u32 *flag, out u32 *y", "in u32 *flag, inout u32 *y"};
  gpar_kernel kr = ku_kernel(eng, "after_y", "in u32 *y, in u32 *flag",
                 "gpar_atomic_xchg_u32((GPAR_GLOBAL_MEM gpar_u32 *)flag, 1u + y[0] * 0u);", NULL);
  for (int v = 0; v < 2; v++) {
    gpar_kernel kw = ku_kernel(eng, v ? "writer_inout" : "writer_out", params[v],
                               "gpar_u32 seen = 0;\n"
                               "for (gpar_u64 t = 0; t < ((gpar_u64)1 << 22) && !seen; t++)\n"
                               "  seen = gpar_atomic_add_u32((GPAR_GLOBAL_MEM gpar_u32 *)flag, 0u);\n"
                               "y[0] = seen ? 1u : 2u;",
                               NULL);
    gpar_buffer flag = tu_buffer(eng, host, 4), y = tu_buffer(eng, host, 4);
    gpar_fill(flag, 0, 4, 0);
    gpar_fill(y, 0, 4, 0);
    gpar_kernel_build(kw, host);
    gpar_kernel_build(kr, host);
    gpar_grid g = {{1}, {1}};
    gpar_arg aw[2] = {gpar_arg_buffer(flag, 0), gpar_arg_buffer(y, 0)}, ar[2] = {gpar_arg_buffer(y, 0), gpar_arg_buffer(flag, 0)};
    int st = gpar_kernel_launch(kw, host, &g, aw, 2);
    if (!st) st = gpar_kernel_launch(kr, host, &g, ar, 2);
    uint32_t r = 0, f = 0;
    if (!st) st = gpar_read(y, 0, &r, 4);
    if (!st) st = gpar_read(flag, 0, &f, 4);
    ok(!st && r == 2 && f == 1, "a reader of y starts after its %s writer ends (the writer never saw the reader's flag)",
       v ? "inout" : "out");
    gpar_buffer_release(flag), gpar_buffer_release(y);
    gpar_kernel_release(kw);
  }
  gpar_kernel_release(kr);
}

/* Group 0 waits for the last group's flag: only groups run by other workers can set it. */
static void test_host_spread(void) {
  enum { G = 4096 };
  gpar_kernel k = ku_kernel(eng, "spread", "u32 groups, inout u32 *flag, inout u32 *count",
                            "gpar_u32 g = GPAR_GROUP_ID(0);\n"
                            "gpar_atomic_add_u32(&count[g], 1u);\n"
                            "if (g == groups - 1) gpar_atomic_xchg_u32(&flag[0], 1u);\n"
                            "if (g == 0) {\n"
                            "  gpar_u32 seen = 0;\n"
                            "  for (gpar_u64 t = 0; t < ((gpar_u64)1 << 31) && !seen; t++) seen = gpar_atomic_add_u32(&flag[0], 0u);\n"
                            "  flag[1] = seen;\n"
                            "}",
                            NULL);
  static uint32_t count[G], flag[2];
  gpar_buffer bf = tu_buffer(eng, host, sizeof flag), bc = tu_buffer(eng, host, sizeof count);
  gpar_fill(bf, 0, sizeof flag, 0);
  gpar_fill(bc, 0, sizeof count, 0);
  gpar_grid g = {{G}, {3}};
  gpar_arg a[3] = {gpar_arg_u32(G), gpar_arg_buffer(bf, 0), gpar_arg_buffer(bc, 0)};
  int st = gpar_kernel_launch(k, host, &g, a, 3);
  if (!st) st = gpar_read(bf, 0, flag, sizeof flag);
  if (!st) st = gpar_read(bc, 0, count, sizeof count);
  int bad = -1;
  for (int i = 0; i < G && !st && bad < 0; i++)
    if (count[i] != 3) bad = i;
  ok(!st && flag[1] == 1, "host: a launch's groups run on several workers at once (group 0 saw the last group's flag)");
  ok(!st && bad < 0, "host: every group ran once, every work-item of it once");
  gpar_buffer_release(bf), gpar_buffer_release(bc);
  gpar_kernel_release(k);
}

/* ---------------------------------------------------------------- graphs */

/* On each device: record fill x, y; saxpy twice; a copy of y to GPAR_HOST memory; launch it
 * three times: y = 1 + 2 * 2 * 3 = 13 each launch (the fill restarts it). The kernel's handle
 * is released once recorded: the graph keeps it. */
static void test_graph(int d) {
  enum { N = 4096 };
  gpar_kernel k = ku_kernel(eng, "gsaxpy", "u64 n, f32 a, in f32 *x, inout f32 *y",
                            "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * x[i] + y[i];", NULL);
  gpar_buffer x = tu_buffer(eng, d, N * 4), y = tu_buffer(eng, d, N * 4), h = tu_buffer(eng, GPAR_HOST, N * 4);
  float one = 1.0f, three = 3.0f, *hp = gpar_buffer_host_ptr(h);
  unsigned char b1[4], b3[4];
  memcpy(b1, &one, 4);
  memcpy(b3, &three, 4);
  gpar_stats s0, s1;
  gpar_stats_get(eng, &s0);
  gpar_grid g = {{N / 256}, {256}};
  gpar_arg a[4] = {gpar_arg_u64(N), gpar_arg_f32(2.0f), gpar_arg_buffer(x, 0), gpar_arg_buffer(y, 0)};
  gpar_graph *graph = NULL;
  int st = gpar_kernel_build(k, d); /* the build is not part of the graph */
  if (!st) st = gpar_graph_begin(eng);
  float ones[N], threes[N];
  for (int i = 0; i < N; i++) ones[i] = 1.0f, threes[i] = 3.0f;
  if (!st) st = gpar_write(y, 0, ones, sizeof ones);
  if (!st) st = gpar_write(x, 0, threes, sizeof threes);
  if (!st) st = gpar_kernel_launch(k, d, &g, a, 4);
  if (!st) st = gpar_kernel_launch(k, d, &g, a, 4);
  if (!st) st = gpar_copy(h, 0, y, 0, N * 4);
  int end = gpar_graph_end(eng, &graph);
  if (!st) st = end;
  gpar_kernel_release(k);
  int right = 1;
  for (int l = 0; l < 3 && !st; l++) {
    hp[0] = hp[N - 1] = 0;
    st = gpar_graph_launch(graph);
    if (!st) st = gpar_wait(h);
    right &= hp[0] == 13.0f && hp[N - 1] == 13.0f;
  }
  gpar_stats_get(eng, &s1);
  ok(!st && right && s1.kernels_live == s0.kernels_live, "dev %s: a graph of launches, run 3 times: y = 13 each time; it "
     "keeps the released kernel", ku_devname(eng, d));
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  if (ku_backend(eng, d) == GPAR_BACKEND_CUDA)
    ok(s1.graph_native_launches > s0.graph_native_launches, "dev %s: the CUDA part was captured (a CUDA graph: %llu launches)",
       ku_devname(eng, d), (unsigned long long)(s1.graph_native_launches - s0.graph_native_launches));
  if (graph) gpar_graph_destroy(graph);
  gpar_stats_get(eng, &s1);
  ok(s1.kernels_live + 1 == s0.kernels_live, "dev %s: destroying the graph freed the kernel", ku_devname(eng, d));
  gpar_buffer_release(x), gpar_buffer_release(y), gpar_buffer_release(h);
}

/* ---------------------------------------------------------------- lifetimes */

static void test_release_in_flight(void) {
  gpar_kernel k = ku_kernel(eng, "held", "in u32 *flag, out u32 *done", waiter_body, NULL);
  gpar_buffer flag = tu_buffer(eng, GPAR_HOST, 64), done = tu_buffer(eng, host, 4);
  gpar_fill(flag, 0, 64, 0);
  gpar_wait(flag);
  gpar_grid g = {{1}, {1}};
  gpar_arg a[2] = {gpar_arg_buffer(flag, 0), gpar_arg_buffer(done, 0)};
  gpar_stats s0, s1;
  gpar_stats_get(eng, &s0);
  int st = gpar_kernel_launch(k, host, &g, a, 2);
  is_status(st, GPAR_OK, "a launch that waits for the host");
  is_status(gpar_kernel_release(k), GPAR_OK, "  its kernel released meanwhile");
  is_status(gpar_kernel_launch(k, host, &g, a, 2), GPAR_EINVAL, "  the handle is refused at once");
  gpar_stats_get(eng, &s1);
  ok(s1.kernels_live == s0.kernels_live, "  the kernel lives on while its launch runs (kernels_live %llu)",
     (unsigned long long)s1.kernels_live);
  atomic_store((_Atomic uint32_t *)gpar_buffer_host_ptr(flag), 1u); /* the launch only reads it */
  uint32_t r = 0;
  st = gpar_read(done, 0, &r, 4);
  gpar_stats_get(eng, &s1);
  ok(!st && r == 1 && s1.kernels_live + 1 == s0.kernels_live, "  the launch finished right and the kernel went with it");
  gpar_buffer_release(flag), gpar_buffer_release(done);
}

static int user_launch(const gpar_native *nat, void *arg) {
  (void)nat;
  gpar_kernel *k = arg;
  gpar_grid g = {{1}, {1}};
  return gpar_kernel_launch(*k, GPAR_HOST, &g, NULL, 0);
}

static void test_inside_ops(void) {
  gpar_kernel k = ku_kernel(eng, "inside", "", "", NULL);
  gpar_buffer b = tu_buffer(eng, host, 4);
  gpar_submit(eng, GPAR_HOST, user_launch, &k, NULL, 0, &b, 1);
  int st = gpar_wait(b);
  ok(st == GPAR_EDEADLK && strstr(gpar_last_error(), "outside operations"),
     "a launch from inside an op of a kernel with no build is refused (GPAR_EDEADLK: engine threads never compile)");
  if (st != GPAR_EDEADLK) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  gpar_kernel_build(k, GPAR_HOST);
  gpar_submit(eng, GPAR_HOST, user_launch, &k, NULL, 0, &b, 1);
  is_status(gpar_wait(b), GPAR_OK, "  once built, it launches from inside an op");
  gpar_wait_all(eng); /* the first failure */
  gpar_kernel_release(k);
  gpar_buffer_release(b);
}

/* Traces name kernels. */
static void test_trace(void) {
  char path[600];
  snprintf(path, sizeof path, "%s/trace.json", ku_cache_dir());
  gpar_config cfg;
  gpar_engine *e = NULL;
  gpar_config_init(&cfg);
  cfg.quiet = 1;
  cfg.backends = GPAR_BACKEND_HOST;
  cfg.trace_path = path;
  if (gpar_init(&e, &cfg) != GPAR_OK) bail_out("gpar_init");
  gpar_kernel k = ku_kernel(e, "traced_kernel", "out u32 *o", "o[GPAR_GLOBAL_ID(0)] = 1u;", NULL);
  gpar_buffer b = tu_buffer(e, GPAR_HOST, 256);
  gpar_arg a = gpar_arg_buffer(b, 0);
  gpar_grid g = {{2}, {32}};
  int st = gpar_kernel_launch(k, GPAR_HOST, &g, &a, 1);
  gpar_kernel_release(k);
  gpar_buffer_release(b);
  gpar_shutdown(e);
  size_t n = 0;
  FILE *f = fopen(path, "r");
  static char text[1 << 16];
  if (f) n = fread(text, 1, sizeof text - 1, f), fclose(f);
  text[n] = 0;
  ok(!st && strstr(text, "\"kernel:traced_kernel\""), "the trace names the kernel (\"kernel:traced_kernel\")");
  remove(path);
}

int main(int argc, char **argv) {
  tap_start();
  eng = ku_engine(2);
  ndev = gpar_device_count(eng);
  host = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0);
  if (tu_want(argc, argv, "readers")) test_readers_together();
  if (tu_want(argc, argv, "writers"))
    for (int d = 0; d < ndev; d++) test_writers_order(d);
  if (tu_want(argc, argv, "writers")) test_reader_waits();
  if (tu_want(argc, argv, "spread")) test_host_spread();
  if (tu_want(argc, argv, "graph"))
    for (int d = 0; d < ndev; d++) test_graph(d);
  if (tu_want(argc, argv, "release")) test_release_in_flight();
  if (tu_want(argc, argv, "inside")) test_inside_ops();
  if (tu_want(argc, argv, "trace")) test_trace();
  is_status(gpar_wait_all(eng), GPAR_OK, "no failure left for wait_all");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
