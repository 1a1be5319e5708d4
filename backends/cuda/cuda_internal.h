/* cuda_internal.h: the CUDA backend's private types (backend, device, event pool, cublasLt plans)
 * and the calls its files share, listed file by file from the bottom layer up. Included only by
 * the .c files of backends/cuda, never by core/.
 *
 * Layers (bottom first): cuda_errors.c cuda_device.c cuda_memory.c cuda_events.c cuda_blas_lt.c cuda_blas_cublas.c cuda_blas_vec.c cuda_graph.c cuda_nccl.c cuda_kernel.c cuda_table.c
 *
 * A file calls only into files listed before it (and cudart, cuBLAS, cublasLt, NCCL):
 *   cuda_errors.c       cudart and cuBLAS/cublasLt statuses -> gpar statuses and messages
 *   cuda_device.c       the device bracket; probe and device info; a device's lanes, private
 *                       alloc stream, memory pool, peer access; thread binding; lane sync
 *   cuda_memory.c       device and pinned host memory; copies and fills on a lane
 *   cuda_events.c       the pooled events and the event entries
 *   cuda_blas_lt.c      cublasLt plans cached per GEMM shape, batch and types
 *   cuda_blas_cublas.c  the cuBLAS handle and workspace, and the gemm and gemm_ex entries
 *                       (cublasLt plan, else cublasSgemm/Dgemm, their StridedBatched forms,
 *                       cublasGemmEx / cublasGemmStridedBatchedEx)
 *   cuda_blas_vec.c     the gemv, axpy, scal and dot entries (cuBLAS on the compute lane)
 *   cuda_graph.c        CUDA graphs: stream capture of the lanes
 *   cuda_nccl.c         NCCL collectives (built with NCCL only; keeps NCCL's own status mapping,
 *                       so that cuda_errors.c builds without NCCL)
 *   cuda_kernel.c       kernels: NVRTC (loaded at run time) to cubins, cudaLibraryLoadData,
 *                       cudaLaunchKernel (built with NVRTC's header only)
 *   cuda_table.c        gpar__cuda_backend: the table, and device open/close, which put the
 *                       layers together */
#ifndef GPAR_CUDA_INTERNAL_H
#define GPAR_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <cublas_v2.h>

#include "backend.h"

struct gpar__backend {
  int ndev;
  int tf32;
  int lanes; /* compute lanes per device (gpar_config.lanes) */
  int lt; /* 1: GEMMs through cached cublasLt plans (cuda_blas_lt.c); 0: cublasSgemm/Dgemm (GPAR_CUBLASLT=0) */
  double comm_timeout; /* GPAR_COMM_TIMEOUT, seconds: the longest an NCCL call may stay in progress (cuda_nccl.c) */
  char nvrtc[256];     /* gpar_config.kernel_nvrtc: the NVRTC library kernels load ("": the default list) */
};

/* cuBLAS workspace per compute lane, set by us so cuBLAS never allocates (and synchronises) on its own;
 * cublasLt plans use the same one (same stream, so never two GEMMs in it at once). 32 MiB is
 * NVIDIA's recommendation for Hopper. */
#define CUDA_BLAS_WORKSPACE ((size_t)32 << 20)

/* cublasLt plans kept per compute lane; the least recently used one goes. */
#define CUDA_LT_PLANS 32

/* What identifies a plan: everything cublasLt's heuristic saw, in the key both GPU backends
 * share (core/backend_blas.h: shape, types, batch, strides) with its align_* and tf32 fields set.
 * Alignments are the largest power of two (at most 256) dividing the operand's address, its
 * leading dimension and (batches) its stride in bytes. alpha and beta are always host pointers
 * (cublasLt's default pointer mode). */

enum { CUDA_LT_EMPTY = 0, CUDA_LT_READY, CUDA_LT_NONE /* no algorithm: cublasSgemm/Dgemm */ };

struct cuda_lt_plan {
  gpar__gemm_key key;
  int state; /* CUDA_LT_* */
  uint64_t used; /* cache tick of the last use (LRU) */
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
};

/* One per compute lane (struct cuda_blas). */
struct cuda_lt_cache {
  cublasLtHandle_t lt;
  struct cuda_lt_plan plan[CUDA_LT_PLANS];
  uint64_t tick;
  int last; /* index of the plan used last: looked at first */
  _Atomic uint64_t calls;     /* GEMMs run through a plan */
  _Atomic uint64_t fallbacks; /* GEMMs run by cublasSgemm/Dgemm instead */
};

struct cuda_dev;

/* One compute lane's BLAS (cuda_blas_cublas.c): its cuBLAS handle bound to the lane's stream,
 * the workspace that handle and cublasLt share (one stream: never two GEMMs in it at once), and
 * its cublasLt plans. Touched only by the thread that issues the lane (and open/close); the
 * counters are read by gpar_stats_get from any thread. */
struct cuda_blas {
  gpar__backend *be;
  cudaStream_t s;
  cublasHandle_t h;
  void *ws; /* CUDA_BLAS_WORKSPACE bytes */
  struct cuda_lt_cache lt;
};

struct gpar__event {
  cudaEvent_t ev;
  struct cuda_dev *owner;
  int timing;
  struct gpar__event *next;
};

/* Free list of events of one kind (timing or not). */
struct cuda_event_pool {
  gpar__event *free;
};

struct cuda_dev {
  gpar__backend *be;
  int ordinal;
  int lanes;                 /* compute lanes (decided by gpar_init): lane[0 .. lanes - 1] and the copy lanes */
  cudaStream_t lane[GPAR__NLANES];
  cudaStream_t alloc_stream; /* private, otherwise idle: only cudaMallocAsync/cudaFreeAsync */
  struct cuda_blas blas[GPAR__COMPUTE_LANES_MAX]; /* [k]: compute lane k's (cuda_blas_cublas.c) */
  cudaMemPool_t pool;
  uint64_t old_threshold; /* the default pool's threshold before us, restored at close */
  pthread_mutex_t ev_lock;
  struct cuda_event_pool ev_pool[2]; /* [0]: timing disabled, [1]: timing */
  uint64_t peer_on;   /* bit j: this device has peer access to device ordinal j enabled (j < 64) */
  cudaEvent_t join_ev; /* cuda_graph.c: joins lanes back into a capture that is discarded (made with the lanes) */
};

/* 1 when d has peer access to device ordinal peer enabled (peer copies are then plain UVA
 * copies, which a stream capture accepts; cudaMemcpyPeerAsync is refused while capturing). */
static inline int gpar__cuda_peer_on(const struct cuda_dev *d, int peer) {
  return peer >= 0 && peer < 64 && (d->peer_on >> peer & 1);
}

/* gpar__bdev is opaque to the core; here it is a cuda_dev. */
struct gpar__bdev {
  struct cuda_dev d;
};

/* The BLAS of a compute lane of d; NULL for a copy lane or one d does not have. */
static inline struct cuda_blas *gpar__cuda_blas_of(struct cuda_dev *d, int lane) {
  return gpar__lane_is_compute(lane) && lane < d->lanes ? &d->blas[lane] : NULL;
}

/* ---- cuda_errors.c ---- */

/* GPAR_OK on cudaSuccess; else clear the thread's last error and report "what: name (text)". */
GPAR__HIDDEN int gpar__cuda_check(cudaError_t e, const char *what);
/* GPAR_OK or the failure of a cuBLAS / cublasLt call, reported as "what: name (text)". */
GPAR__HIDDEN int gpar__cublas_check(cublasStatus_t s, const char *what);

/* ---- cuda_device.c ---- */

/* The device bracket: every switch of the calling thread's current device outside the
 * dispatcher's bind_thread goes through it, so the caller's device is what it was afterwards.
 *   int prev;
 *   if ((st = gpar__cuda_enter(d, &prev))) return st;
 *   ... work on d ...
 *   gpar__cuda_exit(d, prev);
 * enter makes d current (always through cudaSetDevice, so that its context is current in a thread
 * that never used CUDA) and remembers the previous device;
 * on failure nothing changed and the status is returned. exit restores the previous device. */
GPAR__HIDDEN int gpar__cuda_enter(const struct cuda_dev *d, int *prev);
GPAR__HIDDEN void gpar__cuda_exit(const struct cuda_dev *d, int prev);

/* The backend's probe entries: open (count devices; no device is GPAR_ENODEV), close,
 * device_info, peer_ok, can_wait. */
GPAR__HIDDEN int gpar__cuda_open(const gpar_config *cfg, int lanes, gpar__backend **be, int *ndev);
GPAR__HIDDEN void gpar__cuda_close(gpar__backend *be);
GPAR__HIDDEN int gpar__cuda_device_info(gpar__backend *be, int idx, struct gpar_device_info *info);
GPAR__HIDDEN int gpar__cuda_peer_ok(gpar__backend *be, int src_idx, int dst_idx);
GPAR__HIDDEN int gpar__cuda_can_wait(gpar__backend *be, int producer_idx, int consumer_idx);

/* d's own resources (d current, d->be and d->ordinal set): peer access, lanes, the private
 * alloc stream, the default memory pool's threshold and peers' access, the join event. On
 * failure what was made stays for gpar__cuda_dev_fini. */
GPAR__HIDDEN int gpar__cuda_dev_init(struct cuda_dev *d);
/* Wait for d's lanes and alloc stream (d current). */
GPAR__HIDDEN void gpar__cuda_dev_quiesce(struct cuda_dev *d);
/* Free what gpar__cuda_dev_init made (d current, lanes idle); safe on a partial init. */
GPAR__HIDDEN void gpar__cuda_dev_fini(struct cuda_dev *d);
/* The backend's bind_thread, native and lane_sync entries. */
GPAR__HIDDEN int gpar__cuda_bind_thread(gpar__bdev *dev);
GPAR__HIDDEN int gpar__cuda_native(gpar__bdev *dev, int lane, gpar_native *out);
GPAR__HIDDEN int gpar__cuda_lane_sync(gpar__bdev *dev, int lane);

/* ---- cuda_memory.c: the backend's memory, copy and fill entries ---- */

GPAR__HIDDEN int gpar__cuda_mem_alloc(gpar__bdev *dev, size_t bytes, void **mem);
GPAR__HIDDEN void gpar__cuda_mem_free(gpar__bdev *dev, void *mem);
GPAR__HIDDEN int gpar__cuda_mem_import(gpar__bdev *dev, void *ptr, size_t bytes, void **mem);
GPAR__HIDDEN int gpar__cuda_host_alloc(gpar__backend *be, size_t bytes, void **ptr);
GPAR__HIDDEN void gpar__cuda_host_free(gpar__backend *be, void *ptr);
GPAR__HIDDEN int gpar__cuda_host_register(gpar__backend *be, void *ptr, size_t bytes, void **token);
GPAR__HIDDEN void gpar__cuda_host_unregister(gpar__backend *be, void *token);
GPAR__HIDDEN int gpar__cuda_copy(gpar__bdev *dev, int lane, const gpar__copy_args *a);
GPAR__HIDDEN int gpar__cuda_fill(gpar__bdev *dev, int lane, void *mem, size_t off, size_t bytes, unsigned char value);

/* ---- cuda_events.c ---- */

/* d's event pools: init (the lock; first thing of a device open) and fini (every pooled event
 * and the lock; last thing of a close) pair up; prefill creates events up front (d current). */
GPAR__HIDDEN void gpar__cuda_events_init(struct cuda_dev *d);
GPAR__HIDDEN int gpar__cuda_events_prefill(struct cuda_dev *d);
GPAR__HIDDEN void gpar__cuda_events_fini(struct cuda_dev *d);
/* The backend's event entries. */
GPAR__HIDDEN int gpar__cuda_event_record(gpar__bdev *dev, int lane, unsigned flags, gpar__event **evp);
GPAR__HIDDEN int gpar__cuda_event_record_native(gpar__bdev *dev, void *stream, gpar__event **ev);
GPAR__HIDDEN int gpar__cuda_native_wait_event(gpar__bdev *dev, void *stream, gpar__event *ev);
GPAR__HIDDEN int gpar__cuda_event_wait(gpar__bdev *dev, int lane, gpar__event *ev);
GPAR__HIDDEN int gpar__cuda_event_query(gpar__event *ev);
GPAR__HIDDEN int gpar__cuda_event_sync(gpar__event *ev);
GPAR__HIDDEN void gpar__cuda_event_release(gpar__event *ev);
GPAR__HIDDEN int gpar__cuda_event_elapsed(gpar__event *start, gpar__event *end, double *ms);

/* ---- cuda_blas_lt.c: GEMM through cublasLt plans cached per shape ---- */

/* Create d's cublasLt handle (d current; d->blas_ws allocated). */
GPAR__HIDDEN int gpar__cuda_lt_open(struct cuda_blas *b);
/* Destroy the plans and the handle. Safe on a partial open. */
GPAR__HIDDEN void gpar__cuda_lt_close(struct cuda_blas *b);
/* Enqueue the GEMM (alpha != 0, k > 0; any batch and types) through d's cached plan for its
 * shape, making the plan the first time. *ran = 0 with GPAR_OK when cublasLt has no algorithm for
 * it (the caller then uses cuBLAS's own call); no allocation or synchronisation, so it can be
 * captured in a graph. */
GPAR__HIDDEN int gpar__cuda_lt_gemm(struct cuda_blas *b, const gpar__gemm_ex_args *a, int *ran);

/* ---- cuda_blas_cublas.c ---- */

/* Create d's cuBLAS handle on its compute lane with its own workspace, and its cublasLt handle
 * unless GPAR_CUBLASLT=0 (d current). */
GPAR__HIDDEN int gpar__cuda_blas_open(struct cuda_dev *d);
/* Destroy what gpar__cuda_blas_open made (d current; lanes idle). Safe on a partial open. */
GPAR__HIDDEN void gpar__cuda_blas_close(struct cuda_dev *d);
/* The backend's gemm and gemm_ex entries (cublasLt or cuBLAS on the compute lane). */
GPAR__HIDDEN int gpar__cuda_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *a);
GPAR__HIDDEN int gpar__cuda_gemm_ex(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *a);
/* The backend's gemm_counts entry: GEMMs run through a cublasLt plan and by cublasSgemm/Dgemm. */
GPAR__HIDDEN void gpar__cuda_gemm_counts(gpar__bdev *dev, uint64_t *planned, uint64_t *fallback);

/* ---- cuda_blas_vec.c: the backend's gemv, axpy, scal and dot entries ---- */

GPAR__HIDDEN int gpar__cuda_gemv(gpar__bdev *dev, int lane, const gpar__gemv_args *a);
GPAR__HIDDEN int gpar__cuda_axpy(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
GPAR__HIDDEN int gpar__cuda_scal(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
GPAR__HIDDEN int gpar__cuda_dot(gpar__bdev *dev, int lane, const gpar__blas1_args *a);

/* ---- cuda_graph.c: the backend's graph entries (stream capture of the lanes) ---- */

GPAR__HIDDEN int gpar__cuda_graph_begin(gpar__bdev *dev, int lane);
GPAR__HIDDEN int gpar__cuda_graph_end(gpar__bdev *dev, int lane, void **graph);
GPAR__HIDDEN int gpar__cuda_graph_launch(gpar__bdev *dev, int lane, void *graph);
GPAR__HIDDEN void gpar__cuda_graph_destroy(gpar__bdev *dev, void *graph);
GPAR__HIDDEN void gpar__cuda_graph_shape(gpar__bdev *dev, void *graph, uint64_t *nodes, uint64_t *edges);
GPAR__HIDDEN int gpar__cuda_graph_copy_ok(gpar__bdev *dev, const gpar__copy_args *a);

/* ---- cuda_nccl.c (built with NCCL only: weak, NULL otherwise): the collective entries ---- */

GPAR__HIDDEN int gpar__cuda_comm_create(gpar__backend *be, const int *bidx, int n, void **comm) __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_coll(gpar__bdev *dev, int lane, const gpar__coll_args *a) __attribute__((weak));
GPAR__HIDDEN void gpar__cuda_comm_destroy(void *comm) __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_comm_check(void *comm) __attribute__((weak));
GPAR__HIDDEN void gpar__cuda_comm_abort(void *comm) __attribute__((weak));

/* ---- cuda_kernel.c (built with NVRTC's header only: weak, NULL otherwise): the kernel entries ---- */

GPAR__HIDDEN int gpar__cuda_kernel_target(gpar__bdev *dev, char *buf, size_t cap, char *files, size_t fcap)
    __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_kernel_ident(gpar__bdev *dev, char *buf, size_t cap) __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_kernel_source(gpar__bdev *dev, const char *target, const gpar__kernel_def *def, char **src,
                                          char *opts, size_t optcap) __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_kernel_compile(gpar__bdev *dev, const char *src, const char *opts, void **bin, size_t *len,
                                           char **log) __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_kernel_load(gpar__bdev *dev, const void *bin, size_t len, const char *name, void **module,
                                        gpar__klimits *lim) __attribute__((weak));
GPAR__HIDDEN void gpar__cuda_kernel_unload(gpar__bdev *dev, void *module) __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_kernel_launch(gpar__bdev *dev, int lane, void *module, const gpar__kernel_launch *l)
    __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_kernel_host_ptr(gpar__bdev *dev, void *ptr, void **mem) __attribute__((weak));

/* ---- cuda_table.c: gpar__cuda_backend (core/backend.h) ---- */

#endif
