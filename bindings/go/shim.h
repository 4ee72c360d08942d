/* C side of the Go binding: adapters between the library's callback types and the Go
 * functions exported with //export (whose prototypes lack the library's const
 * qualifiers), and calls that pass a runtime/cgo.Handle as user_data. */
#ifndef DISTRIBUTE_GO_SHIM_H_
#define DISTRIBUTE_GO_SHIM_H_
#include <stdint.h>
#include <stdlib.h>
#include "distribute/distribute.h"
#include "distribute/dlpack_interop.h"

dist_status_t distgo_run(dist_strategy_t* s, uintptr_t h, dist_value_t** args, int32_t num_args,
                         dist_value_t** results, int32_t num_results);
dist_status_t distgo_merge_call(dist_context_t* c, uintptr_t h, dist_value_t** args,
                                int32_t num_args, dist_value_t** out);
dist_status_t distgo_update(dist_strategy_t* s, dist_value_t* variable, uintptr_t h,
                            dist_value_t** args, int32_t num_args, int32_t group,
                            dist_value_t** out);
dist_status_t distgo_values_from_function(dist_strategy_t* s, uintptr_t h, dist_value_t** out);
dist_status_t distgo_from_generator(uintptr_t h, int32_t num_components, dist_dataset_t** out);
dist_status_t distgo_map(const dist_dataset_t* d, uintptr_t h, int32_t num_outputs,
                         int32_t num_parallel_calls, dist_dataset_t** out);
dist_status_t distgo_distribute_datasets_from_function(dist_strategy_t* s, uintptr_t h,
                                                      const dist_input_options_t* options,
                                                      dist_distributed_dataset_t** out);
dist_status_t distgo_make_input_fn_iterator(dist_strategy_t* s, uintptr_t h,
                                            dist_iterator_t** out);
dist_status_t distgo_tensor_wrap(dist_dtype_t dtype, const int64_t* shape, int32_t rank,
                                 void* data, size_t byte_size, const char* device, uintptr_t h,
                                 dist_value_t** out);
dist_status_t distgo_function_register(const char* name, uintptr_t h, int32_t num_args,
                                       const char* const* slot_names,
                                       const double* slot_initial_values, int32_t num_slots,
                                       const char* const* hyperparameter_names,
                                       const double* hyperparameter_defaults,
                                       int32_t num_hyperparameters);
dist_status_t distgo_closure_register(const char* name, uintptr_t h);
dist_status_t distgo_dataset_function_register(const char* name, uintptr_t h);
#endif
