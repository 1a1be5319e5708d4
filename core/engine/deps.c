/* deps.c: dependency tracking without a global lock. Each buffer keeps its last writer and the
 * readers since (MXNet's variables) under its own lock; each op counts its unmet and unretired
 * producers in atomics, and whoever brings a count to 0 makes the op ready or retires it; a
 * producer's consumer list is guarded by the producer's own lock only while consumers are
 * linked to it and while it is dispatched. The thread that finishes an op retires it and
 * releases its consumers with no lock but the buffers' (Nanos6, SuperGlue); a CPU worker keeps
 * one consumer it makes ready to run next itself.
 *
 * Ordering rule: an edge producer -> consumer is ordered on the device (the consumer's lane
 * waits on the producer's event) when both run on lanes of one event backend that can wait
 * across the two devices; every other edge (CPU ops, across backends) waits for the producer to
 * retire. A consumer's `unmet` counts producers not yet dispatched (event edges) or retired
 * (the others); `unretired` counts producers not yet retired: an op retires only after its
 * producers, so a buffer's status always comes from its last writer.
 *
 * Why no consumer is lost: a consumer is linked behind a producer only while the linking thread
 * holds the lock of a buffer where the producer is still the writer or a reader; a retiring op
 * takes itself out of each buffer under that buffer's lock before it walks its consumer list,
 * so every edge to it exists by then. Dispatch changes the state and walks the list under the
 * op's lock, and a linking thread reads the state under the same lock, so an edge linked after
 * the dispatch knows not to wait for it.
 * Lock order: buffers' locks (several only while a submission is linked, in address order), then
 * an op's lock; never two ops' locks at once. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine/buffer.h"
#include "engine/deps.h"
#include "engine/device.h"
#include "engine/inflight.h"
#include "engine/lanes.h"
#include "engine/queue.h"
#include "engine/trace.h"

/* ---------------------------------------------------------------- edges */

static int edges_push(gpar__edges *e, gpar__op *op, int flags) {
  if (!e->v) {
    e->v = e->inl;
    e->cap = GPAR__INLINE;
  }
  if (e->n == e->cap) {
    int cap = e->cap * 2;
    gpar__edge *v = malloc(sizeof *v * (size_t)cap);
    if (!v) return GPAR_ENOMEM;
    memcpy(v, e->v, sizeof *v * (size_t)e->n);
    if (e->v != e->inl) free(e->v);
    e->v = v;
    e->cap = cap;
  }
  e->v[e->n].op = op;
  e->v[e->n].flags = flags;
  e->n++;
  return GPAR_OK;
}

/* An access's mode, read while producers may mark it (GPAR__READ_FAILED) from other threads. */
static int access_mode(const gpar__access *a) { return __atomic_load_n(&a->mode, __ATOMIC_RELAXED); }

/* Whether op writes b. */
static int op_writes(const gpar__op *op, const gpar__buf *b) {
  for (int a = 0; a < op->nacc; a++)
    if (gpar__op_access(op, a)->buf == b) return (gpar__op_access(op, a)->mode & GPAR__WRITE) != 0;
  return 0;
}

/* Consumer c, linked behind op by a data edge, reads what op failed to produce: mark each read
 * access of c whose buffer op wrote and failed (GPAR__READ_FAILED) and c as a whole
 * (dep_failed). Nothing when op succeeded. op's status is final: it is dispatched or retired. */
static void mark_failed_reads(const gpar__op *op, gpar__op *c) {
  const char *msg;
  if (op->status == GPAR_OK) return;
  for (int a = 0; a < c->nacc; a++) {
    gpar__access *acc = gpar__op_access(c, a);
    if ((access_mode(acc) & GPAR__READ) && op_writes(op, acc->buf) && gpar__op_write_status(op, acc->buf, &msg) != GPAR_OK) {
      __atomic_fetch_or(&acc->mode, GPAR__READ_FAILED, __ATOMIC_RELAXED);
      atomic_store(&c->dep_failed, 1);
    }
  }
}

static int edge_on_device(const gpar__op *p, const gpar__op *c) {
  const gpar__device *pd = p->dev, *cd = c->dev;
  /* A backend whose host-to-device copies may read host memory when enqueued (NVIDIA's OpenCL
   * stages the source at enqueue) cannot order that read behind an event: wait for retirement. */
  if ((c->kind->flags & GPAR__KIND_READS_HOST_AT_ENQUEUE) && cd->ops->h2d_reads_at_enqueue) return 0;
  return pd->ops == cd->ops && pd->ops->ordered_by_events &&
         (pd == cd || pd->ops->can_wait(pd->be, pd->bidx, cd->bidx));
}

/* Link consumer c behind producer p, which the caller found in a buffer it holds the lock of
 * (so p has not retired). */
static int add_edge(gpar__op *p, gpar__op *c, int data) {
  for (int i = 0; i < c->prods.n; i++)
    if (c->prods.v[i].op == p) { /* already linked through another buffer */
      if (data && !(c->prods.v[i].flags & GPAR__EDGE_DATA)) {
        c->prods.v[i].flags |= GPAR__EDGE_DATA;
        gpar__spin_lock(&p->lock);
        for (int j = 0; j < p->succs.n; j++)
          if (p->succs.v[j].op == c) p->succs.v[j].flags |= GPAR__EDGE_DATA;
        if (atomic_load(&p->state) >= GPAR__ST_DISPATCHED) mark_failed_reads(p, c);
        gpar__spin_unlock(&p->lock);
      }
      return GPAR_OK;
    }
  int flags = (data ? GPAR__EDGE_DATA : 0) | (edge_on_device(p, c) ? GPAR__EDGE_EVENT : 0);
  if (edges_push(&c->prods, p, flags)) return GPAR_ENOMEM;
  int st = GPAR_OK;
  gpar__spin_lock(&p->lock);
  int dispatched = atomic_load(&p->state) >= GPAR__ST_DISPATCHED;
  if (edges_push(&p->succs, c, flags) != GPAR_OK) {
    st = GPAR_ENOMEM;
  } else {
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->unretired, 1, memory_order_relaxed);
    if (!(flags & GPAR__EDGE_EVENT) || !dispatched) atomic_fetch_add_explicit(&c->unmet, 1, memory_order_relaxed);
    if (dispatched && data) mark_failed_reads(p, c);
  }
  gpar__spin_unlock(&p->lock);
  if (st != GPAR_OK) c->prods.n--; /* not linked after all */
  return st;
}

/* A buffer's readers since its last write: a queue in readers[rhead, rtail). Each reader's
 * access to the buffer holds its index there (ridx), so leaving costs O(1) whatever happened
 * since: its slot is emptied (NULL) when the index still holds it, and nothing is done when a
 * later write took the readers off (the slot is another op's then, or past the tail); the head
 * moves past empty slots. No search over thousands of readers of a buffer that every op reads
 * (a GEMM's A), however many writes came between. The buffer's lock is held throughout. */

/* The access of op to b. */
static gpar__access *access_to(const gpar__op *op, const gpar__buf *b) {
  for (int a = 0;; a++)
    if (gpar__op_access(op, a)->buf == b) return gpar__op_access(op, a);
}

static int buf_add_reader(gpar__buf *b, gpar__op *op, gpar__access *acc) {
  if (b->rtail == b->capreaders) {
    int n = 0;
    for (int r = b->rhead; r < b->rtail; r++) /* close the gaps first: the moved readers' indices follow */
      if (b->readers[r]) {
        access_to(b->readers[r], b)->ridx = n;
        b->readers[n++] = b->readers[r];
      }
    b->rhead = 0;
    b->rtail = n;
    if (n > b->capreaders / 2 || !b->capreaders) {
      int cap = b->capreaders ? b->capreaders * 2 : 8;
      gpar__op **v = realloc(b->readers, sizeof *v * (size_t)cap);
      if (!v) return GPAR_ENOMEM;
      b->readers = v;
      b->capreaders = cap;
    }
  }
  acc->ridx = b->rtail;
  b->readers[b->rtail++] = op;
  return GPAR_OK;
}

static void buf_remove_reader(gpar__buf *b, const gpar__op *op, const gpar__access *acc) {
  int r = acc->ridx;
  b->reader_probes++;
  if (r >= b->rhead && r < b->rtail && b->readers[r] == op) b->readers[r] = NULL;
  while (b->rhead < b->rtail && !b->readers[b->rhead]) b->rhead++;
  if (b->rhead == b->rtail) b->rhead = b->rtail = 0;
}

/* ---------------------------------------------------------------- ready */

/* op's producers are met: queue it on its device, or hand it back in *next to a worker of
 * `local` that will run it at once (one per worker; the others are queued). */
static void make_ready(gpar__op *op, gpar__device *local, gpar__op **next) {
  gpar__op_set_state(op, GPAR__ST_READY);
  if (op->eng->tracing) op->t_ready = gpar__now();
  if (next && !*next && op->dev == local) {
    op->next = NULL;
    *next = op;
    return;
  }
  gpar__queue_push(gpar__lane_take(op), op); /* lanes.c: its lane's dispatcher, or the CPU workers */
}

/* ---------------------------------------------------------------- submit */

/* Link the op through one access (its buffer's lock held): behind the buffer's last writer
 * and, for a write, its readers since; the op becomes the writer or one more reader. */
static int link_access(gpar__op *op, gpar__access *a) {
  gpar__buf *b = a->buf;
  int mode = access_mode(a), st = GPAR_OK;
  /* A read depends on the data of the last writer; a pure overwrite only follows it. */
  if (b->writer) {
    st = add_edge(b->writer, op, (mode & GPAR__READ) != 0);
  } else if ((mode & GPAR__READ) && b->status != GPAR_OK) { /* its last writer failed */
    __atomic_fetch_or(&a->mode, GPAR__READ_FAILED, __ATOMIC_RELAXED);
    atomic_store(&op->dep_failed, 1);
  }
  if (mode & GPAR__WRITE) {
    for (int r = b->rhead; r < b->rtail && st == GPAR_OK; r++)
      if (b->readers[r] && b->readers[r] != op) st = add_edge(b->readers[r], op, 0);
    if (st == GPAR_OK) {
      b->rhead = b->rtail = 0;
      b->writer = op;
    }
  } else if (st == GPAR_OK) {
    st = buf_add_reader(b, op, a);
  }
  return st;
}

/* The buffers of a submission, each once, in address order: their locks are taken in it. */
typedef struct lockset {
  int n;
  gpar__buf **v;
  gpar__buf *stack[16];
} lockset;

static int by_address(const void *x, const void *y) {
  uintptr_t a = (uintptr_t) * (gpar__buf *const *)x, b = (uintptr_t) * (gpar__buf *const *)y;
  return a < b ? -1 : a > b;
}

static int lockset_make(lockset *ls, gpar__op **ops, int n) {
  int total = 0, k = 0;
  for (int i = 0; i < n; i++) total += ops[i]->nacc;
  ls->n = 0;
  ls->v = total <= (int)(sizeof ls->stack / sizeof ls->stack[0]) ? ls->stack : malloc(sizeof *ls->v * (size_t)total);
  if (!ls->v) return GPAR_ENOMEM;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < ops[i]->nacc; a++) ls->v[k++] = gpar__op_access(ops[i], a)->buf;
  if (k > 1) qsort(ls->v, (size_t)k, sizeof *ls->v, by_address);
  for (int i = 0; i < k; i++)
    if (!ls->n || ls->v[ls->n - 1] != ls->v[i]) ls->v[ls->n++] = ls->v[i];
  return GPAR_OK;
}

static void lockset_free(lockset *ls) {
  if (ls->v != ls->stack) free(ls->v);
}

/* Link one op through its accesses (the locks of all its buffers held); a failed access and
 * those after it are marked unlinked: retirement leaves them alone. */
static void link_accesses(gpar__op *op) {
  int st = GPAR_OK;
  for (int a = 0; a < op->nacc; a++) {
    gpar__access *acc = gpar__op_access(op, a);
    if (st == GPAR_OK) st = link_access(op, acc);
    if (st != GPAR_OK) __atomic_fetch_or(&acc->mode, GPAR__UNLINKED, __ATOMIC_RELAXED);
  }
}

/* An op that could not be linked whole (out of host memory) cannot run, but what is linked of
 * it retires through the normal path with the error (its writes are poisoned, waits report it);
 * with no lockset at all, nothing of it is linked. Its submission is not done yet: no consumer
 * reads its status. */
static void fail_unlinked(gpar__op *op, int none_linked) {
  int failed = none_linked;
  for (int a = 0; a < op->nacc; a++) {
    gpar__access *acc = gpar__op_access(op, a);
    if (none_linked) __atomic_fetch_or(&acc->mode, GPAR__UNLINKED, __ATOMIC_RELAXED);
    failed |= (access_mode(acc) & GPAR__UNLINKED) != 0;
  }
  if (!failed) return;
  gpar__errorf(GPAR_ENOMEM, "out of host memory while linking an operation");
  op->status = GPAR_ENOMEM;
  free(op->errmsg);
  op->errmsg = strdup(gpar__error_msg());
  atomic_store(&op->dep_failed, 1);
}

/* Link a submission's ops, in order, behind the last writer and readers of each buffer they
 * touch, and queue each when nothing holds it back. The ops take their places on all their
 * buffers at once: the locks of the union of their buffers are held together, taken in address
 * order (no deadlock), so no other thread's op comes between two of them on any buffer, and two
 * submissions of two threads over the same buffers come in one order on all of them (else each
 * could come first on one of them, a cycle). An op is made ready only after the locks are given
 * back. */
static void link_ops(gpar_engine *eng, gpar__op **ops, int n) {
  lockset ls;
  int none = lockset_make(&ls, ops, n) != GPAR_OK;
  double t_call = eng->tracing ? (gpar__depth ? gpar__t_call : gpar__now()) : 0;
  for (int i = 0; i < n; i++) {
    gpar__op_set_state(ops[i], GPAR__ST_WAITING);
    if (eng->tracing) ops[i]->t_call = t_call;
  }
  for (int i = 0; i < ls.n; i++) gpar__spin_lock(&ls.v[i]->lock);
  for (int i = 0; i < n && !none; i++) link_accesses(ops[i]);
  for (int i = ls.n - 1; i >= 0; i--) gpar__spin_unlock(&ls.v[i]->lock);
  if (!none) lockset_free(&ls);
  for (int i = 0; i < n; i++) {
    gpar__op *op = ops[i];
    fail_unlinked(op, none);
    if (eng->tracing) op->t_submit = gpar__now();
    if (atomic_fetch_sub_explicit(&op->unmet, 1, memory_order_acq_rel) == 1) make_ready(op, NULL, NULL);
  }
}

int gpar__deps_submit(gpar__op **ops, int n, int refs) {
  gpar_engine *eng = ops[0]->eng;
  for (int i = 0; i < n; i++) {
    atomic_init(&ops[i]->refs, 1 + refs);
    atomic_init(&ops[i]->unmet, 1);
    atomic_init(&ops[i]->unretired, 1);
  }
  /* Counted in flight first, then the engine's state checked: the drain closes it the other
   * way round (inflight.c), so either it waits for these ops or they see it closed. */
  int epoch;
  if (gpar__inflight_enter(eng, n, &epoch) != GPAR_OK) {
    for (int i = 0; i < n; i++) gpar__op_discard(ops[i]);
    return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  }
  for (int i = 0; i < n; i++) ops[i]->epoch = epoch;
  link_ops(eng, ops, n);
  return GPAR_OK;
}

/* ---------------------------------------------------------------- release and retire */

/* Producers' references are held until the consumer no longer reads their events. */
static void drop_producers(gpar__op *op) {
  for (int i = 0; i < op->prods.n; i++) gpar__op_unref(op->prods.v[i].op);
  op->prods.n = 0;
}

/* Release event consumer c of op (op's lock held): the dispatcher of `local` runs it next when
 * it is on that device; other devices' consumers go to their queues. */
static void release_event_consumer(gpar__op *op, gpar__op *c, int flags, gpar__device *local, gpar__op ***local_tail) {
  if (flags & GPAR__EDGE_DATA) mark_failed_reads(op, c);
  if (atomic_fetch_sub_explicit(&c->unmet, 1, memory_order_acq_rel) != 1) return;
  if (c->dev == local) { /* the dispatcher runs it next, ahead of its batch */
    gpar__op_set_state(c, GPAR__ST_READY);
    if (local->eng->tracing) c->t_ready = gpar__now();
    c->next = NULL;
    **local_tail = c;
    *local_tail = &c->next;
  } else {
    make_ready(c, NULL, NULL);
  }
}

void gpar__op_release_lane(gpar__op *op, gpar__device *local, gpar__op ***local_tail) {
  gpar__spin_lock(&op->lock);
  for (int i = 0; i < op->succs.n; i++) {
    gpar__edge *e = &op->succs.v[i];
    gpar__op *c = e->op;
    if (!(e->flags & GPAR__EDGE_EVENT) || (e->flags & GPAR__EDGE_RELEASED) || c->dev != op->dev ||
        !gpar__lane_claim(c, op)) /* lanes.c: an open consumer takes op's lane */
      continue;
    e->flags |= GPAR__EDGE_RELEASED;
    release_event_consumer(op, c, e->flags, local, local_tail);
  }
  gpar__spin_unlock(&op->lock);
}

void gpar__op_dispatched(gpar__op *op, gpar__device *local, gpar__op ***local_tail) {
  drop_producers(op);
  gpar__spin_lock(&op->lock); /* linking threads see the state and the list together */
  gpar__op_set_state(op, GPAR__ST_DISPATCHED);
  for (int i = 0; i < op->succs.n; i++) {
    gpar__op *c = op->succs.v[i].op;
    int flags = op->succs.v[i].flags;
    if (!(flags & GPAR__EDGE_EVENT) || (flags & GPAR__EDGE_RELEASED)) continue;
    release_event_consumer(op, c, flags, local, local_tail);
  }
  gpar__spin_unlock(&op->lock);
}

/* Take op out of each buffer it touched, setting the status of those it wrote, and drop its
 * references on them. */
static void leave_buffers(gpar__op *op) {
  for (int i = 0; i < op->nacc; i++) {
    gpar__access *a = gpar__op_access(op, i);
    gpar__buf *b = a->buf;
    char *msg_copy = NULL, *old = NULL;
    int st = GPAR_OK;
    if (a->mode & GPAR__UNLINKED) {
      gpar__buf_put(b);
      continue;
    }
    if (a->mode & GPAR__WRITE) {
      const char *msg; /* with per-buffer outcomes: its outcome on b */
      st = gpar__op_write_status(op, b, &msg);
      if (st != GPAR_OK && msg) msg_copy = strdup(msg);
    }
    gpar__spin_lock(&b->lock);
    if (a->mode & GPAR__WRITE) {
      if (b->writer == op) b->writer = NULL;
      b->status = st;
      old = b->errmsg;
      b->errmsg = msg_copy;
    } else {
      buf_remove_reader(b, op, a);
    }
    gpar__spin_unlock(&b->lock);
    free(old);
    gpar__buf_put(b); /* the op's reference */
  }
}

/* Retire op (done, every producer retired): its buffers, counters, consumers (those it makes
 * ready go to their queues or to *next; those it lets retire onto *work), waiters. */
static void retire_one(gpar__op *op, gpar__device *local, gpar__op **next, gpar__op **work) {
  gpar_engine *eng = op->eng;
  assert(atomic_load(&op->unretired) == 0);
  drop_producers(op); /* CPU ops: dispatch dropped nothing */
  /* An input that failed after op's dispatch (its producer's event failed): op fails too, its
   * status written under its lock, since threads linking consumers behind it read it there. */
  if (op->status == GPAR_OK && atomic_load(&op->dep_failed)) {
    gpar__spin_lock(&op->lock);
    gpar__op_fail(op, GPAR_EDEPFAILED);
    gpar__spin_unlock(&op->lock);
  }
  leave_buffers(op);
  /* Its failure is the engine's first error before any consumer can retire with its own. */
  if (op->status != GPAR_OK && !op->reported && !(op->kind->flags & GPAR__KIND_ECHOES))
    gpar__first_error(eng, op->status, op->errmsg);
  /* No consumer can be linked to op any more (it is in no buffer): the list is final. */
  for (int i = 0; i < op->succs.n; i++) {
    gpar__op *c = op->succs.v[i].op;
    int flags = op->succs.v[i].flags;
    if (flags & GPAR__EDGE_DATA) mark_failed_reads(op, c);
    if (!(flags & GPAR__EDGE_EVENT) && atomic_fetch_sub_explicit(&c->unmet, 1, memory_order_acq_rel) == 1)
      make_ready(c, local, next);
    if (atomic_fetch_sub_explicit(&c->unretired, 1, memory_order_acq_rel) == 1) { /* c is done: retire it */
      c->next = *work;
      *work = c;
    }
  }
  if (eng->tracing) gpar__trace_op(eng, op, gpar__now());
  gpar__op_release_owned(op);
  /* Counted out after the in-flight reference is dropped (its events go with it), so a wait
   * that returns sees every counter back where the op found it. */
  int epoch = op->epoch, failed = op->status != GPAR_OK;
  gpar__spin_lock(&op->lock); /* against a waiter's mark (wait.c): one of us sees the other */
  gpar__op_set_state(op, GPAR__ST_RETIRED);
  int waited = op->waited;
  gpar__spin_unlock(&op->lock);
  gpar__op_unref(op);
  gpar__inflight_leave(eng, epoch, failed, waited); /* counts, waiters */
}

/* op is done on its device: retire it, and what waited for it, once its producers have. */
static void done(gpar__op *op, gpar__device *local, gpar__op **next) {
  gpar__op_set_state(op, GPAR__ST_DONE);
  if (op->eng->tracing) op->t_seen = gpar__now();
  if (atomic_fetch_sub_explicit(&op->unretired, 1, memory_order_acq_rel) != 1) return;
  gpar__op *work = op;
  op->next = NULL;
  while (work) {
    gpar__op *o = work;
    work = o->next;
    retire_one(o, local, next, &work);
  }
}

void gpar__op_ran(gpar__op *op, gpar__device *local, gpar__op **next) {
  gpar__spin_lock(&op->lock); /* a linking thread reads its status once it is dispatched */
  gpar__op_set_state(op, GPAR__ST_DISPATCHED);
  gpar__spin_unlock(&op->lock);
  done(op, local, next);
}

void gpar__op_done(gpar__op *op) {
  if (op->async_status != GPAR_OK) {
    gpar__spin_lock(&op->lock);
    if (op->status == GPAR_OK) {
      op->status = op->async_status;
      free(op->errmsg);
      op->errmsg = op->async_msg;
      op->async_msg = NULL;
    }
    gpar__spin_unlock(&op->lock);
  }
  done(op, NULL, NULL);
}

GPAR_API uint64_t gpar__test_reader_probes(gpar_buffer h) {
  int st;
  gpar__buf *b;
  uint64_t n = 0;
  gpar_engine *eng = gpar__engine_enter_buf(h, &st);
  if (!eng) return 0;
  if (gpar__buf_get(eng, h, &b) == GPAR_OK) {
    gpar__spin_lock(&b->lock);
    n = b->reader_probes;
    gpar__spin_unlock(&b->lock);
    gpar__buf_put(b);
  }
  gpar__engine_leave(eng);
  return n;
}
