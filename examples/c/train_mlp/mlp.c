#include "mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "glyphs.h"

int64_t mlp_param_size(mlp_shape_t shape, int which, int64_t dims[2], int32_t* rank) {
  switch (which) {
    case MLP_W1:
      dims[0] = shape.inputs, dims[1] = shape.hidden, *rank = 2;
      break;
    case MLP_B1:
      dims[0] = shape.hidden, dims[1] = 1, *rank = 1;
      break;
    case MLP_W2:
      dims[0] = shape.hidden, dims[1] = shape.classes, *rank = 2;
      break;
    default:
      dims[0] = shape.classes, dims[1] = 1, *rank = 1;
      break;
  }
  return dims[0] * dims[1];
}

const char* mlp_param_name(int which) {
  static const char* const kNames[MLP_NUM_PARAMS] = {"dense1/kernel", "dense1/bias",
                                                     "dense2/kernel", "dense2/bias"};
  return kNames[which];
}

void mlp_init(mlp_shape_t shape, uint64_t seed, float* const params[MLP_NUM_PARAMS]) {
  glyphs_rng_t rng = {seed};
  for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
    int64_t dims[2];
    int32_t rank;
    const int64_t n = mlp_param_size(shape, p, dims, &rank);
    const double limit = rank == 2 ? sqrt(6.0 / (double)(dims[0] + dims[1])) : 0.0;
    for (int64_t i = 0; i < n; ++i)
      params[p][i] = (float)(limit * (2.0 * glyphs_rng_uniform(&rng) - 1.0));
  }
}

int mlp_forward_backward(mlp_shape_t shape, const float* const params[MLP_NUM_PARAMS],
                         const float* x, const int32_t* labels, int64_t rows,
                         double* const grads[MLP_NUM_PARAMS], mlp_stats_t* stats) {
  const int32_t D = shape.inputs, H = shape.hidden, C = shape.classes;
  const float* W1 = params[MLP_W1];
  const float* b1 = params[MLP_B1];
  const float* W2 = params[MLP_W2];
  const float* b2 = params[MLP_B2];
  float* scratch = malloc((size_t)(2 * H + 2 * C) * sizeof(float));
  if (scratch == NULL) return -1;
  float* h = scratch; /* hidden activations, then d loss / d h */
  float* dh = h + H;
  float* z = dh + H; /* logits */
  float* dz = z + C; /* d loss / d logits = softmax - one_hot */
  if (grads != NULL) {
    for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
      int64_t dims[2];
      int32_t rank;
      memset(grads[p], 0, (size_t)mlp_param_size(shape, p, dims, &rank) * sizeof(double));
    }
  }
  stats->loss_sum = 0.0;
  stats->correct = 0;
  /* One example at a time, forward then backward, so that the gradient sums accumulate
   * in row order: the same rows in the same order give the same bits. */
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * D;
    memcpy(h, b1, (size_t)H * sizeof(float));
    for (int32_t d = 0; d < D; ++d) {
      const float v = xi[d];
      if (v == 0.0f) continue;
      const float* w = W1 + (int64_t)d * H;
      for (int32_t j = 0; j < H; ++j) h[j] += v * w[j];
    }
    for (int32_t j = 0; j < H; ++j) h[j] = h[j] > 0.0f ? h[j] : 0.0f;
    memcpy(z, b2, (size_t)C * sizeof(float));
    for (int32_t j = 0; j < H; ++j) {
      const float v = h[j];
      if (v == 0.0f) continue;
      const float* w = W2 + (int64_t)j * C;
      for (int32_t c = 0; c < C; ++c) z[c] += v * w[c];
    }
    const int32_t label = labels[i];
    int32_t best = 0;
    float top = z[0];
    for (int32_t c = 1; c < C; ++c) {
      if (z[c] > top) top = z[c], best = c;
    }
    double sum = 0.0;
    for (int32_t c = 0; c < C; ++c) sum += exp((double)(z[c] - top));
    stats->loss_sum += log(sum) - (double)(z[label] - top);
    stats->correct += best == label;
    if (grads == NULL) continue;

    for (int32_t c = 0; c < C; ++c) dz[c] = (float)(exp((double)(z[c] - top)) / sum);
    dz[label] -= 1.0f;
    double* gW1 = grads[MLP_W1];
    double* gB1 = grads[MLP_B1];
    double* gW2 = grads[MLP_W2];
    double* gB2 = grads[MLP_B2];
    for (int32_t c = 0; c < C; ++c) gB2[c] += dz[c];
    for (int32_t j = 0; j < H; ++j) {
      const float* w = W2 + (int64_t)j * C;
      float back = 0.0f;
      for (int32_t c = 0; c < C; ++c) back += w[c] * dz[c];
      dh[j] = h[j] > 0.0f ? back : 0.0f;
      if (h[j] == 0.0f) continue;
      double* g = gW2 + (int64_t)j * C;
      for (int32_t c = 0; c < C; ++c) g[c] += (double)h[j] * dz[c];
    }
    for (int32_t j = 0; j < H; ++j) gB1[j] += dh[j];
    for (int32_t d = 0; d < D; ++d) {
      const float v = xi[d];
      if (v == 0.0f) continue;
      double* g = gW1 + (int64_t)d * H;
      for (int32_t j = 0; j < H; ++j) g[j] += (double)v * dh[j];
    }
  }
  free(scratch);
  return 0;
}
