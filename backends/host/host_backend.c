/* host_backend.c: the CPU as a device, the reference and the fallback. Ops run to completion on
 * the core's CPU worker threads (ordered_by_events = 0): copies are memcpy, fill is memset, BLAS
 * is CBLAS from OpenBLAS (host_blas.c). OpenBLAS runs single-threaded inside each op, so
 * parallelism comes from running independent ops on different workers rather than from
 * oversubscribed cores. Kernels: host_kernel.c. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "host_internal.h"

static int host_open(const gpar_config *cfg, int lanes, gpar__backend **be, int *ndev) {
  (void)lanes;
  openblas_set_num_threads(1);
  if (!(*be = calloc(1, sizeof **be))) return gpar__errorf(GPAR_ENOMEM, "host: out of host memory");
  snprintf((*be)->cc, sizeof (*be)->cc, "%s", cfg && cfg->kernel_cc ? cfg->kernel_cc : "cc");
  *ndev = 1;
  return GPAR_OK;
}

static void host_close(gpar__backend *be) { free(be); }

static int host_device_info(gpar__backend *be, int idx, gpar_device_props *info) {
  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "host");
  info->backend_id = GPAR_BACKEND_HOST;
  snprintf(info->vendor, sizeof info->vendor, "unknown");
  snprintf(info->name, sizeof info->name, "CPU");
  gpar__host_cpuinfo("vendor_id", info->vendor, sizeof info->vendor);
  gpar__host_cpuinfo("model name", info->name, sizeof info->name);
  info->type = GPAR_DEVICE_CPU;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  info->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  info->compute_units = n > 0 ? (int)n : 1;
  const char *blas = openblas_get_config(); /* "OpenBLAS 0.3.21 DYNAMIC_ARCH ... MAX_THREADS=64" */
  snprintf(info->runtime_version, sizeof info->runtime_version, "%s", blas ? blas : "");
  return GPAR_OK;
}

static int host_device_open(gpar__backend *be, int idx, gpar__bdev **dev) {
  *dev = (gpar__bdev *)be;
  return GPAR_OK;
}

static void host_device_close(gpar__bdev *dev) {}

static int host_native(gpar__bdev *dev, int lane, gpar_native *out) {
  out->backend = "host";
  return GPAR_OK;
}

static int host_mem_alloc(gpar__bdev *dev, size_t bytes, void **mem) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded < bytes || !(*mem = aligned_alloc(64, rounded)))
    return gpar__errorf(GPAR_ENOMEM, "host device: cannot allocate %zu bytes", bytes);
  return GPAR_OK;
}

static void host_mem_free(gpar__bdev *dev, void *mem) { free(mem); }

/* Another library's host memory: the CPU's ops take the pointer as it is. */
static int host_mem_import(gpar__bdev *dev, void *ptr, size_t bytes, void **mem) {
  *mem = ptr;
  return GPAR_OK;
}

static int host_copy(gpar__bdev *dev, int lane, const gpar__copy_args *a) {
  memcpy((char *)a->dst + a->dst_off, (const char *)a->src + a->src_off, a->bytes);
  return GPAR_OK;
}

static int host_fill(gpar__bdev *dev, int lane, void *mem, size_t off, size_t bytes, unsigned char value) {
  memset((char *)mem + off, value, bytes);
  return GPAR_OK;
}

/* The host backend's table (core/backend.h): what the core calls on the CPU device. */
const gpar__backend_ops gpar__host_backend = {
    .name = "host",
    .id = GPAR_BACKEND_HOST,
    .ordered_by_events = 0,
    .open = host_open,
    .close = host_close,
    .device_info = host_device_info,
    .device_open = host_device_open,
    .device_close = host_device_close,
    .native = host_native,
    .mem_alloc = host_mem_alloc,
    .mem_free = host_mem_free,
    .mem_import = host_mem_import,
    .copy = host_copy,
    .fill = host_fill,
    .gemm = gpar__host_gemm,
    .gemm_ex = gpar__host_gemm_ex,
    .gemv = gpar__host_gemv,
    .axpy = gpar__host_axpy,
    .scal = gpar__host_scal,
    .dot = gpar__host_dot,
    .reduce = gpar__host_reduce,
    .array = gpar__host_array,
    .kernel_target = gpar__host_kernel_target,
    .kernel_ident = gpar__host_kernel_ident,
    .kernel_source = gpar__host_kernel_source,
    .kernel_compile = gpar__host_kernel_compile,
    .kernel_load = gpar__host_kernel_load,
    .kernel_unload = gpar__host_kernel_unload,
    .kernel_launch = gpar__host_kernel_launch,
    .kernel_host_ptr = gpar__host_kernel_host_ptr,
};
