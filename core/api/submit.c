/* submit.c: gpar_submit, user functions as ops: fn(native handles, arg) runs on a device (on a
 * CPU worker, or on a GPU's dispatcher where it enqueues on the lane's stream/queue) after the
 * ops it depends on through its read and write sets. Also what every op call ends with. */
#include <string.h>

#include "api/api.h"

typedef struct user_args {
  gpar_user_fn fn;
  void *arg;
} user_args;
_Static_assert(sizeof(user_args) <= GPAR__OP_PAYLOAD, "user function arguments fit an op's payload");

static int user_run(gpar__device *dev, gpar__op *op) {
  const user_args *u = gpar__op_args(op);
  const gpar__backend_ops *ops = dev->ops;
  int st = gpar__fault(dev->eng, GPAR__FAULT_USER);
  if (st) return st;
  gpar_native nat;
  memset(&nat, 0, sizeof nat);
  if (ops->native && (st = ops->native(dev->bdev, op->lane, &nat))) return st;
  nat.device = dev->index;
  nat.backend_index = dev->bidx;
  gpar__clear_error(); /* what the function says with gpar_error_set becomes the op's message */
  st = u->fn(&nat, u->arg);
  if (st != GPAR_OK && !*gpar__error_msg()) gpar__errorf(st, "user function returned %s", gpar_status_name(st));
  return st;
}

/* A user function is called at every launch of a graph: never captured into a backend graph. */
static int user_capturable(const gpar__op *op) {
  (void)op;
  return 0;
}

static const gpar__op_kind kind_user = {.name = "user", .run = user_run, .capturable = user_capturable};

/* What a user function (or a transport) says about its failure becomes the op's message. */
GPAR_API int gpar_error_set(int status, const char *msg) { return gpar__errorf(status, "%s", msg ? msg : ""); }

int gpar__api_submit(gpar__op *op) { return gpar__op_submit(op, 0); }

GPAR_API int gpar_submit(gpar_engine *e, int dev, gpar_user_fn fn, void *arg, const gpar_buffer *reads, int nreads,
                         const gpar_buffer *writes, int nwrites) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!fn)
    st = gpar__errorf(GPAR_EINVAL, "gpar_submit: fn is NULL");
  else if (nreads < 0 || nwrites < 0 || (nreads && !reads) || (nwrites && !writes))
    st = gpar__errorf(GPAR_EINVAL, "gpar_submit: bad read/write set (%d reads at %p, %d writes at %p)", nreads,
                      (const void *)reads, nwrites, (const void *)writes);
  gpar__device *d = st == GPAR_OK ? gpar__engine_device(eng, dev, "gpar_submit") : NULL;
  if (st == GPAR_OK && !d) st = GPAR_ENODEV;
  gpar__op *op = NULL;
  if (st == GPAR_OK && !(op = gpar__op_new(eng, &kind_user, d, GPAR__LANE_COMPUTE))) st = GPAR_ENOMEM;
  if (op) *(user_args *)gpar__op_args(op) = (user_args){fn, arg};
  for (int i = 0; op && st == GPAR_OK && i < nreads + nwrites; i++) {
    gpar__buf *b;
    int w = i >= nreads;
    if ((st = gpar__buf_get(eng, w ? writes[i - nreads] : reads[i], &b)) == GPAR_OK)
      st = gpar__op_use(op, b, w ? GPAR__WRITE : GPAR__READ);
  }
  if (op && st != GPAR_OK)
    gpar__op_discard(op);
  else if (op)
    st = gpar__api_submit(op);
  gpar__engine_leave(eng);
  return st;
}
