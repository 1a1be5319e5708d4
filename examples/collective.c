/* collective.c: a communicator over every device of the process and an allreduce across them,
 * as data-parallel training sums its gradients. Member r holds v_r[i] = r + i in a buffer on its
 * own device; after gpar_allreduce with GPAR_SUM every member holds the sum over the m members,
 * m i + m (m - 1) / 2. The path is libgpar's choice: CUDA GPUs with NCCL use NCCL; every other
 * set (the host CPU, OpenCL devices, a mix) is staged through pinned host memory. A collective
 * is an engine op like any other: it starts once its buffers' earlier writers are done, and
 * later ops (here gpar_read) see its result. Usage: collective [N] (default 4096 elements).
 * Exits 1 on a failed call or a wrong value. */
#include <gpar.h>
#include <stdio.h>
#include <stdlib.h>

/* Print the failed call with the status's name and libgpar's detailed message, and exit. */
static void check(int st, const char *what) {
  if (st == GPAR_OK) return;
  fprintf(stderr, "%s failed: %s (%s)\n", what, gpar_status_name(st), gpar_last_error());
  exit(1);
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096, bytes = n * sizeof(float);
  float *v = malloc(bytes);
  if (n == 0) {
    fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
    return 2;
  }
  if (!v) check(GPAR_ENOMEM, "malloc");
  gpar_engine *eng;
  check(gpar_init(&eng, NULL), "gpar_init");
  int m = gpar_device_count(eng);
  check(m < 0 ? m : GPAR_OK, "gpar_device_count");
  if (m > 64) m = 64;

  /* The members: every device (the flat list always has the host CPU; GPUs and OpenCL devices
   * when present), one buffer each on its device, member r filled with r + i. */
  int devs[64];
  gpar_buffer bufs[64];
  for (int r = 0; r < m; r++) {
    devs[r] = r;
    gpar_device_props p;
    check(gpar_device_info(eng, r, &p), "gpar_device_info");
    printf("member %d: device %d, %s: %s\n", r, r, p.backend, p.name);
    check(gpar_buffer_create(eng, r, bytes, &bufs[r]), "gpar_buffer_create");
    for (size_t i = 0; i < n; i++) v[i] = (float)(r + (int)(i % 1000));
    check(gpar_write(bufs[r], 0, v, bytes), "gpar_write"); /* staged: v is free again on return */
  }
  gpar_comm comm;
  check(gpar_comm_create(eng, devs, m, &comm), "gpar_comm_create");

  /* One call for all members: their buffers, element offsets (NULL: all 0), count, type, op. */
  check(gpar_allreduce(comm, bufs, NULL, n, GPAR_FLOAT, GPAR_SUM), "gpar_allreduce");

  for (int r = 0; r < m; r++) {
    check(gpar_read(bufs[r], 0, v, bytes), "gpar_read"); /* waits for the allreduce */
    for (size_t i = 0; i < n; i++) {
      float want = (float)(m * (int)(i % 1000) + m * (m - 1) / 2); /* integers: exact on every path */
      if (v[i] != want) {
        fprintf(stderr, "member %d: element %zu is %g, expected %g\n", r, i, v[i], want);
        return 1;
      }
    }
  }
  printf("allreduce (sum) of %zu floats over %d member%s checked on every member\n", n, m, m == 1 ? "" : "s");
  /* Destroy waits for the collectives issued on it; shutdown frees the buffers. */
  check(gpar_comm_destroy(comm), "gpar_comm_destroy");
  check(gpar_shutdown(eng), "gpar_shutdown");
  free(v);
  return 0;
}
