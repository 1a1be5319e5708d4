/* cuda_table.c: the CUDA backend's top layer: gpar__cuda_backend, the table the core drives, and
 * device open/close, which put a device together from the layers below (its own resources,
 * cuBLAS and cublasLt, the event pools) and take it apart in reverse. */
#include <stdlib.h>

#include "cuda_internal.h"

/* Everything a device holds, whatever open got to: lanes idle first, then cuBLAS (bound to the
 * compute lane), the device's own resources, the event pools (their lock last). d current. */
static void cuda_dev_destroy(struct cuda_dev *d) {
  gpar__cuda_dev_quiesce(d);
  gpar__cuda_blas_close(d);
  gpar__cuda_dev_fini(d);
  gpar__cuda_events_fini(d);
}

/* Opens device idx from any thread: the caller's current device is restored (the bracket). */
static int cuda_device_open(gpar__backend *be, int idx, gpar__bdev **devp) {
  int st, prev;
  gpar__bdev *dev = calloc(1, sizeof *dev);
  if (!dev) return gpar__errorf(GPAR_ENOMEM, "cuda: out of host memory for device %d", idx);
  struct cuda_dev *d = &dev->d;
  d->be = be;
  d->ordinal = idx;
  gpar__cuda_events_init(d);

  if ((st = gpar__cuda_enter(d, &prev))) {
    gpar__cuda_events_fini(d);
    free(dev);
    return st;
  }
  if ((st = gpar__cuda_dev_init(d)) || (st = gpar__cuda_blas_open(d)) || (st = gpar__cuda_events_prefill(d))) {
    cuda_dev_destroy(d);
    gpar__cuda_exit(d, prev);
    free(dev);
    return st;
  }
  gpar__cuda_exit(d, prev);
  *devp = dev;
  return GPAR_OK;
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

/* The CUDA backend's table (core/backend.h): what the core calls on CUDA devices. */
const gpar__backend_ops gpar__cuda_backend = {
    .name = "cuda",
    .id = GPAR_BACKEND_CUDA,
    .ordered_by_events = 1,
    /* Four compute lanes, each with its stream, issuing thread and cuBLAS handle: independent
     * small ops run beside each other (core/engine/lanes.c says which op goes where). */
    .lanes_default = 4,
    .open = gpar__cuda_open,
    .close = gpar__cuda_close,
    .device_info = gpar__cuda_device_info,
    .device_open = cuda_device_open,
    .device_close = cuda_device_close,
    .bind_thread = gpar__cuda_bind_thread,
    .native = gpar__cuda_native,
    .mem_alloc = gpar__cuda_mem_alloc,
    .mem_free = gpar__cuda_mem_free,
    .mem_import = gpar__cuda_mem_import,
    .host_alloc = gpar__cuda_host_alloc,
    .host_free = gpar__cuda_host_free,
    .host_register = gpar__cuda_host_register,
    .host_unregister = gpar__cuda_host_unregister,
    .copy = gpar__cuda_copy,
    .fill = gpar__cuda_fill,
    .gemm = gpar__cuda_gemm,
    .gemm_ex = gpar__cuda_gemm_ex,
    .gemv = gpar__cuda_gemv,
    .axpy = gpar__cuda_axpy,
    .scal = gpar__cuda_scal,
    .dot = gpar__cuda_dot,
    .gemm_counts = gpar__cuda_gemm_counts,
    .comm_create = gpar__cuda_comm_create,
    .coll = gpar__cuda_coll,
    .comm_destroy = gpar__cuda_comm_destroy,
    .comm_check = gpar__cuda_comm_check,
    .comm_abort = gpar__cuda_comm_abort,
    .peer_ok = gpar__cuda_peer_ok,
    .event_record = gpar__cuda_event_record,
    .event_record_native = gpar__cuda_event_record_native,
    .native_wait_event = gpar__cuda_native_wait_event,
    .event_wait = gpar__cuda_event_wait,
    .event_query = gpar__cuda_event_query,
    .event_sync = gpar__cuda_event_sync,
    .event_release = gpar__cuda_event_release,
    .event_elapsed = gpar__cuda_event_elapsed,
    .can_wait = gpar__cuda_can_wait,
    .lane_sync = gpar__cuda_lane_sync,
    .graph_begin = gpar__cuda_graph_begin,
    .graph_end = gpar__cuda_graph_end,
    .graph_launch = gpar__cuda_graph_launch,
    .graph_destroy = gpar__cuda_graph_destroy,
    .graph_shape = gpar__cuda_graph_shape,
    .graph_copy_ok = gpar__cuda_graph_copy_ok,
    .kernel_target = gpar__cuda_kernel_target,
    .kernel_ident = gpar__cuda_kernel_ident,
    .kernel_source = gpar__cuda_kernel_source,
    .kernel_compile = gpar__cuda_kernel_compile,
    .kernel_load = gpar__cuda_kernel_load,
    .kernel_unload = gpar__cuda_kernel_unload,
    .kernel_launch = gpar__cuda_kernel_launch,
    .kernel_host_ptr = gpar__cuda_kernel_host_ptr,
    .kernel_module_per_device = 1, /* loaded in each device's context at its build (cuda_kernel.c) */
};
