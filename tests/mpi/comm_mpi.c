/* comm_mpi.c: libgpar_mpi across ranks, run by tests/mpi/run.sh under mpirun with 2 and 3
 * ranks. Members: every rank's CPU, plus on rank 1 an OpenCL (PoCL) device when there is one
 * (staged through pinned memory). Every collective, type and reduction against the sequential
 * reference of tests/comm_ref.h; send/recv around a ring; bad input; a receive with no matching
 * send ends in GPAR_ETIMEDOUT, not a hang. Rank 0 prints TAP; every check is agreed by all ranks
 * (mpi_test.h), and other ranks' diagnostics go to stderr. */
#include <math.h>

#include "../comm_ref.h"
#include "mpi_test.h"

/* The communicator under test: this rank's members and how every rank's are numbered. */
typedef struct setup {
  gpar_engine *eng;
  uint64_t seed;
  int cuda; /* GPAR_MPI_TEST_CUDA=1 (GPU machine): one GPU per rank (local rank's), NCCL across ranks */
  int devs[2], ndevs;
  gpar_comm comm;
  int nm, first;
} setup;

static void pick_members(setup *t) {
  gpar_engine *eng = t->eng;
  if (t->cuda) {
    MPI_Comm node;
    int lrank = 0, ngpu = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_free(&node);
    while (gpar_device_find(eng, GPAR_BACKEND_CUDA, GPAR_DEVICE_GPU, ngpu) >= 0) ngpu++;
    if (ngpu == 0) bail_out("GPAR_MPI_TEST_CUDA=1 but no CUDA GPU");
    t->devs[t->ndevs++] = gpar_device_find(eng, GPAR_BACKEND_CUDA, GPAR_DEVICE_GPU, lrank % ngpu);
  } else {
    t->devs[t->ndevs++] = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0);
    int cl = gpar_device_find(eng, GPAR_BACKEND_OPENCL, -1, 0);
    if (rank == 1 && cl >= 0) t->devs[t->ndevs++] = cl;
  }
}

static void create(setup *t) {
  mt_all_ok(gpar_comm_create_mpi(t->eng, MPI_COMM_WORLD, t->devs, t->ndevs, &t->comm) == GPAR_OK,
            "gpar_comm_create_mpi");
  int nl = 0, want_first = 0, nall = 0;
  t->first = -1;
  gpar_comm_info(t->comm, &t->nm, &t->first, &nl);
  MPI_Exscan(&t->ndevs, &want_first, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) want_first = 0;
  MPI_Allreduce(&t->ndevs, &nall, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  mt_all_ok(t->nm == nall && t->first == want_first && nl == t->ndevs, "members numbered rank by rank");
  if (rank == 0) diag("%d members in all", t->nm);
  gpar_mpi_info mi;
  mt_all_ok(gpar_mpi_info_get(t->comm, &mi) == GPAR_OK && mi.rank == rank && mi.size == size && (t->cuda || !mi.nccl),
            "gpar_mpi_info_get: rank, size, no NCCL for CPU/OpenCL members");
  if (rank == 0) diag("collectives through %s", mi.nccl ? "NCCL" : "MPI");
  if (t->cuda && getenv("GPAR_MPI_TEST_EXPECT_NCCL"))
    mt_all_ok(mi.nccl == 1, "GPU members: collectives through NCCL across ranks");
}

/* Every collective, type and reduction against the reference. */
static void collectives(const setup *t) {
  for (int kind = 0; kind < 4; kind++)
    for (int dt = 0; dt < 2; dt++)
      for (int op = 0; op < 3; op++) {
        if ((kind == GPAR_COLL_BROADCAST || kind == GPAR_COLL_ALL_GATHER) && op) continue;
        uint64_t s = t->seed + (uint64_t)(kind * 7 + dt * 3 + op);
        size_t count = 1 + tu_mix(s) % 3000;
        int root = (int)(tu_mix(s + 1) % (uint64_t)t->nm);
        long r = cr_run(t->eng, t->comm, t->devs, t->ndevs, t->nm, t->first, kind, (gpar_dtype)dt, (gpar_redop)op, root,
                        count, s);
        char what[128];
        snprintf(what, sizeof what, "%s %s op %d, %zu elements, root %d", cr_kind_name(kind), dt ? "double" : "float",
                 op, count, root);
        mt_all_ok(r == 0, what);
      }
  mt_all_ok(cr_run(t->eng, t->comm, t->devs, t->ndevs, t->nm, t->first, GPAR_COLL_ALLREDUCE, GPAR_FLOAT, GPAR_SUM, 0,
                   (size_t)3 << 20, t->seed) == 0,
            "allreduce of 12 MiB per member");
}

/* Send/recv around the ring: sb (n floats) to the next rank, into rb at 8 floats from the
 * previous one; even ranks send first, odd ranks receive first, so no pair waits on each other. */
static void ring(const setup *t, gpar_buffer sb, gpar_buffer rb, float *h, size_t n) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (size_t i = 0; i < n; i++) h[i] = (float)cr_value(t->seed, rank, i);
  gpar_write(sb, 0, h, n * sizeof *h);
  int st1, st2;
  if (rank % 2 == 0) {
    st1 = gpar_send(t->comm, sb, 0, n * sizeof *h, next, 7);
    st2 = gpar_recv(t->comm, rb, 8 * sizeof *h, n * sizeof *h, prev, 7);
  } else {
    st2 = gpar_recv(t->comm, rb, 8 * sizeof *h, n * sizeof *h, prev, 7);
    st1 = gpar_send(t->comm, sb, 0, n * sizeof *h, next, 7);
  }
  int good = st1 == GPAR_OK && st2 == GPAR_OK && gpar_read(rb, 8 * sizeof *h, h, n * sizeof *h) == GPAR_OK;
  for (size_t i = 0; i < n && good; i++) good = h[i] == (float)cr_value(t->seed, prev, i);
  mt_all_ok(good, "send/recv around the ring (device buffers staged)");
  mt_all_ok(gpar_wait(sb) == GPAR_OK, "the send left its buffer OK");
}

/* Bad input, nothing enqueued. */
static void bad_input(const setup *t, gpar_buffer sb, gpar_buffer rb, size_t n) {
  int dev = t->devs[t->ndevs - 1], next = (rank + 1) % size;
  gpar_stats s0, s1;
  gpar_wait_all(t->eng);
  gpar_stats_get(t->eng, &s0);
  mt_all_ok(gpar_send(t->comm, sb, 0, 4, size, 0) == GPAR_EINVAL, "send to rank size: GPAR_EINVAL (rank out of range)");
  mt_all_ok(gpar_recv(t->comm, rb, 0, 4, -1, 0) == GPAR_EINVAL, "recv from rank -1: GPAR_EINVAL");
  mt_all_ok(gpar_send(t->comm, sb, 4, n * sizeof(float), next, 0) == GPAR_ERANGE, "send past the end: GPAR_ERANGE");
  mt_all_ok(gpar_send(t->comm, sb, 0, 4, next, -3) == GPAR_EINVAL, "negative tag: GPAR_EINVAL");
  gpar_buffer rel;
  gpar_buffer_create(t->eng, dev, 64, &rel);
  gpar_buffer_release(rel);
  mt_all_ok(gpar_send(t->comm, rel, 0, 4, next, 0) == GPAR_EBADBUF, "send of a released buffer: GPAR_EBADBUF");
  gpar_buffer bufs[2] = {sb, rb};
  mt_all_ok(gpar_allreduce(t->comm, bufs, NULL, (n + 9), GPAR_FLOAT, GPAR_SUM) != GPAR_OK,
            "allreduce past the end (or on a wrong device): refused");
  mt_all_ok(gpar_broadcast(t->comm, bufs, NULL, 4, GPAR_FLOAT, t->nm) == GPAR_EINVAL || t->ndevs == 1,
            "broadcast from a root past the last member: GPAR_EINVAL");
  mt_all_ok(t->ndevs > 1 || gpar_allreduce(t->comm, bufs, NULL, 4, GPAR_HALF, GPAR_SUM) == GPAR_ENOTSUP,
            "allreduce of f16 across processes: GPAR_ENOTSUP (float and double only)");
  gpar_stats_get(t->eng, &s1);
  mt_all_ok(s1.ops_submitted == s0.ops_submitted, "bad input enqueued nothing");
}

/* A receive nobody sends: GPAR_ETIMEDOUT naming the call, then the communicator still works. */
static void unmatched_receive(const setup *t, gpar_buffer rb) {
  int dev = t->devs[t->ndevs - 1], prev = (rank + size - 1) % size;
  gpar_mpi_set_timeout(t->comm, 1.0);
  int st = gpar_recv(t->comm, rb, 0, 4, prev, 99);
  int w = gpar_wait(rb); /* the receive's status, or EDEPFAILED behind its staging */
  mt_all_ok(st == GPAR_OK && (w == GPAR_ETIMEDOUT ||
                              (w == GPAR_EDEPFAILED && dev != gpar_device_find(t->eng, GPAR_BACKEND_HOST, -1, 0))),
            "an unmatched receive fails its buffer (GPAR_ETIMEDOUT, or GPAR_EDEPFAILED when staged)");
  w = gpar_wait_all(t->eng);
  mt_all_ok(w == GPAR_ETIMEDOUT && strstr(gpar_last_error(), "gpar_recv") != NULL,
            "gpar_wait_all reports GPAR_ETIMEDOUT naming the receive");
  if (rank == 0) diag("message: %s", gpar_last_error());
  gpar_mpi_set_timeout(t->comm, 60.0);
  mt_all_ok(cr_run(t->eng, t->comm, t->devs, t->ndevs, t->nm, t->first, GPAR_COLL_ALLREDUCE, GPAR_DOUBLE, GPAR_SUM, 0,
                   100, t->seed + 9) == 0,
            "an allreduce after the cancelled receive");
}

/* Point to point, from the last local member's buffers (a PoCL device on rank 1). */
static void send_recv(const setup *t) {
  size_t n = 5000;
  int dev = t->devs[t->ndevs - 1];
  gpar_buffer sb, rb;
  float *h = malloc(n * sizeof *h);
  gpar_buffer_create(t->eng, dev, n * sizeof *h, &sb);
  gpar_buffer_create(t->eng, dev, (n + 8) * sizeof *h, &rb);
  ring(t, sb, rb, h, n);
  bad_input(t, sb, rb, n);
  unmatched_receive(t, rb);
  gpar_buffer_release(sb);
  gpar_buffer_release(rb);
  free(h);
}

/* gpar.h's NaN rule across ranks (fmax/fmin, as NCCL): element 0 is NaN on member 0 only,
 * element 1 on every member, element 2 on the last member only; the others are numbers. */
static void nan_rule(const setup *t) {
  int nm = t->nm;
  for (int op = GPAR_MAX; op <= GPAR_MIN; op++) {
    gpar_buffer nb[8];
    int bad = 0;
    for (int i = 0; i < t->ndevs; i++) {
      int g = t->first + i; /* global member */
      float v[4] = {g == 0 ? NAN : (float)g, NAN, g == nm - 1 ? NAN : (float)(10 + g), (float)(-g)};
      gpar_buffer_create(t->eng, t->devs[i], sizeof v, &nb[i]);
      gpar_write(nb[i], 0, v, sizeof v);
    }
    int st = gpar_allreduce(t->comm, nb, NULL, 4, GPAR_FLOAT, (gpar_redop)op);
    for (int i = 0; i < t->ndevs; i++) {
      float r[4];
      if (gpar_read(nb[i], 0, r, sizeof r) != GPAR_OK) bad++;
      /* numbers: members 1..nm-1 in element 0; 10..10+nm-2 in element 2; 0..-(nm-1) in 3 */
      float want0 = op == GPAR_MAX ? (float)(nm - 1) : 1.f, want2 = op == GPAR_MAX ? (float)(10 + nm - 2) : 10.f;
      float want3 = op == GPAR_MAX ? 0.f : (float)(-(nm - 1));
      if (nm > 1 && (r[0] != want0 || !isnan(r[1]) || r[2] != want2 || r[3] != want3)) bad++;
      gpar_buffer_release(nb[i]);
    }
    mt_all_ok(st == GPAR_OK && !bad, op == GPAR_MAX ? "MAX with NaN: fmax on every rank (NaN only where all are NaN)"
                                                    : "MIN with NaN: fmin on every rank (NaN only where all are NaN)");
  }
}

/* Destroy; the destroyed communicator is refused; shutdown. */
static void destroy(const setup *t) {
  mt_all_ok(gpar_comm_destroy(t->comm) == GPAR_OK, "gpar_comm_destroy");
  gpar_buffer hb;
  gpar_buffer_create(t->eng, GPAR_HOST, 64, &hb);
  mt_all_ok(gpar_send(t->comm, hb, 0, 4, 0, 0) == GPAR_EINVAL, "send on a destroyed communicator: GPAR_EINVAL");
  mt_all_ok(gpar_allreduce(t->comm, &hb, NULL, 4, GPAR_FLOAT, GPAR_SUM) == GPAR_EINVAL,
            "allreduce on a destroyed communicator: GPAR_EINVAL");
  gpar_buffer_release(hb);
  mt_all_ok(gpar_shutdown(t->eng) == GPAR_OK, "shutdown");
}

int main(int argc, char **argv) {
  int level = mt_start(&argc, &argv);
  tap_start();
  setup t = {.eng = tu_engine(GPAR_BACKEND_HOST | GPAR_BACKEND_OPENCL | GPAR_BACKEND_CUDA, 2, 0), .seed = 1500};
  const char *e = getenv("GPAR_TEST_SEED");
  if (e && *e) t.seed = strtoull(e, NULL, 0);
  if (rank == 0) diag("seed %llu, %d ranks, MPI thread level %d", (unsigned long long)t.seed, size, level);
  const char *ce = getenv("GPAR_MPI_TEST_CUDA");
  t.cuda = ce && atoi(ce);
  pick_members(&t);
  create(&t);
  collectives(&t);
  send_recv(&t);
  nan_rule(&t);
  destroy(&t);
  int rc = rank == 0 ? done_testing() : 0;
  MPI_Finalize();
  return rc;
}
