/* gpar.h: the one public header of libgpar, an asynchronous operation engine that runs
 * independent work in parallel across devices (CPU, CUDA, OpenCL) and across their compute and
 * copy engines. Operations declare the buffers they read and write; the engine orders them by
 * those buffers alone, and the host blocks only in gpar_read and the gpar_wait calls. */
#ifndef GPAR_H
#define GPAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GPAR_BUILDING) && defined(__GNUC__)
#define GPAR_API __attribute__((visibility("default")))
#else
#define GPAR_API
#endif

/* Status codes: one X-macro gives the enum and the names (see gpar_strerror).
 * X(name, value, description) */
#define GPAR_STATUS_MAP(X)                                                          \
  X(OK, 0, "success")                                                               \
  X(EINVAL, -1, "invalid argument")                                                 \
  X(ENOMEM, -2, "out of host memory")                                               \
  X(EDEVMEM, -3, "out of device memory")                                            \
  X(ENODEV, -4, "no such device")                                                   \
  X(ERANGE, -5, "offset or size out of range")                                      \
  X(EBADBUF, -6, "invalid or released buffer")                                      \
  X(EENGINE, -7, "buffer belongs to another engine")                                \
  X(EALIAS, -8, "an output aliases an input")                                       \
  X(EDEPFAILED, -9, "an operation this one depends on failed")                      \
  X(EDEADLK, -10, "wait called from inside an operation")                           \
  X(ENOTSUP, -11, "not supported by this device")                                   \
  X(EBACKEND, -12, "device or vendor library error")                                \
  X(ESHUTDOWN, -13, "engine is shut down")                                          \
  X(EFAULT, -14, "injected fault")                                                  \
  X(ETIMEDOUT, -15, "timed out")

/* Every call that can fail returns one of these (GPAR_OK is zero, errors are negative). */
typedef enum {
#define GPAR__STATUS_ENUM(name, value, text) GPAR_##name = value,
  GPAR_STATUS_MAP(GPAR__STATUS_ENUM)
#undef GPAR__STATUS_ENUM
} gpar_status;

/* Short description of a status, e.g. "out of device memory"; never NULL. */
GPAR_API const char *gpar_strerror(int status);
/* Symbolic name of a status, e.g. "GPAR_EDEVMEM"; never NULL. */
GPAR_API const char *gpar_status_name(int status);
/* Detailed message of the last failure seen by the calling thread (argument checks, vendor
 * error names, the failure a wait reported); "" when none. Valid until the thread's next call. */
GPAR_API const char *gpar_last_error(void);

/* An engine: devices, buffers and the dependency tracker. Opaque: a gpar_engine pointer is a
 * handle, not an address, and the process never hands out the same one twice, so a shut-down
 * engine's handle stays refused (GPAR_ESHUTDOWN) whatever engines come later. */
typedef struct gpar_engine gpar_engine;

/* A buffer handle. Handles carry a 64-bit serial that the process never reuses, so a released,
 * foreign or shut-down handle is detected and reported (GPAR_EBADBUF / GPAR_EENGINE) rather than
 * dereferenced, however many buffers and engines come and go. id 0 is the null handle. */
typedef struct gpar_buffer {
  uint64_t id;     /* opaque: where the buffer lives */
  uint64_t serial; /* opaque: which buffer */
} gpar_buffer;

/* Device index meaning "pinned host memory usable by every device" (gpar_buffer_create). */
#define GPAR_HOST (-1)

/* Engine options. Initialise with gpar_config_init, then change fields. */
typedef struct gpar_config {
  int synchronous;      /* 1: every op completes before its submit returns (debugging). env GPAR_SYNC */
  int host_threads;     /* CPU worker threads; 0: one per core. env GPAR_HOST_THREADS */
  int tf32;             /* 1: allow TF32 tensor-core math for sgemm on GPUs. env GPAR_TF32 */
  unsigned backends;    /* bit mask of GPAR_BACKEND_*; 0: all built. env GPAR_BACKENDS=host,cuda,opencl */
  const char *trace_path; /* non-NULL: write a Chrome trace-event JSON here at shutdown ("": time ops, no file). env GPAR_TRACE */
  size_t pinned_limit;  /* most bytes of pinned host memory the pool may hold; 0: no limit. env GPAR_PINNED_LIMIT_MB */
  int quiet;            /* 1: no diagnostics on stderr about absent devices. env GPAR_QUIET */
} gpar_config;

/* Backend bits for gpar_config.backends and gpar_device_info.backend_id. */
enum { GPAR_BACKEND_HOST = 1, GPAR_BACKEND_CUDA = 2, GPAR_BACKEND_OPENCL = 4 };

/* Fill cfg with the defaults, then the environment overrides (GPAR_* variables below); fields
 * set after this call win over both. gpar_init(&eng, NULL) uses exactly this. */
GPAR_API void gpar_config_init(gpar_config *cfg);

/* Create an engine. cfg NULL: defaults plus environment overrides. Devices of every built
 * backend are probed; a backend with no device is not an error. */
GPAR_API int gpar_init(gpar_engine **eng, const gpar_config *cfg);
/* Once called, new calls from outside the engine's ops get GPAR_ESHUTDOWN; everything accepted
 * (including what running ops submit) drains until nothing is in flight; then the threads are
 * joined and every buffer, thread and device resource is freed. Returns the first error since
 * the last wait_all. Later calls with this engine or its buffers return GPAR_ESHUTDOWN or
 * GPAR_EBADBUF: engine and buffer handles carry serials the process never reuses. */
GPAR_API int gpar_shutdown(gpar_engine *eng);

/* Kind of device. */
typedef enum { GPAR_DEVICE_CPU = 0, GPAR_DEVICE_GPU = 1, GPAR_DEVICE_OTHER = 2 } gpar_device_type;

/* What gpar_device_info reports about one device of the flat list. (The typedef is named
 * gpar_device_props because C cannot give a type and the function the same ordinary name.) */
typedef struct gpar_device_info {
  char backend[16];       /* "host", "cuda" or "opencl" */
  int backend_id;         /* GPAR_BACKEND_* */
  int backend_index;      /* index of the device within its backend */
  char vendor[64];        /* e.g. "NVIDIA Corporation" */
  char name[128];         /* e.g. "NVIDIA H200" */
  gpar_device_type type;  /* CPU or GPU */
  uint64_t memory_bytes;  /* global memory */
  int copy_engines;       /* asynchronous copy engines (0 when unknown) */
  int compute_units;      /* SMs or compute units */
  uint64_t peer_mask;     /* bit j set: direct copies to device j of the flat list (j < 64) */
} gpar_device_props;

/* Number of devices in the flat list (host CPU included); negative status on error. */
GPAR_API int gpar_device_count(gpar_engine *eng);
/* Describe device dev (0 .. count-1). */
GPAR_API int gpar_device_info(gpar_engine *eng, int dev, gpar_device_props *info);
/* First device index of the given backend and type (-1 for any type), skipping `skip` matches;
 * GPAR_ENODEV when there is none. A convenience for picking "the i-th GPU". */
GPAR_API int gpar_device_find(gpar_engine *eng, int backend_id, int type, int skip);

/* Allocate bytes (> 0) on device dev, or pinned host memory with dev = GPAR_HOST.
 * Device memory comes from a pool or a stream-ordered allocator: creating never waits on a
 * device. Contents are undefined until written. On failure *buf is the null handle (id 0). */
GPAR_API int gpar_buffer_create(gpar_engine *eng, int dev, size_t bytes, gpar_buffer *buf);
/* Release a buffer. The memory is returned once every op already submitted on it is done;
 * the handle is invalid at once. */
GPAR_API int gpar_buffer_release(gpar_buffer buf);
/* Host pointer of a buffer in host memory (GPAR_HOST or a CPU device); NULL otherwise or on a
 * bad handle. Touch it only when no pending op writes it (after gpar_wait). */
GPAR_API void *gpar_buffer_host_ptr(gpar_buffer buf);
/* Native handle of the buffer's memory for use inside gpar_submit functions: a CUDA device
 * pointer, an OpenCL cl_mem, or a host pointer. NULL on a bad handle. */
GPAR_API void *gpar_buffer_native(gpar_buffer buf);
/* Size in bytes and device index of a buffer (GPAR_HOST for pinned host memory). */
GPAR_API int gpar_buffer_query(gpar_buffer buf, size_t *bytes, int *dev);

/* Copy bytes from src+src_off to dst+dst_off, between any two buffers on any devices. Returns
 * at once. Copying a buffer onto itself with overlapping ranges is GPAR_EALIAS. */
GPAR_API int gpar_copy(gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes);
/* Copy from user memory into dst+off. Returns at once; user_ptr may be reused on return (the
 * data is staged). */
GPAR_API int gpar_write(gpar_buffer dst, size_t off, const void *user_ptr, size_t bytes);
/* Copy src+off into user memory once earlier writes of src are done; returns when the data is
 * in user memory (other work keeps running meanwhile). Pageable memory goes through pinned
 * staging chunks. */
GPAR_API int gpar_read(gpar_buffer src, size_t off, void *user_ptr, size_t bytes);
/* Set bytes of dst from off to the byte value. Returns at once. */
GPAR_API int gpar_fill(gpar_buffer dst, size_t off, size_t bytes, unsigned char value);

/* Transpose flags for the GEMMs. */
typedef enum { GPAR_NO_TRANS = 0, GPAR_TRANS = 1 } gpar_trans;

/* C = alpha * op(A) * op(B) + beta * C in BLAS column-major form, on C's device. Offsets and
 * leading dimensions are in elements. A and B must live on C's device (or all three in host
 * memory). C may not overlap A or B (GPAR_EALIAS). beta == 0 makes C write-only.
 * Every operand is range-checked even when no element of it is read (k == 0 leaves A and B
 * unread, m or n == 0 all three): an empty matrix's offset must be at most its buffer's size
 * in elements, else GPAR_ERANGE. k == 0 computes C = beta * C. */
GPAR_API int gpar_sgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k,
                        float alpha, gpar_buffer a, size_t a_off, int lda,
                        gpar_buffer b, size_t b_off, int ldb,
                        float beta, gpar_buffer c, size_t c_off, int ldc);
/* Double-precision form of gpar_sgemm; GPAR_ENOTSUP on devices without fp64. */
GPAR_API int gpar_dgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k,
                        double alpha, gpar_buffer a, size_t a_off, int lda,
                        gpar_buffer b, size_t b_off, int ldb,
                        double beta, gpar_buffer c, size_t c_off, int ldc);

/* Native handles passed to a user function (gpar_submit). */
typedef struct gpar_native {
  const char *backend;   /* "host", "cuda" or "opencl" */
  int device;            /* device index in the flat list */
  int backend_index;     /* device index within its backend (CUDA ordinal, ...) */
  void *stream;          /* cudaStream_t, cl_command_queue, or NULL on the CPU */
  void *context;         /* cl_context on OpenCL, else NULL */
  void *blas;            /* cublasHandle_t on CUDA, else NULL */
} gpar_native;

/* A user operation. On the CPU it runs to completion; on a GPU it must only enqueue work on
 * native->stream (the engine records completion after it). Return GPAR_OK or an error. It must
 * not call gpar_wait/gpar_read (they return GPAR_EDEADLK there). */
typedef int (*gpar_user_fn)(const gpar_native *native, void *arg);

/* Run fn(native, arg) on device dev (GPAR_HOST: the CPU) after the ops it depends on through
 * its read and write sets. A buffer in both sets is read-write; listed twice is fine. */
GPAR_API int gpar_submit(gpar_engine *eng, int dev, gpar_user_fn fn, void *arg,
                         const gpar_buffer *reads, int nreads,
                         const gpar_buffer *writes, int nwrites);

/* Wait for every submitted op that writes buf; return the status of the last writer
 * (GPAR_EDEPFAILED when it was skipped because its input had failed). A failed buffer stays
 * failed: ops that read it are skipped, gpar_read of it returns GPAR_EDEPFAILED and copies nothing,
 * until an op that only writes it (fill, copy or write into it, GEMM with beta 0) succeeds. */
GPAR_API int gpar_wait(gpar_buffer buf);
/* Wait for everything submitted so far; return the first error since the last wait_all. */
GPAR_API int gpar_wait_all(gpar_engine *eng);

/* Counters of one engine, for tests and monitoring. */
typedef struct gpar_stats {
  uint64_t ops_submitted;   /* ops accepted */
  uint64_t ops_completed;   /* ops retired (any status) */
  uint64_t ops_failed;      /* ops retired with an error (skipped ones included) */
  uint64_t ops_in_flight;   /* submitted, not yet retired */
  uint64_t buffers_live;    /* buffers not yet freed (released ones with pending ops included) */
  uint64_t pinned_bytes_pool; /* pinned host bytes held by the pool (free + in use) */
  uint64_t events_live;     /* backend events held by the engine's ops (pools not counted) */
} gpar_stats;

/* Snapshot of the engine's counters. */
GPAR_API int gpar_stats_get(gpar_engine *eng, gpar_stats *stats);

/* Fault injection for tests: make the nth (1-based) later backend call of `kind` fail with
 * GPAR_EFAULT; n = 0 clears it. Kinds: "alloc", "pinned", "copy", "gemm", "fill", "user",
 * "event", "completion". Also set by env GPAR_FAULT=kind:n at gpar_init. */
GPAR_API int gpar_fault_inject(gpar_engine *eng, const char *kind, unsigned long n);

/* ---- Per-op host-time breakdown (issue 11) ----------------------------------------------
 * With tracing on (gpar_config.trace_path set; "" times ops without writing a trace file),
 * each retired op adds where its host time went. Means over the ops retired since the last
 * reset, in microseconds. The trace file carries the same phases per op (args.host_us). */
typedef struct gpar_breakdown {
  uint64_t ops;        /* ops measured */
  double submit_us;    /* public call entered -> op linked (checks, bookkeeping, lock waits) */
  double handoff_us;   /* op ready -> a CPU worker or GPU dispatcher took it */
  double dispatch_us;  /* running it: the CPU op itself, or the vendor calls that enqueue it */
  double complete_us;  /* run done -> completion seen under the engine lock (GPU: + device time) */
  double retire_us;    /* completion seen -> retired (successors released, buffers updated) */
} gpar_breakdown;

/* Mean breakdown of this engine's retired ops; reset != 0 starts a new measurement.
 * GPAR_ENOTSUP (with the means so far, all zero) when tracing is off. */
GPAR_API int gpar_breakdown_get(gpar_engine *eng, gpar_breakdown *bd, int reset);

#ifdef __cplusplus
}
#endif
#endif /* GPAR_H */
