/* gpar.h: the one public header of libgpar, an asynchronous operation engine that runs
 * independent work in parallel across devices (CPU, CUDA, OpenCL) and across their compute and
 * copy engines. Operations declare the buffers they read and write; the engine orders them by
 * those buffers alone, and the host blocks only in gpar_read and the gpar_wait calls.
 *
 * Conventions a caller can rely on:
 * - Zero sizes. A copy, write, read or fill of zero bytes is refused (GPAR_EINVAL, nothing
 *   enqueued), as is a buffer of zero bytes. A GEMM with m == 0 or n == 0 is a BLAS quick
 *   return: GPAR_OK once its arguments check out, nothing enqueued.
 * - The BLAS rule. A GEMM with alpha == 0 or k == 0 does not read A or B (NaN or garbage there
 *   stays out): it computes C = beta * C. beta == 0 makes C write-only in every GEMM: C gets
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
 *   GPAR_ESHUTDOWN with nothing applied (a refused gpar_read wrote nothing into user memory). */
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
  X(ETIMEDOUT, -15, "timed out")                                                    \
  X(ERECORDING, -16, "not allowed while this thread records a graph")

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
  int cublaslt;         /* CUDA sgemm/dgemm: 0 (default) or 1: through cublasLt plans cached per shape, with
                           cublasSgemm/Dgemm where cublasLt has no algorithm; -1: cublasSgemm/Dgemm always.
                           env GPAR_CUBLASLT=0 gives -1, =1 gives 1 */
  double comm_timeout;  /* seconds before a communicator's operation that does not complete fails (libgpar_mpi) or
                           is named and aborted (NCCL); 0: 300. env GPAR_COMM_TIMEOUT */
} gpar_config;

/* Backend bits for gpar_config.backends and gpar_device_info.backend_id. */
enum { GPAR_BACKEND_HOST = 1, GPAR_BACKEND_CUDA = 2, GPAR_BACKEND_OPENCL = 4 };

/* Fill cfg with the defaults, then the environment overrides (GPAR_* variables below); fields
 * set after this call win over both. gpar_init(&eng, NULL) uses exactly this. */
GPAR_API void gpar_config_init(gpar_config *cfg);

/* The configuration eng runs with: its gpar_config with the defaults filled in (host_threads,
 * backends, comm_timeout). */
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
  /* Versions, for benchmark records ("" when unknown). driver_version: the vendor driver (CUDA:
   * cudaDriverGetVersion as "13.0"; OpenCL: CL_DRIVER_VERSION). runtime_version: the runtime
   * and BLAS the backend calls (e.g. "CUDA runtime 13.0, cuBLAS 13.0.2"; "CLBlast 1.5.3;
   * OpenCL 3.0 PoCL ..." from the platform; the host's openblas_get_config()). */
  char driver_version[64];
  char runtime_version[128];
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
  void *context;         /* cl_context on OpenCL (shared by every engine of the process: do not release it), else NULL */
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
  uint64_t graph_native_launches; /* graph parts run as one backend graph (CUDA graph) */
  uint64_t gemm_lt_calls;     /* CUDA GEMMs enqueued through a cached cublasLt plan (captured: once) */
  uint64_t gemm_lt_fallbacks; /* CUDA GEMMs enqueued by cublasSgemm/Dgemm instead (GPAR_CUBLASLT=0, or no
                                 cublasLt algorithm for the shape); alpha == 0 or k == 0 count in neither */
} gpar_stats;

/* Snapshot of the engine's counters. */
GPAR_API int gpar_stats_get(gpar_engine *eng, gpar_stats *stats);

/* Fault injection for tests: make the nth (1-based) later backend call of `kind` fail with
 * GPAR_EFAULT; n = 0 clears it. Kinds: "alloc", "pinned", "copy", "gemm", "fill", "user",
 * "event", "completion", "register", "capture" (a graph part's capture into a backend graph
 * fails after its ops were captured: the part then replays op by op, without error). Also set by
 * env GPAR_FAULT=kind:n at gpar_init. */
GPAR_API int gpar_fault_inject(gpar_engine *eng, const char *kind, unsigned long n);

/* ---- Backend status: how many devices each backend gave, or why none ---- */

/* Number of devices of backend backend_id (a GPAR_BACKEND_* value) in eng, in *ndev, and in
 * *reason why it has none: "" when it has devices, else "not built into this libgpar", "not
 * requested (...)" or the backend's own words, e.g. "cuda: no device: cudaGetDeviceCount:
 * cudaErrorInsufficientDriver". When some of its devices could not be opened, *reason says
 * which and why. An absent device is not an error: gpar_init prints such a reason on stderr
 * only for a backend the caller named (GPAR_BACKENDS or gpar_config.backends). *reason stays
 * valid until gpar_shutdown; ndev or reason may be NULL. GPAR_EINVAL for an unknown id. */
GPAR_API int gpar_backend_status(gpar_engine *eng, int backend_id, int *ndev, const char **reason);

/* ---- Pinned host memory across backends: who allocates GPAR_HOST memory, who registers it ---- */

/* GPAR_HOST memory comes from one backend's pinned allocator (the provider) and is registered
 * with every other open GPU backend, so copies to and from it run at the pinned rate on every
 * device. In *provider the GPAR_BACKEND_* value of the provider (0: plain host memory), in
 * *registered the GPAR_BACKEND_* bits of the backends that register each block, in *reason ""
 * or why a registration was refused (the block then stays usable there through slower staged
 * copies; logged once). Env GPAR_PINNED_PROVIDER=cuda|opencl|host picks the provider at
 * gpar_init. Fault kind "register" (gpar_fault_inject) makes a registration fail. *reason stays
 * valid until gpar_shutdown; any pointer may be NULL. */
GPAR_API int gpar_pinned_status(gpar_engine *eng, int *provider, unsigned *registered, const char **reason);
/* ---------------------------------------------------------------- communicators and collectives
 * A communicator is a set of member devices; a collective takes one buffer per member
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
 * - Paths: CUDA members of one process with NCCL built use NCCL (a non-blocking clique made with
 *   ncclCommInitRankConfig, one stream per device: the peer lane). Every other set (CPU, OpenCL, mixed, CUDA without NCCL) is staged
 *   through GPAR_HOST memory with the engine's copies and one reduction op on the CPU. */

/* A communicator handle: a slot and a serial the process never reuses, so a destroyed, stale
 * or foreign handle is refused (GPAR_EINVAL) forever, never dereferenced. */
typedef struct gpar_comm {
  uint64_t id; /* opaque; 0 is never valid */
} gpar_comm;

/* Element types of collectives. */
typedef enum { GPAR_FLOAT = 0, GPAR_DOUBLE = 1 } gpar_dtype;
/* Reductions of collectives. */
typedef enum { GPAR_SUM = 0, GPAR_MAX = 1, GPAR_MIN = 2 } gpar_redop;

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
GPAR_API int gpar_allreduce(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                            gpar_dtype dtype, gpar_redop op);
/* Every member's range becomes member `root`'s (a global member index). */
GPAR_API int gpar_broadcast(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                            gpar_dtype dtype, int root);
/* In place, NCCL's layout: each range holds nmembers blocks of count elements; afterwards member
 * r's block r holds the reduction of every member's block r (other blocks: unspecified). */
GPAR_API int gpar_reduce_scatter(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                                 gpar_dtype dtype, gpar_redop op);
/* In place: each range holds nmembers blocks of count elements; member r contributes its block
 * r, and afterwards every member holds all blocks. */
GPAR_API int gpar_all_gather(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                             gpar_dtype dtype);

/* Transports (for libgpar_mpi; applications do not need these). A transport runs the
 * collectives of a communicator whose members span processes; the core checks every argument
 * (handles, ranges, devices) before calling it, with offs never NULL. */
typedef enum { GPAR_COLL_ALLREDUCE, GPAR_COLL_BROADCAST, GPAR_COLL_REDUCE_SCATTER, GPAR_COLL_ALL_GATHER } gpar_coll_kind;
/* One collective as the transport receives it (bufs/offs: this process's nlocal members). */
typedef struct gpar_coll {
  gpar_coll_kind kind;
  const gpar_buffer *bufs;
  const size_t *offs;
  size_t count;
  gpar_dtype dtype;
  gpar_redop op;
  int root; /* broadcast: global member index */
} gpar_coll;
/* A transport's entry points: collective submits the work (engine ops) and returns at once;
 * destroy frees ctx after its ops are done. */
typedef struct gpar_comm_transport {
  int (*collective)(void *ctx, const gpar_coll *coll);
  void (*destroy)(void *ctx);
} gpar_comm_transport;
/* Create a communicator of nmembers members, of which this process holds devs[0..ndevs-1] as
 * global members first_local.., run by transport t with context ctx. */
GPAR_API int gpar_comm_create_transport(gpar_engine *eng, const int *devs, int ndevs, int nmembers, int first_local,
                                        const gpar_comm_transport *t, void *ctx, gpar_comm *comm);
/* The ctx of a live transport communicator; NULL otherwise (gpar_last_error says why). */
GPAR_API void *gpar_comm_transport_ctx(gpar_comm comm);
/* Record status and msg as the calling thread's last error (what gpar_last_error returns, and
 * what an op's failure carries when called inside a user function); returns status. */
GPAR_API int gpar_error_set(int status, const char *msg);
/* Size in bytes of one element of dtype (0 for an unknown type). */
GPAR_API size_t gpar_dtype_size(gpar_dtype dtype);
/* ---- Per-op host-time breakdown ---------------------------------------------------------
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

/* ---- Graphs: record once, replay many ----
 * Between gpar_graph_begin and gpar_graph_end, the ops that the calling thread submits to that
 * engine (gpar_copy, gpar_write, gpar_fill, gpar_sgemm/dgemm, gpar_submit) are checked as usual
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
/* The handle is invalid at once; then wait for the graph's launches in flight, free it and let
 * go of its buffers. GPAR_EINVAL on a graph destroyed already; GPAR_EDEADLK from inside an op
 * (it would wait for itself). gpar_shutdown destroys the engine's graphs after its drain. */
GPAR_API int gpar_graph_destroy(gpar_graph *graph);

#ifdef __cplusplus
}
#endif
#endif /* GPAR_H */
