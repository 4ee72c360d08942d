// The registries of what a worker runs for the coordinator, by name: closure functions
// (dist_closure_register) and dataset functions (dist_dataset_function_register). Every
// process of the job registers the same names at start-up; C code cannot ship a function.
// Bounds: names of 1 to 1024 printable ASCII bytes (core/ps/names.h), at most 1024
// functions per registry.
//
// Thread-safety: safe. Find hands out shared ownership: a function unregistered while a
// call runs finishes that call, and its release runs when the last call lets go.
#ifndef DISTRIBUTE_CORE_COORDINATOR_CLOSURE_REGISTRY_H_
#define DISTRIBUTE_CORE_COORDINATOR_CLOSURE_REGISTRY_H_

#include <functional>
#include <map>
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
#include "core/util/mutex.h"

namespace distribute::coordinator {

inline constexpr int32_t kMaxRegisteredClosures = 1024;

// A closure function: runs on a worker with the worker's strategy and the resolved
// arguments; its result, if any, is a host tensor.
using ClosureFunction = std::function<absl::StatusOr<std::optional<Tensor>>(
    const std::shared_ptr<Strategy>& strategy, const ClosureArguments& arguments)>;
// A dataset function: the dataset of one input pipeline.
using DatasetFunction = std::function<absl::StatusOr<DatasetPtr>(const InputContext& context)>;

// One registry of functions of type F. `release` (may be empty) runs when the entry dies:
// after Unregister, once no call holds it.
template <typename F>
class NamedFunctions {
 public:
  struct Entry {
    F function;
    std::function<void()> release;
    ~Entry() {
      if (release) release();
    }
  };

  // InvalidArgument for a bad name or an empty function; AlreadyExists for a name in
  // use; ResourceExhausted past kMaxRegisteredClosures. Nothing is registered then, and
  // `release` is not run.
  absl::Status Register(absl::string_view what, absl::string_view name, F function,
                        std::function<void()> release);
  // NotFound naming the function when absent.
  absl::Status Unregister(absl::string_view what, absl::string_view name);
  bool IsRegistered(absl::string_view name) const;
  // NotFound naming the function when absent.
  absl::StatusOr<std::shared_ptr<const Entry>> Find(absl::string_view what, absl::string_view name) const;

 private:
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<const Entry>, std::less<>> entries_ ABSL_GUARDED_BY(mu_);
};

using ClosureRegistry = NamedFunctions<ClosureFunction>;
using DatasetFunctionRegistry = NamedFunctions<DatasetFunction>;

// The process's registries (created on first use, never destroyed).
ClosureRegistry& Closures();
DatasetFunctionRegistry& DatasetFunctions();

}  // namespace distribute::coordinator

#endif  // DISTRIBUTE_CORE_COORDINATOR_CLOSURE_REGISTRY_H_
