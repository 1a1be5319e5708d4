/* p4_clblast.c: probe 4 (engine cost of small ops). CLBlast's per-call host cost on the OpenCL platform
 * (NVIDIA's when present) at 256^3 and 64^3: time in the calling thread per
 * CLBlastSgemmWithTempBuffer (and plain CLBlastSgemm) enqueue vs the time to completion; then
 * one thread driving two devices in turn, and two threads each driving one device at once
 * (does the host cost serialise across devices?), with one context for both devices (as
 * libgpar does) and with a context per device. Standalone; see README.md. */
#define PROBE_WITH_OPENCL
#include "probe.h"
#include <pthread.h>
#include <clblast_c.h>

static int ITERS, REPS;

struct dev {
    cl_command_queue q;
    cl_mem A, B, C, tmp;
    int n;
};

static int dev_init(struct dev *d, cl_context ctx, cl_device_id id, int n)
{
    cl_int e;
    size_t b = sizeof(float) * (size_t)n * (size_t)n, ts = 0;
    d->n = n;
    d->q = clCreateCommandQueue(ctx, id, 0, &e);
    if (e) return e;
    d->A = clCreateBuffer(ctx, CL_MEM_READ_WRITE, b, NULL, &e);
    if (!e) d->B = clCreateBuffer(ctx, CL_MEM_READ_WRITE, b, NULL, &e);
    if (!e) d->C = clCreateBuffer(ctx, CL_MEM_READ_WRITE, b, NULL, &e);
    if (e) return e;
    float z = 0;
    clEnqueueFillBuffer(d->q, d->A, &z, sizeof z, 0, b, 0, NULL, NULL);
    clEnqueueFillBuffer(d->q, d->B, &z, sizeof z, 0, b, 0, NULL, NULL);
    CLBlastStatusCode s = CLBlastSGemmTempBufferSize(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)n,
                                                     (size_t)n, (size_t)n, 0, (size_t)n, 0, (size_t)n, 0, (size_t)n, &d->q, &ts);
    if (s != CLBlastSuccess) return (int)s;
    d->tmp = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ts ? ts : 64, NULL, &e);
    return e ? e : clFinish(d->q);
}

static void dev_free(struct dev *d)
{
    clReleaseMemObject(d->A);
    clReleaseMemObject(d->B);
    clReleaseMemObject(d->C);
    clReleaseMemObject(d->tmp);
    clReleaseCommandQueue(d->q);
}

static int gemm(struct dev *d, int with_tmp)
{
    size_t n = (size_t)d->n;
    if (with_tmp)
        return (int)CLBlastSgemmWithTempBuffer(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f, d->A,
                                               0, n, d->B, 0, n, 0.0f, d->C, 0, n, &d->q, NULL, d->tmp);
    return (int)CLBlastSgemm(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f, d->A, 0, n, d->B, 0,
                             n, 0.0f, d->C, 0, n, &d->q, NULL);
}

/* ITERS calls on each of nd devices, in turn, from this thread; host and wall us per call. */
static int loop(struct dev **ds, int nd, int with_tmp, double *host, double *wall)
{
    double t0 = now_s();
    for (int i = 0; i < ITERS; i++)
        for (int k = 0; k < nd; k++) {
            int s = gemm(ds[k], with_tmp);
            if (s) return s;
        }
    double t1 = now_s();
    for (int k = 0; k < nd; k++) clFinish(ds[k]->q);
    double t2 = now_s();
    *host = 1e6 * (t1 - t0) / ITERS / nd;
    *wall = 1e6 * (t2 - t0) / ITERS / nd;
    return 0;
}

struct job { struct dev *d; pthread_barrier_t *bar; double host, wall, end; int err; };
static void *job_run(void *arg)
{
    struct job *j = arg;
    pthread_barrier_wait(j->bar);
    j->err = loop(&j->d, 1, 1, &j->host, &j->wall);
    j->end = now_s();
    return NULL;
}

static void med_print(const char *what, int n, double *h, double *w)
{
    double hm, hn, hx, wm, wn, wx;
    stats(h, REPS, &hm, &hn, &hx);
    stats(w, REPS, &wm, &wn, &wx);
    printf("N=%-4d %-58s host %7.2f us/call (min %7.2f) | to completion %7.2f us/GEMM\n", n, what, hm, hn, wm);
}

static void run(struct dev *d, int nd, int n, const char *ctxname)
{
    double h[16], w[16], h2[16], w2[16];
    char what[128];
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < nd; k++)
            if (gemm(&d[k], 1) || gemm(&d[k], 0)) { printf("N=%d CLBlast warm-up failed\n", n); return; }
    for (int k = 0; k < nd; k++) clFinish(d[k].q);
    struct dev *p0 = &d[0];
    for (int t = 1; t >= 0; t--) {
        for (int r = 0; r < REPS; r++)
            if (loop(&p0, 1, t, &h[r], &w[r])) { printf("gemm failed\n"); return; }
        snprintf(what, sizeof what, "%s, 1 thread, dev 0 (%s)", t ? "SgemmWithTempBuffer" : "Sgemm", ctxname);
        med_print(what, n, h, w);
    }
    if (nd < 2) { printf("N=%-4d only one device: two-device cases skipped\n", n); return; }
    struct dev *both[2] = { &d[0], &d[1] };
    for (int r = 0; r < REPS; r++)
        if (loop(both, 2, 1, &h[r], &w[r])) { printf("gemm failed\n"); return; }
    snprintf(what, sizeof what, "WithTempBuffer, 1 thread, devs 0+1 in turn (%s)", ctxname);
    med_print(what, n, h, w);
    double span[16];
    for (int r = 0; r < REPS; r++) {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 3);
        struct job j[2] = { { &d[0], &bar, 0, 0, 0, 0 }, { &d[1], &bar, 0, 0, 0, 0 } };
        pthread_t th[2];
        for (int k = 0; k < 2; k++) pthread_create(&th[k], NULL, job_run, &j[k]);
        pthread_barrier_wait(&bar);
        double t0 = now_s();
        for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
        pthread_barrier_destroy(&bar);
        if (j[0].err || j[1].err) { printf("gemm failed in a thread\n"); return; }
        h[r] = j[0].host; w[r] = j[0].wall;
        h2[r] = j[1].host; w2[r] = j[1].wall;
        double end = j[0].end > j[1].end ? j[0].end : j[1].end;
        span[r] = 1e6 * (end - t0) / ITERS / 2; /* per GEMM over both devices */
    }
    snprintf(what, sizeof what, "WithTempBuffer, 2 threads at once: dev 0 (%s)", ctxname);
    med_print(what, n, h, w);
    snprintf(what, sizeof what, "WithTempBuffer, 2 threads at once: dev 1 (%s)", ctxname);
    med_print(what, n, h2, w2);
    double sm, sn, sx;
    stats(span, REPS, &sm, &sn, &sx);
    printf("N=%-4d 2 threads: whole run %.2f us per GEMM over both devices (min %.2f)\n", n, sm, sn);
}

int main(void)
{
    ITERS = env_int("PROBE_ITERS", 2000);
    REPS = env_int("PROBE_REPS", 5);
    if (REPS > 16) REPS = 16;
    cl_device_id ids[2];
    cl_uint nd = 0;
    cl_platform_id plat = probe_cl_platform(ids, 2, &nd);
    printf("== probe 4: CLBlast per-call host cost, %d calls per device per run, medians of %d\n", ITERS, REPS);
    if (!nd) { printf("no OpenCL device\n"); return 0; }
    for (cl_uint k = 0; k < nd; k++) { char tag[32]; snprintf(tag, sizeof tag, "device %u", k); probe_cl_describe(plat, ids[k], tag); }
    int sizes[2] = { 256, 64 };
    for (int si = 0; si < 2; si++) {
        int n = sizes[si];
        cl_int e;
        /* One context for both devices, as libgpar makes. */
        cl_context shared = clCreateContext(NULL, nd, ids, NULL, NULL, &e);
        if (e) { printf("clCreateContext error %d\n", e); return 0; }
        struct dev d[2];
        int ok = 1;
        for (cl_uint k = 0; k < nd && ok; k++)
            if ((e = dev_init(&d[k], shared, ids[k], n))) { printf("device init error %d\n", e); ok = 0; }
        if (ok) run(d, (int)nd, n, "shared ctx");
        for (cl_uint k = 0; ok && k < nd; k++) dev_free(&d[k]);
        clReleaseContext(shared);
        if (nd < 2) continue;
        /* A context per device. */
        cl_context own[2];
        ok = 1;
        for (cl_uint k = 0; k < nd && ok; k++) {
            own[k] = clCreateContext(NULL, 1, &ids[k], NULL, NULL, &e);
            if (e || (e = dev_init(&d[k], own[k], ids[k], n))) { printf("per-device context error %d\n", e); ok = 0; }
        }
        if (ok) {
            run(d, (int)nd, n, "ctx per dev");
            for (cl_uint k = 0; k < nd; k++) { dev_free(&d[k]); clReleaseContext(own[k]); }
        }
    }
    return 0;
}
