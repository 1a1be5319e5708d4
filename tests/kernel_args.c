/* kernel_args.c: a kernel launched again and again with some arguments changed and others not
 * (a scalar, a byte offset, the buffer; a new buffer after a release, which may take the freed
 * one's handle), queued back to back, eagerly and in a graph: each launch gets exactly its own
 * arguments on every device. Backends may keep a kernel's last arguments and set only those that
 * changed (OpenCL: clSetKernelArg per changed slot); this is what such a cache must not break.
 * Mutant caught: opencl_kernel.c set_arg skipping a cached slot without comparing its value
 * (`if ((int)slot < m->nset) return CL_SUCCESS;`). */
#include "kernel_util.h"

enum { N = 8, WORDS = 64 };

static gpar_engine *eng;

/* One launch: y[off / 4 + i] += a + b for i < N. */
typedef struct step {
  int buf; /* which of the buffers */
  size_t off;
  float a;
  uint64_t b;
} step;

static const step steps[] = {
    {0, 0, 1.0f, 0},  {0, 0, 1.0f, 0}, /* the same arguments twice */
    {0, 0, 2.0f, 0},                   /* a scalar changes */
    {0, 32, 2.0f, 0},                  /* the offset changes */
    {0, 32, 2.0f, 5},                  /* the u64 changes */
    {1, 32, 2.0f, 5},                  /* the buffer changes */
    {0, 32, 2.0f, 5}, {1, 0, 3.0f, 7}, /* back, then everything at once */
    {1, 0, 3.0f, 7},
};
#define NSTEPS (int)(sizeof steps / sizeof steps[0])

static int launch(gpar_kernel k, int d, gpar_buffer buf, const step *s) {
  gpar_grid g = {{1}, {32}};
  gpar_arg a[4] = {gpar_arg_u32(N), gpar_arg_f32(s->a), gpar_arg_u64(s->b), gpar_arg_buffer(buf, s->off)};
  return gpar_kernel_launch(k, d, &g, a, 4);
}

/* What the steps leave in the two buffers, `times` over. */
static void expect(float want[2][WORDS], int times) {
  memset(want, 0, sizeof(float) * 2 * WORDS);
  for (int t = 0; t < times; t++)
    for (int s = 0; s < NSTEPS; s++)
      for (int i = 0; i < N; i++) want[steps[s].buf][steps[s].off / 4 + i] += steps[s].a + (float)steps[s].b;
}

static int same(gpar_buffer *y, float want[2][WORDS], int *st) {
  float got[WORDS];
  int right = 1;
  for (int b = 0; b < 2 && !*st; b++) {
    *st = gpar_read(y[b], 0, got, sizeof got);
    right &= !*st && !memcmp(got, want[b], sizeof got);
  }
  return right;
}

/* The steps queued with no wait between them, then again in a graph run twice. */
static void test_steps(gpar_kernel k, int d) {
  gpar_buffer y[2] = {tu_buffer(eng, d, WORDS * 4), tu_buffer(eng, d, WORDS * 4)};
  float want[2][WORDS];
  int st = gpar_fill(y[0], 0, WORDS * 4, 0);
  if (!st) st = gpar_fill(y[1], 0, WORDS * 4, 0);
  for (int s = 0; s < NSTEPS && !st; s++) st = launch(k, d, y[steps[s].buf], &steps[s]);
  expect(want, 1);
  int right = same(y, want, &st);
  ok(!st && right, "dev %s: %d launches back to back, each with its own scalars, offset and buffer", ku_devname(eng, d),
     NSTEPS);
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  gpar_graph *graph = NULL;
  st = gpar_graph_begin(eng);
  for (int s = 0; s < NSTEPS && !st; s++) st = launch(k, d, y[steps[s].buf], &steps[s]);
  int end = gpar_graph_end(eng, &graph);
  if (!st) st = end;
  for (int r = 0; r < 2 && !st; r++) {
    st = gpar_graph_launch(graph);
    if (!st) st = launch(k, d, y[0], &steps[NSTEPS - 1]); /* an eager launch between replays */
  }
  expect(want, 3);
  for (int i = 0; i < N; i++) want[0][i] += 2 * (steps[NSTEPS - 1].a + (float)steps[NSTEPS - 1].b);
  right = !st && same(y, want, &st);
  ok(!st && right, "dev %s: the same launches in a graph, replayed twice with eager launches between",
     ku_devname(eng, d));
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
  if (graph) gpar_graph_destroy(graph);
  gpar_buffer_release(y[0]);
  gpar_buffer_release(y[1]);
}

/* A buffer released and a new one made, round after round: the new one may get the freed one's
 * handle, and each launch must still write the buffer it names. */
static void test_new_buffers(gpar_kernel k, int d) {
  int st = GPAR_OK, right = 1;
  for (int r = 0; r < 16 && !st && right; r++) {
    gpar_buffer z = tu_buffer(eng, d, WORDS * 4);
    step s = {0, (size_t)(r % 4) * 4, (float)r, 1};
    float got[WORDS], want[WORDS] = {0};
    for (int i = 0; i < N; i++) want[s.off / 4 + i] = s.a + 1.0f;
    st = gpar_fill(z, 0, WORDS * 4, 0);
    if (!st) st = launch(k, d, z, &s);
    if (!st) st = gpar_read(z, 0, got, sizeof got);
    right = !st && !memcmp(got, want, sizeof got);
    gpar_buffer_release(z);
  }
  ok(!st && right, "dev %s: 16 rounds of a new buffer, one launch, a release: each launch wrote its own buffer",
     ku_devname(eng, d));
  if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  tap_start();
  eng = ku_engine(2);
  int ndev = gpar_device_count(eng);
  gpar_kernel k = ku_kernel(eng, "addab", "u32 n, f32 a, u64 b, inout f32 *y",
                            "gpar_u32 i = (gpar_u32)GPAR_GLOBAL_ID(0); if (i < n) y[i] += a + (gpar_f32)b;", NULL);
  for (int d = 0; d < ndev; d++) {
    if (gpar_kernel_build(k, d) != GPAR_OK) {
      diag("dev %s cannot build kernels: %s", ku_devname(eng, d), gpar_last_error());
      continue;
    }
    test_steps(k, d);
    test_new_buffers(k, d);
  }
  gpar_kernel_release(k);
  is_status(gpar_wait_all(eng), GPAR_OK, "no failure left for wait_all");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
