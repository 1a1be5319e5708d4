/* train_mlp.c: the data-parallel MLP training step of train_mlp.h. Per device: the weights of
 * each layer and their gradient as one buffer each ([W | b], W column-major fan_out x fan_in),
 * the device's share of `batches` minibatches, activations. A step:
 *   forward  H1 = relu(W1 X + b1), H2 = relu(W2 H1 + b2), Z = W3 H2 + b3 (gpar_sgemm,
 *            gpar_binary_bcast per row, gpar_unary), loss and dZ = (softmax(Z) - onehot) / B
 *            (gpar_softmax_xent), the loss summed (gpar_reduce_range);
 *   backward per layer: dW = dZ A^T (gpar_sgemm), db = the rows of dZ summed
 *            (gpar_reduce_matrix), then that layer's [dW | db] allreduced over the devices
 *            (gpar_allreduce) while the next layer's backward runs; dA = W^T dZ and the ReLU
 *            gradient (a map: g = h > 0 ? g : 0);
 *   update   [W | b] -= lr [dW | db] (a map), on every device alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_mlp.h"

#define CHECK(call)                     \
  do {                                  \
    int st_ = (call);                   \
    if (st_ != GPAR_OK) return st_;     \
  } while (0)

typedef struct mlp_dev {
  int dev, cols, first;     /* device, its columns of a minibatch, the first one */
  gpar_buffer wb[3], gb[3]; /* [W | b] and [dW | db] of each layer */
  gpar_buffer x_all, y_all; /* its columns of every kept minibatch */
  gpar_buffer xs, ys;       /* a graph's inputs: one minibatch's columns */
  gpar_buffer h[2], dh[2], z, dz, loss, lsum;
} mlp_dev;

struct mlp {
  gpar_engine *eng;
  mlp_shape s;
  int ndev;
  mlp_dev *d;
  gpar_comm comm;
  gpar_map relu_grad, sgd;
  gpar_graph *graph[4]; /* one device: graph[0] is the whole step; else the phases */
  int ngraphs;
};

/* ---------------------------------------------------------------- the model */

static int buffer(mlp *m, int dev, size_t floats, gpar_buffer *b) {
  return gpar_buffer_create(m->eng, dev, floats * sizeof(float), b);
}

/* Device i's buffers, initial weights and share of the kept minibatches. */
static int dev_setup(mlp *m, mlp_dev *d, const float *const *w0) {
  const mlp_shape *s = &m->s;
  for (int l = 1; l <= 3; l++) {
    int fi, fo;
    mlp_fans(s, l, &fi, &fo);
    size_t n = (size_t)fo * fi + (size_t)fo;
    CHECK(buffer(m, d->dev, n, &d->wb[l - 1]));
    CHECK(buffer(m, d->dev, n, &d->gb[l - 1]));
    CHECK(gpar_write(d->wb[l - 1], 0, w0[l - 1], n * sizeof(float)));
  }
  size_t cols = (size_t)d->cols, kept = (size_t)s->batches * cols;
  CHECK(buffer(m, d->dev, (size_t)s->in * kept, &d->x_all));
  CHECK(buffer(m, d->dev, kept, &d->y_all));
  CHECK(buffer(m, d->dev, (size_t)s->in * cols, &d->xs));
  CHECK(buffer(m, d->dev, cols, &d->ys));
  for (int k = 0; k < 2; k++) CHECK(buffer(m, d->dev, (size_t)s->hidden * cols, &d->h[k]));
  for (int k = 0; k < 2; k++) CHECK(buffer(m, d->dev, (size_t)s->hidden * cols, &d->dh[k]));
  CHECK(buffer(m, d->dev, (size_t)s->out * cols, &d->z));
  CHECK(buffer(m, d->dev, (size_t)s->out * cols, &d->dz));
  CHECK(buffer(m, d->dev, cols, &d->loss));
  CHECK(buffer(m, d->dev, 1, &d->lsum));
  float *x = malloc(sizeof *x * (size_t)s->in * cols);
  int32_t *y = malloc(sizeof *y * cols);
  int st = x && y ? GPAR_OK : GPAR_ENOMEM;
  for (int b = 0; b < s->batches && st == GPAR_OK; b++) {
    mlp_samples(s, (uint64_t)b * (uint64_t)s->batch + (uint64_t)d->first, d->cols, x, y);
    st = gpar_write(d->x_all, (size_t)b * s->in * cols * sizeof *x, x, (size_t)s->in * cols * sizeof *x);
    if (st == GPAR_OK) st = gpar_write(d->y_all, (size_t)b * cols * sizeof *y, y, cols * sizeof *y);
  }
  free(x);
  free(y);
  return st;
}

/* The maps and the communicator, once per model. */
static int model_setup(mlp *m, const int *devs) {
  CHECK(gpar_map_create(m->eng, "relu_grad", "in f32 h, inout f32 g", "g = h > 0 ? g : 0", &m->relu_grad));
  CHECK(gpar_map_create(m->eng, "sgd", "inout f32 w, in f32 g, f32 lr", "w -= lr * g", &m->sgd));
  if (m->ndev > 1) CHECK(gpar_comm_create(m->eng, devs, m->ndev, &m->comm));
  return GPAR_OK;
}

int mlp_create(gpar_engine *eng, const mlp_shape *s, const int *devs, int ndev, mlp **out) {
  *out = NULL;
  if (ndev < 1 || s->batch < ndev || s->batches < 1) return GPAR_EINVAL;
  mlp *m = calloc(1, sizeof *m);
  if (!m || !(m->d = calloc((size_t)ndev, sizeof *m->d))) {
    free(m);
    return GPAR_ENOMEM;
  }
  m->eng = eng, m->s = *s, m->ndev = ndev;
  float *w0[3] = {NULL, NULL, NULL};
  int st = model_setup(m, devs);
  for (int l = 1; l <= 3 && st == GPAR_OK; l++) {
    int fi, fo;
    mlp_fans(s, l, &fi, &fo);
    if (!(w0[l - 1] = calloc((size_t)fo * fi + (size_t)fo, sizeof(float)))) st = GPAR_ENOMEM;
    else mlp_init_weights(s, l, w0[l - 1]); /* the bias after W stays 0 */
  }
  for (int i = 0, first = 0; i < ndev && st == GPAR_OK; i++) {
    m->d[i].dev = devs[i];
    m->d[i].cols = s->batch / ndev + (i < s->batch % ndev);
    m->d[i].first = first;
    first += m->d[i].cols;
    st = dev_setup(m, &m->d[i], (const float *const *)w0);
  }
  for (int l = 0; l < 3; l++) free(w0[l]);
  if (st == GPAR_OK) st = gpar_wait_all(eng);
  if (st != GPAR_OK) {
    mlp_destroy(m);
    return st;
  }
  *out = m;
  return GPAR_OK;
}

/* ---------------------------------------------------------------- the step */

/* Forward through the three layers, the loss, its sum and dZ, from the minibatch columns x
 * (at element xo) and labels y (at yo). */
static int forward(mlp *m, mlp_dev *d, gpar_buffer x, size_t xo, gpar_buffer y, size_t yo) {
  const mlp_shape *s = &m->s;
  const int H = s->hidden, n = d->cols;
  gpar_buffer a = x;
  size_t ao = xo;
  for (int l = 1; l <= 3; l++) {
    int fi, fo;
    mlp_fans(s, l, &fi, &fo);
    gpar_buffer out = l == 3 ? d->z : d->h[l - 1];
    CHECK(gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, fo, n, fi, 1.0f, d->wb[l - 1], 0, fo, a, ao, fi, 0.0f, out, 0, fo));
    CHECK(gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, fo, n, out, 0, fo, d->wb[l - 1], (size_t)fo * fi, GPAR_PER_ROW,
                            out, 0, fo));
    if (l < 3) CHECK(gpar_unary(GPAR_UN_RELU, GPAR_FLOAT, (size_t)H * n, out, 0, out, 0));
    a = out, ao = 0;
  }
  CHECK(gpar_softmax_xent(GPAR_FLOAT, s->out, n, d->z, 0, s->out, y, yo, 1.0 / s->batch, d->loss, 0, d->dz, 0,
                          s->out));
  return gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, (size_t)n, d->loss, 0, d->lsum, 0);
}

/* Layer l's output gradient and input activations on device d. */
static gpar_buffer grad_out(mlp_dev *d, int l) { return l == 3 ? d->dz : d->dh[l - 1]; }

/* Layer l's weight and bias gradients [dW | db] = [dZ A^T | rows of dZ summed]. */
static int backward_weights(mlp *m, mlp_dev *d, int l, gpar_buffer a, size_t ao) {
  int fi, fo;
  mlp_fans(&m->s, l, &fi, &fo);
  gpar_buffer dzb = grad_out(d, l);
  CHECK(gpar_sgemm(GPAR_NO_TRANS, GPAR_TRANS, fo, fi, d->cols, 1.0f, dzb, 0, fo, a, ao, fi, 0.0f, d->gb[l - 1], 0, fo));
  return gpar_reduce_matrix(GPAR_SUM, GPAR_FLOAT, fo, d->cols, dzb, 0, fo, GPAR_PER_ROW, d->gb[l - 1], (size_t)fo * fi);
}

/* The gradient reaching layer l's input (l > 1): W^T dZ, through the ReLU of layer l - 1. */
static int backward_input(mlp *m, mlp_dev *d, int l) {
  int fi, fo;
  mlp_fans(&m->s, l, &fi, &fo);
  gpar_buffer da = d->dh[l - 2];
  CHECK(gpar_sgemm(GPAR_TRANS, GPAR_NO_TRANS, fi, d->cols, fo, 1.0f, d->wb[l - 1], 0, fo, grad_out(d, l), 0, fo, 0.0f,
                   da, 0, fi));
  gpar_arg args[2] = {gpar_arg_buffer(d->h[l - 2], 0), gpar_arg_buffer(da, 0)};
  return gpar_map_launch(m->relu_grad, (size_t)fi * d->cols, args, 2);
}

static int update(mlp *m, mlp_dev *d) {
  for (int l = 1; l <= 3; l++) {
    int fi, fo;
    mlp_fans(&m->s, l, &fi, &fo);
    gpar_arg args[3] = {gpar_arg_buffer(d->wb[l - 1], 0), gpar_arg_buffer(d->gb[l - 1], 0), gpar_arg_f32(m->s.lr)};
    CHECK(gpar_map_launch(m->sgd, (size_t)fo * fi + (size_t)fo, args, 3));
  }
  return GPAR_OK;
}

/* Phase p (0: forward and layer 3's gradients; 1, 2: layer 2's, layer 1's; 3: the update) on
 * every device; the inputs are the kept minibatch t, or the graph inputs when t < 0. */
static int phase(mlp *m, int p, int t) {
  for (int i = 0; i < m->ndev; i++) {
    mlp_dev *d = &m->d[i];
    size_t b = t < 0 ? 0 : (size_t)(t % m->s.batches);
    gpar_buffer x = t < 0 ? d->xs : d->x_all, y = t < 0 ? d->ys : d->y_all;
    size_t xo = b * (size_t)m->s.in * d->cols, yo = b * (size_t)d->cols;
    if (p == 0) CHECK(forward(m, d, x, xo, y, yo));
    if (p == 0) CHECK(backward_weights(m, d, 3, d->h[1], 0));
    if (p == 1 || p == 2) CHECK(backward_input(m, d, 4 - p));
    if (p == 1) CHECK(backward_weights(m, d, 2, d->h[0], 0));
    if (p == 2) CHECK(backward_weights(m, d, 1, x, xo));
    if (p == 3) CHECK(update(m, d));
  }
  return GPAR_OK;
}

/* After phase p < 3: allreduce the gradient that phase finished (layer 3 - p) over the devices. */
static int allreduce(mlp *m, int p) {
  if (m->ndev == 1) return GPAR_OK;
  int l = 3 - p, fi, fo;
  mlp_fans(&m->s, l, &fi, &fo);
  gpar_buffer g[64];
  for (int i = 0; i < m->ndev && i < 64; i++) g[i] = m->d[i].gb[l - 1];
  return gpar_allreduce(m->comm, g, NULL, (size_t)fo * fi + (size_t)fo, GPAR_FLOAT, GPAR_SUM);
}

int mlp_step(mlp *m, int t) {
  for (int p = 0; p < 4; p++) {
    CHECK(phase(m, p, t));
    if (p < 3) CHECK(allreduce(m, p));
  }
  return GPAR_OK;
}

int mlp_record(mlp *m) {
  m->ngraphs = m->ndev == 1 ? 1 : 4;
  for (int g = 0; g < m->ngraphs; g++) {
    CHECK(gpar_graph_begin(m->eng));
    int st = GPAR_OK;
    for (int p = m->ndev == 1 ? 0 : g; p <= (m->ndev == 1 ? 3 : g) && st == GPAR_OK; p++) st = phase(m, p, -1);
    int st2 = gpar_graph_end(m->eng, &m->graph[g]);
    CHECK(st);
    CHECK(st2);
  }
  return GPAR_OK;
}

int mlp_step_graph(mlp *m, int t) {
  size_t b = (size_t)(t % m->s.batches);
  for (int i = 0; i < m->ndev; i++) {
    mlp_dev *d = &m->d[i];
    size_t xb = (size_t)m->s.in * d->cols * sizeof(float), yb = (size_t)d->cols * sizeof(int32_t);
    CHECK(gpar_copy(d->xs, 0, d->x_all, b * xb, xb));
    CHECK(gpar_copy(d->ys, 0, d->y_all, b * yb, yb));
  }
  for (int g = 0; g < m->ngraphs; g++) {
    CHECK(gpar_graph_launch(m->graph[g]));
    if (m->ngraphs > 1 && g < 3) CHECK(allreduce(m, g));
  }
  return GPAR_OK;
}

int mlp_loss(mlp *m, double *loss) {
  double sum = 0;
  for (int i = 0; i < m->ndev; i++) {
    float v;
    CHECK(gpar_read(m->d[i].lsum, 0, &v, sizeof v));
    sum += v;
  }
  *loss = sum / m->s.batch;
  return GPAR_OK;
}

int mlp_read_layer(mlp *m, int i, int l, float *wb) {
  int fi, fo;
  mlp_fans(&m->s, l, &fi, &fo);
  return gpar_read(m->d[i].wb[l - 1], 0, wb, ((size_t)fo * fi + (size_t)fo) * sizeof *wb);
}

void mlp_destroy(mlp *m) {
  if (!m) return;
  gpar_wait_all(m->eng);
  for (int g = 0; g < 4; g++)
    if (m->graph[g]) gpar_graph_destroy(m->graph[g]);
  if (m->comm.id) gpar_comm_destroy(m->comm);
  if (m->relu_grad.id) gpar_map_release(m->relu_grad);
  if (m->sgd.id) gpar_map_release(m->sgd);
  for (int i = 0; i < m->ndev; i++) {
    mlp_dev *d = &m->d[i];
    gpar_buffer *all[] = {&d->wb[0], &d->wb[1], &d->wb[2], &d->gb[0], &d->gb[1], &d->gb[2], &d->x_all, &d->y_all,
                          &d->xs, &d->ys, &d->h[0], &d->h[1], &d->dh[0], &d->dh[1], &d->z, &d->dz, &d->loss, &d->lsum};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
      if (all[k]->id) gpar_buffer_release(*all[k]);
  }
  free(m->d);
  free(m);
}
