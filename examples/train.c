/* train.c: Dive into Deep Learning's "Training on Multiple GPUs" in C: an MLP 784-1024-1024-10
 * with ReLU, softmax cross-entropy and plain SGD (lr 0.1), minibatch 256 split across the
 * devices, each layer's gradient allreduced as soon as its backward GEMM is done, on
 * fixed-seed synthetic data. The model, its data and initial weights live in tools/train/
 * (train_mlp.h, train_mlp.c, train_data.c: the convenience library libgpar_train.la, which
 * `gpar-bench train` and tests/array_train build on too); this file is the program around it.
 * Prints the loss every --every steps, eagerly or (--graph) through recorded graphs, and the
 * time apart for: gpar_array_prepare (the array ops' kernels built, or loaded from the disk
 * cache, up front; --no-prepare leaves them to the first step), the first step (what remains of
 * the warm-up: the maps' kernels, cuBLAS/CLBlast plans, memory pools growing) and the steps
 * after it (each waited for: the median, min and max).
 *
 *   train [--devices 0,2 | --all] [--steps 100] [--batch 256] [--in 784] [--hidden 1024]
 *         [--out 10] [--lr 0.1] [--graph] [--every 10] [--no-prepare]
 * Devices: the list given (flat indices, gpar-info shows them), every device (--all), or by
 * default the CUDA GPUs, else the OpenCL GPUs, else the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/train/train_mlp.h"
#include "gpar.h" /* gpar_now */

/* The default devices: CUDA GPUs, else OpenCL GPUs, else the CPU. */
static int default_devices(gpar_engine *eng, int *devs, int max) {
  static const int backends[2] = {GPAR_BACKEND_CUDA, GPAR_BACKEND_OPENCL};
  for (int b = 0; b < 2; b++) {
    int n = 0;
    for (int d; n < max && (d = gpar_device_find(eng, backends[b], GPAR_DEVICE_GPU, n)) >= 0;) devs[n++] = d;
    if (n) return n;
  }
  devs[0] = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0);
  return 1;
}

static int parse_devices(const char *list, int *devs, int max) {
  int n = 0;
  for (const char *p = list; *p && n < max;) {
    devs[n++] = atoi(p);
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  return n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Step t, waited for: its seconds in *sec; the loss printed when t + 1 is a multiple of every or
 * the last step. */
static int timed_step(gpar_engine *eng, mlp *m, int graph, int t, int steps, int every, double *sec) {
  double t0 = gpar_now(), loss;
  int st = graph ? mlp_step_graph(m, t) : mlp_step(m, t);
  if (st == GPAR_OK) st = gpar_wait_all(eng);
  *sec = gpar_now() - t0;
  if (st == GPAR_OK && (t + 1 == steps || (every > 0 && (t + 1) % every == 0)) && (st = mlp_loss(m, &loss)) == GPAR_OK)
    printf("step %d: loss %.6f\n", t + 1, loss);
  return st;
}

/* The array ops' kernels on every device of the run, up front: its own line. */
static int prepare(gpar_engine *eng, const int *devs, int ndev) {
  double t0 = gpar_now();
  int st = GPAR_OK;
  for (int i = 0; i < ndev && st == GPAR_OK; i++) st = gpar_array_prepare(eng, devs[i]);
  if (st == GPAR_OK) printf("prepare: %.1f ms (gpar_array_prepare: the array ops' kernels on %d device%s)\n",
                            (gpar_now() - t0) * 1e3, ndev, ndev == 1 ? "" : "s");
  return st;
}

int main(int argc, char **argv) {
  mlp_shape s = {784, 1024, 10, 256, 0.1f, 1, 16};
  int steps = 100, every = 10, graph = 0, all = 0, ndev = 0, devs[64], prep = 1;
  const char *list = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--graph")) graph = 1;
    else if (!strcmp(a, "--all")) all = 1;
    else if (!strcmp(a, "--devices")) list = v, i++;
    else if (!strcmp(a, "--steps")) steps = atoi(v), i++;
    else if (!strcmp(a, "--batch")) s.batch = atoi(v), i++;
    else if (!strcmp(a, "--in")) s.in = atoi(v), i++;
    else if (!strcmp(a, "--hidden")) s.hidden = atoi(v), i++;
    else if (!strcmp(a, "--out")) s.out = atoi(v), i++;
    else if (!strcmp(a, "--lr")) s.lr = (float)atof(v), i++;
    else if (!strcmp(a, "--every")) every = atoi(v), i++;
    else if (!strcmp(a, "--no-prepare")) prep = 0;
    else {
      fprintf(stderr, "usage: %s [--devices LIST | --all] [--steps N] [--batch B] [--in N] [--hidden N] [--out N] "
                      "[--lr R] [--graph] [--every K] [--no-prepare]\n", argv[0]);
      return 2;
    }
  }
  s.batches = steps < 1 ? 1 : steps < 100 ? steps : 100; /* distinct minibatches, then again from the first */
  gpar_engine *eng;
  int st = gpar_init(&eng, NULL);
  if (st != GPAR_OK) {
    fprintf(stderr, "gpar_init: %s (%s)\n", gpar_status_name(st), gpar_last_error());
    return 1;
  }
  if (list) ndev = parse_devices(list, devs, 64);
  else if (all) for (ndev = 0; ndev < gpar_device_count(eng) && ndev < 64; ndev++) devs[ndev] = ndev;
  else ndev = default_devices(eng, devs, 64);
  for (int i = 0; i < ndev; i++) {
    gpar_device_props p;
    if ((st = gpar_device_info(eng, devs[i], &p)) != GPAR_OK) {
      fprintf(stderr, "device %d: %s (%s)\n", devs[i], gpar_status_name(st), gpar_last_error());
      return 1;
    }
    printf("device %d: %s %s\n", devs[i], p.backend, p.name);
  }
  mlp *m = NULL;
  st = prep ? prepare(eng, devs, ndev) : GPAR_OK;
  if (st == GPAR_OK) st = mlp_create(eng, &s, devs, ndev, &m);
  double t0 = gpar_now(), first = 0, *sec = calloc(steps > 1 ? (size_t)steps : 1, sizeof *sec);
  if (st == GPAR_OK && graph && (st = mlp_record(m)) == GPAR_OK)
    printf("record: %.1f ms (the step as graphs%s)\n", (gpar_now() - t0) * 1e3, prep ? "" : ", its kernels built");
  if (!sec) st = GPAR_ENOMEM;
  for (int t = 0; t < steps && st == GPAR_OK; t++)
    st = timed_step(eng, m, graph, t, steps, every, t ? &sec[t - 1] : &first);
  if (st != GPAR_OK) {
    fprintf(stderr, "train: %s (%s)\n", gpar_status_name(st), gpar_last_error());
  } else {
    printf("%d steps of %d-%d-%d-%d, batch %d on %d device%s (%s)\n", steps, s.in, s.hidden, s.hidden, s.out, s.batch,
           ndev, ndev == 1 ? "" : "s", graph ? "graphs" : "eager");
    printf("first step: %.1f ms (%s)\n", first * 1e3,
           prep ? "its maps' kernels, BLAS plans, pools growing; array kernels prepared"
                : "its kernels built or loaded, array ops' included (--no-prepare), BLAS plans, pools growing");
    if (steps > 1) {
      qsort(sec, (size_t)steps - 1, sizeof *sec, cmp_double);
      printf("steady state: %.1f us per step (median of the %d steps after the first, each waited for; min %.1f, "
             "max %.1f)\n", sec[(steps - 1) / 2] * 1e6, steps - 1, sec[0] * 1e6, sec[steps - 2] * 1e6);
    }
  }
  free(sec);
  mlp_destroy(m);
  gpar_shutdown(eng);
  return st == GPAR_OK ? 0 : 1;
}
