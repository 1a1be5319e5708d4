/* opencl_table.c: gpar__opencl_backend, the OpenCL backend's table (core/backend.h): every
 * device of every ICD platform, one context per platform, in-order queues per device, ordering
 * through events; and the wrappers that hold a device's shared_mu around the calls that set a
 * shared cl_kernel's arguments. */
#include <pthread.h>

#include "opencl_internal.h"

/* Several compute lanes, each issued by its own thread: a cl_kernel is not safe to give arguments
 * from two threads at once, and the lanes share some (a portable kernel's module, the backend's
 * own conversion program, which the first call builds). The calls that set such arguments hold
 * the device's shared_mu while they set them and enqueue; plain GEMMs (CLBlast makes its kernel
 * objects per call) and copies run on each lane's thread unlocked. */
#define GPAR__CL_SHARED(name, fn, argtype)                \
  static int name(gpar__bdev *dev, int lane, argtype a) { \
    int many = dev->be->lanes > 1;                        \
    if (many) pthread_mutex_lock(&dev->shared_mu);        \
    int st = fn(dev, lane, a);                            \
    if (many) pthread_mutex_unlock(&dev->shared_mu);      \
    return st;                                            \
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
