/* kernel_host_threads.c: kernels launched from fresh threads with GPAR_HOST operands. gpar.h says
 * any thread may launch kernels and that CUDA reaches GPAR_HOST memory; a thread that has never
 * called libgpar (no CUDA context current in it) must be served like the one that made the engine.
 * On every device that takes GPAR_HOST operands (probed from the main thread; OpenCL refuses them
 * by design and is skipped), 3 new threads each make 40 launches whose first libgpar call is the
 * launch: an `in` GPAR_HOST operand shared by all, an `inout` GPAR_HOST operand and an `out`
 * device buffer of their own. Every launch must be accepted and every result right.
 * Mutant seen failing on an H200: gpar__cuda_enter skipping cudaSetDevice when cudaGetDevice
 * already names the device (today's code before the fix) refuses the first launch of each thread
 * with GPAR_EINVAL "not pinned for CUDA". */
#include <pthread.h>

#include "kernel_util.h"

#define NTHREADS 3
#define LAUNCHES 40
#define N 256

typedef struct job {
  gpar_kernel k;
  int dev, tid;
  gpar_buffer x, acc, y; /* x: GPAR_HOST in (shared); acc: GPAR_HOST inout; y: the device's out */
  int refused, first_st;
  char first_msg[256];
} job;

static void *run(void *arg) {
  job *j = arg;
  gpar_grid g = {{N / 64}, {64}};
  for (int i = 0; i < LAUNCHES; i++) {
    gpar_arg a[4] = {gpar_arg_buffer(j->x, 0), gpar_arg_buffer(j->acc, 0), gpar_arg_buffer(j->y, 0),
                     gpar_arg_u32((uint32_t)j->tid)};
    int st = gpar_kernel_launch(j->k, j->dev, &g, a, 4);
    if (st != GPAR_OK && !j->refused++) {
      j->first_st = st;
      snprintf(j->first_msg, sizeof j->first_msg, "%s", gpar_last_error());
    }
  }
  return NULL;
}

/* x[i] = i; acc[i] += x[i] (40 times: 40 i); y[i] = x[i] + tid. */
static void one_device(gpar_engine *eng, gpar_kernel k, int d, gpar_buffer x) {
  job jobs[NTHREADS];
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    jobs[t] = (job){.k = k, .dev = d, .tid = t, .x = x};
    jobs[t].acc = tu_buffer(eng, GPAR_HOST, N * 4);
    jobs[t].y = tu_buffer(eng, d, N * 4);
    gpar_fill(jobs[t].acc, 0, N * 4, 0);
  }
  gpar_wait_all(eng); /* the threads' first libgpar call is their launch */
  for (int t = 0; t < NTHREADS; t++)
    if (pthread_create(&th[t], NULL, run, &jobs[t])) bail_out("pthread_create failed");
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < NTHREADS; t++) {
    job *j = &jobs[t];
    ok(!j->refused, "device %s, thread %d: %d of %d launches refused%s%s%s", ku_devname(eng, d), t, j->refused,
       LAUNCHES, j->refused ? " (first: " : "", j->refused ? gpar_status_name(j->first_st) : "",
       j->refused ? ")" : "");
    if (j->refused) diag("%s", j->first_msg);
    float acc[N], y[N];
    int st = gpar_read(j->acc, 0, acc, sizeof acc);
    if (st == GPAR_OK) st = gpar_read(j->y, 0, y, sizeof y);
    int bad = st != GPAR_OK;
    for (int i = 0; i < N && !bad; i++) bad = acc[i] != (float)(LAUNCHES - j->refused) * i || y[i] != (float)(i + t);
    ok(!bad, "device %s, thread %d: results right (%s)", ku_devname(eng, d), t, gpar_status_name(st));
    gpar_buffer_release(j->acc);
    gpar_buffer_release(j->y);
  }
}

int main(void) {
  gpar_engine *eng = ku_engine(0);
  int n = gpar_device_count(eng);
  gpar_kernel k = ku_kernel(eng, "host_operands", "in f32 *x, inout f32 *acc, out f32 *y, u32 t",
                            "gpar_u64 i = GPAR_GLOBAL_ID(0); acc[i] += x[i]; y[i] = x[i] + (gpar_f32)t;", NULL);
  gpar_buffer x = tu_buffer(eng, GPAR_HOST, N * 4);
  float xv[N];
  for (int i = 0; i < N; i++) xv[i] = (float)i;
  if (gpar_write(x, 0, xv, sizeof xv) != GPAR_OK) bail_out("gpar_write of the shared input failed");
  int takes[64] = {0}, count = 0;
  for (int d = 0; d < n && d < 64; d++) { /* which devices take GPAR_HOST operands at all */
    gpar_device_props p;
    if (gpar_device_info(eng, d, &p) != GPAR_OK || !strcmp(p.backend, "opencl")) continue;
    count += takes[d] = 1;
  }
  if (!count) {
    gpar_shutdown(eng);
    skip_all("no device takes GPAR_HOST kernel operands");
  }
  plan(2 * NTHREADS * count + 1);
  for (int d = 0; d < n && d < 64; d++)
    if (takes[d]) one_device(eng, k, d, x);
  gpar_kernel_release(k);
  gpar_buffer_release(x);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
