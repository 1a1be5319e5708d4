/* map.c: elementwise work without writing a whole kernel, on every device that runs it.
 *   - A map (gpar_map_create, gpar_map_launch): a parameter list and one C expression run for
 *     every index i < n, in the spirit of CuPy's ElementwiseKernel; here y = a * x + b.
 *   - Array ops, built in: gpar_unary (relu, exp, ...), gpar_binary (add, mul, max, ...) and
 *     gpar_reduce_range (sum, max, min of a range).
 * It computes y = relu(2 x + 1), z = y * x, and the sum and the max of z, then checks them
 * against the same arithmetic done here in C. On GPUs and OpenCL devices the array ops are
 * kernels and on the host CPU plain C; a map is a kernel everywhere, so a device must be able to
 * build kernels (gpar_kernel_support). Usage: map [N] (default 10000). Exits 1 on a failed call
 * or a wrong value, 77 when no device can build kernels. */
#include <gpar.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Print the failed call with the status's name and libgpar's detailed message, and exit. */
static void check(int st, const char *what) {
  if (st == GPAR_OK) return;
  fprintf(stderr, "%s failed: %s (%s)\n", what, gpar_status_name(st), gpar_last_error());
  exit(1);
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000, bytes = n * sizeof(float);
  float *x = malloc(bytes), *z = malloc(bytes), *got = malloc(bytes), max = 0;
  double sum = 0;
  if (n == 0) {
    fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
    return 2;
  }
  if (!x || !z || !got) check(GPAR_ENOMEM, "malloc");
  for (size_t i = 0; i < n; i++) { /* the reference, in plain C: small integers, exact in float */
    x[i] = (float)((int)(i % 7) - 3);
    float y = 2 * x[i] + 1 > 0 ? 2 * x[i] + 1 : 0;
    z[i] = y * x[i];
    sum += z[i];
    max = z[i] > max ? z[i] : max;
  }
  gpar_engine *eng;
  check(gpar_init(&eng, NULL), "gpar_init");
  gpar_map affine; /* scalars are `TYPE name`; arrays `in|out|inout TYPE name`, each one element here */
  check(gpar_map_create(eng, "affine", "f32 a, f32 b, in f32 x, out f32 y", "y = a * x + b", &affine),
        "gpar_map_create");

  int ndev = gpar_device_count(eng), ran = 0;
  check(ndev < 0 ? ndev : GPAR_OK, "gpar_device_count");
  for (int d = 0; d < ndev; d++) {
    char how[256];
    int st = gpar_kernel_support(eng, d, how, sizeof how);
    if (st == GPAR_ENOTSUP) {
      printf("device %d: skipped, it cannot build kernels (%s)\n", d, how);
      continue;
    }
    check(st, "gpar_kernel_support");
    gpar_buffer bx, by, bz, bout; /* every operand of one op on one device: ops run where their output is */
    check(gpar_buffer_create(eng, d, bytes, &bx), "gpar_buffer_create");
    check(gpar_buffer_create(eng, d, bytes, &by), "gpar_buffer_create");
    check(gpar_buffer_create(eng, d, bytes, &bz), "gpar_buffer_create");
    check(gpar_buffer_create(eng, d, 2 * sizeof(float), &bout), "gpar_buffer_create");
    check(gpar_write(bx, 0, x, bytes), "gpar_write");

    /* The map's arguments: typed scalars, then arrays as buffer + byte offset, in its order. */
    gpar_arg args[4] = {gpar_arg_f32(2.0f), gpar_arg_f32(1.0f), gpar_arg_buffer(bx, 0), gpar_arg_buffer(by, 0)};
    check(gpar_map_launch(affine, n, args, 4), "gpar_map_launch"); /* y = 2 x + 1 */
    /* Array ops take offsets in elements. Each call returns at once; the engine runs them in the
     * order their buffers require (the relu after the map, the product after the relu, ...). */
    check(gpar_unary(GPAR_UN_RELU, GPAR_FLOAT, n, by, 0, by, 0), "gpar_unary");          /* in place */
    check(gpar_binary(GPAR_BIN_MUL, GPAR_FLOAT, n, by, 0, bx, 0, bz, 0), "gpar_binary"); /* z = y * x */
    check(gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, n, bz, 0, bout, 0), "gpar_reduce_range sum");
    check(gpar_reduce_range(GPAR_MAX, GPAR_FLOAT, n, bz, 0, bout, 1), "gpar_reduce_range max");

    float res[2];
    check(gpar_read(bout, 0, res, sizeof res), "gpar_read"); /* waits for the reductions */
    check(gpar_read(bz, 0, got, bytes), "gpar_read");
    for (size_t i = 0; i < n; i++)
      if (got[i] != z[i]) {
        fprintf(stderr, "device %d: z[%zu] = %g, expected %g\n", d, i, got[i], z[i]);
        return 1;
      }
    /* The sum: exact at the default size; devices add in different orders, so allow rounding. */
    if (fabs(res[0] - sum) > 1e-5 * sum || res[1] != max) {
      fprintf(stderr, "device %d: sum %g max %g, expected %g and %g\n", d, res[0], res[1], sum, max);
      return 1;
    }
    check(gpar_buffer_release(bx), "gpar_buffer_release");
    check(gpar_buffer_release(by), "gpar_buffer_release");
    check(gpar_buffer_release(bz), "gpar_buffer_release");
    check(gpar_buffer_release(bout), "gpar_buffer_release");
    printf("device %d: map, relu, mul, sum %g, max %g over %zu elements checked\n", d, res[0], res[1], n);
    ran++;
  }
  check(gpar_map_release(affine), "gpar_map_release");
  check(gpar_shutdown(eng), "gpar_shutdown");
  free(x);
  free(z);
  free(got);
  if (ran == 0) printf("no device here builds kernels\n");
  return ran ? 0 : 77; /* 77: "skipped", as automake's test drivers read it */
}
