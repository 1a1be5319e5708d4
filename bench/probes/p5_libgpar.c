/* p5_libgpar.c: probe 5 (GPAR_HOST memory across backends), through libgpar itself. For the first CUDA GPU and the
 * first OpenCL GPU: H2D and D2H rates of PROBE_MB copies between GPAR_HOST buffers and the
 * device (20 back to back per timing, median of PROBE_REPS), and gpar_read into warm pageable
 * memory (64 and 256 MB), first with every backend open, then with only that backend (and the
 * host). gpar_pinned_status says which backend allocates GPAR_HOST memory and which register
 * it; GPAR_PINNED_PROVIDER=cuda|opencl|host changes that. Needs a built libgpar (run.sh links
 * $PROBE_GPAR_BUILD, default build/, with include/). PROBE_ANY_DEVICE=1 accepts CPU devices. */
#include "probe.h"
#include "gpar.h"

static size_t SZ;
static int REPS;

static const char *bname(int id)
{
    return id == GPAR_BACKEND_CUDA ? "cuda" : id == GPAR_BACKEND_OPENCL ? "opencl" : id == GPAR_BACKEND_HOST ? "host" : "none";
}

static void fail(const char *what, int st)
{
    printf("     %s: %s (%s)\n", what, gpar_status_name(st), gpar_last_error());
}

/* 20 copies back to back, one wait; GB/s median (min, max) over REPS, after one warm-up. */
static void copies(const char *label, gpar_buffer dst, gpar_buffer src)
{
    double *v = calloc((size_t)REPS, sizeof *v);
    int n = 0, st = GPAR_OK;
    for (int r = -1; r < REPS && !st; r++) {
        double t0 = now_s();
        for (int i = 0; i < 20 && !st; i++) st = gpar_copy(dst, 0, src, 0, SZ);
        if (!st) st = gpar_wait(dst);
        double t = now_s() - t0;
        if (!st && r >= 0) v[n++] = 20.0 * (double)SZ / t / 1e9;
    }
    double med, mn, mx;
    stats(v, n, &med, &mn, &mx);
    if (st) fail(label, st);
    else printf("     %-34s %6.1f GB/s (min %5.1f max %5.1f)\n", label, med, mn, mx);
    free(v);
}

static void pageable_read(gpar_engine *eng, int dev, size_t bytes)
{
    gpar_buffer x = {0};
    unsigned char *dst = malloc(bytes);
    int st = gpar_buffer_create(eng, dev, bytes, &x);
    if (!st) st = gpar_fill(x, 0, bytes, 0x3c);
    if (!st) st = gpar_wait(x);
    if (st || !dst) { fail("pageable read setup", st); free(dst); return; }
    memset(dst, 0, bytes); /* warm destination */
    double *v = calloc((size_t)REPS, sizeof *v);
    int n = 0;
    for (int r = -1; r < REPS && !st; r++) {
        double t0 = now_s();
        st = gpar_read(x, 0, dst, bytes);
        double t = now_s() - t0;
        if (!st && r >= 0) v[n++] = (double)bytes / t / 1e9;
    }
    int okd = !st && dst[0] == 0x3c && dst[bytes / 2] == 0x3c && dst[bytes - 1] == 0x3c;
    double med, mn, mx;
    stats(v, n, &med, &mn, &mx);
    char label[64];
    snprintf(label, sizeof label, "gpar_read -> pageable %zu MB", bytes >> 20);
    if (st) fail(label, st);
    else printf("     %-34s %6.1f GB/s (min %5.1f max %5.1f) data %s\n", label, med, mn, mx, okd ? "ok" : "BAD");
    free(v);
    free(dst);
    gpar_buffer_release(x);
}

static void one_device(gpar_engine *eng, int backend)
{
    const char *any = getenv("PROBE_ANY_DEVICE"); /* set: a CPU device will do (PoCL, to try it) */
    int dev = gpar_device_find(eng, backend, any && *any ? -1 : GPAR_DEVICE_GPU, 0);
    if (dev < 0) { printf("   %s: no GPU device\n", bname(backend)); return; }
    gpar_device_props info;
    gpar_device_info(eng, dev, &info);
    printf("   %s device %d: %s\n", bname(backend), dev, info.name);
    gpar_buffer h = {0}, d = {0};
    int st = gpar_buffer_create(eng, GPAR_HOST, SZ, &h);
    if (!st) st = gpar_buffer_create(eng, dev, SZ, &d);
    if (!st) st = gpar_fill(h, 0, SZ, 0x5a);
    if (!st) st = gpar_wait(h);
    if (st) { fail("buffers", st); return; }
    copies("H2D GPAR_HOST -> device", d, h);
    memset(gpar_buffer_host_ptr(h), 0, SZ);
    copies("D2H device -> GPAR_HOST", h, d);
    const unsigned char *hp = gpar_buffer_host_ptr(h);
    printf("     D2H data %s\n", hp[0] == 0x5a && hp[SZ / 2] == 0x5a && hp[SZ - 1] == 0x5a ? "ok" : "BAD");
    gpar_buffer_release(h);
    gpar_buffer_release(d);
    pageable_read(eng, dev, (size_t)64 << 20);
    pageable_read(eng, dev, (size_t)256 << 20);
}

static void run(unsigned backends, const char *what)
{
    gpar_config cfg;
    gpar_engine *eng = NULL;
    gpar_config_init(&cfg);
    cfg.backends = backends;
    int st = gpar_init(&eng, &cfg);
    if (st) { fail("gpar_init", st); return; }
    int prov = -1;
    unsigned reg = 0;
    const char *why = "";
    gpar_pinned_status(eng, &prov, &reg, &why);
    printf("== %s: GPAR_HOST memory from %s, registered with%s%s%s; refusals: %s\n", what, bname(prov),
           reg & GPAR_BACKEND_CUDA ? " cuda" : "", reg & GPAR_BACKEND_OPENCL ? " opencl" : "", reg ? "" : " none",
           *why ? why : "none");
    if (backends & GPAR_BACKEND_CUDA) one_device(eng, GPAR_BACKEND_CUDA);
    if (backends & GPAR_BACKEND_OPENCL) one_device(eng, GPAR_BACKEND_OPENCL);
    gpar_shutdown(eng);
}

int main(void)
{
    SZ = (size_t)env_int("PROBE_MB", 64) << 20;
    REPS = env_int("PROBE_REPS", 5);
    const char *p = getenv("GPAR_PINNED_PROVIDER");
    printf("== probe 5: libgpar GPAR_HOST copies, %zu MB x 20 per timing, median of %d; GPAR_PINNED_PROVIDER=%s\n",
           SZ >> 20, REPS, p && *p ? p : "(default)");
    run(GPAR_BACKEND_HOST | GPAR_BACKEND_CUDA | GPAR_BACKEND_OPENCL, "every backend open");
    run(GPAR_BACKEND_HOST | GPAR_BACKEND_CUDA, "cuda alone");
    run(GPAR_BACKEND_HOST | GPAR_BACKEND_OPENCL, "opencl alone");
    return 0;
}
