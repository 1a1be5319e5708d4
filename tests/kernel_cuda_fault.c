/* kernel_cuda_fault.c: a kernel that faults on a CUDA device (a write far outside its buffer).
 * The launch is accepted; the fault shows at the wait on the buffer it writes (GPAR_EBACKEND with
 * CUDA's error), and at wait_all; the host device runs on. A CUDA fault is sticky (gpar.h): the
 * device's later ops fail too, so this runs in a program of its own, last on its device. Skips
 * wholly without a CUDA device. */
#include "kernel_util.h"

int main(void) {
  gpar_engine *eng = ku_engine(0);
  int cuda = gpar_device_find(eng, GPAR_BACKEND_CUDA, -1, 0);
  if (cuda < 0) {
    gpar_shutdown(eng);
    skip_all("no CUDA device");
  }
  plan(6);
  gpar_kernel bad = ku_kernel(eng, "out_of_bounds", "out u32 *y", "y[(gpar_u64)1 << 40] = 1u;", NULL);
  gpar_kernel good = ku_kernel(eng, "fine", "out u32 *y", "y[GPAR_GLOBAL_ID(0)] = 5u;", NULL);
  gpar_buffer y = tu_buffer(eng, cuda, 256), h = tu_buffer(eng, GPAR_HOST, 256);
  is_status(gpar_wait(y), GPAR_OK, "a buffer on the CUDA device");
  gpar_grid g = {{1}, {32}};
  gpar_arg a = gpar_arg_buffer(y, 0);
  is_status(gpar_kernel_launch(bad, cuda, &g, &a, 1), GPAR_OK, "a faulting launch is accepted (the fault comes later)");
  int st = gpar_wait(y);
  ok(st == GPAR_EBACKEND && strstr(gpar_last_error(), "cuda"), "the wait on the buffer it writes reports the fault: %s",
     gpar_last_error());
  ok(gpar_wait_all(eng) != GPAR_OK, "so does wait_all");
  gpar_arg ah = gpar_arg_buffer(h, 0);
  uint32_t v[64];
  st = gpar_kernel_launch(good, GPAR_HOST, &g, &ah, 1);
  if (!st) st = gpar_read(h, 0, v, 128);
  ok(!st && v[0] == 5 && v[31] == 5, "the host device runs kernels on");
  st = gpar_shutdown(eng);
  ok(st == GPAR_OK || st == GPAR_EBACKEND, "shutdown returns (%s)", gpar_status_name(st));
  return done_testing();
}
