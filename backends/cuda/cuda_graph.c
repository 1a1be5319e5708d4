/* cuda_graph.c: CUDA graphs behind libgpar's op graphs (core/graph/launch.c). The core enqueues one
 * part of a recorded sequence on this device's lanes between graph_begin and graph_end: the
 * other lanes join the capture by waiting on an event of the compute lane and are joined back
 * the same way, so the capture yields one CUDA graph per device per part, with cross-lane edges
 * as event dependencies. A launch is then one cudaGraphLaunch on the compute lane. cuBLAS and
 * cublasLt are captured as they are: both get an explicit workspace (cuda_blas_cublas.c,
 * cuda_blas_lt.c), which graphs need, since neither can allocate one during a capture; a
 * cublasLt plan first needed during a capture is made there (host work only). Calls
 * cuda_errors.c and cuda_device.c. */
#include <stdlib.h>

#include "cuda_internal.h"

/* Thread-local mode: only the capturing dispatcher is barred from unsafe calls; the completion
 * thread keeps querying events of earlier work meanwhile. */
int gpar__cuda_graph_begin(gpar__bdev *dev, int lane) {
  return gpar__cuda_check(cudaStreamBeginCapture(dev->d.lane[lane], cudaStreamCaptureModeThreadLocal),
                          "cudaStreamBeginCapture");
}

/* Discarding a failed capture: a lane forked from the origin and not joined back would make
 * cudaStreamEndCapture fail as unjoined; while the capture is still valid, join every such lane
 * (an invalidated capture refuses any further call and only needs ending). */
static void join_lanes(struct cuda_dev *d, int lane) {
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(d->lane[lane], &cs) != cudaSuccess || cs != cudaStreamCaptureStatusActive) return;
  for (int l = 0; l < GPAR__NLANES; l++) {
    enum cudaStreamCaptureStatus ls = cudaStreamCaptureStatusNone;
    if (l == lane || !d->lane[l] || cudaStreamIsCapturing(d->lane[l], &ls) != cudaSuccess ||
        ls != cudaStreamCaptureStatusActive) /* a lane it lacks (NULL) would be the legacy stream */
      continue;
    if (cudaEventRecord(d->join_ev, d->lane[l]) != cudaSuccess ||
        cudaStreamWaitEvent(d->lane[lane], d->join_ev, 0) != cudaSuccess)
      return; /* the capture is invalidated now: ending it is all that is left */
  }
}

/* A captured part: its executable graph and its shape (gpar_graph_info). */
typedef struct cuda_graph {
  cudaGraphExec_t exec;
  uint64_t nodes, edges;
} cuda_graph;

/* The nodes and dependency edges of g (0 where CUDA does not say). */
static void graph_shape(cudaGraph_t g, cuda_graph *out) {
  size_t n = 0, e = 0;
  if (cudaGraphGetNodes(g, NULL, &n) != cudaSuccess) n = 0;
#if CUDART_VERSION >= 13000
  if (cudaGraphGetEdges(g, NULL, NULL, NULL, &e) != cudaSuccess) e = 0;
#else
  if (cudaGraphGetEdges(g, NULL, NULL, &e) != cudaSuccess) e = 0;
#endif
  (void)cudaGetLastError();
  out->nodes = n, out->edges = e;
}

int gpar__cuda_graph_end(gpar__bdev *dev, int lane, void **out) {
  struct cuda_dev *d = &dev->d;
  cudaGraph_t g = NULL;
  cudaGraphExec_t exec = NULL;
  cuda_graph shape = {0};
  if (!out) join_lanes(d, lane);
  int st = gpar__cuda_check(cudaStreamEndCapture(d->lane[lane], &g), "cudaStreamEndCapture");
  if (st == GPAR_OK && out)
    st = gpar__cuda_check(cudaGraphInstantiateWithFlags(&exec, g, 0), "cudaGraphInstantiateWithFlags");
  if (st == GPAR_OK && out) graph_shape(g, &shape);
  if (g) (void)cudaGraphDestroy(g);
  /* Ended, even when it failed: a lane still capturing would refuse the eager replay. */
  for (int l = 0; l < GPAR__NLANES; l++) {
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (!d->lane[l] || (cudaStreamIsCapturing(d->lane[l], &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone))
      continue;
    (void)cudaGetLastError();
    if (exec) (void)cudaGraphExecDestroy(exec);
    exec = NULL;
    if (st == GPAR_OK || !out)
      st = gpar__errorf(GPAR_EBACKEND, "cuda: device %d: lane %d still capturing after cudaStreamEndCapture",
                        d->ordinal, l);
    break;
  }
  cuda_graph *cg = st == GPAR_OK && out ? malloc(sizeof *cg) : NULL;
  if (st == GPAR_OK && out && !cg) st = gpar__errorf(GPAR_ENOMEM, "cuda: out of host memory");
  if (cg) {
    *cg = shape;
    cg->exec = exec;
    *out = cg;
  } else if (exec) {
    (void)cudaGraphExecDestroy(exec);
  }
  return st;
}

int gpar__cuda_graph_launch(gpar__bdev *dev, int lane, void *graph) {
  return gpar__cuda_check(cudaGraphLaunch(((cuda_graph *)graph)->exec, dev->d.lane[lane]), "cudaGraphLaunch");
}

void gpar__cuda_graph_shape(gpar__bdev *dev, void *graph, uint64_t *nodes, uint64_t *edges) {
  (void)dev;
  *nodes = ((cuda_graph *)graph)->nodes;
  *edges = ((cuda_graph *)graph)->edges;
}

/* A peer copy is captured only as the plain UVA copy that peer access allows (cuda_copy). */
int gpar__cuda_graph_copy_ok(gpar__bdev *dev, const gpar__copy_args *a) {
  return a->kind != GPAR__COPY_PEER || (a->peer && gpar__cuda_peer_on(&dev->d, a->peer->d.ordinal));
}

/* Any thread; the graph is not running (the core waited for its launches). */
void gpar__cuda_graph_destroy(gpar__bdev *dev, void *graph) {
  int prev;
  if (gpar__cuda_enter(&dev->d, &prev) != GPAR_OK) return;
  if (cudaGraphExecDestroy(((cuda_graph *)graph)->exec) != cudaSuccess) (void)cudaGetLastError();
  gpar__cuda_exit(&dev->d, prev);
  free(graph);
}
