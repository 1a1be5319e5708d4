/* op.c: ops as objects (op.h): allocation, the buffers an op accesses, building and discarding,
 * references, its state and outcome (its failure, what it leaves on each buffer it writes, the
 * event that says it is done), and what an op owns (its buffer references, a pinned block, its
 * kind's private state), given up in one place whether it retires or is discarded; and the
 * kind that runs nothing. Linking ops into the dependency graph is deps.c's.
 *
 * Allocation without a shared lock: a thread that frees ops collects them in a small batch of
 * its own and gives a full batch back to the engine with one compare-and-swap onto the
 * engine's pool (a stack); an allocating thread takes the whole pool with one exchange into a
 * cache of its own (no ABA: nothing pops single ops off the shared stack). One engine is cached
 * per thread (keyed by its serial); ops of another engine go straight back to it. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine/buffer.h"
#include "engine/device.h"
#include "engine/op.h"
#include "engine/pinned.h"

void gpar__op_set_state(gpar__op *op, int state) {
  assert(state == atomic_load_explicit(&op->state, memory_order_relaxed) + 1 && "op states advance one step at a time");
  /* Each state publishes what the op's thread wrote before (the retirement's, under the op's
   * lock, also orders it against a waiter's mark: wait.c). */
  atomic_store_explicit(&op->state, state, memory_order_release);
}

static int order_run(gpar__device *dev, gpar__op *op) {
  (void)dev;
  (void)op;
  return GPAR_OK;
}
const gpar__op_kind gpar__kind_order = {.name = "order", .run = order_run, .flags = GPAR__KIND_ECHOES};

/* ---------------------------------------------------------------- the op pool */

#define GPAR__OP_BATCH 32

/* The calling thread's ops of one engine lifetime: a cache to allocate from, a batch of freed
 * ones to give back. */
typedef struct op_cache {
  gpar_engine *eng;
  uint64_t serial;
  gpar__op *alloc;             /* to allocate from */
  gpar__op *freed, *freed_tail; /* to give back */
  int nfreed;
} op_cache;
static GPAR__TLS op_cache cache;
/* A key whose destructor gives a leaving thread's cache back (or frees it, engine gone). */
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;
static void cache_drop(void);
static void cache_at_exit(void *unused) {
  (void)unused;
  cache_drop();
}
static void cache_key_make(void) { pthread_key_create(&cache_key, cache_at_exit); }

/* Push a chain first..last onto the engine's pool. */
static void pool_push(gpar_engine *eng, gpar__op *first, gpar__op *last) {
  gpar__op *head = atomic_load_explicit(&eng->op_pool, memory_order_relaxed);
  do last->next = head;
  while (!atomic_compare_exchange_weak_explicit(&eng->op_pool, &head, first, memory_order_release,
                                                memory_order_relaxed));
}

void gpar__op_cache_flush(gpar_engine *eng) {
  if (cache.eng != eng || cache.serial != atomic_load(&eng->serial)) return;
  if (cache.freed) pool_push(eng, cache.freed, cache.freed_tail);
  gpar__op *last = cache.alloc;
  while (last && last->next) last = last->next;
  if (last) pool_push(eng, cache.alloc, last);
  memset(&cache, 0, sizeof cache);
}

/* Empty the thread's cache: back to its engine while this thread is counted among the engine's
 * callers (its shutdown then frees the pool only after this), else freed: a thread that ends
 * while its engine shuts down must not push onto a pool that was emptied for the last time. */
static void cache_drop(void) {
  gpar_engine *eng = cache.eng;
  if (eng && gpar__engine_hold(eng, cache.serial)) {
    gpar__op_cache_flush(eng);
    gpar__engine_unhold(eng);
  } else { /* its engine is gone or going: the ops are ours to free */
    for (gpar__op *op = cache.alloc, *n; op; op = n) n = op->next, free(op);
    for (gpar__op *op = cache.freed, *n; op; op = n) n = op->next, free(op);
  }
  memset(&cache, 0, sizeof cache);
}

/* Make the thread's cache serve eng (giving back what it held for another engine). */
static void cache_bind(gpar_engine *eng) {
  uint64_t serial = atomic_load_explicit(&eng->serial, memory_order_relaxed);
  if (cache.eng == eng && cache.serial == serial) return;
  cache_drop();
  pthread_once(&cache_key_once, cache_key_make);
  pthread_setspecific(cache_key, &cache); /* any non-NULL value: the destructor runs at exit */
  cache.eng = eng;
  cache.serial = serial;
}

static gpar__op *op_alloc(gpar_engine *eng) {
  cache_bind(eng);
  gpar__op *op = cache.alloc;
  if (!op) op = cache.alloc = atomic_exchange_explicit(&eng->op_pool, NULL, memory_order_acquire);
  if (!op && cache.freed) { /* our own batch */
    op = cache.alloc = cache.freed;
    cache.freed = cache.freed_tail = NULL;
    cache.nfreed = 0;
  }
  if (op) {
    cache.alloc = op->next;
    return op;
  }
  return malloc(sizeof *op);
}

/* Return an op's memory (nothing refers to it any more). */
static void op_recycle(gpar__op *op) {
  gpar_engine *eng = op->eng;
  if (cache.eng != eng || cache.serial != atomic_load_explicit(&eng->serial, memory_order_relaxed)) {
    pool_push(eng, op, op);
    return;
  }
  op->next = cache.freed;
  if (!cache.freed) cache.freed_tail = op;
  cache.freed = op;
  if (++cache.nfreed >= GPAR__OP_BATCH) {
    pool_push(eng, cache.freed, cache.freed_tail);
    cache.freed = cache.freed_tail = NULL;
    cache.nfreed = 0;
  }
}

void gpar__engine_drop_ops(gpar_engine *eng) {
  gpar__op_cache_flush(eng);
  gpar__op *op = atomic_exchange(&eng->op_pool, NULL);
  while (op) {
    gpar__op *n = op->next;
    free(op);
    op = n;
  }
}

/* ---------------------------------------------------------------- building */

gpar__op *gpar__op_new(gpar_engine *eng, const gpar__op_kind *kind, gpar__device *dev, int lane) {
  gpar__op *op = op_alloc(eng);
  if (!op) {
    gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
    return NULL;
  }
  memset(op, 0, offsetof(gpar__op, prods)); /* the rest is set before it is read (engine.h) */
  op->prods.n = op->prods.cap = op->succs.n = op->succs.cap = 0;
  op->prods.v = op->succs.v = NULL;
  if (eng->tracing) memset(&op->t_submit, 0, (char *)(&op->t_seen + 1) - (char *)&op->t_submit);
  op->kind = kind;
  op->eng = eng;
  op->dev = dev;
  op->lane = lane;
  /* Open (-1, lanes.h) on a device with several compute lanes, unless its kind keeps the first. */
  int open = lane == GPAR__LANE_COMPUTE && dev && dev->lanes > 1 && !(kind->flags & GPAR__KIND_FIRST_LANE);
  atomic_init(&op->pick, open ? -1 : lane);
  return op;
}

int gpar__op_use(gpar__op *op, gpar__buf *b, int mode) {
  assert(atomic_load(&op->state) == GPAR__ST_NEW);
  for (int i = 0; i < op->nacc; i++) {
    gpar__access *a = gpar__op_access(op, i);
    if (a->buf == b) {
      a->mode |= mode;
      gpar__buf_put(b); /* the op holds one already */
      return GPAR_OK;
    }
  }
  if (op->nacc >= GPAR__INLINE) {
    int extra = op->nacc - GPAR__INLINE;
    if ((extra & (extra - 1)) == 0) { /* grow at 0, 1, 2, 4, 8, ... */
      gpar__access *m = realloc(op->acc_more, sizeof *m * (size_t)(extra ? extra * 2 : 1));
      if (!m) {
        gpar__buf_put(b);
        return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
      }
      op->acc_more = m;
    }
  }
  gpar__access *a = gpar__op_access(op, op->nacc++);
  a->buf = b;
  a->mode = mode;
  return GPAR_OK;
}

int gpar__op_use_unique(gpar__op *op, const gpar__access *acc, int n) {
  assert(atomic_load(&op->state) == GPAR__ST_NEW && op->nacc == 0);
  if (n > GPAR__INLINE) {
    /* capacity as gpar__op_use would grow it: the next power of two of the extra entries */
    int extra = n - GPAR__INLINE, cap = 1;
    while (cap < extra) cap *= 2;
    if (!(op->acc_more = malloc(sizeof *op->acc_more * (size_t)cap)))
      return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
  }
  for (int i = 0; i < n; i++) {
    gpar__buf_ref(acc[i].buf);
    *gpar__op_access(op, i) = acc[i];
  }
  op->nacc = n;
  return GPAR_OK;
}

/* What the op owns besides its memory: its kind's state and a pinned block. Given up once, at
 * retirement or discard. */
void gpar__op_release_owned(gpar__op *op) {
  if (op->kind && op->kind->release) op->kind->release(op);
  if (op->owned_pinned) gpar__pinned_free(op->eng->pinned, op->owned_pinned);
  op->owned_pinned = NULL;
}

static void edges_free(gpar__edges *e) {
  if (e->v && e->v != e->inl) free(e->v);
  e->v = NULL;
  e->n = e->cap = 0;
}

/* Free an op nothing refers to any more: its events, edges and messages; what it owned is
 * given up already (retirement or discard). */
static void op_free(gpar__op *op) {
  gpar_engine *eng = op->eng;
  const gpar__backend_ops *ops = op->dev ? op->dev->ops : NULL;
  if (op->event) {
    ops->event_release(op->event);
    atomic_fetch_sub_explicit(&eng->events_live, 1, memory_order_relaxed);
  }
  if (op->start_event) {
    ops->event_release(op->start_event);
    atomic_fetch_sub_explicit(&eng->events_live, 1, memory_order_relaxed);
  }
  if (op->cover) gpar__op_unref(op->cover);
  edges_free(&op->prods);
  edges_free(&op->succs);
  free(op->acc_more);
  free(op->errmsg);
  free(op->async_msg);
  op_recycle(op);
}

void gpar__op_discard(gpar__op *op) {
  assert(atomic_load(&op->state) == GPAR__ST_NEW);
  gpar__op_release_owned(op);
  for (int i = 0; i < op->nacc; i++) gpar__buf_put(gpar__op_access(op, i)->buf);
  op->nacc = 0;
  op->dev = NULL; /* no events to give back */
  op_free(op);
}

void gpar__op_ref(gpar__op *op) { atomic_fetch_add_explicit(&op->refs, 1, memory_order_relaxed); }

void gpar__op_unref(gpar__op *op) {
  int was = atomic_fetch_sub_explicit(&op->refs, 1, memory_order_acq_rel);
  assert(was > 0);
  if (was == 1) op_free(op);
}

void gpar__op_fail(gpar__op *op, int st) {
  if (op->status != GPAR_OK) return;
  op->status = st;
  free(op->errmsg);
  op->errmsg = strdup(st == GPAR_EDEPFAILED ? gpar_strerror(st) : gpar__error_msg());
}

/* With per-buffer outcomes: the mark of its access to b. */
int gpar__op_write_status(const gpar__op *op, const gpar__buf *b, const char **msg) {
  *msg = op->errmsg;
  if (!op->partial) return op->status;
  *msg = NULL;
  for (int a = 0; a < op->nacc; a++) {
    const gpar__access *acc = gpar__op_access(op, a);
    if (acc->buf != b) continue;
    if (acc->mode & GPAR__WRITE_FAILED) {
      *msg = op->errmsg;
      return op->status;
    }
    if (acc->mode & GPAR__WRITE_SKIPPED) {
      *msg = gpar_strerror(GPAR_EDEPFAILED);
      return GPAR_EDEPFAILED;
    }
    break;
  }
  return GPAR_OK;
}

gpar__event *gpar__op_done_event(const gpar__op *op) {
  return op->event ? op->event : op->cover ? op->cover->event : NULL;
}
