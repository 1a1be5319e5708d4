/* opencl_backend.c: the OpenCL backend: every device of every ICD platform, one context per
 * platform (shared by all engines: opencl_contexts.c), four in-order queues per device, ordering
 * through events. Probe, devices, memory, copies and events live here; errors in
 * opencl_errors.c, GEMMs in opencl_blas_clblast.c, GEMV and level 1 in opencl_blas_vec.c, the
 * backend's own BLAS kernels in opencl_blas_kernels.c, user kernels in opencl_kernel.c. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Probe. */

static void gpar__cl_str(cl_device_id d, cl_device_info what, char *out, size_t cap) {
  out[0] = 0;
  if (clGetDeviceInfo(d, what, cap, out, NULL) != CL_SUCCESS) out[0] = 0;
  out[cap - 1] = 0;
}

static void gpar__cl_describe(gpar__cldev *d) {
  cl_device_type type = 0;
  cl_ulong mem = 0, max_alloc = 0;
  cl_uint cu = 0;
  cl_device_fp_config fp64cfg = 0;
  size_t extlen = 0;
  gpar__cl_str(d->id, CL_DEVICE_NAME, d->name, sizeof d->name);
  gpar__cl_str(d->id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
  clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
  clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
  clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  if (clGetDeviceInfo(d->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64cfg, &fp64cfg, NULL) != CL_SUCCESS)
    fp64cfg = 0;
  d->fp64 = fp64cfg != 0;
  if (!d->fp64 && clGetDeviceInfo(d->id, CL_DEVICE_EXTENSIONS, 0, NULL, &extlen) == CL_SUCCESS && extlen) {
    char *ext = malloc(extlen + 1);
    if (ext && clGetDeviceInfo(d->id, CL_DEVICE_EXTENSIONS, extlen, ext, NULL) == CL_SUCCESS) {
      ext[extlen] = 0;
      d->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    }
    free(ext);
  }
  d->type = (type & CL_DEVICE_TYPE_GPU) ? GPAR_DEVICE_GPU
            : (type & CL_DEVICE_TYPE_CPU) ? GPAR_DEVICE_CPU
                                          : GPAR_DEVICE_OTHER;
  d->mem_bytes = mem;
  d->max_alloc = max_alloc ? max_alloc : mem;
  d->compute_units = (int)cu;
  /* OpenCL has no portable query for asynchronous copy engines. NVIDIA GPUs have had at least
   * two (one per direction) since Fermi-class Teslas; elsewhere report 0 (unknown). */
  d->copy_engines = (d->type == GPAR_DEVICE_GPU && strstr(d->vendor, "NVIDIA")) ? 2 : 0;
}

static void gpar__cl_close(gpar__backend *be);

static int gpar__cl_open(const gpar_config *cfg, int lanes, gpar__backend **out, int *ndev) {
  *out = NULL;
  *ndev = 0;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  /* No platform or no device: not an error; the core keeps the reason for gpar_backend_status
   * and prints it only when the caller asked for OpenCL. */
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0))
    return gpar__errorf(GPAR_ENODEV, "opencl: no platform (no ICD registered in /etc/OpenCL/vendors)");
  if (err != CL_SUCCESS) {
    int st;
    return gpar__errorf(GPAR_ENODEV, "opencl: no platform: clGetPlatformIDs: %s (%d)", gpar__cl_name(err, &st),
                        (int)err);
  }
  gpar__backend *be = calloc(1, sizeof *be);
  if (be) be->profiling = cfg && cfg->trace_path != NULL;
  if (be) be->lanes = lanes;
  cl_platform_id *pids = calloc(np, sizeof *pids);
  if (!be || !pids) {
    free(be);
    free(pids);
    return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  }
  pthread_mutex_init(&be->pin_lock, NULL);
  pthread_mutex_init(&be->ev_lock, NULL);
  atomic_init(&be->mem_frees, 0);
  be->pin_plat = -1;
  gpar__cl_contexts_attach();
  be->attached = 1;
  int st = GPAR_OK;
  if ((err = clGetPlatformIDs(np, pids, NULL)) != CL_SUCCESS) {
    gpar__log("opencl: clGetPlatformIDs: %s (%d)", gpar__cl_name(err, &st), (int)err);
    st = GPAR_OK;
    np = 0;
  }
  be->plats = calloc(np ? np : 1, sizeof *be->plats);
  if (!be->plats) goto nomem;
  for (cl_uint p = 0; p < np; p++) {
    cl_uint nd = 0;
    err = clGetDeviceIDs(pids[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err != CL_SUCCESS || nd == 0) {
      if (err != CL_DEVICE_NOT_FOUND && err != CL_SUCCESS)
        gpar__log("opencl: platform %u: clGetDeviceIDs: %s (%d)", p, gpar__cl_name(err, &st), (int)err);
      st = GPAR_OK;
      continue;
    }
    cl_device_id *ids = calloc(nd, sizeof *ids);
    gpar__cldev *grown = realloc(be->devs, (size_t)(be->ndev + (int)nd) * sizeof *be->devs);
    if (!ids || !grown) {
      free(ids);
      if (grown) be->devs = grown;
      goto nomem;
    }
    be->devs = grown;
    if ((err = clGetDeviceIDs(pids[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL)) != CL_SUCCESS) {
      gpar__log("opencl: platform %u: clGetDeviceIDs: %s (%d)", p, gpar__cl_name(err, &st), (int)err);
      st = GPAR_OK;
      free(ids);
      continue;
    }
    cl_context ctx = gpar__cl_context_get(pids[p], nd, ids, &err); /* shared by every engine */
    if (!ctx || err != CL_SUCCESS) {
      gpar__log("opencl: platform %u: clCreateContext: %s (%d); its devices are left out", p,
                gpar__cl_name(err, &st), (int)err);
      st = GPAR_OK;
      free(ids);
      continue;
    }
    gpar__clplat *pl = &be->plats[be->nplat];
    pl->id = pids[p];
    pl->ctx = ctx;
    for (cl_uint i = 0; i < nd; i++) {
      gpar__cldev *d = &be->devs[be->ndev++];
      memset(d, 0, sizeof *d);
      d->id = ids[i];
      d->plat = be->nplat;
      gpar__cl_describe(d);
      if (d->type == GPAR_DEVICE_GPU) pl->has_gpu = 1;
    }
    be->nplat++;
    free(ids);
  }
  free(pids);
  if (be->ndev == 0) {
    gpar__cl_close(be);
    return gpar__errorf(GPAR_ENODEV, "opencl: no device on %u platform(s)", np);
  }
  /* Pinned host memory comes from the first platform with a GPU (its DMA engines benefit),
   * else the first one. */
  be->pin_plat = 0;
  for (int p = 0; p < be->nplat; p++)
    if (be->plats[p].has_gpu) {
      be->pin_plat = p;
      break;
    }
  *out = be;
  *ndev = be->ndev;
  return GPAR_OK;
nomem:
  free(pids);
  gpar__cl_close(be);
  return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory while probing");
}

static void gpar__cl_close(gpar__backend *be) {
  if (!be) return;
  for (int i = 0; i < be->npins; i++) {
    if (be->pin_queue) clEnqueueUnmapMemObject(be->pin_queue, be->pins[i].mem, be->pins[i].ptr, 0, NULL, NULL);
    clReleaseMemObject(be->pins[i].mem);
  }
  if (be->pin_queue) {
    clFinish(be->pin_queue);
    clReleaseCommandQueue(be->pin_queue);
  }
  free(be->pins);
  while (be->ev_free) {
    gpar__event *e = be->ev_free;
    be->ev_free = e->next;
    free(e);
  }
  for (int p = 0; p < be->nplat; p++)
    if (be->plats[p].ctx) clReleaseContext(be->plats[p].ctx);
  if (be->attached) gpar__cl_contexts_detach(); /* the last one clears CLBlast's caches */
  free(be->plats);
  free(be->devs);
  pthread_mutex_destroy(&be->pin_lock);
  pthread_mutex_destroy(&be->ev_lock);
  free(be);
}

static int gpar__cl_device_info(gpar__backend *be, int idx, gpar_device_props *info) {
  if (idx < 0 || idx >= be->ndev) return gpar__errorf(GPAR_ENODEV, "opencl: no device %d", idx);
  const gpar__cldev *d = &be->devs[idx];
  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "opencl");
  info->backend_id = GPAR_BACKEND_OPENCL;
  info->backend_index = idx;
  snprintf(info->vendor, sizeof info->vendor, "%s", d->vendor);
  snprintf(info->name, sizeof info->name, "%s", d->name);
  info->type = d->type;
  info->memory_bytes = d->mem_bytes;
  info->copy_engines = d->copy_engines;
  info->compute_units = d->compute_units;
  /* Peers: the other devices of the same platform (one context: clEnqueueCopyBuffer works
   * between their buffers). Backend-local bits; the core remaps them. */
  for (int j = 0; j < be->ndev && j < 64; j++)
    if (j != idx && be->devs[j].plat == d->plat) info->peer_mask |= UINT64_C(1) << j;
  gpar__cl_str(d->id, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
  char plat[sizeof info->runtime_version] = "";
  if (clGetPlatformInfo(be->plats[d->plat].id, CL_PLATFORM_VERSION, sizeof plat, plat, NULL) != CL_SUCCESS)
    plat[0] = 0;
  plat[sizeof plat - 1] = 0;
#ifdef GPAR_CLBLAST_VERSION /* configure: pkg-config --modversion clblast */
  snprintf(info->runtime_version, sizeof info->runtime_version, "CLBlast %s; %s", GPAR_CLBLAST_VERSION, plat);
#else
  snprintf(info->runtime_version, sizeof info->runtime_version, "CLBlast; %s", plat);
#endif
  return GPAR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Devices. */

static void gpar__cl_device_close(gpar__bdev *dev) {
  if (!dev) return;
  for (int l = 0; l < GPAR__NLANES; l++)
    if (dev->lanes[l].q) clFinish(dev->lanes[l].q);
  gpar__cl_kernels_close(dev);
  for (int l = 0; l < GPAR__NLANES; l++) {
    gpar__cllane *ln = &dev->lanes[l];
    if (ln->last) clReleaseEvent(ln->last);
    if (ln->temp) clReleaseMemObject(ln->temp);
    if (ln->q) clReleaseCommandQueue(ln->q);
  }
  pthread_mutex_destroy(&dev->shared_mu);
  free(dev);
}

static int gpar__cl_device_open(gpar__backend *be, int idx, gpar__bdev **out) {
  if (idx < 0 || idx >= be->ndev) return gpar__errorf(GPAR_ENODEV, "opencl: no device %d", idx);
  gpar__bdev *dev = calloc(1, sizeof *dev);
  if (!dev) return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  dev->be = be;
  dev->idx = idx;
  dev->d = &be->devs[idx];
  dev->ctx = be->plats[dev->d->plat].ctx;
  pthread_mutex_init(&dev->shared_mu, NULL);
  for (int l = 0; l < GPAR__NLANES; l++) {
    cl_int err = CL_SUCCESS;
    if (!gpar__lane_in_use(l, be->lanes)) continue;
    /* In-order; profiling only while tracing (it timestamps every command). clCreateCommandQueue
     * is the 1.2 entry point, deprecated but present in every ICD loader. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    dev->lanes[l].q = clCreateCommandQueue(dev->ctx, dev->d->id, be->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
#pragma GCC diagnostic pop
    atomic_init(&dev->lanes[l].dirty, 1);
    if (!dev->lanes[l].q || err != CL_SUCCESS) {
      int st = gpar__cl_fail("clCreateCommandQueue", err);
      gpar__cl_device_close(dev);
      return st;
    }
  }
  *out = dev;
  return GPAR_OK;
}

static int gpar__cl_native(gpar__bdev *dev, int lane, gpar_native *out) {
  if (lane < 0 || lane >= GPAR__NLANES || !dev->lanes[lane].q) return gpar__errorf(GPAR_EINVAL, "opencl: no lane %d", lane);
  /* A user function will enqueue work the backend cannot see: the next event_record must use a
   * marker rather than the lane's last known command. */
  atomic_store_explicit(&dev->lanes[lane].dirty, 1, memory_order_relaxed);
  out->backend = "opencl";
  out->backend_index = dev->idx;
  out->stream = (void *)dev->lanes[lane].q;
  out->context = (void *)dev->ctx;
  out->blas = NULL;
  return GPAR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Memory. OpenCL allocates lazily: clCreateBuffer reserves nothing on most implementations
 * (PoCL, NVIDIA), so an over-subscription may only show at the first command that touches the
 * buffer (CL_MEM_OBJECT_ALLOCATION_FAILURE from that enqueue or a failed event). Requests above
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE are refused here. Both calls are thread-safe (OpenCL is). */

static int gpar__cl_mem_alloc(gpar__bdev *dev, size_t bytes, void **mem) {
  if ((uint64_t)bytes > dev->d->max_alloc)
    return gpar__errorf(GPAR_EDEVMEM,
                        "clCreateBuffer: %zu bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of %s", bytes,
                        (unsigned long long)dev->d->max_alloc, dev->d->name);
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

static void gpar__cl_mem_free(gpar__bdev *dev, void *mem) {
  /* Counted first: a handle equal to a freed one is a new buffer to the argument caches. */
  atomic_fetch_add(&dev->be->mem_frees, 1);
  /* Freed once the commands that use it are done (OpenCL keeps it alive until then). */
  if (mem) clReleaseMemObject((cl_mem)mem);
}

static int gpar__cl_host_alloc(gpar__backend *be, size_t bytes, void **ptr) {
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

static void gpar__cl_host_free(gpar__backend *be, void *ptr) {
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

static void gpar__cl_host_unregister(gpar__backend *be, void *token) {
  (void)be;
  gpar__clreg *r = token;
  if (!r) return;
  for (int i = 0; i < r->n; i++) clReleaseMemObject(r->wrap[i]);
  free(r);
}

static int gpar__cl_host_register(gpar__backend *be, void *ptr, size_t bytes, void **token) {
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

/* ------------------------------------------------------------------------------------------ */
/* Work: copies and fills (GEMM: opencl_blas_clblast.c). Host memory is always passed as a raw
 * pointer to Read/WriteBuffer; CopyBuffer is for device buffers (mem_alloc) only. */

static int gpar__cl_copy(gpar__bdev *dev, int lane, const gpar__copy_args *a) {
  gpar__cllane *ln = &dev->lanes[lane];
  cl_event ev = NULL;
  cl_int err;
  const char *call;
  switch (a->kind) {
  case GPAR__COPY_H2D:
    call = "clEnqueueWriteBuffer";
    err = clEnqueueWriteBuffer(ln->q, (cl_mem)a->dst, CL_FALSE, a->dst_off, a->bytes, (const char *)a->src + a->src_off,
                               0, NULL, &ev);
    break;
  case GPAR__COPY_D2H:
    call = "clEnqueueReadBuffer";
    err = clEnqueueReadBuffer(ln->q, (cl_mem)a->src, CL_FALSE, a->src_off, a->bytes, (char *)a->dst + a->dst_off, 0,
                              NULL, &ev);
    break;
  case GPAR__COPY_D2D:
  case GPAR__COPY_PEER:
    if (a->kind == GPAR__COPY_PEER && (!a->peer || a->peer->ctx != dev->ctx))
      return gpar__errorf(GPAR_ENOTSUP, "opencl: peer copy between devices of different platforms");
    call = "clEnqueueCopyBuffer";
    err = clEnqueueCopyBuffer(ln->q, (cl_mem)a->src, (cl_mem)a->dst, a->src_off, a->dst_off, a->bytes, 0, NULL, &ev);
    break;
  default:
    return gpar__errorf(GPAR_ENOTSUP, "opencl: copy kind %d not supported", (int)a->kind);
  }
  if (err != CL_SUCCESS) return gpar__cl_fail(call, err);
  gpar__cl_set_last(ln, ev);
  return GPAR_OK;
}

static int gpar__cl_fill(gpar__bdev *dev, int lane, void *mem, size_t off, size_t bytes, unsigned char value) {
  gpar__cllane *ln = &dev->lanes[lane];
  cl_event ev = NULL;
  cl_int err = clEnqueueFillBuffer(ln->q, (cl_mem)mem, &value, 1, off, bytes, 0, NULL, &ev);
  if (err != CL_SUCCESS) return gpar__cl_fail("clEnqueueFillBuffer", err);
  gpar__cl_set_last(ln, ev);
  return GPAR_OK;
}

static int gpar__cl_peer_ok(gpar__backend *be, int src_idx, int dst_idx) {
  if (src_idx < 0 || dst_idx < 0 || src_idx >= be->ndev || dst_idx >= be->ndev) return 0;
  return be->devs[src_idx].plat == be->devs[dst_idx].plat;
}

/* ------------------------------------------------------------------------------------------ */
/* Events. */

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

static void gpar__cl_event_release(gpar__event *e) {
  if (!e) return;
  if (e->ev) clReleaseEvent(e->ev);
  e->ev = NULL;
  gpar__backend *be = e->be;
  pthread_mutex_lock(&be->ev_lock);
  e->next = be->ev_free;
  be->ev_free = e;
  pthread_mutex_unlock(&be->ev_lock);
}

static int gpar__cl_event_record(gpar__bdev *dev, int lane, unsigned flags, gpar__event **out) {
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
static int gpar__cl_event_elapsed(gpar__event *start, gpar__event *end, double *ms) {
  cl_ulong t0 = 0, t1 = 0;
  cl_int err = clGetEventProfilingInfo(start->ev, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL);
  if (err == CL_SUCCESS) err = clGetEventProfilingInfo(end->ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
  if (err != CL_SUCCESS) return gpar__cl_fail("clGetEventProfilingInfo", err);
  *ms = ((double)t1 - (double)t0) * 1e-6;
  return GPAR_OK;
}

static int gpar__cl_event_wait(gpar__bdev *dev, int lane, gpar__event *e) {
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

static int gpar__cl_event_query(gpar__event *e) {
  cl_int status = CL_QUEUED;
  cl_int err = clGetEventInfo(e->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
  if (err != CL_SUCCESS) return gpar__cl_fail("clGetEventInfo", err);
  if (status == CL_COMPLETE) return 1;
  if (status < 0) return gpar__cl_fail("opencl command (event status)", status);
  return 0;
}

static int gpar__cl_event_sync(gpar__event *e) {
  cl_int err = clWaitForEvents(1, &e->ev);
  if (err != CL_SUCCESS && err != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    return gpar__cl_fail("clWaitForEvents", err);
  int r = gpar__cl_event_query(e);
  if (r < 0) return r;
  if (r == 0) return gpar__errorf(GPAR_EBACKEND, "clWaitForEvents: returned before the event completed");
  return GPAR_OK;
}

static int gpar__cl_can_wait(gpar__backend *be, int producer_idx, int consumer_idx) {
  return gpar__cl_peer_ok(be, producer_idx, consumer_idx); /* same platform = same context */
}

static int gpar__cl_lane_sync(gpar__bdev *dev, int lane) {
  cl_int err = clFinish(dev->lanes[lane].q);
  if (err != CL_SUCCESS) return gpar__cl_fail("clFinish", err);
  return GPAR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Several compute lanes, each issued by its own thread: a cl_kernel is not safe to give arguments
 * from two threads at once, and the lanes share some (a portable kernel's module, the backend's
 * own conversion program, which the first call builds). The calls that set such arguments hold
 * the device's shared_mu while they set them and enqueue; plain GEMMs (CLBlast makes its kernel
 * objects per call) and copies run on each lane's thread unlocked. */
#define GPAR__CL_SHARED(name, fn, argtype)                    \
  static int name(gpar__bdev *dev, int lane, argtype a) {     \
    int many = dev->be->lanes > 1;                            \
    if (many) pthread_mutex_lock(&dev->shared_mu);            \
    int st = fn(dev, lane, a);                                \
    if (many) pthread_mutex_unlock(&dev->shared_mu);          \
    return st;                                                \
  }
GPAR__CL_SHARED(gpar__cl_gemm_ex_shared, gpar__cl_gemm_ex, const gpar__gemm_ex_args *)
GPAR__CL_SHARED(gpar__cl_gemv_shared, gpar__cl_gemv, const gpar__gemv_args *)
GPAR__CL_SHARED(gpar__cl_axpy_shared, gpar__cl_axpy, const gpar__blas1_args *)
GPAR__CL_SHARED(gpar__cl_scal_shared, gpar__cl_scal, const gpar__blas1_args *)
GPAR__CL_SHARED(gpar__cl_dot_shared, gpar__cl_dot, const gpar__blas1_args *)

static int gpar__cl_kernel_launch_shared(gpar__bdev *dev, int lane, void *module, const gpar__kernel_launch *l) {
  int many = dev->be->lanes > 1;
  if (many) pthread_mutex_lock(&dev->shared_mu);
  int st = gpar__cl_kernel_launch(dev, lane, module, l);
  if (many) pthread_mutex_unlock(&dev->shared_mu);
  return st;
}

const gpar__backend_ops gpar__opencl_backend = {
    .name = "opencl",
    .id = GPAR_BACKEND_OPENCL,
    .ordered_by_events = 1,
    /* One compute lane: on NVIDIA's OpenCL more lanes were slower for independent small GEMMs
     * (256^3: 18.7 us at 1 lane, 20.6 at 4; H100, 2026-12-07), the cost being on the host. */
    .lanes_default = 1,
    .h2d_reads_at_enqueue = 1, /* NVIDIA's clEnqueueWriteBuffer reads the host source at enqueue */
    .open = gpar__cl_open,
    .close = gpar__cl_close,
    .device_info = gpar__cl_device_info,
    .device_open = gpar__cl_device_open,
    .device_close = gpar__cl_device_close,
    .bind_thread = NULL,
    .native = gpar__cl_native,
    .mem_alloc = gpar__cl_mem_alloc,
    .mem_free = gpar__cl_mem_free,
    .host_alloc = gpar__cl_host_alloc,
    .host_free = gpar__cl_host_free,
    .host_register = gpar__cl_host_register,
    .host_unregister = gpar__cl_host_unregister,
    .host_alloc_preferred = 1, /* its own mapped ALLOC_HOST_PTR memory: see core/engine/pinned.c */
    .copy = gpar__cl_copy,
    .fill = gpar__cl_fill,
    .gemm = gpar__cl_gemm,
    .gemm_ex = gpar__cl_gemm_ex_shared,
    .gemv = gpar__cl_gemv_shared,
    .axpy = gpar__cl_axpy_shared,
    .scal = gpar__cl_scal_shared,
    .dot = gpar__cl_dot_shared,
    .peer_ok = gpar__cl_peer_ok,
    .event_record = gpar__cl_event_record,
    .event_wait = gpar__cl_event_wait,
    .event_query = gpar__cl_event_query,
    .event_sync = gpar__cl_event_sync,
    .event_release = gpar__cl_event_release,
    .event_elapsed = gpar__cl_event_elapsed,
    .can_wait = gpar__cl_can_wait,
    .lane_sync = gpar__cl_lane_sync,
    .kernel_target = gpar__cl_kernel_target,
    .kernel_source = gpar__cl_kernel_source,
    .kernel_compile = gpar__cl_kernel_compile,
    .kernel_load = gpar__cl_kernel_load,
    .kernel_unload = gpar__cl_kernel_unload,
    .kernel_launch = gpar__cl_kernel_launch_shared,
    .kernel_module_per_device = 1, /* a program is built for one device; clSetKernelArg is per kernel object */
};
