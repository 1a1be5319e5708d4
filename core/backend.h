/* backend.h: the one table of function pointers through which the device-neutral core drives a
 * backend (host CPU, CUDA, OpenCL). Backends hold no dependency logic: the core decides order,
 * picks the lane, makes lanes wait on producers' events and retires ops when events complete. */
#ifndef GPAR_CORE_BACKEND_H
#define GPAR_CORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "gpar.h"
#include "gpar_transport.h"

#define GPAR__HIDDEN __attribute__((visibility("hidden")))
/* Thread-local state read on every op: the initial-exec model reaches it without a call to
 * __tls_get_addr (measured: 2% of an empty op's instructions). It takes a little of the static
 * TLS glibc keeps for libraries opened with dlopen, so only small variables use it. */
#define GPAR__TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* Lanes of one device: in-order streams / queues. Copies never share a compute lane. A GPU
 * device has `lanes` compute lanes, 0 .. lanes - 1 (at most GPAR__COMPUTE_LANES_MAX; how many is
 * decided once, by gpar_init, and handed to the backend's open), then the copy lanes; the engine
 * picks a compute lane for each op (core/engine/lanes.c), and each compute lane has its own BLAS
 * handle or plan cache in the backend. */
#define GPAR__COMPUTE_LANES_MAX 8
enum gpar__lane {
  GPAR__LANE_COMPUTE = 0,                    /* the first compute lane; compute lane k is lane k */
  GPAR__LANE_H2D = GPAR__COMPUTE_LANES_MAX, /* host-to-device copies */
  GPAR__LANE_D2H,                            /* device-to-host copies */
  GPAR__LANE_PEER,                           /* device copies and collectives (run on the source) */
  GPAR__NLANES                               /* lanes a device may have */
};

/* Whether lane is a compute lane, and whether a device with `lanes` compute lanes has it. */
static inline int gpar__lane_is_compute(int lane) { return lane >= 0 && lane < GPAR__COMPUTE_LANES_MAX; }
static inline int gpar__lane_in_use(int lane, int lanes) { return lane < lanes || lane >= GPAR__LANE_H2D; }
/* The compute lanes per device of a backend whose default is dflt, for cfg: cfg->lanes when set
 * (> 0), else dflt, within 1 .. GPAR__COMPUTE_LANES_MAX (decided once, by gpar_init). */
static inline int gpar__lanes_of(const gpar_config *cfg, int dflt) {
  int n = cfg->lanes > 0 ? cfg->lanes : dflt;
  return n < 1 ? 1 : n > GPAR__COMPUTE_LANES_MAX ? GPAR__COMPUTE_LANES_MAX : n;
}

typedef struct gpar__backend gpar__backend; /* one backend instance (opaque to the core) */
typedef struct gpar__bdev gpar__bdev;       /* one opened device of a backend (opaque) */
typedef struct gpar__event gpar__event;     /* one recorded event (opaque, pooled by the backend) */

/* What a copy moves. Device memory is the handle mem_alloc returned (CUDA device pointer,
 * cl_mem); host memory is a plain pointer. Offsets are in bytes. */
typedef enum {
  GPAR__COPY_H2D,  /* dst: device memory of this device; src: host pointer */
  GPAR__COPY_D2H,  /* dst: host pointer; src: device memory of this device */
  GPAR__COPY_D2D,  /* both device memory of this device */
  GPAR__COPY_PEER, /* src: device memory of this device; dst: device memory of peer */
  GPAR__COPY_H2H   /* host backend only: memcpy */
} gpar__copy_kind;

typedef struct gpar__copy_args {
  gpar__copy_kind kind;
  void *dst;
  size_t dst_off;
  void *src;
  size_t src_off;
  size_t bytes;
  gpar__bdev *peer; /* GPAR__COPY_PEER: the destination device */
} gpar__copy_args;

/* GEMM, GEMV and level-1 BLAS arguments, and the GEMM plan key (backend_blas.h). */
#include "backend_blas.h"
/* Kernels' and array ops' arguments (backend_kernel.h). */
#include "backend_kernel.h"
/* f32 <-> f16 / bf16 conversions (backend_dtype.h). */
#include "backend_dtype.h"

/* A reduction on the CPU (collectives staged through host memory): dst[0] = src[0] op src[1]
 * op ... (count elements of type dtype, elem_size bytes each, op a gpar_redop), then dst[1..] =
 * dst[0]. dst[0] aliases no source; dst[1..] may alias sources. */
typedef struct gpar__reduce_args {
  int elem_size;
  int op;
  size_t count;
  int nsrc, ndst;
  void **src, **dst; /* host pointers, offsets applied */
  int dtype;         /* gpar_dtype */
} gpar__reduce_args;

/* One member's part of a collective run by the backend's collective library (NCCL): the
 * backend's communicator from comm_create and this member's rank in it. Offset in bytes. */
typedef struct gpar__coll_args {
  int kind;  /* gpar_coll_kind */
  void *comm;
  int rank;
  void *mem;
  size_t off;
  size_t count;
  int elem_size;
  int op;    /* gpar_redop */
  int root;
  int warned; /* core: the watchdog has reported it */
  int dtype;  /* gpar_dtype (elem_size bytes each) */
} gpar__coll_args;

/* Flags for event_record. */
enum { GPAR__EVENT_TIMING = 1 };

/* The table. Every call returns a gpar status; on failure it calls gpar__errorf() so the
 * message names the vendor call and error (e.g. "cudaMemcpyAsync: cudaErrorInvalidValue").
 * Entries marked optional may be NULL. Calls on one gpar__bdev come from that device's
 * dispatcher thread only (mem_alloc/mem_free/native/lane_sync may come from any thread and must
 * be thread-safe). Event calls may come from the device's completion thread. */
typedef struct gpar__backend_ops {
  const char *name; /* "host", "cuda", "opencl" */
  int id;           /* GPAR_BACKEND_* */
  /* 1: ops are enqueued on lanes and ordered by events (GPU backends). 0: ops run to completion
   * synchronously in the call (host backend), on the core's CPU worker threads. */
  int ordered_by_events;
  /* Compute lanes a device of this backend has when gpar_config.lanes is 0 (event backends). */
  int lanes_default;
  /* 1: a host-to-device copy may read its host source when enqueued rather than when its lane
   * reaches it, so the core must not order it behind a producer's event (it waits for the
   * producer to retire instead). Seen on NVIDIA's OpenCL; CUDA and PoCL order such reads. */
  int h2d_reads_at_enqueue;

  /* Probe. No device: GPAR_ENODEV with the reason in gpar__errorf's message (kept for
   * gpar_backend_status, printed only when the caller named the backend); not an error. */
  int (*open)(const gpar_config *cfg, int lanes, gpar__backend **be, int *ndev); /* lanes: compute lanes per device */
  void (*close)(gpar__backend *be);
  /* Fill info; peer_mask uses backend-local indices (the core remaps it to the flat list). */
  int (*device_info)(gpar__backend *be, int idx, gpar_device_props *info);
  /* Create lanes (non-blocking streams / in-order queues), BLAS handles, pools. */
  int (*device_open)(gpar__backend *be, int idx, gpar__bdev **dev);
  void (*device_close)(gpar__bdev *dev); /* after every lane is idle */
  /* Bind the calling thread to the device (cudaSetDevice); optional. */
  int (*bind_thread)(gpar__bdev *dev);
  /* Native handles of a lane, for user functions. */
  int (*native)(gpar__bdev *dev, int lane, gpar_native *out);

  /* Device memory. Must not synchronise the device (pool / stream-ordered). */
  int (*mem_alloc)(gpar__bdev *dev, size_t bytes, void **mem);
  void (*mem_free)(gpar__bdev *dev, void *mem);
  /* Optional (NULL: gpar_buffer_import refuses the device with GPAR_ENOTSUP): check that bytes
   * at ptr, memory another library allocated, are usable by this device's ops and give the
   * handle they take (*mem; the core never passes it to mem_free). Any thread. */
  int (*mem_import)(gpar__bdev *dev, void *ptr, size_t bytes, void **mem);
  /* Pinned host memory usable by every device of every backend; optional (core falls back). */
  int (*host_alloc)(gpar__backend *be, size_t bytes, void **ptr);
  void (*host_free)(gpar__backend *be, void *ptr);
  /* Make host memory that another backend allocated (host_alloc) count as this backend's pinned
   * memory, so its copies to and from it run at full rate; optional. *token is what
   * host_unregister gets back (may be NULL). Slow (milliseconds): called once per pool block,
   * from any thread; the memory stays allocated until host_unregister returns. A failure leaves
   * nothing registered and the memory usable (slower) by plain copies. */
  int (*host_register)(gpar__backend *be, void *ptr, size_t bytes, void **token);
  void (*host_unregister)(gpar__backend *be, void *token);
  /* 1: this backend should allocate GPAR_HOST memory whenever it is open, the others register
   * it: its own host_register is only a hint to the driver (OpenCL's CL_MEM_USE_HOST_PTR), while
   * theirs pins whatever it is given (cudaHostRegister). See core/engine/pinned.c. */
  int host_alloc_preferred;

  /* Work on a lane. GPU backends enqueue and return; the host backend runs it. */
  int (*copy)(gpar__bdev *dev, int lane, const gpar__copy_args *a);
  int (*fill)(gpar__bdev *dev, int lane, void *mem, size_t off, size_t bytes, unsigned char value);
  int (*gemm)(gpar__bdev *dev, int lane, const gpar__gemm_args *a);
  /* Optional (NULL: the core refuses the call with GPAR_ENOTSUP and a message): the general GEMM
   * (strided batches, f16/bf16 operands with f32 sums), GEMV, AXPY, SCAL and DOT, each on the
   * lane the core picks (the compute lane); their rules are in backend_blas.h. */
  int (*gemm_ex)(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *a);
  int (*gemv)(gpar__bdev *dev, int lane, const gpar__gemv_args *a);
  int (*axpy)(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
  int (*scal)(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
  int (*dot)(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
  /* Optional, any thread: GEMMs this device ran through a plan cached per shape (CUDA:
   * cublasLt) and GEMMs it ran by the plain BLAS call instead (gpar_stats). */
  void (*gemm_counts)(gpar__bdev *dev, uint64_t *planned, uint64_t *fallback);
  /* Direct device-to-device copies from backend device src_idx to dst_idx possible. */
  int (*peer_ok)(gpar__backend *be, int src_idx, int dst_idx);

  /* Events (ordered_by_events backends only). */
  /* Record an event after all work enqueued so far on the lane, event_wait calls included. */
  int (*event_record)(gpar__bdev *dev, int lane, unsigned flags, gpar__event **ev);
  /* Optional, any thread: record an event after the work enqueued so far on another library's
   * native stream of this device (CUDA: a cudaStream_t; NULL: the legacy default stream), for
   * event_wait and event_release like event_record's (gpar_buffer_wait_native). */
  int (*event_record_native)(gpar__bdev *dev, void *stream, gpar__event **ev);
  /* Optional, any thread: make another library's native stream of this device (a per-thread
   * default stream is the calling thread's) wait on the device until ev, recorded on a lane,
   * completes (gpar_buffer_signal_native). */
  int (*native_wait_event)(gpar__bdev *dev, void *stream, gpar__event *ev);
  /* Make the lane wait (on the device, not the host) until ev has completed. ev may come from
   * another device for which can_wait() said yes. */
  int (*event_wait)(gpar__bdev *dev, int lane, gpar__event *ev);
  /* 1 done, 0 pending, negative status when the work before it failed. */
  int (*event_query)(gpar__event *ev);
  /* Block the calling thread until ev completes; GPAR_OK or the failure. */
  int (*event_sync)(gpar__event *ev);
  /* Return ev to the pool. */
  void (*event_release)(gpar__event *ev);
  /* Milliseconds between two timing events (optional). */
  int (*event_elapsed)(gpar__event *start, gpar__event *end, double *ms);
  /* Can a lane of device consumer_idx wait on an event recorded on producer_idx? */
  int (*can_wait)(gpar__backend *be, int producer_idx, int consumer_idx);
  /* Block until every op enqueued on the lane is done (error paths and shutdown only). */
  int (*lane_sync)(gpar__bdev *dev, int lane);

  /* Collectives (optional; all three or none). comm_create makes one communicator over the
   * backend devices bidx[0..n-1] (member i = rank i); coll enqueues member rank's part on the
   * lane (called from that device's dispatcher, one thread per device); comm_destroy after
   * every coll on it is done. */
  int (*comm_create)(gpar__backend *be, const int *bidx, int n, void **comm);
  int (*coll)(gpar__bdev *dev, int lane, const gpar__coll_args *a);
  void (*comm_destroy)(void *comm);
  /* Collective communicator health, any thread: GPAR_OK, or the communicator's failure
   * (ncclCommGetAsyncError) as a status with gpar__errorf's message. */
  int (*comm_check)(void *comm);
  /* Abort every collective in flight on the communicator (ncclCommAbort on every member);
   * returns when they are aborted, after which comm_destroy frees it. Any thread. */
  void (*comm_abort)(void *comm);
  /* CPU reduction for staged collectives (host backend). */
  int (*reduce)(gpar__bdev *dev, const gpar__reduce_args *a);
  /* Array ops in plain C on host memory (host backend; optional: GPU backends run them as
   * portable kernels). */
  int (*array)(gpar__bdev *dev, const gpar__array_args *a);
  /* Graphs (optional; from the device's dispatcher thread). graph_begin starts capturing the
   * work enqueued on `lane` and on every lane that waits on an event recorded there; the core
   * joins those lanes back into `lane` before graph_end, which ends the capture and, when graph
   * is not NULL, instantiates it (*graph: an opaque executable graph). graph == NULL discards a
   * failed capture: graph_end then joins what the core left unjoined and leaves no lane capturing,
   * so the part can be replayed eagerly right after. Between begin and end the core calls no
   * lane_sync or event_sync on this device. graph_launch enqueues a
   * whole executable graph on the lane; graph_destroy (any thread) frees one no longer running. */
  int (*graph_begin)(gpar__bdev *dev, int lane);
  int (*graph_end)(gpar__bdev *dev, int lane, void **graph);
  int (*graph_launch)(gpar__bdev *dev, int lane, void *graph);
  void (*graph_destroy)(gpar__bdev *dev, void *graph);
  /* Optional: the nodes and dependency edges of a graph graph_end made (gpar_graph_info). */
  void (*graph_shape)(gpar__bdev *dev, void *graph, uint64_t *nodes, uint64_t *edges);
  /* 1 when a capture between graph_begin and graph_end can take this copy; 0 makes the core
   * replay its part op by op without trying (optional; NULL: every copy can be captured). */
  int (*graph_copy_ok)(gpar__bdev *dev, const gpar__copy_args *a);

  /* Kernels (optional: all of kernel_target .. kernel_launch, or none; kernel_ident optional).
   * Every entry but kernel_launch is called from the thread that builds (any thread, several at
   * once). */
  /* What builds kernels for dev, in words that identify the binary it makes (compiler and its
   * version, the target: "NVRTC 13.0, sm_90"), and in files the paths (one per line) those
   * words were read from, whose change may change them; GPAR_ENOTSUP with the reason when dev
   * cannot build kernels (NVRTC absent, no compiler). */
  int (*kernel_target)(gpar__bdev *dev, char *buf, size_t cap, char *files, size_t fcap);
  /* Optional, where kernel_target is slow: cheap words that decide what kernel_target would say,
   * given its files unchanged (the compiler's command and where it is found; no compiler is
   * run or loaded). GPAR_ENOTSUP: none can be given (kernel_target is asked every time). */
  int (*kernel_ident)(gpar__bdev *dev, char *buf, size_t cap);
  /* The whole source of def for dev (dialect header, def->common, preamble, generated entry
   * point; malloc'ed) and its compile options (into opts), for target (kernel_target's words);
   * GPAR_ENOTSUP when dev cannot run def. */
  int (*kernel_source)(gpar__bdev *dev, const char *target, const gpar__kernel_def *def, char **src, char *opts,
                       size_t optcap);
  /* Compile src with opts into a binary (*bin malloc'ed, *len bytes) and give the compiler's
   * output (*log malloc'ed, or NULL). GPAR_EBUILD when the compiler rejects the source, its
   * message the first error lines. */
  int (*kernel_compile)(gpar__bdev *dev, const char *src, const char *opts, void **bin, size_t *len, char **log);
  /* Load a binary kernel_compile made (maybe in another process: the disk cache) and find kernel
   * name's entry point: *module, and its limits. A failure makes the core compile again. */
  int (*kernel_load)(gpar__bdev *dev, const void *bin, size_t len, const char *name, void **module,
                     gpar__klimits *lim);
  /* Free a module (no launch of it in flight). */
  void (*kernel_unload)(gpar__bdev *dev, void *module);
  /* Enqueue the launch on the lane (GPU: the dispatcher thread), or run it (host: a CPU worker,
   * several at once on disjoint ranges of groups). */
  int (*kernel_launch)(gpar__bdev *dev, int lane, void *module, const gpar__kernel_launch *l);
  /* Optional: what a kernel on dev is given for GPAR_HOST memory at ptr (CUDA: its mapped
   * address), or why it cannot reach it; NULL: GPAR_HOST memory is refused. */
  int (*kernel_host_ptr)(gpar__bdev *dev, void *ptr, void **mem);
  /* 1: a module serves only the device that loaded it (OpenCL, CUDA); 0: every device of the
   * same target (kernel_target's words) may launch it (the host). */
  int kernel_module_per_device;
} gpar__backend_ops;

/* The backends compiled in (each defined in its folder; listed by core/lifecycle/lifecycle.c). */
extern const gpar__backend_ops gpar__host_backend GPAR__HIDDEN;
/* GPU backends are weak: their address is NULL when configure left them out, so the core needs
 * no build-time #if to list them. */
extern const gpar__backend_ops gpar__cuda_backend GPAR__HIDDEN __attribute__((weak));
extern const gpar__backend_ops gpar__opencl_backend GPAR__HIDDEN __attribute__((weak));

/* Messages (core/error.c, the bottom of core/ with this header). Record a failure message for
 * the calling thread and return status (printf-style). */
GPAR__HIDDEN int gpar__errorf(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Diagnostics on stderr (e.g. "cuda: no device: cudaErrorInsufficientDriver"), unless quiet. */
GPAR__HIDDEN void gpar__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The calling thread's message (what gpar_last_error returns), set as is; the default text of
 * status when msg is NULL or empty. */
GPAR__HIDDEN const char *gpar__error_msg(void);
GPAR__HIDDEN void gpar__clear_error(void); /* "" */
GPAR__HIDDEN void gpar__set_error_msg(int status, const char *msg);
/* The first lines of a compiler's log that name an error (else its first lines), joined by " | ",
 * into out (kernel builds' GPAR_EBUILD messages). */
GPAR__HIDDEN void gpar__log_errors(const char *log, char *out, size_t cap);
/* Quiet diagnostics (gpar_config.quiet). */
GPAR__HIDDEN void gpar__set_quiet(int quiet);

/* The clock (core/clock.c, the bottom of core/ too): seconds on the monotonic clock, the one
 * behind gpar_now; for timestamps, spins, timeouts and watchdogs. */
GPAR__HIDDEN double gpar__now(void);

#endif
