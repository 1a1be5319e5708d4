/* cuda_memory.c: CUDA memory: stream-ordered device memory from the default pool (through the
 * device's private alloc stream), pinned host memory (allocated, or another backend's
 * registered), and the work on lanes that moves or sets it: copies and fills (hot path: no
 * allocation, no cudaSetDevice). Calls cuda_errors.c and cuda_device.c. */
#include <stdint.h>

#include "cuda_internal.h"

/* ---- device memory ---- */

/* Any thread: the caller's current device is restored. */
int gpar__cuda_mem_alloc(gpar__bdev *dev, size_t bytes, void **mem) {
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

/* Any thread: another library's device memory (PyTorch, CuPy) must be device or managed memory
 * of this device. cudart cannot tell an allocation's end, so bytes is the caller's word. */
int gpar__cuda_mem_import(gpar__bdev *dev, void *ptr, size_t bytes, void **mem) {
  struct cudaPointerAttributes a;
  cudaError_t e = cudaPointerGetAttributes(&a, ptr);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return gpar__errorf(GPAR_EINVAL, "gpar_buffer_import: cudaPointerGetAttributes(%p): %s", ptr,
                        cudaGetErrorName(e));
  }
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    return gpar__errorf(GPAR_EINVAL, "gpar_buffer_import: %p is not device memory (cudaMemoryType %d); import host "
                                     "memory on the CPU device", ptr, (int)a.type);
  if (a.device != dev->d.ordinal)
    return gpar__errorf(GPAR_EINVAL, "gpar_buffer_import: %p is memory of CUDA device %d, not of device %d", ptr,
                        a.device, dev->d.ordinal);
  (void)bytes;
  *mem = ptr;
  return GPAR_OK;
}

/* Any thread; the core calls it only once every op using mem is done. */
void gpar__cuda_mem_free(gpar__bdev *dev, void *mem) {
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

/* ---- pinned host memory ---- */

int gpar__cuda_host_alloc(gpar__backend *be, size_t bytes, void **ptr) {
  cudaError_t e = cudaHostAlloc(ptr, bytes, cudaHostAllocPortable);
  if (e == cudaSuccess) return GPAR_OK;
  (void)cudaGetLastError();
  *ptr = NULL;
  return gpar__errorf(GPAR_ENOMEM, "cudaHostAlloc(%zu bytes): %s (%s)", bytes, cudaGetErrorName(e),
                      cudaGetErrorString(e));
}

void gpar__cuda_host_free(gpar__backend *be, void *ptr) {
  if (ptr && cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* Another backend's pinned block (core/engine/pinned.c): page-locked for every CUDA device (Portable).
 * NVIDIA OpenCL's mapped CL_MEM_ALLOC_HOST_PTR memory is accepted (3.4 ms per 64 MB on H200). */
int gpar__cuda_host_register(gpar__backend *be, void *ptr, size_t bytes, void **token) {
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

void gpar__cuda_host_unregister(gpar__backend *be, void *token) {
  (void)be;
  if (token && cudaHostUnregister(token) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- work on lanes (hot path: no allocation, no cudaSetDevice) ---- */

int gpar__cuda_copy(gpar__bdev *dev, int lane, const gpar__copy_args *a) {
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

int gpar__cuda_fill(gpar__bdev *dev, int lane, void *mem, size_t off, size_t bytes, unsigned char value) {
  return gpar__cuda_check(cudaMemsetAsync((char *)mem + off, value, bytes, dev->d.lane[lane]), "cudaMemsetAsync");
}
