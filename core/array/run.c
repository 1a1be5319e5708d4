/* run.c: where a checked array call runs. On the CPU (a backend with the `array` entry) it is
 * one engine op whose reads are the inputs and whose writes are the outputs (an output that is
 * also an input, in place, is read-write), running the host backend's plain C; on GPUs it is
 * kernel launches (gpu.c), ordered by the same read and write sets. gpar__array_issue, the way
 * in of every array call: its operands' checks (operands.c), then that op. */
#include "array/kernels.h"

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

/* The CPU: one op of a kind above, running the host backend's plain C. */
static int host_submit(gpar_engine *eng, gpar__device *dev, gpar__arr_call *c) {
  gpar__op *op = gpar__op_new(eng, &host_kinds[c->args.kind], dev, GPAR__LANE_COMPUTE);
  int st = op ? GPAR_OK : GPAR_ENOMEM;
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

/* Build and submit the op of a checked call whose operands are looked up (on dev). */
static int submit(gpar_engine *eng, gpar__device *dev, gpar__arr_call *c) {
  if (dev->ops->array) return host_submit(eng, dev, c);
  int st = gpar__array_gpu(eng, dev, c); /* launches take their own references */
  for (int i = 0; i < c->nops; i++) {
    if (c->op[i].b) gpar__buf_put(c->op[i].b);
    c->op[i].b = NULL;
  }
  return st;
}

int gpar__array_issue(gpar__arr_call *c) {
  gpar_engine *eng;
  int st = gpar__arr_operands(c->fn, c->op, c->nops, &eng, &c->home);
  if (st) return st;
  if (!c->empty) {
    gpar__buf *h = c->op[c->home].b;
    st = submit(eng, h->host_memory ? eng->host_dev : h->dev, c); /* takes over the references */
  }
  gpar__arr_operands_done(eng, c->op, c->nops);
  return st;
}
