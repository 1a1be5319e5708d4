/* handles.c: handles that must never come back (the fuzzer's findings on stale handles). Released, foreign
 * and shut-down handles are refused, also after more engine lifetimes than engine slots and at
 * the very end of the engine and buffer serial counters (jumped there by a test hook); a GEMM
 * range-checks operands it does not read (k == 0); gpar_buffer_create leaves the null handle on
 * every failure; a bufferless gpar_submit on a dead engine token is refused and runs nothing;
 * handles forged next to a real one never reach the engine's ordering tokens. The
 * serial jump comes last: it uses the counters up for this process, and creating after that keeps
 * failing (the counters do not wrap). */
#include <limits.h>

#include "testutil.h"

/* Test hook exported by libgpar (not in gpar.h): the next engine and buffer serials. */
void gpar__test_set_serials(uint64_t next_engine, uint64_t next_buffer);

#define ENGINE_SERIAL_MAX ((uint64_t)(UINTPTR_MAX >> 7))

static gpar_engine *host_engine(void) { return tu_engine(GPAR_BACKEND_HOST, 1, 0); }

static int is_null(gpar_buffer b) { return b.id == 0 && b.serial == 0; }

/* A user function that counts its runs: a bufferless gpar_submit on a dead engine must not run it. */
static atomic_int stale_runs;
static int count_run(const gpar_native *nat, void *arg) {
  (void)nat;
  (void)arg;
  atomic_fetch_add(&stale_runs, 1);
  return GPAR_OK;
}

/* Released, foreign and shut-down handles, across more lifetimes than there are engine slots. */
static void test_stale(void) {
  gpar_engine *e1 = host_engine(), *e2 = host_engine();
  gpar_buffer a, r, f;
  int ok1 = gpar_buffer_create(e1, GPAR_HOST, 64, &a) == GPAR_OK && gpar_buffer_create(e1, GPAR_HOST, 64, &r) == GPAR_OK &&
            gpar_buffer_create(e2, GPAR_HOST, 64, &f) == GPAR_OK;
  if (!ok1) bail_out("buffer create");
  is_status(gpar_buffer_release(r), GPAR_OK, "release");
  is_status(gpar_fill(r, 0, 8, 0), GPAR_EBADBUF, "released handle: EBADBUF");
  gpar_buffer again;
  gpar_buffer_create(e1, GPAR_HOST, 64, &again); /* likely takes r's slot */
  is_status(gpar_fill(r, 0, 8, 0), GPAR_EBADBUF, "released handle after its slot was reused: EBADBUF");
  is_status(gpar_copy(a, 0, f, 0, 8), GPAR_EENGINE, "foreign handle: EENGINE");
  is_status(gpar_submit(e1, GPAR_HOST, NULL, NULL, NULL, 0, NULL, 0), GPAR_EINVAL, "live engine token works");
  is_status(gpar_shutdown(e2), GPAR_OK, "shutdown e2");
  is_status(gpar_copy(a, 0, f, 0, 8), GPAR_EBADBUF, "handle of a shut-down engine: EBADBUF");
  is_status(gpar_wait_all(e2), GPAR_ESHUTDOWN, "token of a shut-down engine: ESHUTDOWN");
  is_status(gpar_submit(e2, GPAR_HOST, count_run, NULL, NULL, 0, NULL, 0), GPAR_ESHUTDOWN,
            "bufferless gpar_submit on a shut-down engine: ESHUTDOWN");

  /* 3 x 64 lifetimes: every slot comes back several times; the old handles stay dead. */
  int bad = 0;
  for (int i = 0; i < 192; i++) {
    gpar_engine *e = host_engine();
    gpar_buffer b;
    if (gpar_buffer_create(e, GPAR_HOST, 64, &b) != GPAR_OK) bad++;
    if (gpar_wait_all(e2) != GPAR_ESHUTDOWN || gpar_fill(f, 0, 8, 0) != GPAR_EBADBUF) bad++;
    if (b.id == f.id && b.serial == f.serial) bad++;
    /* e2's slot comes back: its stale token's bufferless submit must reach no engine */
    if (gpar_submit(e2, GPAR_HOST, count_run, NULL, NULL, 0, NULL, 0) != GPAR_ESHUTDOWN) bad++;
    if (gpar_wait_all(e) != GPAR_OK) bad++;
    if (gpar_shutdown(e) != GPAR_OK) bad++;
    if (gpar_fill(b, 0, 8, 0) != GPAR_EBADBUF || gpar_device_count(e) != GPAR_ESHUTDOWN) bad++;
    if (gpar_submit(e, GPAR_HOST, count_run, NULL, NULL, 0, NULL, 0) != GPAR_ESHUTDOWN) bad++;
  }
  is_int(bad, 0, "192 engine lifetimes: stale engine and buffer handles stay refused (bufferless submits too)");
  is_int(atomic_load(&stale_runs), 0, "  no bufferless submit on a dead engine ran");
  gpar_buffer_release(again);
  gpar_buffer_release(a);
  is_status(gpar_shutdown(e1), GPAR_OK, "shutdown e1");
}

/* The engine's own ordering tokens (a graph's fence, a communicator's member tokens) are buffers
 * with no memory, made right after a user's buffer: handles forged from that buffer's by stepping
 * its slot and serial (what a one-bit slip does) must not reach them. Each is refused like any
 * handle that names no buffer: a fill, a wait and a release give GPAR_EBADBUF, and the graph and
 * communicator still work after. */
static void test_forged_token(void) {
  gpar_engine *e = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  gpar_buffer a, m;
  gpar_graph *g = NULL;
  gpar_comm c;
  int dev0 = 0; /* the CPU device: a communicator of one member still has its token */
  if (gpar_buffer_create(e, GPAR_HOST, 64, &a) != GPAR_OK) bail_out("buffer create");
  gpar_graph_begin(e); /* the fence and the member tokens take the next slots and serials */
  gpar_fill(a, 0, 64, 1);
  int ge = gpar_graph_end(e, &g);
  int ce = gpar_comm_create(e, &dev0, 1, &c);
  int refused = 0, tried = 0;
  for (uint64_t k = 1; k <= 8; k++) {
    gpar_buffer f = {a.id + k, a.serial + k};
    tried++;
    int st1 = gpar_fill(f, 0, 4, 0), st2 = gpar_wait(f), st3 = gpar_buffer_release(f);
    if (st1 == GPAR_EBADBUF && st2 == GPAR_EBADBUF && st3 == GPAR_EBADBUF)
      refused++;
    else
      diag("forged handle +%llu: fill %s, wait %s, release %s", (unsigned long long)k, gpar_status_name(st1),
           gpar_status_name(st2), gpar_status_name(st3));
  }
  is_int(refused, tried, "handles forged next to a buffer never reach the engine's tokens (graph fence, member tokens)");
  gpar_buffer_create(e, 0, 16, &m);
  float three = 3.0f, got = 0;
  gpar_write(m, 0, &three, sizeof three);
  int l = ge == GPAR_OK ? gpar_graph_launch(g) : ge;
  int r = ce == GPAR_OK ? gpar_allreduce(c, &m, NULL, 1, GPAR_FLOAT, GPAR_SUM) : ce;
  int w = gpar_wait_all(e), rd = gpar_read(m, 0, &got, sizeof got);
  ok(l == GPAR_OK && r == GPAR_OK && w == GPAR_OK && rd == GPAR_OK && got == 3.0f &&
         gpar_graph_destroy(g) == GPAR_OK && gpar_comm_destroy(c) == GPAR_OK,
     "  the graph launches and is destroyed, the communicator reduces (%g) and is destroyed", got);
  gpar_buffer_release(a);
  gpar_buffer_release(m);
  is_status(gpar_shutdown(e), GPAR_OK, "  shutdown");
}

/* gpar_buffer_create leaves the null handle on every failure. */
static void test_create_null(void) {
  gpar_engine *e = host_engine(), *dead = host_engine();
  gpar_shutdown(dead);
  const gpar_buffer junk = {0x0123456789abcdefull, 99};
  gpar_buffer b = junk;
  is_status(gpar_buffer_create(NULL, GPAR_HOST, 64, &b), GPAR_EINVAL, "create on a NULL engine");
  ok(is_null(b), "  leaves the null handle");
  b = junk;
  is_status(gpar_buffer_create(dead, GPAR_HOST, 64, &b), GPAR_ESHUTDOWN, "create on a shut-down engine");
  ok(is_null(b), "  leaves the null handle");
  b = junk;
  is_status(gpar_buffer_create(e, GPAR_HOST, 0, &b), GPAR_EINVAL, "create of 0 bytes");
  ok(is_null(b), "  leaves the null handle");
  b = junk;
  is_status(gpar_buffer_create(e, 1000, 64, &b), GPAR_ENODEV, "create on a missing device");
  ok(is_null(b), "  leaves the null handle");
  b = junk;
  is_status(gpar_buffer_create(e, GPAR_HOST, SIZE_MAX, &b), GPAR_ENOMEM, "create of SIZE_MAX bytes");
  ok(is_null(b), "  leaves the null handle");
  is_status(gpar_buffer_create(e, GPAR_HOST, 64, NULL), GPAR_EINVAL, "create into a NULL handle pointer");
  gpar_shutdown(e);
}

/* k == 0: A and B are range-checked although no element of them is read. */
static void test_gemm_k0(void) {
  gpar_engine *e = host_engine();
  int cpu = gpar_device_find(e, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  gpar_buffer a, c;
  if (gpar_buffer_create(e, cpu, 16 * sizeof(float), &a) || gpar_buffer_create(e, cpu, 16 * sizeof(float), &c))
    bail_out("buffer create");
  const gpar_trans N = GPAR_NO_TRANS;
  is_status(gpar_sgemm(N, N, 1, 4, 0, 0.5f, a, SIZE_MAX, 1, a, 0, 1, 0.5f, c, 0, 1), GPAR_ERANGE,
            "k == 0, A offset SIZE_MAX (the issue's call): ERANGE");
  is_status(gpar_sgemm(N, N, 1, 4, 0, 0.5f, a, 0, 1, a, 17, 1, 0.5f, c, 0, 1), GPAR_ERANGE,
            "k == 0, B offset past its buffer: ERANGE");
  is_status(gpar_sgemm(N, N, 0, 4, 3, 0.5f, a, 0, 1, a, 0, 3, 0.5f, c, 17, 1), GPAR_ERANGE,
            "m == 0, C offset past its buffer: ERANGE");
  float v[16], out[16];
  for (int i = 0; i < 16; i++) v[i] = (float)(i + 1);
  gpar_write(c, 0, v, sizeof v);
  /* Offsets at the end of the buffer (one past the last element) are in range for empty A, B. */
  is_status(gpar_sgemm(N, N, 4, 4, 0, 1.0f, a, 16, 4, a, 16, 1, 0.5f, c, 0, 4), GPAR_OK,
            "k == 0 with A and B offsets at their buffer's end: accepted");
  is_status(gpar_read(c, 0, out, sizeof out), GPAR_OK, "read C");
  int good = 1;
  for (int i = 0; i < 16; i++) good &= out[i] == 0.5f * v[i];
  ok(good, "k == 0 computes C = beta * C");
  gpar_shutdown(e);
}

/* The counters' end: handles made just before it are distinct and stay dead; then init and
 * create fail cleanly instead of wrapping. */
static void test_wrap(void) {
  gpar_engine *old = host_engine();
  gpar_buffer ob;
  gpar_buffer_create(old, GPAR_HOST, 64, &ob);
  gpar_shutdown(old);

  gpar__test_set_serials(ENGINE_SERIAL_MAX - 1, UINT64_MAX - 2);
  gpar_engine *e1 = host_engine(); /* serial MAX - 1 */
  gpar_buffer b[3];
  int st[4];
  st[0] = gpar_buffer_create(e1, GPAR_HOST, 64, &b[0]);
  st[1] = gpar_buffer_create(e1, GPAR_HOST, 64, &b[1]);
  st[2] = gpar_buffer_create(e1, GPAR_HOST, 64, &b[2]);
  gpar_buffer last = {7, 7};
  st[3] = gpar_buffer_create(e1, GPAR_HOST, 64, &last);
  ok(st[0] == GPAR_OK && st[1] == GPAR_OK && st[2] == GPAR_OK && b[2].serial == UINT64_MAX,
     "the last three buffer serials are given (last %llu)", (unsigned long long)b[2].serial);
  ok(st[3] == GPAR_ENOMEM && is_null(last), "then create fails with ENOMEM and the null handle (%s)",
     gpar_status_name(st[3]));
  /* Used up means used up: the failed create must not have moved the counter round. */
  gpar_buffer again[2] = {{7, 7}, {7, 7}};
  int sa0 = gpar_buffer_create(e1, GPAR_HOST, 64, &again[0]), sa1 = gpar_buffer_create(e1, GPAR_HOST, 64, &again[1]);
  ok(sa0 == GPAR_ENOMEM && sa1 == GPAR_ENOMEM && is_null(again[0]) && is_null(again[1]),
     "  and so do the next two creates: the serials do not wrap (%s, %s; serial %llu)", gpar_status_name(sa0),
     gpar_status_name(sa1), (unsigned long long)again[1].serial);
  is_status(gpar_fill(ob, 0, 8, 0), GPAR_EBADBUF, "a handle from before the jump stays dead");
  is_status(gpar_wait_all(old), GPAR_ESHUTDOWN, "an engine token from before the jump stays dead");
  is_status(gpar_buffer_release(b[1]), GPAR_OK, "release a buffer with a serial near the end");
  is_status(gpar_fill(b[1], 0, 8, 0), GPAR_EBADBUF, "  and its handle is refused");
  is_status(gpar_fill(b[2], 0, 8, 1), GPAR_OK, "the buffer with serial UINT64_MAX works");
  gpar_engine *e2 = host_engine(); /* serial MAX: the last */
  is_status(gpar_shutdown(e1), GPAR_OK, "shutdown the second-to-last engine");
  is_status(gpar_wait_all(e1), GPAR_ESHUTDOWN, "  its token is refused");
  is_status(gpar_fill(b[0], 0, 8, 0), GPAR_EBADBUF, "  and its buffers");
  is_status(gpar_wait_all(e2), GPAR_OK, "the engine with the last serial works");
  gpar_engine *e3 = (gpar_engine *)(uintptr_t)1;
  gpar_config cfg;
  gpar_config_init(&cfg);
  cfg.backends = GPAR_BACKEND_HOST;
  cfg.quiet = 1;
  int s3 = gpar_init(&e3, &cfg);
  ok(s3 == GPAR_ENOMEM && e3 == NULL, "no serial left: gpar_init fails with ENOMEM and NULL (%s)",
     gpar_status_name(s3));
  gpar_engine *e4 = (gpar_engine *)(uintptr_t)1;
  int s4 = gpar_init(&e4, &cfg);
  ok(s4 == GPAR_ENOMEM && e4 == NULL, "  and again: engine serials do not wrap (%s)", gpar_status_name(s4));
  if (s4 == GPAR_OK) gpar_shutdown(e4);
  is_status(gpar_shutdown(e2), GPAR_OK, "shutdown the last engine");
  is_status(gpar_wait_all(e2), GPAR_ESHUTDOWN, "  its token is refused");
  is_status(gpar_wait_all(old), GPAR_ESHUTDOWN, "  the first engine's token still is");
}

int main(void) {
  tap_start();
  test_stale();
  test_forged_token();
  test_create_null();
  test_gemm_k0();
  test_wrap();
  return done_testing();
}
