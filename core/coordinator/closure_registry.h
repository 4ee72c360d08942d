// The registries of what a worker runs for the coordinator, by name: closure functions
// (dist_closure_register) and dataset functions (dist_dataset_function_register). Every
// process of the job registers the same names at start-up; C code cannot ship a function.
// Bounds: names of 1 to 1024 printable ASCII bytes, at most 1024 functions per registry.
//
// Thread-safety: safe. Unregister waits for the calls of the function in flight (a call
// holds a shared reference to the entry).
#ifndef DISTRIBUTE_CORE_COORDINATOR_CLOSURE_REGISTRY_H_
#define DISTRIBUTE_CORE_COORDINATOR_CLOSURE_REGISTRY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/coordinator/closure_arguments.h"
#include "core/input/dataset.h"
#include "core/input/input_context.h"
#include "core/strategy/strategy.h"
#include "core/tensor/tensor.h"

namespace distribute::coordinator {

// A closure function: runs on a worker with the worker's strategy and the resolved
// arguments; its result, if any, is a host tensor.
using ClosureFunction = std::function<absl::StatusOr<std::optional<Tensor>>(
    const std::shared_ptr<Strategy>& strategy, const ClosureArguments& arguments)>;
// A dataset function: the dataset of one input pipeline.
using DatasetFunction = std::function<absl::StatusOr<DatasetPtr>(const InputContext& context)>;

// The process's registries (created on first use, never destroyed).
class ClosureRegistry;
ClosureRegistry& Closures();
class DatasetFunctionRegistry;
DatasetFunctionRegistry& DatasetFunctions();

}  // namespace distribute::coordinator

#endif  // DISTRIBUTE_CORE_COORDINATOR_CLOSURE_REGISTRY_H_
