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

/* Synchronous: wait for every op (each wait drops the reference the policy took); the first
 * failure in order, with its message, except the failures that only echo an input's. */
static int wait_each(gpar__op **ops, int n) {
  int st = GPAR_OK;
  char *msg = NULL;
  for (int i = 0; i < n; i++) {
    int echoes = (ops[i]->kind->flags & GPAR__KIND_ECHOES) != 0;
    int s = gpar__op_wait(ops[i]);
    if (s == GPAR_OK || echoes || st != GPAR_OK) continue;
    st = s;
    msg = strdup(gpar__error_msg());
  }
  if (st != GPAR_OK) gpar__errorf(st, "%s", msg ? msg : gpar_strerror(st));
  free(msg);
  return st;
}

int gpar__op_submit_all(gpar__op **ops, int n, int flags, gpar__op **kept) {
  if (n == 0) return GPAR_OK;
  gpar_engine *eng = ops[0]->eng;
  int keep = (flags & GPAR__SUBMIT_KEEP) != 0;
  for (int i = 0; keep && i < n; i++) kept[i] = NULL;
  if (!(flags & GPAR__SUBMIT_NO_SINK) && gpar__sink_active(eng)) return record(ops, n);
  int sync = !keep && eng->cfg.synchronous && !gpar__in_op;
  int st = gpar__deps_submit(ops, n, keep || sync);
  if (st != GPAR_OK) return st;
  for (int i = 0; keep && i < n; i++) kept[i] = ops[i];
  return sync ? wait_each(ops, n) : GPAR_OK;
}

int gpar__op_submit(gpar__op *op, int flags, gpar__op **kept) { return gpar__op_submit_all(&op, 1, flags, kept); }
