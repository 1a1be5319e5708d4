/* trace.c: op tracing (gpar_config.trace_path / GPAR_TRACE). Each retired op adds its host-time
 * breakdown (submit, hand-off, dispatch, completion, retire) to the engine's sums
 * (gpar_breakdown_get) and, with a trace file, leaves one record: name, device, lane, submit
 * time and start/end times, from device timing events where the backend has them (else the
 * host times of dispatch and observed completion), and its breakdown. gpar_shutdown writes the
 * records as Chrome trace-event JSON, one event per line, one track per device and lane. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/device.h"
#include "engine/trace.h"

static const char *const gpar__lane_names[] = {"h2d", "d2h", "peer"}; /* the copy lanes */

/* Add a retiring op's phases to the sums and, with a trace file, a record (trace_mu held);
 * 0 when there is no room for the record. */
static gpar__trace_rec *trace_add_locked(gpar_engine *eng, const double *phase) {
  for (int i = 0; i < 5; i++) eng->bd_sum[i] += phase[i];
  eng->bd_ops++;
  if (eng->tracing < 2) return NULL;
  if (eng->ntrace == eng->captrace) {
    size_t cap = eng->captrace ? eng->captrace * 2 : 4096;
    gpar__trace_rec *t = realloc(eng->trace, sizeof *t * cap);
    if (!t) return NULL; /* tracing is best effort: drop the record */
    eng->trace = t;
    eng->captrace = cap;
  }
  return &eng->trace[eng->ntrace++];
}

/* Record a retiring op. */
void gpar__trace_op(gpar_engine *eng, gpar__op *op, double t_retired) {
  const double phase[5] = {op->t_submit - op->t_call, op->t_taken - op->t_ready, op->t_ran - op->t_taken,
                           op->t_seen - op->t_ran, t_retired - op->t_seen};
  gpar__device *dev = op->dev;
  double start = op->t_start, end = op->t_end;
  if (dev->ops->ordered_by_events) {
    double ms0, ms1;
    start = op->t_dispatch;
    if (dev->trace_ref && op->start_event && op->event &&
        dev->ops->event_elapsed(dev->trace_ref, op->start_event, &ms0) == GPAR_OK &&
        dev->ops->event_elapsed(dev->trace_ref, op->event, &ms1) == GPAR_OK) {
      start = eng->t0 + dev->trace_t0 + ms0 * 1e-3;
      end = eng->t0 + dev->trace_t0 + ms1 * 1e-3;
    }
  }
  if (end < start) end = start;
  gpar__trace_rec rec = {op->kind && op->kind->name ? op->kind->name : "op", dev->index, op->lane,
                         (start - eng->t0) * 1e6, (end - start) * 1e6, (op->t_submit - eng->t0) * 1e6, {0}};
  for (int i = 0; i < 5; i++) rec.phase[i] = (float)(phase[i] * 1e6);
  pthread_mutex_lock(&eng->trace_mu);
  gpar__trace_rec *r = trace_add_locked(eng, phase);
  if (r) *r = rec;
  pthread_mutex_unlock(&eng->trace_mu);
}

void gpar__trace_write(gpar_engine *eng) {
  FILE *f = fopen(eng->cfg.trace_path, "w");
  if (!f) {
    gpar__log("trace: cannot write %s", eng->cfg.trace_path);
    return;
  }
  fputs("[\n", f);
  for (int d = 0; d < eng->ndev; d++) {
    const gpar_device_props *in = &eng->devs[d]->info;
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"dev%d %s %s\"}},\n", d, d,
            in->backend, in->name);
    for (int l = 0; l < GPAR__NLANES; l++) /* compute lane k: "computek" (k > 0) */
      if (gpar__lane_in_use(l, eng->devs[d]->lanes > 1 ? eng->devs[d]->lanes : 1))
        fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s%.0d\"}},\n",
                d, l, gpar__lane_is_compute(l) ? "compute" : gpar__lane_names[l - GPAR__LANE_H2D], l);
  }
  pthread_mutex_lock(&eng->trace_mu);
  for (size_t i = 0; i < eng->ntrace; i++) {
    const gpar__trace_rec *r = &eng->trace[i];
    fprintf(f,
            "{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
            "\"args\":{\"submit_us\":%.3f,\"host_us\":{\"submit\":%.3f,\"handoff\":%.3f,\"dispatch\":%.3f,"
            "\"complete\":%.3f,\"retire\":%.3f}}}%s\n",
            r->name, r->dev, r->lane, r->ts, r->dur, r->submit, r->phase[0], r->phase[1], r->phase[2], r->phase[3],
            r->phase[4], i + 1 < eng->ntrace ? "," : "");
  }
  pthread_mutex_unlock(&eng->trace_mu);
  fputs("]\n", f);
  fclose(f);
}

int gpar__breakdown(gpar_engine *eng, gpar_breakdown *bd, int reset) {
  int st;
  pthread_mutex_lock(&eng->trace_mu);
  double n = eng->bd_ops ? (double)eng->bd_ops : 1.0;
  bd->ops = eng->bd_ops;
  bd->submit_us = eng->bd_sum[0] / n * 1e6;
  bd->handoff_us = eng->bd_sum[1] / n * 1e6;
  bd->dispatch_us = eng->bd_sum[2] / n * 1e6;
  bd->complete_us = eng->bd_sum[3] / n * 1e6;
  bd->retire_us = eng->bd_sum[4] / n * 1e6;
  if (reset) {
    eng->bd_ops = 0;
    for (int i = 0; i < 5; i++) eng->bd_sum[i] = 0;
  }
  st = eng->tracing ? GPAR_OK : gpar__errorf(GPAR_ENOTSUP, "gpar_breakdown_get: tracing is off (set trace_path)");
  pthread_mutex_unlock(&eng->trace_mu);
  return st;
}
