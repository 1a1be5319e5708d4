/* comm.c: communicators and collectives (issue 15). Checks every argument, then expresses a
 * collective as engine ops, so the engine's buffer tracking orders it with all other work and
 * carries failures to its outputs:
 * - backend path (CUDA members with NCCL): one GPAR__OP_COLL per member on that device's peer
 *   lane, issued by the device's own dispatcher thread (NCCL allows one thread per rank, and
 *   the engine already has exactly one dispatcher per device, so no group call is needed and no
 *   thread ever blocks on another device's queue). Each member op writes the member's token, so
 *   the engine's write-after-write ordering issues them in program order on every member;
 * - staged path (everything else): copies into GPAR_HOST staging, one GPAR__OP_REDUCE on the
 *   CPU (OpenBLAS axpy for sums), copies back: a small DAG of ordinary engine ops;
 * - transport path (libgpar_mpi): the transport builds the ops through the public API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GPAR__MAX_COMMS 4096

typedef struct gpar__comm {
  int live;      /* 0 once destroyed */
  int refs;      /* 1 while live + calls in progress (registry lock) */
  gpar_engine *eng;      /* internal pointer */
  uint64_t eng_serial;   /* the engine's lifetime it belongs to */
  int nlocal, nmembers, first_local;
  int *devs;             /* flat device index of each local member */
  gpar_buffer *tokens;   /* one per local member: written by every ordered collective */
  const gpar__backend_ops *bops; /* backend collectives (NCCL), or NULL: staged */
  void *bcomm;
  gpar_comm_transport t; /* transport (t.collective non-NULL) */
  void *ctx;
} gpar__comm;

static pthread_mutex_t comm_mu = PTHREAD_MUTEX_INITIALIZER;
static gpar__comm *comm_slots[GPAR__MAX_COMMS];
static uint32_t comm_gen[GPAR__MAX_COMMS];

GPAR_API size_t gpar_dtype_size(gpar_dtype dtype) {
  return dtype == GPAR_FLOAT ? 4 : dtype == GPAR_DOUBLE ? 8 : 0;
}

GPAR_API int gpar_error_set(int status, const char *msg) {
  return gpar__errorf(status, "%s", msg ? msg : "");
}

/* The communicator's engine is still the one it was made on, and open. */
static int comm_engine_open(const gpar__comm *c) {
  return atomic_load(&c->eng->serial) == c->eng_serial && atomic_load(&c->eng->state) == GPAR__ENG_OPEN;
}

static void comm_free(gpar__comm *c) {
  free(c->devs);
  free(c->tokens);
  free(c);
}

/* Take a reference on a live communicator (GPAR_EINVAL with a message otherwise). */
static int comm_get(gpar_comm h, const char *fn, gpar__comm **out) {
  uint32_t slot = (uint32_t)(h.id & 0xffffffffu) - 1, gen = (uint32_t)(h.id >> 32);
  int st = GPAR_OK;
  pthread_mutex_lock(&comm_mu);
  gpar__comm *c = slot < GPAR__MAX_COMMS && comm_gen[slot] == gen && gen ? comm_slots[slot] : NULL;
  if (c && c->live)
    c->refs++;
  else
    st = gpar__errorf(GPAR_EINVAL, "%s: communicator %#llx is destroyed or invalid", fn, (unsigned long long)h.id);
  pthread_mutex_unlock(&comm_mu);
  if (st) return st;
  if (!comm_engine_open(c)) {
    gpar_comm_destroy(h); /* its engine is gone: nothing of it can run */
    pthread_mutex_lock(&comm_mu);
    if (--c->refs == 0) comm_free(c);
    pthread_mutex_unlock(&comm_mu);
    return gpar__errorf(GPAR_ESHUTDOWN, "%s: the communicator's engine is shut down", fn);
  }
  *out = c;
  return GPAR_OK;
}

static void comm_put(gpar__comm *c) {
  pthread_mutex_lock(&comm_mu);
  int last = --c->refs == 0;
  pthread_mutex_unlock(&comm_mu);
  if (last) comm_free(c);
}

/* Backend collectives when every member is a device of one backend that has them. Env
 * GPAR_COMM_STAGED=1 forces the staged path (for comparisons). */
static void comm_try_backend(gpar_engine *eng, gpar__comm *c) {
  const char *e = getenv("GPAR_COMM_STAGED");
  if (e && atoi(e)) return;
  const gpar__backend_ops *ops = eng->devs[c->devs[0]]->ops;
  gpar__backend *be = eng->devs[c->devs[0]]->be;
  if (!ops->comm_create || !ops->coll || !ops->comm_destroy) return;
  int *bidx = malloc(sizeof *bidx * (size_t)c->nlocal);
  if (!bidx) return;
  int same = 1;
  for (int i = 0; i < c->nlocal; i++) {
    same &= eng->devs[c->devs[i]]->ops == ops;
    bidx[i] = eng->devs[c->devs[i]]->bidx;
  }
  if (same && ops->comm_create(be, bidx, c->nlocal, &c->bcomm) == GPAR_OK)
    c->bops = ops;
  else if (same)
    gpar__log("%s: collectives staged through host memory: %s", ops->name, gpar__error_msg());
  free(bidx);
}

static int comm_create(gpar_engine *eng, const int *devs, int ndevs, int nmembers, int first_local,
                       const gpar_comm_transport *t, void *ctx, gpar_comm *out) {
  int st;
  if (!(eng = gpar__engine_check(eng, &st))) return st;
  st = GPAR_OK;
  if (!out) return gpar__errorf(GPAR_EINVAL, "gpar_comm_create: comm is NULL");
  out->id = 0;
  if (!devs || ndevs < 1) return gpar__errorf(GPAR_EINVAL, "gpar_comm_create: no devices (%d at %p)", ndevs, (const void *)devs);
  if (nmembers < ndevs || first_local < 0 || first_local > nmembers - ndevs)
    return gpar__errorf(GPAR_EINVAL, "gpar_comm_create: local members %d..%d outside 0..%d", first_local,
                        first_local + ndevs - 1, nmembers - 1);
  if (t && !t->collective) return gpar__errorf(GPAR_EINVAL, "gpar_comm_create_transport: no collective entry");
  for (int i = 0; i < ndevs; i++) {
    if (devs[i] < 0 || devs[i] >= eng->ndev)
      return gpar__errorf(GPAR_ENODEV, "gpar_comm_create: device %d does not exist (%d devices)", devs[i], eng->ndev);
    for (int j = 0; j < i; j++)
      if (devs[j] == devs[i]) return gpar__errorf(GPAR_EINVAL, "gpar_comm_create: device %d listed twice", devs[i]);
  }
  gpar__comm *c = calloc(1, sizeof *c);
  if (c) c->devs = malloc(sizeof *c->devs * (size_t)ndevs);
  if (c) c->tokens = calloc((size_t)ndevs, sizeof *c->tokens);
  if (!c || !c->devs || !c->tokens) {
    if (c) comm_free(c);
    return gpar__errorf(GPAR_ENOMEM, "gpar_comm_create: out of host memory");
  }
  memcpy(c->devs, devs, sizeof *devs * (size_t)ndevs);
  c->eng = eng;
  c->eng_serial = atomic_load(&eng->serial);
  c->nlocal = ndevs;
  c->nmembers = nmembers;
  c->first_local = first_local;
  c->live = 1;
  c->refs = 1;
  if (t) {
    c->t = *t;
    c->ctx = ctx;
  }
  for (int i = 0; i < ndevs && st == GPAR_OK; i++) st = gpar_buffer_create(eng, GPAR_HOST, 64, &c->tokens[i]);
  if (st == GPAR_OK && !t) comm_try_backend(eng, c);
  uint32_t slot = GPAR__MAX_COMMS;
  pthread_mutex_lock(&comm_mu);
  for (uint32_t s = 0; s < GPAR__MAX_COMMS && st == GPAR_OK && slot == GPAR__MAX_COMMS; s++)
    if (!comm_slots[s]) slot = s;
  if (st == GPAR_OK && slot == GPAR__MAX_COMMS)
    st = gpar__errorf(GPAR_ENOMEM, "gpar_comm_create: more than %d communicators", GPAR__MAX_COMMS);
  if (st == GPAR_OK) {
    if (!comm_gen[slot]) comm_gen[slot] = 1;
    comm_slots[slot] = c;
    out->id = (uint64_t)comm_gen[slot] << 32 | (slot + 1);
  }
  pthread_mutex_unlock(&comm_mu);
  if (st != GPAR_OK) {
    if (c->bops) c->bops->comm_destroy(c->bcomm);
    for (int i = 0; i < ndevs; i++)
      if (c->tokens[i].id) gpar_buffer_release(c->tokens[i]);
    comm_free(c);
  }
  return st;
}

GPAR_API int gpar_comm_create(gpar_engine *eng, const int *devs, int ndevs, gpar_comm *comm) {
  return comm_create(eng, devs, ndevs, ndevs, 0, NULL, NULL, comm);
}

GPAR_API int gpar_comm_create_transport(gpar_engine *eng, const int *devs, int ndevs, int nmembers, int first_local,
                                        const gpar_comm_transport *t, void *ctx, gpar_comm *comm) {
  if (!t) {
    if (comm) comm->id = 0;
    return gpar__errorf(GPAR_EINVAL, "gpar_comm_create_transport: transport is NULL");
  }
  return comm_create(eng, devs, ndevs, nmembers, first_local, t, ctx, comm);
}

GPAR_API int gpar_comm_destroy(gpar_comm h) {
  uint32_t slot = (uint32_t)(h.id & 0xffffffffu) - 1, gen = (uint32_t)(h.id >> 32);
  gpar__comm *c = NULL;
  pthread_mutex_lock(&comm_mu);
  if (slot < GPAR__MAX_COMMS && gen && comm_gen[slot] == gen && comm_slots[slot] && comm_slots[slot]->live) {
    c = comm_slots[slot];
    c->live = 0;
    comm_slots[slot] = NULL;
    if (!++comm_gen[slot]) comm_gen[slot] = 1;
  }
  pthread_mutex_unlock(&comm_mu);
  if (!c)
    return gpar__errorf(GPAR_EINVAL, "gpar_comm_destroy: communicator %#llx is destroyed or invalid",
                        (unsigned long long)h.id);
  int alive = comm_engine_open(c);
  /* Its last collectives write the tokens: once they are done, nothing uses the backend's or
   * the transport's communicator any more. */
  for (int i = 0; i < c->nlocal && alive; i++)
    if (!gpar__in_op) gpar_wait(c->tokens[i]);
  if (c->bops) c->bops->comm_destroy(c->bcomm);
  if (c->t.destroy) c->t.destroy(c->ctx);
  for (int i = 0; i < c->nlocal && alive; i++) gpar_buffer_release(c->tokens[i]);
  comm_put(c);
  return GPAR_OK;
}

GPAR_API int gpar_comm_info(gpar_comm h, int *nmembers, int *first_local, int *nlocal) {
  gpar__comm *c;
  int st = comm_get(h, "gpar_comm_info", &c);
  if (st) return st;
  if (nmembers) *nmembers = c->nmembers;
  if (first_local) *first_local = c->first_local;
  if (nlocal) *nlocal = c->nlocal;
  comm_put(c);
  return GPAR_OK;
}

GPAR_API void *gpar_comm_transport_ctx(gpar_comm h) {
  gpar__comm *c;
  if (comm_get(h, "gpar_comm_transport_ctx", &c)) return NULL;
  void *ctx = c->t.collective ? c->ctx : NULL;
  if (!ctx) gpar__errorf(GPAR_EINVAL, "communicator %#llx has no transport", (unsigned long long)h.id);
  comm_put(c);
  return ctx;
}

/* ---------------------------------------------------------------- argument checks */

/* One local member of a checked collective. */
typedef struct member {
  gpar_buffer h;
  size_t off;  /* bytes */
  int host;    /* host code can touch its memory */
} member;

static const char *const coll_names[] = {"gpar_allreduce", "gpar_broadcast", "gpar_reduce_scatter",
                                         "gpar_all_gather"};

/* Check a collective's arguments; fill m[] (nlocal entries). Nothing is enqueued. */
static int coll_check(gpar__comm *c, const gpar_coll *a, member *m) {
  const char *fn = coll_names[a->kind];
  size_t es = gpar_dtype_size(a->dtype);
  if (!a->bufs) return gpar__errorf(GPAR_EINVAL, "%s: bufs is NULL", fn);
  if (a->count == 0) return gpar__errorf(GPAR_EINVAL, "%s: count is 0", fn);
  if (!es) return gpar__errorf(GPAR_EINVAL, "%s: unknown element type %d", fn, (int)a->dtype);
  if ((a->kind == GPAR_COLL_ALLREDUCE || a->kind == GPAR_COLL_REDUCE_SCATTER) &&
      (a->op != GPAR_SUM && a->op != GPAR_MAX && a->op != GPAR_MIN))
    return gpar__errorf(GPAR_EINVAL, "%s: unknown reduction %d", fn, (int)a->op);
  if (a->kind == GPAR_COLL_BROADCAST && (a->root < 0 || a->root >= c->nmembers))
    return gpar__errorf(GPAR_EINVAL, "%s: root %d is not a member (0..%d)", fn, a->root, c->nmembers - 1);
  size_t blocks = a->kind == GPAR_COLL_REDUCE_SCATTER || a->kind == GPAR_COLL_ALL_GATHER ? (size_t)c->nmembers : 1;
  if (a->count > SIZE_MAX / es / blocks) return gpar__errorf(GPAR_ERANGE, "%s: count %zu overflows", fn, a->count);
  size_t bytes = a->count * blocks * es;
  for (int i = 0; i < c->nlocal; i++) {
    gpar__buf *b;
    gpar_engine *eng;
    int st = gpar__buf_lookup(a->bufs[i], &b, &eng);
    if (st) {
      char why[256];
      snprintf(why, sizeof why, "%s", gpar__error_msg()); /* not formatted into itself */
      return gpar__errorf(st, "%s: buffer of member %d: %s", fn, c->first_local + i, why);
    }
    gpar__device *want = c->eng->devs[c->devs[i]];
    size_t off = a->offs ? a->offs[i] : 0;
    if (eng != c->eng)
      st = gpar__errorf(GPAR_EENGINE, "%s: buffer of member %d belongs to another engine", fn, c->first_local + i);
    else if (b->dev != want && !(b->dev == NULL && want == eng->host_dev))
      st = gpar__errorf(GPAR_ENODEV, "%s: buffer of member %d is on device %d, not in the communicator's member %d (device %d)",
                        fn, c->first_local + i, b->dev ? b->dev->index : GPAR_HOST, c->first_local + i, c->devs[i]);
    else if (off > b->bytes / es || bytes > b->bytes - off * es)
      st = gpar__errorf(GPAR_ERANGE, "%s: member %d: elements [%zu, +%zu) exceed the buffer's %zu bytes", fn,
                        c->first_local + i, off, a->count * blocks, b->bytes);
    m[i].h = a->bufs[i];
    m[i].off = off * es;
    m[i].host = b->host_memory;
    pthread_mutex_unlock(&eng->mu);
    if (st) return st;
    for (int j = 0; j < i; j++)
      if (m[j].h.id == m[i].h.id && m[j].h.serial == m[i].h.serial)
        return gpar__errorf(GPAR_EALIAS, "%s: members %d and %d share one buffer", fn, j, i);
  }
  return GPAR_OK;
}

/* ---------------------------------------------------------------- backend path */

/* One GPAR__OP_COLL per member, on its device's peer lane (NCCL's own stream per device; the
 * engine joins it to the compute and copy lanes by events). */
static int coll_backend(gpar__comm *c, const gpar_coll *a, const member *m) {
  gpar_engine *eng = c->eng;
  int st = GPAR_OK;
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++) {
    gpar__buf *b, *tok;
    pthread_mutex_lock(&eng->mu);
    if ((st = gpar__buf_get_locked(eng, m[i].h, &b)) || (st = gpar__buf_get_locked(eng, c->tokens[i], &tok))) {
      pthread_mutex_unlock(&eng->mu);
      break;
    }
    gpar__op *op = gpar__op_new(eng);
    if (!op) {
      pthread_mutex_unlock(&eng->mu);
      st = gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
      break;
    }
    op->kind = GPAR__OP_COLL;
    op->dev = eng->devs[c->devs[i]];
    op->lane = GPAR__LANE_PEER;
    op->name = coll_names[a->kind] + 5;
    op->u.coll = (gpar__coll_args){(int)a->kind, c->bcomm, i, b->mem, m[i].off, a->count,
                                   (int)gpar_dtype_size(a->dtype), (int)a->op, a->root, 0};
    int mode = a->kind == GPAR_COLL_BROADCAST && a->root == i ? GPAR__READ : GPAR__READ | GPAR__WRITE;
    if (gpar__op_add_access(op, b, mode) || gpar__op_add_access(op, tok, GPAR__WRITE)) {
      gpar__op_discard(eng, op);
      pthread_mutex_unlock(&eng->mu);
      st = gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
      break;
    }
    int wait = eng->cfg.synchronous && !gpar__in_op && i == c->nlocal - 1;
    gpar__op_submit(eng, op, wait);
    pthread_mutex_unlock(&eng->mu);
    if (wait) st = gpar__wait_op(eng, op);
  }
  return st;
}

/* ---------------------------------------------------------------- staged path */

/* The CPU reduction: reads srcs, writes the result buffer R and every host member, and the
 * tokens. Sources and outputs are host pointers (offsets applied). */
static int submit_reduce(gpar__comm *c, const gpar_coll *a, size_t count, const gpar_buffer *srcs, const size_t *soff,
                         int nsrc, gpar_buffer r, const member *m) {
  gpar_engine *eng = c->eng;
  void **src = malloc(sizeof *src * (size_t)(nsrc + c->nlocal + 1));
  if (!src) return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
  void **dst = src + nsrc;
  int ndst = 0, st = GPAR_OK;
  pthread_mutex_lock(&eng->mu);
  gpar__op *op = gpar__op_new(eng);
  if (!op) {
    pthread_mutex_unlock(&eng->mu);
    free(src);
    return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
  }
  op->kind = GPAR__OP_REDUCE;
  op->dev = eng->host_dev;
  op->lane = GPAR__LANE_COMPUTE;
  op->name = "comm_reduce";
  op->u.reduce = (gpar__reduce_args){(int)gpar_dtype_size(a->dtype), (int)a->op, count, nsrc, 0, src, dst};
  gpar__buf *b;
  if ((st = gpar__buf_get_locked(eng, r, &b)) == GPAR_OK) {
    dst[ndst++] = b->mem;
    st = gpar__op_add_access(op, b, GPAR__WRITE);
  }
  for (int i = 0; i < nsrc && st == GPAR_OK; i++)
    if ((st = gpar__buf_get_locked(eng, srcs[i], &b)) == GPAR_OK) {
      src[i] = (char *)b->mem + soff[i];
      st = gpar__op_add_access(op, b, GPAR__READ);
    }
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    if (m[i].host && (st = gpar__buf_get_locked(eng, m[i].h, &b)) == GPAR_OK) {
      dst[ndst++] = (char *)b->mem + m[i].off;
      st = gpar__op_add_access(op, b, GPAR__READ | GPAR__WRITE);
    }
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    if ((st = gpar__buf_get_locked(eng, c->tokens[i], &b)) == GPAR_OK) st = gpar__op_add_access(op, b, GPAR__WRITE);
  op->u.reduce.ndst = ndst;
  if (st != GPAR_OK) {
    gpar__op_discard(eng, op); /* frees src with the op */
    pthread_mutex_unlock(&eng->mu);
    return st == GPAR_ENOMEM ? gpar__errorf(st, "out of host memory for an operation") : st;
  }
  int wait = eng->cfg.synchronous && !gpar__in_op;
  gpar__op_submit(eng, op, wait);
  pthread_mutex_unlock(&eng->mu);
  return wait ? gpar__wait_op(eng, op) : GPAR_OK;
}

/* Allreduce (and reduce-scatter, as an allreduce of the whole range) through host memory:
 * device members' ranges are copied into staging, reduced on the CPU into R, and R copied back.
 * Host members are read and written in place by the reduction. */
static int staged_allreduce(gpar__comm *c, const gpar_coll *a, const member *m) {
  gpar_engine *eng = c->eng;
  size_t es = gpar_dtype_size(a->dtype);
  size_t count = a->count * (a->kind == GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1), bytes = count * es;
  int n = c->nlocal, st;
  gpar_buffer r = {0}, *srcs = calloc((size_t)n, sizeof *srcs);
  size_t *soff = calloc((size_t)n, sizeof *soff);
  if (!srcs || !soff) {
    free(srcs);
    free(soff);
    return gpar__errorf(GPAR_ENOMEM, "out of host memory");
  }
  st = gpar_buffer_create(eng, GPAR_HOST, bytes, &r);
  for (int i = 0; i < n && st == GPAR_OK; i++) {
    if (m[i].host) {
      srcs[i] = m[i].h;
      soff[i] = m[i].off;
      continue;
    }
    if ((st = gpar_buffer_create(eng, GPAR_HOST, bytes, &srcs[i])) == GPAR_OK)
      st = gpar_copy(srcs[i], 0, m[i].h, m[i].off, bytes);
  }
  if (st == GPAR_OK) st = submit_reduce(c, a, count, srcs, soff, n, r, m);
  for (int i = 0; i < n && st == GPAR_OK; i++)
    if (!m[i].host) st = gpar_copy(m[i].h, m[i].off, r, 0, bytes);
  for (int i = 0; i < n; i++)
    if (!m[i].host && srcs[i].id) gpar_buffer_release(srcs[i]); /* freed once their ops are done */
  if (r.id) gpar_buffer_release(r);
  free(srcs);
  free(soff);
  return st;
}

/* Broadcast and all-gather are copies between the members (gpar_copy picks peer, staged or
 * host paths). */
static int staged_copies(gpar__comm *c, const gpar_coll *a, const member *m) {
  size_t es = gpar_dtype_size(a->dtype), blk = a->count * es;
  int st = GPAR_OK;
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    for (int j = 0; j < c->nlocal && st == GPAR_OK; j++) {
      if (i == j) continue;
      if (a->kind == GPAR_COLL_BROADCAST && i == a->root)
        st = gpar_copy(m[j].h, m[j].off, m[i].h, m[i].off, blk);
      else if (a->kind == GPAR_COLL_ALL_GATHER)
        st = gpar_copy(m[j].h, m[j].off + (size_t)i * blk, m[i].h, m[i].off + (size_t)i * blk, blk);
    }
  return st;
}

/* ---------------------------------------------------------------- the collectives */

static int collective(gpar_comm h, const gpar_coll *a) {
  gpar__comm *c;
  int st = comm_get(h, coll_names[a->kind], &c);
  if (st) return st;
  /* Counted as a call inside the engine, so a concurrent shutdown frees nothing meanwhile. */
  gpar_engine *eng = gpar__engine_enter(c->eng, &st);
  if (!eng) {
    comm_put(c);
    return st;
  }
  member *m = calloc((size_t)c->nlocal, sizeof *m);
  size_t *offs = calloc((size_t)c->nlocal, sizeof *offs);
  if (!m || !offs)
    st = gpar__errorf(GPAR_ENOMEM, "out of host memory");
  else
    st = coll_check(c, a, m);
  if (st == GPAR_OK && c->t.collective) {
    gpar_coll t = *a;
    for (int i = 0; i < c->nlocal; i++) offs[i] = a->offs ? a->offs[i] : 0;
    t.offs = offs;
    st = c->t.collective(c->ctx, &t);
  } else if (st == GPAR_OK && c->bops) {
    st = coll_backend(c, a, m);
  } else if (st == GPAR_OK) {
    st = a->kind == GPAR_COLL_ALLREDUCE || a->kind == GPAR_COLL_REDUCE_SCATTER ? staged_allreduce(c, a, m)
                                                                                : staged_copies(c, a, m);
  }
  free(m);
  free(offs);
  gpar__engine_leave(eng);
  comm_put(c);
  return st;
}

GPAR_API int gpar_allreduce(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                            gpar_dtype dtype, gpar_redop op) {
  gpar_coll a = {GPAR_COLL_ALLREDUCE, bufs, offs, count, dtype, op, 0};
  return collective(comm, &a);
}

GPAR_API int gpar_broadcast(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                            gpar_dtype dtype, int root) {
  gpar_coll a = {GPAR_COLL_BROADCAST, bufs, offs, count, dtype, GPAR_SUM, root};
  return collective(comm, &a);
}

GPAR_API int gpar_reduce_scatter(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                                 gpar_dtype dtype, gpar_redop op) {
  gpar_coll a = {GPAR_COLL_REDUCE_SCATTER, bufs, offs, count, dtype, op, 0};
  return collective(comm, &a);
}

GPAR_API int gpar_all_gather(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                             gpar_dtype dtype) {
  gpar_coll a = {GPAR_COLL_ALL_GATHER, bufs, offs, count, dtype, GPAR_SUM, 0};
  return collective(comm, &a);
}

/* ---------------------------------------------------------------- engine hooks */

/* Run a collective's op (called from the engine's dispatch switch). */
int gpar__comm_exec(gpar__device *dev, gpar__op *op) {
  if (op->kind == GPAR__OP_REDUCE) {
    if (!dev->ops->reduce) return gpar__errorf(GPAR_ENOTSUP, "%s: no CPU reduction", dev->ops->name);
    return dev->ops->reduce(dev->bdev, &op->u.reduce);
  }
  return dev->ops->coll(dev->bdev, op->lane, &op->u.coll);
}

/* Free what an op of this file owns (engine's op_free). */
void gpar__comm_op_free(gpar__op *op) {
  if (op->kind == GPAR__OP_REDUCE) {
    free(op->u.reduce.src); /* dst lives in the same block */
    op->u.reduce.src = NULL;
  }
}

/* Watchdog of backend collectives, called by the device's completion thread while the op is
 * pending: a collective that some member never joins (mismatched calls) waits forever inside
 * NCCL, which cannot cancel it. After GPAR_COMM_TIMEOUT seconds (default 300) it is named on
 * stderr, once, so the hang is never silent. */
void gpar__comm_watch(gpar__device *dev, gpar__op *op) {
  static double timeout;
  if (op->u.coll.warned) return;
  if (timeout == 0) {
    const char *e = getenv("GPAR_COMM_TIMEOUT");
    timeout = e && atof(e) > 0 ? atof(e) : 300.0;
  }
  double waited = gpar__now() - op->t_dispatch;
  if (waited < timeout) return;
  op->u.coll.warned = 1;
  fprintf(stderr,
          "libgpar: %s: collective %s (member %d, %zu elements) not complete after %.0f s: every member must issue "
          "a communicator's collectives in the same order; the vendor library cannot cancel it and still waits\n",
          dev->info.name, op->name, op->u.coll.rank, op->u.coll.count, waited);
}
