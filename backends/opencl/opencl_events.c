/* opencl_events.c: OpenCL events: the backend's pool of event entries, and the event entries
 * (record: the lane's last command, or a marker; wait: a barrier; query, sync, elapsed time). */
#include <stdatomic.h>
#include <stdlib.h>

#include "opencl_internal.h"

static gpar__event *gpar__cl_ev_get(gpar__backend *be) {
  pthread_mutex_lock(&be->ev_lock);
  gpar__event *e = be->ev_free;
  if (e) be->ev_free = e->next;
  pthread_mutex_unlock(&be->ev_lock);
  if (!e) {
    e = malloc(sizeof *e); /* the pool grows to the number of events in flight, then stays */
    if (!e) return NULL;
    e->be = be;
  }
  e->next = NULL;
  e->ev = NULL;
  return e;
}

void gpar__cl_event_release(gpar__event *e) {
  if (!e) return;
  if (e->ev) clReleaseEvent(e->ev);
  e->ev = NULL;
  gpar__backend *be = e->be;
  pthread_mutex_lock(&be->ev_lock);
  e->next = be->ev_free;
  be->ev_free = e;
  pthread_mutex_unlock(&be->ev_lock);
}

int gpar__cl_event_record(gpar__bdev *dev, int lane, unsigned flags, gpar__event **out) {
  (void)flags; /* every event of a profiling queue carries timestamps (tracing) */
  gpar__cllane *ln = &dev->lanes[lane];
  gpar__event *e = gpar__cl_ev_get(dev->be);
  if (!e) return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory for an event");
  if (ln->last && !atomic_load_explicit(&ln->dirty, memory_order_relaxed)) {
    /* Nothing was enqueued after the lane's last command: on an in-order queue its completion
     * means everything before it completed too, so it serves as the event (no marker). It goes
     * out flushed: the completion thread polls it, other queues may wait on it. */
    if (ln->unflushed) {
      clFlush(ln->q);
      ln->unflushed = 0;
    }
    clRetainEvent(ln->last);
    e->ev = ln->last;
  } else {
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(ln->q, 0, NULL, &ev);
    if (err != CL_SUCCESS) {
      gpar__cl_event_release(e);
      return gpar__cl_fail("clEnqueueMarkerWithWaitList", err);
    }
    clRetainEvent(ev);
    e->ev = ev;
    gpar__cl_set_last(ln, ev); /* flushes: other queues may wait on this marker */
  }
  *out = e;
  return GPAR_OK;
}

/* Milliseconds between the ends of two commands (profiling queues only, i.e. while tracing). */
int gpar__cl_event_elapsed(gpar__event *start, gpar__event *end, double *ms) {
  cl_ulong t0 = 0, t1 = 0;
  cl_int err = clGetEventProfilingInfo(start->ev, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL);
  if (err == CL_SUCCESS) err = clGetEventProfilingInfo(end->ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
  if (err != CL_SUCCESS) return gpar__cl_fail("clGetEventProfilingInfo", err);
  *ms = ((double)t1 - (double)t0) * 1e-6;
  return GPAR_OK;
}

int gpar__cl_event_wait(gpar__bdev *dev, int lane, gpar__event *e) {
  gpar__cllane *ln = &dev->lanes[lane];
  cl_int status = CL_QUEUED;
  /* Already complete (and not failed): nothing to wait for, skip the barrier. */
  if (clGetEventInfo(e->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) == CL_SUCCESS &&
      status == CL_COMPLETE)
    return GPAR_OK;
  /* On an in-order queue a barrier with a wait list orders every later command after e (CLBlast
   * takes no wait list, so this is how its inputs are ordered). */
  cl_int err = clEnqueueBarrierWithWaitList(ln->q, 1, &e->ev, NULL);
  if (err != CL_SUCCESS) return gpar__cl_fail("clEnqueueBarrierWithWaitList", err);
  gpar__cl_mark_dirty(ln);
  return GPAR_OK;
}

int gpar__cl_event_query(gpar__event *e) {
  cl_int status = CL_QUEUED;
  cl_int err = clGetEventInfo(e->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
  if (err != CL_SUCCESS) return gpar__cl_fail("clGetEventInfo", err);
  if (status == CL_COMPLETE) return 1;
  if (status < 0) return gpar__cl_fail("opencl command (event status)", status);
  return 0;
}

int gpar__cl_event_sync(gpar__event *e) {
  cl_int err = clWaitForEvents(1, &e->ev);
  if (err != CL_SUCCESS && err != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    return gpar__cl_fail("clWaitForEvents", err);
  int r = gpar__cl_event_query(e);
  if (r < 0) return r;
  if (r == 0) return gpar__errorf(GPAR_EBACKEND, "clWaitForEvents: returned before the event completed");
  return GPAR_OK;
}
