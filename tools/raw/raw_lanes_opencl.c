/* raw_lanes_opencl.c: the hand-written eager limit of gpar-bench lanes on OpenCL (raw_lanes.h): T
 * threads, each with its own in-order queue of one context (kept per device for the process, so
 * CLBlast's and the program's builds are made once), issuing its share of independent
 * CLBlastSgemmWithTempBuffer calls (a temp buffer per queue, as libgpar's backend keeps one) or
 * tiny clEnqueueNDRangeKernel launches (a kernel object per thread), then clFinish on its queue;
 * the chain case runs on one queue. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <CL/cl.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <clblast_c.h>
#pragma GCC diagnostic pop

#include "gpar.h" /* gpar_now */
#include "raw_lanes.h"


static const char inc_src[] = "__kernel void inc(__global const float *x, __global float *y, int n, int off) {\n"
                              "  int i = get_global_id(0);\n"
                              "  if (i < n) y[off + i] = x[i] + 1.0f;\n"
                              "}\n";

/* The context, device and program of the last device asked for. */
static struct {
  int dev;
  cl_context ctx;
  cl_device_id id;
  cl_program prog;
} G = {.dev = -1};

typedef struct rl_run rl_run;
typedef struct rl_thread {
  rl_run *run;
  int id, ok;
  cl_command_queue q;
  cl_kernel k;
  cl_mem temp;
} rl_thread;

struct rl_run {
  const gpar_raw_lanes_case *c;
  cl_mem a, b, out; /* inputs; ring slots, then one more for the warm-ups */
  size_t slot;      /* floats per slot */
  int per;          /* slots per thread */
  gpar_raw_lanes_team team;
  rl_thread th[GPAR_RAW_L_MAX_THREADS];
};

/* Device dev counted over the platforms in order: its context and the tiny kernel's program. */
static int rl_device(int dev) {
  if (G.dev == dev) return 0;
  cl_platform_id p[16];
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(16, p, &np);
  for (cl_uint i = 0, left = (cl_uint)dev; err == CL_SUCCESS && i < np && i < 16 && !G.ctx; i++) {
    cl_device_id ids[64];
    cl_uint nd = 0;
    if (clGetDeviceIDs(p[i], CL_DEVICE_TYPE_ALL, 64, ids, &nd) != CL_SUCCESS) continue;
    if (left >= nd) {
      left -= nd;
      continue;
    }
    G.id = ids[left];
    G.ctx = clCreateContext((cl_context_properties[]){CL_CONTEXT_PLATFORM, (cl_context_properties)p[i], 0}, 1, &G.id,
                            NULL, NULL, &err);
  }
  const char *text = inc_src;
  if (G.ctx) G.prog = clCreateProgramWithSource(G.ctx, 1, &text, NULL, &err);
  if (G.prog) err = clBuildProgram(G.prog, 1, &G.id, "", NULL, NULL);
  if (!G.prog || err != CL_SUCCESS) {
    fprintf(stderr, "raw_lanes_opencl: device %d: no context or program (%d)\n", dev, (int)err);
    if (G.prog) clReleaseProgram(G.prog);
    if (G.ctx) clReleaseContext(G.ctx);
    G.prog = NULL, G.ctx = NULL;
    return -1;
  }
  G.dev = dev;
  return 0;
}

/* One op of t into y: the tiny kernel (y = a + 1), an independent GEMM (y = a b) or a chain step
 * (y = b x, b holding 1 / n). */
static int issue(rl_run *r, rl_thread *t, cl_mem x, size_t x_slot, size_t y_slot) {
  const gpar_raw_lanes_case *c = r->c;
  const size_t n = (size_t)c->n;
  if (c->what == GPAR_RAW_L_TINY) {
    cl_int nn = c->n, off = (cl_int)(y_slot * r->slot), err;
    size_t g = (n + 255) / 256 * 256, l = 256;
    err = clSetKernelArg(t->k, 0, sizeof r->a, &r->a);
    if (!err) err = clSetKernelArg(t->k, 1, sizeof r->out, &r->out);
    if (!err) err = clSetKernelArg(t->k, 2, sizeof nn, &nn);
    if (!err) err = clSetKernelArg(t->k, 3, sizeof off, &off);
    if (!err) err = clEnqueueNDRangeKernel(t->q, t->k, 1, NULL, &g, &l, 0, NULL, NULL);
    return err == CL_SUCCESS ? 0 : (fprintf(stderr, "raw_lanes_opencl: launch: %d\n", (int)err), -1);
  }
  cl_mem left = c->what == GPAR_RAW_L_CHAIN ? r->b : r->a, right = c->what == GPAR_RAW_L_CHAIN ? x : r->b;
  size_t right_off = c->what == GPAR_RAW_L_CHAIN ? x_slot * r->slot : 0;
  CLBlastStatusCode s = CLBlastSgemmWithTempBuffer(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n,
                                                   n, 1.0f, left, 0, n, right, right_off, n, 0.0f, r->out,
                                                   y_slot * r->slot, n, &t->q, NULL, t->temp);
  return s == CLBlastSuccess ? 0 : (fprintf(stderr, "raw_lanes_opencl: CLBlastSgemm: %d\n", (int)s), -1);
}

/* A thread's queue, kernel object or temp buffer. */
static int rl_setup(rl_run *r, rl_thread *t) {
  const size_t n = (size_t)r->c->n;
  size_t need = 0;
  cl_int err = CL_SUCCESS;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  t->q = clCreateCommandQueue(G.ctx, G.id, 0, &err);
#pragma GCC diagnostic pop
  if (t->q && r->c->what == GPAR_RAW_L_TINY) t->k = clCreateKernel(G.prog, "inc", &err);
  if (t->q && r->c->what != GPAR_RAW_L_TINY &&
      CLBlastSGemmTempBufferSize(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 0, n, 0, n, 0,
                                 n, &t->q, &need) == CLBlastSuccess)
    t->temp = clCreateBuffer(G.ctx, CL_MEM_READ_WRITE, need > 4096 ? need : 4096, NULL, &err);
  if (t->q && (t->k || t->temp)) return 0;
  fprintf(stderr, "raw_lanes_opencl: queue setup failed (%d)\n", (int)err);
  return -1;
}

/* A thread: setup and a warm-up op into the spare slot, then (between the two barriers) its share
 * of the ops and clFinish. */
static void *rl_main(void *p) {
  rl_thread *t = p;
  rl_run *r = t->run;
  const gpar_raw_lanes_case *c = r->c;
  t->ok = !rl_setup(r, t);
  if (t->ok && t->id == 0 && c->what == GPAR_RAW_L_CHAIN) /* C0 = 1 */
    t->ok = clEnqueueCopyBuffer(t->q, r->a, r->out, 0, 0, r->slot * 4, 0, NULL, NULL) == CL_SUCCESS;
  if (t->ok) t->ok = !issue(r, t, r->a, 0, (size_t)c->ring) && clFinish(t->q) == CL_SUCCESS;
  pthread_barrier_wait(&r->team.go);
  for (long i = t->id, j = 0; t->ok && i < c->iters; i += c->threads, j++) {
    if (c->what == GPAR_RAW_L_CHAIN)
      t->ok = !issue(r, t, r->out, (size_t)(i & 1), (size_t)((i + 1) & 1));
    else
      t->ok = !issue(r, t, NULL, 0, (size_t)(t->id * r->per + j % r->per));
  }
  if (t->ok) t->ok = clFinish(t->q) == CL_SUCCESS;
  pthread_barrier_wait(&r->team.done);
  return NULL;
}

/* Inputs and ring: a = 1, b = 0.5 (chain: 1 / n); then the check of the slot the ops wrote last. */
static int rl_data(rl_run *r, int check) {
  const gpar_raw_lanes_case *c = r->c;
  const size_t in = r->slot;
  cl_int err = CL_SUCCESS;
  if (check) {
    const long t = c->what == GPAR_RAW_L_CHAIN ? 1 : c->threads, last = ((c->iters + t - 1) / t - 1) % r->per;
    const float want = c->what == GPAR_RAW_L_TINY ? 2.0f : c->what == GPAR_RAW_L_GEMM ? 0.5f * c->n : 1.0f;
    for (int k = 0; k < 4; k++) {
      size_t slot = c->what == GPAR_RAW_L_CHAIN ? (size_t)(c->iters & 1) : k < 2 ? 0 : (size_t)last;
      float v = 0;
      err = clEnqueueReadBuffer(r->th[0].q, r->out, CL_TRUE, (slot * in + (k & 1 ? in - 1 : 0)) * 4, 4, &v, 0, NULL, NULL);
      if (err || !(v >= want * 0.999f && v <= want * 1.001f)) {
        fprintf(stderr, "raw_lanes_opencl: computed %g, want %g (%d)\n", (double)v, (double)want, (int)err);
        return -1;
      }
    }
    return 0;
  }
  float *h = malloc(in * sizeof *h), *h2 = malloc(in * sizeof *h2);
  for (size_t i = 0; h && h2 && i < in; i++) h[i] = 1.0f, h2[i] = c->what == GPAR_RAW_L_CHAIN ? 1.0f / (float)c->n : 0.5f;
  if (h && h2) r->a = clCreateBuffer(G.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, in * 4, h, &err);
  if (r->a) r->b = clCreateBuffer(G.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, in * 4, h2, &err);
  size_t out = (size_t)(c->ring + 1) * in * 4;
  float *zero = r->b ? calloc(1, out) : NULL;
  if (zero) r->out = clCreateBuffer(G.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, out, zero, &err);
  free(zero);
  free(h), free(h2);
  if (!r->out) fprintf(stderr, "raw_lanes_opencl: buffers: %d\n", (int)err);
  return r->out ? 0 : -1;
}

int gpar_raw_lanes_opencl(const gpar_raw_lanes_case *c, double *seconds, const char **what) {
  static const char *const names[] = {"T threads, T queues, CLBlastSgemmWithTempBuffer with a temp per queue",
                                      "T threads, T queues, clEnqueueNDRangeKernel",
                                      "one queue, CLBlastSgemmWithTempBuffer"};
  int T = gpar_raw_lanes_threads(c);
  if (T < 0) return -1;
  *what = names[c->what];
  rl_run r = {.c = c, .slot = c->what == GPAR_RAW_L_TINY ? (size_t)c->n : (size_t)c->n * c->n, .per = c->ring / T};
  int ok = !rl_device(c->dev) && !rl_data(&r, 0);
  for (int k = 0; k < T; k++) r.th[k] = (rl_thread){.run = &r, .id = k};
  if (ok) gpar_raw_lanes_team_run(&r.team, T, rl_main, r.th, sizeof r.th[0], seconds);
  for (int k = 0; k < T; k++) ok &= r.th[k].ok;
  if (ok) ok = !rl_data(&r, 1);
  for (int k = 0; k < T; k++) {
    if (r.th[k].k) clReleaseKernel(r.th[k].k);
    if (r.th[k].temp) clReleaseMemObject(r.th[k].temp);
    if (r.th[k].q) clReleaseCommandQueue(r.th[k].q);
  }
  if (r.out) clReleaseMemObject(r.out);
  if (r.b) clReleaseMemObject(r.b);
  if (r.a) clReleaseMemObject(r.a);
  return ok ? 0 : -1;
}
