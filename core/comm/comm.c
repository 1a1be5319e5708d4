/* comm.c: communicators: their objects, handles and lifetime (comm.h), their info, shutdown,
 * and the names and element sizes the collectives share. The collectives themselves are
 * collectives.c's (checks, the public calls) and paths.c's (how they become engine ops). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

/* Handles: id = serial << 12 | slot (serial >= 1, so id 0 is never valid). */
#define COMM_SLOT_BITS 12
#define COMM_SERIAL_MAX ((UINT64_C(1) << (64 - COMM_SLOT_BITS)) - 1)

static gpar__handle_table *comm_table;
static pthread_once_t comm_table_once = PTHREAD_ONCE_INIT;
static void comm_table_make(void) { comm_table = gpar__handle_table_new(1u << COMM_SLOT_BITS, COMM_SERIAL_MAX); }
static gpar__handle_table *table(void) {
  pthread_once(&comm_table_once, comm_table_make);
  return comm_table;
}

const char *const gpar__coll_names[] = {"gpar_allreduce", "gpar_broadcast", "gpar_reduce_scatter",
                                        "gpar_all_gather"};

static void comm_free(gpar__comm *c) {
  pthread_mutex_destroy(&c->issue_mu);
  free(c->devs);
  free(c->tokens);
  free(c);
}

int gpar__comm_get(gpar_comm h, const char *fn, gpar__comm **out) {
  gpar__handle_table *t = table();
  gpar__comm *c = t ? gpar__handle_get(t, (uint32_t)(h.id & ((1u << COMM_SLOT_BITS) - 1)), h.id >> COMM_SLOT_BITS) : NULL;
  if (!c) return gpar__errorf(GPAR_EINVAL, "%s: communicator %#llx is destroyed or invalid", fn, (unsigned long long)h.id);
  *out = c;
  return GPAR_OK;
}

void gpar__comm_put(gpar__comm *c) { gpar__handle_put(table(), c->slot); }

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

/* Check the arguments of a communicator over ndevs devices of eng (entered). */
static int comm_check_args(gpar_engine *eng, const int *devs, int ndevs, int nmembers, int first_local,
                           const gpar_comm_transport *t) {
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
  return GPAR_OK;
}

/* Free a communicator no op and no call uses any more: the backend's communicator, the
 * transport's context, the tokens (release = 1 while the engine is open). */
static void comm_teardown(gpar__comm *c, int release) {
  if (c->bops) c->bops->comm_destroy(c->bcomm);
  if (c->t.destroy) c->t.destroy(c->ctx);
  for (int i = 0; i < c->nlocal && release; i++)
    if (c->tokens[i].id) gpar__buf_release_token(c->eng, c->tokens[i]);
  comm_free(c);
}

/* Make a communicator (eng entered; arguments checked). */
static int comm_make(gpar_engine *eng, const int *devs, int ndevs, int nmembers, int first_local,
                     const gpar_comm_transport *t, void *ctx, gpar_comm *out) {
  gpar__handle_table *tbl = table();
  gpar__comm *c = tbl ? calloc(1, sizeof *c) : NULL;
  if (c) c->devs = malloc(sizeof *c->devs * (size_t)ndevs);
  if (c) c->tokens = calloc((size_t)ndevs, sizeof *c->tokens);
  if (!c || !c->devs || !c->tokens) {
    if (c) {
      free(c->devs);
      free(c->tokens);
      free(c);
    }
    return gpar__errorf(GPAR_ENOMEM, "gpar_comm_create: out of host memory");
  }
  pthread_mutex_init(&c->issue_mu, NULL);
  memcpy(c->devs, devs, sizeof *devs * (size_t)ndevs);
  c->token = gpar__engine_token(eng);
  c->eng = eng;
  c->nlocal = ndevs;
  c->nmembers = nmembers;
  c->first_local = first_local;
  int st = GPAR_OK;
  for (int i = 0; i < ndevs && st == GPAR_OK; i++) st = gpar__buf_create_token(eng, &c->tokens[i]);
  if (st == GPAR_OK && !t) comm_try_backend(eng, c);
  if (st == GPAR_OK) st = gpar__handle_add(tbl, c, &c->slot, &c->serial);
  if (st != GPAR_OK) {
    comm_teardown(c, 1); /* no transport yet: its ctx stays the caller's */
    return st;
  }
  if (t) { /* owned from here on: the communicator's destroy frees ctx */
    c->t = *t;
    c->ctx = ctx;
  }
  out->id = c->serial << COMM_SLOT_BITS | c->slot;
  return GPAR_OK;
}

static int comm_create(gpar_engine *e, const int *devs, int ndevs, int nmembers, int first_local,
                       const gpar_comm_transport *t, void *ctx, gpar_comm *out) {
  int st;
  if (out) out->id = 0;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!out)
    st = gpar__errorf(GPAR_EINVAL, "gpar_comm_create: comm is NULL");
  else if ((st = comm_check_args(eng, devs, ndevs, nmembers, first_local, t)) == GPAR_OK)
    st = comm_make(eng, devs, ndevs, nmembers, first_local, t, ctx, out);
  gpar__engine_leave(eng); /* held across: a concurrent shutdown frees nothing read above */
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

/* Wait for the last op on each member token (eng entered): nothing uses the backend's or the
 * transport's communicator afterwards. */
static void wait_tokens(gpar_engine *eng, gpar__comm *c) {
  for (int i = 0; i < c->nlocal; i++) {
    gpar__buf *b;
    if (gpar__buf_get_token(eng, c->tokens[i], &b) != GPAR_OK) continue;
    gpar__buf_wait(eng, b);
    gpar__buf_put(b);
  }
}

GPAR_API int gpar_comm_destroy(gpar_comm h) {
  gpar__comm *c;
  int st = gpar__comm_get(h, "gpar_comm_destroy", &c);
  if (st) return st;
  if (gpar__in_op) {
    gpar__comm_put(c);
    return gpar__errorf(GPAR_EDEADLK, "gpar_comm_destroy called from inside an operation (it waits for the "
                                      "communicator's operations)");
  }
  /* Entered first, so a concurrent gpar_shutdown waits for this call before it destroys the
   * engine's communicators; an engine that is shutting down destroys them itself. */
  gpar_engine *eng = gpar__engine_enter(c->token, &st);
  gpar__comm *mine = eng ? gpar__handle_kill(table(), c->slot, c->serial) : NULL;
  gpar__comm_put(c);
  if (!mine) {
    if (eng) gpar__engine_leave(eng);
    if (!eng) return gpar__errorf(GPAR_ESHUTDOWN, "gpar_comm_destroy: the communicator's engine is shutting down "
                                                  "(gpar_shutdown destroys its communicators)");
    return gpar__errorf(GPAR_EINVAL, "gpar_comm_destroy: communicator %#llx is destroyed already",
                        (unsigned long long)h.id);
  }
  gpar__handle_recycle(table(), c->slot); /* no call holds it any more: no new collective */
  wait_tokens(eng, c);
  comm_teardown(c, 1);
  gpar__engine_leave(eng);
  return GPAR_OK;
}

static int comm_of(void *obj, void *token) { return ((gpar__comm *)obj)->token == token; }
static void comm_drop(void *obj, void *token) {
  (void)token;
  comm_teardown(obj, 0); /* nothing is in flight after the drain; the engine frees the tokens */
}

void gpar__comm_shutdown(gpar_engine *eng) { gpar__handle_drain(table(), comm_of, comm_drop, gpar__engine_token(eng)); }

GPAR_API int gpar_comm_info(gpar_comm h, int *nmembers, int *first_local, int *nlocal) {
  gpar__comm *c;
  int st = gpar__comm_get(h, "gpar_comm_info", &c);
  if (st) return st;
  if (nmembers) *nmembers = c->nmembers;
  if (first_local) *first_local = c->first_local;
  if (nlocal) *nlocal = c->nlocal;
  gpar__comm_put(c);
  return GPAR_OK;
}

/* The hold is a reference on the communicator's slot, as every call in progress takes (handle.c):
 * destroy ends the handle at once but its recycle waits for the hold before comm_teardown frees
 * the context, and a get after the handle ended is refused. The calling thread notes each hold
 * (holds[]), so that a put it did not get is refused before any slot is touched: a put after a
 * failed get would drop a reference of whatever communicator holds the slot by then, and a slot
 * never used has no memory behind it. */
#define COMM_HOLDS 16
static _Thread_local struct {
  uint64_t id;
  int n;
} holds[COMM_HOLDS];

/* This thread's entry for id (n > 0), or a free one when want_free (n == 0), or NULL. */
static int hold_slot(uint64_t id, int want_free) {
  int free_slot = -1;
  for (int i = 0; i < COMM_HOLDS; i++) {
    if (holds[i].n > 0 && holds[i].id == id) return i;
    if (holds[i].n == 0 && free_slot < 0) free_slot = i;
  }
  return want_free ? free_slot : -1;
}

GPAR_API int gpar_comm_transport_ctx_get(gpar_comm h, void **ctx) {
  gpar__comm *c;
  if (ctx) *ctx = NULL;
  if (!ctx) return gpar__errorf(GPAR_EINVAL, "gpar_comm_transport_ctx_get: ctx is NULL");
  int i = hold_slot(h.id, 1);
  if (i < 0)
    return gpar__errorf(GPAR_EINVAL,
                        "gpar_comm_transport_ctx_get: this thread holds %d communicators' contexts "
                        "already (put one first)",
                        COMM_HOLDS);
  int st = gpar__comm_get(h, "gpar_comm_transport_ctx_get", &c);
  if (st) return st;
  if (!c->t.collective) {
    gpar__comm_put(c);
    return gpar__errorf(GPAR_EINVAL, "communicator %#llx has no transport", (unsigned long long)h.id);
  }
  holds[i].id = h.id;
  holds[i].n++;
  *ctx = c->ctx; /* the reference stays: dropped by gpar_comm_transport_ctx_put */
  return GPAR_OK;
}

GPAR_API int gpar_comm_transport_ctx_put(gpar_comm h) {
  int i = hold_slot(h.id, 0);
  if (i < 0)
    return gpar__errorf(GPAR_EINVAL,
                        "gpar_comm_transport_ctx_put: this thread holds no context of communicator "
                        "%#llx (no successful gpar_comm_transport_ctx_get, or put already)",
                        (unsigned long long)h.id);
  holds[i].n--;
  /* The hold keeps h's slot from being recycled, so the slot is still h's communicator's. */
  gpar__handle_put(table(), (uint32_t)(h.id & ((1u << COMM_SLOT_BITS) - 1)));
  return GPAR_OK;
}
