/* opencl_internal.h: the OpenCL backend's private types (backend, platform, device, lane, event)
 * and the calls its files share. Included only by the .c files of backends/opencl (and files
 * other features add there), never by core/. */
#ifndef GPAR_OPENCL_INTERNAL_H
#define GPAR_OPENCL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <CL/cl.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <clblast_c.h>
#pragma GCC diagnostic pop

#include "backend.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR (-1001)
#endif

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
  int attached; /* gpar__cl_contexts_attach was called: detach at close */
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

/* ---- opencl_errors.c ---- */

/* Name and gpar status of an OpenCL / CLBlast code (unknown codes: "CL_UNKNOWN_ERROR"). */
GPAR__HIDDEN const char *gpar__cl_name(cl_int err, int *status);
/* Record "call: CL_NAME (code)" for the calling thread and return the mapped gpar status. */
GPAR__HIDDEN int gpar__cl_fail(const char *call, cl_int err);

/* ---- opencl_blas_clblast.c ---- */

/* The backend's gemm entry (CLBlast on the lane's queue). */
GPAR__HIDDEN int gpar__cl_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *a);

/* CLBlast's process-wide caches (programs, which hold their contexts; tuning database) are
 * cleared. Only when no OpenCL backend is open (opencl_contexts.c). */
GPAR__HIDDEN void gpar__cl_blas_forget(void);

/* ---- opencl_kernel.c: the backend's kernel entries (core/backend.h) ---- */

GPAR__HIDDEN int gpar__cl_kernel_target(gpar__bdev *dev, char *buf, size_t cap);
GPAR__HIDDEN int gpar__cl_kernel_source(gpar__bdev *dev, const gpar__kernel_def *def, char **src, char *opts,
                                        size_t optcap);
GPAR__HIDDEN int gpar__cl_kernel_compile(gpar__bdev *dev, const char *src, const char *opts, void **bin, size_t *len,
                                         char **log);
GPAR__HIDDEN int gpar__cl_kernel_load(gpar__bdev *dev, const void *bin, size_t len, const char *name, void **module,
                                      gpar__klimits *lim);
GPAR__HIDDEN void gpar__cl_kernel_unload(gpar__bdev *dev, void *module);
GPAR__HIDDEN int gpar__cl_kernel_launch(gpar__bdev *dev, int lane, void *module, const gpar__kernel_launch *l);

/* ---- opencl_contexts.c: process-wide contexts, one per platform ---- */

/* A backend opens: contexts stay until every backend that attached has detached. */
GPAR__HIDDEN void gpar__cl_contexts_attach(void);
/* The context of platform plat holding its devices ids (created on first use), with a reference
 * for the caller (clReleaseContext it). Between attach and detach only. */
GPAR__HIDDEN cl_context gpar__cl_context_get(cl_platform_id plat, cl_uint nd, const cl_device_id *ids, cl_int *err);
/* A backend closed (after releasing its contexts): the last one releases the contexts and
 * clears CLBlast's caches. */
GPAR__HIDDEN void gpar__cl_contexts_detach(void);

/* ---- shared by the backend's files ---- */

/* Each enqueue keeps its event as the lane's last command, and is flushed so the device starts
 * it without waiting for a later flush (NVIDIA batches unflushed commands; a queue waiting on an
 * unflushed event of another queue may never see it submitted). */
static inline void gpar__cl_set_last(gpar__cllane *ln, cl_event ev) {
  if (ln->last) clReleaseEvent(ln->last);
  ln->last = ev;
  atomic_store_explicit(&ln->dirty, 0, memory_order_relaxed);
  clFlush(ln->q);
}

/* Something the backend cannot see was enqueued on the lane: `last` no longer orders it. */
static inline void gpar__cl_mark_dirty(gpar__cllane *ln) { atomic_store_explicit(&ln->dirty, 1, memory_order_relaxed); }

#endif
