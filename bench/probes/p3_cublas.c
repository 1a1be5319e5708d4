/* p3_cublas.c: probe 3 (cublasLt plans for small GEMMs). Host cost per GEMM call at 256^3 and 64^3 on GPU 0:
 * cublasSgemm vs cublasLtMatmul with its descriptor, layouts and heuristic algo cached once
 * (and, for contrast, built on every call), each against the GPU time per GEMM; and the same
 * loops captured once into a CUDA graph and replayed. Standalone; see README.md. */
#include "probe.h"
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>

#define CK(x) do { int e_ = (int)(x); if (e_) { printf("  FAILED %s: %d at line %d\n", #x, e_, __LINE__); return; } } while (0)

static int ITERS, REPS;
static cudaStream_t st;
static cudaEvent_t e0, e1;
static const float one = 1.0f, zero = 0.0f;

struct lt_plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
};

static int lt_plan_make(cublasLtHandle_t lt, int n, size_t ws, struct lt_plan *p)
{
    cublasOperation_t tn = CUBLAS_OP_N;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res;
    int got = 0;
    if (cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) return 1;
    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &tn, sizeof tn);
    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tn, sizeof tn);
    if (cublasLtMatrixLayoutCreate(&p->la, CUDA_R_32F, n, n, n) || cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_32F, n, n, n)
        || cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_32F, n, n, n))
        return 2;
    if (cublasLtMatmulPreferenceCreate(&pref)) return 3;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    int r = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &got);
    cublasLtMatmulPreferenceDestroy(pref);
    if (r || got < 1) return 4;
    p->algo = res.algo;
    return 0;
}

static void lt_plan_free(struct lt_plan *p)
{
    cublasLtMatrixLayoutDestroy(p->la);
    cublasLtMatrixLayoutDestroy(p->lb);
    cublasLtMatrixLayoutDestroy(p->lc);
    cublasLtMatmulDescDestroy(p->desc);
}

enum mode { SGEMM, LT, LT_UNCACHED };
struct ctx { cublasHandle_t h; cublasLtHandle_t lt; struct lt_plan plan; int n; float *A, *B, *C; void *ws; size_t wss; };

static int one_call(struct ctx *c, enum mode m)
{
    int n = c->n;
    if (m == SGEMM) return (int)cublasSgemm(c->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, c->A, n, c->B, n, &zero, c->C, n);
    if (m == LT)
        return (int)cublasLtMatmul(c->lt, c->plan.desc, &one, c->A, c->plan.la, c->B, c->plan.lb, &zero, c->C, c->plan.lc,
                                   c->C, c->plan.lc, &c->plan.algo, c->ws, c->wss, st);
    struct lt_plan p;
    int r = lt_plan_make(c->lt, n, c->wss, &p);
    if (!r) r = (int)cublasLtMatmul(c->lt, p.desc, &one, c->A, p.la, c->B, p.lb, &zero, c->C, p.lc, c->C, p.lc, &p.algo,
                                    c->ws, c->wss, st);
    lt_plan_free(&p);
    return r;
}

static const char *mode_name(enum mode m)
{
    return m == SGEMM ? "cublasSgemm" : m == LT ? "cublasLtMatmul cached plan" : "cublasLtMatmul plan per call";
}

/* Eager loop: host time of the enqueue loop, wall time to completion, GPU time between events. */
static void eager(struct ctx *c, enum mode m)
{
    int it = m == LT_UNCACHED ? ITERS / 10 : ITERS;
    double host[16], wall[16], gpu[16];
    for (int i = 0; i < 20; i++) CK(one_call(c, m));
    CK(cudaStreamSynchronize(st));
    for (int r = 0; r < REPS; r++) {
        CK(cudaEventRecord(e0, st));
        double t0 = now_s();
        for (int i = 0; i < it; i++) CK(one_call(c, m));
        double t1 = now_s();
        CK(cudaEventRecord(e1, st));
        CK(cudaStreamSynchronize(st));
        double t2 = now_s();
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        host[r] = 1e6 * (t1 - t0) / it;
        wall[r] = 1e6 * (t2 - t0) / it;
        gpu[r] = 1e3 * ms / it;
    }
    double hm, hn, hx, wm, wn, wx, gm, gn, gx;
    stats(host, REPS, &hm, &hn, &hx);
    stats(wall, REPS, &wm, &wn, &wx);
    stats(gpu, REPS, &gm, &gn, &gx);
    printf("N=%-4d %-29s eager x%-5d host %6.2f us/call (min %6.2f) | wall %6.2f us/GEMM | events %6.2f us/GEMM\n",
           c->n, mode_name(m), it, hm, hn, wm, gm);
}

/* The loop captured once into a graph and replayed. */
static void graph(struct ctx *c, enum mode m)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < ITERS; i++) {
        int r = one_call(c, m);
        if (r) { cudaStreamEndCapture(st, &g); printf("  capture of %s failed: %d\n", mode_name(m), r); return; }
    }
    CK(cudaStreamEndCapture(st, &g));
    double t0 = now_s();
    CK(cudaGraphInstantiate(&ge, g, 0));
    double inst = now_s() - t0;
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    double host[16], dev[16];
    for (int r = 0; r < REPS; r++) {
        CK(cudaEventRecord(e0, st));
        double a = now_s();
        CK(cudaGraphLaunch(ge, st));
        double b = now_s();
        CK(cudaEventRecord(e1, st));
        CK(cudaStreamSynchronize(st));
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        host[r] = 1e6 * (b - a);
        dev[r] = 1e3 * ms / ITERS;
    }
    double hm, hn, hx, dm, dn, dx;
    stats(host, REPS, &hm, &hn, &hx);
    stats(dev, REPS, &dm, &dn, &dx);
    printf("N=%-4d %-29s graph x%-5d launch %7.1f us/graph = %5.3f us/GEMM host | device %6.2f us/GEMM (min %6.2f) | instantiate %.1f ms\n",
           c->n, mode_name(m), ITERS, hm, hm / ITERS, dm, dn, 1e3 * inst);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
}

static void run_size(int n)
{
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.n = n;
    c.wss = (size_t)32 << 20;
    size_t b = sizeof(float) * (size_t)n * (size_t)n;
    CK(cudaMalloc((void **)&c.A, b));
    CK(cudaMalloc((void **)&c.B, b));
    CK(cudaMalloc((void **)&c.C, b));
    CK(cudaMalloc(&c.ws, c.wss));
    CK(cudaMemset(c.A, 0, b));
    CK(cudaMemset(c.B, 0, b));
    CK(cublasCreate(&c.h));
    CK(cublasSetStream(c.h, st));
    CK(cublasSetWorkspace(c.h, c.ws, c.wss));
    CK(cublasLtCreate(&c.lt));
    CK(lt_plan_make(c.lt, n, c.wss, &c.plan));
    cudaDeviceSynchronize();
    eager(&c, SGEMM);
    eager(&c, LT);
    eager(&c, LT_UNCACHED);
    graph(&c, SGEMM);
    graph(&c, LT);
    lt_plan_free(&c.plan);
    cublasLtDestroy(c.lt);
    cublasDestroy(c.h);
    cudaFree(c.A);
    cudaFree(c.B);
    cudaFree(c.C);
    cudaFree(c.ws);
}

int main(void)
{
    ITERS = env_int("PROBE_ITERS", 2000);
    REPS = env_int("PROBE_REPS", 5);
    if (REPS > 16) REPS = 16;
    printf("== probe 3: cuBLAS per-call host cost, GPU 0, one thread, non-blocking stream, medians of %d\n", REPS);
    cudaError_t e = cudaSetDevice(0);
    if (!e) e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    if (!e) e = cudaEventCreate(&e0);
    if (!e) e = cudaEventCreate(&e1);
    if (e) { printf("CUDA unavailable: %s\n", cudaGetErrorString(e)); return 0; }
    run_size(256);
    run_size(64);
    return 0;
}
