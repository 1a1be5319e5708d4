/* native.c: gpar_buffer_wait_native and its kind: order a buffer after the work another
 * library enqueued on its own stream of the buffer's device (the DLPack stream rule, consumer's
 * side). The event is recorded on that stream in the caller's thread, so it covers exactly what
 * was enqueued before the call; the op, a writer of the buffer, makes its lane wait on it on the
 * device, and every later op on the buffer comes after the op. The host never waits. */
#include "api/api.h"

typedef struct native_wait_args {
  gpar__event *ev;
  gpar__device *dev;
} native_wait_args;
_Static_assert(sizeof(native_wait_args) <= GPAR__OP_PAYLOAD, "native wait arguments fit an op's payload");

static int native_wait_run(gpar__device *dev, gpar__op *op) {
  const native_wait_args *a = gpar__op_args(op);
  return dev->ops->event_wait(dev->bdev, op->lane, a->ev);
}

static void native_wait_release(gpar__op *op) {
  native_wait_args *a = gpar__op_args(op);
  if (a->ev) a->dev->ops->event_release(a->ev);
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
  *(native_wait_args *)gpar__op_args(op) = (native_wait_args){ev, d}; /* released with the op */
  st = gpar__op_use(op, b, GPAR__WRITE);
  if (st == GPAR_OK) return gpar__api_submit(op);
  gpar__op_discard(op);
  return st;
}

GPAR_API int gpar_buffer_wait_native(gpar_buffer buf, void *stream) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(buf, &st);
  if (!eng) return st;
  gpar__buf *b = NULL;
  if ((st = gpar__buf_get(eng, buf, &b)) != GPAR_OK) {
    b = NULL;
  } else if (gpar__sink_active(eng)) {
    st = gpar__errorf(GPAR_ERECORDING, "gpar_buffer_wait_native called while this thread records a graph");
  } else if (b->host_memory) {
    st = GPAR_OK; /* host memory: nothing on a device stream to wait for */
  } else if (!b->dev->ops->event_record_native) {
    st = gpar__errorf(GPAR_ENOTSUP, "gpar_buffer_wait_native: device %d (%s, %s) has no native stream to wait on",
                      b->dev->index, b->dev->ops->name, b->dev->info.name);
  } else {
    st = submit_wait(eng, b, stream);
    b = NULL; /* submit_wait took the reference */
  }
  if (b) gpar__buf_put(b);
  gpar__engine_leave(eng);
  return st;
}
