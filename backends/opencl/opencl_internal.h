/* opencl_internal.h: the OpenCL backend's private types (backend, platform, device, lane, event)
 * and the calls its files share. Included only by the .c files of backends/opencl (and files
 * other features add there), never by core/.
 *
 * Layers (bottom first): opencl_errors.c opencl_blas_kernels.c opencl_blas_clblast.c opencl_blas_vec.c
 *   opencl_kernel.c opencl_contexts.c opencl_probe.c opencl_device.c opencl_memory.c opencl_copy.c
 *   opencl_events.c opencl_table.c
 *
 * A file calls only into files listed before it (and OpenCL, CLBlast):
 *   opencl_errors.c        OpenCL and CLBlast codes -> names and gpar statuses
 *   opencl_blas_kernels.c  the backend's own program (f16/bf16 <-> f32 conversions, exact zeros)
 *                          and the lanes' temporary f32 buffers
 *   opencl_blas_clblast.c  GEMMs through CLBlast: temp buffers, the cold lock, strided batches,
 *                          f16/bf16 through f32 copies
 *   opencl_blas_vec.c      GEMV and level 1 through CLBlast
 *   opencl_kernel.c        user kernels: build, binaries, load, launch
 *   opencl_contexts.c      one cl_context per platform for the whole process; CLBlast's caches
 *                          cleared with the last backend
 *   opencl_probe.c         the probe (platforms, their devices and shared contexts, each device
 *                          described), the backend's open and close
 *   opencl_device.c        device info and peers; a device's open and close with its lanes'
 *                          queues; native handles, lane sync
 *   opencl_memory.c        device buffers, pinned host memory (host_alloc), registration of
 *                          another backend's pinned blocks
 *   opencl_copy.c          copies and fills on a lane
 *   opencl_events.c        the event pool and the event entries
 *   opencl_table.c         gpar__opencl_backend: the table, and the wrappers that hold a device's
 *                          shared_mu around the calls that set a shared cl_kernel's arguments */
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
  int lanes;     /* compute lanes per device (gpar_config.lanes), each an in-order queue */
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
  /* mem_free calls so far: a kernel's cached arguments (opencl_kernel.c) hold only cl_mem values
   * of buffers alive since the count they were set at, so an equal handle is the same buffer. */
  atomic_uint mem_frees;
};

struct gpar__event {
  cl_event ev;
  gpar__backend *be;
  gpar__event *next; /* free list */
};

/* Temporary f32 copies of a lane's f16/bf16 GEMM operands (opencl_blas_kernels.c): A, B, C. */
enum { GPAR__CL_CONV_A, GPAR__CL_CONV_B, GPAR__CL_CONV_C, GPAR__CL_NCONV };

/* The backend's own kernels (opencl_blas_kernels.c), one program per device. */
enum {
  GPAR__CLK_F16_TO_F32, GPAR__CLK_BF16_TO_F32, GPAR__CLK_F32_TO_F16, GPAR__CLK_F32_TO_BF16, GPAR__CLK_ZERO32,
  GPAR__CLK_ZERO64, GPAR__CLK_COUNT
};

typedef struct gpar__cllane {
  cl_command_queue q;
  /* Event of the last command enqueued on this lane (retained) and whether anything the
   * backend cannot see came after it (a barrier, work enqueued by a user function). When not
   * dirty, event_record hands out this event instead of enqueuing a marker. */
  cl_event last;
  atomic_int dirty;
  /* Kernel launches enqueued since the lane's last clFlush (opencl_kernel.c): they flush every
   * GPAR__CL_FLUSH_EVERY, and event_record flushes before it hands out an event. The lane's
   * issuing thread alone reads and writes it. */
  int unflushed;
  /* CLBlast temp buffer (WithTempBuffer variants: plain CLBlastSgemm allocates and frees one per
   * call, which blocks the host on NVIDIA). Per lane, since lanes run concurrently. */
  cl_mem temp;
  size_t temp_size;
  gpar__gemm_key key; /* shape of the lane's last plain GEMM (core/backend_blas.h), offsets set */
  size_t key_size;    /* temp size CLBlast asked for `key` */
  int key_valid;
  gpar__gemm_key bkey; /* shape of the lane's last strided-batched GEMM: CLBlast's caches are warm for it */
  size_t bkey_size;    /* temp size one entry of `bkey` needs (0: CLBlast's direct kernel, one batched call) */
  int bkey_valid;
  unsigned warm;       /* GPAR__CLW_* bits: CLBlast routines this lane has run (their caches are filled) */
  cl_mem conv[GPAR__CL_NCONV]; /* f32 copies of f16/bf16 operands, grown on demand */
  size_t conv_size[GPAR__CL_NCONV];
} gpar__cllane;

/* CLBlast routines by precision, for gpar__cllane.warm. */
enum {
  GPAR__CLW_SGEMV = 1, GPAR__CLW_DGEMV = 2, GPAR__CLW_SAXPY = 4, GPAR__CLW_DAXPY = 8, GPAR__CLW_SSCAL = 16,
  GPAR__CLW_DSCAL = 32, GPAR__CLW_SDOT = 64, GPAR__CLW_DDOT = 128
};

struct gpar__bdev {
  gpar__backend *be;
  int idx;
  gpar__cldev *d;
  cl_context ctx;
  gpar__cllane lanes[GPAR__NLANES]; /* the copy lanes and be->lanes compute lanes have a queue */
  pthread_mutex_t shared_mu;        /* several compute lanes: a call that sets a shared cl_kernel's arguments */
  /* The backend's own program and its kernels (opencl_blas_kernels.c), built at first use by the
   * device's dispatcher; prog_err: the build failed (its status is returned again). */
  cl_program prog;
  cl_kernel kern[GPAR__CLK_COUNT];
  int prog_err;
};

/* ---- opencl_errors.c ---- */

/* Name and gpar status of an OpenCL / CLBlast code (unknown codes: "CL_UNKNOWN_ERROR"). */
GPAR__HIDDEN const char *gpar__cl_name(cl_int err, int *status);
/* Record "call: CL_NAME (code)" for the calling thread and return the mapped gpar status. */
GPAR__HIDDEN int gpar__cl_fail(const char *call, cl_int err);

/* ---- opencl_blas_kernels.c: the backend's own OpenCL C program ---- */

/* Convert a rows x cols matrix of f16/bf16 (type t, element offset off, leading dimension ld),
 * entries stride apart, batch of them, into packed f32 at dst (ld rows, entries rows * cols
 * apart); to_f32 == 0: the other way, writing only those elements of the f16/bf16 matrix. With
 * want_event the kernel's event becomes the lane's last, else the lane is marked dirty. */
GPAR__HIDDEN int gpar__cl_convert(gpar__bdev *dev, gpar__cllane *ln, int to_f32, int t, cl_mem hbuf, size_t off, int ld,
                                  long long stride, int rows, int cols, int batch, cl_mem f32, int want_event);
/* n elements of es (4 or 8) bytes, inc apart from element off of x, set to zero bits. */
GPAR__HIDDEN int gpar__cl_zero(gpar__bdev *dev, gpar__cllane *ln, int es, cl_mem x, size_t off, int n, int inc,
                               int want_event);
/* The lane's temporary f32 buffer i (GPAR__CL_CONV_*) with room for bytes; NULL after a failure. */
GPAR__HIDDEN cl_mem gpar__cl_conv_buffer(gpar__bdev *dev, gpar__cllane *ln, int i, size_t bytes, int *st);
/* Release the program, its kernels and every lane's conversion buffers (device close). */
GPAR__HIDDEN void gpar__cl_kernels_close(gpar__bdev *dev);

/* ---- opencl_blas_clblast.c ---- */

/* The backend's gemm and gemm_ex entries (CLBlast on the lane's queue; f16/bf16 through f32
 * copies made by opencl_blas_kernels.c). */
GPAR__HIDDEN int gpar__cl_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *a);
GPAR__HIDDEN int gpar__cl_gemm_ex(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *a);
/* CLBlast 1.5.x fills its caches unsafely when two threads do it at once: a lane's first call of a
 * routine (warm bit w of ln->warm still clear) runs between enter and leave, under one process
 * lock; later calls take no lock. enter returns whether it locked. leave sets the bit when ok. */
GPAR__HIDDEN int gpar__cl_clblast_enter(gpar__cllane *ln, unsigned w);
GPAR__HIDDEN void gpar__cl_clblast_leave(gpar__cllane *ln, unsigned w, int locked, int ok);
/* After a CLBlast call that returned s with event ev (NULL when none was asked for): the event
 * becomes the lane's last, or the lane is marked dirty and flushed; a failure is reported as
 * "what: CLBlast name". */
GPAR__HIDDEN int gpar__cl_clblast_done(gpar__bdev *dev, gpar__cllane *ln, CLBlastStatusCode s, cl_event ev,
                                       const char *what);

/* ---- opencl_blas_vec.c: the gemv, axpy, scal and dot entries (CLBlast) ---- */

GPAR__HIDDEN int gpar__cl_gemv(gpar__bdev *dev, int lane, const gpar__gemv_args *a);
GPAR__HIDDEN int gpar__cl_axpy(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
GPAR__HIDDEN int gpar__cl_scal(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
GPAR__HIDDEN int gpar__cl_dot(gpar__bdev *dev, int lane, const gpar__blas1_args *a);

/* CLBlast's process-wide caches (programs, which hold their contexts; tuning database) are
 * cleared. Only when no OpenCL backend is open (opencl_contexts.c). */
GPAR__HIDDEN void gpar__cl_blas_forget(void);

/* ---- opencl_kernel.c: the backend's kernel entries (core/backend.h) ---- */

GPAR__HIDDEN int gpar__cl_kernel_target(gpar__bdev *dev, char *buf, size_t cap, char *files, size_t fcap);
GPAR__HIDDEN int gpar__cl_kernel_source(gpar__bdev *dev, const char *target, const gpar__kernel_def *def, char **src,
                                        char *opts, size_t optcap);
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

/* ---- opencl_probe.c ---- */

/* A device's string info `what` into out (cap bytes, always terminated; "" on failure). */
GPAR__HIDDEN void gpar__cl_str(cl_device_id d, cl_device_info what, char *out, size_t cap);
/* The backend's open (every device of every platform; none is GPAR_ENODEV) and close entries. */
GPAR__HIDDEN int gpar__cl_open(const gpar_config *cfg, int lanes, gpar__backend **out, int *ndev);
GPAR__HIDDEN void gpar__cl_close(gpar__backend *be);

/* ---- opencl_device.c: the device_info, peer_ok, can_wait, device_open, device_close, native and
 * lane_sync entries ---- */

GPAR__HIDDEN int gpar__cl_device_info(gpar__backend *be, int idx, gpar_device_props *info);
GPAR__HIDDEN int gpar__cl_peer_ok(gpar__backend *be, int src_idx, int dst_idx);
GPAR__HIDDEN int gpar__cl_can_wait(gpar__backend *be, int producer_idx, int consumer_idx);
GPAR__HIDDEN int gpar__cl_device_open(gpar__backend *be, int idx, gpar__bdev **out);
GPAR__HIDDEN void gpar__cl_device_close(gpar__bdev *dev);
GPAR__HIDDEN int gpar__cl_native(gpar__bdev *dev, int lane, gpar_native *out);
GPAR__HIDDEN int gpar__cl_lane_sync(gpar__bdev *dev, int lane);

/* ---- opencl_memory.c: the memory entries ---- */

GPAR__HIDDEN int gpar__cl_mem_alloc(gpar__bdev *dev, size_t bytes, void **mem);
GPAR__HIDDEN void gpar__cl_mem_free(gpar__bdev *dev, void *mem);
GPAR__HIDDEN int gpar__cl_host_alloc(gpar__backend *be, size_t bytes, void **ptr);
GPAR__HIDDEN void gpar__cl_host_free(gpar__backend *be, void *ptr);
GPAR__HIDDEN int gpar__cl_host_register(gpar__backend *be, void *ptr, size_t bytes, void **token);
GPAR__HIDDEN void gpar__cl_host_unregister(gpar__backend *be, void *token);

/* ---- opencl_copy.c: the copy and fill entries ---- */

GPAR__HIDDEN int gpar__cl_copy(gpar__bdev *dev, int lane, const gpar__copy_args *a);
GPAR__HIDDEN int gpar__cl_fill(gpar__bdev *dev, int lane, void *mem, size_t off, size_t bytes, unsigned char value);

/* ---- opencl_events.c: the event entries ---- */

GPAR__HIDDEN int gpar__cl_event_record(gpar__bdev *dev, int lane, unsigned flags, gpar__event **out);
GPAR__HIDDEN int gpar__cl_event_wait(gpar__bdev *dev, int lane, gpar__event *e);
GPAR__HIDDEN int gpar__cl_event_query(gpar__event *e);
GPAR__HIDDEN int gpar__cl_event_sync(gpar__event *e);
GPAR__HIDDEN void gpar__cl_event_release(gpar__event *e);
GPAR__HIDDEN int gpar__cl_event_elapsed(gpar__event *start, gpar__event *end, double *ms);

/* ---- shared by the backend's files ---- */

/* Each enqueue keeps its event as the lane's last command (keep_last), and is flushed so the
 * device starts it without waiting for a later flush (set_last). NVIDIA batches unflushed
 * commands, and a queue waiting on an unflushed event of another queue may never see it
 * submitted: kernel launches, which flush only every GPAR__CL_FLUSH_EVERY, leave the flush of an
 * event that goes out to event_record. */
static inline void gpar__cl_keep_last(gpar__cllane *ln, cl_event ev) {
  if (ln->last) clReleaseEvent(ln->last);
  ln->last = ev;
  atomic_store_explicit(&ln->dirty, 0, memory_order_relaxed);
}
static inline void gpar__cl_set_last(gpar__cllane *ln, cl_event ev) {
  gpar__cl_keep_last(ln, ev);
  clFlush(ln->q);
  ln->unflushed = 0;
}

/* Something the backend cannot see was enqueued on the lane: `last` no longer orders it. */
static inline void gpar__cl_mark_dirty(gpar__cllane *ln) { atomic_store_explicit(&ln->dirty, 1, memory_order_relaxed); }

/* After an enqueue that gave event ev, or none (ev NULL: the core asked for no event after it):
 * ev becomes the lane's last command, or the lane is marked dirty and flushed. */
static inline void gpar__cl_enqueued(gpar__cllane *ln, cl_event ev) {
  if (ev) {
    gpar__cl_set_last(ln, ev);
  } else {
    gpar__cl_mark_dirty(ln);
    clFlush(ln->q);
    ln->unflushed = 0;
  }
}

/* Kernel launches flush their lane once per this many (and event_record before an event goes
 * out), rather than each: the hand-written loop makes no clFlush at all. */
#define GPAR__CL_FLUSH_EVERY 16

#endif
