/* trace.c: op tracing (gpar_config.trace_path / GPAR_TRACE). Each retired op leaves one record:
 * name, device, lane, submit time and start/end times, from device timing events where the
 * backend has them (else the host times of dispatch and observed completion). gpar_shutdown
 * writes them as Chrome trace-event JSON, one event per line, one track per device and lane. */
#include <stdlib.h>

#include "internal.h"

static const char *const gpar__lane_names[GPAR__NLANES] = {"compute", "h2d", "d2h", "peer"};

/* Record a retiring op (engine lock held). */
void gpar__trace_op_locked(gpar_engine *eng, gpar__op *op) {
  if (eng->ntrace == eng->captrace) {
    size_t cap = eng->captrace ? eng->captrace * 2 : 4096;
    gpar__trace_rec *t = realloc(eng->trace, sizeof *t * cap);
    if (!t) return; /* tracing is best effort: drop the record */
    eng->trace = t;
    eng->captrace = cap;
  }
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
  gpar__trace_rec *r = &eng->trace[eng->ntrace++];
  r->name = op->name ? op->name : "op";
  r->dev = dev->index;
  r->lane = op->lane;
  r->submit = (op->t_submit - eng->t0) * 1e6;
  r->ts = (start - eng->t0) * 1e6;
  r->dur = (end - start) * 1e6;
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
    for (int l = 0; l < GPAR__NLANES; l++)
      fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}},\n", d, l,
              gpar__lane_names[l]);
  }
  pthread_mutex_lock(&eng->mu);
  for (size_t i = 0; i < eng->ntrace; i++) {
    const gpar__trace_rec *r = &eng->trace[i];
    fprintf(f,
            "{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
            "\"args\":{\"submit_us\":%.3f}}%s\n",
            r->name, r->dev, r->lane, r->ts, r->dur, r->submit, i + 1 < eng->ntrace ? "," : "");
  }
  pthread_mutex_unlock(&eng->mu);
  fputs("]\n", f);
  fclose(f);
}
