/* opencl_probe.c: the OpenCL backend's probe: every device of every ICD platform, one context per
 * platform (shared by all engines: opencl_contexts.c), each device described once; the backend's
 * open and close. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

void gpar__cl_str(cl_device_id d, cl_device_info what, char *out, size_t cap) {
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
  if (clGetDeviceInfo(d->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64cfg, &fp64cfg, NULL) != CL_SUCCESS) fp64cfg = 0;
  d->fp64 = fp64cfg != 0;
  if (!d->fp64 && clGetDeviceInfo(d->id, CL_DEVICE_EXTENSIONS, 0, NULL, &extlen) == CL_SUCCESS && extlen) {
    char *ext = malloc(extlen + 1);
    if (ext && clGetDeviceInfo(d->id, CL_DEVICE_EXTENSIONS, extlen, ext, NULL) == CL_SUCCESS) {
      ext[extlen] = 0;
      d->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    }
    free(ext);
  }
  d->type = (type & CL_DEVICE_TYPE_GPU)   ? GPAR_DEVICE_GPU
            : (type & CL_DEVICE_TYPE_CPU) ? GPAR_DEVICE_CPU
                                          : GPAR_DEVICE_OTHER;
  d->mem_bytes = mem;
  d->max_alloc = max_alloc ? max_alloc : mem;
  d->compute_units = (int)cu;
  /* OpenCL has no portable query for asynchronous copy engines. NVIDIA GPUs have had at least
   * two (one per direction) since Fermi-class Teslas; elsewhere report 0 (unknown). */
  d->copy_engines = (d->type == GPAR_DEVICE_GPU && strstr(d->vendor, "NVIDIA")) ? 2 : 0;
}

/* Platform p (pid) of the probe: its devices, described, join be->devs and its shared context
 * be->plats[be->nplat]. A platform whose devices or context cannot be had is logged and left
 * out (GPAR_OK); GPAR_ENOMEM when host memory ran out (be->devs stays valid). */
static int gpar__cl_open_platform(gpar__backend *be, cl_platform_id pid, cl_uint p) {
  int st;
  cl_uint nd = 0;
  cl_int err = clGetDeviceIDs(pid, CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
  if (err != CL_SUCCESS || nd == 0) {
    if (err != CL_DEVICE_NOT_FOUND && err != CL_SUCCESS)
      gpar__log("opencl: platform %u: clGetDeviceIDs: %s (%d)", p, gpar__cl_name(err, &st), (int)err);
    return GPAR_OK;
  }
  cl_device_id *ids = calloc(nd, sizeof *ids);
  gpar__cldev *grown = realloc(be->devs, (size_t)(be->ndev + (int)nd) * sizeof *be->devs);
  if (!ids || !grown) {
    free(ids);
    if (grown) be->devs = grown;
    return GPAR_ENOMEM;
  }
  be->devs = grown;
  if ((err = clGetDeviceIDs(pid, CL_DEVICE_TYPE_ALL, nd, ids, NULL)) != CL_SUCCESS) {
    gpar__log("opencl: platform %u: clGetDeviceIDs: %s (%d)", p, gpar__cl_name(err, &st), (int)err);
    free(ids);
    return GPAR_OK;
  }
  cl_context ctx = gpar__cl_context_get(pid, nd, ids, &err); /* shared by every engine */
  if (!ctx || err != CL_SUCCESS) {
    gpar__log("opencl: platform %u: clCreateContext: %s (%d); its devices are left out", p, gpar__cl_name(err, &st),
              (int)err);
    free(ids);
    return GPAR_OK;
  }
  gpar__clplat *pl = &be->plats[be->nplat];
  pl->id = pid;
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
  return GPAR_OK;
}

/* Pinned host memory comes from the first platform with a GPU (its DMA engines benefit), else
 * the first one. */
static int gpar__cl_pin_platform(const gpar__backend *be) {
  for (int p = 0; p < be->nplat; p++)
    if (be->plats[p].has_gpu) return p;
  return 0;
}

int gpar__cl_open(const gpar_config *cfg, int lanes, gpar__backend **out, int *ndev) {
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
  for (cl_uint p = 0; p < np; p++)
    if (gpar__cl_open_platform(be, pids[p], p) != GPAR_OK) goto nomem;
  free(pids);
  if (be->ndev == 0) {
    gpar__cl_close(be);
    return gpar__errorf(GPAR_ENODEV, "opencl: no device on %u platform(s)", np);
  }
  be->pin_plat = gpar__cl_pin_platform(be);
  *out = be;
  *ndev = be->ndev;
  return GPAR_OK;
nomem:
  free(pids);
  gpar__cl_close(be);
  return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory while probing");
}

void gpar__cl_close(gpar__backend *be) {
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
