/* kernel.c: one kernel, written once, run on every device that can build kernels: the host CPU
 * (through the system C compiler), OpenCL devices (PoCL's CPU devices, GPUs) and CUDA GPUs
 * (NVRTC). The kernel is saxpy, y = a * x + y. It is given as
 *   - a typed signature: each parameter's type, and for a buffer whether the kernel reads it
 *     (in), writes it (out) or both (inout), which is how the engine orders the launch against
 *     other work on those buffers;
 *   - a body: one work-item's code in libgpar's kernel dialect (C that every backend compiles).
 * Usage: kernel [N] (default 100000 elements). Exits 1 on a failed call or a wrong element, 77
 * when no device here can build kernels. */
#include <gpar.h>
#include <stdio.h>
#include <stdlib.h>

/* Print the failed call with the status's name and libgpar's detailed message, and exit. */
static void check(int st, const char *what) {
  if (st == GPAR_OK) return;
  fprintf(stderr, "%s failed: %s (%s)\n", what, gpar_status_name(st), gpar_last_error());
  exit(1);
}

static const char *params = "u64 n, f32 a, in f32 *x, inout f32 *y";
static const char *body =
    "gpar_u64 i = GPAR_GLOBAL_ID(0); /* this work-item's index */\n"
    "if (i < n) y[i] = a * x[i] + y[i];\n";

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000, bytes = n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *got = malloc(bytes);
  if (n == 0) {
    fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
    return 2;
  }
  if (!x || !y || !got) check(GPAR_ENOMEM, "malloc");
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)(i % 1000); /* small integers: 2 * x + 1 is exact on every device */
    y[i] = 1.0f;
  }
  gpar_engine *eng;
  check(gpar_init(&eng, NULL), "gpar_init");
  /* Made once per engine; built for a device at its first use there, then cached in memory and
   * on disk (GPAR_CACHE_DIR, by default ~/.cache/gpar), so a second run loads it. */
  gpar_kernel saxpy;
  check(gpar_kernel_create(eng, "saxpy", params, body, NULL, &saxpy), "gpar_kernel_create");

  int ndev = gpar_device_count(eng), ran = 0;
  check(ndev < 0 ? ndev : GPAR_OK, "gpar_device_count");
  for (int d = 0; d < ndev; d++) {
    /* What builds kernels on d (a compiler, OpenCL C, NVRTC), or why nothing does. */
    char how[256];
    int st = gpar_kernel_support(eng, d, how, sizeof how);
    if (st == GPAR_ENOTSUP) {
      printf("device %d: skipped, it cannot build kernels (%s)\n", d, how);
      continue;
    }
    check(st, "gpar_kernel_support");
    /* gpar_kernel_info builds the kernel for d now (not at the launch) and gives its limits. */
    gpar_kernel_props props;
    check(gpar_kernel_info(saxpy, d, &props), "gpar_kernel_info");
    uint32_t group = props.max_group_size < 256 ? props.max_group_size : 256;

    gpar_buffer bx, by;
    check(gpar_buffer_create(eng, d, bytes, &bx), "gpar_buffer_create x");
    check(gpar_buffer_create(eng, d, bytes, &by), "gpar_buffer_create y");
    check(gpar_write(bx, 0, x, bytes), "gpar_write x");
    check(gpar_write(by, 0, y, bytes), "gpar_write y");
    /* Enough groups of `group` work-items to cover n; the body skips indices past n. One argument
     * per parameter, in the signature's order, each made by its typed gpar_arg_* function. */
    gpar_grid grid = {{(uint32_t)((n + group - 1) / group)}, {group}};
    gpar_arg args[4] = {gpar_arg_u64(n), gpar_arg_f32(2.0f), gpar_arg_buffer(bx, 0), gpar_arg_buffer(by, 0)};
    check(gpar_kernel_launch(saxpy, d, &grid, args, 4), "gpar_kernel_launch"); /* returns at once */
    check(gpar_read(by, 0, got, bytes), "gpar_read y"); /* waits for the launch, which writes y */
    for (size_t i = 0; i < n; i++)
      if (got[i] != 2.0f * x[i] + y[i]) {
        fprintf(stderr, "device %d: y[%zu] = %g, expected %g\n", d, i, got[i], 2.0f * x[i] + y[i]);
        return 1;
      }
    check(gpar_buffer_release(bx), "gpar_buffer_release");
    check(gpar_buffer_release(by), "gpar_buffer_release");
    printf("device %d: saxpy of %zu elements checked (built by %.40s; groups of %u)\n", d, n, props.target,
           (unsigned)group);
    ran++;
  }
  check(gpar_kernel_release(saxpy), "gpar_kernel_release");
  check(gpar_shutdown(eng), "gpar_shutdown");
  free(x);
  free(y);
  free(got);
  if (ran == 0) printf("no device here builds kernels\n");
  return ran ? 0 : 77; /* 77: "skipped", as automake's test drivers read it */
}
