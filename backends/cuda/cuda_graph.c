/* cuda_graph.c: CUDA graphs behind libgpar's op graphs (core/graph.c). The core enqueues one
 * part of a recorded sequence on this device's lanes between graph_begin and graph_end: the
 * other lanes join the capture by waiting on an event of the compute lane and are joined back
 * the same way, so the capture yields one CUDA graph per device per part, with cross-lane edges
 * as event dependencies. A launch is then one cudaGraphLaunch on the compute lane. cuBLAS and
 * cublasLt are captured as they are: both get an explicit workspace (cuda_blas_cublas.c,
 * cuda_blas_lt.c), which graphs need, since neither can allocate one during a capture; a
 * cublasLt plan first needed during a capture is made there (host work only). */
#include "cuda_internal.h"

/* Thread-local mode: only the capturing dispatcher is barred from unsafe calls; the completion
 * thread keeps querying events of earlier work meanwhile. */
int gpar__cuda_graph_begin(gpar__bdev *dev, int lane) {
  return gpar__cuda_check(cudaStreamBeginCapture(dev->d.lane[lane], cudaStreamCaptureModeThreadLocal),
                          "cudaStreamBeginCapture");
}

int gpar__cuda_graph_end(gpar__bdev *dev, int lane, void **out) {
  cudaGraph_t g = NULL;
  cudaGraphExec_t exec = NULL;
  int st = gpar__cuda_check(cudaStreamEndCapture(dev->d.lane[lane], &g), "cudaStreamEndCapture");
  if (st == GPAR_OK && out)
    st = gpar__cuda_check(cudaGraphInstantiateWithFlags(&exec, g, 0), "cudaGraphInstantiateWithFlags");
  if (g) (void)cudaGraphDestroy(g);
  if (st == GPAR_OK && out) *out = (void *)exec;
  return st;
}

int gpar__cuda_graph_launch(gpar__bdev *dev, int lane, void *graph) {
  return gpar__cuda_check(cudaGraphLaunch((cudaGraphExec_t)graph, dev->d.lane[lane]), "cudaGraphLaunch");
}

/* Any thread; the graph is not running (the core waited for its launches). */
void gpar__cuda_graph_destroy(gpar__bdev *dev, void *graph) {
  int prev;
  if (gpar__cuda_enter(&dev->d, &prev) != GPAR_OK) return;
  if (cudaGraphExecDestroy((cudaGraphExec_t)graph) != cudaSuccess) (void)cudaGetLastError();
  gpar__cuda_exit(&dev->d, prev);
}
