/* The conformance suite's independent model: what TF's documented semantics give for each
 * operation of the script, computed here in double precision from the replicas' inputs,
 * without the library. conformance.c runs the same operations through the library and
 * compares. Nothing here calls a dist_ function except for the dtype constants. */
#ifndef DISTRIBUTE_TESTS_CONFORMANCE_MODEL_H_
#define DISTRIBUTE_TESTS_CONFORMANCE_MODEL_H_

#include <stdint.h>

#include "distribute/distribute.h"

/* Elements per tensor in the collective cells. */
enum { kModelElements = 5 };

/* The replicas' inputs: exact in every dtype of the matrix (halves for floats, integers
 * for integer dtypes, non-negative ones for uint8, 1 and 2 for PRODUCT so that no product
 * of up to 8 replicas rounds). */
double ModelInput(int32_t replica, int32_t element, dist_reduce_op_t op, dist_dtype_t dtype);

/* The all-reduce (and cross-replica reduce) of every replica's ModelInput, as TF defines
 * it: SUM, MEAN (the sum divided by the replica count), MIN, MAX, PRODUCT, rounded once to
 * the result dtype. *out_dtype is the result's dtype: an integer MEAN across several
 * replicas is a float (float64 for int32 and int64, as TF's true division). */
void ModelAllReduce(dist_reduce_op_t op, dist_dtype_t dtype, int32_t replicas, double* out,
                    dist_dtype_t* out_dtype);

/* `value` rounded to the nearest value of `dtype` (ties to even), as a conversion does. */
double ModelRound(dist_dtype_t dtype, double value);

/* Encodes / decodes one element of `dtype` (float16 and bfloat16 bit patterns included). */
void ModelEncode(dist_dtype_t dtype, double value, void* element);
double ModelDecode(dist_dtype_t dtype, const void* element);
int ModelIsInteger(dist_dtype_t dtype);

/* A variable under TF's rules. Every replica g (of `replicas` in sync) calls
 * `kind` (0 assign, 1 assign_add, 2 assign_sub) with the value ModelUpdate(g) in replica
 * context, starting from ModelInitial. The outcome: whether TF refuses the call, each
 * replica's copy afterwards, and the cross-replica read (or its refusal). */
typedef struct {
  int refused;             /* the replica-context call fails (INVALID_ARGUMENT) */
  int read_refused;        /* the cross-replica read fails (INVALID_ARGUMENT) */
  double copy[64];         /* replica g's copy after the call */
  double cross_replica;    /* the cross-replica read */
} ModelVariableOutcome;

double ModelInitial(void);
double ModelUpdate(int32_t replica);
void ModelVariableInReplicaContext(dist_variable_sync_t sync, dist_variable_aggregation_t aggregation,
                                   int kind, dist_dtype_t dtype, int32_t replicas,
                                   ModelVariableOutcome* out);

/* The same variable assigned `value` in cross-replica context (TF's rules: a SyncOnRead
 * SUM variable's assign shares the value out, assign_add and assign_sub of it are refused;
 * anything else writes every copy). */
void ModelVariableInCrossReplicaContext(dist_variable_sync_t sync, dist_variable_aggregation_t aggregation,
                                        int kind, dist_dtype_t dtype, int32_t replicas, double value,
                                        ModelVariableOutcome* out);

#endif  /* DISTRIBUTE_TESTS_CONFORMANCE_MODEL_H_ */
