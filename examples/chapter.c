/* chapter.c: the two experiments of D2L's "Automatic Parallelism" through libgpar, as a user
 * writes them: (1) run(x) on every device at once with one wait; (2) copy each result to pinned
 * host memory while the next GEMMs still run. Sized for CPUs; pass N ITERS (4000 50 on GPUs). */
#include <gpar.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 256, iters = argc > 2 ? atoi(argv[2]) : 10;
  size_t bytes = (size_t)n * (size_t)n * sizeof(float);
  gpar_engine *eng;
  if (gpar_init(&eng, NULL)) return fprintf(stderr, "gpar_init: %s\n", gpar_last_error()), 1;
  int ndev = gpar_device_count(eng);
  gpar_buffer x[16], y[16], host[64], out[64];
  for (int k = 0; k < ndev && k < 16; k++) {
    gpar_buffer_create(eng, k, bytes, &x[k]);
    gpar_buffer_create(eng, k, bytes, &y[k]);
    gpar_fill(x[k], 0, bytes, 0);
  }
  int d = (ndev < 16 ? ndev : 16) - 1; /* experiment 2 runs on the last device */
  for (int i = 0; i < iters && i < 64; i++) {
    gpar_buffer_create(eng, GPAR_HOST, bytes, &host[i]);
    gpar_buffer_create(eng, d, bytes, &out[i]);
  }
  /* Experiment 1: the same run(x) on every device, submitted from one thread, one wait. */
  double t = gpar_now();
  for (int i = 0; i < iters; i++)
    for (int k = 0; k < ndev && k < 16; k++)
      gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, x[k], 0, n, x[k], 0, n, 0.0f, y[k], 0, n);
  int st = gpar_wait_all(eng);
  printf("run(x) on all %d devices: %.4f sec (%s)\n", ndev, gpar_now() - t, gpar_strerror(st));
  /* Experiment 2: each result is copied to the host as soon as its GEMM is done; the copy
   * lane runs beside the compute lane, so only the last copy adds to the time. */
  t = gpar_now();
  for (int i = 0; i < iters && i < 64; i++) {
    gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, x[d], 0, n, x[d], 0, n, 0.0f, out[i], 0, n);
    gpar_copy(host[i], 0, out[i], 0, bytes);
  }
  st = gpar_wait_all(eng);
  printf("run and copy to CPU on device %d: %.4f sec (%s)\n", d, gpar_now() - t, gpar_strerror(st));
  return gpar_shutdown(eng) ? 1 : 0;
}
