/* opencl_device.c: OpenCL devices: their info and peers (the devices of one platform), a
 * device's open and close with its lanes (one in-order queue each), native handles and lane
 * synchronisation. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

int gpar__cl_device_info(gpar__backend *be, int idx, gpar_device_props *info) {
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
  if (clGetPlatformInfo(be->plats[d->plat].id, CL_PLATFORM_VERSION, sizeof plat, plat, NULL) != CL_SUCCESS) plat[0] = 0;
  plat[sizeof plat - 1] = 0;
#ifdef GPAR_CLBLAST_VERSION /* configure: pkg-config --modversion clblast */
  snprintf(info->runtime_version, sizeof info->runtime_version, "CLBlast %s; %s", GPAR_CLBLAST_VERSION, plat);
#else
  snprintf(info->runtime_version, sizeof info->runtime_version, "CLBlast; %s", plat);
#endif
  return GPAR_OK;
}

int gpar__cl_peer_ok(gpar__backend *be, int src_idx, int dst_idx) {
  if (src_idx < 0 || dst_idx < 0 || src_idx >= be->ndev || dst_idx >= be->ndev) return 0;
  return be->devs[src_idx].plat == be->devs[dst_idx].plat;
}

int gpar__cl_can_wait(gpar__backend *be, int producer_idx, int consumer_idx) {
  return gpar__cl_peer_ok(be, producer_idx, consumer_idx); /* same platform = same context */
}

void gpar__cl_device_close(gpar__bdev *dev) {
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

int gpar__cl_device_open(gpar__backend *be, int idx, gpar__bdev **out) {
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
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    /* In-order; profiling only while tracing (it timestamps every command). clCreateCommandQueue
     * is the 1.2 entry point, deprecated but present in every ICD loader. */
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

int gpar__cl_native(gpar__bdev *dev, int lane, gpar_native *out) {
  if (lane < 0 || lane >= GPAR__NLANES || !dev->lanes[lane].q)
    return gpar__errorf(GPAR_EINVAL, "opencl: no lane %d", lane);
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

int gpar__cl_lane_sync(gpar__bdev *dev, int lane) {
  cl_int err = clFinish(dev->lanes[lane].q);
  if (err != CL_SUCCESS) return gpar__cl_fail("clFinish", err);
  return GPAR_OK;
}
