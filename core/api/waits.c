/* waits.c: the public waits: gpar_wait (the last writer of a buffer) and gpar_wait_all
 * (everything submitted so far). Neither may be called from inside an op (GPAR_EDEADLK) or while
 * the thread records a graph (GPAR_ERECORDING). */
#include "api/api.h"

/* Why the calling thread may not wait on eng now, or GPAR_OK. */
static int may_wait(gpar_engine *eng, const char *fn) {
  if (gpar__in_op) return gpar__errorf(GPAR_EDEADLK, "%s called from inside an operation", fn);
  if (gpar__sink_active(eng)) return gpar__errorf(GPAR_ERECORDING, "%s called while this thread records a graph", fn);
  return GPAR_OK;
}

GPAR_API int gpar_wait(gpar_buffer handle) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  gpar__buf *b;
  if ((st = gpar__buf_get(eng, handle, &b)) == GPAR_OK) {
    if ((st = may_wait(eng, "gpar_wait")) == GPAR_OK) st = gpar__buf_wait(eng, b);
    gpar__buf_put(b);
  }
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_wait_all(gpar_engine *e) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if ((st = may_wait(eng, "gpar_wait_all")) == GPAR_OK) st = gpar__wait_all(eng);
  gpar__engine_leave(eng);
  return st;
}
