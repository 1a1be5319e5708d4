/* train_data.c: the training example's data and initial weights (train_mlp.h): one
 * counter-based generator, splitmix64 of stream << 40 | index, that bench/train_torch.py
 * implements too, and the plain C that draws from it. No libgpar call: the tests' reference
 * uses it as it is. */
#include <stdlib.h>

#include "train_mlp.h"

static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint64_t draw(uint64_t stream, uint64_t index) { return mix(stream << 40 | index); }

void mlp_fans(const mlp_shape *s, int l, int *fan_in, int *fan_out) {
  *fan_in = l == 1 ? s->in : s->hidden;
  *fan_out = l == 3 ? s->out : s->hidden;
}

void mlp_init_weights(const mlp_shape *s, int l, float *w) {
  int fi, fo;
  mlp_fans(s, l, &fi, &fo);
  const float a = 71.0f / 4096.0f; /* about 0.01 sqrt(3): the spread of N(0, 0.01), exact in float */
  for (size_t e = 0; e < (size_t)fi * fo; e++) {
    float u = (float)(draw(16 * s->seed + (uint64_t)l, e) >> 40) * 0x1p-24f;
    w[e] = (2.0f * u - 1.0f) * a;
  }
}

void mlp_samples(const mlp_shape *s, uint64_t first, int count, float *x, int32_t *y) {
  int8_t *t = malloc((size_t)s->out * (size_t)s->in); /* the teacher */
  uint8_t *q = malloc((size_t)s->in);
  for (size_t e = 0; e < (size_t)s->out * (size_t)s->in; e++) t[e] = (int8_t)((int)(draw(16 * s->seed + 9, e) >> 60) - 8);
  for (int j = 0; j < count; j++) {
    uint64_t smp = first + (uint64_t)j;
    for (int f = 0; f < s->in; f++) {
      q[f] = (uint8_t)(draw(16 * s->seed + 8, smp * (uint64_t)s->in + (uint64_t)f) >> 56);
      x[(size_t)j * s->in + f] = (float)q[f] / 256.0f;
    }
    int64_t best_score = 0;
    for (int c = 0; c < s->out; c++) {
      int64_t sc = 0;
      for (int f = 0; f < s->in; f++) sc += (int64_t)t[(size_t)c * s->in + f] * q[f];
      if (c == 0 || sc > best_score) best_score = sc, y[j] = c;
    }
  }
  free(t);
  free(q);
}

