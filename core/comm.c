/* comm.c: communicators and collectives (issue 15): communicator objects and their registry,
 * the public collectives and their argument checks. A checked collective is expressed as engine
 * ops, so the engine's buffer tracking orders it with all other work and carries failures to
 * its outputs, by one of three paths:
 * - backend path (CUDA members with NCCL): one GPAR__OP_COLL per member on that device's peer
 *   lane, issued by the device's own dispatcher thread (comm_paths.c). Each member op writes
 *   the member's token, so the engine's write-after-write ordering issues them in program order
 *   on every member;
 * - staged path (everything else): copies into GPAR_HOST staging, one GPAR__OP_REDUCE on the
 *   CPU (OpenBLAS axpy for sums), copies back: a small DAG of ordinary engine ops (comm_paths.c);
 * - transport path (libgpar_mpi): the transport builds the ops through the public API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

#define GPAR__MAX_COMMS 4096

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
  if (eng->env_comm_staged) return;
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

const char *const gpar__coll_names[] = {"gpar_allreduce", "gpar_broadcast", "gpar_reduce_scatter",
                                        "gpar_all_gather"};

/* Check a collective's arguments; fill m[] (nlocal entries). Nothing is enqueued. */
static int coll_check(gpar__comm *c, const gpar_coll *a, gpar__comm_member *m) {
  const char *fn = gpar__coll_names[a->kind];
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

/* ---------------------------------------------------------------- the collectives */

static int collective(gpar_comm h, const gpar_coll *a) {
  gpar__comm *c;
  int st = comm_get(h, gpar__coll_names[a->kind], &c);
  if (st) return st;
  /* Counted as a call inside the engine, so a concurrent shutdown frees nothing meanwhile. */
  gpar_engine *eng = gpar__engine_enter(c->eng, &st);
  if (!eng) {
    comm_put(c);
    return st;
  }
  gpar__comm_member *m = calloc((size_t)c->nlocal, sizeof *m);
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
    st = gpar__comm_backend(c, a, m);
  } else if (st == GPAR_OK) {
    st = gpar__comm_staged(c, a, m);
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
