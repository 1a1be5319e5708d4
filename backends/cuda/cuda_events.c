/* cuda_events.c: CUDA events: per-device pools of plain and timing events (created up front and
 * reused, so ops never create one), and the backend's event entries (record, wait, query, sync,
 * release, elapsed). Calls cuda_errors.c and cuda_device.c. */
#include <pthread.h>
#include <stdlib.h>

#include "cuda_internal.h"

/* Events created up front per pool so the first ops never create any. */
#define CUDA_EVENT_PREFILL 32

/* ---- the pools ---- */

/* Create one event of the pool's kind on the owner's device (slow path: pool empty). */
static int cuda_event_new(struct cuda_dev *d, int timing, gpar__event **out) {
  int prev, st;
  gpar__event *ev = malloc(sizeof *ev);
  if (!ev) return gpar__errorf(GPAR_ENOMEM, "cuda: out of host memory for an event");
  /* Events belong to the current device: make sure it is the owner's. */
  if ((st = gpar__cuda_enter(d, &prev))) {
    free(ev);
    return st;
  }
  /* Plain events (blocking-sync ones made 1024^3 GEMMs 5-15% slower on H200). */
  unsigned flags = timing ? (unsigned)cudaEventDefault : (unsigned)cudaEventDisableTiming;
  st = gpar__cuda_check(cudaEventCreateWithFlags(&ev->ev, flags), "cudaEventCreateWithFlags");
  gpar__cuda_exit(d, prev);
  if (st) {
    free(ev);
    return st;
  }
  ev->owner = d;
  ev->timing = timing;
  ev->next = NULL;
  *out = ev;
  return GPAR_OK;
}

static void cuda_event_push(struct cuda_dev *d, gpar__event *ev) {
  pthread_mutex_lock(&d->ev_lock);
  ev->next = d->ev_pool[ev->timing].free;
  d->ev_pool[ev->timing].free = ev;
  pthread_mutex_unlock(&d->ev_lock);
}

static int cuda_event_get(struct cuda_dev *d, int timing, gpar__event **out) {
  pthread_mutex_lock(&d->ev_lock);
  gpar__event *ev = d->ev_pool[timing].free;
  if (ev) d->ev_pool[timing].free = ev->next;
  pthread_mutex_unlock(&d->ev_lock);
  if (ev) {
    ev->next = NULL;
    *out = ev;
    return GPAR_OK;
  }
  return cuda_event_new(d, timing, out);
}

void gpar__cuda_events_init(struct cuda_dev *d) { pthread_mutex_init(&d->ev_lock, NULL); }

int gpar__cuda_events_prefill(struct cuda_dev *d) {
  int st;
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < CUDA_EVENT_PREFILL; i++) {
      gpar__event *ev;
      if ((st = cuda_event_new(d, k, &ev))) return st;
      cuda_event_push(d, ev);
    }
  return GPAR_OK;
}

void gpar__cuda_events_fini(struct cuda_dev *d) {
  for (int k = 0; k < 2; k++) {
    gpar__event *ev = d->ev_pool[k].free;
    while (ev) {
      gpar__event *next = ev->next;
      (void)cudaEventDestroy(ev->ev);
      free(ev);
      ev = next;
    }
    d->ev_pool[k].free = NULL;
  }
  (void)cudaGetLastError();
  pthread_mutex_destroy(&d->ev_lock);
}

/* ---- the event entries ---- */

int gpar__cuda_event_record(gpar__bdev *dev, int lane, unsigned flags, gpar__event **evp) {
  struct cuda_dev *d = &dev->d;
  gpar__event *ev;
  int st = cuda_event_get(d, (flags & GPAR__EVENT_TIMING) ? 1 : 0, &ev);
  if (st) return st;
  st = gpar__cuda_check(cudaEventRecord(ev->ev, d->lane[lane]), "cudaEventRecord");
  if (st) {
    cuda_event_push(d, ev);
    return st;
  }
  *evp = ev;
  return GPAR_OK;
}

/* Any thread: the caller's current device is restored. */
int gpar__cuda_event_record_native(gpar__bdev *dev, void *stream, gpar__event **evp) {
  struct cuda_dev *d = &dev->d;
  gpar__event *ev;
  int prev, st = cuda_event_get(d, 0, &ev);
  if (st) return st;
  if ((st = gpar__cuda_enter(d, &prev)) == GPAR_OK) {
    st = gpar__cuda_check(cudaEventRecord(ev->ev, (cudaStream_t)stream), "cudaEventRecord(another library's stream)");
    gpar__cuda_exit(d, prev);
  }
  if (st) {
    cuda_event_push(d, ev);
    return st;
  }
  *evp = ev;
  return GPAR_OK;
}

/* Any thread (the caller's: a per-thread default stream is its own). */
int gpar__cuda_native_wait_event(gpar__bdev *dev, void *stream, gpar__event *ev) {
  struct cuda_dev *d = &dev->d;
  int prev, st = gpar__cuda_enter(d, &prev);
  if (st) return st;
  st = gpar__cuda_check(cudaStreamWaitEvent((cudaStream_t)stream, ev->ev, 0),
                        "cudaStreamWaitEvent(another library's stream)");
  gpar__cuda_exit(d, prev);
  return st;
}

int gpar__cuda_event_wait(gpar__bdev *dev, int lane, gpar__event *ev) {
  return gpar__cuda_check(cudaStreamWaitEvent(dev->d.lane[lane], ev->ev, 0), "cudaStreamWaitEvent");
}

/* What the device says, nothing more. After an NCCL communicator is aborted (comm_abort), its
 * kernels see the abort flag and return normally: no CUDA error, the lane goes on, and the
 * event behind an aborted collective completes (1). That the collective failed is the
 * communicator's news (comm_check), not the lane's. */
int gpar__cuda_event_query(gpar__event *ev) {
  cudaError_t e = cudaEventQuery(ev->ev);
  if (e == cudaSuccess) return 1;
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return 0;
  }
  return gpar__cuda_check(e, "cudaEventQuery");
}

int gpar__cuda_event_sync(gpar__event *ev) {
  return gpar__cuda_check(cudaEventSynchronize(ev->ev), "cudaEventSynchronize");
}

void gpar__cuda_event_release(gpar__event *ev) {
  if (ev) cuda_event_push(ev->owner, ev);
}

int gpar__cuda_event_elapsed(gpar__event *start, gpar__event *end, double *ms) {
  float f = 0.0f;
  if (!start->timing || !end->timing)
    return gpar__errorf(GPAR_EINVAL, "cuda: event_elapsed needs events recorded with GPAR__EVENT_TIMING");
  int st = gpar__cuda_check(cudaEventElapsedTime(&f, start->ev, end->ev), "cudaEventElapsedTime");
  if (st == GPAR_OK) *ms = (double)f;
  return st;
}
