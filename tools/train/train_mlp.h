/* train_mlp.h: the data-parallel training step of Dive into Deep Learning's "Training on
 * Multiple GPUs", in C with libgpar's public API only: a multilayer perceptron in -> hidden ->
 * hidden -> out (ReLU), softmax cross-entropy, plain SGD, the minibatch split across the
 * devices it is given, each layer's gradient allreduced as soon as its backward GEMM is done.
 * Built as the convenience library libgpar_train.la (tools/local.mk) that examples/train.c,
 * `gpar-bench train` and tests/array_train.c link.
 *
 * Data and weights come from one counter-based generator that bench/train_torch.py implements
 * too (splitmix64 of stream << 40 | index), so both sides start from the same bits:
 * - weights of layer l (1..3), column-major fan_out x fan_in: (2u - 1) * 71/4096 in float, u the
 *   24-bit uniform of stream 16 seed + l at the element's index; biases 0;
 * - sample s, feature f: q / 256 with q the top 8 bits of stream 16 seed + 8 at s * in + f;
 * - its label: argmax over classes c of sum_f T(c, f) q(f), integers (the first on ties), with a
 *   teacher T(c, f) = top 4 bits of stream 16 seed + 9 at c * in + f, minus 8: a learnable,
 *   exactly reproducible task. */
#ifndef GPAR_TOOLS_TRAIN_MLP_H
#define GPAR_TOOLS_TRAIN_MLP_H

#include <stdint.h>
#include "gpar.h"

typedef struct mlp_shape {
  int in, hidden, out; /* 784, 1024, 10 */
  int batch;           /* global minibatch: 256 */
  float lr;            /* 0.1 */
  uint64_t seed;       /* 1 */
  int batches;         /* distinct minibatches kept on each device; step t uses t mod batches */
} mlp_shape;

typedef struct mlp mlp;

/* Layer l's (1..3) fan-in and fan-out. */
void mlp_fans(const mlp_shape *s, int l, int *fan_in, int *fan_out);
/* Layer l's initial weights (fan_out x fan_in, column-major) into w. */
void mlp_init_weights(const mlp_shape *s, int l, float *w);
/* count samples from sample `first` on: features x (in x count, column-major), labels y. */
void mlp_samples(const mlp_shape *s, uint64_t first, int count, float *x, int32_t *y);

/* The model on devs[0..ndev) of eng, each with the same initial weights and its share of every
 * minibatch (columns split as evenly as possible, earlier devices one more). */
int mlp_create(gpar_engine *eng, const mlp_shape *s, const int *devs, int ndev, mlp **out);
/* One training step on minibatch t, eagerly: every op issued at once, nothing waited for. */
int mlp_step(mlp *m, int t);
/* Record the step as graphs (one device: one graph; several: a graph per phase, with the
 * allreduces between them issued eagerly, as collectives are not recorded). */
int mlp_record(mlp *m);
/* One step through the recorded graphs: minibatch t copied into their input buffers, then the
 * launches (and the allreduces between them). */
int mlp_step_graph(mlp *m, int t);
/* Wait for the last step and give its mean loss (over the whole minibatch). */
int mlp_loss(mlp *m, double *loss);
/* Layer l's current weights and bias from device index i of the model (fan_out * fan_in +
 * fan_out floats). */
int mlp_read_layer(mlp *m, int i, int l, float *wb);
/* Free the model (waits for its work). */
void mlp_destroy(mlp *m);

#endif
