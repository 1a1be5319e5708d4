/* opencl_memory.c: memory on OpenCL: device buffers, pinned host memory (host_alloc: buffers of one
 * context mapped on a private queue) and another backend's pinned blocks registered (host_register).
 *
 * Device buffers. OpenCL allocates lazily: clCreateBuffer reserves nothing on most implementations
 * (PoCL, NVIDIA), so an over-subscription may only show at the first command that touches the
 * buffer (CL_MEM_OBJECT_ALLOCATION_FAILURE from that enqueue or a failed event). Requests above
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE are refused here. Both calls are thread-safe (OpenCL is). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "opencl_internal.h"

int gpar__cl_mem_alloc(gpar__bdev *dev, size_t bytes, void **mem) {
  if ((uint64_t)bytes > dev->d->max_alloc)
    return gpar__errorf(GPAR_EDEVMEM, "clCreateBuffer: %zu bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of %s",
                        bytes, (unsigned long long)dev->d->max_alloc, dev->d->name);
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (!m || err != CL_SUCCESS) {
    if (err == CL_INVALID_BUFFER_SIZE) /* size refused by the device: a memory limit here */
      return gpar__errorf(GPAR_EDEVMEM, "clCreateBuffer: CL_INVALID_BUFFER_SIZE (-61): %zu bytes on %s", bytes,
                          dev->d->name);
    return gpar__cl_fail("clCreateBuffer", err);
  }
  *mem = (void *)m;
  return GPAR_OK;
}

void gpar__cl_mem_free(gpar__bdev *dev, void *mem) {
  /* Counted first: a handle equal to a freed one is a new buffer to the argument caches. */
  atomic_fetch_add(&dev->be->mem_frees, 1);
  /* Freed once the commands that use it are done (OpenCL keeps it alive until then). */
  if (mem) clReleaseMemObject((cl_mem)mem);
}

int gpar__cl_host_alloc(gpar__backend *be, size_t bytes, void **ptr) {
  cl_int err = CL_SUCCESS;
  int st = GPAR_OK, dummy;
  if (be->pin_plat < 0) return gpar__errorf(GPAR_ENOTSUP, "opencl: no context for pinned memory");
  cl_context ctx = be->plats[be->pin_plat].ctx;
  pthread_mutex_lock(&be->pin_lock);
  if (!be->pin_queue) {
    cl_device_id d0 = NULL;
    for (int i = 0; i < be->ndev; i++)
      if (be->devs[i].plat == be->pin_plat) {
        d0 = be->devs[i].id;
        break;
      }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    be->pin_queue = clCreateCommandQueue(ctx, d0, 0, &err);
#pragma GCC diagnostic pop
    if (!be->pin_queue || err != CL_SUCCESS) {
      be->pin_queue = NULL;
      st = gpar__cl_fail("clCreateCommandQueue", err);
      goto out;
    }
  }
  if (be->npins == be->cap_pins) {
    int cap = be->cap_pins ? 2 * be->cap_pins : 16;
    gpar__clpin *p = realloc(be->pins, (size_t)cap * sizeof *p);
    if (!p) {
      st = gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
      goto out;
    }
    be->pins = p;
    be->cap_pins = cap;
  }
  cl_mem m = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (!m || err != CL_SUCCESS) {
    st = err == CL_INVALID_BUFFER_SIZE || err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES
             ? gpar__errorf(GPAR_ENOMEM, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR, %zu bytes): %s (%d)", bytes,
                            gpar__cl_name(err, &dummy), (int)err)
             : gpar__cl_fail("clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", err);
    goto out;
  }
  void *p = clEnqueueMapBuffer(be->pin_queue, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
  if (!p || err != CL_SUCCESS) {
    clReleaseMemObject(m);
    st = err == CL_MAP_FAILURE || err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES
             ? gpar__errorf(GPAR_ENOMEM, "clEnqueueMapBuffer(%zu bytes pinned): %s (%d)", bytes,
                            gpar__cl_name(err, &dummy), (int)err)
             : gpar__cl_fail("clEnqueueMapBuffer", err);
    goto out;
  }
  be->pins[be->npins].ptr = p;
  be->pins[be->npins].mem = m;
  be->npins++;
  *ptr = p;
out:
  pthread_mutex_unlock(&be->pin_lock);
  return st;
}

void gpar__cl_host_free(gpar__backend *be, void *ptr) {
  if (!ptr) return;
  pthread_mutex_lock(&be->pin_lock);
  for (int i = 0; i < be->npins; i++)
    if (be->pins[i].ptr == ptr) {
      cl_mem m = be->pins[i].mem;
      be->pins[i] = be->pins[--be->npins];
      clEnqueueUnmapMemObject(be->pin_queue, m, ptr, 0, NULL, NULL);
      clFinish(be->pin_queue);
      clReleaseMemObject(m);
      break;
    }
  pthread_mutex_unlock(&be->pin_lock);
}

/* Another backend's pinned block (core/engine/pinned.c): one CL_MEM_USE_HOST_PTR buffer per context of
 * a platform with a GPU, kept until host_unregister, so the driver treats the memory as its own
 * pinned memory (NVIDIA: 54.7 / 54.3 GB/s D2H / H2D for cudaHostAlloc memory so wrapped, 12.6 /
 * 5.8 without). CPU-only platforms (PoCL) copy with memcpy and get no wrapper.
 * The buffers are never used: copies keep passing the raw pointer to clEnqueueRead/WriteBuffer
 * (a clEnqueueCopyBuffer against such a buffer reads the driver's device-side copy: wrong data). */
typedef struct gpar__clreg {
  int n;
  cl_mem wrap[];
} gpar__clreg;

void gpar__cl_host_unregister(gpar__backend *be, void *token) {
  (void)be;
  gpar__clreg *r = token;
  if (!r) return;
  for (int i = 0; i < r->n; i++) clReleaseMemObject(r->wrap[i]);
  free(r);
}

int gpar__cl_host_register(gpar__backend *be, void *ptr, size_t bytes, void **token) {
  gpar__clreg *r = malloc(sizeof *r + (size_t)be->nplat * sizeof(cl_mem));
  if (!r) return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  r->n = 0;
  for (int p = 0; p < be->nplat; p++) {
    if (!be->plats[p].has_gpu) continue;
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(be->plats[p].ctx, CL_MEM_USE_HOST_PTR | CL_MEM_READ_WRITE, bytes, ptr, &err);
    if (!m || err != CL_SUCCESS) {
      int dummy;
      gpar__cl_host_unregister(be, r);
      return gpar__errorf(err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                                  err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE
                              ? GPAR_ENOMEM
                              : GPAR_EBACKEND,
                          "clCreateBuffer(CL_MEM_USE_HOST_PTR, %zu bytes) on platform %d: %s (%d)", bytes, p,
                          gpar__cl_name(err, &dummy), (int)err);
    }
    r->wrap[r->n++] = m;
  }
  *token = r;
  return GPAR_OK;
}
