/* graph_branches.c: a recorded graph keeps the DAG's independent branches apart (core/graph/
 * record.c's node_lane, with core/engine/lanes.c's rules): on every device that builds kernels,
 * K branches of L kernel steps each, recorded layer by layer across the branches, give the same
 * values as the same steps run eagerly, launch after launch, with the inputs written right
 * before each launch by one slow kernel on one lane (so a branch on another lane that does not
 * wait for the part's start reads them too early). gpar_graph_info says how many compute lanes
 * the part uses (min(K, the device's lanes) on a GPU, 1 on the CPU), and on CUDA that the
 * captured graph has K * L nodes and K * (L - 1) edges: none between branches. Eagerly, the same
 * steps on a GPU with several lanes leave the first lane (gpar_stats.lane_moves).
 * Mutants: launch.c's replay_gpu without its fork wait (`event_wait(..., fork)` skipped): wrong
 * values on PoCL with 4 lanes and on CUDA ("branch 3 element 0 is ..."); record.c's node_lane
 * returning at once (every node on the first lane): 1 branch, and on CUDA K * L - 1 edges. */
#include "kernel_util.h"

#define K 4     /* branches */
#define L 3     /* steps per branch */
#define N 4096  /* floats per branch */
#define LAUNCHES 3

static gpar_engine *eng;
static gpar_kernel step, init;

/* Branch b's value after `steps` steps from v: x = 1.5 x + (b + s) for s = 0 .. steps - 1. */
static float expected(int b, int steps, float v) {
  for (int s = 0; s < steps; s++) v = 1.5f * v + (float)(b + s);
  return v;
}

/* Every branch's buffer set to v by one slow kernel (a loop first: its lane is busy a while). */
static int write_inputs(int dev, gpar_buffer *x, float v) {
  gpar_grid g = {{N / 64}, {64}};
  gpar_arg a[] = {gpar_arg_u64(N), gpar_arg_f32(v), gpar_arg_u32(20000), gpar_arg_buffer(x[0], 0),
                  gpar_arg_buffer(x[1], 0), gpar_arg_buffer(x[2], 0), gpar_arg_buffer(x[3], 0)};
  return gpar_kernel_launch(init, dev, &g, a, 7);
}

/* The steps, layer by layer across the branches. */
static int steps(int dev, gpar_buffer *x) {
  int st = GPAR_OK;
  gpar_grid g = {{N / 64}, {64}};
  for (int s = 0; s < L && st == GPAR_OK; s++)
    for (int b = 0; b < K && st == GPAR_OK; b++) {
      gpar_arg a[] = {gpar_arg_u64(N), gpar_arg_f32(1.5f), gpar_arg_f32((float)(b + s)), gpar_arg_buffer(x[b], 0)};
      st = gpar_kernel_launch(step, dev, &g, a, 4);
    }
  return st;
}

/* The values of every branch after `launch` (its input v): "" when right, else what is wrong. */
static void check(gpar_buffer *x, float v, char *bad, size_t cap) {
  static float got[N];
  *bad = 0;
  for (int b = 0; b < K && !*bad; b++) {
    if (gpar_read(x[b], 0, got, sizeof got) != GPAR_OK) {
      snprintf(bad, cap, "read: %s", gpar_last_error());
      return;
    }
    float want = expected(b, L, v);
    for (int i = 0; i < N && !*bad; i += 97)
      if (got[i] != want) snprintf(bad, cap, "branch %d element %d is %g, not %g", b, i, got[i], want);
  }
}

static void on_device(int dev) {
  gpar_device_props p;
  gpar_device_info(eng, dev, &p);
  gpar_buffer x[K];
  char bad[160] = "";
  for (int b = 0; b < K; b++) x[b] = tu_buffer(eng, dev, N * sizeof(float));
  gpar_graph *g = NULL;
  int st = gpar_graph_begin(eng);
  if (st == GPAR_OK) st = steps(dev, x);
  int end = gpar_graph_end(eng, &g);
  if (st == GPAR_OK) st = end;
  for (int r = 0; r < LAUNCHES && st == GPAR_OK && !*bad; r++) {
    float v = (float)(r + 1);
    st = write_inputs(dev, x, v);
    if (st == GPAR_OK) st = gpar_graph_launch(g);
    if (st == GPAR_OK) check(x, v, bad, sizeof bad);
  }
  ok(st == GPAR_OK && !*bad, "dev %s: %d launches of %d branches x %d steps give the eager values%s%s",
     ku_devname(eng, dev), LAUNCHES, K, L, *bad ? ": " : "", *bad ? bad : gpar_last_error());
  gpar_graph_props gp = {0};
  int want = p.compute_lanes > 1 ? (p.compute_lanes < K ? p.compute_lanes : K) : 1;
  int info = g ? gpar_graph_info(g, &gp) : GPAR_EINVAL;
  ok(info == GPAR_OK && gp.ops == K * L && gp.branches == want,
     "  gpar_graph_info: %d ops, %d branches (the device has %d compute lanes)", gp.ops, gp.branches, p.compute_lanes);
  if (p.backend_id == GPAR_BACKEND_CUDA && gp.native_parts == 1) {
    uint64_t edges = gp.branches >= K ? (uint64_t)K * (L - 1) : (uint64_t)K * L - 1;
    ok(gp.native_nodes == (uint64_t)K * L && gp.native_edges == edges,
       "  the CUDA graph: %llu nodes, %llu edges (want %d, %llu: no edge between branches)",
       (unsigned long long)gp.native_nodes, (unsigned long long)gp.native_edges, K * L, (unsigned long long)edges);
  }
  /* The same steps eagerly. */
  gpar_stats s0, s1;
  gpar_stats_get(eng, &s0);
  st = write_inputs(dev, x, 7.0f);
  if (st == GPAR_OK) st = steps(dev, x);
  if (st == GPAR_OK) check(x, 7.0f, bad, sizeof bad);
  gpar_stats_get(eng, &s1);
  ok(st == GPAR_OK && !*bad, "dev %s: eagerly, the same values%s%s", ku_devname(eng, dev), *bad ? ": " : "", bad);
  if (p.compute_lanes > 1)
    diag("  eager: %llu ops left the first lane, %llu cross-lane waits, %llu events, %llu hand-offs",
         (unsigned long long)(s1.lane_moves - s0.lane_moves), (unsigned long long)(s1.lane_waits - s0.lane_waits),
         (unsigned long long)(s1.lane_events - s0.lane_events),
         (unsigned long long)(s1.lane_handoffs - s0.lane_handoffs));
  if (g) gpar_graph_destroy(g);
  for (int b = 0; b < K; b++) gpar_buffer_release(x[b]);
}

int main(void) {
  tap_start();
  eng = ku_engine(0);
  step = ku_kernel(eng, "axpb", "u64 n, f32 a, f32 b, inout f32 *x",
                   "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) x[i] = a * x[i] + b;", NULL);
  init = ku_kernel(eng, "slow_init", "u64 n, f32 v, u32 spins, out f32 *x0, out f32 *x1, out f32 *x2, out f32 *x3",
                   "gpar_u64 i = GPAR_GLOBAL_ID(0);\n"
                   "gpar_f32 w = v;\n"
                   "for (gpar_u32 s = 0; s < spins; s++) w = w * 0.999999f + 0.000001f * v;\n"
                   "if (i < n) { x0[i] = v; x1[i] = v; x2[i] = v; x3[i] = v + 0.0f * (w - w); }",
                   NULL);
  char why[256];
  int n = gpar_device_count(eng), any = 0;
  for (int d = 0; d < n; d++) {
    if (gpar_kernel_support(eng, d, why, sizeof why) != GPAR_OK) continue;
    any = 1;
    on_device(d);
  }
  if (!any) skip(1, "no device builds kernels");
  gpar_kernel_release(step);
  gpar_kernel_release(init);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
