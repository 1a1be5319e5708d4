/* buffer_import.c: gpar_buffer_import, another library's memory as a buffer (what the Python
 * front's from_dlpack stands on). On every device: host memory imported on the CPU device is
 * used in place by copies to and from the device and by a kernel; its owner's release runs
 * once, only after the handle is released and every op queued on it is done (and at shutdown
 * for a buffer never released); bad input is refused with nothing registered, release not
 * called, and the engine working on. CUDA: a device pointer imports on its device, a host
 * pointer or another device's pointer does not. gpar_buffer_wait_native: nothing to do on host
 * memory, refused on OpenCL, while recording and on a stale handle; on CUDA an op in the
 * buffer's order that later ops follow. gpar_buffer_signal_native: on host memory the host waits
 * for the buffer's writer (a slow one) and gets its failure; refused on a stale handle, on
 * OpenCL, while recording and from inside an op; on CUDA it returns with the engine working on
 * (what it orders on the device: tests/python/test_cuda_peers.py, against PyTorch). */
#include <stdatomic.h>

#include "testutil.h"

static atomic_int released;
static void count_release(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

/* A user op on the CPU that sleeps, then writes 7 into every float of the buffer. */
static int slow_sevens(const gpar_native *n, void *arg) {
  (void)n;
  float *p = arg;
  tu_sleep_us(100000);
  for (int i = 0; i < 256; i++) p[i] = 7.0f;
  return GPAR_OK;
}

/* Host memory through every device and back: CPU array -> device buffer (copy), the device
 * doubles it (a portable kernel), device -> CPU array (copy); the array holds 2 * i. */
static void round_trip(gpar_engine *eng, int cpu, gpar_kernel twice) {
  enum { N = 4096 };
  int ndev = gpar_device_count(eng);
  for (int d = 0; d < ndev; d++) {
    tu_devinfo info;
    tu_device_info(eng, d, &info);
    float *host = malloc(N * sizeof *host);
    for (int i = 0; i < N; i++) host[i] = (float)i;
    atomic_int rel = 0;
    gpar_buffer in = {0}, dev = tu_buffer(eng, d, N * sizeof(float));
    int st = gpar_buffer_import(eng, cpu, host, N * sizeof *host, count_release, &rel, &in);
    is_status(st, GPAR_OK, "import host memory on the CPU device");
    ok(gpar_buffer_host_ptr(in) == host, "its host pointer is the array itself");
    st = gpar_copy(dev, 0, in, 0, N * sizeof(float));
    gpar_grid grid = {{N / 64}, {64}};
    gpar_arg args[2] = {gpar_arg_u64(N), gpar_arg_buffer(dev, 0)};
    if (!st) st = gpar_kernel_launch(twice, d, &grid, args, 2);
    if (!st) st = gpar_copy(in, 0, dev, 0, N * sizeof(float));
    if (!st) st = gpar_wait(in);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += host[i] != 2.0f * (float)i;
    ok(st == GPAR_OK && bad == 0, "device %d (%s %s): copy in, kernel, copy out land in the array (%d wrong)", d,
       info.backend, info.name, bad);
    if (st) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
    gpar_buffer_release(dev);
    gpar_buffer_release(in);
    gpar_wait_all(eng);
    is_int(atomic_load(&rel), 1, "release ran once after the handle went");
    free(host);
  }
}

/* Release of the handle while an op on it is queued: the owner's release waits for the op. */
static void release_waits_for_ops(gpar_engine *eng, int cpu) {
  float *host = calloc(256, sizeof *host);
  atomic_int rel = 0;
  gpar_buffer b = {0};
  int st = gpar_buffer_import(eng, cpu, host, 256 * sizeof *host, count_release, &rel, &b);
  if (!st) st = gpar_submit(eng, cpu, slow_sevens, host, NULL, 0, &b, 1);
  if (!st) st = gpar_buffer_release(b);
  is_status(st, GPAR_OK, "import, queue a slow write, release the handle");
  is_int(atomic_load(&rel), 0, "release not called while the write is queued");
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all");
  int sevens = 0;
  for (int i = 0; i < 256; i++) sevens += host[i] == 7.0f;
  is_int(atomic_load(&rel), 1, "release called once the write is done");
  is_int(sevens, 256, "the queued write landed in the owner's memory");
  free(host);
}

/* call(b, NULL) is refused while the thread records a graph. */
static void refused_recording(gpar_engine *eng, int (*call)(gpar_buffer, void *), gpar_buffer b, const char *what) {
  is_status(gpar_graph_begin(eng), GPAR_OK, "record a graph");
  char name[80];
  snprintf(name, sizeof name, "%s while recording refused", what);
  is_status(call(b, NULL), GPAR_ERECORDING, name);
  gpar_graph *g = NULL;
  gpar_graph_end(eng, &g);
  gpar_graph_destroy(g);
}

/* Refusals: nothing registered, release not called, the engine goes on. */
static void refusals(gpar_engine *eng, int cpu) {
  float host[16] = {0};
  atomic_store(&released, 0);
  gpar_buffer b = {1, 1};
  gpar_stats before, after;
  gpar_stats_get(eng, &before);
  is_status(gpar_buffer_import(eng, cpu, NULL, 64, count_release, &released, &b), GPAR_EINVAL, "NULL pointer");
  ok(b.id == 0, "a failed import leaves the null handle");
  is_status(gpar_buffer_import(eng, cpu, host, 0, count_release, &released, &b), GPAR_EINVAL, "zero bytes");
  is_status(gpar_buffer_import(eng, GPAR_HOST, host, 64, count_release, &released, &b), GPAR_EINVAL,
            "GPAR_HOST (libgpar's pinned memory)");
  ok(strstr(gpar_last_error(), "CPU device") != NULL, "the message says where host memory goes: %s",
     gpar_last_error());
  is_status(gpar_buffer_import(eng, gpar_device_count(eng), host, 64, count_release, &released, &b), GPAR_ENODEV,
            "a device past the list");
  is_status(gpar_buffer_import(eng, cpu, host, 64, count_release, &released, NULL), GPAR_EINVAL, "NULL handle out");
  gpar_buffer gone = tu_buffer(eng, cpu, 64);
  gpar_buffer_release(gone);
  is_status(gpar_buffer_wait_native(gone, NULL), GPAR_EBADBUF, "wait_native on a released buffer");
  gpar_buffer kept = {0};
  is_status(gpar_buffer_import(eng, cpu, host, 64, NULL, NULL, &kept), GPAR_OK, "import for wait_native");
  gpar_stats s0, s1;
  gpar_stats_get(eng, &s0);
  is_status(gpar_buffer_wait_native(kept, NULL), GPAR_OK, "wait_native on host memory: nothing to wait for");
  gpar_stats_get(eng, &s1);
  is_int((long long)(s1.ops_submitted - s0.ops_submitted), 0, "  and no op submitted");
  refused_recording(eng, gpar_buffer_wait_native, kept, "wait_native");
  gpar_buffer_release(kept);
  is_status(gpar_buffer_import(NULL, cpu, host, 64, count_release, &released, &b), GPAR_EINVAL, "NULL engine");
  int ndev = gpar_device_count(eng), opencl = 0, cuda = 0;
  for (int d = 0; d < ndev; d++) {
    tu_devinfo info;
    tu_device_info(eng, d, &info);
    if (info.backend_id == GPAR_BACKEND_OPENCL && !opencl++) {
      is_status(gpar_buffer_import(eng, d, host, 64, count_release, &released, &b), GPAR_ENOTSUP,
                "OpenCL device: ENOTSUP");
      diag("  %s", gpar_last_error());
      gpar_buffer ob = tu_buffer(eng, d, 64);
      is_status(gpar_buffer_wait_native(ob, NULL), GPAR_ENOTSUP, "wait_native on an OpenCL buffer: ENOTSUP");
      diag("  %s", gpar_last_error());
      gpar_buffer_release(ob);
    }
    if (info.backend_id == GPAR_BACKEND_CUDA && !cuda++) {
      is_status(gpar_buffer_import(eng, d, host, 64, count_release, &released, &b), GPAR_EINVAL,
                "CUDA device, a host pointer: EINVAL");
      diag("  %s", gpar_last_error());
    }
  }
  gpar_stats_get(eng, &after);
  is_int((long long)after.buffers_live, (long long)before.buffers_live, "no buffer registered by the refusals");
  is_int(atomic_load(&released), 0, "release never called for a refused import");
  gpar_buffer x = tu_buffer(eng, cpu, 64);
  is_status(gpar_fill(x, 0, 64, 3), GPAR_OK, "the engine works on");
  is_status(gpar_wait(x), GPAR_OK, "  and its wait");
  gpar_buffer_release(x);
}

static int failing(const gpar_native *n, void *arg) {
  (void)n, (void)arg;
  return GPAR_EBACKEND;
}

/* A user op that calls gpar_buffer_signal_native on *arg from inside itself. */
static gpar_buffer signal_target;
static atomic_int signal_inside;
static int signal_from_op(const gpar_native *n, void *arg) {
  (void)n, (void)arg;
  atomic_store(&signal_inside, gpar_buffer_signal_native(signal_target, NULL));
  return GPAR_OK;
}

/* gpar_buffer_signal_native: what it does on host memory, and its refusals. */
static void signal_native(gpar_engine *eng, int cpu) {
  float *host = calloc(256, sizeof *host);
  gpar_buffer b = {0};
  int st = gpar_buffer_import(eng, cpu, host, 256 * sizeof *host, NULL, NULL, &b);
  if (!st) st = gpar_submit(eng, cpu, slow_sevens, host, NULL, 0, &b, 1);
  if (!st) st = gpar_buffer_signal_native(b, NULL);
  int sevens = 0;
  for (int i = 0; i < 256; i++) sevens += host[i] == 7.0f;
  ok(st == GPAR_OK && sevens == 256, "signal_native on host memory waits for its slow writer (%s, %d of 256 written)",
     gpar_status_name(st), sevens);
  st = gpar_submit(eng, cpu, failing, NULL, NULL, 0, &b, 1);
  if (!st) st = gpar_buffer_signal_native(b, NULL);
  ok(st != GPAR_OK, "signal_native after a failed writer returns its failure (%s)", gpar_status_name(st));
  signal_target = b;
  atomic_store(&signal_inside, -1);
  st = gpar_submit(eng, cpu, signal_from_op, NULL, NULL, 0, NULL, 0);
  if (!st) st = gpar_wait_all(eng);
  is_int(atomic_load(&signal_inside), GPAR_EDEADLK, "signal_native from inside an op: EDEADLK");
  refused_recording(eng, gpar_buffer_signal_native, b, "signal_native");
  gpar_buffer_release(b);
  is_status(gpar_buffer_signal_native(b, NULL), GPAR_EBADBUF, "signal_native on a released buffer");
  free(host);
  int ndev = gpar_device_count(eng), opencl = 0, cuda = 0;
  for (int d = 0; d < ndev; d++) {
    tu_devinfo info;
    tu_device_info(eng, d, &info);
    if (info.backend_id == GPAR_BACKEND_OPENCL && !opencl++) {
      gpar_buffer ob = tu_buffer(eng, d, 64);
      is_status(gpar_buffer_signal_native(ob, NULL), GPAR_ENOTSUP, "signal_native on an OpenCL buffer: ENOTSUP");
      diag("  %s", gpar_last_error());
      gpar_buffer_release(ob);
    }
    if (info.backend_id == GPAR_BACKEND_CUDA && !cuda++) {
      gpar_buffer cb = tu_buffer(eng, d, 1 << 20);
      unsigned char back[64];
      st = gpar_fill(cb, 0, 1 << 20, 3);
      if (!st) st = gpar_buffer_signal_native(cb, NULL); /* the legacy default stream waits for the fill */
      if (!st) st = gpar_fill(cb, 0, 64, 4);
      if (!st) st = gpar_read(cb, 0, back, sizeof back);
      ok(st == GPAR_OK && tu_all_bytes(back, sizeof back, 4), "CUDA: signal_native on the legacy stream, the engine on (%s)",
         gpar_status_name(st));
      gpar_buffer_release(cb);
    }
  }
  gpar_buffer x = tu_buffer(eng, cpu, 64);
  is_status(gpar_fill(x, 0, 64, 3), GPAR_OK, "the engine works on");
  is_status(gpar_wait(x), GPAR_OK, "  and its wait");
  gpar_buffer_release(x);
}

/* CUDA: a device pointer (a libgpar buffer's own) imports on its device, not on another. */
static void cuda_pointers(gpar_engine *eng) {
  int d0 = gpar_device_find(eng, GPAR_BACKEND_CUDA, -1, 0);
  if (d0 < 0) {
    skip(5, "no CUDA device");
    return;
  }
  gpar_buffer own = tu_buffer(eng, d0, 1024), alias = {0};
  atomic_int rel = 0;
  void *ptr = gpar_buffer_native(own);
  is_status(gpar_buffer_import(eng, d0, ptr, 1024, count_release, &rel, &alias), GPAR_OK,
            "CUDA device pointer imports on its device");
  unsigned char back[1024];
  /* Two handles of one memory are two buffers to the engine, which orders no op of one after
   * the other's: the waits on alias do (without them the read of own raced the fill on an H100
   * with lanes and failed). */
  int st = gpar_fill(alias, 0, 1024, 9);
  if (!st) st = gpar_wait(alias);
  if (!st) st = gpar_read(own, 0, back, sizeof back);
  ok(st == GPAR_OK && tu_all_bytes(back, sizeof back, 9), "a fill through the import is seen through the owner");
  st = gpar_buffer_wait_native(alias, NULL); /* the legacy default stream: nothing pending there */
  if (!st) st = gpar_fill(alias, 0, 1024, 5);
  if (!st) st = gpar_wait(alias);
  if (!st) st = gpar_read(own, 0, back, sizeof back);
  ok(st == GPAR_OK && tu_all_bytes(back, sizeof back, 5), "wait_native on the legacy stream, then a fill: in order");
  gpar_buffer_release(alias);
  gpar_wait_all(eng);
  is_int(atomic_load(&rel), 1, "release ran once");
  int d1 = gpar_device_find(eng, GPAR_BACKEND_CUDA, -1, 1);
  if (d1 < 0)
    skip(1, "one CUDA device: no other device to refuse");
  else
    is_status(gpar_buffer_import(eng, d1, ptr, 1024, NULL, NULL, &alias), GPAR_EINVAL,
              "another CUDA device's pointer is refused");
  gpar_buffer_release(own);
}

int main(void) {
  tap_start();
  gpar_engine *eng = tu_engine(0, 2, 0);
  int cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0);
  if (cpu < 0) {
    printf("1..0 # SKIP no CPU device\n");
    return 0;
  }
  gpar_kernel twice = {0};
  int st = gpar_kernel_create(eng, "twice", "u64 n, inout f32 *x", "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) x[i] *= 2.0f;",
                              NULL, &twice);
  if (st) {
    printf("Bail out! gpar_kernel_create: %s %s\n", gpar_status_name(st), gpar_last_error());
    return 1;
  }
  round_trip(eng, cpu, twice);
  release_waits_for_ops(eng, cpu);
  refusals(eng, cpu);
  signal_native(eng, cpu);
  cuda_pointers(eng);

  /* A buffer never released: its owner's release comes at shutdown. */
  float *host = malloc(64);
  atomic_int rel = 0;
  gpar_buffer kept = {0};
  is_status(gpar_buffer_import(eng, cpu, host, 64, count_release, &rel, &kept), GPAR_OK, "import kept to shutdown");
  gpar_kernel_release(twice);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  is_int(atomic_load(&rel), 1, "release ran at shutdown for a handle never released");
  free(host);
  printf("1..%d\n", tap_count);
  return tap_failed ? 1 : 0;
}
