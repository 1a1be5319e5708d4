/* policy.c: how a submission runs: recorded by the calling thread's sink, linked and returned
 * at once (threaded), or linked and waited for (synchronous); policy.h says when each applies.
 * The callers above submit the same way under every policy. */
#include <stdlib.h>
#include <string.h>

#include "engine/deps.h"
#include "engine/policy.h"
#include "engine/wait.h"

GPAR__TLS gpar__op_sink gpar__sink;

/* Recording: the sink owns the ops; the first refusal is returned. */
static int record(gpar__op **ops, int n) {
  int st = GPAR_OK;
  for (int i = 0; i < n; i++) {
    int s = gpar__sink.take(gpar__sink.ctx, ops[i]);
    if (st == GPAR_OK) st = s;
  }
  return st;
}

/* Waiting: wait for every op (each wait drops the reference the policy took); the first
 * failure in order, with its message, except the GPAR_EDEPFAILED of a kind that only echoes. */
static int wait_each(gpar__op **ops, int n) {
  int st = GPAR_OK;
  char *msg = NULL;
  for (int i = 0; i < n; i++) {
    int echoes = (ops[i]->kind->flags & GPAR__KIND_ECHOES) != 0;
    int s = gpar__op_wait(ops[i]);
    if (s == GPAR_OK || (echoes && s == GPAR_EDEPFAILED) || st != GPAR_OK) continue;
    st = s;
    msg = strdup(gpar__error_msg());
  }
  if (st != GPAR_OK) gpar__errorf(st, "%s", msg ? msg : gpar_strerror(st));
  free(msg);
  return st;
}

int gpar__op_submit_all(gpar__op **ops, int n, int flags) {
  if (n == 0) return GPAR_OK;
  gpar_engine *eng = ops[0]->eng;
  int wait = (flags & GPAR__SUBMIT_WAIT) != 0;
  if (!wait && gpar__sink_active(eng)) return record(ops, n);
  for (int i = 0; wait && i < n; i++) ops[i]->reported = 1; /* the caller gets the statuses */
  wait |= eng->cfg.synchronous && !gpar__in_op;
  int st = gpar__deps_submit(ops, n, wait);
  if (st != GPAR_OK) return st;
  return wait ? wait_each(ops, n) : GPAR_OK;
}

int gpar__op_submit(gpar__op *op, int flags) { return gpar__op_submit_all(&op, 1, flags); }

/* ---------------------------------------------------------------- batches */

int gpar__batch_add(gpar__batch *b, gpar__op *op) {
  if (!op) return GPAR_ENOMEM; /* gpar__op_new failed: its message is set */
  if (b->n == b->cap) {
    int cap = b->cap * 2;
    gpar__op **v = b->ops == b->stack ? malloc(sizeof *v * (size_t)cap) : realloc(b->ops, sizeof *v * (size_t)cap);
    if (!v) {
      gpar__op_discard(op);
      return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
    }
    if (b->ops == b->stack) memcpy(v, b->stack, sizeof b->stack);
    b->ops = v;
    b->cap = cap;
  }
  b->ops[b->n++] = op;
  return GPAR_OK;
}

static void batch_reset(gpar__batch *b) {
  if (b->ops != b->stack) free(b->ops);
  gpar__batch_init(b);
}

int gpar__batch_submit(gpar__batch *b, int flags) {
  int st = gpar__op_submit_all(b->ops, b->n, flags);
  batch_reset(b);
  return st;
}

void gpar__batch_discard(gpar__batch *b) {
  for (int i = 0; i < b->n; i++) gpar__op_discard(b->ops[i]);
  batch_reset(b);
}
