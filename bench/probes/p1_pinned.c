/* p1_pinned.c: probe 1 (pinned memory shared by CUDA and OpenCL). Rates of 64 MB host<->device copies on GPU 0 through CUDA
 * and NVIDIA OpenCL, into each kind of pinned host memory either API can make or register.
 * Each line: case, api+method, direction, GB/s median/min/max over PROBE_REPS copies, and a
 * data check ("ok", or "BAD" when the bytes did not arrive). Standalone; see README.md. */
#define PROBE_WITH_OPENCL
#include "probe.h"
#include <cuda_runtime.h>

static size_t SZ;
static int REPS;
static int cuda_ok, cl_ok;
static cudaStream_t cs;
static void *dcu;
static cl_context ctx;
static cl_command_queue q;
static cl_mem dcl;
static unsigned char next_val = 0x21;

enum kind { CL_RW, CL_COPY, CU_ASYNC };
struct path {
    enum kind kind;
    void *host;   /* host memory the copy reads or writes (checked after D2H) */
    cl_mem hbuf;  /* CL_COPY: the buffer that holds host memory */
};

static const char *kind_name(enum kind k)
{
    return k == CL_RW ? "ocl Read/WriteBuffer nb+finish"
         : k == CL_COPY ? "ocl CopyBuffer dev<->hostbuf" : "cuda MemcpyAsync+sync";
}

/* One timed copy; returns 0 or an error code. */
static int one_copy(const struct path *p, int d2h)
{
    if (p->kind == CU_ASYNC) {
        cudaError_t e = d2h ? cudaMemcpyAsync(p->host, dcu, SZ, cudaMemcpyDeviceToHost, cs)
                            : cudaMemcpyAsync(dcu, p->host, SZ, cudaMemcpyHostToDevice, cs);
        if (e == cudaSuccess) e = cudaStreamSynchronize(cs);
        return (int)e;
    }
    cl_int e;
    if (p->kind == CL_RW)
        e = d2h ? clEnqueueReadBuffer(q, dcl, CL_FALSE, 0, SZ, p->host, 0, NULL, NULL)
                : clEnqueueWriteBuffer(q, dcl, CL_FALSE, 0, SZ, p->host, 0, NULL, NULL);
    else
        e = d2h ? clEnqueueCopyBuffer(q, dcl, p->hbuf, 0, 0, SZ, 0, NULL, NULL)
                : clEnqueueCopyBuffer(q, p->hbuf, dcl, 0, 0, SZ, 0, NULL, NULL);
    if (e == CL_SUCCESS) e = clFinish(q);
    return (int)e;
}

/* Fills the device buffer of p's API with v (before a D2H). */
static int fill_dev(const struct path *p, unsigned char v)
{
    if (p->kind == CU_ASYNC) {
        cudaError_t e = cudaMemset(dcu, v, SZ);
        return (int)(e ? e : cudaDeviceSynchronize());
    }
    cl_int e = clEnqueueFillBuffer(q, dcl, &v, 1, 0, SZ, 0, NULL, NULL);
    return e ? e : clFinish(q);
}

/* Checks three device bytes equal v (after an H2D); 1 if they do. */
static int dev_has(const struct path *p, unsigned char v)
{
    size_t offs[3] = { 0, SZ / 2, SZ - 1 };
    for (int i = 0; i < 3; i++) {
        unsigned char b = 0;
        if (p->kind == CU_ASYNC) {
            if (cudaMemcpy(&b, (char *)dcu + offs[i], 1, cudaMemcpyDeviceToHost)) return 0;
        } else if (clEnqueueReadBuffer(q, dcl, CL_TRUE, offs[i], 1, &b, 0, NULL, NULL)) {
            return 0;
        }
        if (b != v) return 0;
    }
    return 1;
}

static int host_has(const void *h, unsigned char v)
{
    const unsigned char *c = h;
    return c[0] == v && c[SZ / 2] == v && c[SZ - 1] == v;
}

static void run_path(const char *cas, const struct path *p)
{
    if (p->kind == CU_ASYNC && !cuda_ok) { printf("%-4s %-32s %-3s skipped: no CUDA\n", cas, kind_name(p->kind), "-"); return; }
    if (p->kind != CU_ASYNC && !cl_ok) { printf("%-4s %-32s %-3s skipped: no OpenCL\n", cas, kind_name(p->kind), "-"); return; }
    for (int d2h = 1; d2h >= 0; d2h--) {
        unsigned char v = next_val++;
        int err = 0;
        if (d2h) { memset(p->host, 0, SZ); err = fill_dev(p, v); }
        else memset(p->host, v, SZ);
        double *gbs = calloc((size_t)REPS, sizeof *gbs);
        int n = 0;
        for (int r = -1; r < REPS && !err; r++) { /* r = -1: untimed warm-up */
            double t0 = now_s();
            err = one_copy(p, d2h);
            double t = now_s() - t0;
            if (!err && r >= 0) gbs[n++] = (double)SZ / t / 1e9;
        }
        const char *chk = err ? "-" : (d2h ? host_has(p->host, v) : dev_has(p, v)) ? "ok" : "BAD";
        double med, mn, mx;
        stats(gbs, n, &med, &mn, &mx);
        if (err) printf("%-4s %-32s %-3s error %d (%s)\n", cas, kind_name(p->kind), d2h ? "D2H" : "H2D", err,
                        p->kind == CU_ASYNC ? cudaGetErrorString((cudaError_t)err) : "cl error");
        else printf("%-4s %-32s %-3s %6.1f GB/s (min %5.1f max %5.1f) n=%d data %s\n", cas, kind_name(p->kind),
                    d2h ? "D2H" : "H2D", med, mn, mx, n, chk);
        free(gbs);
    }
}

/* A CL_MEM_ALLOC_HOST_PTR buffer mapped once; returns its host pointer or NULL. */
static void *cl_pinned(cl_mem *buf)
{
    cl_int e;
    *buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, SZ, NULL, &e);
    if (e) { printf("     clCreateBuffer(ALLOC_HOST_PTR) error %d\n", e); *buf = NULL; return NULL; }
    void *p = clEnqueueMapBuffer(q, *buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, SZ, 0, NULL, NULL, &e);
    if (e) { printf("     clEnqueueMapBuffer error %d\n", e); return NULL; }
    return p;
}

static void *cuda_pinned(void)
{
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, SZ, cudaHostAllocPortable);
    if (e) { printf("     cudaHostAlloc(Portable) error: %s\n", cudaGetErrorString(e)); return NULL; }
    return p;
}

static void *plain(void)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, SZ)) return NULL;
    memset(p, 1, SZ);
    return p;
}

int main(void)
{
    SZ = (size_t)env_int("PROBE_MB", 64) << 20;
    REPS = env_int("PROBE_REPS", 20);
    printf("== probe 1: pinned host memory across CUDA and OpenCL, %zu MB x %d copies, GPU 0\n", SZ >> 20, REPS);

    cudaError_t ce = cudaSetDevice(0);
    if (ce == cudaSuccess) ce = cudaFree(0);
    if (ce == cudaSuccess) ce = cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
    if (ce == cudaSuccess) ce = cudaMalloc(&dcu, SZ);
    cuda_ok = ce == cudaSuccess;
    if (cuda_ok) {
        struct cudaDeviceProp pr;
        cudaGetDeviceProperties(&pr, 0);
        printf("CUDA device 0: %s (pci bus %d)\n", pr.name, pr.pciBusID);
    } else {
        printf("CUDA unavailable: %s\n", cudaGetErrorString(ce));
    }

    cl_device_id dev;
    cl_uint nd = 0;
    cl_platform_id plat = probe_cl_platform(&dev, 1, &nd);
    cl_int e = nd ? CL_SUCCESS : -1;
    if (!e) ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    if (!e) q = clCreateCommandQueue(ctx, dev, 0, &e);
    if (!e) dcl = clCreateBuffer(ctx, CL_MEM_READ_WRITE, SZ, NULL, &e);
    cl_ok = !e;
    if (cl_ok) probe_cl_describe(plat, dev, "device 0");
    else printf("OpenCL unavailable (error %d)\n", e);
    printf("case method                           dir rate\n");

    /* (a) OpenCL's own pinned memory. */
    cl_mem abuf = NULL;
    void *a = cl_ok ? cl_pinned(&abuf) : NULL;
    if (a) {
        struct path p1 = { CL_RW, a, NULL }, p2 = { CL_COPY, a, abuf };
        run_path("a", &p1);
        run_path("a", &p2);
    } else printf("a    skipped: no OpenCL pinned buffer\n");

    /* (b) OpenCL copies into cudaHostAlloc(Portable) memory. */
    void *b = cuda_ok ? cuda_pinned() : NULL;
    if (b) { struct path p = { CL_RW, b, NULL }; run_path("b", &p); }
    else printf("b    skipped: no CUDA pinned memory\n");

    /* (c2) libgpar's GPAR_PINNED_PROVIDER=cuda path: a fresh cudaHostAlloc block wrapped with
     * CL_MEM_USE_HOST_PTR and the wrapper never used (no CopyBuffer first, unlike (c)), then
     * Read/WriteBuffer with the raw pointer; free device memory (cudaMemGetInfo) shows whether
     * the wrapper costs a device-side copy. */
    void *c2 = cuda_ok ? cuda_pinned() : NULL;
    if (c2 && cl_ok) {
        size_t f0 = 0, f1 = 0, f2 = 0, tot = 0;
        cudaMemGetInfo(&f0, &tot);
        double t0 = now_s();
        cl_mem w = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, SZ, c2, &e);
        double tw = now_s() - t0;
        cudaMemGetInfo(&f1, &tot);
        if (e) printf("c2   clCreateBuffer(USE_HOST_PTR on cudaHostAlloc) error %d\n", e);
        else {
            printf("c2   wrapper made in %.2f ms, never used; device free memory %+.1f MB\n", 1e3 * tw,
                   ((double)f1 - (double)f0) / 1048576.0);
            struct path p = { CL_RW, c2, NULL };
            run_path("c2", &p);
            cudaMemGetInfo(&f2, &tot);
            printf("c2   device free memory after the copies %+.1f MB (vs before the wrapper)\n",
                   ((double)f2 - (double)f0) / 1048576.0);
            clReleaseMemObject(w);
        }
    } else printf("c2   skipped: needs CUDA and OpenCL\n");

    /* (c) cudaHostAlloc memory wrapped with CL_MEM_USE_HOST_PTR, CopyBuffer to/from it. */
    void *c = cuda_ok ? cuda_pinned() : NULL;
    if (c && cl_ok) {
        cl_mem cb = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, SZ, c, &e);
        if (e) printf("c    clCreateBuffer(USE_HOST_PTR on cudaHostAlloc) error %d\n", e);
        else {
            struct path p = { CL_COPY, c, cb };
            run_path("c", &p);
            /* The same memory through Read/WriteBuffer while the wrapper exists. */
            struct path p2 = { CL_RW, c, NULL };
            run_path("c", &p2);
            clReleaseMemObject(cb);
        }
    } else printf("c    skipped: needs CUDA and OpenCL\n");

    /* (d) OpenCL pinned memory registered with CUDA. */
    cl_mem dbuf = NULL;
    void *d = cl_ok ? cl_pinned(&dbuf) : NULL;
    if (d && cuda_ok) {
        double t0 = now_s();
        cudaError_t r = cudaHostRegister(d, SZ, cudaHostRegisterPortable);
        printf("d    cudaHostRegister(mapped ALLOC_HOST_PTR, Portable): %s (%.2f ms)\n",
               r ? cudaGetErrorString(r) : "success", 1e3 * (now_s() - t0));
        struct path pc = { CU_ASYNC, d, NULL }, po = { CL_RW, d, NULL }, pb = { CL_COPY, d, dbuf };
        run_path("d", &pc);
        run_path("d", &po);
        run_path("d", &pb);
        if (!r) cudaHostUnregister(d);
    } else printf("d    skipped: needs CUDA and OpenCL\n");

    /* (e) plain posix_memalign memory registered with CUDA. */
    void *m = plain();
    if (m && cuda_ok) {
        double t0 = now_s();
        cudaError_t r = cudaHostRegister(m, SZ, cudaHostRegisterPortable);
        printf("e    cudaHostRegister(posix_memalign, Portable): %s (%.2f ms)\n",
               r ? cudaGetErrorString(r) : "success", 1e3 * (now_s() - t0));
        struct path po = { CL_RW, m, NULL }, pc = { CU_ASYNC, m, NULL };
        run_path("e", &po);
        run_path("e", &pc);
        if (cl_ok) { /* the same memory wrapped with USE_HOST_PTR */
            cl_mem eb = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, SZ, m, &e);
            if (e) printf("e    clCreateBuffer(USE_HOST_PTR on registered malloc) error %d\n", e);
            else { struct path pb = { CL_COPY, m, eb }; run_path("e", &pb); clReleaseMemObject(eb); }
        }
        if (!r) cudaHostUnregister(m);
    } else printf("e    skipped: needs CUDA\n");

    /* (f) baselines: CUDA into cudaHostAlloc; CUDA and OpenCL into pageable memory. */
    void *f = cuda_ok ? cuda_pinned() : NULL;
    if (f) { struct path p = { CU_ASYNC, f, NULL }; printf("f    (cudaHostAlloc)\n"); run_path("f", &p); }
    void *g = plain();
    if (g) {
        struct path pc = { CU_ASYNC, g, NULL }, po = { CL_RW, g, NULL };
        printf("f    (pageable posix_memalign)\n");
        run_path("f", &pc);
        run_path("f", &po);
    }
    if (a) clEnqueueUnmapMemObject(q, abuf, a, 0, NULL, NULL);
    if (d) clEnqueueUnmapMemObject(q, dbuf, d, 0, NULL, NULL);
    if (cl_ok) clFinish(q);
    return 0;
}
