/* The model: a multilayer perceptron with one ReLU hidden layer and a softmax output,
 * forward and backward written out in plain C on host arrays. Nothing here knows about
 * replicas: each replica calls mlp_forward_backward on its own rows. */
#ifndef TRAIN_MLP_MLP_H_
#define TRAIN_MLP_MLP_H_

#include <stdint.h>

/* The parameters, in the order of the variables ("dense1/kernel", ...). */
enum { MLP_W1, MLP_B1, MLP_W2, MLP_B2, MLP_NUM_PARAMS };

typedef struct {
  int32_t inputs, hidden, classes;
} mlp_shape_t;

/* Number of floats of parameter `which`, and its shape (rank 1 or 2) in dims. */
int64_t mlp_param_size(mlp_shape_t shape, int which, int64_t dims[2], int32_t* rank);
const char* mlp_param_name(int which);

/* Glorot-uniform kernels and zero biases, drawn from `seed`: params[i] has
 * mlp_param_size(i) floats. */
void mlp_init(mlp_shape_t shape, uint64_t seed, float* const params[MLP_NUM_PARAMS]);

/* What one pass over `rows` examples gives. */
typedef struct {
  double loss_sum; /* sum of the examples' cross-entropy losses */
  int64_t correct; /* examples whose largest logit is the label */
} mlp_stats_t;

/* Forward pass over x [rows, inputs] with labels [rows]; when grads is not NULL, also the
 * backward pass: grads[i] receives the SUM over the rows of d loss / d params[i] (not the
 * mean: the caller divides by the global batch size after the all-reduce). rows may be 0.
 *
 * The sums are float64: each row's terms are float32 products, exact in float64, so how
 * the rows of a global batch are split between replicas (and the order in which their
 * partial sums are added) moves a sum by about 1e-16 of itself, which almost never changes
 * its float32 rounding. With float32 sums it would change the last bit of many weights
 * every step, and a ReLU unit near zero would turn such a difference into a different
 * gradient: one device and four replicas would train visibly different models.
 * Returns 0, or -1 when out of memory. */
int mlp_forward_backward(mlp_shape_t shape, const float* const params[MLP_NUM_PARAMS],
                         const float* x, const int32_t* labels, int64_t rows,
                         double* const grads[MLP_NUM_PARAMS], mlp_stats_t* stats);

#endif /* TRAIN_MLP_MLP_H_ */
