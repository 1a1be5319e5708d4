/* cuda_nccl_abort.c: a stuck NCCL collective is aborted, not waited for (the NCCL watchdog). On
 * two CUDA devices with NCCL, an allreduce whose member 0 starts at once while member 1's input
 * waits for a host op that this test holds: member 0's kernel waits for a partner that does not
 * come within GPAR_COMM_TIMEOUT (2 s here unless the environment sets it). Checks that the
 * watchdog aborts the communicator and member 0's op fails with GPAR_ETIMEDOUT at the wait on
 * its buffer, that member 1's op, issued after the abort, fails the same way, that
 * gpar_comm_destroy and gpar_shutdown return, and that unrelated work on both GPUs runs while
 * the collective is stuck and after the abort (the aborted kernel's lane included), as does a
 * new communicator. No check depends on timing: the host op is released by the test itself,
 * after member 0's failure was seen. When nothing aborts, the wait on member 0 never returns
 * and tap.h's watchdog bails out (GPAR_TEST_TIMEOUT). Skips wholly without two CUDA devices,
 * without NCCL in the build, or with GPAR_COMM_STAGED set. */
#include <pthread.h>

#include "testutil.h"

#define COUNT 8 /* floats per member: the same size for every collective here */

/* A host op that holds until the test lets it go, then writes 2.0f into its buffer. */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
  float *dst;
} gate;

static int held_fn(const gpar_native *nat, void *arg) {
  gate *g = arg;
  (void)nat;
  pthread_mutex_lock(&g->mu);
  while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
  for (int i = 0; i < COUNT; i++) g->dst[i] = 2.0f;
  return GPAR_OK;
}

static void gate_open(gate *g) {
  pthread_mutex_lock(&g->mu);
  g->open = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* Every one of the COUNT floats of b equals want. */
static int all_equal(gpar_buffer b, float want, const char *what) {
  float got[COUNT];
  int st = gpar_read(b, 0, got, sizeof got);
  if (st != GPAR_OK) {
    diag("  %s: gpar_read: %s (%s)", what, gpar_status_name(st), gpar_last_error());
    return 0;
  }
  for (int i = 0; i < COUNT; i++)
    if (got[i] != want) {
      diag("  %s: element %d is %g, want %g", what, i, (double)got[i], (double)want);
      return 0;
    }
  return 1;
}

/* b0 = 1, b1 = 2, allreduce SUM on comm: both hold 3. */
static int sum_is_three(gpar_comm comm, gpar_buffer b0, gpar_buffer b1, const char *what) {
  const float one[COUNT] = {1, 1, 1, 1, 1, 1, 1, 1}, two[COUNT] = {2, 2, 2, 2, 2, 2, 2, 2};
  gpar_buffer b[2] = {b0, b1};
  int st;
  if ((st = gpar_write(b0, 0, one, sizeof one)) || (st = gpar_write(b1, 0, two, sizeof two)) ||
      (st = gpar_allreduce(comm, b, NULL, COUNT, GPAR_FLOAT, GPAR_SUM))) {
    diag("  %s: %s (%s)", what, gpar_status_name(st), gpar_last_error());
    return 0;
  }
  return all_equal(b0, 3.0f, what) & all_equal(b1, 3.0f, what);
}

/* The float whose four bytes are v. */
static float byte_float(unsigned char v) {
  float f;
  unsigned char b[sizeof f];
  memset(b, v, sizeof b);
  memcpy(&f, b, sizeof f);
  return f;
}

/* Unrelated work on u's device: fill u with byte v and read it back. */
static int fill_read(gpar_buffer u, unsigned char v, const char *what) {
  int st = gpar_fill(u, 0, COUNT * sizeof(float), v);
  if (st) {
    diag("  %s: gpar_fill: %s (%s)", what, gpar_status_name(st), gpar_last_error());
    return 0;
  }
  return all_equal(u, byte_float(v), what);
}

int main(void) {
#ifndef GPAR_TEST_HAVE_NCCL
  skip_all("libgpar built without NCCL (CUDA collectives are staged through host memory)");
#endif
  if (getenv("GPAR_COMM_STAGED") && atoi(getenv("GPAR_COMM_STAGED")))
    skip_all("GPAR_COMM_STAGED is set: CUDA collectives are staged, not NCCL's");
  gpar_config cfg;
  gpar_engine *eng = NULL;
  gpar_config_init(&cfg);
  if (!getenv("GPAR_COMM_TIMEOUT")) cfg.comm_timeout = 2.0;
  cfg.backends = GPAR_BACKEND_CUDA;
  cfg.quiet = 1;
  int st = gpar_init(&eng, &cfg);
  if (st != GPAR_OK) {
    printf("Bail out! gpar_init: %s (%s)\n", gpar_status_name(st), gpar_last_error());
    return 1;
  }
  int d[2] = {gpar_device_find(eng, GPAR_BACKEND_CUDA, -1, 0), gpar_device_find(eng, GPAR_BACKEND_CUDA, -1, 1)};
  if (d[0] < 0 || d[1] < 0) {
    gpar_shutdown(eng);
    skip_all("fewer than two CUDA devices");
  }
  tap_start();
  diag("CUDA devices %d and %d, GPAR_COMM_TIMEOUT %.0f s", d[0], d[1], cfg.comm_timeout);
  const size_t bytes = COUNT * sizeof(float);
  gpar_buffer b0 = tu_buffer(eng, d[0], bytes), b1 = tu_buffer(eng, d[1], bytes);
  gpar_buffer u0 = tu_buffer(eng, d[0], bytes), u1 = tu_buffer(eng, d[1], bytes);
  gpar_buffer h = tu_buffer(eng, GPAR_HOST, bytes);
  gpar_comm comm = {0};

  /* 1. The communicator works: NCCL's path, and its connections for this size are made. */
  st = gpar_comm_create(eng, d, 2, &comm);
  is_status(st, GPAR_OK, "gpar_comm_create over the two CUDA devices");
  if (st != GPAR_OK) bail_out("no communicator");
  ok(sum_is_three(comm, b0, b1, "first allreduce"), "an allreduce before the stuck one: 1 + 2 = 3 on both");
  is_status(gpar_wait_all(eng), GPAR_OK, "no error before the stuck collective");

  /* 2. Stuck: member 1's input comes from a host op held by the test. */
  gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, gpar_buffer_host_ptr(h)};
  if (!g.dst) bail_out("no host pointer for the GPAR_HOST buffer");
  gpar_buffer pair[2] = {b0, b1};
  st = gpar_submit(eng, GPAR_HOST, held_fn, &g, NULL, 0, &h, 1);
  if (st == GPAR_OK) st = gpar_copy(b1, 0, h, 0, bytes);
  if (st == GPAR_OK) st = gpar_allreduce(comm, pair, NULL, COUNT, GPAR_FLOAT, GPAR_SUM);
  is_status(st, GPAR_OK, "the allreduce whose member 1 waits for a held host op is accepted");
  if (st != GPAR_OK) {
    gate_open(&g);
    bail_out("could not set up the stuck collective");
  }

  /* 3. While member 0 waits inside NCCL (the host op is still held), both GPUs run other work. */
  ok(fill_read(u0, 0x3f, "GPU 0 while stuck"), "GPU 0: a fill and a read run while the collective is stuck");
  ok(fill_read(u1, 0x3e, "GPU 1 while stuck"), "GPU 1: a fill and a read run while the collective is stuck");

  /* 4. The watchdog aborts after GPAR_COMM_TIMEOUT: member 0's op fails at the wait on b0. */
  st = gpar_wait(b0);
  is_status(st, GPAR_ETIMEDOUT, "member 0 of the stuck allreduce fails with GPAR_ETIMEDOUT at gpar_wait");
  diag("  gpar_wait(member 0): %s (%s)", gpar_status_name(st), gpar_last_error());

  /* 5. Released now, member 1's op runs on an aborted communicator: it fails the same way. */
  gate_open(&g);
  st = gpar_wait(b1);
  is_status(st, GPAR_ETIMEDOUT, "member 1, issued after the abort, fails with GPAR_ETIMEDOUT");
  diag("  gpar_wait(member 1): %s (%s)", gpar_status_name(st), gpar_last_error());
  is_status(gpar_comm_destroy(comm), GPAR_OK, "gpar_comm_destroy returns on the aborted communicator");

  /* 6. After the abort: both GPUs, and the lanes the aborted kernels ran on (a copy between the
   * GPUs runs on its source's peer lane, where NCCL ran), still work; so does a new
   * communicator. */
  ok(fill_read(u0, 0x3d, "GPU 0 after the abort"), "GPU 0: a fill and a read run after the abort");
  ok(fill_read(u1, 0x3c, "GPU 1 after the abort"), "GPU 1: a fill and a read run after the abort");
  st = gpar_copy(u1, 0, u0, 0, bytes);
  ok(st == GPAR_OK && all_equal(u1, byte_float(0x3d), "copy GPU 0 -> GPU 1"),
     "a copy GPU 0 -> GPU 1 (GPU 0's peer lane, where member 0 was aborted) lands");
  st = fill_read(u1, 0x3a, "GPU 1 refill") ? gpar_copy(u0, 0, u1, 0, bytes) : GPAR_EINVAL;
  ok(st == GPAR_OK && all_equal(u0, byte_float(0x3a), "copy GPU 1 -> GPU 0"),
     "a copy GPU 1 -> GPU 0 (GPU 1's peer lane, where member 1 was refused) lands");
  gpar_comm again = {0};
  st = gpar_comm_create(eng, d, 2, &again);
  is_status(st, GPAR_OK, "a new communicator over the same GPUs after the abort");
  ok(st == GPAR_OK && sum_is_three(again, b0, b1, "new communicator"), "its allreduce: 1 + 2 = 3 on both");
  if (st == GPAR_OK) is_status(gpar_comm_destroy(again), GPAR_OK, "the new communicator is destroyed");

  st = gpar_wait_all(eng);
  is_status(st, GPAR_ETIMEDOUT, "gpar_wait_all reports the aborted collective");
  gpar_buffer_release(b0);
  gpar_buffer_release(b1);
  gpar_buffer_release(u0);
  gpar_buffer_release(u1);
  gpar_buffer_release(h);
  is_status(gpar_shutdown(eng), GPAR_OK, "gpar_shutdown returns");
  return done_testing();
}
