/* native.c: the DLPack stream rule, both sides, between libgpar and another library's native
 * stream of a buffer's device. gpar_buffer_wait_native (consumer's side): an event is recorded
 * on that stream in the caller's thread, so it covers exactly what was enqueued before the call;
 * the op, a writer of the buffer, makes its lane wait on it on the device, and every later op on
 * the buffer comes after the op. The host never waits. gpar_buffer_signal_native (producer's
 * side): an op, a writer of the buffer (so after its readers too), records an event on its lane
 * when the dispatcher issues it and makes the other stream wait on that event; the caller waits
 * until the op is issued (the engine has enqueued the buffer's earlier ops), not for the device. */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "api/api.h"

/* ---------------------------------------------------------------- wait_native */

typedef struct native_wait_args {
  gpar__event *ev; /* recorded on the other stream, a backend event of op->dev */
} native_wait_args;
_Static_assert(sizeof(native_wait_args) <= GPAR__OP_PAYLOAD, "native wait arguments fit an op's payload");

static int native_wait_run(gpar__device *dev, gpar__op *op) {
  const native_wait_args *a = gpar__op_args(op);
  return dev->ops->event_wait(dev->bdev, op->lane, a->ev);
}

static void native_wait_release(gpar__op *op) {
  native_wait_args *a = gpar__op_args(op);
  if (a->ev) op->dev->ops->event_release(a->ev); /* (discard clears op->dev only after this) */
  a->ev = NULL;
}

static const gpar__op_kind kind_native_wait = {
    .name = "native_wait", .run = native_wait_run, .release = native_wait_release};

/* The op over b (the caller's reference goes to it or is dropped). */
static int submit_wait(gpar_engine *eng, gpar__buf *b, void *stream) {
  gpar__device *d = b->dev;
  gpar__event *ev = NULL;
  int st = d->ops->event_record_native(d->bdev, stream, &ev);
  if (st) {
    gpar__buf_put(b);
    return st;
  }
  gpar__op *op = gpar__op_new(eng, &kind_native_wait, d, GPAR__LANE_COMPUTE);
  if (!op) {
    d->ops->event_release(ev);
    gpar__buf_put(b);
    return gpar__errorf(GPAR_ENOMEM, "gpar_buffer_wait_native: out of host memory");
  }
  *(native_wait_args *)gpar__op_args(op) = (native_wait_args){ev}; /* released with the op */
  st = gpar__op_use(op, b, GPAR__WRITE);
  if (st == GPAR_OK) return gpar__api_submit(op);
  gpar__op_discard(op);
  return st;
}

/* b's device has native streams (GPAR_OK), else why not; GPAR_ERECORDING while recording. */
static int native_check(gpar_engine *eng, const gpar__buf *b, const char *fn) {
  if (gpar__sink_active(eng)) return gpar__errorf(GPAR_ERECORDING, "%s called while this thread records a graph", fn);
  if (b->host_memory || (b->dev->ops->event_record_native && b->dev->ops->native_wait_event)) return GPAR_OK;
  return gpar__errorf(GPAR_ENOTSUP, "%s: device %d (%s, %s) has no native stream", fn, b->dev->index,
                      b->dev->ops->name, b->dev->info.name);
}

/* ---------------------------------------------------------------- signal_native */

/* The caller's wait for the op's issue: posted once (run, or release for an op that never ran),
 * freed by the last of the two. */
typedef struct native_signal {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int posted, status;
  gpar__event *ev; /* recorded on the op's lane when it was issued: the caller's to release */
  atomic_int refs;
} native_signal;

typedef struct native_signal_args {
  native_signal *sig;
} native_signal_args;
_Static_assert(sizeof(native_signal_args) <= GPAR__OP_PAYLOAD, "native signal arguments fit an op's payload");

static void signal_post(native_signal *s, int status, gpar__event *ev) {
  pthread_mutex_lock(&s->mu);
  assert(!s->posted || !ev); /* run posts first, and once */
  if (!s->posted) {
    s->posted = 1;
    s->status = status;
    s->ev = ev;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
}

/* The status run posted (GPAR_OK: s->ev is set and no thread writes s any more). */
static int signal_wait(native_signal *s) {
  pthread_mutex_lock(&s->mu);
  while (!s->posted) pthread_cond_wait(&s->cv, &s->mu);
  int st = s->status;
  pthread_mutex_unlock(&s->mu);
  return st;
}

static void signal_put(native_signal *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

/* In the dispatcher: the lane already waits for the buffer's earlier ops; an event after them
 * goes to the caller, whose thread makes the other stream wait on it (a per-thread default
 * stream is the caller's own). */
static int native_signal_run(gpar__device *dev, gpar__op *op) {
  native_signal_args *a = gpar__op_args(op);
  gpar__event *ev = NULL;
  int st = dev->ops->event_record(dev->bdev, op->lane, 0, &ev);
  signal_post(a->sig, st, st == GPAR_OK ? ev : NULL);
  return st;
}

static void native_signal_release(gpar__op *op) {
  native_signal_args *a = gpar__op_args(op);
  if (!a->sig) return;
  signal_post(a->sig, GPAR_EDEPFAILED, NULL); /* it never ran: a writer before it failed */
  signal_put(a->sig);
  a->sig = NULL;
}

static const gpar__op_kind kind_native_signal = {
    .name = "native_signal", .run = native_signal_run, .release = native_signal_release};

/* Submit the op over b (the caller's reference goes to it or is dropped), wait for its issue,
 * make stream wait on its event. */
static int submit_signal(gpar_engine *eng, gpar__buf *b, void *stream) {
  gpar__device *d = b->dev;
  native_signal *s = calloc(1, sizeof *s);
  gpar__op *op = s ? gpar__op_new(eng, &kind_native_signal, b->dev, GPAR__LANE_COMPUTE) : NULL;
  if (!op) {
    free(s);
    gpar__buf_put(b);
    return gpar__errorf(GPAR_ENOMEM, "gpar_buffer_signal_native: out of host memory");
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  atomic_init(&s->refs, 2);
  *(native_signal_args *)gpar__op_args(op) = (native_signal_args){s}; /* the op's reference */
  int st = gpar__op_use(op, b, GPAR__WRITE);
  if (st != GPAR_OK)
    gpar__op_discard(op); /* its release drops the op's reference */
  else if ((st = gpar__api_submit(op)) == GPAR_OK && (st = signal_wait(s)) == GPAR_EDEPFAILED)
    gpar__errorf(st, "gpar_buffer_signal_native: an op that writes the buffer failed: its data is not valid");
  if (st == GPAR_OK) st = d->ops->native_wait_event(d->bdev, stream, s->ev);
  if (s->ev) d->ops->event_release(s->ev);
  signal_put(s); /* a failed submission discarded the op, and with it the op's reference */
  return st;
}

/* ---------------------------------------------------------------- the public calls */

/* Both calls: buf's checks, then the op (signal: gpar_buffer_signal_native, else wait). */
static int native_call(gpar_buffer buf, void *stream, int signal) {
  const char *fn = signal ? "gpar_buffer_signal_native" : "gpar_buffer_wait_native";
  int st, host_wait = 0;
  gpar_engine *eng = gpar__engine_enter_buf(buf, &st);
  if (!eng) return st;
  gpar__buf *b = NULL;
  if ((st = gpar__buf_get(eng, buf, &b)) != GPAR_OK) {
    b = NULL;
  } else if (signal && gpar__in_op) {
    st = gpar__errorf(GPAR_EDEADLK, "%s called from inside an operation", fn);
  } else if ((st = native_check(eng, b, fn)) != GPAR_OK) {
  } else if (b->host_memory) {
    host_wait = signal; /* no device stream: a wait has nothing to do, a signal waits on the host */
  } else {
    st = signal ? submit_signal(eng, b, stream) : submit_wait(eng, b, stream);
    b = NULL; /* the submission took the reference */
  }
  if (b) gpar__buf_put(b);
  gpar__engine_leave(eng);
  return host_wait ? gpar_wait(buf) : st;
}

GPAR_API int gpar_buffer_wait_native(gpar_buffer buf, void *stream) { return native_call(buf, stream, 0); }

GPAR_API int gpar_buffer_signal_native(gpar_buffer buf, void *stream) { return native_call(buf, stream, 1); }
