/* atomicity.c: a call made of several ops is one submission, ordered against other threads'
 * calls on the same buffers as a whole, as under a global lock: a graph launch (one op per
 * device part), a staged allreduce (copies in, a CPU reduction, copies back), a multi-chunk
 * gpar_write and gpar_read of a device buffer, a staged gpar_copy between two devices without a
 * direct path, a two-pass array reduction (its launch into partials and the one out of them).
 * Two threads race one call each, round after round; every outcome must be one that some order
 * of the two calls gives. And a call accepted before gpar_shutdown that meets the
 * drain runs whole: a multi-chunk gpar_read racing the shutdown either fills the user's memory
 * whole or fails with nothing written there. Each test can be named on the command line; those
 * that need an event-backend device skip without one. */
#include <pthread.h>

#include "testutil.h"

static gpar_engine *eng;
static int gpu = -1, gpu2 = -1; /* devices of an event backend (PoCL in make check) */
static uint64_t seed;

/* Two racing calls: run a() in this thread and b() in another, started together. */
typedef struct race {
  void (*b)(void *);
  void *arg;
  atomic_int ready, go;
} race;

static void *race_main(void *arg) {
  race *r = arg;
  atomic_store(&r->ready, 1);
  while (!atomic_load(&r->go)) {
  }
  r->b(r->arg);
  return NULL;
}

/* a() starts up to lag_us after b() (0: a few thousand loop iterations). */
static void race_run_lag(void (*a)(void *), void (*b)(void *), void *arg, int lag_us) {
  race r = {b, arg, 0, 0};
  pthread_t th;
  if (pthread_create(&th, NULL, race_main, &r)) bail_out("pthread_create");
  while (!atomic_load(&r.ready)) {
  }
  int spin = tu_range(&seed, 0, 2000), lag = lag_us ? tu_range(&seed, 0, lag_us) : 0;
  atomic_store(&r.go, 1);
  for (volatile int i = 0; i < spin; i++) {
  }
  if (lag) tu_sleep_us(lag);
  a(arg);
  pthread_join(th, NULL);
}

static void race_run(void (*a)(void *), void (*b)(void *), void *arg) { race_run_lag(a, b, arg, 0); }

/* ------------------------------------------------------------ graph launch */

/* Each op notes when it ran (a global sequence). */
static atomic_int seq;
typedef struct note {
  int at;
} note;
static int note_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  ((note *)arg)->at = atomic_fetch_add(&seq, 1);
  return GPAR_OK;
}

typedef struct launch_case {
  gpar_graph *g;
  gpar_buffer x, y;
  note a, b, o;
  int ls, os;
} launch_case;

static void do_launch(void *arg) {
  launch_case *c = arg;
  c->ls = gpar_graph_launch(c->g);
}
static void do_other(void *arg) { /* reads what both parts write */
  launch_case *c = arg;
  gpar_buffer both[2] = {c->x, c->y};
  c->os = gpar_submit(eng, GPAR_HOST, note_fn, &c->o, both, 2, NULL, 0);
}

/* A graph of two parts (a host op writing x, then an op of an event device writing y) launched
 * while another thread submits an op that reads x and y: that op runs before both parts or
 * after both, never between (a launch "ordered as if every recorded op were submitted at that
 * moment", gpar.h). */
static void test_graph_launch(int rounds) {
  launch_case c;
  memset(&c, 0, sizeof c);
  c.x = tu_buffer(eng, GPAR_HOST, 64);
  c.y = tu_buffer(eng, gpu, 64);
  if (gpar_graph_begin(eng) != GPAR_OK || gpar_submit(eng, GPAR_HOST, note_fn, &c.a, NULL, 0, &c.x, 1) != GPAR_OK ||
      gpar_submit(eng, gpu, note_fn, &c.b, &c.x, 1, &c.y, 1) != GPAR_OK || gpar_graph_end(eng, &c.g) != GPAR_OK)
    bail_out("graph set-up");
  int between = 0, bad = 0;
  for (int r = 0; r < rounds; r++) {
    race_run(do_launch, do_other, &c);
    if (gpar_wait_all(eng) != GPAR_OK || c.ls != GPAR_OK || c.os != GPAR_OK) bad++;
    if ((c.o.at > c.a.at) != (c.o.at > c.b.at)) between++;
  }
  ok(bad == 0 && between == 0, "%d launches of a 2-part graph racing an op that reads both parts' outputs: the op ran "
     "between the parts %d times (%d failed rounds)", rounds, between, bad);
  gpar_graph_destroy(c.g);
  gpar_buffer_release(c.x);
  gpar_buffer_release(c.y);
}

/* ------------------------------------------------------------ staged allreduce */

typedef struct reduce_case {
  gpar_comm comm;
  gpar_buffer m[2];
  int as, ws;
} reduce_case;

static float fv[2][256];

static void do_allreduce(void *arg) {
  reduce_case *c = arg;
  c->as = gpar_allreduce(c->comm, c->m, NULL, 256, GPAR_FLOAT, GPAR_SUM);
}
static void do_write_member(void *arg) {
  reduce_case *c = arg;
  float v[256];
  for (int i = 0; i < 256; i++) v[i] = 100.0f;
  c->ws = gpar_write(c->m[1], 0, v, sizeof v);
}

/* A staged allreduce over a host member and a device member (1 + 2) racing a write of 100 to
 * the device member: the allreduce first gives (3, 100), the write first (101, 101); its
 * copy-in, reduction and copy-back are one submission, so the write is never lost in between
 * (which gave (3, 3)). */
static void test_staged_allreduce(int rounds) {
  reduce_case c;
  int devs[2] = {gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0), gpu};
  if (gpar_comm_create(eng, devs, 2, &c.comm) != GPAR_OK) bail_out("gpar_comm_create");
  c.m[0] = tu_buffer(eng, GPAR_HOST, sizeof fv[0]);
  c.m[1] = tu_buffer(eng, gpu, sizeof fv[0]);
  int first = 0, second = 0, other = 0;
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < 256; i++) fv[0][i] = 1.0f, fv[1][i] = 2.0f;
    gpar_write(c.m[0], 0, fv[0], sizeof fv[0]);
    gpar_write(c.m[1], 0, fv[1], sizeof fv[1]);
    gpar_wait_all(eng);
    race_run(do_allreduce, do_write_member, &c);
    float h0[256], h1[256];
    int st = gpar_wait_all(eng) | c.as | c.ws | gpar_read(c.m[0], 0, h0, sizeof h0) | gpar_read(c.m[1], 0, h1, sizeof h1);
    if (st == GPAR_OK && h0[7] == 3.0f && h1[7] == 100.0f)
      first++;
    else if (st == GPAR_OK && h0[7] == 101.0f && h1[7] == 101.0f)
      second++;
    else if (other++ == 0)
      diag("  round %d: status %d, members %g, %g", r, st, (double)h0[7], (double)h1[7]);
  }
  ok(other == 0, "%d staged allreduces racing a write of a member: allreduce first %d, write first %d, neither %d",
     rounds, first, second, other);
  gpar_comm_destroy(c.comm);
  gpar_buffer_release(c.m[0]);
  gpar_buffer_release(c.m[1]);
}

/* ------------------------------------------------------------ chunked transfers */

/* 10 write chunks, 5 read chunks (more than a read's 4 staging slots), 10 legs of a staged
 * copy. */
#define BIG ((size_t)80 << 20)
static unsigned char *pat[2], *got;

typedef struct xfer_case {
  gpar_buffer d, e;
  int s[2];
} xfer_case;

static void do_write_a(void *arg) {
  xfer_case *c = arg;
  c->s[0] = gpar_write(c->d, 0, pat[0], BIG);
}
static void do_write_b(void *arg) {
  xfer_case *c = arg;
  c->s[1] = gpar_write(c->d, 0, pat[1], BIG);
}
static void do_read(void *arg) {
  xfer_case *c = arg;
  c->s[0] = gpar_read(c->d, 0, got, BIG);
}
static void do_staged(void *arg) {
  xfer_case *c = arg;
  c->s[0] = gpar_copy(c->e, 0, c->d, 0, BIG);
}

/* Which pattern p holds whole: 0 or 1, else -1 (a mix). */
static int whole(const unsigned char *p) {
  for (int k = 0; k < 2; k++)
    if (!memcmp(p, pat[k], BIG)) return k;
  return -1;
}

static int whole_in(gpar_buffer b) {
  return gpar_read(b, 0, got, BIG) == GPAR_OK ? whole(got) : -2;
}

/* Two multi-chunk writes of one device buffer from two threads: it holds one of the two whole
 * (never some chunks of each); a multi-chunk read racing a write sees the buffer before or after
 * it, whole; a staged copy racing a write of its source copies one version whole. */
static void test_transfers(const char *what, int rounds) {
  xfer_case c;
  memset(&c, 0, sizeof c);
  c.d = tu_buffer(eng, gpu, BIG);
  int mixed = 0, bad = 0, seen[2] = {0, 0};
  if (!strcmp(what, "staged") && gpu2 < 0) {
    skip(1, "staged: no two devices without a direct path");
    gpar_buffer_release(c.d);
    return;
  }
  if (gpu2 >= 0) c.e = tu_buffer(eng, gpu2, BIG);
  for (int r = 0; r < rounds; r++) {
    if (gpar_write(c.d, 0, pat[0], BIG) != GPAR_OK || gpar_wait_all(eng) != GPAR_OK) bad++;
    int k;
    if (!strcmp(what, "write")) {
      race_run(do_write_a, do_write_b, &c);
      k = gpar_wait_all(eng) | c.s[0] | c.s[1] ? -2 : whole_in(c.d);
    } else if (!strcmp(what, "read")) {
      race_run_lag(do_read, do_write_b, &c, 12000); /* the write's first chunks may go first */
      k = gpar_wait_all(eng) | c.s[0] | c.s[1] ? -2 : whole(got);
    } else {
      race_run(do_staged, do_write_b, &c);
      k = gpar_wait_all(eng) | c.s[0] | c.s[1] ? -2 : whole_in(c.e);
    }
    if (k >= 0) seen[k]++;
    if (k == -1) mixed++;
    if (k == -2) bad++;
  }
  ok(mixed == 0 && bad == 0, "%s: %d rounds of a multi-chunk %s racing a multi-chunk write: one whole version every "
     "time (first %d, second %d), mixed %d, failed %d", what, rounds,
     !strcmp(what, "write") ? "write" : !strcmp(what, "read") ? "read" : "staged copy", seen[0], seen[1], mixed, bad);
  gpar_buffer_release(c.d);
  if (c.e.id) gpar_buffer_release(c.e);
}

/* ------------------------------------------------------------ two-pass reductions */

#define RN 20000 /* a range reduction of more than 8192 elements, a row of more than 32 columns: two passes */
typedef struct red_case {
  gpar_buffer x, zero, out;
  int per_row; /* gpar_reduce_matrix of a 1 x RN row, else gpar_reduce_range */
  int rs, ss;
} red_case;
static void do_reduce(void *arg) {
  red_case *c = arg;
  c->rs = c->per_row ? gpar_reduce_matrix(GPAR_SUM, GPAR_FLOAT, 1, RN, c->x, 0, 1, GPAR_PER_ROW, c->out, 0)
                     : gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, RN, c->x, 0, c->out, 0);
}
static void do_spread(void *arg) { /* x[i] = 0 + out[0]: reads out, writes x */
  red_case *c = arg;
  c->ss = gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, RN, 1, c->zero, 0, RN, c->out, 0, GPAR_PER_COLUMN, c->x, 0, RN);
}
/* A two-pass reduction of x (RN ones) into out (2) racing an op that spreads out over x: the
 * reduction first gives out RN and x RN, the spread first x 2 and out 2 RN; its passes are one
 * submission, so the spread never runs between them (which gave out RN and x 2). */
static void test_reduce(int per_row, int rounds) {
  red_case c = {tu_buffer(eng, gpu, RN * 4), tu_buffer(eng, gpu, RN * 4), tu_buffer(eng, gpu, 4), per_row, 0, 0};
  float *h = malloc(RN * 4), two = 2.0f;
  if (!h) bail_out("out of memory");
  int first = 0, second = 0, other = 0;
  if (tu_fill_value(c.zero, RN, 0.0f) != GPAR_OK) bail_out("gpar_write");
  for (int r = 0; r < rounds; r++) {
    if (tu_fill_value(c.x, RN, 1.0f) != GPAR_OK || gpar_write(c.out, 0, &two, 4) != GPAR_OK) bail_out("gpar_write");
    gpar_wait_all(eng);
    race_run_lag(do_spread, do_reduce, &c, 40); /* the op up to 40 us after the reduction starts */
    float o = 0;
    int st = gpar_wait_all(eng) | c.rs | c.ss | gpar_read(c.out, 0, &o, 4) | gpar_read(c.x, 0, h, RN * 4);
    if (st == GPAR_OK && o == (float)RN && h[0] == (float)RN && h[RN - 1] == (float)RN)
      first++;
    else if (st == GPAR_OK && o == 2.0f * RN && h[0] == 2.0f && h[RN - 1] == 2.0f)
      second++;
    else if (other++ == 0)
      diag("  round %d: status %d, out %g, x[0] %g", r, st, (double)o, (double)h[0]);
  }
  ok(other == 0, "%d two-pass %s racing an op that reads out and writes x: reduction first %d, op first %d, neither %d",
     rounds, per_row ? "per-row reductions" : "range reductions", first, second, other);
  free(h);
  gpar_buffer_release(c.x), gpar_buffer_release(c.zero), gpar_buffer_release(c.out);
}

/* ------------------------------------------------------------ a call that meets the drain */

typedef struct drain_case {
  gpar_engine *e;
  gpar_buffer d;
  atomic_int started;
  int st;
} drain_case;

static void *drain_reader(void *arg) {
  drain_case *c = arg;
  atomic_store(&c->started, 1);
  c->st = gpar_read(c->d, 0, got, BIG);
  return NULL;
}

/* A multi-chunk read of a device buffer that gpar_shutdown meets while it runs: either it was
 * accepted and runs whole (GPAR_OK, the user's memory holds the buffer), or it fails with
 * GPAR_ESHUTDOWN and nothing was written into the user's memory; never some chunks of it. One
 * CPU worker, so the read's copy-out leaves the device copies nothing to overlap with. */
static void test_drain(int rounds) {
  int whole_ok = 0, refused = 0, bad = 0;
  for (int r = 0; r < rounds; r++) {
    drain_case c;
    memset(&c, 0, sizeof c);
    c.e = tu_engine(0, 1, 0);
    int dev = -1;
    for (int d = 0, n = gpar_device_count(c.e); d < n && dev < 0; d++) {
      tu_devinfo p;
      if (tu_device_info(c.e, d, &p) == GPAR_OK && p.backend_id != GPAR_BACKEND_HOST) dev = d;
    }
    c.d = tu_buffer(c.e, dev, BIG);
    if (gpar_write(c.d, 0, pat[1], BIG) != GPAR_OK || gpar_wait_all(c.e) != GPAR_OK) bad++;
    memset(got, 0xee, BIG);
    pthread_t th;
    if (pthread_create(&th, NULL, drain_reader, &c)) bail_out("pthread_create");
    while (!atomic_load(&c.started)) {
    }
    tu_sleep_us(tu_range(&seed, 0, 12000));
    gpar_shutdown(c.e);
    pthread_join(th, NULL);
    int untouched = 1;
    for (size_t i = 0; i < BIG && untouched; i += 4096) untouched = got[i] == 0xee;
    if (c.st == GPAR_OK && whole(got) == 1)
      whole_ok++;
    else if (c.st == GPAR_ESHUTDOWN && untouched)
      refused++;
    else if (bad++ == 0)
      diag("  round %d: read %s, user memory %s", r, gpar_status_name(c.st),
           whole(got) == 1 ? "whole" : untouched ? "untouched" : "partly written");
  }
  ok(bad == 0, "%d multi-chunk reads racing gpar_shutdown: whole %d, refused with nothing written %d, otherwise %d",
     rounds, whole_ok, refused, bad);
}

int main(int argc, char **argv) {
  tap_start();
  seed = tu_seed(25);
  eng = tu_engine(0, 2, 0);
  for (int d = 0, n = gpar_device_count(eng); d < n; d++) {
    tu_devinfo p;
    if (tu_device_info(eng, d, &p) != GPAR_OK || p.backend_id == GPAR_BACKEND_HOST) continue;
    if (gpu < 0) {
      gpu = d;
      continue;
    }
    tu_devinfo q;
    tu_device_info(eng, gpu, &q);
    if (gpu2 < 0 && (q.backend_id != p.backend_id || !(q.peer_mask >> d & 1))) gpu2 = d; /* no direct path */
  }
  if (gpu < 0) skip_all("no device of an event backend (CUDA, OpenCL)");
  pat[0] = malloc(BIG);
  pat[1] = malloc(BIG);
  got = malloc(BIG);
  if (!pat[0] || !pat[1] || !got) bail_out("out of memory");
  memset(pat[0], 0xa0, BIG);
  memset(pat[1], 0xb1, BIG);
  for (size_t i = 0; i < BIG; i += 8 << 20) pat[1][i] = (unsigned char)(i >> 20); /* chunks differ */
  if (tu_want(argc, argv, "launch")) test_graph_launch(300);
  if (tu_want(argc, argv, "allreduce")) test_staged_allreduce(200);
  if (tu_want(argc, argv, "write")) test_transfers("write", 8);
  if (tu_want(argc, argv, "read")) test_transfers("read", 8);
  if (tu_want(argc, argv, "staged")) test_transfers("staged", 8);
  if (tu_want(argc, argv, "reduce")) test_reduce(0, 300), test_reduce(1, 300);
  gpar_shutdown(eng);
  if (tu_want(argc, argv, "drain")) test_drain(10);
  free(pat[0]);
  free(pat[1]);
  free(got);
  return done_testing();
}
