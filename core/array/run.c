/* run.c: an array call as one engine op. Its reads are the inputs, its writes the outputs (an
 * output that is also an input, in place, is read-write); on the CPU it runs the host
 * backend's plain C (backend.h: array), on GPUs portable kernels. */
#include "array/array.h"

_Static_assert(sizeof(gpar__array_args) <= GPAR__OP_PAYLOAD, "array op arguments fit an op's payload");

static int host_run(gpar__device *dev, gpar__op *op) {
  return dev->ops->array(dev->bdev, (const gpar__array_args *)gpar__op_cargs(op));
}

/* Kinds by gpar__array_args.kind, for traces. */
static const gpar__op_kind host_kinds[] = {
    [GPAR__ARR_UNARY] = {.name = "unary", .run = host_run},
    [GPAR__ARR_BINARY] = {.name = "binary", .run = host_run},
    [GPAR__ARR_BCAST] = {.name = "binary_bcast", .run = host_run},
    [GPAR__ARR_REDUCE] = {.name = "reduce", .run = host_run},
    [GPAR__ARR_SOFTMAX_XENT] = {.name = "softmax_xent", .run = host_run},
    [GPAR__ARR_ARGMAX] = {.name = "argmax", .run = host_run},
};

/* The op's arguments: the call's, with each operand's memory, offset and leading dimension. */
static void fill_args(const gpar__arr_call *c, gpar__array_args *a) {
  *a = c->args;
  for (int i = 0; i < c->nops; i++) {
    a->x[i] = c->op[i].b ? c->op[i].b->mem : NULL;
    a->off[i] = c->op[i].off;
    a->ld[i] = c->op[i].ld;
  }
}

int gpar__array_submit(gpar_engine *eng, gpar__device *dev, gpar__arr_call *c) {
  int st = GPAR_OK;
  gpar__op *op = NULL;
  if (!dev->ops->array)
    st = gpar__errorf(GPAR_ENOTSUP, "%s: array ops on %s devices need portable kernels, not built into this libgpar",
                      c->fn, dev->ops->name);
  else if (!(op = gpar__op_new(eng, &host_kinds[c->args.kind], dev, GPAR__LANE_COMPUTE)))
    st = GPAR_ENOMEM;
  if (op) fill_args(c, gpar__op_args(op));
  for (int i = 0; i < c->nops; i++) {
    gpar__buf *b = c->op[i].b;
    c->op[i].b = NULL;
    if (!b) continue;
    if (st == GPAR_OK)
      st = gpar__op_use(op, b, c->op[i].out ? GPAR__WRITE : GPAR__READ); /* in place: read and write */
    else
      gpar__buf_put(b);
  }
  if (st != GPAR_OK) {
    if (op) gpar__op_discard(op);
    return st;
  }
  return gpar__api_submit(op);
}
