/* chapter.c: the two experiments of Dive into Deep Learning's "Automatic Parallelism" chapter
 * through libgpar, as a user writes them:
 *   1. run(x) on every device at once: ITERS SGEMMs y = x * x per device, all submitted from
 *      one thread, then one wait for all of them;
 *   2. on one device, each result copied to pinned host memory as soon as its GEMM is done, while
 *      the later GEMMs still run (the copy lane works beside the compute lane).
 * Devices: the CUDA GPUs, else the OpenCL GPUs, else every device there is (the host CPU and
 * OpenCL CPU devices such as PoCL's). Usage: chapter [N [ITERS]]; by default N = 4000 on GPUs,
 * 128 on CPUs, and ITERS = 50. x is all 0.5, so every element of x * x is N / 4: the results are
 * checked, and a wrong value (or any failed call) exits with status 1. */
#include <gpar.h>
#include <stdio.h>
#include <stdlib.h>

/* Every libgpar call returns a status: GPAR_OK (0) or a negative error. One helper checks them
 * all: on an error it prints the status's name and libgpar's detailed message, then exits. */
static void check(int st, const char *what) {
  if (st == GPAR_OK) return;
  fprintf(stderr, "%s failed: %s (%s)\n", what, gpar_status_name(st), gpar_last_error());
  exit(1);
}

/* Every element of p[0 .. count) must be want (N / 4 is exact in float: no tolerance needed). */
static void verify(const float *p, size_t count, float want, const char *what) {
  for (size_t i = 0; i < count; i++)
    if (p[i] != want) {
      fprintf(stderr, "%s: element %zu is %g, expected %g\n", what, i, p[i], want);
      exit(1);
    }
}

/* The devices to use in devs (at most max), their number returned; *gpu says whether they are GPUs. */
static int pick_devices(gpar_engine *eng, int *devs, int max, int *gpu) {
  const int backends[2] = {GPAR_BACKEND_CUDA, GPAR_BACKEND_OPENCL};
  int n = 0;
  for (int b = 0; b < 2 && n == 0; b++) /* gpar_device_find: the n-th GPU of a backend, or < 0 */
    for (int d; n < max && (d = gpar_device_find(eng, backends[b], GPAR_DEVICE_GPU, n)) >= 0;) devs[n++] = d;
  *gpu = n > 0;
  if (n) return n;
  int count = gpar_device_count(eng); /* the flat list: host CPU first, then CUDA, then OpenCL */
  check(count < 0 ? count : GPAR_OK, "gpar_device_count");
  for (; n < count && n < max; n++) devs[n] = n;
  return n;
}

int main(int argc, char **argv) {
  gpar_engine *eng;
  check(gpar_init(&eng, NULL), "gpar_init"); /* every device of every backend built in */
  int devs[64], gpu, ndev = pick_devices(eng, devs, 64, &gpu);
  int n = argc > 1 ? atoi(argv[1]) : gpu ? 4000 : 128, iters = argc > 2 ? atoi(argv[2]) : 50;
  if (n < 1 || iters < 1) {
    fprintf(stderr, "usage: %s [N [ITERS]]\n", argv[0]);
    return 2;
  }
  size_t count = (size_t)n * (size_t)n, bytes = count * sizeof(float);
  float *half = malloc(bytes), *got = malloc(bytes);
  gpar_buffer x[64], y[64], *out = calloc((size_t)iters, sizeof *out), *host = calloc((size_t)iters, sizeof *host);
  if (!half || !got || !out || !host) check(GPAR_ENOMEM, "malloc");
  for (size_t i = 0; i < count; i++) half[i] = 0.5f;

  /* x and y on every device; x written from host memory (gpar_write returns at once: the data is
   * staged, so `half` may be reused right away). */
  for (int k = 0; k < ndev; k++) {
    check(gpar_buffer_create(eng, devs[k], bytes, &x[k]), "gpar_buffer_create x");
    check(gpar_buffer_create(eng, devs[k], bytes, &y[k]), "gpar_buffer_create y");
    check(gpar_write(x[k], 0, half, bytes), "gpar_write x");
  }
  /* Experiment 2 uses the last device: ITERS results there, ITERS pinned host buffers (GPAR_HOST). */
  int d = ndev - 1;
  for (int i = 0; i < iters; i++) {
    check(gpar_buffer_create(eng, devs[d], bytes, &out[i]), "gpar_buffer_create out");
    check(gpar_buffer_create(eng, GPAR_HOST, bytes, &host[i]), "gpar_buffer_create host");
  }
  check(gpar_wait_all(eng), "setup"); /* the writes done before the clocks start */

  /* Experiment 1: the same run(x) on every device, submitted from one thread; each call returns
   * at once, the devices work in parallel, and one wait collects them all. */
  double t = gpar_now();
  for (int i = 0; i < iters; i++)
    for (int k = 0; k < ndev; k++)
      check(gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, x[k], 0, n, x[k], 0, n, 0.0f, y[k], 0, n),
            "gpar_sgemm");
  check(gpar_wait_all(eng), "experiment 1");
  printf("run(x) on %d device%s, %d SGEMMs of %d^3 each: %.4f sec\n", ndev, ndev == 1 ? "" : "s", iters, n,
         gpar_now() - t);
  for (int k = 0; k < ndev; k++) {
    check(gpar_read(y[k], 0, got, bytes), "gpar_read y"); /* into our memory, once y is written */
    verify(got, count, n / 4.0f, "experiment 1");
  }

  /* Experiment 2: each result is copied to the host as soon as its GEMM is done (the engine
   * orders the copy after the GEMM that writes out[i]); the copies overlap the later GEMMs, so
   * only the last copy adds to the time. */
  t = gpar_now();
  for (int i = 0; i < iters; i++) {
    check(gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, x[d], 0, n, x[d], 0, n, 0.0f, out[i], 0, n),
          "gpar_sgemm");
    check(gpar_copy(host[i], 0, out[i], 0, bytes), "gpar_copy");
  }
  check(gpar_wait_all(eng), "experiment 2");
  printf("run and copy to pinned host memory on device %d: %.4f sec\n", devs[d], gpar_now() - t);
  for (int i = 0; i < iters; i++) /* pinned host memory is readable in place once its writers are done */
    verify(gpar_buffer_host_ptr(host[i]), count, n / 4.0f, "experiment 2");

  /* gpar_shutdown drains what is left and frees every buffer of the engine. */
  check(gpar_shutdown(eng), "gpar_shutdown");
  free(half);
  free(got);
  free(out);
  free(host);
  printf("results checked: every element is %g\n", n / 4.0f);
  return 0;
}
