/* comm_mpi.c: libgpar_mpi across ranks (issue 15), run by tests/mpi/run.sh under mpirun with 2
 * and 3 ranks. Members: every rank's CPU, plus on rank 1 an OpenCL (PoCL) device when there is
 * one (staged through pinned memory). Every collective, type and reduction against the
 * sequential reference of tests/comm_ref.h; send/recv around a ring; bad input; a receive with
 * no matching send ends in GPAR_ETIMEDOUT, not a hang. Rank 0 prints TAP; every check is agreed
 * by all ranks (MPI_Allreduce), and other ranks' diagnostics go to stderr. */
#include <math.h>
#include <unistd.h>
#include <mpi.h>

#include "../comm_ref.h"
#include "gpar_mpi.h"

static int rank, size;

/* ok() on rank 0 for a condition that must hold on every rank. */
static int all_ok(int cond, const char *what) {
  int all = 0;
  MPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!cond) diag("rank %d: failed: %s (%s)", rank, what, gpar_last_error());
  if (rank == 0) ok(all, "%d ranks: %s", size, what);
  return all;
}

int main(int argc, char **argv) {
  int level = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) dup2(2, 1); /* one TAP stream: rank 0's */
  tap_start();
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST | GPAR_BACKEND_OPENCL | GPAR_BACKEND_CUDA, 2, 0);
  uint64_t seed = 1500;
  const char *e = getenv("GPAR_TEST_SEED");
  if (e && *e) seed = strtoull(e, NULL, 0);
  if (rank == 0) diag("seed %llu, %d ranks, MPI thread level %d", (unsigned long long)seed, size, level);
  int devs[2], ndevs = 0;
  /* GPAR_MPI_TEST_CUDA=1 (GPU machine): one GPU per rank (local rank's), NCCL across ranks. */
  const char *ce = getenv("GPAR_MPI_TEST_CUDA");
  int cuda = ce && atoi(ce);
  if (cuda) {
    MPI_Comm node;
    int lrank = 0, ngpu = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_free(&node);
    while (gpar_device_find(eng, GPAR_BACKEND_CUDA, GPAR_DEVICE_GPU, ngpu) >= 0) ngpu++;
    if (ngpu == 0) bail_out("GPAR_MPI_TEST_CUDA=1 but no CUDA GPU");
    devs[ndevs++] = gpar_device_find(eng, GPAR_BACKEND_CUDA, GPAR_DEVICE_GPU, lrank % ngpu);
  } else {
    devs[ndevs++] = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0);
    int cl = gpar_device_find(eng, GPAR_BACKEND_OPENCL, -1, 0);
    if (rank == 1 && cl >= 0) devs[ndevs++] = cl;
  }

  gpar_comm comm;
  all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, devs, ndevs, &comm) == GPAR_OK, "gpar_comm_create_mpi");
  int nm = 0, first = -1, nl = 0, want_first = 0, nall = 0;
  gpar_comm_info(comm, &nm, &first, &nl);
  MPI_Exscan(&ndevs, &want_first, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) want_first = 0;
  MPI_Allreduce(&ndevs, &nall, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  all_ok(nm == nall && first == want_first && nl == ndevs, "members numbered rank by rank");
  if (rank == 0) diag("%d members in all", nm);
  gpar_mpi_info mi;
  all_ok(gpar_mpi_info_get(comm, &mi) == GPAR_OK && mi.rank == rank && mi.size == size && (cuda || !mi.nccl),
         "gpar_mpi_info_get: rank, size, no NCCL for CPU/OpenCL members");
  if (rank == 0) diag("collectives through %s", mi.nccl ? "NCCL" : "MPI");
  if (cuda && getenv("GPAR_MPI_TEST_EXPECT_NCCL"))
    all_ok(mi.nccl == 1, "GPU members: collectives through NCCL across ranks");

  for (int kind = 0; kind < 4; kind++)
    for (int dt = 0; dt < 2; dt++)
      for (int op = 0; op < 3; op++) {
        if ((kind == GPAR_COLL_BROADCAST || kind == GPAR_COLL_ALL_GATHER) && op) continue;
        uint64_t s = seed + (uint64_t)(kind * 7 + dt * 3 + op);
        size_t count = 1 + tu_mix(s) % 3000;
        int root = (int)(tu_mix(s + 1) % (uint64_t)nm);
        long r = cr_run(eng, comm, devs, ndevs, nm, first, kind, (gpar_dtype)dt, (gpar_redop)op, root, count, s);
        char what[128];
        snprintf(what, sizeof what, "%s %s op %d, %zu elements, root %d", cr_kind_name(kind), dt ? "double" : "float", op,
                 count, root);
        all_ok(r == 0, what);
      }
  all_ok(cr_run(eng, comm, devs, ndevs, nm, first, GPAR_COLL_ALLREDUCE, GPAR_FLOAT, GPAR_SUM, 0, (size_t)3 << 20, seed) == 0,
         "allreduce of 12 MiB per member");

  /* Send/recv around the ring, from the last local member's buffer (a PoCL device on rank 1). */
  {
    size_t n = 5000;
    int dev = devs[ndevs - 1], next = (rank + 1) % size, prev = (rank + size - 1) % size;
    gpar_buffer sb, rb;
    float *h = malloc(n * sizeof *h);
    gpar_buffer_create(eng, dev, n * sizeof *h, &sb);
    gpar_buffer_create(eng, dev, (n + 8) * sizeof *h, &rb);
    for (size_t i = 0; i < n; i++) h[i] = (float)cr_value(seed, rank, i);
    gpar_write(sb, 0, h, n * sizeof *h);
    /* even ranks send first, odd ranks receive first: no pair waits on each other */
    int st1, st2;
    if (rank % 2 == 0) {
      st1 = gpar_send(comm, sb, 0, n * sizeof *h, next, 7);
      st2 = gpar_recv(comm, rb, 8 * sizeof *h, n * sizeof *h, prev, 7);
    } else {
      st2 = gpar_recv(comm, rb, 8 * sizeof *h, n * sizeof *h, prev, 7);
      st1 = gpar_send(comm, sb, 0, n * sizeof *h, next, 7);
    }
    int good = st1 == GPAR_OK && st2 == GPAR_OK && gpar_read(rb, 8 * sizeof *h, h, n * sizeof *h) == GPAR_OK;
    for (size_t i = 0; i < n && good; i++) good = h[i] == (float)cr_value(seed, prev, i);
    all_ok(good, "send/recv around the ring (device buffers staged)");
    all_ok(gpar_wait(sb) == GPAR_OK, "the send left its buffer OK");

    /* Bad input, nothing enqueued. */
    gpar_stats s0, s1;
    gpar_wait_all(eng);
    gpar_stats_get(eng, &s0);
    all_ok(gpar_send(comm, sb, 0, 4, size, 0) == GPAR_EINVAL, "send to rank size: GPAR_EINVAL (rank out of range)");
    all_ok(gpar_recv(comm, rb, 0, 4, -1, 0) == GPAR_EINVAL, "recv from rank -1: GPAR_EINVAL");
    all_ok(gpar_send(comm, sb, 4, n * sizeof *h, next, 0) == GPAR_ERANGE, "send past the end: GPAR_ERANGE");
    all_ok(gpar_send(comm, sb, 0, 4, next, -3) == GPAR_EINVAL, "negative tag: GPAR_EINVAL");
    gpar_buffer rel;
    gpar_buffer_create(eng, dev, 64, &rel);
    gpar_buffer_release(rel);
    all_ok(gpar_send(comm, rel, 0, 4, next, 0) == GPAR_EBADBUF, "send of a released buffer: GPAR_EBADBUF");
    gpar_buffer bufs[2] = {sb, rb};
    all_ok(gpar_allreduce(comm, bufs, NULL, (n + 9), GPAR_FLOAT, GPAR_SUM) != GPAR_OK,
           "allreduce past the end (or on a wrong device): refused");
    all_ok(gpar_broadcast(comm, bufs, NULL, 4, GPAR_FLOAT, nm) == GPAR_EINVAL || ndevs == 1,
           "broadcast from a root past the last member: GPAR_EINVAL");
    all_ok(ndevs > 1 || gpar_allreduce(comm, bufs, NULL, 4, GPAR_HALF, GPAR_SUM) == GPAR_ENOTSUP,
           "allreduce of f16 across processes: GPAR_ENOTSUP (float and double only)");
    gpar_stats_get(eng, &s1);
    all_ok(s1.ops_submitted == s0.ops_submitted, "bad input enqueued nothing");

    /* A receive nobody sends: GPAR_ETIMEDOUT naming the call, then the communicator still works. */
    gpar_mpi_set_timeout(comm, 1.0);
    int st = gpar_recv(comm, rb, 0, 4, prev, 99);
    int w = gpar_wait(rb); /* the receive's status, or EDEPFAILED behind its staging */
    all_ok(st == GPAR_OK && (w == GPAR_ETIMEDOUT || (w == GPAR_EDEPFAILED && dev != gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0))),
           "an unmatched receive fails its buffer (GPAR_ETIMEDOUT, or GPAR_EDEPFAILED when staged)");
    w = gpar_wait_all(eng);
    all_ok(w == GPAR_ETIMEDOUT && strstr(gpar_last_error(), "gpar_recv") != NULL,
           "gpar_wait_all reports GPAR_ETIMEDOUT naming the receive");
    if (rank == 0) diag("message: %s", gpar_last_error());
    gpar_mpi_set_timeout(comm, 60.0);
    all_ok(cr_run(eng, comm, devs, ndevs, nm, first, GPAR_COLL_ALLREDUCE, GPAR_DOUBLE, GPAR_SUM, 0, 100, seed + 9) == 0,
           "an allreduce after the cancelled receive");
    gpar_buffer_release(sb);
    gpar_buffer_release(rb);
    free(h);
  }

  /* gpar.h's NaN rule across ranks (fmax/fmin, as NCCL): element 0 is NaN on member 0 only,
   * element 1 on every member, element 2 on the last member only; the others are numbers. */
  for (int op = GPAR_MAX; op <= GPAR_MIN; op++) {
    gpar_buffer nb[8];
    int bad = 0;
    for (int i = 0; i < ndevs; i++) {
      int g = first + i; /* global member */
      float v[4] = {g == 0 ? NAN : (float)g, NAN, g == nm - 1 ? NAN : (float)(10 + g), (float)(-g)};
      gpar_buffer_create(eng, devs[i], sizeof v, &nb[i]);
      gpar_write(nb[i], 0, v, sizeof v);
    }
    int st = gpar_allreduce(comm, nb, NULL, 4, GPAR_FLOAT, (gpar_redop)op);
    for (int i = 0; i < ndevs; i++) {
      float r[4];
      if (gpar_read(nb[i], 0, r, sizeof r) != GPAR_OK) bad++;
      /* numbers: members 1..nm-1 in element 0; 10..10+nm-2 in element 2; 0..-(nm-1) in 3 */
      float want0 = op == GPAR_MAX ? (float)(nm - 1) : 1.f, want2 = op == GPAR_MAX ? (float)(10 + nm - 2) : 10.f;
      float want3 = op == GPAR_MAX ? 0.f : (float)(-(nm - 1));
      if (nm > 1 && (r[0] != want0 || !isnan(r[1]) || r[2] != want2 || r[3] != want3)) bad++;
      gpar_buffer_release(nb[i]);
    }
    all_ok(st == GPAR_OK && !bad, op == GPAR_MAX ? "MAX with NaN: fmax on every rank (NaN only where all are NaN)"
                                                   : "MIN with NaN: fmin on every rank (NaN only where all are NaN)");
  }

  all_ok(gpar_comm_destroy(comm) == GPAR_OK, "gpar_comm_destroy");
  gpar_buffer hb;
  gpar_buffer_create(eng, GPAR_HOST, 64, &hb);
  all_ok(gpar_send(comm, hb, 0, 4, 0, 0) == GPAR_EINVAL, "send on a destroyed communicator: GPAR_EINVAL");
  all_ok(gpar_allreduce(comm, &hb, NULL, 4, GPAR_FLOAT, GPAR_SUM) == GPAR_EINVAL,
         "allreduce on a destroyed communicator: GPAR_EINVAL");
  gpar_buffer_release(hb);
  all_ok(gpar_shutdown(eng) == GPAR_OK, "shutdown");
  int rc = rank == 0 ? done_testing() : 0;
  MPI_Finalize();
  return rc;
}
