/* cuda_internal.h: the CUDA backend's private types (backend, device, event pool) and the calls
 * its files share: error checks and the one "switch to this device, then restore" bracket.
 * Included only by the .c files of backends/cuda (and files other features add there), never
 * by core/. */
#ifndef GPAR_CUDA_INTERNAL_H
#define GPAR_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cublas_v2.h>

#include "backend.h"

struct gpar__backend {
  int ndev;
  int tf32;
};

struct cuda_dev;

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
  cudaStream_t lane[GPAR__NLANES];
  cudaStream_t alloc_stream; /* private, otherwise idle: only cudaMallocAsync/cudaFreeAsync */
  cublasHandle_t blas;       /* cuda_blas_cublas.c: bound to lane[GPAR__LANE_COMPUTE] */
  void *blas_ws;
  cudaMemPool_t pool;
  uint64_t old_threshold; /* the default pool's threshold before us, restored at close */
  pthread_mutex_t ev_lock;
  struct cuda_event_pool ev_pool[2]; /* [0]: timing disabled, [1]: timing */
  uint64_t peer_on;   /* bit j: this device has peer access to device ordinal j enabled (j < 64) */
  cudaEvent_t join_ev; /* cuda_graph.c: joins lanes back into a capture that is discarded */
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

/* ---- cuda_backend.c ---- */

/* GPAR_OK on cudaSuccess; else clear the thread's last error and report "what: name (text)". */
GPAR__HIDDEN int gpar__cuda_check(cudaError_t e, const char *what);

/* The device bracket: every switch of the calling thread's current device outside the
 * dispatcher's bind_thread goes through it, so the caller's device is what it was afterwards.
 *   int prev;
 *   if ((st = gpar__cuda_enter(d, &prev))) return st;
 *   ... work on d ...
 *   gpar__cuda_exit(d, prev);
 * enter makes d current (no cudaSetDevice when it already is) and remembers the previous device;
 * on failure nothing changed and the status is returned. exit restores the previous device. */
GPAR__HIDDEN int gpar__cuda_enter(const struct cuda_dev *d, int *prev);
GPAR__HIDDEN void gpar__cuda_exit(const struct cuda_dev *d, int prev);

/* ---- cuda_blas_cublas.c ---- */

/* Create d's cuBLAS handle on its compute lane with its own workspace (d current). */
GPAR__HIDDEN int gpar__cuda_blas_open(struct cuda_dev *d);
/* Destroy what gpar__cuda_blas_open made (d current; lanes idle). Safe on a partial open. */
GPAR__HIDDEN void gpar__cuda_blas_close(struct cuda_dev *d);
/* The backend's gemm entry (cuBLAS on the compute lane). */
GPAR__HIDDEN int gpar__cuda_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *a);

/* ---- cuda_nccl.c (built with NCCL only: weak, NULL otherwise) ---- */

GPAR__HIDDEN int gpar__cuda_comm_create(gpar__backend *be, const int *bidx, int n, void **comm) __attribute__((weak));
GPAR__HIDDEN int gpar__cuda_coll(gpar__bdev *dev, int lane, const gpar__coll_args *a) __attribute__((weak));
GPAR__HIDDEN void gpar__cuda_comm_destroy(void *comm) __attribute__((weak));

/* ---- cuda_graph.c: the backend's graph entries (stream capture of the lanes) ---- */

GPAR__HIDDEN int gpar__cuda_graph_begin(gpar__bdev *dev, int lane);
GPAR__HIDDEN int gpar__cuda_graph_end(gpar__bdev *dev, int lane, void **graph);
GPAR__HIDDEN int gpar__cuda_graph_launch(gpar__bdev *dev, int lane, void *graph);
GPAR__HIDDEN void gpar__cuda_graph_destroy(gpar__bdev *dev, void *graph);
GPAR__HIDDEN int gpar__cuda_graph_copy_ok(gpar__bdev *dev, const gpar__copy_args *a);

#endif
