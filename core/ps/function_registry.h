// The process-wide registry of update functions, by name. C code cannot ship a function to
// another process, so every process of a job registers the same functions at start-up; an
// update names one, and the ps task that owns the variable runs it there, atomically with
// every other update of that variable (TF colocates update ops with their variable).
//
// An update function declares what it needs, so that the store can check a call
// completely before it changes anything: its slot variables (created beside the variable
// on first use, named "<variable>/<slot>" as TF2's OptimizerV2.add_slot names them), the
// dtypes it accepts, how many argument tensors it takes (each with the variable's dtype
// and shape, like a gradient) and its hyperparameters. The built-in optimizer updates
// (builtin_updates.h) are registered in Global() before its first use and cannot be
// unregistered.
#ifndef DISTRIBUTE_CORE_PS_FUNCTION_REGISTRY_H_
#define DISTRIBUTE_CORE_PS_FUNCTION_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/ps/hyperparameters.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"
#include "core/util/mutex.h"

namespace distribute::ps {

inline constexpr int32_t kMaxRegisteredFunctions = 1024;
inline constexpr int32_t kMaxUpdateArguments = 16;
inline constexpr int32_t kMaxSlots = 16;
inline constexpr int32_t kMaxHyperparameters = 64;

// A slot variable: same dtype and shape as its variable, every element initially
// `initial_value`, or the call's hyperparameter `initial_value_hyperparameter` when set
// (Adagrad's initial_accumulator_value).
struct SlotSpec {
  std::string name;
  double initial_value = 0.0;
  std::string initial_value_hyperparameter;
};

// What an update function is handed. `variables` holds the variable and then its slots in
// the order of UpdateFunction::slots; the function writes them in place (their buffers are
// the stored values). Everything was checked against the declaration before the call.
struct UpdateCall {
  std::span<const Tensor> variables;
  std::span<const Tensor> arguments;
  const Hyperparameters& hyperparameters;
};

struct UpdateFunction {
  // Runs with the locks of the variable and its slots held: it must not call back into the
  // store (that would wait on itself). It must check what the declaration cannot express
  // before it writes anything, and write nothing when it fails (value checks belong in
  // check_hyperparameters, which runs before the slots are made).
  std::function<absl::Status(const UpdateCall&)> apply;
  // Optional: checks the resolved hyperparameters' values (a step below 1, a negative
  // initial accumulator) before anything is created or written.
  std::function<absl::Status(const Hyperparameters&)> check_hyperparameters;
  std::vector<SlotSpec> slots;
  int32_t num_arguments = 0;
  std::vector<HyperparameterSpec> hyperparameters;
  std::set<DType> dtypes;  // the variable dtypes it accepts; empty: every dtype
};

// Thread-safety: safe. Lookup hands out shared ownership, so a function unregistered while
// a call runs finishes that call.
class FunctionRegistry {
 public:
  // The process's registry, with the built-in updates registered.
  static FunctionRegistry& Global();

  // An empty registry, or one holding only the built-in updates (for tests and for stores
  // that must not see the process's registrations).
  FunctionRegistry() = default;
  static std::unique_ptr<FunctionRegistry> WithBuiltins();

  // InvalidArgument for a bad name (names.h) or a declaration that cannot work (no
  // `apply`, counts past the k* bounds, a bad or repeated slot or hyperparameter name, a
  // default that is not finite, a slot initialized from an undeclared hyperparameter); AlreadyExists for a name in use; ResourceExhausted past
  // kMaxRegisteredFunctions.
  absl::Status Register(absl::string_view name, UpdateFunction function) ABSL_LOCKS_EXCLUDED(mu_);

  // NotFound naming the function when it is not registered.
  absl::StatusOr<std::shared_ptr<const UpdateFunction>> Lookup(absl::string_view name) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // The slot names every registered function declares (a checkpoint looks for these).
  std::set<std::string> SlotNames() const ABSL_LOCKS_EXCLUDED(mu_);

  // NotFound when absent; FailedPrecondition for a built-in.
  absl::Status Unregister(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Status RegisterBuiltin(absl::string_view name, UpdateFunction function);

  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<const UpdateFunction>, std::less<>> functions_
      ABSL_GUARDED_BY(mu_);
  std::set<std::string, std::less<>> builtins_ ABSL_GUARDED_BY(mu_);

  friend absl::Status RegisterBuiltinUpdates(FunctionRegistry& registry);
};

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_FUNCTION_REGISTRY_H_
