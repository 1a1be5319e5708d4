/* trace.h: op tracing (trace.c; gpar_config.trace_path / GPAR_TRACE): each retired op's
 * host-time breakdown summed per engine (gpar_breakdown_get) and, with a trace file, one record
 * per op, written at shutdown as Chrome trace-event JSON. */
#ifndef GPAR_CORE_ENGINE_TRACE_H
#define GPAR_CORE_ENGINE_TRACE_H

#include "engine/op.h"

struct gpar__trace_rec {
  const char *name;
  int dev, lane;
  double ts, dur, submit;
  float phase[5]; /* microseconds: submit, hand-off, dispatch, completion, retire */
};

/* Add a retiring op's breakdown to the sums and, with a trace file, its record. */
GPAR__HIDDEN void gpar__trace_op(gpar_engine *eng, gpar__op *op, double t_retired);
GPAR__HIDDEN void gpar__trace_write(gpar_engine *eng);
/* The breakdown's means so far (reset != 0 starts anew); GPAR_ENOTSUP without tracing. */
GPAR__HIDDEN int gpar__breakdown(gpar_engine *eng, gpar_breakdown *bd, int reset);

#endif
