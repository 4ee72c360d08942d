#include "shim.h"

#include "_cgo_export.h"

static dist_status_t replica_tramp(dist_context_t* c, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** results, int32_t num_results,
                                   void* ud) {
  return goReplicaCall(c, (dist_value_t**)args, num_args, results, num_results, (uintptr_t)ud);
}

dist_status_t distgo_run(dist_strategy_t* s, uintptr_t h, dist_value_t** args, int32_t num_args,
                         dist_value_t** results, int32_t num_results) {
  return dist_strategy_run(s, replica_tramp, (void*)h, (const dist_value_t* const*)args, num_args,
                           results, num_results);
}

static dist_status_t merge_tramp(dist_strategy_t* s, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** out, void* ud) {
  return goMergeCall(s, (dist_value_t**)args, num_args, out, (uintptr_t)ud);
}

dist_status_t distgo_merge_call(dist_context_t* c, uintptr_t h, dist_value_t** args,
                                int32_t num_args, dist_value_t** out) {
  return dist_context_merge_call(c, merge_tramp, (void*)h, (const dist_value_t* const*)args,
                                 num_args, out);
}

static dist_status_t update_tramp(dist_value_t* variable, const dist_value_t* const* args,
                                  int32_t num_args, dist_value_t** out, void* ud) {
  return goUpdateCall(variable, (dist_value_t**)args, num_args, out, (uintptr_t)ud);
}

dist_status_t distgo_update(dist_strategy_t* s, dist_value_t* variable, uintptr_t h,
                            dist_value_t** args, int32_t num_args, int32_t group,
                            dist_value_t** out) {
  return dist_strategy_update(s, variable, update_tramp, (void*)h,
                              (const dist_value_t* const*)args, num_args, group, out);
}

static dist_status_t value_tramp(int32_t replica_id, int32_t num_replicas, dist_value_t** out,
                                 void* ud) {
  return goValueCall(replica_id, num_replicas, out, (uintptr_t)ud);
}

dist_status_t distgo_values_from_function(dist_strategy_t* s, uintptr_t h, dist_value_t** out) {
  return dist_strategy_distribute_values_from_function(s, value_tramp, (void*)h, out);
}

static void free_tramp(void* ud) { goFreeHandle((uintptr_t)ud); }

static dist_status_t generator_tramp(int64_t index, dist_value_t** components,
                                     int32_t num_components, int32_t* out_end, void* ud) {
  return goGeneratorCall(index, components, num_components, out_end, (uintptr_t)ud);
}

dist_status_t distgo_from_generator(uintptr_t h, int32_t num_components, dist_dataset_t** out) {
  return dist_dataset_from_generator(generator_tramp, (void*)h, free_tramp, num_components, out);
}

static dist_status_t map_tramp(const dist_value_t* const* inputs, int32_t num_inputs,
                               dist_value_t** outputs, int32_t num_outputs, void* ud) {
  return goMapCall((dist_value_t**)inputs, num_inputs, outputs, num_outputs, (uintptr_t)ud);
}

dist_status_t distgo_map(const dist_dataset_t* d, uintptr_t h, int32_t num_outputs,
                         int32_t num_parallel_calls, dist_dataset_t** out) {
  return dist_dataset_map(d, map_tramp, (void*)h, free_tramp, num_outputs, num_parallel_calls,
                          out);
}

static dist_status_t dataset_tramp(const dist_input_context_t* context, dist_dataset_t** out,
                                   void* ud) {
  return goDatasetCall((dist_input_context_t*)context, out, (uintptr_t)ud);
}

dist_status_t distgo_distribute_datasets_from_function(dist_strategy_t* s, uintptr_t h,
                                                      const dist_input_options_t* options,
                                                      dist_distributed_dataset_t** out) {
  return dist_strategy_distribute_datasets_from_function(s, dataset_tramp, (void*)h, free_tramp,
                                                         options, out);
}

dist_status_t distgo_make_input_fn_iterator(dist_strategy_t* s, uintptr_t h,
                                            dist_iterator_t** out) {
  return dist_strategy_make_input_fn_iterator(s, dataset_tramp, (void*)h, out);
}

static void release_tramp(void* data, void* ud) {
  (void)data;
  goReleaseCall((uintptr_t)ud);
}

dist_status_t distgo_tensor_wrap(dist_dtype_t dtype, const int64_t* shape, int32_t rank,
                                 void* data, size_t byte_size, const char* device, uintptr_t h,
                                 dist_value_t** out) {
  return dist_tensor_wrap(dtype, shape, rank, data, byte_size, device,
                          h ? release_tramp : NULL, (void*)h, out);
}

static dist_status_t registered_update_tramp(dist_value_t* const* variables, int32_t num_variables,
                                             const dist_value_t* const* args, int32_t num_args,
                                             const char* const* names, const double* values,
                                             int32_t num_hyperparameters, void* ud) {
  return goRegisteredUpdateCall((dist_value_t**)variables, num_variables, (dist_value_t**)args,
                                num_args, (char**)names, (double*)values, num_hyperparameters,
                                (uintptr_t)ud);
}

dist_status_t distgo_function_register(const char* name, uintptr_t h, int32_t num_args,
                                       const char* const* slot_names,
                                       const double* slot_initial_values, int32_t num_slots,
                                       const char* const* hyperparameter_names,
                                       const double* hyperparameter_defaults,
                                       int32_t num_hyperparameters) {
  return dist_function_register(name, registered_update_tramp, (void*)h, free_tramp, num_args,
                                slot_names, slot_initial_values, num_slots, hyperparameter_names,
                                hyperparameter_defaults, num_hyperparameters);
}

static dist_status_t closure_tramp(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                   dist_value_t** out_result, void* ud) {
  return goClosureCall(strategy, (dist_closure_args_t*)args, out_result, (uintptr_t)ud);
}

dist_status_t distgo_closure_register(const char* name, uintptr_t h) {
  return dist_closure_register(name, closure_tramp, (void*)h, free_tramp);
}

dist_status_t distgo_dataset_function_register(const char* name, uintptr_t h) {
  return dist_dataset_function_register(name, dataset_tramp, (void*)h, free_tramp);
}
