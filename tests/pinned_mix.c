/* pinned_mix.c: GPAR_HOST memory with every backend open at once. For each way of
 * providing pinned memory (the default choice, plain host memory registered with every GPU
 * backend, and each GPU backend as provider when it has a device): which backend allocates and
 * which register (gpar_pinned_status), conformance-style copies between GPAR_HOST and every
 * device in every direction with odd sizes and offsets, multi-chunk pageable reads, the pinned
 * limit, the "pinned" fault, and a refused registration ("register" fault) that leaves the
 * memory usable. */
#include "testutil.h"

static uint64_t rs;

static void randfill(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)tu_rand(&rs);
}

#define mk tu_buffer
#define same tu_same

/* Backends with at least one device in eng, as GPAR_BACKEND_* bits. */
static unsigned backends_with_devices(gpar_engine *eng) {
  static const int ids[] = {GPAR_BACKEND_HOST, GPAR_BACKEND_CUDA, GPAR_BACKEND_OPENCL};
  unsigned m = 0;
  for (int i = 0; i < 3; i++) {
    int n = 0;
    if (gpar_backend_status(eng, ids[i], &n, NULL) == GPAR_OK && n > 0) m |= (unsigned)ids[i];
  }
  return m;
}

static gpar_engine *engine_with(const char *provider, size_t limit) {
  if (provider)
    setenv("GPAR_PINNED_PROVIDER", provider, 1);
  else
    unsetenv("GPAR_PINNED_PROVIDER");
  gpar_config cfg;
  gpar_engine *eng = NULL;
  gpar_config_init(&cfg);
  cfg.backends = GPAR_BACKEND_HOST | GPAR_BACKEND_CUDA | GPAR_BACKEND_OPENCL;
  cfg.pinned_limit = limit;
  cfg.quiet = 1;
  int st = gpar_init(&eng, &cfg);
  unsetenv("GPAR_PINNED_PROVIDER");
  if (st != GPAR_OK) {
    printf("Bail out! gpar_init: %s (%s)\n", gpar_status_name(st), gpar_last_error());
    exit(1);
  }
  return eng;
}

/* Who provides and who registers, against what the devices present imply. */
static void check_status(gpar_engine *eng, const char *mode) {
  unsigned have = backends_with_devices(eng);
  unsigned gpu = have & (GPAR_BACKEND_CUDA | GPAR_BACKEND_OPENCL);
  int want_provider;
  int ocl_gpu = gpar_device_find(eng, GPAR_BACKEND_OPENCL, GPAR_DEVICE_GPU, 0) >= 0;
  if (!mode) /* OpenCL with a GPU, else CUDA, else OpenCL (PoCL), else plain memory */
    want_provider = ocl_gpu                        ? GPAR_BACKEND_OPENCL
                    : (gpu & GPAR_BACKEND_CUDA)   ? GPAR_BACKEND_CUDA
                    : (gpu & GPAR_BACKEND_OPENCL) ? GPAR_BACKEND_OPENCL
                                                  : 0;
  else
    want_provider = !strcmp(mode, "cuda") ? GPAR_BACKEND_CUDA : !strcmp(mode, "opencl") ? GPAR_BACKEND_OPENCL : 0;
  unsigned want_reg = gpu & ~(unsigned)want_provider;
  int provider = -1;
  unsigned reg = 99;
  const char *why = NULL;
  int st = gpar_pinned_status(eng, &provider, &reg, &why);
  ok(st == GPAR_OK && provider == want_provider && reg == want_reg && why && !*why,
     "%s: provider %d (want %d), registered %#x (want %#x), no refusal%s%s", mode ? mode : "default", provider,
     want_provider, reg, want_reg, why && *why ? ": " : "", why ? why : "");
}

/* Copies between GPAR_HOST buffers and device d in every direction, odd sizes and offsets,
 * chained without waits, checked at the end through gpar_read and gpar_buffer_host_ptr. */
static int copies_with(gpar_engine *eng, int d, size_t n) {
  unsigned char *sh = malloc(n), *sx = malloc(n), *sh2 = malloc(n);
  gpar_buffer h = mk(eng, GPAR_HOST, n), h2 = mk(eng, GPAR_HOST, n), x = mk(eng, d, n);
  void *hp = gpar_buffer_host_ptr(h);
  randfill(sh, n);
  randfill(sx, n);
  randfill(sh2, n);
  int st = gpar_write(h, 0, sh, n);
  if (!st) st = gpar_write(x, 0, sx, n);
  if (!st) st = gpar_write(h2, 0, sh2, n);
  size_t a = n / 3 + 1, o1 = 7 % n, o2 = (n / 2) | 1;
  if (o1 + a > n) o1 = 0;
  if (o2 + a > n) o2 = n - a;
  if (!st) st = gpar_copy(x, o1, h, o2, a); /* GPAR_HOST -> device */
  memcpy(sx + o1, sh + o2, a);
  if (!st) st = gpar_copy(h2, o2, x, o1, a); /* device -> GPAR_HOST (what the last copy wrote) */
  memcpy(sh2 + o2, sx + o1, a);
  if (!st) st = gpar_copy(h, 0, x, n - a, a); /* device -> GPAR_HOST, the tail */
  memcpy(sh, sx + n - a, a);
  if (!st) st = gpar_copy(x, n - a, h2, 1 % (n - a + 1), a); /* GPAR_HOST -> device again */
  memcpy(sx + n - a, sh2 + 1 % (n - a + 1), a);
  if (!st) st = gpar_wait_all(eng);
  int good = st == GPAR_OK && same(x, sx, n, "device") && same(h, sh, n, "host") && same(h2, sh2, n, "host2");
  if (st) diag("  dev %d, %zu bytes: %s (%s)", d, n, gpar_status_name(st), gpar_last_error());
  good = good && hp == gpar_buffer_host_ptr(h) && !memcmp(hp, sh, n); /* stable, current host pointer */
  gpar_buffer_release(h);
  gpar_buffer_release(h2);
  gpar_buffer_release(x);
  free(sh);
  free(sx);
  free(sh2);
  return good;
}

/* Device to device through GPAR_HOST staging (a pair of devices of different backends or
 * without a direct path goes through pinned chunks made by the pool). */
static int pair_copy(gpar_engine *eng, int d, int e, size_t n) {
  unsigned char *s = malloc(n);
  gpar_buffer x = mk(eng, d, n), y = mk(eng, e, n);
  randfill(s, n);
  int st = gpar_write(x, 0, s, n);
  if (!st) st = gpar_fill(y, 0, n, 0x5a);
  if (!st) st = gpar_copy(y, 3, x, 0, n - 3);
  unsigned char *want = malloc(n);
  want[0] = want[1] = want[2] = 0x5a;
  memcpy(want + 3, s, n - 3);
  int good = st == GPAR_OK && same(y, want, n, "pair");
  gpar_buffer_release(x);
  gpar_buffer_release(y);
  free(s);
  free(want);
  return good;
}

static void run_mode(const char *mode) {
  gpar_engine *eng = engine_with(mode, 0);
  int ndev = gpar_device_count(eng);
  check_status(eng, mode);
  const char *m = mode ? mode : "default";
  static const size_t sizes[] = {1, 3, 4097, 65536 + 13, (1u << 20) + 5};
  for (int d = 0; d < ndev; d++) {
    gpar_device_props info;
    gpar_device_info(eng, d, &info);
    int good = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) good = copies_with(eng, d, sizes[i]) && good;
    ok(good, "%s: dev %d (%s %s): GPAR_HOST <-> device copies, sizes 1 .. 1 MiB + 5, odd offsets", m, d, info.backend,
       info.name);
    for (int e = 0; e < ndev; e++)
      if (e != d) ok(pair_copy(eng, d, e, 65536 + 11), "%s: dev %d -> dev %d copy", m, d, e);
  }
  /* A pageable read across several staging chunks, from the last device (a GPU one if any). */
  size_t big = ((size_t)40 << 20) + 333;
  unsigned char *s = malloc(big);
  randfill(s, big);
  gpar_buffer x = mk(eng, ndev - 1, big);
  int st = gpar_write(x, 0, s, big);
  ok(st == GPAR_OK && same(x, s, big, "big"), "%s: 40 MiB + 333 write/read into pageable memory, dev %d", m, ndev - 1);
  gpar_buffer_release(x);
  free(s);
  gpar_stats stt;
  gpar_stats_get(eng, &stt);
  ok(stt.ops_failed == 0 && stt.buffers_live == 0, "%s: no failed op, no buffer left (%llu, %llu)", m,
     (unsigned long long)stt.ops_failed, (unsigned long long)stt.buffers_live);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
}

/* The pinned limit and the "pinned" fault with the given provider, and a refused registration
 * when some backend registers. */
static void limits_mode(const char *mode) {
  const size_t limit = (size_t)20 << 20, mb = (size_t)1 << 20;
  gpar_engine *eng = engine_with(mode, limit);
  const char *m = mode ? mode : "default";
  int gpu = gpar_device_find(eng, GPAR_BACKEND_CUDA | GPAR_BACKEND_OPENCL, -1, 0);
  gpar_buffer h[32];
  int n = 0, st = GPAR_OK, over = 0;
  while (n < 32 && (st = gpar_buffer_create(eng, GPAR_HOST, 3 * mb, &h[n])) == GPAR_OK) {
    gpar_stats s;
    gpar_stats_get(eng, &s);
    over |= s.pinned_bytes_pool > limit;
    n++;
  }
  ok(st == GPAR_ENOMEM && !over && n >= 1, "%s: 20 MiB pinned limit: %d GPAR_HOST buffers of 3 MiB, then %s", m, n,
     gpar_status_name(st));
  while (n > 0) gpar_buffer_release(h[--n]);
  gpar_wait_all(eng);
  is_status(gpar_fault_inject(eng, "pinned", 1), GPAR_OK, "arm the pinned fault");
  gpar_buffer b = {0};
  int f1 = gpar_buffer_create(eng, GPAR_HOST, 1000, &b);
  int f2 = gpar_buffer_create(eng, GPAR_HOST, 1000, &b);
  ok(f1 == GPAR_EFAULT && f2 == GPAR_OK, "%s: 'pinned' fault: %s, then %s", m, gpar_status_name(f1),
     gpar_status_name(f2));
  if (f2 == GPAR_OK) gpar_buffer_release(b);
  /* A read bigger than the staging the limit allows at once: fewer slots, still correct. */
  if (gpu >= 0) {
    size_t big = (size_t)40 << 20;
    unsigned char *s = malloc(big);
    randfill(s, big);
    gpar_buffer x = mk(eng, gpu, big);
    st = GPAR_OK; /* pieces of 4 MiB, each done before the next: their staging fits the limit */
    for (size_t off = 0; off < big && st == GPAR_OK; off += 4 * mb)
      if ((st = gpar_write(x, off, s + off, 4 * mb)) == GPAR_OK) st = gpar_wait(x);
    ok(st == GPAR_OK && same(x, s, big, "limited"), "%s: 40 MiB read with a 20 MiB pinned limit", m);
    gpar_buffer_release(x);
    free(s);
  } else {
    skip(1, "no GPU/OpenCL device for a staged read");
  }
  /* A refused registration: the block is made anyway and works (slower) with every device. */
  unsigned reg = 0;
  gpar_pinned_status(eng, NULL, &reg, NULL);
  if (reg) {
    gpar_fault_inject(eng, "register", 1);
    int good = 1;
    gpar_buffer r = {0};
    st = gpar_buffer_create(eng, GPAR_HOST, 3 * mb / 2 + 77, &r); /* a size class not used so far: a new block */
    gpar_fault_inject(eng, "register", 0);
    const char *why = NULL;
    gpar_pinned_status(eng, NULL, NULL, &why);
    ok(st == GPAR_OK && why && strstr(why, "injected fault"), "%s: refused registration: buffer %s, reason '%s'", m,
       gpar_status_name(st), why ? why : "(null)");
    if (st == GPAR_OK) gpar_buffer_release(r);
    for (int d = 0; d < gpar_device_count(eng); d++) good = copies_with(eng, d, 3 * mb / 2 + 77) && good;
    ok(good, "%s: copies through the unregistered block on every device", m);
  } else {
    skip(2, "no backend registers pinned memory in this mode");
  }
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
}

int main(void) {
  tap_start();
  rs = tu_seed(20261130);
  gpar_engine *probe = engine_with(NULL, 0);
  unsigned have = backends_with_devices(probe);
  gpar_shutdown(probe);
  diag("backends with devices: %s%s%s", have & GPAR_BACKEND_HOST ? "host " : "",
       have & GPAR_BACKEND_CUDA ? "cuda " : "", have & GPAR_BACKEND_OPENCL ? "opencl" : "");
  const char *modes[] = {NULL, "host", "cuda", "opencl"};
  for (int i = 0; i < 4; i++) {
    if (modes[i] && !strcmp(modes[i], "cuda") && !(have & GPAR_BACKEND_CUDA)) {
      skip(1, "no CUDA device: provider cuda");
      continue;
    }
    if (modes[i] && !strcmp(modes[i], "opencl") && !(have & GPAR_BACKEND_OPENCL)) {
      skip(1, "no OpenCL device: provider opencl");
      continue;
    }
    run_mode(modes[i]);
    limits_mode(modes[i]);
  }
  return done_testing();
}
