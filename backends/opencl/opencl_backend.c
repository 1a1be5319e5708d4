/* opencl_backend.c: the OpenCL backend: every device of every ICD platform, one context per
 * platform, four in-order queues per device, GEMMs through CLBlast, ordering through events. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <clblast_c.h>
#pragma GCC diagnostic pop

#include "backend.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR (-1001)
#endif

/* ------------------------------------------------------------------------------------------ */
/* Errors: one table of OpenCL and CLBlast codes -> (name, gpar status). CLBlast's codes reuse
 * the OpenCL values where they mean the same thing, so one table serves both.
 * X(code, name, status) */
#define GPAR__CL_ERRORS(X)                                                      \
  X(0, "CL_SUCCESS", GPAR_OK)                                                   \
  X(-1, "CL_DEVICE_NOT_FOUND", GPAR_ENODEV)                                     \
  X(-2, "CL_DEVICE_NOT_AVAILABLE", GPAR_ENODEV)                                 \
  X(-3, "CL_COMPILER_NOT_AVAILABLE", GPAR_EBACKEND)                             \
  X(-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE", GPAR_EDEVMEM)                       \
  X(-5, "CL_OUT_OF_RESOURCES", GPAR_EDEVMEM)                                    \
  X(-6, "CL_OUT_OF_HOST_MEMORY", GPAR_ENOMEM)                                   \
  X(-7, "CL_PROFILING_INFO_NOT_AVAILABLE", GPAR_EBACKEND)                       \
  X(-8, "CL_MEM_COPY_OVERLAP", GPAR_EINVAL)                                     \
  X(-9, "CL_IMAGE_FORMAT_MISMATCH", GPAR_EBACKEND)                              \
  X(-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED", GPAR_EBACKEND)                        \
  X(-11, "CL_BUILD_PROGRAM_FAILURE", GPAR_EBACKEND)                             \
  X(-12, "CL_MAP_FAILURE", GPAR_EBACKEND)                                       \
  X(-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET", GPAR_EINVAL)                        \
  X(-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST", GPAR_EBACKEND)         \
  X(-15, "CL_COMPILE_PROGRAM_FAILURE", GPAR_EBACKEND)                           \
  X(-16, "CL_LINKER_NOT_AVAILABLE", GPAR_EBACKEND)                              \
  X(-17, "CL_LINK_PROGRAM_FAILURE", GPAR_EBACKEND)                              \
  X(-18, "CL_DEVICE_PARTITION_FAILED", GPAR_EBACKEND)                           \
  X(-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE", GPAR_EBACKEND)                     \
  X(-30, "CL_INVALID_VALUE", GPAR_EINVAL)                                       \
  X(-31, "CL_INVALID_DEVICE_TYPE", GPAR_EINVAL)                                 \
  X(-32, "CL_INVALID_PLATFORM", GPAR_EINVAL)                                    \
  X(-33, "CL_INVALID_DEVICE", GPAR_ENODEV)                                      \
  X(-34, "CL_INVALID_CONTEXT", GPAR_EBACKEND)                                   \
  X(-35, "CL_INVALID_QUEUE_PROPERTIES", GPAR_EBACKEND)                          \
  X(-36, "CL_INVALID_COMMAND_QUEUE", GPAR_EBACKEND)                             \
  X(-37, "CL_INVALID_HOST_PTR", GPAR_EINVAL)                                    \
  X(-38, "CL_INVALID_MEM_OBJECT", GPAR_EINVAL)                                  \
  X(-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", GPAR_EBACKEND)                   \
  X(-40, "CL_INVALID_IMAGE_SIZE", GPAR_EBACKEND)                                \
  X(-41, "CL_INVALID_SAMPLER", GPAR_EBACKEND)                                   \
  X(-42, "CL_INVALID_BINARY", GPAR_EBACKEND)                                    \
  X(-43, "CL_INVALID_BUILD_OPTIONS", GPAR_EBACKEND)                             \
  X(-44, "CL_INVALID_PROGRAM", GPAR_EBACKEND)                                   \
  X(-45, "CL_INVALID_PROGRAM_EXECUTABLE", GPAR_EBACKEND)                        \
  X(-46, "CL_INVALID_KERNEL_NAME", GPAR_EBACKEND)                               \
  X(-47, "CL_INVALID_KERNEL_DEFINITION", GPAR_EBACKEND)                         \
  X(-48, "CL_INVALID_KERNEL", GPAR_EBACKEND)                                    \
  X(-49, "CL_INVALID_ARG_INDEX", GPAR_EBACKEND)                                 \
  X(-50, "CL_INVALID_ARG_VALUE", GPAR_EBACKEND)                                 \
  X(-51, "CL_INVALID_ARG_SIZE", GPAR_EBACKEND)                                  \
  X(-52, "CL_INVALID_KERNEL_ARGS", GPAR_EBACKEND)                               \
  X(-53, "CL_INVALID_WORK_DIMENSION", GPAR_EBACKEND)                            \
  X(-54, "CL_INVALID_WORK_GROUP_SIZE", GPAR_EBACKEND)                           \
  X(-55, "CL_INVALID_WORK_ITEM_SIZE", GPAR_EBACKEND)                            \
  X(-56, "CL_INVALID_GLOBAL_OFFSET", GPAR_EBACKEND)                             \
  X(-57, "CL_INVALID_EVENT_WAIT_LIST", GPAR_EBACKEND)                           \
  X(-58, "CL_INVALID_EVENT", GPAR_EBACKEND)                                     \
  X(-59, "CL_INVALID_OPERATION", GPAR_EBACKEND)                                 \
  X(-60, "CL_INVALID_GL_OBJECT", GPAR_EBACKEND)                                 \
  X(-61, "CL_INVALID_BUFFER_SIZE", GPAR_EINVAL)                                 \
  X(-62, "CL_INVALID_MIP_LEVEL", GPAR_EBACKEND)                                 \
  X(-63, "CL_INVALID_GLOBAL_WORK_SIZE", GPAR_EBACKEND)                          \
  X(-64, "CL_INVALID_PROPERTY", GPAR_EBACKEND)                                  \
  X(-65, "CL_INVALID_IMAGE_DESCRIPTOR", GPAR_EBACKEND)                          \
  X(-66, "CL_INVALID_COMPILER_OPTIONS", GPAR_EBACKEND)                          \
  X(-67, "CL_INVALID_LINKER_OPTIONS", GPAR_EBACKEND)                            \
  X(-68, "CL_INVALID_DEVICE_PARTITION_COUNT", GPAR_EBACKEND)                    \
  X(-1001, "CL_PLATFORM_NOT_FOUND_KHR", GPAR_ENODEV)                            \
  X(-1024, "CLBlastNotImplemented", GPAR_ENOTSUP)                               \
  X(-1022, "CLBlastInvalidMatrixA", GPAR_EINVAL)                                \
  X(-1021, "CLBlastInvalidMatrixB", GPAR_EINVAL)                                \
  X(-1020, "CLBlastInvalidMatrixC", GPAR_EINVAL)                                \
  X(-1019, "CLBlastInvalidVectorX", GPAR_EINVAL)                                \
  X(-1018, "CLBlastInvalidVectorY", GPAR_EINVAL)                                \
  X(-1017, "CLBlastInvalidDimension", GPAR_EINVAL)                              \
  X(-1016, "CLBlastInvalidLeadDimA", GPAR_EINVAL)                               \
  X(-1015, "CLBlastInvalidLeadDimB", GPAR_EINVAL)                               \
  X(-1014, "CLBlastInvalidLeadDimC", GPAR_EINVAL)                               \
  X(-1013, "CLBlastInvalidIncrementX", GPAR_EINVAL)                             \
  X(-1012, "CLBlastInvalidIncrementY", GPAR_EINVAL)                             \
  X(-1011, "CLBlastInsufficientMemoryA", GPAR_EINVAL)                           \
  X(-1010, "CLBlastInsufficientMemoryB", GPAR_EINVAL)                           \
  X(-1009, "CLBlastInsufficientMemoryC", GPAR_EINVAL)                           \
  X(-1008, "CLBlastInsufficientMemoryX", GPAR_EINVAL)                           \
  X(-1007, "CLBlastInsufficientMemoryY", GPAR_EINVAL)                           \
  X(-2050, "CLBlastInsufficientMemoryTemp", GPAR_EBACKEND)                      \
  X(-2049, "CLBlastInvalidBatchCount", GPAR_EINVAL)                             \
  X(-2048, "CLBlastInvalidOverrideKernel", GPAR_EBACKEND)                       \
  X(-2047, "CLBlastMissingOverrideParameter", GPAR_EBACKEND)                    \
  X(-2046, "CLBlastInvalidLocalMemUsage", GPAR_EBACKEND)                        \
  X(-2045, "CLBlastNoHalfPrecision", GPAR_ENOTSUP)                              \
  X(-2044, "CLBlastNoDoublePrecision", GPAR_ENOTSUP)                            \
  X(-2043, "CLBlastInvalidVectorScalar", GPAR_EINVAL)                           \
  X(-2042, "CLBlastInsufficientMemoryScalar", GPAR_EINVAL)                      \
  X(-2041, "CLBlastDatabaseError", GPAR_EBACKEND)                               \
  X(-2040, "CLBlastUnknownError", GPAR_EBACKEND)                                \
  X(-2039, "CLBlastUnexpectedError", GPAR_EBACKEND)

/* Name and gpar status of an OpenCL / CLBlast code (unknown codes: "CL_UNKNOWN_ERROR"). */
static const char *gpar__cl_name(cl_int err, int *status) {
  switch (err) {
#define GPAR__CL_CASE(code, name, st) \
  case code:                          \
    *status = st;                     \
    return name;
    GPAR__CL_ERRORS(GPAR__CL_CASE)
#undef GPAR__CL_CASE
  default:
    *status = GPAR_EBACKEND;
    return "CL_UNKNOWN_ERROR";
  }
}

/* Record "call: CL_NAME (code)" for the calling thread and return the mapped gpar status. */
static int gpar__cl_fail(const char *call, cl_int err) {
  int st;
  const char *name = gpar__cl_name(err, &st);
  if (st == GPAR_OK) st = GPAR_EBACKEND; /* a call that "failed" with CL_SUCCESS: never expected */
  return gpar__errorf(st, "%s: %s (%d)", call, name, (int)err);
}

/* ------------------------------------------------------------------------------------------ */
/* Types. */

typedef struct gpar__clplat {
  cl_platform_id id;
  cl_context ctx; /* holds every device of the platform: cl_mem and events are shared by them */
  int has_gpu;
} gpar__clplat;

typedef struct gpar__cldev {
  cl_device_id id;
  int plat; /* index into be->plats */
  char name[128];
  char vendor[64];
  gpar_device_type type;
  uint64_t mem_bytes;
  uint64_t max_alloc;
  int compute_units;
  int copy_engines;
  int fp64;
} gpar__cldev;

/* A host pointer handed out by host_alloc and the buffer it maps. */
typedef struct gpar__clpin {
  void *ptr;
  cl_mem mem;
} gpar__clpin;

struct gpar__backend {
  int nplat, ndev;
  int profiling; /* tracing is on: lanes are profiling queues, event_elapsed works */
  gpar__clplat *plats;
  gpar__cldev *devs;
  /* Pinned host memory (host_alloc): buffers of one context mapped on a private queue. */
  pthread_mutex_t pin_lock;
  int pin_plat; /* platform whose context holds pinned buffers; -1 none */
  cl_command_queue pin_queue;
  gpar__clpin *pins;
  int npins, cap_pins;
  /* Event pool. */
  pthread_mutex_t ev_lock;
  gpar__event *ev_free;
};

struct gpar__event {
  cl_event ev;
  gpar__backend *be;
  gpar__event *next; /* free list */
};

/* Shape of the last GEMM of a lane, to skip asking CLBlast for the temp size again. */
typedef struct gpar__clgemm_key {
  int elem_size, ta, tb, m, n, k, lda, ldb, ldc;
  size_t a_off, b_off, c_off;
} gpar__clgemm_key;

typedef struct gpar__cllane {
  cl_command_queue q;
  /* Event of the last command enqueued on this lane (retained) and whether anything the
   * backend cannot see came after it (a barrier, work enqueued by a user function). When not
   * dirty, event_record hands out this event instead of enqueuing a marker. */
  cl_event last;
  atomic_int dirty;
  /* CLBlast temp buffer (WithTempBuffer variants: plain CLBlastSgemm allocates and frees one per
   * call, which blocks the host on NVIDIA). Per lane, since lanes run concurrently. */
  cl_mem temp;
  size_t temp_size;
  gpar__clgemm_key key;
  size_t key_size; /* temp size CLBlast asked for `key` */
  int key_valid;
} gpar__cllane;

struct gpar__bdev {
  gpar__backend *be;
  int idx;
  gpar__cldev *d;
  cl_context ctx;
  gpar__cllane lanes[GPAR__NLANES];
};

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

static int gpar__cl_open(const gpar_config *cfg, gpar__backend **out, int *ndev) {
  *out = NULL;
  *ndev = 0;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0)) {
    gpar__log("opencl: no platform (no ICD registered in /etc/OpenCL/vendors)");
    return GPAR_OK;
  }
  if (err != CL_SUCCESS) {
    int st;
    gpar__log("opencl: no platform: clGetPlatformIDs: %s (%d)", gpar__cl_name(err, &st), (int)err);
    return GPAR_OK;
  }
  gpar__backend *be = calloc(1, sizeof *be);
  if (be) be->profiling = cfg && cfg->trace_path != NULL;
  cl_platform_id *pids = calloc(np, sizeof *pids);
  if (!be || !pids) {
    free(be);
    free(pids);
    return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  }
  pthread_mutex_init(&be->pin_lock, NULL);
  pthread_mutex_init(&be->ev_lock, NULL);
  be->pin_plat = -1;
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
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)pids[p], 0};
    cl_context ctx = clCreateContext(props, nd, ids, NULL, NULL, &err);
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
    gpar__log("opencl: no device on %u platform(s)", np);
    gpar__cl_close(be);
    return GPAR_OK;
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
  for (int l = 0; l < GPAR__NLANES; l++) {
    gpar__cllane *ln = &dev->lanes[l];
    if (ln->q) clFinish(ln->q);
    if (ln->last) clReleaseEvent(ln->last);
    if (ln->temp) clReleaseMemObject(ln->temp);
    if (ln->q) clReleaseCommandQueue(ln->q);
  }
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
  for (int l = 0; l < GPAR__NLANES; l++) {
    cl_int err = CL_SUCCESS;
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
  if (lane < 0 || lane >= GPAR__NLANES) return gpar__errorf(GPAR_EINVAL, "opencl: no lane %d", lane);
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
  (void)dev;
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

/* ------------------------------------------------------------------------------------------ */
/* Work. Each enqueue keeps its event as the lane's last command, and is flushed so the device
 * starts it without waiting for a later flush (NVIDIA batches unflushed commands; a queue
 * waiting on an unflushed event of another queue may never see it submitted). */

static inline void gpar__cl_set_last(gpar__cllane *ln, cl_event ev) {
  if (ln->last) clReleaseEvent(ln->last);
  ln->last = ev;
  atomic_store_explicit(&ln->dirty, 0, memory_order_relaxed);
  clFlush(ln->q);
}

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

/* k == 0: C = beta * C (BLAS), which CLBlast's GEMM refuses (CLBlastInvalidDimension). beta 0
 * writes zeros (C is write-only then: no 0 * NaN), beta 1 leaves C alone, else a scal per column
 * (one when the columns are contiguous). Rare: not on the hot path. */
static int gpar__cl_gemm_k0(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_args *a) {
  const size_t es = (size_t)a->elem_size, m = (size_t)a->m, ldc = (size_t)a->ldc;
  const int contiguous = ldc == m;
  const size_t ncall = contiguous ? 1 : (size_t)a->n, len = contiguous ? m * (size_t)a->n : m;
  if (a->beta == 1.0) return GPAR_OK;
  for (size_t j = 0; j < ncall; j++) {
    const size_t off = a->c_off + j * ldc; /* elements */
    cl_event ev = NULL;
    if (a->beta == 0.0) {
      const unsigned char zero = 0;
      cl_int err = clEnqueueFillBuffer(ln->q, (cl_mem)a->c, &zero, 1, off * es, len * es, 0, NULL, &ev);
      if (err != CL_SUCCESS) return gpar__cl_fail("clEnqueueFillBuffer (gemm with k = 0)", err);
    } else {
      CLBlastStatusCode s = es == 8 ? CLBlastDscal(len, a->beta, (cl_mem)a->c, off, 1, &ln->q, &ev)
                                    : CLBlastSscal(len, (float)a->beta, (cl_mem)a->c, off, 1, &ln->q, &ev);
      if (s != CLBlastSuccess) {
        atomic_store_explicit(&ln->dirty, 1, memory_order_relaxed);
        return gpar__cl_fail(es == 8 ? "CLBlastDscal (dgemm with k = 0)" : "CLBlastSscal (sgemm with k = 0)", (cl_int)s);
      }
    }
    if (ev)
      gpar__cl_set_last(ln, ev);
    else
      atomic_store_explicit(&ln->dirty, 1, memory_order_relaxed);
  }
  return GPAR_OK;
}

/* CLBlast 1.5.x is not safe when two threads fill its caches for the same key at once (two
 * identical devices' first GEMMs: a heap use-after-free in clblast::Database, seen under ASan
 * with two PoCL devices; fixed upstream in CLBlast PR #495, after 1.5.3). A lane's first call for
 * a shape may fill caches, so it runs under this lock; repeated shapes only read them. */
static pthread_mutex_t gpar__clblast_cold_lock = PTHREAD_MUTEX_INITIALIZER;

static int gpar__cl_gemm_run(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_args *a, const gpar__clgemm_key *kp,
                             int cold);

static int gpar__cl_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *a) {
  gpar__cllane *ln = &dev->lanes[lane];
  const int dbl = a->elem_size == 8;
  if (dbl && !dev->d->fp64) return gpar__errorf(GPAR_ENOTSUP, "dgemm: device %s has no fp64 support", dev->d->name);
  if (a->elem_size != 4 && !dbl) return gpar__errorf(GPAR_EINVAL, "opencl: gemm element size %d", a->elem_size);
  if (a->k == 0 && a->m > 0 && a->n > 0 && a->ldc >= a->m) {
    pthread_mutex_lock(&gpar__clblast_cold_lock);
    int st = gpar__cl_gemm_k0(dev, ln, a);
    pthread_mutex_unlock(&gpar__clblast_cold_lock);
    return st;
  }
  if (a->m <= 0 || a->n <= 0 || a->k <= 0 || a->lda <= 0 || a->ldb <= 0 || a->ldc <= 0)
    return gpar__errorf(GPAR_EINVAL, "%s: m=%d n=%d k=%d lda=%d ldb=%d ldc=%d: CLBlast needs all > 0",
                        dbl ? "CLBlastDgemm" : "CLBlastSgemm", a->m, a->n, a->k, a->lda, a->ldb, a->ldc);
  const CLBlastTranspose ta = a->trans_a == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const CLBlastTranspose tb = a->trans_b == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;

  /* Temp buffer: ask CLBlast how much this shape needs (cached per lane for a repeated shape),
   * grow the lane's buffer when short. The old one is released at once: OpenCL keeps it alive
   * until the GEMMs already enqueued with it are done. */
  gpar__clgemm_key key;
  memset(&key, 0, sizeof key);
  key.elem_size = a->elem_size;
  key.ta = (int)ta;
  key.tb = (int)tb;
  key.m = a->m;
  key.n = a->n;
  key.k = a->k;
  key.lda = a->lda;
  key.ldb = a->ldb;
  key.ldc = a->ldc;
  key.a_off = a->a_off;
  key.b_off = a->b_off;
  key.c_off = a->c_off;
  const int cold = !(ln->key_valid && memcmp(&key, &ln->key, sizeof key) == 0);
  if (cold) pthread_mutex_lock(&gpar__clblast_cold_lock);
  int st = gpar__cl_gemm_run(dev, ln, a, &key, cold);
  if (cold) pthread_mutex_unlock(&gpar__clblast_cold_lock);
  return st;
}

static int gpar__cl_gemm_run(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_args *a, const gpar__clgemm_key *kp,
                             int cold) {
  const int dbl = a->elem_size == 8;
  const CLBlastLayout lay = CLBlastLayoutColMajor;
  const CLBlastTranspose ta = a->trans_a == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const CLBlastTranspose tb = a->trans_b == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const size_t m = (size_t)a->m, n = (size_t)a->n, k = (size_t)a->k;
  const size_t lda = (size_t)a->lda, ldb = (size_t)a->ldb, ldc = (size_t)a->ldc;
  CLBlastStatusCode s;
  size_t need;
  if (!cold) {
    need = ln->key_size;
  } else {
    need = 0;
    s = dbl ? CLBlastDGemmTempBufferSize(lay, ta, tb, m, n, k, a->a_off, lda, a->b_off, ldb, a->c_off, ldc, &ln->q, &need)
            : CLBlastSGemmTempBufferSize(lay, ta, tb, m, n, k, a->a_off, lda, a->b_off, ldb, a->c_off, ldc, &ln->q, &need);
    if (s != CLBlastSuccess)
      return gpar__cl_fail(dbl ? "CLBlastDGemmTempBufferSize" : "CLBlastSGemmTempBufferSize", (cl_int)s);
    ln->key = *kp;
    ln->key_size = need;
    ln->key_valid = 1;
  }
  if (need < 4096) need = 4096; /* always pass a buffer: NULL would make CLBlast allocate one */
  if (need > ln->temp_size) {
    size_t want = need + need / 8; /* some slack against slowly growing shapes */
    if ((uint64_t)want > dev->d->max_alloc) want = need;
    cl_int err = CL_SUCCESS;
    cl_mem t = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, want, NULL, &err);
    if (!t || err != CL_SUCCESS) return gpar__cl_fail("clCreateBuffer(CLBlast temp buffer)", err);
    if (ln->temp) clReleaseMemObject(ln->temp);
    ln->temp = t;
    ln->temp_size = want;
  }

  /* No cl_event when the core will not ask for one after this GEMM (it creates a driver
   * object per call): the lane is then marked dirty and a later event_record uses a marker. */
  cl_event ev = NULL, *evp = a->no_event ? NULL : &ev;
  s = dbl ? CLBlastDgemmWithTempBuffer(lay, ta, tb, m, n, k, a->alpha, (cl_mem)a->a, a->a_off, lda, (cl_mem)a->b, a->b_off,
                                       ldb, a->beta, (cl_mem)a->c, a->c_off, ldc, &ln->q, evp, ln->temp)
          : CLBlastSgemmWithTempBuffer(lay, ta, tb, m, n, k, (float)a->alpha, (cl_mem)a->a, a->a_off, lda, (cl_mem)a->b,
                                       a->b_off, ldb, (float)a->beta, (cl_mem)a->c, a->c_off, ldc, &ln->q, evp, ln->temp);
  if (s != CLBlastSuccess) {
    if (ev) clReleaseEvent(ev);
    /* Something may have been enqueued before the failure: no longer trust `last`. */
    atomic_store_explicit(&ln->dirty, 1, memory_order_relaxed);
    if (s == CLBlastNoDoublePrecision)
      return gpar__errorf(GPAR_ENOTSUP, "dgemm: device %s has no fp64 support (CLBlastNoDoublePrecision)",
                          dev->d->name);
    return gpar__cl_fail(dbl ? "CLBlastDgemmWithTempBuffer" : "CLBlastSgemmWithTempBuffer", (cl_int)s);
  }
  if (ev) {
    gpar__cl_set_last(ln, ev);
  } else {
    atomic_store_explicit(&ln->dirty, 1, memory_order_relaxed);
    clFlush(ln->q);
  }
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
     * means everything before it completed too, so it serves as the event (no marker). */
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
  atomic_store_explicit(&ln->dirty, 1, memory_order_relaxed);
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

const gpar__backend_ops gpar__opencl_backend = {
    .name = "opencl",
    .id = GPAR_BACKEND_OPENCL,
    .ordered_by_events = 1,
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
    .copy = gpar__cl_copy,
    .fill = gpar__cl_fill,
    .gemm = gpar__cl_gemm,
    .peer_ok = gpar__cl_peer_ok,
    .event_record = gpar__cl_event_record,
    .event_wait = gpar__cl_event_wait,
    .event_query = gpar__cl_event_query,
    .event_sync = gpar__cl_event_sync,
    .event_release = gpar__cl_event_release,
    .event_elapsed = gpar__cl_event_elapsed,
    .can_wait = gpar__cl_can_wait,
    .lane_sync = gpar__cl_lane_sync,
};
