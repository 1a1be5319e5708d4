/* array_train.c: the training example (tools/train/train_mlp.c) at a small size against a plain-C
 * reference of the same step (float data, double arithmetic): the loss of every step, eager and
 * through graphs, on every device alone and split across all of them, and the weights after the
 * last step. Tolerance: 2e-4 relative on each step's loss and 1e-3 of the largest weight on
 * every weight (float GEMMs and reductions against double). */
#include <math.h>
#include "../tools/train/train_mlp.h"
#include "testutil.h"

#define STEPS 5
static const mlp_shape shape = {20, 16, 5, 12, 0.1f, 3, STEPS};

/* ---------------------------------------------------------------- the reference */

typedef struct ref {
  double *w[3]; /* [W | b] per layer, column-major W */
} ref;

static void ref_init(ref *r) {
  for (int l = 1; l <= 3; l++) {
    int fi, fo;
    mlp_fans(&shape, l, &fi, &fo);
    float *w = calloc((size_t)fo * fi, sizeof *w);
    r->w[l - 1] = calloc((size_t)fo * fi + fo, sizeof(double));
    mlp_init_weights(&shape, l, w);
    for (int e = 0; e < fo * fi; e++) r->w[l - 1][e] = w[e];
    free(w);
  }
}

/* out (fo x n) = W a + b, then ReLU when relu. */
static void ref_layer(const double *wb, int fi, int fo, const double *a, int n, int relu, double *out) {
  for (int j = 0; j < n; j++)
    for (int i = 0; i < fo; i++) {
      double s = wb[(size_t)fo * fi + i];
      for (int k = 0; k < fi; k++) s += wb[i + (size_t)k * fo] * a[k + (size_t)j * fi];
      out[i + (size_t)j * fo] = relu && s < 0 ? 0 : s;
    }
}

/* g = [dZ A^T | rows of dZ], and (da != NULL) da = W^T dZ through the ReLU mask of a. */
static void ref_back(const double *wb, int fi, int fo, const double *a, const double *dz, int n, double *g,
                     double *da) {
  for (int i = 0; i < fo; i++) {
    for (int k = 0; k < fi; k++) {
      double s = 0;
      for (int j = 0; j < n; j++) s += dz[i + (size_t)j * fo] * a[k + (size_t)j * fi];
      g[i + (size_t)k * fo] = s;
    }
    double s = 0;
    for (int j = 0; j < n; j++) s += dz[i + (size_t)j * fo];
    g[(size_t)fo * fi + i] = s;
  }
  for (int j = 0; da && j < n; j++)
    for (int k = 0; k < fi; k++) {
      double s = 0;
      for (int i = 0; i < fo; i++) s += wb[i + (size_t)k * fo] * dz[i + (size_t)j * fo];
      da[k + (size_t)j * fi] = a[k + (size_t)j * fi] > 0 ? s : 0;
    }
}

/* One SGD step on minibatch t; its mean loss. */
static double ref_step(ref *r, int t) {
  const int B = shape.batch, H = shape.hidden, K = shape.out, I = shape.in;
  float *xf = malloc(sizeof *xf * (size_t)I * B);
  int32_t *y = malloc(sizeof *y * (size_t)B);
  mlp_samples(&shape, (uint64_t)(t % shape.batches) * (uint64_t)B, B, xf, y);
  double *x = malloc(sizeof *x * (size_t)I * B), *h1 = malloc(sizeof *h1 * (size_t)H * B), *h2 = malloc(sizeof *h2 * (size_t)H * B);
  double *z = malloc(sizeof *z * (size_t)K * B), *d1 = malloc(sizeof *d1 * (size_t)H * B), *d2 = malloc(sizeof *d2 * (size_t)H * B);
  double *g[3], loss = 0;
  for (int e = 0; e < I * B; e++) x[e] = xf[e];
  ref_layer(r->w[0], I, H, x, B, 1, h1);
  ref_layer(r->w[1], H, H, h1, B, 1, h2);
  ref_layer(r->w[2], H, K, h2, B, 0, z);
  for (int j = 0; j < B; j++) { /* z becomes dZ = (softmax - onehot) / B */
    double mx = -INFINITY, s = 0, *c = z + (size_t)j * K;
    for (int i = 0; i < K; i++) mx = c[i] > mx ? c[i] : mx;
    for (int i = 0; i < K; i++) s += exp(c[i] - mx);
    loss += log(s) - (c[y[j]] - mx);
    for (int i = 0; i < K; i++) c[i] = (exp(c[i] - mx) / s - (i == y[j])) / B;
  }
  for (int l = 1; l <= 3; l++) {
    int fi, fo;
    mlp_fans(&shape, l, &fi, &fo);
    g[l - 1] = malloc(sizeof(double) * ((size_t)fo * fi + fo));
  }
  ref_back(r->w[2], H, K, h2, z, B, g[2], d2);
  ref_back(r->w[1], H, H, h1, d2, B, g[1], d1);
  ref_back(r->w[0], I, H, x, d1, B, g[0], NULL);
  for (int l = 1; l <= 3; l++) {
    int fi, fo;
    mlp_fans(&shape, l, &fi, &fo);
    for (int e = 0; e < fo * fi + fo; e++) r->w[l - 1][e] -= (double)shape.lr * g[l - 1][e];
    free(g[l - 1]);
  }
  free(xf), free(y), free(x), free(h1), free(h2), free(z), free(d1), free(d2);
  return loss / B;
}

/* ---------------------------------------------------------------- libgpar against it */

static gpar_engine *eng;
static double want_loss[STEPS];
static ref want;

/* The model on devs, STEPS steps (eager or graphs), each loss and the last weights checked. */
static void run(const int *devs, int ndev, int graph, const char *what) {
  mlp *m;
  int st = mlp_create(eng, &shape, devs, ndev, &m), good = st == GPAR_OK;
  if (good && graph) good = (st = mlp_record(m)) == GPAR_OK;
  double worst = 0;
  for (int t = 0; t < STEPS && good; t++) {
    double loss = NAN;
    st = graph ? mlp_step_graph(m, t) : mlp_step(m, t);
    if (st == GPAR_OK) st = mlp_loss(m, &loss);
    double rel = fabs(loss - want_loss[t]) / fabs(want_loss[t]);
    worst = rel > worst ? rel : worst;
    if (st != GPAR_OK || !(rel <= 2e-4)) {
      diag("  step %d: loss %.9g, reference %.9g (%s)", t + 1, loss, want_loss[t], gpar_status_name(st));
      good = 0;
    }
  }
  ok(good, "%s: loss of %d steps within 2e-4 of the reference (worst %.2g)", what, STEPS, worst);
  for (int l = 1; l <= 3 && good; l++) {
    int fi, fo;
    mlp_fans(&shape, l, &fi, &fo);
    size_t n = (size_t)fo * fi + fo;
    float *w = malloc(sizeof *w * n);
    double big = 0, err = 0;
    for (int i = 0; i < ndev; i++) { /* every replica */
      if ((st = mlp_read_layer(m, i, l, w)) != GPAR_OK) break;
      for (size_t e = 0; e < n; e++) {
        big = fabs(want.w[l - 1][e]) > big ? fabs(want.w[l - 1][e]) : big;
        err = fabs(w[e] - want.w[l - 1][e]) > err ? fabs(w[e] - want.w[l - 1][e]) : err;
      }
    }
    ok(st == GPAR_OK && err <= 1e-3 * big, "%s: layer %d weights on every device after %d steps (error %.2g of %.2g)",
       what, l, STEPS, err, big);
    free(w);
  }
  if (st != GPAR_OK) diag("  %s (%s)", gpar_status_name(st), gpar_last_error());
  mlp_destroy(m);
}

int main(void) {
  tap_start();
  eng = tu_engine(0, 0, 0);
  ref_init(&want);
  for (int t = 0; t < STEPS; t++) want_loss[t] = ref_step(&want, t);
  diag("reference loss: %.6f at step 1, %.6f at step %d", want_loss[0], want_loss[STEPS - 1], STEPS);
  ok(want_loss[STEPS - 1] < want_loss[0], "the reference learns: loss %.6f -> %.6f", want_loss[0], want_loss[STEPS - 1]);
  int ndev = gpar_device_count(eng), all[64];
  for (int d = 0; d < ndev && d < 64; d++) {
    tu_devinfo info;
    tu_device_info(eng, d, &info);
    char what[200];
    snprintf(what, sizeof what, "dev %d (%s %s) alone, eager", d, info.backend, info.name);
    run(&d, 1, 0, what);
    snprintf(what, sizeof what, "dev %d (%s %s) alone, graph", d, info.backend, info.name);
    run(&d, 1, 1, what);
    all[d] = d;
  }
  if (ndev > 1) {
    run(all, ndev, 0, "split across every device, eager");
    run(all, ndev, 1, "split across every device, graphs and allreduces");
  }
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all");
  for (int l = 0; l < 3; l++) free(want.w[l]);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
