/* comm_ref.h: one collective run against a sequential reference, shared by tests/comm.c (one
 * process) and tests/mpi/comm_mpi.c (several ranks). Every member's data comes from a seeded
 * generator, so each process can compute every member's contribution on its own. Values are
 * multiples of 1/8 below 125, so sums over a few members are exact in float and double. */
#ifndef GPAR_TESTS_COMM_REF_H
#define GPAR_TESTS_COMM_REF_H

#include "gpar_transport.h" /* gpar_coll_kind names the collectives */
#include "testutil.h"

/* Element i of member m's range before the collective (m = -1: guard elements). */
static inline double cr_value(uint64_t seed, int m, size_t i) {
  return (double)((int)(tu_mix(seed ^ ((uint64_t)(m + 7) * 0x100000001b3ull) ^ (i << 20)) % 2001) - 1000) / 8.0;
}

static inline double cr_op(int op, double a, double b) {
  return op == GPAR_SUM ? a + b : op == GPAR_MAX ? (a > b ? a : b) : (a < b ? a : b);
}

static inline double cr_get(const void *p, gpar_dtype dt, size_t i) {
  return dt == GPAR_FLOAT ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static inline void cr_set(void *p, gpar_dtype dt, size_t i, double v) {
  if (dt == GPAR_FLOAT)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}

static inline const char *cr_kind_name(int kind) {
  static const char *const n[] = {"allreduce", "broadcast", "reduce_scatter", "all_gather"};
  return n[kind];
}

/* Expected element j of member g's range (NAN-free; *check = 0 where unspecified). */
static inline double cr_expect(uint64_t seed, int kind, int op, int root, int nmembers, size_t count, int g, size_t j,
                               int *check) {
  *check = 1;
  switch (kind) {
  case GPAR_COLL_ALLREDUCE: {
    double v = cr_value(seed, 0, j);
    for (int m = 1; m < nmembers; m++) v = cr_op(op, v, cr_value(seed, m, j));
    return v;
  }
  case GPAR_COLL_BROADCAST:
    return cr_value(seed, root, j);
  case GPAR_COLL_REDUCE_SCATTER: {
    if (j / count != (size_t)g) {
      *check = 0;
      return 0;
    }
    double v = cr_value(seed, 0, j);
    for (int m = 1; m < nmembers; m++) v = cr_op(op, v, cr_value(seed, m, j));
    return v;
  }
  default: /* all-gather: block b comes from member b */
    return cr_value(seed, (int)(j / count), j);
  }
}

/* Run one collective over this process's members (global indices first..first+nlocal-1 of
 * nmembers) on buffers of devs[i] (GPAR_HOST allowed), each range at element offset i + 1 with
 * guard elements around it. Returns the number of wrong elements (guards included), or a
 * negative status when a call failed (diagnosed). */
static inline long cr_run(gpar_engine *eng, gpar_comm comm, const int *devs, int nlocal, int nmembers, int first,
                          int kind, gpar_dtype dt, gpar_redop op, int root, size_t count, uint64_t seed) {
  size_t es = dt == GPAR_FLOAT ? 4 : 8, blocks = kind >= GPAR_COLL_REDUCE_SCATTER ? (size_t)nmembers : 1;
  size_t elems = count * blocks, guard = 3;
  gpar_buffer bufs[16] = {{0}};
  size_t offs[16];
  long bad = 0;
  int st = GPAR_OK;
  void *h = malloc((elems + 2 * guard + 16) * es);
  if (!h) return GPAR_ENOMEM;
  for (int i = 0; i < nlocal && st == GPAR_OK; i++) {
    offs[i] = (size_t)i + 1;
    size_t total = offs[i] + elems + guard;
    if ((st = gpar_buffer_create(eng, devs[i], total * es, &bufs[i]))) break;
    for (size_t j = 0; j < total; j++) {
      int in = j >= offs[i] && j < offs[i] + elems;
      cr_set(h, dt, j, in ? cr_value(seed, first + i, j - offs[i]) : cr_value(seed, -1, j));
    }
    st = gpar_write(bufs[i], 0, h, total * es);
  }
  if (st == GPAR_OK) {
    switch (kind) {
    case GPAR_COLL_ALLREDUCE: st = gpar_allreduce(comm, bufs, offs, count, dt, op); break;
    case GPAR_COLL_BROADCAST: st = gpar_broadcast(comm, bufs, offs, count, dt, root); break;
    case GPAR_COLL_REDUCE_SCATTER: st = gpar_reduce_scatter(comm, bufs, offs, count, dt, op); break;
    default: st = gpar_all_gather(comm, bufs, offs, count, dt); break;
    }
  }
  for (int i = 0; i < nlocal && st == GPAR_OK; i++) {
    size_t total = offs[i] + elems + guard;
    if ((st = gpar_read(bufs[i], 0, h, total * es))) break;
    for (size_t j = 0; j < total; j++) {
      int in = j >= offs[i] && j < offs[i] + elems, check = 1;
      double want = in ? cr_expect(seed, kind, op, root, nmembers, count, first + i, j - offs[i], &check)
                       : cr_value(seed, -1, j);
      double got = cr_get(h, dt, j);
      if (check && got != want && bad++ < 3)
        diag("  %s member %d element %zu: got %g, want %g", cr_kind_name(kind), first + i, j, got, want);
    }
  }
  if (st != GPAR_OK) diag("  %s: %s (%s)", cr_kind_name(kind), gpar_status_name(st), gpar_last_error());
  for (int i = 0; i < nlocal; i++)
    if (bufs[i].id) gpar_buffer_release(bufs[i]);
  free(h);
  return st != GPAR_OK ? st : bad;
}

#endif
