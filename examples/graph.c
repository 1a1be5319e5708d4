/* graph.c: record a sequence of ops once, replay it many times. Between gpar_graph_begin and
 * gpar_graph_end the calling thread's ops are checked and recorded instead of run; each
 * gpar_graph_launch then submits the whole sequence at once (one engine op per device part; on a
 * CUDA GPU one cudaGraphLaunch), which saves the per-op host work of a loop that repeats.
 * The step recorded here runs on every device at once: y = 2 y + x (gpar_sscal, then
 * gpar_saxpy), launched STEPS times; the result is compared with the same calls made eagerly on
 * other buffers, and with the closed form y = 2^STEPS y0 + (2^STEPS - 1) x. Usage: graph [N]
 * (default 4096 elements per device). Exits 1 on a failed call or a wrong value. */
#include <gpar.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 5

/* Print the failed call with the status's name and libgpar's detailed message, and exit. */
static void check(int st, const char *what) {
  if (st == GPAR_OK) return;
  fprintf(stderr, "%s failed: %s (%s)\n", what, gpar_status_name(st), gpar_last_error());
  exit(1);
}

/* The step: y = 2 y + x, n elements (BLAS calls run on every device: cuBLAS, CLBlast, OpenBLAS). */
static void step(int n, gpar_buffer x, gpar_buffer y) {
  check(gpar_sscal(n, 2.0f, y, 0, 1), "gpar_sscal");
  check(gpar_saxpy(n, 1.0f, x, 0, 1, y, 0, 1), "gpar_saxpy");
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4096;
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
  float *x = malloc(bytes), *y0 = malloc(bytes), *got = malloc(bytes), *eager = malloc(bytes);
  if (n < 1) {
    fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
    return 2;
  }
  if (!x || !y0 || !got || !eager) check(GPAR_ENOMEM, "malloc");
  for (int i = 0; i < n; i++) {
    x[i] = (float)(i % 10); /* small integers: every result below is exact */
    y0[i] = 1.0f;
  }
  gpar_engine *eng;
  check(gpar_init(&eng, NULL), "gpar_init");
  int ndev = gpar_device_count(eng);
  check(ndev < 0 ? ndev : GPAR_OK, "gpar_device_count");
  if (ndev > 64) ndev = 64;
  /* Per device: x, y for the graph, and y for the eager run, all written with the same data. */
  gpar_buffer bx[64], bg[64], be[64];
  for (int d = 0; d < ndev; d++) {
    check(gpar_buffer_create(eng, d, bytes, &bx[d]), "gpar_buffer_create");
    check(gpar_buffer_create(eng, d, bytes, &bg[d]), "gpar_buffer_create");
    check(gpar_buffer_create(eng, d, bytes, &be[d]), "gpar_buffer_create");
    check(gpar_write(bx[d], 0, x, bytes), "gpar_write");
    check(gpar_write(bg[d], 0, y0, bytes), "gpar_write");
    check(gpar_write(be[d], 0, y0, bytes), "gpar_write");
  }

  /* Record one step on every device: nothing runs yet (waits and reads are refused meanwhile). */
  gpar_graph *g;
  check(gpar_graph_begin(eng), "gpar_graph_begin");
  for (int d = 0; d < ndev; d++) step(n, bx[d], bg[d]);
  check(gpar_graph_end(eng, &g), "gpar_graph_end");
  gpar_graph_props props;
  check(gpar_graph_info(g, &props), "gpar_graph_info");
  printf("recorded %d ops in %d parts (one per device: they do not depend on each other)\n", props.ops, props.parts);

  /* Replay it STEPS times (launches in a row stay in order), and the same calls eagerly. */
  for (int t = 0; t < STEPS; t++) check(gpar_graph_launch(g), "gpar_graph_launch");
  for (int t = 0; t < STEPS; t++)
    for (int d = 0; d < ndev; d++) step(n, bx[d], be[d]);
  check(gpar_wait_all(eng), "gpar_wait_all");

  for (int d = 0; d < ndev; d++) {
    check(gpar_read(bg[d], 0, got, bytes), "gpar_read");
    check(gpar_read(be[d], 0, eager, bytes), "gpar_read");
    if (memcmp(got, eager, bytes) != 0) {
      fprintf(stderr, "device %d: the graph's result differs from the eager one\n", d);
      return 1;
    }
    for (int i = 0; i < n; i++) {
      float want = (float)(1 << STEPS) * y0[i] + (float)((1 << STEPS) - 1) * x[i];
      if (got[i] != want) {
        fprintf(stderr, "device %d: y[%d] = %g, expected %g\n", d, i, got[i], want);
        return 1;
      }
    }
    printf("device %d: %d launches equal %d eager steps\n", d, STEPS, STEPS);
  }
  /* Destroy waits for launches still in flight, then lets go of the buffers it kept alive. */
  check(gpar_graph_destroy(g), "gpar_graph_destroy");
  check(gpar_shutdown(eng), "gpar_shutdown");
  free(x);
  free(y0);
  free(got);
  free(eager);
  return 0;
}
