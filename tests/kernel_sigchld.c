/* kernel_sigchld.c: host kernels in a process that ignores SIGCHLD (signal(SIGCHLD, SIG_IGN),
 * set before gpar_init, as daemons and some runtimes do). The kernel then reaps the process's
 * children itself, so no wait reads the compiler's exit status; the host backend must still
 * tell a compiler that ran (`cc --version`, a build) from one that failed: a kernel builds
 * (compiled, not a cache hit: GPAR_CACHE=0), launches and computes the right values, a kernel
 * with a syntax error is GPAR_EBUILD (never GPAR_OK, never GPAR_ENOTSUP), and the process's
 * SIGCHLD disposition is left as it was. Skips when the compiler does not run at all.
 * Mutant: in run_shell (backends/host/host_kernel.c) drop the `echo $? >&3` from the script,
 * so the status comes only from waitpid: GPAR_ENOTSUP, "`cc --version` failed". */
#include <signal.h>

#include "testutil.h"

static const char saxpy_params[] = "u64 n, f32 a, in f32 *x, inout f32 *y";
static const char saxpy_body[] = "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * x[i] + y[i];";

int main(void) {
  tap_start();
  setenv("GPAR_CACHE", "0", 1); /* every build runs the compiler */
  if (system("${GPAR_CC:-${CC:-cc}} --version >/dev/null 2>&1") != 0) {
    printf("1..0 # SKIP the host compiler (GPAR_CC, CC or cc) does not run\n");
    return 0;
  }
  signal(SIGCHLD, SIG_IGN);
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  char why[512] = "";
  is_status(gpar_kernel_support(eng, GPAR_HOST, why, sizeof why), GPAR_OK, "SIGCHLD ignored: host kernels supported");
  diag("%s", why);

  enum { N = 1000 };
  gpar_kernel k = {0};
  is_status(gpar_kernel_create(eng, "saxpy", saxpy_params, saxpy_body, NULL, &k), GPAR_OK, "gpar_kernel_create");
  is_status(gpar_kernel_build(k, GPAR_HOST), GPAR_OK, "  gpar_kernel_build: the compiler ran");
  gpar_kernel_props p = {0};
  is_status(gpar_kernel_info(k, GPAR_HOST, &p), GPAR_OK, "  gpar_kernel_info");
  is_int(p.origin, GPAR_KERNEL_COMPILED, "  compiled now (no cache hit)");
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 1.0f;
  gpar_buffer bx = tu_buffer(eng, GPAR_HOST, sizeof x), by = tu_buffer(eng, GPAR_HOST, sizeof y);
  gpar_write(bx, 0, x, sizeof x);
  gpar_write(by, 0, y, sizeof y);
  gpar_arg a[4] = {gpar_arg_u64(N), gpar_arg_f32(2.0f), gpar_arg_buffer(bx, 0), gpar_arg_buffer(by, 0)};
  gpar_grid g = {{(N + 63) / 64, 1, 1}, {64, 1, 1}};
  is_status(gpar_kernel_launch(k, GPAR_HOST, &g, a, 4), GPAR_OK, "  gpar_kernel_launch");
  is_status(gpar_read(by, 0, y, sizeof y), GPAR_OK, "  read back");
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += y[i] != 2.0f * (float)i + 1.0f;
  is_int(wrong, 0, "  y = 2 x + 1 everywhere");

  gpar_kernel bad = {0};
  is_status(gpar_kernel_create(eng, "broken", "out f32 *y", "y[0] = ;", NULL, &bad), GPAR_OK,
            "a kernel that does not compile");
  is_status(gpar_kernel_build(bad, GPAR_HOST), GPAR_EBUILD, "  gpar_kernel_build: GPAR_EBUILD (the failure is seen)");
  diag("%s", gpar_last_error());

  struct sigaction now;
  sigaction(SIGCHLD, NULL, &now);
  ok(now.sa_handler == SIG_IGN, "SIGCHLD is still ignored: the library left the disposition alone");
  gpar_buffer_release(bx);
  gpar_buffer_release(by);
  gpar_kernel_release(k);
  gpar_kernel_release(bad);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
