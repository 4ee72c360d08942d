/* What train_mlp does differently under ParameterServerStrategy
 * (`distrun -n 2 --ps 2 train_mlp --strategy parameter_server`): every task runs the same
 * program; ps tasks only serve, workers train asynchronously against variables that live
 * on the ps tasks, and the chief evaluates once every worker has finished. */
#ifndef TRAIN_MLP_PARAMETER_SERVER_H_
#define TRAIN_MLP_PARAMETER_SERVER_H_

#include <stdint.h>

#include "distribute/distribute.h"

/* Each worker runs this many replicas (its logical CPU devices). */
enum { PS_REPLICAS_PER_WORKER = 2 };

/* When TF_CONFIG makes this process a ps task: creates its server from the cluster
 * (job token and TLS from the environment, as distrun passes them) and serves until the
 * job stops it; returns the exit status. Returns -1 for any other task, and without
 * TF_CONFIG. */
int ps_serve_if_ps_task(void);

/* This worker's ParameterServerStrategy: PS_REPLICAS_PER_WORKER replicas, and every
 * variable split in 2 shards along axis 0 (so each lands on both ps tasks). The cluster
 * comes from TF_CONFIG; without it, local mode (one process, variables on CPU:0). */
dist_strategy_t* ps_create_strategy(int32_t* is_chief, int32_t* workers);

/* This replica's mean gradient as a new float32 tensor of shape `dims` (`count`
 * elements): its float64 `gradient_sums` over its `rows` rows, divided by `rows`. */
dist_status_t ps_mean_gradient(const double* gradient_sums, int64_t count, const int64_t* dims,
                               int32_t rank, int64_t rows, const char* device, dist_value_t** out);

/* In replica context: one SGD step on `count` variables at once, variables[i] -=
 * learning_rate * gradients[i], run on the ps tasks that hold them. Each replica sends its
 * mean gradients; the variables' MEAN aggregation averages them over the worker's
 * replicas (which have equal rows: the global batch is split evenly), and the first
 * replica sends one "sgd" batch: one call to each ps task for every shard it holds
 * (dist_variables_apply_update). */
dist_status_t ps_apply_sgd(dist_value_t* const* variables, const dist_value_t* const* gradients,
                           int32_t count, double learning_rate);

/* The end of asynchronous training: every worker adds 1 to the variable
 * "train_mlp/workers_done"; the chief then waits (polling, 600 s at most) until all
 * `workers` have, so that it evaluates and saves the final values. */
void ps_finish_training(dist_strategy_t* strategy, int32_t is_chief, int32_t workers);

#endif /* TRAIN_MLP_PARAMETER_SERVER_H_ */
