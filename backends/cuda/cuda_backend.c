/* cuda_backend.c: the CUDA backend of libgpar: four non-blocking streams per device, stream-ordered
 * device memory and pooled events, in plain C over cudart. GEMM is in cuda_blas_cublas.c (cuBLAS)
 * and cuda_blas_lt.c (cublasLt plans), the private types in cuda_internal.h. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* Events created up front per pool so the first ops never create any. */
#define CUDA_EVENT_PREFILL 32

/* ---- error mapping: the one place that turns cudart errors into gpar statuses ---- */

static int cuda_status(cudaError_t e) {
  return e == cudaErrorMemoryAllocation ? GPAR_EDEVMEM : GPAR_EBACKEND;
}

int gpar__cuda_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return GPAR_OK;
  (void)cudaGetLastError();
  return gpar__errorf(cuda_status(e), "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* ---- the device bracket (see cuda_internal.h) ---- */

int gpar__cuda_enter(const struct cuda_dev *d, int *prev) {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess) {
    (void)cudaGetLastError();
    cur = -1;
  }
  *prev = cur;
  if (cur == d->ordinal) return GPAR_OK;
  return gpar__cuda_check(cudaSetDevice(d->ordinal), "cudaSetDevice");
}

void gpar__cuda_exit(const struct cuda_dev *d, int prev) {
  if (prev >= 0 && prev != d->ordinal && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- probe ---- */

static int cuda_open(const gpar_config *cfg, gpar__backend **bep, int *ndev) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  *bep = NULL;
  *ndev = 0;
  if (e != cudaSuccess || n <= 0) {
    if (e == cudaSuccess) e = cudaErrorNoDevice;
    (void)cudaGetLastError();
    /* No device (no driver, no GPU): not an error; the core keeps this reason for
     * gpar_backend_status and prints it only when the caller asked for CUDA. */
    return gpar__errorf(GPAR_ENODEV, "cuda: no device: cudaGetDeviceCount: %s", cudaGetErrorName(e));
  }
  gpar__backend *be = calloc(1, sizeof *be);
  if (!be) return gpar__errorf(GPAR_ENOMEM, "cuda: out of host memory");
  be->ndev = n;
  be->tf32 = cfg ? cfg->tf32 : 0;
  be->lt = cfg ? cfg->cublaslt >= 0 : 1;
  *bep = be;
  *ndev = n;
  return GPAR_OK;
}

static void cuda_close(gpar__backend *be) { free(be); }

static int cuda_can_access(int dev, int peer) {
  int can = 0;
  if (dev == peer) return 0;
  if (cudaDeviceCanAccessPeer(&can, dev, peer) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return can;
}

static int cuda_device_info(gpar__backend *be, int idx, struct gpar_device_info *info) {
  struct cudaDeviceProp p;
  int st = gpar__cuda_check(cudaGetDeviceProperties(&p, idx), "cudaGetDeviceProperties");
  if (st) return st;
  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "%s", "cuda");
  info->backend_id = GPAR_BACKEND_CUDA;
  info->backend_index = idx;
  snprintf(info->vendor, sizeof info->vendor, "%s", "NVIDIA Corporation");
  {
    size_t len = strnlen(p.name, sizeof info->name - 1); /* prop name (256) may exceed ours (128) */
    memcpy(info->name, p.name, len);
    info->name[len] = '\0';
  }
  info->type = GPAR_DEVICE_GPU;
  info->memory_bytes = (uint64_t)p.totalGlobalMem;
  info->copy_engines = p.asyncEngineCount;
  info->compute_units = p.multiProcessorCount;
  for (int j = 0; j < be->ndev && j < 64; j++)
    if (cuda_can_access(idx, j)) info->peer_mask |= (uint64_t)1 << j;
  int drv = 0, rt = 0, bmaj = 0, bmin = 0, bpat = 0;
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0)
    snprintf(info->driver_version, sizeof info->driver_version, "%d.%d", drv / 1000, drv % 1000 / 10);
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
  cublasGetProperty(MAJOR_VERSION, &bmaj);
  cublasGetProperty(MINOR_VERSION, &bmin);
  cublasGetProperty(PATCH_LEVEL, &bpat);
  snprintf(info->runtime_version, sizeof info->runtime_version, "CUDA runtime %d.%d, cuBLAS %d.%d.%d",
           rt / 1000, rt % 1000 / 10, bmaj, bmin, bpat);
  (void)cudaGetLastError();
  return GPAR_OK;
}

static int cuda_peer_ok(gpar__backend *be, int src_idx, int dst_idx) {
  (void)be;
  return cuda_can_access(src_idx, dst_idx);
}

/* cudaStreamWaitEvent works across devices of one process. */
static int cuda_can_wait(gpar__backend *be, int producer_idx, int consumer_idx) { return 1; }

/* ---- events ---- */

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

static void cuda_event_pool_destroy(struct cuda_dev *d) {
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
}

static int cuda_event_record(gpar__bdev *dev, int lane, unsigned flags, gpar__event **evp) {
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

static int cuda_event_wait(gpar__bdev *dev, int lane, gpar__event *ev) {
  return gpar__cuda_check(cudaStreamWaitEvent(dev->d.lane[lane], ev->ev, 0), "cudaStreamWaitEvent");
}

static int cuda_event_query(gpar__event *ev) {
  cudaError_t e = cudaEventQuery(ev->ev);
  if (e == cudaSuccess) return 1;
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return 0;
  }
  return gpar__cuda_check(e, "cudaEventQuery");
}

static int cuda_event_sync(gpar__event *ev) {
  return gpar__cuda_check(cudaEventSynchronize(ev->ev), "cudaEventSynchronize");
}

static void cuda_event_release(gpar__event *ev) {
  if (ev) cuda_event_push(ev->owner, ev);
}

static int cuda_event_elapsed(gpar__event *start, gpar__event *end, double *ms) {
  float f = 0.0f;
  if (!start->timing || !end->timing)
    return gpar__errorf(GPAR_EINVAL, "cuda: event_elapsed needs events recorded with GPAR__EVENT_TIMING");
  int st = gpar__cuda_check(cudaEventElapsedTime(&f, start->ev, end->ev), "cudaEventElapsedTime");
  if (st == GPAR_OK) *ms = (double)f;
  return st;
}

/* Never on a lane that is capturing a graph: cudaStreamSynchronize is refused there and would
 * invalidate the capture. */
static int cuda_lane_sync(gpar__bdev *dev, int lane) {
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  int st = gpar__cuda_check(cudaStreamIsCapturing(dev->d.lane[lane], &cs), "cudaStreamIsCapturing");
  if (st == GPAR_OK && cs != cudaStreamCaptureStatusNone)
    return gpar__errorf(GPAR_EBACKEND, "cuda: device %d: lane %d is capturing a graph; not synchronised",
                        dev->d.ordinal, lane);
  if (st == GPAR_OK) st = gpar__cuda_check(cudaStreamSynchronize(dev->d.lane[lane]), "cudaStreamSynchronize");
  return st;
}

/* ---- devices ---- */

static void cuda_dev_destroy(struct cuda_dev *d) {
  for (int l = 0; l < GPAR__NLANES; l++)
    if (d->lane[l]) (void)cudaStreamSynchronize(d->lane[l]);
  if (d->alloc_stream) (void)cudaStreamSynchronize(d->alloc_stream);
  gpar__cuda_blas_close(d);
  for (int l = 0; l < GPAR__NLANES; l++)
    if (d->lane[l]) (void)cudaStreamDestroy(d->lane[l]);
  if (d->alloc_stream) (void)cudaStreamDestroy(d->alloc_stream);
  cuda_event_pool_destroy(d);
  if (d->join_ev) (void)cudaEventDestroy(d->join_ev);
  if (d->pool) {
    /* The default pool is process-wide: give back what we cached and restore its threshold. */
    (void)cudaMemPoolTrimTo(d->pool, 0);
    (void)cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &d->old_threshold);
  }
  (void)cudaGetLastError();
  pthread_mutex_destroy(&d->ev_lock);
}

/* Opens device idx from any thread: the caller's current device is restored (the bracket). */
static int cuda_device_open(gpar__backend *be, int idx, gpar__bdev **devp) {
  int st, prev;
  gpar__bdev *dev = calloc(1, sizeof *dev);
  if (!dev) return gpar__errorf(GPAR_ENOMEM, "cuda: out of host memory for device %d", idx);
  struct cuda_dev *d = &dev->d;
  d->be = be;
  d->ordinal = idx;
  pthread_mutex_init(&d->ev_lock, NULL);

  if ((st = gpar__cuda_enter(d, &prev))) {
    pthread_mutex_destroy(&d->ev_lock);
    free(dev);
    return st;
  }

  /* Peer access to every device this one can reach (plain cudaMalloc memory, user kernels).
   * Enabled once per process and pair (it lasts as long as the primary context): a second engine
   * skips the call instead of provoking cudaErrorPeerAccessAlreadyEnabled, which
   * compute-sanitizer reports as an API error. One enabled by the user still gives that error,
   * which is cleared and taken as success. */
  static _Atomic uint64_t peer_enabled[64];
  for (int j = 0; j < be->ndev; j++) {
    if (!cuda_can_access(idx, j)) continue;
    uint64_t bit = j < 64 ? (uint64_t)1 << j : 0;
    if (idx < 64 && bit && (atomic_load(&peer_enabled[idx]) & bit)) {
      d->peer_on |= bit;
      continue;
    }
    cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
    if (e == cudaSuccess && idx < 64 && bit) atomic_fetch_or(&peer_enabled[idx], bit);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
      e = cudaSuccess;
    }
    if ((st = gpar__cuda_check(e, "cudaDeviceEnablePeerAccess"))) goto fail;
    if (j < 64) d->peer_on |= (uint64_t)1 << j;
  }

  /* Lanes: non-blocking streams, never synchronised with the legacy default stream. */
  for (int l = 0; l < GPAR__NLANES; l++)
    if ((st = gpar__cuda_check(cudaStreamCreateWithFlags(&d->lane[l], cudaStreamNonBlocking),
                         "cudaStreamCreateWithFlags")))
      goto fail;
  if ((st = gpar__cuda_check(cudaStreamCreateWithFlags(&d->alloc_stream, cudaStreamNonBlocking),
                       "cudaStreamCreateWithFlags")))
    goto fail;

  /* Device memory: the default stream-ordered pool. It caches up to a quarter of the device's
   * memory across releases (released at the next synchronisation beyond that), so creating and
   * releasing buffers costs no cudaMalloc in the steady state, while a burst of large buffers
   * does not stay reserved for ever, out of reach of other libraries and of this GPU's OpenCL
   * device. An allocation that fails trims the pool and tries once more. */
  {
    cudaMemPool_t pool;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
    uint64_t keep = total_b ? (uint64_t)total_b / 4 : UINT64_MAX;
    if ((st = gpar__cuda_check(cudaDeviceGetDefaultMemPool(&pool, idx), "cudaDeviceGetDefaultMemPool"))) goto fail;
    if ((st = gpar__cuda_check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &d->old_threshold),
                         "cudaMemPoolGetAttribute")))
      goto fail;
    d->pool = pool;
    if ((st = gpar__cuda_check(cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &keep),
                         "cudaMemPoolSetAttribute")))
      goto fail;
  }
  /* Pool memory ignores cudaDeviceEnablePeerAccess: let every peer that can reach this device
   * read and write its allocations (peer copies run on the source device's lane). */
  for (int j = 0; j < be->ndev; j++) {
    if (!cuda_can_access(j, idx)) continue;
    struct cudaMemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = cudaMemLocationTypeDevice;
    acc.location.id = j;
    acc.flags = cudaMemAccessFlagsProtReadWrite;
    if ((st = gpar__cuda_check(cudaMemPoolSetAccess(d->pool, &acc, 1), "cudaMemPoolSetAccess"))) goto fail;
  }

  if ((st = gpar__cuda_blas_open(d))) goto fail;
  if ((st = gpar__cuda_check(cudaEventCreateWithFlags(&d->join_ev, cudaEventDisableTiming), "cudaEventCreateWithFlags")))
    goto fail;

  for (int k = 0; k < 2; k++)
    for (int i = 0; i < CUDA_EVENT_PREFILL; i++) {
      gpar__event *ev;
      if ((st = cuda_event_new(d, k, &ev))) goto fail;
      cuda_event_push(d, ev);
    }

  gpar__cuda_exit(d, prev);
  *devp = dev;
  return GPAR_OK;
fail:
  cuda_dev_destroy(d);
  gpar__cuda_exit(d, prev);
  free(dev);
  return st;
}

/* Called after every lane is idle and every event was released. */
static void cuda_device_close(gpar__bdev *dev) {
  if (!dev) return;
  int prev;
  int entered = gpar__cuda_enter(&dev->d, &prev) == GPAR_OK;
  cuda_dev_destroy(&dev->d); /* best effort even when the switch failed */
  if (entered) gpar__cuda_exit(&dev->d, prev);
  (void)cudaGetLastError();
  free(dev);
}

/* The one switch outside the bracket: a dispatcher thread stays on its device for good. */
static int cuda_bind_thread(gpar__bdev *dev) {
  return gpar__cuda_check(cudaSetDevice(dev->d.ordinal), "cudaSetDevice");
}

static int cuda_native(gpar__bdev *dev, int lane, gpar_native *out) {
  out->backend = "cuda";
  out->device = dev->d.ordinal; /* backend-local; the core puts the flat-list index here */
  out->backend_index = dev->d.ordinal;
  out->stream = (void *)dev->d.lane[lane];
  out->context = NULL;
  out->blas = (void *)dev->d.blas;
  return GPAR_OK;
}

/* ---- memory ---- */

/* Any thread: the caller's current device is restored. */
static int cuda_mem_alloc(gpar__bdev *dev, size_t bytes, void **mem) {
  struct cuda_dev *d = &dev->d;
  int prev, st;
  void *p = NULL;
  if ((st = gpar__cuda_enter(d, &prev))) return st;
  cudaError_t e = cudaMallocAsync(&p, bytes, d->alloc_stream);
  if (e == cudaErrorMemoryAllocation) { /* give the pool's cached memory back, then retry once */
    (void)cudaGetLastError();
    (void)cudaStreamSynchronize(d->alloc_stream);
    (void)cudaMemPoolTrimTo(d->pool, 0);
    e = cudaMallocAsync(&p, bytes, d->alloc_stream);
  }
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    st = gpar__errorf(GPAR_EDEVMEM, "cudaMallocAsync(%zu bytes) on device %d: cudaErrorMemoryAllocation",
                      bytes, d->ordinal);
  } else {
    st = gpar__cuda_check(e, "cudaMallocAsync");
  }
  /* Synchronising the private alloc stream (nothing else runs on it, so this waits on no
   * device work) completes the allocation in stream order: the memory is then valid for every
   * lane without any event between the alloc stream and the lanes. */
  if (st == GPAR_OK) {
    st = gpar__cuda_check(cudaStreamSynchronize(d->alloc_stream), "cudaStreamSynchronize(alloc stream)");
    if (st) (void)cudaFreeAsync(p, d->alloc_stream);
  }
  gpar__cuda_exit(d, prev);
  if (st == GPAR_OK) *mem = p;
  return st;
}

/* Any thread; the core calls it only once every op using mem is done. */
static void cuda_mem_free(gpar__bdev *dev, void *mem) {
  struct cuda_dev *d = &dev->d;
  int prev;
  if (!mem) return;
  if (gpar__cuda_enter(d, &prev) != GPAR_OK) {
    gpar__log("cuda: cudaFreeAsync on device %d: cannot switch to the device; %p leaks", d->ordinal, mem);
    return;
  }
  cudaError_t e = cudaFreeAsync(mem, d->alloc_stream);
  if (e != cudaSuccess) gpar__log("cuda: cudaFreeAsync on device %d: %s", d->ordinal, cudaGetErrorName(e));
  gpar__cuda_exit(d, prev);
  (void)cudaGetLastError();
}

static int cuda_host_alloc(gpar__backend *be, size_t bytes, void **ptr) {
  cudaError_t e = cudaHostAlloc(ptr, bytes, cudaHostAllocPortable);
  if (e == cudaSuccess) return GPAR_OK;
  (void)cudaGetLastError();
  *ptr = NULL;
  return gpar__errorf(GPAR_ENOMEM, "cudaHostAlloc(%zu bytes): %s (%s)", bytes, cudaGetErrorName(e),
                      cudaGetErrorString(e));
}

static void cuda_host_free(gpar__backend *be, void *ptr) {
  if (ptr && cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* Another backend's pinned block (core/pinned.c): page-locked for every CUDA device (Portable).
 * NVIDIA OpenCL's mapped CL_MEM_ALLOC_HOST_PTR memory is accepted (3.4 ms per 64 MB on H200). */
static int cuda_host_register(gpar__backend *be, void *ptr, size_t bytes, void **token) {
  (void)be;
  cudaError_t e = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return gpar__errorf(e == cudaErrorMemoryAllocation ? GPAR_ENOMEM : GPAR_EBACKEND,
                        "cudaHostRegister(%zu bytes, Portable): %s (%s)", bytes, cudaGetErrorName(e),
                        cudaGetErrorString(e));
  }
  *token = ptr;
  return GPAR_OK;
}

static void cuda_host_unregister(gpar__backend *be, void *token) {
  (void)be;
  if (token && cudaHostUnregister(token) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- work on lanes (hot path: no allocation, no cudaSetDevice) ---- */

static int cuda_copy(gpar__bdev *dev, int lane, const gpar__copy_args *a) {
  struct cuda_dev *d = &dev->d;
  cudaStream_t s = d->lane[lane];
  void *dst = (char *)a->dst + a->dst_off;
  const void *src = (const char *)a->src + a->src_off;
  switch (a->kind) {
  case GPAR__COPY_H2D:
    return gpar__cuda_check(cudaMemcpyAsync(dst, src, a->bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync(H2D)");
  case GPAR__COPY_D2H:
    return gpar__cuda_check(cudaMemcpyAsync(dst, src, a->bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync(D2H)");
  case GPAR__COPY_D2D:
    return gpar__cuda_check(cudaMemcpyAsync(dst, src, a->bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync(D2D)");
  case GPAR__COPY_PEER:
    if (!a->peer) return gpar__errorf(GPAR_EINVAL, "cuda: peer copy without a destination device");
    /* With peer access a UVA copy goes device to device directly, and a stream capture takes it
     * as a memcpy node; cudaMemcpyPeerAsync is refused while capturing (error 900). */
    if (gpar__cuda_peer_on(d, a->peer->d.ordinal))
      return gpar__cuda_check(cudaMemcpyAsync(dst, src, a->bytes, cudaMemcpyDeviceToDevice, s),
                              "cudaMemcpyAsync(peer)");
    return gpar__cuda_check(cudaMemcpyPeerAsync(dst, a->peer->d.ordinal, src, d->ordinal, a->bytes, s),
                      "cudaMemcpyPeerAsync");
  default:
    return gpar__errorf(GPAR_ENOTSUP, "cuda: copy kind %d not supported", (int)a->kind);
  }
}

static int cuda_fill(gpar__bdev *dev, int lane, void *mem, size_t off, size_t bytes, unsigned char value) {
  return gpar__cuda_check(cudaMemsetAsync((char *)mem + off, value, bytes, dev->d.lane[lane]), "cudaMemsetAsync");
}

const gpar__backend_ops gpar__cuda_backend = {
    .name = "cuda",
    .id = GPAR_BACKEND_CUDA,
    .ordered_by_events = 1,
    .open = cuda_open,
    .close = cuda_close,
    .device_info = cuda_device_info,
    .device_open = cuda_device_open,
    .device_close = cuda_device_close,
    .bind_thread = cuda_bind_thread,
    .native = cuda_native,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .copy = cuda_copy,
    .fill = cuda_fill,
    .gemm = gpar__cuda_gemm,
    .gemm_counts = gpar__cuda_gemm_counts,
    .comm_create = gpar__cuda_comm_create,
    .coll = gpar__cuda_coll,
    .comm_destroy = gpar__cuda_comm_destroy,
    .peer_ok = cuda_peer_ok,
    .event_record = cuda_event_record,
    .event_wait = cuda_event_wait,
    .event_query = cuda_event_query,
    .event_sync = cuda_event_sync,
    .event_release = cuda_event_release,
    .event_elapsed = cuda_event_elapsed,
    .can_wait = cuda_can_wait,
    .lane_sync = cuda_lane_sync,
    .graph_begin = gpar__cuda_graph_begin,
    .graph_end = gpar__cuda_graph_end,
    .graph_launch = gpar__cuda_graph_launch,
    .graph_destroy = gpar__cuda_graph_destroy,
    .graph_copy_ok = gpar__cuda_graph_copy_ok,
};
