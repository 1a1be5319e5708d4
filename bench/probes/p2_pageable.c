/* p2_pageable.c: probe 2 (GPAR_HOST memory, pageable reads). Reading device memory into pageable memory
 * through pinned staging chunks: the host memcpy rate alone (pinned -> pageable, T threads,
 * destination first touched vs warm), and the pipelined end-to-end rate (D2H of chunk i+1
 * overlaps the copy-out of chunk i, copy-out split over T threads, K staging slots).
 * Standalone; see README.md. */
#include "probe.h"
#include <pthread.h>
#include <cuda_runtime.h>

#define MAXT 8
#define MAXK 4

/* ---- host memcpy alone ---- */
struct mc { char *dst; const char *src; size_t n; };
static void *mc_run(void *arg)
{
    struct mc *m = arg;
    memcpy(m->dst, m->src, m->n);
    return NULL;
}

/* Copies n bytes with T threads (the calling thread does part 0). */
static void par_memcpy(char *dst, const char *src, size_t n, int T)
{
    pthread_t th[MAXT];
    struct mc m[MAXT] = { { 0 } };
    size_t part = (n / (size_t)T + 4095) & ~(size_t)4095;
    for (int t = 0; t < T; t++) {
        size_t off = (size_t)t * part < n ? (size_t)t * part : n;
        size_t len = off + part <= n ? part : n - off;
        m[t] = (struct mc){ dst + off, src + off, len };
    }
    for (int t = 1; t < T; t++) pthread_create(&th[t], NULL, mc_run, &m[t]);
    mc_run(&m[0]);
    for (int t = 1; t < T; t++) pthread_join(th[t], NULL);
}

/* ---- pipelined D2H + copy-out ---- */
struct pipe {
    int T, K, nchunks;
    size_t chunk, total;
    char *stage[MAXK];
    cudaEvent_t ev[MAXK];
    char *dst;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int issued;        /* chunks whose D2H is enqueued */
    int *done;         /* per chunk: workers finished */
    pthread_barrier_t start;
    int err;
};
struct worker { struct pipe *p; int id; };

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    struct pipe *p = w->p;
    pthread_barrier_wait(&p->start);
    size_t part = (p->chunk / (size_t)p->T + 4095) & ~(size_t)4095;
    for (int i = 0; i < p->nchunks; i++) {
        pthread_mutex_lock(&p->mu);
        while (p->issued <= i && !p->err) pthread_cond_wait(&p->cv, &p->mu);
        int err = p->err;
        pthread_mutex_unlock(&p->mu);
        if (err) return NULL;
        int s = i % p->K;
        if (cudaEventSynchronize(p->ev[s]) != cudaSuccess) {
            pthread_mutex_lock(&p->mu);
            p->err = 1;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        size_t off = (size_t)w->id * part;
        if (off < p->chunk) {
            size_t len = off + part <= p->chunk ? part : p->chunk - off;
            memcpy(p->dst + (size_t)i * p->chunk + off, p->stage[s] + off, len);
        }
        pthread_mutex_lock(&p->mu);
        if (++p->done[i] == p->T) pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* One pipelined read of total bytes from dsrc into dst; returns seconds or -1. */
static double pipe_read(struct pipe *p, const char *dsrc, cudaStream_t st)
{
    pthread_t th[MAXT];
    struct worker w[MAXT];
    p->issued = 0;
    p->err = 0;
    memset(p->done, 0, sizeof(int) * (size_t)p->nchunks);
    pthread_barrier_init(&p->start, NULL, (unsigned)p->T + 1);
    for (int t = 0; t < p->T; t++) { w[t] = (struct worker){ p, t }; pthread_create(&th[t], NULL, worker_run, &w[t]); }
    pthread_barrier_wait(&p->start);
    double t0 = now_s();
    for (int i = 0; i < p->nchunks && !p->err; i++) {
        int s = i % p->K;
        pthread_mutex_lock(&p->mu);
        while (i >= p->K && p->done[i - p->K] < p->T && !p->err) pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
        int bad = cudaMemcpyAsync(p->stage[s], dsrc + (size_t)i * p->chunk, p->chunk, cudaMemcpyDeviceToHost, st) != cudaSuccess
               || cudaEventRecord(p->ev[s], st) != cudaSuccess;
        pthread_mutex_lock(&p->mu);
        if (bad) p->err = 1;
        else p->issued = i + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    while (!p->err && p->done[p->nchunks - 1] < p->T) pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    double t = now_s() - t0;
    for (int t2 = 0; t2 < p->T; t2++) pthread_join(th[t2], NULL);
    pthread_barrier_destroy(&p->start);
    return p->err ? -1 : t;
}

static void line(const char *what, double *v, int n)
{
    double med, mn, mx;
    stats(v, n, &med, &mn, &mx);
    printf("%-52s %6.1f GB/s (min %5.1f max %5.1f)\n", what, med, mn, mx);
}

int main(void)
{
    int REPS = env_int("PROBE_REPS", 5);
    int threads[] = { 1, 2, 4, 8 };
    size_t chunks[] = { 4, 16, 64 };
    int totals[] = { 64, 256 };
    int slots[] = { 2, 4 };
    size_t maxtot = (size_t)256 << 20;
    printf("== probe 2: pageable reads through pinned staging, GPU 0, medians of %d\n", REPS);

    /* Host memcpy alone: pinned (cudaHostAlloc, or malloc when CUDA is absent) -> pageable. */
    size_t n = (size_t)64 << 20;
    char *src = NULL;
    int cuda_ok = cudaHostAlloc((void **)&src, maxtot, cudaHostAllocPortable) == cudaSuccess;
    if (!cuda_ok) {
        printf("CUDA unavailable: host memcpy part uses malloc'd source; pipeline skipped\n");
        src = malloc(maxtot);
    }
    memset(src, 3, maxtot);
    double v[32];
    char name[96];
    for (int ti = 0; ti < 4; ti++) {
        int T = threads[ti];
        char *warm = malloc(n);
        memset(warm, 0, n);
        for (int r = 0; r < REPS; r++) { double t0 = now_s(); par_memcpy(warm, src, n, T); v[r] = (double)n / (now_s() - t0) / 1e9; }
        snprintf(name, sizeof name, "memcpy pinned->pageable 64 MB, %d thr, warm dst", T);
        line(name, v, REPS);
        free(warm);
        for (int r = 0; r < REPS; r++) {
            char *cold = malloc(n); /* 64 MB: a fresh mmap each time, so pages fault on first touch */
            double t0 = now_s();
            par_memcpy(cold, src, n, T);
            v[r] = (double)n / (now_s() - t0) / 1e9;
            free(cold);
        }
        snprintf(name, sizeof name, "memcpy pinned->pageable 64 MB, %d thr, first touch", T);
        line(name, v, REPS);
    }
    if (!cuda_ok) return 0;

    char *dsrc = NULL;
    cudaStream_t st;
    if (cudaMalloc((void **)&dsrc, maxtot) || cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)) {
        printf("cudaMalloc/stream failed\n");
        return 0;
    }
    cudaMemset(dsrc, 7, maxtot);
    cudaDeviceSynchronize();
    /* Baselines: one D2H into pinned memory; cudaMemcpy straight into pageable memory. */
    for (int ti = 0; ti < 2; ti++) {
        int tot = totals[ti];
        size_t b = (size_t)tot << 20;
        char *pg = malloc(b);
        memset(pg, 0, b);
        for (int r = 0; r < REPS; r++) {
            double t0 = now_s();
            cudaMemcpyAsync(src, dsrc, b, cudaMemcpyDeviceToHost, st);
            cudaStreamSynchronize(st);
            v[r] = (double)b / (now_s() - t0) / 1e9;
        }
        snprintf(name, sizeof name, "D2H %d MB into pinned (link rate)", tot);
        line(name, v, REPS);
        for (int r = 0; r < REPS; r++) {
            double t0 = now_s();
            cudaMemcpy(pg, dsrc, b, cudaMemcpyDeviceToHost);
            v[r] = (double)b / (now_s() - t0) / 1e9;
        }
        snprintf(name, sizeof name, "cudaMemcpy D2H %d MB into pageable (warm)", tot);
        line(name, v, REPS);
        free(pg);
    }

    /* The pipeline. */
    struct pipe p;
    memset(&p, 0, sizeof p);
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    p.done = calloc(256, sizeof(int));
    for (int k = 0; k < MAXK; k++) {
        if (cudaHostAlloc((void **)&p.stage[k], (size_t)64 << 20, cudaHostAllocPortable) || cudaEventCreateWithFlags(&p.ev[k], cudaEventDisableTiming)) {
            printf("staging alloc failed\n");
            return 0;
        }
    }
    printf("pipeline e2e GB/s, medians (min): total MB, chunk MB, K staging slots; T = copy-out threads splitting each chunk\n");
    for (int to = 0; to < 2; to++)
        for (int ci = 0; ci < 3; ci++)
            for (int ki = 0; ki < 2; ki++)
                for (int cold = 0; cold < 2; cold++) {
                    size_t tot = (size_t)totals[to] << 20, ch = chunks[ci] << 20;
                    if (ch > tot) continue;
                    if (ch == tot && ki > 0) continue; /* one chunk: slots do not matter */
                    printf("e2e total %3d chunk %2zu K %d %-11s", totals[to], chunks[ci], slots[ki], cold ? "first-touch" : "warm");
                    for (int ti = 0; ti < 4; ti++) {
                        p.T = threads[ti];
                        p.K = slots[ki];
                        p.chunk = ch;
                        p.total = tot;
                        p.nchunks = (int)(tot / ch);
                        int ok = 0;
                        char *dst = NULL;
                        if (!cold) { dst = malloc(tot); memset(dst, 0, tot); }
                        for (int r = 0; r < REPS; r++) {
                            if (cold) dst = malloc(tot);
                            p.dst = dst;
                            double t = pipe_read(&p, dsrc, st);
                            if (t > 0) v[ok++] = (double)tot / t / 1e9;
                            if (cold) free(dst);
                        }
                        if (!cold) {
                            if (dst[0] != 7 || dst[tot - 1] != 7) printf(" DATA BAD");
                            free(dst);
                        }
                        double med, mn, mx;
                        stats(v, ok, &med, &mn, &mx);
                        printf(" | T%d %5.1f (%5.1f)", p.T, med, mn);
                    }
                    printf("\n");
                }
    return 0;
}
