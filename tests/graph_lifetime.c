/* graph_lifetime.c: graph handles and graph lifetimes (stale handles; destroy waiting for
 * launches in flight). A destroyed graph's handle, or one of a shut-down engine, is
 * refused (GPAR_EINVAL) forever: after any number of graph and engine lifetimes it never names a
 * newer graph, so a stale holder can neither launch nor destroy a graph someone else owns now,
 * and the owner's graph keeps working. gpar_graph_destroy returns only once the graph's launches
 * in flight have finished. Run under ASan too. */
#include "testutil.h"

static gpar_graph *fill_graph(gpar_engine *eng, gpar_buffer b, unsigned char v) {
  gpar_graph *g = NULL;
  if (gpar_graph_begin(eng) != GPAR_OK) return NULL;
  int st = gpar_fill(b, 0, 64, v);
  if (gpar_graph_end(eng, &g) != GPAR_OK || st != GPAR_OK) return NULL;
  return g;
}

/* Let freed memory be handed out again soon. A plain malloc reuses a freed block at once; ASan
 * holds freed blocks in a quarantine (256 MB by default) first, so a destroyed graph's memory
 * would only come back after that much more is freed. Free that much, in large blocks, so the
 * library's allocations see the reuse they would see without ASan. */
static void recycle_freed_memory(void) {
  for (int i = 0; i < 320; i++) {
    volatile char *p = malloc((size_t)1 << 20);
    if (p) p[0] = 0;
    free((void *)p);
  }
}

/* Graph lifetimes in a row on one engine, then engine lifetimes: the handles of destroyed graphs
 * and of a shut-down engine's graphs stay refused and never name the live graph. */
static void test_stale_graphs(void) {
  enum { N = 512, ENGINES = 100 };
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  gpar_buffer a = tu_buffer(eng, GPAR_HOST, 64);
  unsigned char *pa = gpar_buffer_host_ptr(a);
  static gpar_graph *dead[N];
  int ndead = 0, reused = 0, first_reuse = -1, stale_ok = 0, owner_bad = 0;
  for (int i = 0; i < N; i++) {
    if (i % 128 == 1) recycle_freed_memory();
    unsigned char v = (unsigned char)(i % 200 + 1);
    gpar_graph *g = fill_graph(eng, a, v);
    if (!g) {
      owner_bad++;
      continue;
    }
    int match = -1;
    for (int j = 0; j < ndead; j++)
      if (dead[j] == g) match = j;
    if (match >= 0 && reused++ == 0) first_reuse = i;
    /* A stale holder acts: with the destroyed handle equal to the new graph's, if any, else the
     * last destroyed one; and with the first one ever destroyed. */
    if (ndead > 0) {
      gpar_graph *s = dead[match >= 0 ? match : ndead - 1];
      stale_ok += gpar_graph_launch(s) != GPAR_EINVAL;
      stale_ok += gpar_graph_destroy(s) != GPAR_EINVAL;
      stale_ok += gpar_graph_launch(dead[0]) != GPAR_EINVAL;
    }
    /* The owner: its graph launches, does its fill, and is destroyed by its handle. */
    owner_bad += gpar_fill(a, 0, 64, 0) != GPAR_OK;
    owner_bad += gpar_graph_launch(g) != GPAR_OK;
    owner_bad += gpar_wait(a) != GPAR_OK || pa[0] != v || pa[63] != v;
    owner_bad += gpar_graph_destroy(g) != GPAR_OK;
    dead[ndead++] = g;
  }
  if (reused) diag("a new graph's handle equalled a destroyed one's %d times, first at lifetime %d", reused, first_reuse);
  is_int(reused, 0, "512 graph lifetimes: no new graph handle equals a destroyed one's");
  is_int(stale_ok, 0, "  destroyed handles are refused by launch and destroy (GPAR_EINVAL)");
  is_int(owner_bad, 0, "  each live graph launches, runs and is destroyed by its owner");

  /* A graph of an engine that is shut down: refused, also after more engine lifetimes than
   * there are engine slots, each with graphs of its own. */
  gpar_engine *e2 = tu_engine(GPAR_BACKEND_HOST, 1, 0);
  gpar_buffer b2 = tu_buffer(e2, GPAR_HOST, 64);
  gpar_graph *g2 = fill_graph(e2, b2, 3), *g2b = fill_graph(e2, b2, 4);
  ok(g2 && g2b && gpar_graph_launch(g2) == GPAR_OK, "a second engine's graphs");
  is_status(gpar_shutdown(e2), GPAR_OK, "  its engine shuts down with them alive");
  int foreign_ok = 0, live_bad = 0;
  for (int i = 0; i < ENGINES; i++) {
    if (i % 50 == 1) recycle_freed_memory();
    gpar_engine *e = tu_engine(GPAR_BACKEND_HOST, 1, 0);
    gpar_buffer b = tu_buffer(e, GPAR_HOST, 64);
    gpar_graph *g = fill_graph(e, b, 5);
    foreign_ok += gpar_graph_launch(g2) != GPAR_EINVAL;
    foreign_ok += gpar_graph_destroy(g2b) != GPAR_EINVAL;
    live_bad += !g || gpar_graph_launch(g) != GPAR_OK || gpar_wait_all(e) != GPAR_OK;
    if (i % 2) live_bad += gpar_graph_destroy(g) != GPAR_OK; /* the others are left to shutdown */
    live_bad += gpar_shutdown(e) != GPAR_OK;
    foreign_ok += gpar_graph_launch(g) != GPAR_EINVAL;
  }
  is_int(foreign_ok, 0, "100 engine lifetimes: graphs of shut-down engines stay refused (GPAR_EINVAL)");
  is_int(live_bad, 0, "  while each new engine's graph works");
  int later = 0;
  for (int j = 0; j < ndead; j++) later += gpar_graph_launch(dead[j]) != GPAR_EINVAL;
  is_int(later, 0, "every destroyed handle of the first engine is still refused");
  gpar_buffer_release(a);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
}

/* ---------------------------------------------------------------- destroy waits for launches */

typedef struct slow {
  atomic_int running, runs, destroying;
} slow;

/* A recorded host op: announces itself, holds until the main thread is about to destroy the
 * graph (bounded), lingers 50 ms more so a destroy that does not wait would return first, and
 * counts its run. */
static int slow_fn(const gpar_native *nat, void *arg) {
  slow *s = arg;
  (void)nat;
  atomic_store(&s->running, 1);
  tu_wait_flag(&s->destroying, 10);
  tu_sleep_us(50000);
  atomic_fetch_add(&s->runs, 1);
  return GPAR_OK;
}

static void test_destroy_waits(void) {
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  gpar_buffer b = tu_buffer(eng, GPAR_HOST, 64);
  static slow s;
  memset(&s, 0, sizeof s);
  gpar_graph *g = NULL;
  int st = gpar_graph_begin(eng);
  if (st == GPAR_OK) st = gpar_submit(eng, GPAR_HOST, slow_fn, &s, NULL, 0, &b, 1);
  int e = gpar_graph_end(eng, &g);
  if (st != GPAR_OK || e != GPAR_OK || !g) bail_out("recording the slow graph");
  int l1 = gpar_graph_launch(g), l2 = gpar_graph_launch(g);
  ok(l1 == GPAR_OK && l2 == GPAR_OK && tu_wait_flag(&s.running, 10), "two launches in flight, the first running");
  atomic_store(&s.destroying, 1);
  int d = gpar_graph_destroy(g);
  int runs = atomic_load(&s.runs);
  is_status(d, GPAR_OK, "gpar_graph_destroy with launches in flight");
  is_int(runs, 2, "  it returned after both launches had run");
  is_status(gpar_graph_launch(g), GPAR_EINVAL, "  then the handle is refused");
  is_status(gpar_wait_all(eng), GPAR_OK, "the engine is fine");
  gpar_buffer_release(b);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
}

/* Which cases run: all, or those named on the command line (e.g. to see one fail alone). */

int main(int argc, char **argv) {
  tap_start();
  if (tu_want(argc, argv, "stale_graphs")) test_stale_graphs();
  if (tu_want(argc, argv, "destroy_waits")) test_destroy_waits();
  return done_testing();
}
