/* gpar.h: the one public header of libgpar, an asynchronous operation engine that runs
 * independent work in parallel across devices (CPU, CUDA, OpenCL) and across their compute and
 * copy engines. Operations declare the buffers they read and write; the engine orders them by
 * those buffers alone, and the host blocks only in gpar_read and the gpar_wait calls.
 *
 * Conventions a caller can rely on:
 * - Zero sizes. A copy, write, read or fill of zero bytes is refused (GPAR_EINVAL, nothing
 *   enqueued), as is a buffer of zero bytes. A GEMM with m == 0 or n == 0, or with alpha == 0
 *   or k == 0 and beta == 1, is a BLAS quick return: GPAR_OK once its arguments check out,
 *   nothing enqueued.
 * - The BLAS rule. A GEMM with alpha == 0 or k == 0 does not read A or B (NaN or garbage there
 *   stays out, and they are not in its read set: it waits for no writer of them): it computes
 *   C = beta * C. beta == 0 makes C write-only in every GEMM: C gets
 *   exact results (zeros when alpha or k is 0) even where it held NaN, as reference BLAS does.
 *   Rows of C past m (ldc > m) are never touched. Every backend and device follows this.
 * - Overlap is checked by address range, not by element. gpar_copy within one buffer and a GEMM
 *   whose C shares a buffer with A or B are GPAR_EALIAS when the byte ranges [offset, offset +
 *   extent) overlap, where a matrix's extent runs from its first to its last element including
 *   the gaps of its leading dimension; interleaved matrices that share no element still count
 *   as overlapping.
 * - One call, one step in each buffer's order. A call that the engine carries out as several
 *   operations (a gpar_write or gpar_read in staging chunks, a gpar_copy staged through host
 *   memory, a graph launch, a collective) takes its place among other threads' calls on the
 *   same buffers as a whole, as one operation would: another thread's call on those buffers
 *   comes entirely before it or entirely after it, never between two of its chunks or steps.
 *   And it is applied whole or not at all: a call that fails while it is being built (no pinned
 *   staging for a later chunk, no memory) returns its error with nothing enqueued, and one that
 *   gpar_shutdown meets is either accepted whole (it runs during the drain) or refused with
 *   GPAR_ESHUTDOWN with nothing applied (a refused gpar_read wrote nothing into user memory).
 *
 * Contents (each a section below):
 *   1. Status codes, errors and the clock
 *   2. The engine and its configuration
 *   3. Devices
 *   4. Buffers and transfers
 *   5. Waits and user functions
 *   6. Element types and reductions
 *   7. BLAS
 *   8. Graphs: record once, replay many
 *   9. Portable kernels
 *  10. Array ops
 *  11. Elementwise maps
 *  12. Communicators and collectives
 *  13. Diagnostics: counters, breakdowns, backend and pinned status, fault injection
 * The kernel dialect's reference is the manual page gpar-kernel(7); what libgpar_mpi and
 * other transports use to run collectives across processes is in gpar_transport.h. */
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

/* =========================================================================================================
 * 1. Status codes, errors and the clock
 * ========================================================================================================= */

/* Status codes: one X-macro gives the enum and the names (see gpar_strerror).
 * X(name, value, description) */
#define GPAR_STATUS_MAP(X)                                            \
  X(OK, 0, "success")                                                 \
  X(EINVAL, -1, "invalid argument")                                   \
  X(ENOMEM, -2, "out of host memory")                                 \
  X(EDEVMEM, -3, "out of device memory")                              \
  X(ENODEV, -4, "no such device")                                     \
  X(ERANGE, -5, "offset or size out of range")                        \
  X(EBADBUF, -6, "invalid or released buffer")                        \
  X(EENGINE, -7, "buffer belongs to another engine")                  \
  X(EALIAS, -8, "an output aliases an input")                         \
  X(EDEPFAILED, -9, "an operation this one depends on failed")        \
  X(EDEADLK, -10, "wait called from inside an operation")             \
  X(ENOTSUP, -11, "not supported by this device")                     \
  X(EBACKEND, -12, "device or vendor library error")                  \
  X(ESHUTDOWN, -13, "engine is shut down")                            \
  X(EFAULT, -14, "injected fault")                                    \
  X(ETIMEDOUT, -15, "timed out")                                      \
  X(ERECORDING, -16, "not allowed while this thread records a graph") \
  X(EBUILD, -17, "kernel build failed")

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

/* Record status and msg as the calling thread's last error (what gpar_last_error returns, and
 * what an op's failure carries when called inside a user function); returns status. */
GPAR_API int gpar_error_set(int status, const char *msg);

/* Seconds on the monotonic clock libgpar uses for traces, timeouts and benchmarks (an arbitrary
 * origin: subtract two readings). Thread-safe; needs no engine. */
GPAR_API double gpar_now(void);

/* =========================================================================================================
 * 2. The engine and its configuration
 * ========================================================================================================= */

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
  int synchronous;   /* 1: every op completes before its submit returns (debugging). env GPAR_SYNC */
  int host_threads;  /* CPU worker threads; 0: one per core. env GPAR_HOST_THREADS */
  int tf32;          /* 1: allow TF32 tensor-core math for sgemm on GPUs. env GPAR_TF32 */
  unsigned backends; /* bit mask of GPAR_BACKEND_*; 0: all built. env GPAR_BACKENDS=host,cuda,opencl */
  /* non-NULL: write a Chrome trace-event JSON here at shutdown ("": time ops, no file). env GPAR_TRACE */
  const char *trace_path;
  size_t pinned_limit; /* most bytes of pinned host memory the pool may hold; 0: no limit. env GPAR_PINNED_LIMIT_MB */
  int quiet;           /* 1: no diagnostics on stderr about absent devices. env GPAR_QUIET */
  int cublaslt;        /* CUDA sgemm/dgemm: 0 (default) or 1: through cublasLt plans cached per shape, with
                           cublasSgemm/Dgemm where cublasLt has no algorithm; -1: cublasSgemm/Dgemm always.
                           env GPAR_CUBLASLT=0 gives -1, =1 gives 1 */
  double comm_timeout; /* seconds before a communicator's operation that does not complete fails (libgpar_mpi) or
                           is named and aborted (NCCL); 0: 300. env GPAR_COMM_TIMEOUT */
  /* Kernels (gpar_kernel_*). Strings must stay valid while the engine lives. */
  const char *kernel_cache_dir; /* disk cache of built kernels; NULL: $XDG_CACHE_HOME/gpar, else $HOME/.cache/gpar;
                                   "": no disk cache. env GPAR_CACHE_DIR; GPAR_CACHE=0 gives "". Made 0700; used only
                                   when owned by the effective user and not group/other-writable (see Kernels) */
  const char *kernel_cc;        /* host kernels' compiler command (flags allowed); NULL: "cc". env GPAR_CC, else CC */
  const char *kernel_nvrtc;     /* NVRTC library CUDA kernels dlopen; NULL: libnvrtc.so.13, then libnvrtc.so.12 and
                                   libnvrtc.so. env GPAR_NVRTC */
  int lanes;                    /* compute lanes per GPU: in-order streams (CUDA) or queues (OpenCL), each with its own
                                   BLAS handle and issuing thread; the engine puts each op on one (a chain stays
                                   on its lane, work that fills the GPU takes the first, small independent ops
                                   spread when the first is busy). 0: each backend's default (CUDA 4, OpenCL 1);
                                   1: one lane, every op in issue order; at most 8. env GPAR_LANES */
} gpar_config;

/* Backend bits for gpar_config.backends and gpar_device_info.backend_id. */
enum { GPAR_BACKEND_HOST = 1, GPAR_BACKEND_CUDA = 2, GPAR_BACKEND_OPENCL = 4 };

/* Fill cfg with the defaults, then the environment overrides (GPAR_* variables below); fields
 * set after this call win over both. gpar_init(&eng, NULL) uses exactly this. */
GPAR_API void gpar_config_init(gpar_config *cfg);

/* The configuration eng runs with: its gpar_config with the defaults filled in (host_threads,
 * backends, comm_timeout, kernel_cache_dir, kernel_cc, lanes: the compute lanes of its first
 * GPU, what was asked for without one; each device's are in gpar_device_props.compute_lanes). */
GPAR_API int gpar_config_get(gpar_engine *eng, gpar_config *cfg);

/* Create an engine. cfg NULL: defaults plus environment overrides. Devices of every built
 * backend are probed; a backend with no device is not an error. */
GPAR_API int gpar_init(gpar_engine **eng, const gpar_config *cfg);
/* Once called, new calls from outside the engine's ops get GPAR_ESHUTDOWN; everything accepted
 * (including what running ops submit, and whole calls of other threads already inside the
 * engine: see "one call, one step" above) drains until nothing is in flight; then the threads are
 * joined and every buffer, thread and device resource is freed. Returns the first error since
 * the last wait_all. Later calls with this engine or its buffers return GPAR_ESHUTDOWN or
 * GPAR_EBADBUF: engine and buffer handles carry serials the process never reuses. */
GPAR_API int gpar_shutdown(gpar_engine *eng);

/* =========================================================================================================
 * 3. Devices
 * ========================================================================================================= */

/* Kind of device. */
typedef enum { GPAR_DEVICE_CPU = 0, GPAR_DEVICE_GPU = 1, GPAR_DEVICE_OTHER = 2 } gpar_device_type;

/* What gpar_device_info reports about one device of the flat list. (The typedef is named
 * gpar_device_props because C cannot give a type and the function the same ordinary name.) */
typedef struct gpar_device_info {
  char backend[16];      /* "host", "cuda" or "opencl" */
  int backend_id;        /* GPAR_BACKEND_* */
  int backend_index;     /* index of the device within its backend */
  char vendor[64];       /* e.g. "NVIDIA Corporation" */
  char name[128];        /* e.g. "NVIDIA H200" */
  gpar_device_type type; /* CPU or GPU */
  uint64_t memory_bytes; /* global memory */
  int copy_engines;      /* asynchronous copy engines (0 when unknown) */
  int compute_units;     /* SMs or compute units */
  uint64_t peer_mask;    /* bit j set: direct copies to device j of the flat list (j < 64) */
  /* Versions, for benchmark records ("" when unknown). driver_version: the vendor driver (CUDA:
   * cudaDriverGetVersion as "13.0"; OpenCL: CL_DRIVER_VERSION). runtime_version: the runtime
   * and BLAS the backend calls (e.g. "CUDA runtime 13.0, cuBLAS 13.0.2"; "CLBlast 1.5.3;
   * OpenCL 3.0 PoCL ..." from the platform; the host's openblas_get_config()). */
  char driver_version[64];
  char runtime_version[128];
  int compute_lanes; /* GPU: compute lanes (streams or queues) the engine spreads independent ops over; CPU 0 */
} gpar_device_props;

/* Number of devices in the flat list (host CPU included); negative status on error. */
GPAR_API int gpar_device_count(gpar_engine *eng);
/* Describe device dev (0 .. count-1). */
GPAR_API int gpar_device_info(gpar_engine *eng, int dev, gpar_device_props *info);
/* First device index of the given backend and type (-1 for any type), skipping `skip` matches;
 * GPAR_ENODEV when there is none. A convenience for picking "the i-th GPU". */
GPAR_API int gpar_device_find(gpar_engine *eng, int backend_id, int type, int skip);

/* =========================================================================================================
 * 4. Buffers and transfers
 * ========================================================================================================= */

/* Allocate bytes (> 0) on device dev, or pinned host memory with dev = GPAR_HOST.
 * Device memory comes from a pool or a stream-ordered allocator: creating never waits on a
 * device. Contents are undefined until written. On failure *buf is the null handle (id 0). */
GPAR_API int gpar_buffer_create(gpar_engine *eng, int dev, size_t bytes, gpar_buffer *buf);
/* Make bytes at ptr, memory another library allocated (a NumPy array, a PyTorch or CuPy
 * tensor), a buffer of device dev, without copying it: ops order on it like on any buffer.
 * ptr is a host pointer on the CPU device (the host backend's: gpar_device_find(eng,
 * GPAR_BACKEND_HOST, -1, 0)) or a device pointer on a CUDA device, checked there with
 * cudaPointerGetAttributes; other devices (OpenCL) give GPAR_ENOTSUP, GPAR_HOST GPAR_EINVAL.
 * Align ptr for the element types ops use on it. libgpar calls release(arg) (may be NULL) once
 * the buffer is released and every op submitted on it is done, or at gpar_shutdown: then the
 * owner may free the memory. It runs on any of libgpar's threads, possibly inside the engine,
 * so it must neither block nor call libgpar. On failure nothing is registered and release is
 * not called: the memory stays the caller's. Importing memory twice, or a buffer's own memory
 * (gpar_buffer_native), gives buffers that alias: the engine orders no op of one after the
 * other's, so wait on one (gpar_wait) before using the other. */
GPAR_API int gpar_buffer_import(gpar_engine *eng, int dev, void *ptr, size_t bytes, void (*release)(void *arg),
                                void *arg, gpar_buffer *buf);
/* Order buf after the work that another library enqueued so far on its own native stream of
 * buf's device (CUDA: a cudaStream_t; NULL: the legacy default stream), e.g. the stream a DLPack
 * producer was told to order its writes on: the next ops on buf wait for that work on the device,
 * the host does not. An op in buf's order (a writer: reads of buf issued before it come first).
 * GPAR_OK with nothing to do for host memory; GPAR_ENOTSUP on a device without native streams
 * (OpenCL); GPAR_ERECORDING while the thread records a graph. */
GPAR_API int gpar_buffer_wait_native(gpar_buffer buf, void *stream);
/* Order another library's native stream of buf's device (CUDA: a cudaStream_t; NULL: the legacy
 * default stream) after libgpar's ops on buf submitted so far, readers and writers, e.g. the
 * stream a DLPack consumer named: the stream waits on the device; the caller waits only until
 * libgpar has issued those ops, not for the device. Host memory: waits for buf's writers on the
 * host, as gpar_wait. GPAR_EDEPFAILED when a writer failed (the stream is not ordered);
 * GPAR_ENOTSUP on a device without native streams (OpenCL); GPAR_ERECORDING while recording;
 * GPAR_EDEADLK from inside an op. */
GPAR_API int gpar_buffer_signal_native(gpar_buffer buf, void *stream);
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
 * data is staged in pinned memory: a write to a device buffer stages every 8 MiB chunk before it
 * enqueues any, so it needs pinned memory for all of it, within gpar_config.pinned_limit). */
GPAR_API int gpar_write(gpar_buffer dst, size_t off, const void *user_ptr, size_t bytes);
/* Copy src+off into user memory once earlier writes of src are done; returns when the data is
 * in user memory (other work keeps running meanwhile). Pageable memory goes through pinned
 * staging chunks (at most 4 of 16 MiB, reused in turn); the read is still one step in src's
 * order: it sees src as it was after the writes submitted before it, whole, whatever other
 * threads write to src meanwhile (their writes wait for it). */
GPAR_API int gpar_read(gpar_buffer src, size_t off, void *user_ptr, size_t bytes);
/* Set bytes of dst from off to the byte value. Returns at once. */
GPAR_API int gpar_fill(gpar_buffer dst, size_t off, size_t bytes, unsigned char value);

/* =========================================================================================================
 * 5. Waits and user functions
 * ========================================================================================================= */

/* Wait for every submitted op that writes buf; return the status of the last writer
 * (GPAR_EDEPFAILED when it was skipped because its input had failed). A failed buffer stays
 * failed: ops that read it are skipped, gpar_read of it returns GPAR_EDEPFAILED and copies nothing,
 * until an op that only writes it (fill, copy or write into it, GEMM with beta 0) succeeds. */
GPAR_API int gpar_wait(gpar_buffer buf);
/* Wait for everything submitted so far; return the first error since the last wait_all. */
GPAR_API int gpar_wait_all(gpar_engine *eng);

/* Native handles passed to a user function (gpar_submit). */
typedef struct gpar_native {
  const char *backend; /* "host", "cuda" or "opencl" */
  int device;          /* device index in the flat list */
  int backend_index;   /* device index within its backend (CUDA ordinal, ...) */
  void *stream;        /* cudaStream_t, cl_command_queue, or NULL on the CPU */
  void *context;       /* cl_context on OpenCL (shared by every engine of the process: do not release it), else NULL */
  void *blas;          /* cublasHandle_t on CUDA, else NULL */
} gpar_native;

/* A user operation. On the CPU it runs to completion; on a GPU it must only enqueue work on
 * native->stream (the engine records completion after it). Return GPAR_OK or an error. It must
 * not call gpar_wait/gpar_read (they return GPAR_EDEADLK there). */
typedef int (*gpar_user_fn)(const gpar_native *native, void *arg);

/* Run fn(native, arg) on device dev (GPAR_HOST: the CPU) after the ops it depends on through
 * its read and write sets. A buffer in both sets is read-write; listed twice is fine. */
GPAR_API int gpar_submit(gpar_engine *eng, int dev, gpar_user_fn fn, void *arg, const gpar_buffer *reads, int nreads,
                         const gpar_buffer *writes, int nwrites);

/* =========================================================================================================
 * 6. Element types and reductions
 * ========================================================================================================= */

/* Element types (collectives, mixed-precision GEMM, array ops); GPAR_HALF and GPAR_BFLOAT16 are
 * IEEE binary16 and bfloat16 storage, uint16_t in memory. */
typedef enum { GPAR_FLOAT = 0, GPAR_DOUBLE = 1, GPAR_HALF = 2, GPAR_BFLOAT16 = 3, GPAR_INT32 = 4 } gpar_dtype;

/* Reductions: of collectives (gpar_allreduce ...) and of array reductions (gpar_reduce_range ...). */
typedef enum { GPAR_SUM = 0, GPAR_MAX = 1, GPAR_MIN = 2 } gpar_redop;

/* Size in bytes of one element of dtype (0 for an unknown type). */
GPAR_API size_t gpar_dtype_size(gpar_dtype dtype);

/* f32 to f16 and to bf16 round to nearest, ties to even (as cuBLAS, CUDA's __float2half_rn and
 * OpenCL's vstore_half_rte do); f16 overflow gives infinity, f16 underflow gives subnormals and
 * zero with the sign kept. f16 and bf16 to f32 are exact. NaNs follow numpy's rule, the same bits
 * as kernels on every backend: f16 -> f32 keeps the sign and the payload (shifted left 13, so a
 * signalling NaN stays one: 0x7c01 -> 0x7f802000); f32 -> f16 keeps the sign and the payload's
 * top 10 bits, setting the lowest when those are all zero (0x7fc00000 -> 0x7e00, 0x7f800001 ->
 * 0x7c01). f32 -> bf16 keeps a NaN's sign and top 7 payload bits and makes it quiet. */
GPAR_API uint16_t gpar_half_from_float(float x);
GPAR_API float gpar_half_to_float(uint16_t h);
GPAR_API uint16_t gpar_bfloat16_from_float(float x);
GPAR_API float gpar_bfloat16_to_float(uint16_t h);
/* Convert n elements of host memory from src (of src_type) to dst (of dst_type), for any pair
 * of GPAR_FLOAT, GPAR_HALF and GPAR_BFLOAT16 (one rounding, as above; equal types copy). dst
 * and src must not overlap unless equal with equal types. GPAR_EINVAL for another type or a
 * NULL pointer with n > 0. */
GPAR_API int gpar_convert(void *dst, gpar_dtype dst_type, const void *src, gpar_dtype src_type, size_t n);

/* =========================================================================================================
 * 7. BLAS
 * ========================================================================================================= */

/* Transpose flags for the GEMMs. */
typedef enum { GPAR_NO_TRANS = 0, GPAR_TRANS = 1 } gpar_trans;

/* C = alpha * op(A) * op(B) + beta * C in BLAS column-major form, on C's device. Offsets and
 * leading dimensions are in elements. A and B must live on C's device (or all three in host
 * memory). C may not overlap A or B (GPAR_EALIAS). beta == 0 makes C write-only.
 * Every operand is range-checked even when no element of it is read (k == 0 leaves A and B
 * unread, m or n == 0 all three): an empty matrix's offset must be at most its buffer's size
 * in elements, else GPAR_ERANGE. k == 0 computes C = beta * C. */
GPAR_API int gpar_sgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, float alpha, gpar_buffer a,
                        size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, float beta, gpar_buffer c,
                        size_t c_off, int ldc);
/* Double-precision form of gpar_sgemm; GPAR_ENOTSUP on devices without fp64. */
GPAR_API int gpar_dgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, double alpha, gpar_buffer a,
                        size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, double beta, gpar_buffer c,
                        size_t c_off, int ldc);

/* Column-major, offsets, leading dimensions and strides in elements of the operand's type. Each
 * call is one op on its output's device (C, y, x for SCAL, the result for DOT) through cuBLAS /
 * cublasLt, CLBlast or OpenBLAS; every other operand must be on that device (or all in host
 * memory: GPAR_HOST buffers and the CPU device's), else GPAR_EINVAL. The GEMM rules at the head
 * of this file hold for each call:
 * - Arguments are checked before anything is enqueued: negative sizes, strides or batch counts,
 *   a leading dimension below max(1, rows), an increment below 1 (GPAR_EINVAL); a bad handle
 *   (GPAR_EBADBUF, GPAR_EENGINE); any operand past its buffer (GPAR_ERANGE), the unread ones
 *   included: an operand with no element (a k == 0 matrix, batch 0) must still have its offset,
 *   and that of its last batch entry, within its buffer; an output overlapping an input in one
 *   buffer, by byte range over all batch entries (GPAR_EALIAS), or C's batch entries
 *   overlapping each other (stride_c below C's extent, GPAR_EALIAS).
 * - A quick return enqueues nothing once the arguments check out: GEMM with m, n or batch 0;
 *   GEMV with m or n 0 (reference BLAS: y untouched, not scaled by beta); AXPY and SCAL with
 *   n 0; AXPY with alpha 0.
 * - alpha == 0 (GEMM: or k == 0) reads no element of A, B (GEMV: A, x), which are then left out
 *   of the op's read set: C = beta * C. beta == 0 makes C (GEMV: y) write-only with exact
 *   results even where it held NaN; SCAL with alpha == 0 writes exact zeros the same way. Rows
 *   of C past m and vector elements between increments are never touched.
 * - Read and write sets are exact: a batched call is one op over the whole strided ranges.
 * - The injected fault kind "gemm" covers every BLAS call.
 * Strided batches: entry i of A starts at a_off + i * stride_a (likewise B and C); strides 0
 * share one A or B across the batch (C's may not). */

/* C_i = alpha * op(A_i) * op(B_i) + beta * C_i for i < batch (cublasSgemmStridedBatched). */
GPAR_API int gpar_sgemm_strided_batched(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, float alpha,
                                        gpar_buffer a, size_t a_off, int lda, long long stride_a, gpar_buffer b,
                                        size_t b_off, int ldb, long long stride_b, float beta, gpar_buffer c,
                                        size_t c_off, int ldc, long long stride_c, int batch);
/* Double precision; GPAR_ENOTSUP on devices without fp64. */
GPAR_API int gpar_dgemm_strided_batched(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, double alpha,
                                        gpar_buffer a, size_t a_off, int lda, long long stride_a, gpar_buffer b,
                                        size_t b_off, int ldb, long long stride_b, double beta, gpar_buffer c,
                                        size_t c_off, int ldc, long long stride_c, int batch);
/* Mixed precision, strided batched (batch 1 for one GEMM): A and B of ab_type (GPAR_HALF or
 * GPAR_BFLOAT16; GPAR_FLOAT gives gpar_sgemm_strided_batched), C of c_type (GPAR_FLOAT, or
 * ab_type: results rounded to nearest even), products summed in f32 (cublasGemmEx with
 * CUBLAS_COMPUTE_32F; no TF32 rounding of f32 operands). Other types: GPAR_EINVAL. CUDA:
 * cublasLt / cublasGemmStridedBatchedEx natively. Host: cblas_sbgemm for bf16 where this
 * OpenBLAS has it, else (and for f16) the operands converted to f32, then cblas_sgemm. OpenCL:
 * no f16 arithmetic is assumed (neither PoCL nor NVIDIA reports cl_khr_fp16): the operands are
 * converted to f32 by a small OpenCL C program into temporary device buffers of the lane, then
 * CLBlast's SGEMM runs, then C is converted back when it is f16/bf16; results match an f32 GEMM
 * of the converted operands. */
GPAR_API int gpar_gemm_ex(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, float alpha, gpar_dtype ab_type,
                          gpar_buffer a, size_t a_off, int lda, long long stride_a, gpar_buffer b, size_t b_off,
                          int ldb, long long stride_b, float beta, gpar_dtype c_type, gpar_buffer c, size_t c_off,
                          int ldc, long long stride_c, int batch);
/* y = alpha * op(A) * x + beta * y; A is m x n, x has n elements (m with GPAR_TRANS) spaced incx
 * apart, y m (n with GPAR_TRANS) spaced incy apart. y may not overlap A or x. */
GPAR_API int gpar_sgemv(gpar_trans trans, int m, int n, float alpha, gpar_buffer a, size_t a_off, int lda,
                        gpar_buffer x, size_t x_off, int incx, float beta, gpar_buffer y, size_t y_off, int incy);
/* Double precision; GPAR_ENOTSUP on devices without fp64. */
GPAR_API int gpar_dgemv(gpar_trans trans, int m, int n, double alpha, gpar_buffer a, size_t a_off, int lda,
                        gpar_buffer x, size_t x_off, int incx, double beta, gpar_buffer y, size_t y_off, int incy);
/* y = alpha * x + y over n elements; y may not overlap x. */
GPAR_API int gpar_saxpy(int n, float alpha, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off,
                        int incy);
GPAR_API int gpar_daxpy(int n, double alpha, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off,
                        int incy);
/* x = alpha * x over n elements (alpha == 0: exact zeros). */
GPAR_API int gpar_sscal(int n, float alpha, gpar_buffer x, size_t x_off, int incx);
GPAR_API int gpar_dscal(int n, double alpha, gpar_buffer x, size_t x_off, int incx);
/* result[result_off] = sum of x_i * y_i over n elements, one element of the same type written on
 * the device (cuBLAS device pointer mode, CLBlast's result buffer): no host round trip; read it
 * with gpar_read or use it in later ops. n == 0 writes 0. result may not overlap x or y; x and y
 * may overlap. Sums are formed in the operand precision in the vendor library's order. */
GPAR_API int gpar_sdot(int n, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off, int incy,
                       gpar_buffer result, size_t result_off);
GPAR_API int gpar_ddot(int n, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off, int incy,
                       gpar_buffer result, size_t result_off);

/* =========================================================================================================
 * 8. Graphs: record once, replay many
 * ========================================================================================================= */

/* Between gpar_graph_begin and gpar_graph_end, the ops that the calling thread submits to that
 * engine (gpar_copy, gpar_write, gpar_fill, the BLAS calls, gpar_submit) are checked as usual
 * (a bad op returns its status and is not recorded; recording goes on) and recorded, not run.
 * A call made of several ops (a gpar_write of several 8 MiB staging chunks, a gpar_copy staged
 * through host memory) is recorded whole or not at all: one that fails (a later chunk gets no
 * pinned memory) returns its error with nothing of it recorded, and recording goes on. Only
 * when an op cannot be kept (out of host memory) does the recording fail: later ops of this
 * thread are refused with that status, and gpar_graph_end returns it with no graph.
 * Other threads' ops run as usual. While recording, gpar_wait, gpar_wait_all, gpar_read and
 * gpar_graph_launch on that engine from this thread return GPAR_ERECORDING. gpar_write records
 * the data as it was at record time: every launch writes those bytes. A user function on the
 * CPU is called at every launch; one on a GPU too (its part is replayed op by op, not captured).
 *
 * gpar_graph_end resolves every edge among the recorded ops once and cuts them into parts: a
 * new part starts where an op of one device depends on a part of another device recorded after
 * that device's current part (so a graph on one device is one part; two devices working
 * independently are two). A launch submits one engine op per part, over the union of the
 * part's buffers (reads and writes), at once: it is ordered against other work exactly as if
 * every recorded op were submitted at that moment; it is waited on through those buffers
 * (gpar_wait, gpar_read, gpar_wait_all); launches in a row stay ordered. A CUDA part becomes
 * one CUDA graph (captured at its first launch with no fault armed, then launched with one
 * cudaGraphLaunch); other parts replay the pre-resolved list on the device's lanes or a CPU
 * worker. An op that fails inside a launch fails as it would eagerly: the buffers it writes get
 * its status, the recorded ops that read them are skipped (GPAR_EDEPFAILED on what they write),
 * other buffers are untouched, later ops read them as usual; gpar_wait_all reports it. This
 * holds across parts and for inputs that failed before the launch: a part whose input failed
 * (in an earlier part, or before the launch) skips exactly the recorded ops that read it,
 * directly or through a skipped op, and runs the others (a CUDA part is then replayed op by op,
 * not launched as its CUDA graph). Limits: a failure the device reports only at completion (no
 * op to blame) fails every buffer the part writes; so does one that an earlier op on the same
 * GPU backend reports only at completion, when the part was enqueued behind it already. Fault
 * injection (gpar_fault_inject) on copy/gemm/fill/user replays CUDA parts op by op, so faults
 * land on the op they name.
 * A graph keeps the memory of every buffer it uses alive until it is destroyed, even when the
 * buffer is released meanwhile. A gpar_graph pointer is a handle (a slot and a serial the
 * process never reuses), not an address: a destroyed, stale or foreign one is refused
 * (GPAR_EINVAL) forever. Any thread may launch or destroy a graph, concurrently too: a launch
 * that races a destroy is either refused (GPAR_EINVAL) or runs before the graph is freed. */
typedef struct gpar_graph gpar_graph;

/* Start recording the calling thread's ops on eng. GPAR_ERECORDING when this thread already
 * records; GPAR_ESHUTDOWN on a shut-down engine. */
GPAR_API int gpar_graph_begin(gpar_engine *eng);
/* Stop recording and instantiate: *graph receives the graph (NULL on failure). GPAR_EINVAL when
 * this thread records no graph on eng. An empty recording gives a graph whose launch does
 * nothing. */
GPAR_API int gpar_graph_end(gpar_engine *eng, gpar_graph **graph);
/* Run the whole recorded sequence, asynchronously (see above). Returns at once (in
 * synchronous mode: after it is done, with its status). GPAR_EINVAL on a destroyed graph. */
GPAR_API int gpar_graph_launch(gpar_graph *graph);
/* What gpar_graph_info reports about a graph. */
typedef struct gpar_graph_props {
  int ops;               /* recorded ops */
  int parts;             /* parts: stretches of one device, each launched as one engine op */
  int branches;          /* the most compute lanes one part spreads its ops over (the DAG's
                            independent branches; 1: record order on one lane) */
  int native_parts;      /* parts captured into a backend graph so far (CUDA graphs, at the first launch) */
  uint64_t native_nodes; /* their nodes, summed */
  uint64_t native_edges; /* their dependency edges, summed: none between ops of different branches */
} gpar_graph_props;
/* Describe a graph (GPAR_EINVAL on a destroyed one). */
GPAR_API int gpar_graph_info(gpar_graph *graph, gpar_graph_props *props);
/* The handle is invalid at once; then wait for the graph's launches in flight, free it and let
 * go of its buffers. GPAR_EINVAL on a graph destroyed already; GPAR_EDEADLK from inside an op
 * (it would wait for itself). gpar_shutdown destroys the engine's graphs after its drain. */
GPAR_API int gpar_graph_destroy(gpar_graph *graph);

/* =========================================================================================================
 * 9. Portable kernels
 * ========================================================================================================= */

/* A kernel is a name, a typed signature and a body written in libgpar's kernel dialect.
 * libgpar generates each backend's entry point from the signature, so the same text runs
 * unchanged everywhere: on CUDA an extern "C" __global__ function that NVRTC builds into a cubin
 * for the device's sm_XY (clamped to the newest architecture that NVRTC knows; loaded with the
 * runtime's cudaLibraryLoadData, no libcuda link); on OpenCL a __kernel that takes each buffer
 * as a cl_mem and a byte offset, built by clBuildProgram for the device; on the host CPU a C
 * function over a range of work-groups, built by the system compiler (gpar_config.kernel_cc:
 * GPAR_CC, else CC, else cc) into a shared object that libgpar loads.
 *
 * The kernel language is a small dialect of C that CUDA C++, OpenCL C 1.2 and C11 all accept,
 * with the macros and helpers libgpar defines on every backend. Its reference (the signature's
 * grammar, the dialect's names, what a build may read, launches, builds and their caches,
 * faults and handles) is the manual page gpar-kernel(7): `man gpar-kernel`. In short:
 * - signature "u64 n, f32 a, in f32 *x, inout f32 *y": scalars `TYPE name` (i32 u32 i64 u64 f32
 *   f64) and buffers `DIR TYPE *name` (DIR in, out or inout; TYPE also i8 u8 i16 u16 f16 bf16);
 *   a launch reads its in and inout buffers and writes its out and inout ones, so the engine
 *   orders it exactly by them, like any op, and graphs record it;
 * - body: one work-item's code, with GPAR_GLOBAL_ID(d), GPAR_LOCAL_ID(d), GPAR_GROUP_SIZE(d),
 *   GPAR_LOCAL and GPAR_BARRIER() (not on the host device), gpar_load_f16 and its kin, atomics
 *   and the C99 math functions; no #include and no inline assembly;
 * - builds happen in the calling thread (gpar_kernel_build, or the first launch on a device)
 *   and are cached in memory and on disk (gpar_config.kernel_cache_dir); a compile error is
 *   GPAR_EBUILD, its log in gpar_kernel_log; a build reads no file but its own source.
 * Any thread may create, build, launch and release kernels at once. */

#define GPAR_KERNEL_DIALECT 1 /* version of the kernel dialect (part of every cache key) */

/* A kernel handle. id 0 is never valid. */
typedef struct gpar_kernel {
  uint64_t id; /* opaque */
} gpar_kernel;

/* A launch's grid: groups[d] work-groups of group_size[d] work-items in dimension d. Dimensions
 * 1 and 2 treat 0 as 1, so `{{g}, {s}}` is a 1-D grid. group_size[0] must be at least 1;
 * groups[0] == 0 launches nothing (the arguments are still checked; GPAR_OK, nothing enqueued). */
typedef struct gpar_grid {
  uint32_t groups[3];
  uint32_t group_size[3];
} gpar_grid;

/* What a launch argument holds. */
typedef enum {
  GPAR_ARG_I32 = 1,
  GPAR_ARG_U32,
  GPAR_ARG_I64,
  GPAR_ARG_U64,
  GPAR_ARG_F32,
  GPAR_ARG_F64,
  GPAR_ARG_BUFFER
} gpar_arg_kind;

/* One launch argument: a typed scalar or a buffer with a byte offset. Make them with the
 * gpar_arg_* functions below (C passes a float to a variadic function as a double, so libgpar
 * takes no variadic arguments: the kind travels with the value). */
typedef struct gpar_arg {
  gpar_arg_kind kind;
  union {
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
    struct {
      gpar_buffer buf;
      size_t offset; /* bytes; a multiple of the element size */
    } buffer;
  } v;
} gpar_arg;

/* Typed launch arguments. */
static inline gpar_arg gpar_arg_i32(int32_t v) {
  gpar_arg a;
  a.kind = GPAR_ARG_I32;
  a.v.i32 = v;
  return a;
}
static inline gpar_arg gpar_arg_u32(uint32_t v) {
  gpar_arg a;
  a.kind = GPAR_ARG_U32;
  a.v.u32 = v;
  return a;
}
static inline gpar_arg gpar_arg_i64(int64_t v) {
  gpar_arg a;
  a.kind = GPAR_ARG_I64;
  a.v.i64 = v;
  return a;
}
static inline gpar_arg gpar_arg_u64(uint64_t v) {
  gpar_arg a;
  a.kind = GPAR_ARG_U64;
  a.v.u64 = v;
  return a;
}
static inline gpar_arg gpar_arg_f32(float v) {
  gpar_arg a;
  a.kind = GPAR_ARG_F32;
  a.v.f32 = v;
  return a;
}
static inline gpar_arg gpar_arg_f64(double v) {
  gpar_arg a;
  a.kind = GPAR_ARG_F64;
  a.v.f64 = v;
  return a;
}
/* A buffer argument: buf from byte `offset` on. */
static inline gpar_arg gpar_arg_buffer(gpar_buffer buf, size_t offset) {
  gpar_arg a;
  a.kind = GPAR_ARG_BUFFER;
  a.v.buffer.buf = buf;
  a.v.buffer.offset = offset;
  return a;
}

/* Create a kernel on eng from its name (a C identifier, the entry point's name in traces and
 * logs), its signature (params; "" for none), its body and an optional preamble (file-scope
 * helpers, or NULL). The texts are copied. Checks the name and the signature (GPAR_EINVAL with
 * the column) and refuses a directive that reads a file in the body or preamble (GPAR_EINVAL
 * with the line and column); builds nothing. *kernel is the null handle on failure. */
GPAR_API int gpar_kernel_create(gpar_engine *eng, const char *name, const char *params, const char *body,
                                const char *preamble, gpar_kernel *kernel);
/* End the handle (later calls with it: GPAR_EINVAL); returns once calls on it in progress (a
 * build) have returned. The memory goes after the kernel's last launch in flight. */
GPAR_API int gpar_kernel_release(gpar_kernel kernel);
/* Build the kernel for device dev (GPAR_HOST: the host CPU) in the calling thread, unless it is
 * built already: GPAR_OK, GPAR_EBUILD (the compiler's first errors in the message; see
 * gpar_kernel_log), GPAR_ENOTSUP (the device cannot build kernels, or cannot run this one: a
 * barrier on the host), GPAR_EFAULT (fault kind "build"). */
GPAR_API int gpar_kernel_build(gpar_kernel kernel, int dev);
/* Launch the kernel on device dev (GPAR_HOST: the host CPU) over grid with nargs arguments,
 * one per parameter in signature order; builds it first if needed (see above). Returns at once
 * (in synchronous mode: when done, with its status). */
GPAR_API int gpar_kernel_launch(gpar_kernel kernel, int dev, const gpar_grid *grid, const gpar_arg *args, int nargs);

/* Where a built kernel's binary came from (gpar_kernel_props.origin). */
enum { GPAR_KERNEL_COMPILED = 1, GPAR_KERNEL_MEMORY_HIT = 2, GPAR_KERNEL_DISK_HIT = 3 };

/* A built kernel on one device. */
typedef struct gpar_kernel_props {
  uint32_t max_group_size;    /* most work-items in one group, for this kernel on this device */
  uint32_t max_group_dims[3]; /* most work-items per group in each dimension */
  uint32_t max_groups[3];     /* most work-groups in each dimension */
  uint32_t group_multiple;    /* a group size that is a multiple of this runs best (warp: 32; host: 1) */
  int origin;                 /* GPAR_KERNEL_*: the binary was compiled, found in memory or on disk */
  double build_seconds;       /* what that took (compile, or load) */
  char target[192];           /* what builds for the device, e.g. "NVRTC 13.0, sm_90" */
} gpar_kernel_props;

/* Describe the kernel on device dev, building it first if needed (as gpar_kernel_build). */
GPAR_API int gpar_kernel_info(gpar_kernel kernel, int dev, gpar_kernel_props *props);
/* Copy the compiler's whole log of the kernel's build on device dev into buf (cap bytes, always
 * NUL-terminated when cap > 0, truncated to fit); *len (may be NULL) gets the log's full length.
 * "" before a build, after a cache hit, and when the compiler said nothing. */
GPAR_API int gpar_kernel_log(gpar_kernel kernel, int dev, char *buf, size_t cap, size_t *len);
/* Copy the whole source libgpar generates for the kernel on device dev (dialect header,
 * preamble, entry point), each line prefixed with its number as the compiler counts it
 * ("%5d  "), into buf as gpar_kernel_log does. Needs no build; GPAR_ENOTSUP (as a build) where
 * the device cannot run the kernel. */
GPAR_API int gpar_kernel_source(gpar_kernel kernel, int dev, char *buf, size_t cap, size_t *len);
/* Whether device dev can build kernels, and with what: GPAR_OK with e.g. "NVRTC 13.0, sm_90",
 * "OpenCL C 1.2, PoCL ..." or "cc: gcc (Debian 12.2.0-14) 12.2.0" in buf; GPAR_ENOTSUP with the
 * reason in buf (and gpar_last_error). */
GPAR_API int gpar_kernel_support(gpar_engine *eng, int dev, char *buf, size_t cap);

/* =========================================================================================================
 * 10. Array ops
 * ========================================================================================================= */

/* Engine ops like any other: each call checks its arguments, declares the buffers it reads and
 * writes, returns at once, and runs on the device of its output (every operand on that device,
 * or all of them in host memory: GPAR_HOST buffers or the CPU device's, run by the CPU). On the
 * CPU they are plain C on one CPU worker; on GPUs (CUDA, OpenCL) portable kernels built once
 * per device and kept (see the kernels section). Recorded in graphs like any op.
 * Conventions:
 * - Element types: GPAR_FLOAT and GPAR_DOUBLE compute in their own precision; GPAR_HALF and
 *   GPAR_BFLOAT16 are storage: each element is converted to float, computed in float, and
 *   rounded to nearest even when stored. GPAR_INT32 is refused (GPAR_EINVAL) except where a
 *   call names it (labels, argmax indices). GPAR_EINVAL for an unknown type or op.
 * - Offsets, counts and leading dimensions are in elements. Matrices are column-major m x n
 *   with leading dimension ld >= max(1, m); a range is count elements from its offset. Every
 *   operand is range-checked (GPAR_ERANGE), even when it is empty.
 * - Overlap: an elementwise output may be exactly one of its full-size inputs (same buffer,
 *   offset and leading dimension: in place); any other overlap of an output with an input or
 *   with another output, by address range as for GEMMs, is GPAR_EALIAS. Reductions, softmax
 *   cross-entropy and argmax take no in-place operand.
 * - Bad input (sizes, offsets, overlaps, types, operands on another device, stale handles) is
 *   refused with nothing enqueued. Zero elements: an elementwise call over none returns GPAR_OK
 *   with nothing enqueued; a reduction over none writes its identity (below).
 * - NaN and infinity: arithmetic follows IEEE 754 in the compute type (a NaN input gives NaN;
 *   1/0 is inf; log(0) is -inf, log(-1) and sqrt(-1) NaN). max and min propagate NaN (NumPy's
 *   maximum, torch.maximum): max(a, b) is NaN when either is; so is a max or min reduction of
 *   a range holding NaN, and a sum holding NaN (or +inf and -inf). This differs from the
 *   collectives' GPAR_MAX and GPAR_MIN, which follow fmax and fmin (NCCL). Between -0 and +0,
 *   which zero max and min return is unspecified. relu(NaN) is NaN.
 * - Reductions use no float atomics: a result that needs several groups (a long range, a row
 *   of many columns) runs in two passes, partial results per group into a temporary buffer,
 *   then one group over them; otherwise one group (or work-item) makes each result. The two
 *   passes are one submission: another thread's op on the same buffers runs before both or
 *   after both, as for a one-op call. The order is fixed by the device and the shape: one
 *   device gives the same bits on every run; devices may differ in the last bits (each adds in
 *   its own order; the CPU sums float types in double). */

/* Elementwise unary ops: y = f(x). */
typedef enum {
  GPAR_UN_RELU = 0, /* max(x, 0); NaN stays NaN */
  GPAR_UN_EXP = 1,
  GPAR_UN_LOG = 2, /* natural logarithm */
  GPAR_UN_TANH = 3,
  GPAR_UN_SIGMOID = 4, /* 1 / (1 + exp(-x)) */
  GPAR_UN_ABS = 5,     /* |x| (clears the sign of NaNs too) */
  GPAR_UN_SQRT = 6,
  GPAR_UN_NEG = 7 /* -x (flips the sign of zeros and NaNs too) */
} gpar_unop;
/* Elementwise binary ops: c = a op b. */
typedef enum {
  GPAR_BIN_ADD = 0,
  GPAR_BIN_SUB = 1,
  GPAR_BIN_MUL = 2,
  GPAR_BIN_DIV = 3,
  GPAR_BIN_MAX = 4, /* NaN when either operand is NaN */
  GPAR_BIN_MIN = 5  /* NaN when either operand is NaN */
} gpar_binop;
/* Which index of an m x n matrix a vector follows: GPAR_PER_ROW, m elements (v[i] for row i: a
 * bias added to every column, or a row's reduction over the columns); GPAR_PER_COLUMN, n
 * elements (v[j] for column j). */
typedef enum { GPAR_PER_ROW = 0, GPAR_PER_COLUMN = 1 } gpar_axis;

/* y[y_off + i] = op(x[x_off + i]) for i < count, on y's device. y may be x itself (same offset). */
GPAR_API int gpar_unary(gpar_unop op, gpar_dtype dtype, size_t count, gpar_buffer x, size_t x_off, gpar_buffer y,
                        size_t y_off);
/* c[c_off + i] = a[a_off + i] op b[b_off + i] for i < count, on c's device. c may be a or b
 * itself (same offset). */
GPAR_API int gpar_binary(gpar_binop op, gpar_dtype dtype, size_t count, gpar_buffer a, size_t a_off, gpar_buffer b,
                         size_t b_off, gpar_buffer c, size_t c_off);
/* Broadcast: C(i, j) = A(i, j) op v[i] (axis GPAR_PER_ROW, v has m elements) or A(i, j) op v[j]
 * (GPAR_PER_COLUMN, n elements), for the m x n column-major matrices A (lda) and C (ldc) on C's
 * device: a bias add (GPAR_BIN_ADD, per row), scaling rows or columns (GPAR_BIN_MUL). C may be A
 * itself (same offset and leading dimension); v may not overlap C. Rows past m are untouched. */
GPAR_API int gpar_binary_bcast(gpar_binop op, gpar_dtype dtype, int m, int n, gpar_buffer a, size_t a_off, int lda,
                               gpar_buffer v, size_t v_off, gpar_axis axis, gpar_buffer c, size_t c_off, int ldc);
/* out[out_off] = the sum, max or min of x[x_off .. x_off + count), on out's device; count 0
 * writes the identity (0, -inf, +inf). */
GPAR_API int gpar_reduce_range(gpar_redop op, gpar_dtype dtype, size_t count, gpar_buffer x, size_t x_off,
                               gpar_buffer out, size_t out_off);
/* Reduce the m x n matrix A (lda) along one index into out: axis GPAR_PER_ROW gives m values,
 * out[i] = op over j of A(i, j) (a bias gradient: the sum of each row over the batch);
 * GPAR_PER_COLUMN gives n values, out[j] = op over i of A(i, j). A reduction over zero
 * elements (n == 0 per row, m == 0 per column) writes the identity. */
GPAR_API int gpar_reduce_matrix(gpar_redop op, gpar_dtype dtype, int m, int n, gpar_buffer a, size_t a_off, int lda,
                                gpar_axis axis, gpar_buffer out, size_t out_off);
/* Softmax cross-entropy of a batch: Z is k x n (ldz), one column of k class scores (logits) per
 * sample; labels holds n GPAR_INT32 class indices. For each column j, with M = max_i Z(i, j)
 * and S = sum_i exp(Z(i, j) - M) (stable: the max is subtracted first):
 *   loss[j] = log(S) - (Z(y_j, j) - M)                     (the sample's cross-entropy)
 *   G(i, j) = grad_scale * (exp(Z(i, j) - M) / S - [i == y_j])   (dloss/dZ, scaled)
 * grad_scale is typically 1 / (global batch size). loss (n elements) and G (k x n, ldg) are
 * each optional (a null handle, id 0, skips it; at least one is needed), of type dtype, and may
 * overlap nothing. A label outside [0, k) gives loss NaN and G = grad_scale * softmax (no
 * class subtracted). A column holding NaN gives NaN in its loss and gradient; +inf logits give
 * NaN. On the device of loss (else G). */
GPAR_API int gpar_softmax_xent(gpar_dtype dtype, int k, int n, gpar_buffer z, size_t z_off, int ldz, gpar_buffer labels,
                               size_t labels_off, double grad_scale, gpar_buffer loss, size_t loss_off,
                               gpar_buffer grad, size_t grad_off, int ldg);
/* idx[idx_off + j] = the row i of the largest A(i, j) in column j of the m x n matrix A (lda),
 * as GPAR_INT32: the first such row on ties; a NaN counts as larger than any number (the first
 * NaN wins, as in NumPy); -1 for m == 0. On idx's device. */
GPAR_API int gpar_argmax(gpar_dtype dtype, int m, int n, gpar_buffer a, size_t a_off, int lda, gpar_buffer idx,
                         size_t idx_off);
/* Build the array ops' kernels up front, so that a program's first step does not build them one
 * after another as its calls first need them. On device dev, or on every device with dev = -1
 * (GPAR_HOST's value: "every device" covers the CPU's, which needs nothing): every GPAR_FLOAT
 * kernel of every array op above, each variant (in place or apart; one pass or the two of a long
 * reduction; each set of softmax outputs), compiled or loaded from the disk cache in parallel
 * threads inside this call, which returns when all are done. Each is built once per device and
 * kept for the engine's lifetime (never per call shape), so later calls build nothing. A
 * training step such as tools/train/train_mlp.c's needs, in GPAR_FLOAT: gpar_binary_bcast in place
 * (the bias add), gpar_unary in place (ReLU), gpar_softmax_xent with loss and gradient,
 * gpar_reduce_range (one pass up to 8192 elements, two beyond) and gpar_reduce_matrix per row
 * (one pass up to 32 columns, two beyond); its maps (gpar_map_*) are its own kernels, built at
 * their first launch. Other element types still build at first use. GPAR_OK at once on a device
 * whose array ops are plain C (the CPU); GPAR_ENODEV for a device that does not exist and
 * GPAR_EDEADLK from inside an op, with nothing built; else the first build's failure
 * (GPAR_EBUILD, GPAR_ENOTSUP, ...) with its message, after building every other kernel it can. */
GPAR_API int gpar_array_prepare(gpar_engine *eng, int dev);

/* =========================================================================================================
 * 11. Elementwise maps
 * ========================================================================================================= */

/* In the spirit of CuPy's ElementwiseKernel. params lists the parameters, separated by commas:
 * an array `DIR TYPE name` (DIR one of in, out, inout; TYPE one of i8 u8 i16 u16 i32 u32 i64 u64
 * f32 f64 f16 bf16) or a scalar `TYPE name` (TYPE one of i32 u32 i64 u64 f32 f64); at least one
 * out or inout array; names are C identifiers (as kernels' parameters), all different, not i or n.
 * expr is C (the kernel dialect's) run for each index i < n: each array is its element i (f16
 * and bf16 as f32; `in` ones read-only, `out` ones start at 0), each scalar its value, i and n
 * the index and the count; the outputs' values are stored after it. Example:
 *   gpar_map_create(eng, "axpy", "f32 a, in f32 x, inout f32 y", "y = a * x + y", &m);
 * The map is one portable kernel (see above: built at its first launch on each device target,
 * cached in memory and on disk; a compile error is GPAR_EBUILD at the launch, its log through
 * gpar_map_kernel and gpar_kernel_log). A launch runs on the device of the first out or inout
 * array; its arrays are checked as the array ops' operands are: n elements from each byte
 * offset inside the buffer (GPAR_ERANGE), all on that device or all in host memory (GPAR_EINVAL),
 * an output overlapping an input only exactly (in place, same offset; else GPAR_EALIAS) and
 * never another output; each scalar must be of its declared type (gpar_arg_f32 for f32, ...).
 * n == 0 returns GPAR_OK with nothing enqueued. The launch's reads are the in and inout arrays,
 * its writes the out and inout ones: it is ordered by them like any op and recorded in graphs.
 * A gpar_map is a handle of the one rule (released, stale or foreign: GPAR_EINVAL, forever). */
typedef struct gpar_map {
  uint64_t id; /* opaque; 0 is never valid */
} gpar_map;

/* Make a map on eng named name (a C identifier: its kernel's name in traces and logs) from params
 * and expr (copied). GPAR_EINVAL with the column for a parameter list that does not parse. */
GPAR_API int gpar_map_create(gpar_engine *eng, const char *name, const char *params, const char *expr, gpar_map *map);
/* Run the map for i < n with nargs arguments, one per parameter in order: gpar_arg_buffer(buf,
 * byte offset) for an array, a typed scalar (gpar_arg_f32 ...) for a scalar. Returns at once. */
GPAR_API int gpar_map_launch(gpar_map map, size_t n, const gpar_arg *args, int nargs);
/* The map's kernel, for gpar_kernel_build, _info, _log, _source and _launch (valid while the map
 * is; it goes with the map: gpar_kernel_release refuses it, GPAR_EINVAL). */
GPAR_API int gpar_map_kernel(gpar_map map, gpar_kernel *kernel);
/* End the handle; the kernel goes after the map's launches in flight. */
GPAR_API int gpar_map_release(gpar_map map);

/* =========================================================================================================
 * 12. Communicators and collectives
 * ========================================================================================================= */

/* A communicator is a set of member devices; a collective takes one buffer per member
 * (bufs[i] on member i's device; on the CPU member a GPAR_HOST buffer is fine too), an element
 * offset per member (offs NULL: all 0) and an element count. It is ordered with every other op
 * on those buffers like any op: it starts once their earlier writers (and, for the buffers it
 * writes, earlier readers) are done, and later ops see its result.
 * Rules:
 * - Collectives of one communicator run in the order they were issued, on every member, never
 *   reordered by the engine even when their inputs become ready in another order (each one
 *   writes a hidden per-member token); one collective's members are issued together, so two
 *   threads issuing collectives on one communicator never interleave them. Across processes
 *   (gpar_mpi.h) every rank must issue the same collectives in the same order. On the staged
 *   path (below) this holds for every kind alike: nothing a collective writes starts before the
 *   previous collective of the communicator has finished writing (only its copies of inputs
 *   into private staging may start earlier).
 * - Collectives are not recorded into graphs: called while the thread records a graph on the
 *   communicator's engine they return GPAR_ERECORDING, nothing issued.
 * - One collective is one step in its buffers' order (see "one call, one step"): another
 *   thread's write of a member lands before all of its steps or after all of them, never
 *   between a staged collective's copy-in and its copy-back.
 * - A failure (a vendor error, or an input whose writer failed) reaches the buffers the
 *   collective writes: gpar_wait on them reports it. In synchronous mode (GPAR_SYNC=1) a
 *   collective returns once done, with the first failure of its steps.
 * - Results: MAX and MIN follow C's fmax and fmin (NCCL's rule) on every path and for every
 *   member order: a NaN loses to a number, so an element is NaN only where every member holds
 *   NaN (which NaN, and which of -0 and +0 wins between zeros of both signs, is unspecified).
 *   Sums add in an order of the path's choosing (NCCL's ring or tree, the staged path's member
 *   order, MPI's algorithm): float and double sums may differ in the last bits between paths,
 *   member counts and orders; sums that are exact (small integers, multiples of a power of two)
 *   agree everywhere.
 * - A backend collective (NCCL) that fails asynchronously (ncclCommGetAsyncError) or is not
 *   complete after gpar_config.comm_timeout seconds (GPAR_COMM_TIMEOUT, default 300) is named on
 *   stderr and its communicator is aborted (ncclCommAbort on every member, as PyTorch's watchdog
 *   does): that collective fails with GPAR_ETIMEDOUT (or the failure) at the waits on the
 *   buffers it writes, which are handed on only after the abort has returned; every later
 *   collective on the communicator fails the same way; gpar_comm_destroy and gpar_shutdown
 *   return.
 * - NCCL needs every GPU to enqueue the collectives it shares with other GPUs in one order:
 *   two communicators over the same GPUs must not have collectives in flight at once unless
 *   data orders them (e.g. the second reads what the first wrote), or NCCL may deadlock.
 * - Element types: all five gpar_dtype values on every path of one process. NCCL takes them
 *   natively (ncclFloat16, ncclBfloat16, ncclInt32); the staged path's CPU reduction sums f16 and
 *   bf16 in f32 over all members and rounds once to nearest even, compares them in f32 for MAX
 *   and MIN (the NaN rule above), and sums int32 exactly, wrapping modulo 2^32 as NCCL does.
 *   Across processes (gpar_mpi.h) only GPAR_FLOAT and GPAR_DOUBLE: others are refused there
 *   with GPAR_ENOTSUP, nothing issued.
 * - Paths: CUDA members of one process with NCCL built use NCCL (a non-blocking clique made with
 *   ncclCommInitRankConfig, one stream per device: the peer lane). Every other set (CPU, OpenCL,
 *   mixed, CUDA without NCCL) is staged through GPAR_HOST memory with the engine's copies and one
 *   reduction op on the CPU. */

/* A communicator handle: a slot and a serial the process never reuses, so a destroyed, stale
 * or foreign handle is refused (GPAR_EINVAL) forever, never dereferenced. */
typedef struct gpar_comm {
  uint64_t id; /* opaque; 0 is never valid */
} gpar_comm;

/* Create a communicator over ndevs distinct devices of eng (indices of the flat list). */
GPAR_API int gpar_comm_create(gpar_engine *eng, const int *devs, int ndevs, gpar_comm *comm);
/* The handle is invalid at once (new collectives on it get GPAR_EINVAL); then wait for the
 * collectives already issued, and free the communicator with its NCCL or transport state.
 * GPAR_EDEADLK from inside an op (it would wait for itself); GPAR_ESHUTDOWN while its engine
 * shuts down (gpar_shutdown destroys the engine's communicators after its drain). */
GPAR_API int gpar_comm_destroy(gpar_comm comm);
/* Members in all (nmembers), and this process's members: global indices first_local ..
 * first_local + nlocal - 1 (one process: 0 and nmembers). Any pointer may be NULL. */
GPAR_API int gpar_comm_info(gpar_comm comm, int *nmembers, int *first_local, int *nlocal);

/* Every member's bufs[i][offs[i] .. +count) becomes the element-wise reduction over members. */
GPAR_API int gpar_allreduce(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count, gpar_dtype dtype,
                            gpar_redop op);
/* Every member's range becomes member `root`'s (a global member index). */
GPAR_API int gpar_broadcast(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count, gpar_dtype dtype,
                            int root);
/* In place, NCCL's layout: each range holds nmembers blocks of count elements; afterwards member
 * r's block r holds the reduction of every member's block r (other blocks: unspecified). */
GPAR_API int gpar_reduce_scatter(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                                 gpar_dtype dtype, gpar_redop op);
/* In place: each range holds nmembers blocks of count elements; member r contributes its block
 * r, and afterwards every member holds all blocks. */
GPAR_API int gpar_all_gather(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                             gpar_dtype dtype);

/* =========================================================================================================
 * 13. Diagnostics: counters, breakdowns, backend and pinned status, fault injection
 * ========================================================================================================= */

/* Counters of one engine, for tests and monitoring. */
typedef struct gpar_stats {
  uint64_t ops_submitted;         /* ops accepted */
  uint64_t ops_completed;         /* ops retired (any status) */
  uint64_t ops_failed;            /* ops retired with an error (skipped ones included) */
  uint64_t ops_in_flight;         /* submitted, not yet retired */
  uint64_t buffers_live;          /* buffers not yet freed (released ones with pending ops included) */
  uint64_t pinned_bytes_pool;     /* pinned host bytes held by the pool (free + in use) */
  uint64_t events_live;           /* backend events held by the engine's ops (pools not counted) */
  uint64_t graph_native_launches; /* graph parts run as one backend graph (CUDA graph) */
  uint64_t gemm_lt_calls;         /* CUDA GEMMs (plain, strided-batched, f16/bf16) enqueued through a cached cublasLt
                                 plan (captured: once) */
  uint64_t gemm_lt_fallbacks;     /* CUDA GEMMs enqueued by cuBLAS's own call instead (cublasSgemm/Dgemm, their
                                 StridedBatched forms, cublasGemmEx: GPAR_CUBLASLT=0, or no cublasLt algorithm
                                 for the shape); alpha == 0 or k == 0 count in neither */
  uint64_t kernels_live;          /* kernel objects not yet freed (released ones with launches in flight included) */
  uint64_t kernel_launches;       /* kernel launches accepted (recorded ones included) */
  uint64_t kernel_builds;         /* kernel binaries compiled from source (one per source and device target) */
  uint64_t kernel_memory_hits;    /* kernel builds served by the engine's memory cache (another kernel, same text) */
  uint64_t kernel_disk_hits;      /* kernel builds served by the disk cache */
  uint64_t kernel_build_us;       /* microseconds spent compiling and loading kernels (disk hits included) */
  /* How the GPUs' compute lanes were used (eager ops; a graph part counts as one op): */
  uint64_t lane_waits;    /* waits of a lane on an event of another lane or device (cross-lane edges) */
  uint64_t lane_events;   /* events recorded after ops (for consumers elsewhere, or to close a run of 8) */
  uint64_t lane_handoffs; /* ops one lane's issuing thread handed to another's */
  uint64_t lane_moves;    /* ops issued on a compute lane other than the first */
} gpar_stats;

/* Snapshot of the engine's counters. */
GPAR_API int gpar_stats_get(gpar_engine *eng, gpar_stats *stats);

/* With tracing on (gpar_config.trace_path set; "" times ops without writing a trace file),
 * each retired op adds where its host time went. Means over the ops retired since the last
 * reset, in microseconds. The trace file carries the same phases per op (args.host_us). */
typedef struct gpar_breakdown {
  uint64_t ops;       /* ops measured */
  double submit_us;   /* public call entered -> op linked (checks, bookkeeping, lock waits) */
  double handoff_us;  /* op ready -> a CPU worker or GPU dispatcher took it */
  double dispatch_us; /* running it: the CPU op itself, or the vendor calls that enqueue it */
  double complete_us; /* run done -> completion seen under the engine lock (GPU: + device time) */
  double retire_us;   /* completion seen -> retired (successors released, buffers updated) */
} gpar_breakdown;

/* Mean breakdown of this engine's retired ops; reset != 0 starts a new measurement.
 * GPAR_ENOTSUP (with the means so far, all zero) when tracing is off. */
GPAR_API int gpar_breakdown_get(gpar_engine *eng, gpar_breakdown *bd, int reset);

/* Number of devices of backend backend_id (a GPAR_BACKEND_* value) in eng, in *ndev, and in
 * *reason why it has none: "" when it has devices, else "not built into this libgpar", "not
 * requested (...)" or the backend's own words, e.g. "cuda: no device: cudaGetDeviceCount:
 * cudaErrorInsufficientDriver". When some of its devices could not be opened, *reason says
 * which and why. An absent device is not an error: gpar_init prints such a reason on stderr
 * only for a backend the caller named (GPAR_BACKENDS or gpar_config.backends). *reason stays
 * valid until gpar_shutdown; ndev or reason may be NULL. GPAR_EINVAL for an unknown id. */
GPAR_API int gpar_backend_status(gpar_engine *eng, int backend_id, int *ndev, const char **reason);

/* GPAR_HOST memory comes from one backend's pinned allocator (the provider) and is registered
 * with every other open GPU backend, so copies to and from it run at the pinned rate on every
 * device. In *provider the GPAR_BACKEND_* value of the provider (0: plain host memory), in
 * *registered the GPAR_BACKEND_* bits of the backends that register each block, in *reason ""
 * or why a registration was refused (the block then stays usable there through slower staged
 * copies; logged once). Env GPAR_PINNED_PROVIDER=cuda|opencl|host picks the provider at
 * gpar_init. Fault kind "register" (gpar_fault_inject) makes a registration fail. *reason stays
 * valid until gpar_shutdown; any pointer may be NULL. */
GPAR_API int gpar_pinned_status(gpar_engine *eng, int *provider, unsigned *registered, const char **reason);

/* Fault injection for tests: make the nth (1-based) later backend call of `kind` fail with
 * GPAR_EFAULT; n = 0 clears it. Kinds: "alloc", "pinned", "copy", "gemm" (every BLAS call), "fill", "user",
 * "event", "completion", "register", "build" (a kernel build that is no memory-cache hit: compile
 * or disk-cache load), "capture" (a graph part's capture into a backend graph
 * fails after its ops were captured: the part then replays op by op, without error). Also set by
 * env GPAR_FAULT=kind:n at gpar_init. */
GPAR_API int gpar_fault_inject(gpar_engine *eng, const char *kind, unsigned long n);

#ifdef __cplusplus
}
#endif
#endif /* GPAR_H */
