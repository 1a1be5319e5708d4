/* faults_mpi.c: libgpar_mpi when ranks fall out of step, run by tests/mpi/run.sh with 2 and 3
 * ranks: MPI's limits refused at the call; program order across ranks; a late rank joining a
 * timed-out collective or send after the early rank wrote new data, and a broken communicator
 * after it; a failed submission enqueuing nothing; one CPU worker per communicator; the timeout
 * from the engine's config and set while an operation polls (the race shows under
 * --enable-tsan). Rank 0 prints TAP; every check is agreed by all ranks (mpi_test.h), whose
 * blocking calls also drive MPI's progress for the requests a timeout left behind. */
#include <limits.h>

#include "mpi_test.h"

static gpar_engine *engine(unsigned backends, int host_threads) {
  gpar_config cfg;
  gpar_engine *eng = NULL;
  gpar_config_init(&cfg);
  cfg.backends = backends;
  cfg.host_threads = host_threads;
  cfg.quiet = 1;
  cfg.comm_timeout = 60;
  if (gpar_init(&eng, &cfg) != GPAR_OK) bail_out("gpar_init failed");
  return eng;
}

static int host_of(gpar_engine *eng) { return gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0); }

static void sync_send(int to) {
  int x = 1;
  MPI_Send(&x, 1, MPI_INT, to, 4242, MPI_COMM_WORLD);
}

static int sync_recv(int from) {
  int x = 0;
  MPI_Recv(&x, 1, MPI_INT, from, 4242, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return x;
}

/* A host op that fills a float range; `after` (when set) must be nonzero first, then it sleeps
 * a while: the slow input of program_order's collective A. */
typedef struct fill_arg {
  float *p;
  size_t n;
  float v;
  atomic_int *after, *flag;
  long delay_us;
} fill_arg;

static int fill_op(const gpar_native *nat, void *arg) {
  (void)nat;
  fill_arg *a = arg;
  if (a->after) {
    if (!tu_wait_flag(a->after, 60)) return gpar_error_set(GPAR_EBACKEND, "fill_op: the other input was never written");
  }
  tu_sleep_us(a->delay_us); /* give a collective that (wrongly) does not wait for this op time to start */
  for (size_t i = 0; i < a->n; i++) a->p[i] = a->v;
  if (a->flag) atomic_store(a->flag, 1);
  return GPAR_OK;
}

/* Sizes and tags MPI cannot take are refused at the call, nothing enqueued. */
static void limits(gpar_engine *eng) {
  int hd = host_of(eng), peer = (rank + 1) % size;
  gpar_comm z;
  if (!mt_all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, &hd, 1, &z) == GPAR_OK, "limits: gpar_comm_create_mpi"))
    return;
  size_t big = (size_t)INT_MAX + 1;
  gpar_buffer b = {0};
  int made = gpar_buffer_create(eng, hd, big + 64, &b) == GPAR_OK; /* never touched: not committed */
  if (!mt_all_ok(made, "a CPU buffer of 2 GiB + 64 bytes")) {
    gpar_comm_destroy(z);
    return;
  }
  gpar_stats s0, s1;
  gpar_wait_all(eng);
  gpar_stats_get(eng, &s0);
  mt_all_ok(gpar_send(z, b, 0, big, peer, 1) == GPAR_ENOTSUP, "send of INT_MAX + 1 bytes: GPAR_ENOTSUP at the call");
  if (rank == 0) diag("message: %s", gpar_last_error());
  mt_all_ok(gpar_recv(z, b, 0, big, peer, 1) == GPAR_ENOTSUP, "receive of INT_MAX + 1 bytes: GPAR_ENOTSUP at the call");
  size_t cnt = (size_t)INT_MAX / (sizeof(float) * (size_t)size) + 1; /* one member per rank */
  mt_all_ok(gpar_all_gather(z, &b, NULL, cnt, GPAR_FLOAT) == GPAR_ENOTSUP,
            "all-gather of more than INT_MAX bytes in all through MPI: GPAR_ENOTSUP at the call");
  if (rank == 0) diag("message: %s", gpar_last_error());
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag && ub && *ub < INT_MAX)
    mt_all_ok(gpar_send(z, b, 0, 4, peer, *ub + 1) == GPAR_EINVAL,
              "send with tag MPI_TAG_UB + 1: GPAR_EINVAL at the call");
  else if (rank == 0)
    skip(1, "MPI_TAG_UB is INT_MAX in this MPI: no int tag lies above it");
  gpar_stats_get(eng, &s1);
  mt_all_ok(s1.ops_submitted == s0.ops_submitted, "the refused calls enqueued nothing");
  gpar_buffer_release(b);
  mt_all_ok(gpar_comm_destroy(z) == GPAR_OK, "limits: gpar_comm_destroy");
}

/* Rank 0 gives collective A a slow input (written only after B's input, then 100 ms
 * more) and then issues B; the others issue A with its input ready and B with its input 50 ms
 * later. Every rank must pair A with A (a library that lost program order would start B first on
 * rank 0 and A first on the others; the delays only make that likely, the results never depend
 * on them). */
static void program_order(gpar_engine *eng) {
  int hd = host_of(eng);
  gpar_comm w;
  if (!mt_all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, &hd, 1, &w) == GPAR_OK, "order: gpar_comm_create_mpi"))
    return;
  size_t n = 4096;
  gpar_buffer a = tu_buffer(eng, hd, n * sizeof(float)), b = tu_buffer(eng, hd, n * sizeof(float));
  float va = (float)(rank + 1), vb = 1000.0f * (float)(rank + 1);
  atomic_int b_written = 0;
  fill_arg fa = {gpar_buffer_host_ptr(a), n, va, &b_written, NULL, 100000},
           fb = {gpar_buffer_host_ptr(b), n, vb, NULL, &b_written, 0};
  int st = GPAR_OK;
  if (rank == 0) {
    st |= gpar_submit(eng, GPAR_HOST, fill_op, &fa, NULL, 0, &a, 1);
    st |= gpar_allreduce(w, &a, NULL, n, GPAR_FLOAT, GPAR_SUM);
    st |= gpar_submit(eng, GPAR_HOST, fill_op, &fb, NULL, 0, &b, 1);
    st |= gpar_allreduce(w, &b, NULL, n, GPAR_FLOAT, GPAR_SUM);
  } else {
    mt_fill(a, GPAR_FLOAT, n, va);
    st |= gpar_allreduce(w, &a, NULL, n, GPAR_FLOAT, GPAR_SUM);
    fb.delay_us = 50000; /* B's input a little later than A's: A is started first here even if nothing orders them */
    st |= gpar_submit(eng, GPAR_HOST, fill_op, &fb, NULL, 0, &b, 1);
    st |= gpar_allreduce(w, &b, NULL, n, GPAR_FLOAT, GPAR_SUM);
  }
  float sa = (float)(size * (size + 1) / 2), sb = 1000.0f * sa;
  int good = st == GPAR_OK && gpar_wait(a) == GPAR_OK && gpar_wait(b) == GPAR_OK;
  good = good && mt_all_are(a, GPAR_FLOAT, n, sa) && mt_all_are(b, GPAR_FLOAT, n, sb);
  mt_all_ok(good,
            "collective A waits for its slow input on rank 0 and B after it: A pairs with A, B with B on every rank");
  gpar_buffer_release(a);
  gpar_buffer_release(b);
  mt_all_ok(gpar_comm_destroy(w) == GPAR_OK, "order: gpar_comm_destroy");
}

/* Rank 0's allreduce times out; after that rank 0 writes 100 into the buffer and
 * into new pinned buffers (which may take over the staging block of its OpenCL member); then the
 * late ranks join. Their allreduce completes (rank 0's MPI finishes the abandoned one into memory
 * libgpar_mpi owns), and rank 0's 100s stay. Rank 0's communicator is broken. */
static void late_collective(gpar_engine *eng) {
  int devs[2] = {host_of(eng), -1}, nd = 1, cl = gpar_device_find(eng, GPAR_BACKEND_OPENCL, -1, 0);
  if (rank == 0 && cl >= 0) devs[nd++] = cl;
  gpar_comm x;
  if (!mt_all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, devs, nd, &x) == GPAR_OK, "late: gpar_comm_create_mpi"))
    return;
  int nm = 0;
  gpar_comm_info(x, &nm, NULL, NULL);
  size_t n = 1000;
  gpar_buffer bufs[2], pinned[4];
  for (int i = 0; i < nd; i++) {
    bufs[i] = tu_buffer(eng, devs[i], n * sizeof(float));
    mt_fill(bufs[i], GPAR_FLOAT, n, 1.0f);
  }
  int good = 1;
  if (rank == 0) {
    gpar_mpi_set_timeout(x, 1.0);
    good = gpar_allreduce(x, bufs, NULL, n, GPAR_FLOAT, GPAR_SUM) == GPAR_OK;
    good = good && gpar_wait(bufs[0]) == GPAR_ETIMEDOUT;
    good = good && gpar_wait_all(eng) == GPAR_ETIMEDOUT && strstr(gpar_last_error(), "broken");
    diag("message: %s", gpar_last_error());
    mt_all_ok(good, "rank 0's allreduce that the other ranks have not issued: GPAR_ETIMEDOUT, communicator broken");
    for (int i = 0; i < nd; i++) mt_fill(bufs[i], GPAR_FLOAT, n, 100.0f);
    for (int i = 0; i < 4; i++) {
      pinned[i] = tu_buffer(eng, GPAR_HOST, n * sizeof(float));
      mt_fill(pinned[i], GPAR_FLOAT, n, 100.0f);
    }
    good = gpar_wait_all(eng) == GPAR_OK;
    for (int r = 1; r < size; r++) sync_send(r); /* the late ranks may join now */
    for (int r = 1; r < size; r++) sync_recv(r); /* they have: MPI progressed rank 0's part meanwhile */
    for (int i = 0; i < nd; i++) good = mt_all_are(bufs[i], GPAR_FLOAT, n, 100.0f) && good;
    for (int i = 0; i < 4; i++) good = mt_all_are(pinned[i], GPAR_FLOAT, n, 100.0f) && good;
  } else {
    mt_all_ok(1, "rank 0's allreduce that the other ranks have not issued: GPAR_ETIMEDOUT, communicator broken");
    sync_recv(0);
    good = gpar_allreduce(x, bufs, NULL, n, GPAR_FLOAT, GPAR_SUM) == GPAR_OK && gpar_wait(bufs[0]) == GPAR_OK;
    good = good && mt_all_are(bufs[0], GPAR_FLOAT, n, (float)nm);
    sync_send(0);
  }
  mt_all_ok(good,
            "late ranks join the timed-out allreduce: their result is right, and rank 0's later writes of 100 "
            "(its buffers, new pinned buffers) are not overwritten");
  good = 1;
  if (rank == 0) { /* the other ranks do not issue it */
    gpar_stats s0, s1;
    gpar_wait_all(eng);
    gpar_stats_get(eng, &s0);
    int st = gpar_allreduce(x, bufs, NULL, n, GPAR_FLOAT, GPAR_SUM);
    gpar_stats_get(eng, &s1);
    good = st == GPAR_ETIMEDOUT && strstr(gpar_last_error(), "broken") && s1.ops_submitted == s0.ops_submitted;
    diag("message: %s", gpar_last_error());
    gpar_wait_all(eng);
  }
  mt_all_ok(good,
            "after the timed-out collective rank 0's communicator is broken: the next collective is refused at the "
            "call (GPAR_ETIMEDOUT), nothing enqueued");
  for (int i = 0; i < nd; i++) gpar_buffer_release(bufs[i]);
  if (rank == 0)
    for (int i = 0; i < 4; i++) gpar_buffer_release(pinned[i]);
  mt_all_ok(gpar_comm_destroy(x) == GPAR_OK, "late: gpar_comm_destroy");
}

/* Rank 0's send (large: not sent eagerly) times out; rank 0 then writes 100 into the
 * buffer; then rank 1 receives. It must get the bytes as they were when the send started. */
static void late_receiver(gpar_engine *eng) {
  int hd = host_of(eng);
  gpar_comm y;
  if (!mt_all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, &hd, 1, &y) == GPAR_OK, "late send: gpar_comm_create_mpi"))
    return;
  size_t bytes = (size_t)4 << 20;
  gpar_buffer b = tu_buffer(eng, hd, bytes);
  int good = 1, broken = 0;
  if (rank == 0) {
    gpar_fill(b, 0, bytes, 1);
    gpar_mpi_set_timeout(y, 1.0);
    good = gpar_send(y, b, 0, bytes, 1, 5) == GPAR_OK;
    good = good && gpar_wait_all(eng) == GPAR_ETIMEDOUT && strstr(gpar_last_error(), "gpar_send");
    diag("message: %s", gpar_last_error());
    broken = strstr(gpar_last_error(), "broken") != NULL;
    gpar_fill(b, 0, bytes, 100);
    good = gpar_wait_all(eng) == GPAR_OK && good;
    sync_send(1);
    good = sync_recv(1) == 2 && good; /* 2: rank 1 received bytes of 1 */
  } else if (rank == 1) {
    sync_recv(0);
    unsigned char *h = malloc(bytes);
    int st = gpar_recv(y, b, 0, bytes, 0, 5);
    int got = st == GPAR_OK && gpar_read(b, 0, h, bytes) == GPAR_OK;
    size_t bad = 0;
    for (size_t i = 0; i < bytes && got; i++) bad += h[i] != 1;
    if (got && bad) diag("rank 1: %zu of %zu bytes are not 1 (first: %d)", bad, bytes, h[0]);
    free(h);
    int x = got && !bad ? 2 : 1;
    MPI_Send(&x, 1, MPI_INT, 0, 4242, MPI_COMM_WORLD);
    good = x == 2;
  }
  mt_all_ok(good,
            "a send that timed out: the late receiver gets the data as it was when the send started, not bytes "
            "written after the send failed");
  if (rank == 0) {
    int st = gpar_send(y, b, 0, 4, 1, 6);
    good = broken ? st == GPAR_ETIMEDOUT : st == GPAR_OK;
    if (!broken) gpar_wait_all(eng);
  }
  mt_all_ok(good, "after a send MPI did not cancel the communicator is broken (one it cancelled stays usable)");
  gpar_buffer_release(b);
  mt_all_ok(gpar_comm_destroy(y) == GPAR_OK, "late send: gpar_comm_destroy");
}

/* All or none (MPI path): rank 1 stages two OpenCL members; the second staging buffer cannot be
 * made (pinned fault): the call fails and nothing is enqueued, not even the first member's copy.
 * The other ranks do not issue it; the next allreduce pairs as usual. */
static void all_or_none(gpar_engine *eng) {
  int devs[3] = {host_of(eng)}, nd = 1;
  int ncl = 0;
  while (gpar_device_find(eng, GPAR_BACKEND_OPENCL, -1, ncl) >= 0) ncl++;
  int have = ncl >= 2, all_have = 0;
  MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_have) {
    if (rank == 0) skip(4, "needs two OpenCL devices (POCL_DEVICES=\"pthread pthread\")");
    return;
  }
  if (rank == 1)
    for (int i = 0; i < 2; i++) devs[nd++] = gpar_device_find(eng, GPAR_BACKEND_OPENCL, -1, i);
  gpar_comm v;
  if (!mt_all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, devs, nd, &v) == GPAR_OK,
                 "all-or-none: gpar_comm_create_mpi"))
    return;
  int nm = 0;
  gpar_comm_info(v, &nm, NULL, NULL);
  size_t n = 777;
  gpar_buffer bufs[3];
  for (int i = 0; i < nd; i++) {
    bufs[i] = tu_buffer(eng, devs[i], n * sizeof(float));
    mt_fill(bufs[i], GPAR_FLOAT, n, 1.0f);
  }
  int good = 1;
  if (rank == 1) {
    gpar_stats s0, s1;
    gpar_wait_all(eng);
    gpar_stats_get(eng, &s0);
    gpar_fault_inject(eng, "pinned", 2); /* the second staging buffer */
    int st = gpar_allreduce(v, bufs, NULL, n, GPAR_FLOAT, GPAR_SUM);
    gpar_fault_inject(eng, "pinned", 0);
    gpar_stats_get(eng, &s1);
    good = st != GPAR_OK && s1.ops_submitted == s0.ops_submitted;
    if (!good) diag("rank 1: status %s, %llu ops enqueued", gpar_status_name(st),
                    (unsigned long long)(s1.ops_submitted - s0.ops_submitted));
  }
  mt_all_ok(good, "a collective whose second staging buffer cannot be made fails at the call with nothing enqueued");
  good = gpar_allreduce(v, bufs, NULL, n, GPAR_FLOAT, GPAR_SUM) == GPAR_OK;
  for (int i = 0; i < nd; i++)
    good = good && gpar_wait(bufs[i]) == GPAR_OK && mt_all_are(bufs[i], GPAR_FLOAT, n, (float)nm);
  mt_all_ok(good, "the next allreduce pairs across ranks as usual");
  gpar_wait_all(eng);
  for (int i = 0; i < nd; i++) gpar_buffer_release(bufs[i]);
  mt_all_ok(gpar_comm_destroy(v) == GPAR_OK, "all-or-none: gpar_comm_destroy");
}

/* A communicator's operation holds a CPU worker while it waits for other ranks, so an
 * engine takes at most host_threads communicators; with that many, collectives issued in
 * opposite orders on two communicators complete. */
static void workers(void) {
  gpar_engine *e1 = engine(GPAR_BACKEND_HOST, 1);
  int hd = host_of(e1);
  gpar_comm c1, c2;
  mt_all_ok(gpar_comm_create_mpi(e1, MPI_COMM_WORLD, &hd, 1, &c1) == GPAR_OK, "one host thread: first communicator");
  int st = gpar_comm_create_mpi(e1, MPI_COMM_WORLD, &hd, 1, &c2);
  mt_all_ok(st == GPAR_ENOTSUP && strstr(gpar_last_error(), "host_threads"),
            "one host thread: a second communicator is refused (GPAR_ENOTSUP naming host_threads)");
  if (rank == 0) diag("message: %s", gpar_last_error());
  if (st == GPAR_OK) gpar_comm_destroy(c2);
  gpar_comm_destroy(c1);
  mt_all_ok(gpar_comm_create_mpi(e1, MPI_COMM_WORLD, &hd, 1, &c2) == GPAR_OK,
            "one host thread: a communicator again once the first is destroyed");
  gpar_comm_destroy(c2);
  gpar_shutdown(e1);

  gpar_engine *e2 = engine(GPAR_BACKEND_HOST, 2);
  hd = host_of(e2);
  int made = gpar_comm_create_mpi(e2, MPI_COMM_WORLD, &hd, 1, &c1) == GPAR_OK;
  made = gpar_comm_create_mpi(e2, MPI_COMM_WORLD, &hd, 1, &c2) == GPAR_OK && made;
  if (!mt_all_ok(made, "two host threads: two communicators")) return;
  size_t n = 512;
  gpar_buffer p = tu_buffer(e2, hd, n * sizeof(float)), q = tu_buffer(e2, hd, n * sizeof(float));
  mt_fill(p, GPAR_FLOAT, n, 1.0f);
  mt_fill(q, GPAR_FLOAT, n, 2.0f);
  gpar_mpi_set_timeout(c1, 20.0);
  gpar_mpi_set_timeout(c2, 20.0);
  if (rank % 2 == 0) {
    st = gpar_allreduce(c1, &p, NULL, n, GPAR_FLOAT, GPAR_SUM);
    st |= gpar_allreduce(c2, &q, NULL, n, GPAR_FLOAT, GPAR_SUM);
  } else {
    st = gpar_allreduce(c2, &q, NULL, n, GPAR_FLOAT, GPAR_SUM);
    st |= gpar_allreduce(c1, &p, NULL, n, GPAR_FLOAT, GPAR_SUM);
  }
  int good = st == GPAR_OK && gpar_wait_all(e2) == GPAR_OK && mt_all_are(p, GPAR_FLOAT, n, (float)size) &&
             mt_all_are(q, GPAR_FLOAT, n, 2.0f * (float)size);
  mt_all_ok(good, "two host threads: allreduces on two communicators issued in opposite orders on odd and even ranks");
  gpar_comm_destroy(c1);
  gpar_comm_destroy(c2);
  gpar_shutdown(e2);
}

/* The timeout comes from the engine's config (not the environment), and setting it while
 * an operation polls is not a data race (ThreadSanitizer builds report one otherwise). */
static void timeouts(void) {
  const char *old = getenv("GPAR_COMM_TIMEOUT");
  char *saved = old ? strdup(old) : NULL;
  setenv("GPAR_COMM_TIMEOUT", "2.5", 1);
  gpar_config cfg;
  gpar_engine *eng = NULL;
  gpar_config_init(&cfg); /* reads 2.5 */
  cfg.backends = GPAR_BACKEND_HOST;
  cfg.host_threads = 2;
  cfg.quiet = 1;
  cfg.comm_timeout = 1.25; /* set after gpar_config_init: wins */
  if (gpar_init(&eng, &cfg) != GPAR_OK) bail_out("gpar_init failed");
  int hd = host_of(eng);
  gpar_comm c;
  int made = gpar_comm_create_mpi(eng, MPI_COMM_WORLD, &hd, 1, &c) == GPAR_OK; /* GPAR_COMM_TIMEOUT still 2.5 */
  if (saved) setenv("GPAR_COMM_TIMEOUT", saved, 1);
  else unsetenv("GPAR_COMM_TIMEOUT");
  free(saved);
  if (!mt_all_ok(made, "timeouts: gpar_comm_create_mpi")) return;
  gpar_buffer b = tu_buffer(eng, hd, 64);
  int good = 1;
  if (rank == 0) {
    good = gpar_recv(c, b, 0, 4, 1, 77) == GPAR_OK && gpar_wait(b) == GPAR_ETIMEDOUT &&
           strstr(gpar_last_error(), "after 1.25 s") != NULL;
    diag("message: %s", gpar_last_error());
    gpar_wait_all(eng);
  }
  mt_all_ok(good, "the timeout is gpar_config.comm_timeout (1.25 s), not GPAR_COMM_TIMEOUT (2.5) read again");
  /* Rank 0's receive polls while rank 0 sets the timeout; rank 1 sends only afterwards. */
  gpar_mpi_set_timeout(c, 30.0);
  if (rank == 0) {
    int st = gpar_recv(c, b, 0, 4, 1, 78);
    for (int i = 0; i < 100; i++) {
      gpar_mpi_set_timeout(c, 30.0 + i * 0.01);
      tu_sleep_us(1000);
    }
    sync_send(1);
    good = st == GPAR_OK && gpar_wait(b) == GPAR_OK && mt_all_are(b, GPAR_FLOAT, 1, 7.0f);
  } else if (rank == 1) {
    sync_recv(0);
    mt_fill(b, GPAR_FLOAT, 1, 7.0f);
    good = gpar_send(c, b, 0, 4, 0, 78) == GPAR_OK && gpar_wait_all(eng) == GPAR_OK;
  }
  mt_all_ok(good, "gpar_mpi_set_timeout while a receive polls; the receive completes");
  gpar_buffer_release(b);
  mt_all_ok(gpar_comm_destroy(c) == GPAR_OK, "timeouts: gpar_comm_destroy");
  gpar_shutdown(eng);
}

int main(int argc, char **argv) {
  mt_start(&argc, &argv);
  tap_start();
  if (size < 2) bail_out("needs at least 2 ranks");
  gpar_engine *eng = engine(GPAR_BACKEND_HOST | GPAR_BACKEND_OPENCL, 3);
  tu_expect_devices(eng, GPAR_BACKEND_HOST | GPAR_BACKEND_OPENCL);
  limits(eng);
  program_order(eng);
  late_collective(eng);
  late_receiver(eng);
  all_or_none(eng);
  mt_all_ok(gpar_shutdown(eng) == GPAR_OK, "shutdown");
  workers();
  timeouts();
  int rc = rank == 0 ? done_testing() : 0;
  MPI_Finalize();
  return rc;
}
