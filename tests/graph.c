/* graph.c: op graphs (gpar_graph_*): a recorded sequence replayed equals the same sequence run
 * eagerly, on every device and across devices (GEMMs, fills, writes, copies between devices,
 * host functions); launches in a row interleaved with eager ops; faults inside a launch, across
 * parts and from inputs that failed before it (only the ops reading a failed value are
 * skipped); a multi-chunk write failing part way while recording; CUDA peer copies captured
 * into CUDA graphs, a failed capture replayed; bad input; a buffer released while a graph uses
 * it; shutdown with live graphs. */
#include <math.h>
#include <pthread.h>

#include "testutil.h"

#define N 16               /* matrices N x N floats */
#define BYTES (N * N * sizeof(float))

static gpar_engine *eng;
static int ndev;

static gpar_buffer mk(int dev) {
  gpar_buffer b = {0};
  int st = gpar_buffer_create(eng, dev, BYTES, &b);
  if (st != GPAR_OK) {
    printf("Bail out! gpar_buffer_create(dev %d): %s %s\n", dev, gpar_status_name(st), gpar_last_error());
    exit(1);
  }
  return b;
}

static void seed(gpar_buffer b, int salt) {
  float h[N * N];
  for (int i = 0; i < N * N; i++) h[i] = (float)((i * 7 + salt * 13) % 11) / 11.0f - 0.4f;
  gpar_write(b, 0, h, sizeof h);
}

/* Host function: h = h * 0.5 + 1 (reads and writes its buffer). */
static int host_step(const gpar_native *nat, void *arg) {
  (void)nat;
  float *h = gpar_buffer_host_ptr(*(gpar_buffer *)arg);
  if (!h) return GPAR_EINVAL;
  for (int i = 0; i < N * N; i++) h[i] = h[i] * 0.5f + 1.0f;
  return GPAR_OK;
}

/* The buffers one sequence works on: per device i, X[i], M[i], T[i]; H in pinned host memory. */
typedef struct set {
  int nd;
  int dev[16];
  gpar_buffer x[16], m[16], t[16], h;
} set;

static void set_make(set *s, const int *devs, int nd) {
  s->nd = nd;
  for (int i = 0; i < nd; i++) {
    s->dev[i] = devs[i];
    s->x[i] = mk(devs[i]);
    s->m[i] = mk(devs[i]);
    s->t[i] = mk(devs[i]);
    seed(s->x[i], i + 1);
    seed(s->m[i], i + 5);
  }
  s->h = mk(GPAR_HOST);
  seed(s->h, 9);
}

static void set_free(set *s) {
  for (int i = 0; i < s->nd; i++) {
    gpar_buffer_release(s->x[i]);
    gpar_buffer_release(s->m[i]);
    gpar_buffer_release(s->t[i]);
  }
  gpar_buffer_release(s->h);
}

/* The sequence: on each device T = X*M (beta 0), X <- T (same device), a fill of a stripe of M
 * and a write of its first column; then X of device i+1 gets a slice of T of device i (a copy
 * between devices, staged when they share no path); H gets X[0]'s first column, then the host
 * function runs on H, and X[last] reads H back. Returns the first submit status. */
static int sequence(set *s, int gen) {
  int st = GPAR_OK;
  float col[N];
  for (int r = 0; r < N; r++) col[r] = (float)(r % 5) * 0.1f + 0.05f * (float)gen;
  for (int i = 0; i < s->nd && st == GPAR_OK; i++) {
    if ((st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 0.5f, s->x[i], 0, N, s->m[i], 0, N, 0.0f, s->t[i],
                         0, N)))
      break;
    if ((st = gpar_copy(s->x[i], 0, s->t[i], 0, BYTES))) break;
    if ((st = gpar_fill(s->m[i], 4 * N * sizeof(float), N * sizeof(float), 0))) break;
    if ((st = gpar_write(s->m[i], 0, col, sizeof col))) break;
  }
  for (int i = 0; i + 1 < s->nd && st == GPAR_OK; i++)
    st = gpar_copy(s->x[i + 1], 0, s->t[i], 2 * N * sizeof(float), N * sizeof(float));
  if (st == GPAR_OK) st = gpar_copy(s->h, 0, s->x[0], 0, N * sizeof(float));
  if (st == GPAR_OK) st = gpar_submit(eng, GPAR_HOST, host_step, &s->h, NULL, 0, &s->h, 1);
  if (st == GPAR_OK) st = gpar_copy(s->x[s->nd - 1], N * sizeof(float), s->h, 0, N * sizeof(float));
  return st;
}

/* Largest difference between the two sets' buffers (read back). */
static double set_diff(set *a, set *b) {
  float ha[N * N], hb[N * N];
  double worst = 0;
  for (int i = 0; i <= a->nd; i++) {
    gpar_buffer pa[3] = {i < a->nd ? a->x[i] : a->h, i < a->nd ? a->m[i] : a->h, i < a->nd ? a->t[i] : a->h};
    gpar_buffer pb[3] = {i < b->nd ? b->x[i] : b->h, i < b->nd ? b->m[i] : b->h, i < b->nd ? b->t[i] : b->h};
    for (int k = 0; k < 3; k++) {
      if (gpar_read(pa[k], 0, ha, BYTES) || gpar_read(pb[k], 0, hb, BYTES)) return INFINITY;
      for (int e = 0; e < N * N; e++) {
        double d = fabs((double)ha[e] - (double)hb[e]);
        if (!(d <= worst)) worst = d; /* NaN too */
      }
    }
  }
  return worst;
}

/* Record the sequence once on one set and launch it `reps` times, interleaved with an eager
 * GEMM into X[0] that reads T[0]; the other set runs everything eagerly. */
static void replay_vs_eager(const char *name, const int *devs, int nd, int reps) {
  set g, e;
  gpar_stats s0, s1;
  gpar_stats_get(eng, &s0);
  set_make(&g, devs, nd);
  set_make(&e, devs, nd);
  gpar_graph *gr = NULL;
  int st = gpar_graph_begin(eng);
  int rs = st == GPAR_OK ? sequence(&g, 1) : st;
  int es = gpar_graph_end(eng, &gr);
  ok(st == GPAR_OK && rs == GPAR_OK && es == GPAR_OK && gr, "%s: recorded (%s %s %s) %s", name,
     gpar_status_name(st), gpar_status_name(rs), gpar_status_name(es), gpar_last_error());
  if (!gr) {
    set_free(&g);
    set_free(&e);
    return;
  }
  int lst = GPAR_OK;
  for (int r = 0; r < reps && lst == GPAR_OK; r++) {
    lst = gpar_graph_launch(gr);
    if (lst == GPAR_OK)
      lst = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 0.25f, g.t[0], 0, N, g.m[0], 0, N, 0.5f, g.x[0], 0, N);
    if (lst == GPAR_OK) sequence(&e, 1);
    if (lst == GPAR_OK)
      gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 0.25f, e.t[0], 0, N, e.m[0], 0, N, 0.5f, e.x[0], 0, N);
  }
  int w = gpar_wait_all(eng);
  double d = set_diff(&g, &e);
  ok(lst == GPAR_OK && w == GPAR_OK && d <= 1e-4, "%s: %d launches interleaved with eager ops equal eager runs "
     "(launch %s, wait_all %s, max diff %g)", name, reps, gpar_status_name(lst), gpar_status_name(w), d);
  /* One CUDA device: its parts (before and after the host function) have no user function, so
   * each launch runs two CUDA graphs. */
  gpar_stats_get(eng, &s1);
  gpar_device_props p;
  if (nd == 1 && gpar_device_info(eng, devs[0], &p) == GPAR_OK && p.backend_id == GPAR_BACKEND_CUDA)
    ok(s1.graph_native_launches - s0.graph_native_launches == 2 * (uint64_t)reps, "%s: %llu CUDA graph launches "
       "for %d launches of two CUDA parts", name, (unsigned long long)(s1.graph_native_launches - s0.graph_native_launches),
       reps);
  ok(gpar_graph_destroy(gr) == GPAR_OK, "%s: destroyed", name);
  set_free(&g);
  set_free(&e);
}

/* A fault inside a launch reaches the buffer its GEMM writes; a buffer outside
 * the graph does not; the next launch with no fault is clean again. */
static void fault_case(int dev) {
  gpar_buffer a = mk(dev), b = mk(dev), c = mk(dev), other = mk(dev);
  seed(a, 1);
  seed(b, 2);
  seed(other, 3);
  gpar_graph *gr = NULL;
  gpar_graph_begin(eng);
  gpar_fill(c, 0, BYTES, 0);
  gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 1.0f, a, 0, N, b, 0, N, 1.0f, c, 0, N);
  int es = gpar_graph_end(eng, &gr);
  gpar_wait_all(eng);
  gpar_fault_inject(eng, "gemm", 1);
  int l = gpar_graph_launch(gr);
  int wc = gpar_wait(c), wo = gpar_wait(other);
  float h[N * N];
  int rd = gpar_read(c, 0, h, BYTES);
  int wa = gpar_wait_all(eng);
  ok(es == GPAR_OK && l == GPAR_OK && wc == GPAR_EFAULT && wo == GPAR_OK && rd == GPAR_EDEPFAILED &&
         wa == GPAR_EFAULT,
     "device %d: injected GEMM fault in a launch reaches the written buffer (wait %s, read %s, wait_all %s), not "
     "others (%s)",
     dev, gpar_status_name(wc), gpar_status_name(rd), gpar_status_name(wa), gpar_status_name(wo));
  gpar_fault_inject(eng, "gemm", 0);
  l = gpar_graph_launch(gr);
  wc = gpar_wait(c);
  rd = gpar_read(c, 0, h, BYTES);
  /* Reference: C = A*B from the seeds. */
  float ha[N * N], hb[N * N];
  gpar_read(a, 0, ha, BYTES);
  gpar_read(b, 0, hb, BYTES);
  double worst = 0;
  for (int j = 0; j < N; j++)
    for (int i = 0; i < N; i++) {
      double s = 0;
      for (int k = 0; k < N; k++) s += (double)ha[i + k * N] * hb[k + j * N];
      double d = fabs(s - h[i + j * N]);
      if (!(d <= worst)) worst = d;
    }
  ok(l == GPAR_OK && wc == GPAR_OK && rd == GPAR_OK && worst < 1e-3,
     "device %d: the next launch is clean and right (wait %s, max err %g)", dev, gpar_status_name(wc), worst);
  gpar_graph_destroy(gr);
  gpar_buffer_release(a);
  gpar_buffer_release(b);
  gpar_buffer_release(c);
  gpar_buffer_release(other);
}

/* Inside one part, a failure reaches what it would reach eagerly: the failed GEMM's output,
 * the copy that reads it (skipped), not the fills before and after it. */
static void fault_exact(int dev) {
  gpar_buffer a = mk(dev), b = mk(dev), c = mk(dev), d = mk(dev), x = mk(dev), y = mk(dev);
  seed(a, 1);
  seed(b, 2);
  gpar_graph *gr = NULL;
  gpar_graph_begin(eng);
  gpar_fill(x, 0, BYTES, 1);
  gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 1.0f, a, 0, N, b, 0, N, 0.0f, c, 0, N);
  gpar_copy(d, 0, c, 0, BYTES);
  gpar_fill(y, 0, BYTES, 2);
  gpar_graph_end(eng, &gr);
  gpar_wait_all(eng);
  gpar_fault_inject(eng, "gemm", 1);
  gpar_graph_launch(gr);
  unsigned char hx[BYTES], hy[BYTES];
  int wc = gpar_wait(c), wd = gpar_wait(d), wx = gpar_wait(x), wy = gpar_wait(y);
  int rx = gpar_read(x, 0, hx, BYTES), ry = gpar_read(y, 0, hy, BYTES), rd = gpar_read(d, 0, hx + 4, 4);
  int wa = gpar_wait_all(eng);
  gpar_fault_inject(eng, "gemm", 0);
  ok(wc == GPAR_EFAULT && wd == GPAR_EDEPFAILED && wx == GPAR_OK && wy == GPAR_OK && rx == GPAR_OK &&
         ry == GPAR_OK && hx[7] == 1 && hy[7] == 2 && rd == GPAR_EDEPFAILED && wa == GPAR_EFAULT,
     "device %d: a fault inside a launch reaches the failed GEMM's output (%s) and its reader's (%s), not the "
     "fills before and after (%s %s); read of the skipped output: %s; wait_all: %s",
     dev, gpar_status_name(wc), gpar_status_name(wd), gpar_status_name(wx), gpar_status_name(wy),
     gpar_status_name(rd), gpar_status_name(wa));
  gpar_graph_destroy(gr);
  gpar_buffer all_[6] = {a, b, c, d, x, y};
  for (int i = 0; i < 6; i++) gpar_buffer_release(all_[i]);
}

/* Two devices, two parts: a GEMM fault in one part stays out of the other, independent part;
 * a part on the second device that reads the failed result is skipped (GPAR_EDEPFAILED). */
static void fault_two_parts(int da, int db) {
  gpar_buffer a = mk(da), b = mk(da), c = mk(da), y = mk(db), z = mk(db);
  seed(a, 1);
  seed(b, 2);
  gpar_graph *g1 = NULL, *g2 = NULL;
  gpar_graph_begin(eng);
  gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 1.0f, a, 0, N, b, 0, N, 0.0f, c, 0, N);
  gpar_fill(y, 0, BYTES, 4);
  gpar_graph_end(eng, &g1);
  gpar_graph_begin(eng);
  gpar_copy(z, 0, c, 0, BYTES);
  gpar_graph_end(eng, &g2);
  gpar_wait_all(eng);
  gpar_fault_inject(eng, "gemm", 1);
  int l1 = gpar_graph_launch(g1), l2 = gpar_graph_launch(g2);
  int wc = gpar_wait(c), wy = gpar_wait(y), wz = gpar_wait(z), wa = gpar_wait_all(eng);
  ok(l1 == GPAR_OK && l2 == GPAR_OK && wc == GPAR_EFAULT && wy == GPAR_OK && wz == GPAR_EDEPFAILED && wa == GPAR_EFAULT,
     "devices %d and %d: a fault in one part (%s) spares the other part (%s); a graph reading it is skipped (%s); "
     "launches %s %s, wait_all %s",
     da, db, gpar_status_name(wc), gpar_status_name(wy), gpar_status_name(wz), gpar_status_name(l1),
     gpar_status_name(l2), gpar_status_name(wa));
  gpar_fault_inject(eng, "gemm", 0);
  gpar_graph_destroy(g1);
  gpar_graph_destroy(g2);
  gpar_buffer a_[5] = {a, b, c, y, z};
  for (int i = 0; i < 5; i++) gpar_buffer_release(a_[i]);
}

/* A host function that fails (writing nothing) while fail_host is set, else writes 3.0f. */
static atomic_int fail_host;
static int host_fail_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  if (atomic_load(&fail_host)) return gpar_error_set(GPAR_EBACKEND, "host function failed on purpose");
  float *h = gpar_buffer_host_ptr(*(gpar_buffer *)arg);
  if (!h) return GPAR_EINVAL;
  for (int i = 0; i < N * N; i++) h[i] = 3.0f;
  return GPAR_OK;
}

/* Whether every byte of b is v (read back). */
static int all_bytes(gpar_buffer b, unsigned char v) {
  unsigned char h[BYTES];
  return gpar_read(b, 0, h, BYTES) == GPAR_OK && tu_all_bytes(h, BYTES, v);
}

/* Synchronous engine, two parts on devices da and db, a GEMM fault in one: the launch returns the
 * fault, and waiting for the parts gives every one back (the other part's op and its backend
 * event are freed: events_live returns to 0, polled for up to 1 s as the completion thread frees
 * ops just after their waiters wake). */
static void sync_fault_two_parts(int da, int db) {
  gpar_engine *se = tu_engine(0, 2, 1);
  gpar_buffer a, b, c, y;
  gpar_buffer_create(se, da, BYTES, &a);
  gpar_buffer_create(se, da, BYTES, &b);
  gpar_buffer_create(se, da, BYTES, &c);
  gpar_buffer_create(se, db, BYTES, &y);
  gpar_fill(a, 0, BYTES, 1);
  gpar_fill(b, 0, BYTES, 2);
  gpar_graph *g = NULL;
  gpar_graph_begin(se); /* parts in order of first use: the failing one first, the other after */
  gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 1.0f, a, 0, N, b, 0, N, 0.0f, c, 0, N);
  gpar_fill(y, 0, BYTES, 5);
  int e = gpar_graph_end(se, &g);
  gpar_fault_inject(se, "gemm", 1);
  int l = gpar_graph_launch(g);
  gpar_fault_inject(se, "gemm", 0);
  gpar_wait_all(se);
  gpar_stats s;
  for (int i = 0; i < 1000 && gpar_stats_get(se, &s) == GPAR_OK && s.events_live; i++) usleep(1000);
  ok(e == GPAR_OK && l == GPAR_EFAULT && s.ops_in_flight == 0 && s.events_live == 0 && all_bytes(y, 5),
     "devices %d and %d, synchronous engine: a GEMM fault in one part fails the launch (%s); every part's op and "
     "event is given back (events live after it: %llu)",
     da, db, gpar_status_name(l), (unsigned long long)s.events_live);
  gpar_graph_destroy(g);
  gpar_buffer a_[4] = {a, b, c, y};
  for (int i = 0; i < 4; i++) gpar_buffer_release(a_[i]);
  gpar_shutdown(se);
}

/* Two parts, the failure inside the launch: a host function fails while writing X (part 0, the
 * CPU); part 1, on dev, copies X into Y, Y into W, and fills Z independently. The failure
 * travels op by op as it does eagerly: Y and W end GPAR_EDEPFAILED, Z is filled and GPAR_OK. */
static void fault_across_parts(int dev) {
  gpar_buffer x = mk(GPAR_HOST), y = mk(dev), w = mk(dev), z = mk(dev);
  gpar_fill(z, 0, BYTES, 0);
  gpar_graph *gr = NULL;
  gpar_graph_begin(eng);
  gpar_submit(eng, GPAR_HOST, host_fail_fn, &x, NULL, 0, &x, 1);
  gpar_copy(y, 0, x, 0, BYTES);
  gpar_copy(w, 0, y, 0, BYTES);
  gpar_fill(z, 0, BYTES, 6);
  int es = gpar_graph_end(eng, &gr);
  gpar_wait_all(eng);
  atomic_store(&fail_host, 1);
  int l = gpar_graph_launch(gr);
  int wx = gpar_wait(x), wy = gpar_wait(y), ww = gpar_wait(w), wz = gpar_wait(z);
  int zr = all_bytes(z, 6), wa = gpar_wait_all(eng);
  atomic_store(&fail_host, 0);
  ok(es == GPAR_OK && l == GPAR_OK && wx == GPAR_EBACKEND && wy == GPAR_EDEPFAILED && ww == GPAR_EDEPFAILED &&
         wz == GPAR_OK && zr && wa == GPAR_EBACKEND,
     "device %d: a host function failing in part 0 reaches part 1's ops that read its output (%s, %s, %s), not "
     "part 1's independent fill (%s, %s); wait_all %s",
     dev, gpar_status_name(wx), gpar_status_name(wy), gpar_status_name(ww), gpar_status_name(wz),
     zr ? "filled" : "not filled", gpar_status_name(wa));
  gpar_fill(z, 0, BYTES, 0);
  l = gpar_graph_launch(gr);
  float h[N * N];
  int rw = gpar_read(w, 0, h, BYTES);
  wa = gpar_wait_all(eng);
  ok(l == GPAR_OK && rw == GPAR_OK && h[0] == 3.0f && h[N * N - 1] == 3.0f && all_bytes(z, 6) && wa == GPAR_OK,
     "device %d: the next launch (no failure) runs every op (%s %g, wait_all %s)", dev, gpar_status_name(rw),
     (double)h[0], gpar_status_name(wa));
  gpar_graph_destroy(gr);
  gpar_buffer a_[4] = {x, y, w, z};
  for (int i = 0; i < 4; i++) gpar_buffer_release(a_[i]);
}

/* A part whose input failed outside the graph: only the recorded ops that read it (directly, or
 * through another skipped op) are skipped; the part's other ops run, and a buffer the part
 * overwrites before reading it is not reached. */
static void failed_input_part(int dev) {
  gpar_buffer x = mk(GPAR_HOST), y = mk(dev), w = mk(dev), z = mk(dev), v = mk(dev), u = mk(dev);
  gpar_fill(z, 0, BYTES, 0);
  gpar_fill(v, 0, BYTES, 0);
  gpar_graph *gr = NULL;
  gpar_graph_begin(eng);
  gpar_copy(y, 0, x, 0, BYTES); /* reads the failed X: skipped */
  gpar_copy(w, 0, y, 0, BYTES); /* reads the skipped Y: skipped */
  gpar_fill(z, 0, BYTES, 6);    /* independent */
  gpar_fill(u, 0, BYTES, 2);    /* U overwritten, then read: its failure before the launch does not count */
  gpar_copy(v, 0, u, 0, BYTES);
  int es = gpar_graph_end(eng, &gr);
  gpar_wait_all(eng);
  atomic_store(&fail_host, 1);
  gpar_submit(eng, GPAR_HOST, host_fail_fn, &x, NULL, 0, &x, 1); /* eager, fails writing X */
  gpar_copy(u, 0, x, 0, BYTES); /* U fails too (skipped) before the launch */
  int l = gpar_graph_launch(gr);
  int wy = gpar_wait(y), ww = gpar_wait(w), wz = gpar_wait(z), wv = gpar_wait(v), wu = gpar_wait(u);
  int zr = all_bytes(z, 6), vr = all_bytes(v, 2), wa = gpar_wait_all(eng);
  atomic_store(&fail_host, 0);
  ok(es == GPAR_OK && l == GPAR_OK && wy == GPAR_EDEPFAILED && ww == GPAR_EDEPFAILED && wz == GPAR_OK && zr &&
         wu == GPAR_OK && wv == GPAR_OK && vr && wa == GPAR_EBACKEND,
     "device %d: a part whose input failed before the launch skips only the ops reading it (%s, %s); its other ops "
     "run (%s %s, %s %s %s); wait_all %s",
     dev, gpar_status_name(wy), gpar_status_name(ww), gpar_status_name(wz), zr ? "filled" : "not filled",
     gpar_status_name(wu), gpar_status_name(wv), vr ? "copied" : "not copied", gpar_status_name(wa));
  gpar_graph_destroy(gr);
  gpar_buffer a_[6] = {x, y, w, z, v, u};
  for (int i = 0; i < 6; i++) gpar_buffer_release(a_[i]);
}

/* Whether every byte of b's first `bytes` is v, read 4 MiB at a time (within a pinned limit). */
static int big_is(gpar_buffer b, size_t bytes, unsigned char v) {
  const size_t piece = (size_t)4 << 20;
  unsigned char *h = malloc(piece);
  int good = h != NULL;
  for (size_t o = 0; o < bytes && good; o += piece) {
    size_t n = bytes - o < piece ? bytes - o : piece;
    good = gpar_read(b, o, h, n) == GPAR_OK && tu_all_bytes(h, n, v);
  }
  free(h);
  return good;
}

/* A gpar_write of several staging chunks (8 MiB each to a device) that fails on a later chunk
 * while recording (here the second chunk's pinned staging: fault "pinned", or the pinned pool's
 * limit on engine e) returns the error with nothing of it recorded: a call's ops go to the
 * recording all together or not at all, so the recording goes on, and its launch runs the ops
 * before and after the write but nothing of the write; nothing leaks. A write that fails on its
 * first chunk does the same. */
static void write_fails_later_chunk(gpar_engine *e, int dev, int by_fault, const char *how) {
  const size_t big = (size_t)20 << 20; /* 3 chunks */
  gpar_buffer d = {0}, f = {0};
  unsigned char *src = malloc(big), h[BYTES];
  if (!src || gpar_buffer_create(e, dev, big, &d) || gpar_buffer_create(e, dev, BYTES, &f)) {
    ok(0, "%s: device %d: set-up: %s", how, dev, gpar_last_error());
    free(src);
    return;
  }
  memset(src, 0x77, big);
  gpar_fill(d, 0, big, 0x11);
  gpar_fill(f, 0, BYTES, 0x22);
  gpar_wait_all(e);
  gpar_stats s0, s1;
  gpar_stats_get(e, &s0);
  gpar_graph *gr = NULL;
  int bs = gpar_graph_begin(e);
  int fs = gpar_fill(f, 0, BYTES, 0x33);
  if (by_fault) gpar_fault_inject(e, "pinned", 2); /* the first chunk's staging is the first */
  int ws = gpar_write(d, 0, src, big);
  gpar_fault_inject(e, "pinned", 0);
  int later = gpar_fill(f, 0, BYTES, 0x55); /* recorded: the recording goes on */
  int es = gpar_graph_end(e, &gr);
  gpar_stats_get(e, &s1);
  int wa = gpar_wait_all(e);
  int l = gr ? gpar_graph_launch(gr) : -1, wl = gpar_wait_all(e);
  int dr = big_is(d, big, 0x11);
  int fr = gpar_read(f, 0, h, BYTES) == GPAR_OK && tu_all_bytes(h, BYTES, 0x55);
  int want = by_fault ? GPAR_EFAULT : GPAR_ENOMEM;
  ok(bs == GPAR_OK && fs == GPAR_OK && ws == want && later == GPAR_OK && es == GPAR_OK && gr && wa == GPAR_OK &&
         l == GPAR_OK && wl == GPAR_OK && dr && fr && s1.buffers_live == s0.buffers_live &&
         s1.ops_submitted == s0.ops_submitted,
     "%s: device %d: a write failing on its second chunk while recording (%s) records nothing of it: a later op %s, "
     "end %s, nothing ran before the launch (%llu ops submitted); the launch ran the fills (%s) and no chunk of the "
     "write (%s), buffers live %llu -> %llu",
     how, dev, gpar_status_name(ws), gpar_status_name(later), gpar_status_name(es),
     (unsigned long long)(s1.ops_submitted - s0.ops_submitted), fr ? "ran" : "did not run",
     dr ? "untouched" : "written", (unsigned long long)s0.buffers_live, (unsigned long long)s1.buffers_live);
  if (gr) gpar_graph_destroy(gr);
  gr = NULL;
  /* Its first chunk failing: nothing of the write is recorded, the recording goes on. */
  if (by_fault) {
    gpar_graph_begin(e);
    fs = gpar_fill(f, 0, BYTES, 0x44);
    gpar_fault_inject(e, "pinned", 1);
    ws = gpar_write(d, 0, src, big);
    gpar_fault_inject(e, "pinned", 0);
    es = gpar_graph_end(e, &gr);
    l = gr ? gpar_graph_launch(gr) : -1;
    dr = big_is(d, big, 0x11);
    fr = gpar_read(f, 0, h, BYTES) == GPAR_OK && tu_all_bytes(h, BYTES, 0x44);
    ok(fs == GPAR_OK && ws == GPAR_EFAULT && es == GPAR_OK && l == GPAR_OK && dr && fr,
       "%s: device %d: a write failing on its first chunk is not recorded, the recording goes on (end %s, launch: "
       "fill %s, write target %s)",
       how, dev, gpar_status_name(es), fr ? "ran" : "did not run", dr ? "untouched" : "written");
  }
  if (gr) gpar_graph_destroy(gr);
  gpar_buffer_release(d);
  gpar_buffer_release(f);
  free(src);
}

/* A buffer released after recording stays alive for the graph; destroy lets it go. */
static void released_case(int dev) {
  gpar_stats s0, s1, s2;
  gpar_buffer src = mk(dev), dst = mk(GPAR_HOST);
  gpar_stats_get(eng, &s0);
  gpar_graph *gr = NULL;
  gpar_graph_begin(eng);
  float v[N * N];
  for (int i = 0; i < N * N; i++) v[i] = (float)i;
  gpar_write(src, 0, v, sizeof v);
  gpar_copy(dst, 0, src, 0, BYTES);
  gpar_graph_end(eng, &gr);
  gpar_buffer_release(src);
  gpar_fill(dst, 0, BYTES, 0);
  int l = gpar_graph_launch(gr);
  float h[N * N];
  int rd = gpar_read(dst, 0, h, BYTES);
  int same = memcmp(h, v, sizeof v) == 0;
  gpar_stats_get(eng, &s1);
  gpar_graph_destroy(gr);
  gpar_wait_all(eng);
  gpar_stats_get(eng, &s2);
  ok(l == GPAR_OK && rd == GPAR_OK && same && s1.buffers_live == s0.buffers_live &&
         s2.buffers_live == s0.buffers_live - 1,
     "device %d: a released buffer stays alive for its graph (%s, data %s, live %llu -> %llu after destroy)", dev,
     gpar_status_name(rd), same ? "right" : "wrong", (unsigned long long)s1.buffers_live,
     (unsigned long long)s2.buffers_live);
  gpar_buffer_release(dst);
}

/* CUDA devices da and db with peer access: a part on da that fills a buffer and copies it to
 * db runs as one captured CUDA graph per launch (a peer copy must be capturable: with
 * cudaMemcpyPeerAsync the capture failed and every launch replayed op by op), and each launch
 * copies again (db's buffer is cleared eagerly in between). */
static void peer_capture_case(int da, int db) {
  enum { REPS = 3 };
  gpar_buffer src = mk(da), dst = mk(db);
  gpar_stats s0, s1;
  gpar_graph *gr = NULL;
  int st = gpar_graph_begin(eng);
  if (st == GPAR_OK) st = gpar_fill(src, 0, BYTES, 0x5a);
  if (st == GPAR_OK) st = gpar_copy(dst, N * sizeof(float), src, 0, BYTES - N * sizeof(float));
  int es = gpar_graph_end(eng, &gr);
  if (st == GPAR_OK) st = es;
  gpar_wait_all(eng);
  gpar_stats_get(eng, &s0);
  int right = 0;
  unsigned char h[BYTES];
  for (int r = 0; r < REPS && st == GPAR_OK; r++) {
    if ((st = gpar_fill(dst, 0, BYTES, 0))) break;
    if ((st = gpar_graph_launch(gr))) break;
    if ((st = gpar_read(dst, 0, h, BYTES))) break;
    int good = 1;
    for (size_t i = 0; i < BYTES; i++) good &= h[i] == (i < N * sizeof(float) ? 0 : 0x5a);
    right += good;
  }
  gpar_wait_all(eng);
  gpar_stats_get(eng, &s1);
  uint64_t native = s1.graph_native_launches - s0.graph_native_launches;
  ok(st == GPAR_OK && right == REPS && native == REPS,
     "devices %d -> %d (CUDA, peer access): a part with a peer copy is captured: %llu CUDA graph launches for %d "
     "launches, %d of %d right (%s) %s",
     da, db, (unsigned long long)native, REPS, right, REPS, gpar_status_name(st), st ? gpar_last_error() : "");
  if (gr) gpar_graph_destroy(gr);
  gpar_buffer_release(src);
  gpar_buffer_release(dst);
}

/* CUDA: a capture that fails with its lanes forked (injected "capture" fault) is ended and
 * discarded, the part replays op by op with the right result at this launch and the next, and
 * no launch counts as native. Under compute-sanitizer this path must make no CUDA call fail. */
static void capture_fault_case(int dev) {
  gpar_buffer a = mk(dev), b = mk(dev), c = mk(dev);
  gpar_stats s0, s1;
  float ha[N * N], hc[N * N];
  for (int i = 0; i < N * N; i++) ha[i] = (float)i * 0.25f - 3.0f;
  gpar_graph *gr = NULL;
  gpar_graph_begin(eng);
  gpar_fill(c, 0, BYTES, 0x11);
  gpar_write(a, 0, ha, BYTES);  /* host-to-device lane, forked from the compute lane */
  gpar_copy(b, 0, a, 0, BYTES); /* device-to-device lane, forked too */
  gpar_copy(c, N * sizeof(float), b, 0, N * sizeof(float));
  int es = gpar_graph_end(eng, &gr);
  gpar_wait_all(eng);
  gpar_stats_get(eng, &s0);
  gpar_fault_inject(eng, "capture", 1);
  int right = 0, st = es;
  for (int r = 0; r < 2 && st == GPAR_OK; r++) {
    if ((st = gpar_fill(c, 0, BYTES, 0))) break;
    if ((st = gpar_graph_launch(gr))) break;
    if ((st = gpar_read(c, 0, hc, BYTES))) break;
    unsigned char *hb = (unsigned char *)hc;
    right += hb[0] == 0x11 && hb[N * sizeof(float) - 1] == 0x11 && !memcmp(hc + N, ha, N * sizeof(float)) &&
             hb[2 * N * sizeof(float)] == 0x11;
  }
  int wa = gpar_wait_all(eng);
  gpar_fault_inject(eng, "capture", 0);
  gpar_stats_get(eng, &s1);
  uint64_t native = s1.graph_native_launches - s0.graph_native_launches;
  ok(st == GPAR_OK && wa == GPAR_OK && right == 2 && native == 0,
     "device %d: a capture failing with lanes forked (injected) is discarded; the part replays: %d of 2 launches "
     "right, %llu native (%s %s) %s",
     dev, right, (unsigned long long)native, gpar_status_name(st), gpar_status_name(wa), st ? gpar_last_error() : "");
  if (gr) gpar_graph_destroy(gr);
  gpar_buffer_release(a);
  gpar_buffer_release(b);
  gpar_buffer_release(c);
}

static void bad_input(void) {
  gpar_buffer a = mk(GPAR_HOST), b = mk(GPAR_HOST);
  float h[N * N];
  gpar_fill(a, 0, BYTES, 7);
  gpar_wait_all(eng);
  ok(gpar_graph_end(eng, &(gpar_graph *){NULL}) == GPAR_EINVAL, "end without begin: GPAR_EINVAL");
  ok(gpar_graph_begin(eng) == GPAR_OK, "begin");
  ok(gpar_graph_begin(eng) == GPAR_ERECORDING, "begin twice: GPAR_ERECORDING");
  ok(gpar_fill(a, 0, BYTES, 3) == GPAR_OK, "fill recorded");
  ok(gpar_copy(b, 8, a, 0, BYTES) == GPAR_ERANGE, "bad copy refused while recording: GPAR_ERANGE");
  ok(gpar_copy(b, 0, a, 0, BYTES) == GPAR_OK, "copy recorded after a refused op");
  ok(gpar_wait(a) == GPAR_ERECORDING, "gpar_wait while recording: GPAR_ERECORDING");
  ok(gpar_wait_all(eng) == GPAR_ERECORDING, "gpar_wait_all while recording: GPAR_ERECORDING");
  ok(gpar_read(a, 0, h, BYTES) == GPAR_ERECORDING, "gpar_read while recording: GPAR_ERECORDING");
  gpar_graph *gr = NULL, *g2 = NULL;
  ok(gpar_graph_end(eng, NULL) == GPAR_EINVAL, "end with NULL out: GPAR_EINVAL");
  ok(gpar_graph_end(eng, &gr) == GPAR_OK && gr, "end");
  ok(gpar_read(a, 0, h, BYTES) == GPAR_OK && ((unsigned char *)h)[0] == 7, "recorded ops did not run");
  gpar_graph_begin(eng);
  ok(gpar_graph_launch(gr) == GPAR_ERECORDING, "launch while recording: GPAR_ERECORDING");
  gpar_graph_end(eng, &g2);
  ok(gpar_graph_launch(g2) == GPAR_OK, "an empty graph launches");
  ok(gpar_graph_launch(gr) == GPAR_OK && gpar_read(b, 0, h, BYTES) == GPAR_OK && ((unsigned char *)h)[5] == 3,
     "launch runs the recorded fill and copy");
  ok(gpar_graph_destroy(gr) == GPAR_OK, "destroy");
  ok(gpar_graph_destroy(gr) == GPAR_EINVAL, "destroy twice: GPAR_EINVAL");
  ok(gpar_graph_launch(gr) == GPAR_EINVAL, "launch a destroyed graph: GPAR_EINVAL");
  ok(gpar_graph_launch(NULL) == GPAR_EINVAL && gpar_graph_destroy(NULL) == GPAR_EINVAL, "NULL graph: GPAR_EINVAL");
  gpar_graph_destroy(g2);
  gpar_buffer_release(a);
  gpar_buffer_release(b);
}

/* Shutdown frees live graphs; recording on a shut-down engine is refused. */
static void shutdown_case(void) {
  gpar_engine *e2 = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  gpar_buffer a;
  gpar_buffer_create(e2, GPAR_HOST, BYTES, &a);
  gpar_graph *gr = NULL;
  gpar_graph_begin(e2);
  gpar_fill(a, 0, BYTES, 1);
  gpar_graph_end(e2, &gr);
  gpar_graph_launch(gr);
  gpar_buffer_release(a);
  ok(gpar_shutdown(e2) == GPAR_OK, "shutdown with a live graph");
  ok(gpar_graph_launch(gr) == GPAR_EINVAL && gpar_graph_destroy(gr) == GPAR_EINVAL,
     "its graph is gone after shutdown: GPAR_EINVAL");
  ok(gpar_graph_begin(e2) == GPAR_ESHUTDOWN, "begin on a shut-down engine: GPAR_ESHUTDOWN");
  /* Shutting down while this thread records drops the recording. */
  e2 = tu_engine(GPAR_BACKEND_HOST, 2, 1);
  gpar_graph_begin(e2);
  gpar_buffer_create(e2, GPAR_HOST, BYTES, &a);
  gpar_fill(a, 0, BYTES, 1);
  ok(gpar_shutdown(e2) == GPAR_OK && gpar_graph_end(e2, &gr) == GPAR_ESHUTDOWN,
     "shutdown while recording; end afterwards: GPAR_ESHUTDOWN");
  /* Synchronous mode: recording does not wait; a launch completes before it returns. */
  e2 = tu_engine(GPAR_BACKEND_HOST, 2, 1);
  gpar_buffer_create(e2, GPAR_HOST, BYTES, &a);
  gpar_graph_begin(e2);
  gpar_fill(a, 0, BYTES, 5);
  gpar_graph_end(e2, &gr);
  int l = gpar_graph_launch(gr);
  unsigned char *p = gpar_buffer_host_ptr(a);
  ok(l == GPAR_OK && p && p[10] == 5, "synchronous engine: launch done on return");
  gpar_graph_destroy(gr);
  gpar_buffer_release(a);
  gpar_shutdown(e2);
}

/* Threads: while the main thread records, another thread's ops run at once; then several
 * threads record and launch their own graphs concurrently. */
typedef struct thr {
  gpar_buffer b;
  int st, launches, right;
} thr;

static void *eager_thread(void *p) {
  thr *t = p;
  t->st = gpar_fill(t->b, 0, BYTES, 9);
  if (t->st == GPAR_OK) t->st = gpar_wait(t->b);
  return NULL;
}

static void *graph_thread(void *p) {
  thr *t = p;
  gpar_graph *gr = NULL;
  float one = 1.0f;
  /* The graph writes 1.0 into element 0, then runs the host step (h = h / 2 + 1) on it all. */
  t->st = gpar_graph_begin(eng);
  if (t->st == GPAR_OK) t->st = gpar_write(t->b, 0, &one, sizeof one);
  if (t->st == GPAR_OK) t->st = gpar_submit(eng, GPAR_HOST, host_step, &t->b, NULL, 0, &t->b, 1);
  int e = gpar_graph_end(eng, &gr);
  if (t->st == GPAR_OK) t->st = e;
  for (int i = 0; i < t->launches && t->st == GPAR_OK; i++) t->st = gpar_graph_launch(gr);
  float h[2];
  if (t->st == GPAR_OK) t->st = gpar_read(t->b, 0, h, sizeof h);
  /* Element 0: 1 / 2 + 1 = 1.5 after every launch; element 1: x -> x / 2 + 1 from 0, n times. */
  double want = 0;
  for (int i = 0; i < t->launches; i++) want = want * 0.5 + 1.0;
  t->right = t->st == GPAR_OK && h[0] == 1.5f && fabs(h[1] - want) < 1e-5;
  if (gr) gpar_graph_destroy(gr);
  return NULL;
}

static void threads_case(void) {
  thr t = {mk(GPAR_HOST), 0, 0, 0};
  gpar_fill(t.b, 0, BYTES, 0);
  gpar_wait(t.b);
  pthread_t th;
  gpar_graph *gr = NULL;
  gpar_graph_begin(eng);
  pthread_create(&th, NULL, eager_thread, &t);
  pthread_join(th, NULL);
  unsigned char *p = gpar_buffer_host_ptr(t.b);
  ok(t.st == GPAR_OK && p && p[100] == 9, "another thread's fill and wait run while this thread records (%s)",
     gpar_status_name(t.st));
  gpar_graph_end(eng, &gr);
  gpar_graph_destroy(gr);
  enum { NT = 4 };
  thr ts[NT];
  pthread_t tid[NT];
  for (int i = 0; i < NT; i++) {
    ts[i] = (thr){mk(GPAR_HOST), 0, 10 + i, 0};
    gpar_fill(ts[i].b, 0, BYTES, 0);
    pthread_create(&tid[i], NULL, graph_thread, &ts[i]);
  }
  int good = 0;
  for (int i = 0; i < NT; i++) {
    pthread_join(tid[i], NULL);
    good += ts[i].right;
    gpar_buffer_release(ts[i].b);
  }
  ok(good == NT, "%d threads record and launch their own graphs at once: %d right", NT, good);
  gpar_buffer_release(t.b);
}

int main(void) {
  tap_start();
  eng = tu_engine(0, 0, 0);
  ndev = gpar_device_count(eng);
  int all[16], na = 0;
  for (int d = 0; d < ndev; d++) {
    gpar_device_props p;
    gpar_device_info(eng, d, &p);
    char name[200];
    snprintf(name, sizeof name, "device %d (%s %s)", d, p.backend, p.name);
    replay_vs_eager(name, &d, 1, 5);
    fault_case(d);
    fault_exact(d);
    released_case(d);
    failed_input_part(d);
    if (p.backend_id != GPAR_BACKEND_HOST) {
      fault_across_parts(d);
      write_fails_later_chunk(eng, d, 1, "fault pinned");
    }
    if (p.backend_id == GPAR_BACKEND_CUDA) capture_fault_case(d);
    if (na < 16) all[na++] = d;
  }
  if (na > 1) {
    replay_vs_eager("every device in one DAG", all, na, 4);
    int rev[16];
    for (int i = 0; i < na; i++) rev[i] = all[na - 1 - i];
    replay_vs_eager("every device, reversed", rev, na, 3);
    fault_two_parts(all[0], all[na - 1]);
    fault_two_parts(all[na - 1], all[0]);
    sync_fault_two_parts(all[0], all[na - 1]);
    sync_fault_two_parts(all[na - 1], all[0]);
  }
  for (int a = 0; a < na; a++) {
    gpar_device_props pa, pb;
    if (gpar_device_info(eng, all[a], &pa) || pa.backend_id != GPAR_BACKEND_CUDA) continue;
    for (int b = 0; b < na; b++)
      if (b != a && all[b] < 64 && (pa.peer_mask >> all[b] & 1) && gpar_device_info(eng, all[b], &pb) == GPAR_OK &&
          pb.backend_id == GPAR_BACKEND_CUDA)
        peer_capture_case(all[a], all[b]);
  }
  /* The pinned pool's limit: 12 MiB hold the first 8 MiB staging chunk, not the second. */
  for (int d = 0; d < ndev; d++) {
    gpar_device_props p;
    if (gpar_device_info(eng, d, &p) || p.backend_id == GPAR_BACKEND_HOST) continue;
    gpar_config cfg;
    gpar_config_init(&cfg);
    cfg.backends = GPAR_BACKEND_HOST | p.backend_id;
    cfg.pinned_limit = (size_t)12 << 20;
    cfg.quiet = 1;
    gpar_engine *e2 = NULL;
    if (gpar_init(&e2, &cfg) != GPAR_OK) {
      ok(0, "an engine with a 12 MiB pinned limit: %s", gpar_last_error());
      break;
    }
    int d2 = gpar_device_find(e2, p.backend_id, -1, 0);
    if (d2 >= 0) write_fails_later_chunk(e2, d2, 0, "pinned limit 12 MiB");
    gpar_shutdown(e2);
    break;
  }
  bad_input();
  threads_case();
  shutdown_case();
  ok(gpar_shutdown(eng) == GPAR_OK, "shutdown");
  return done_testing(); /* the exit status says whether every test passed */
}
