/* cuda_device.c: CUDA devices and their streams: the device bracket, the probe (device count,
 * device info, peer access), a device's own resources (four non-blocking lanes, the private
 * alloc stream, the default memory pool, peer access, the join event), thread binding, native
 * handles and lane synchronisation. Calls only cuda_errors.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* ---- the device bracket (see cuda_internal.h) ---- */

int gpar__cuda_enter(const struct cuda_dev *d, int *prev) {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess) {
    (void)cudaGetLastError();
    cur = -1;
  }
  *prev = cur;
  /* cudaSetDevice even when cudaGetDevice already names d: in a thread that has not used CUDA
   * yet cudaGetDevice says 0 with no context current, and calls that read the current context
   * (cudaPointerGetAttributes' device pointer of GPAR_HOST memory) then fail. cudaSetDevice makes
   * d's primary context current (0.08-0.11 us); the bracket is never on the hot path. */
  return gpar__cuda_check(cudaSetDevice(d->ordinal), "cudaSetDevice");
}

void gpar__cuda_exit(const struct cuda_dev *d, int prev) {
  if (prev >= 0 && prev != d->ordinal && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- probe ---- */

int gpar__cuda_open(const gpar_config *cfg, int lanes, gpar__backend **bep, int *ndev) {
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
  be->lanes = lanes;
  be->comm_timeout = cfg && cfg->comm_timeout > 0 ? cfg->comm_timeout : 300.0;
  snprintf(be->nvrtc, sizeof be->nvrtc, "%s", cfg && cfg->kernel_nvrtc ? cfg->kernel_nvrtc : "");
  *bep = be;
  *ndev = n;
  return GPAR_OK;
}

void gpar__cuda_close(gpar__backend *be) { free(be); }

static int cuda_can_access(int dev, int peer) {
  int can = 0;
  if (dev == peer) return 0;
  if (cudaDeviceCanAccessPeer(&can, dev, peer) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return can;
}

int gpar__cuda_device_info(gpar__backend *be, int idx, struct gpar_device_info *info) {
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

int gpar__cuda_peer_ok(gpar__backend *be, int src_idx, int dst_idx) {
  (void)be;
  return cuda_can_access(src_idx, dst_idx);
}

/* cudaStreamWaitEvent works across devices of one process. */
int gpar__cuda_can_wait(gpar__backend *be, int producer_idx, int consumer_idx) { return 1; }

/* ---- a device's own resources ---- */

/* Peer access to every device d can reach (plain cudaMalloc memory, user kernels), d current.
 * Enabled once per process and pair (it lasts as long as the primary context): a second engine
 * skips the call instead of provoking cudaErrorPeerAccessAlreadyEnabled, which
 * compute-sanitizer reports as an API error. One enabled by the user still gives that error,
 * which is cleared and taken as success. */
static int cuda_peers_enable(struct cuda_dev *d) {
  gpar__backend *be = d->be;
  const int idx = d->ordinal;
  int st;
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
    if ((st = gpar__cuda_check(e, "cudaDeviceEnablePeerAccess"))) return st;
    if (j < 64) d->peer_on |= (uint64_t)1 << j;
  }
  return GPAR_OK;
}

int gpar__cuda_dev_init(struct cuda_dev *d) {
  gpar__backend *be = d->be;
  const int idx = d->ordinal;
  int st;

  if ((st = cuda_peers_enable(d))) return st;

  /* Lanes: non-blocking streams, never synchronised with the legacy default stream. */
  d->lanes = d->be->lanes;
  for (int l = 0; l < GPAR__NLANES; l++) /* d->lanes compute lanes, then the copy lanes */
    if (gpar__lane_in_use(l, d->lanes) && (st = gpar__cuda_check(cudaStreamCreateWithFlags(&d->lane[l], cudaStreamNonBlocking),
                               "cudaStreamCreateWithFlags")))
      return st;
  if ((st = gpar__cuda_check(cudaStreamCreateWithFlags(&d->alloc_stream, cudaStreamNonBlocking),
                             "cudaStreamCreateWithFlags")))
    return st;

  /* Device memory: the default stream-ordered pool. It caches up to a quarter of the device's
   * memory across releases (released at the next synchronisation beyond that), so creating and
   * releasing buffers costs no cudaMalloc in the steady state, while a burst of large buffers
   * does not stay reserved for ever, out of reach of other libraries and of this GPU's OpenCL
   * device. An allocation that fails trims the pool and tries once more (mem_alloc). */
  {
    cudaMemPool_t pool;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
    uint64_t keep = total_b ? (uint64_t)total_b / 4 : UINT64_MAX;
    if ((st = gpar__cuda_check(cudaDeviceGetDefaultMemPool(&pool, idx), "cudaDeviceGetDefaultMemPool"))) return st;
    if ((st = gpar__cuda_check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &d->old_threshold),
                               "cudaMemPoolGetAttribute")))
      return st;
    d->pool = pool;
    if ((st = gpar__cuda_check(cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &keep),
                               "cudaMemPoolSetAttribute")))
      return st;
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
    if ((st = gpar__cuda_check(cudaMemPoolSetAccess(d->pool, &acc, 1), "cudaMemPoolSetAccess"))) return st;
  }

  /* The event that joins lanes back into a graph capture being discarded. */
  return gpar__cuda_check(cudaEventCreateWithFlags(&d->join_ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
}

void gpar__cuda_dev_quiesce(struct cuda_dev *d) {
  for (int l = 0; l < GPAR__NLANES; l++)
    if (d->lane[l]) (void)cudaStreamSynchronize(d->lane[l]);
  if (d->alloc_stream) (void)cudaStreamSynchronize(d->alloc_stream);
}

void gpar__cuda_dev_fini(struct cuda_dev *d) {
  for (int l = 0; l < GPAR__NLANES; l++)
    if (d->lane[l]) (void)cudaStreamDestroy(d->lane[l]);
  if (d->alloc_stream) (void)cudaStreamDestroy(d->alloc_stream);
  if (d->join_ev) (void)cudaEventDestroy(d->join_ev);
  if (d->pool) {
    /* The default pool is process-wide: give back what we cached and restore its threshold. */
    (void)cudaMemPoolTrimTo(d->pool, 0);
    (void)cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &d->old_threshold);
  }
  (void)cudaGetLastError();
}

/* ---- threads, native handles, lanes ---- */

/* The one switch outside the bracket: a dispatcher thread stays on its device for good. */
int gpar__cuda_bind_thread(gpar__bdev *dev) {
  return gpar__cuda_check(cudaSetDevice(dev->d.ordinal), "cudaSetDevice");
}

int gpar__cuda_native(gpar__bdev *dev, int lane, gpar_native *out) {
  out->backend = "cuda";
  out->device = dev->d.ordinal; /* backend-local; the core puts the flat-list index here */
  out->backend_index = dev->d.ordinal;
  struct cuda_blas *b = gpar__cuda_blas_of(&dev->d, lane);
  if (lane < 0 || lane >= GPAR__NLANES || !dev->d.lane[lane])
    return gpar__errorf(GPAR_EINVAL, "cuda: device %d has no lane %d", dev->d.ordinal, lane);
  out->stream = (void *)dev->d.lane[lane];
  out->context = NULL;
  out->blas = (void *)(b ? b : &dev->d.blas[0])->h; /* a copy lane's: the first compute lane's */
  return GPAR_OK;
}

/* Never on a lane that is capturing a graph: cudaStreamSynchronize is refused there and would
 * invalidate the capture. */
int gpar__cuda_lane_sync(gpar__bdev *dev, int lane) {
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  int st = gpar__cuda_check(cudaStreamIsCapturing(dev->d.lane[lane], &cs), "cudaStreamIsCapturing");
  if (st == GPAR_OK && cs != cudaStreamCaptureStatusNone)
    return gpar__errorf(GPAR_EBACKEND, "cuda: device %d: lane %d is capturing a graph; not synchronised",
                        dev->d.ordinal, lane);
  if (st == GPAR_OK) st = gpar__cuda_check(cudaStreamSynchronize(dev->d.lane[lane]), "cudaStreamSynchronize");
  return st;
}
