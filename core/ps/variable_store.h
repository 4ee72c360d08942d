// The variables a ps task holds, by name. Workers create them if absent (the first creator
// initializes; later ones, a restarted worker included, get the current value and learn
// that it already existed), read them, and update them: assign, assign_add, assign_sub,
// or a registered update function (function_registry.h) that may keep slot variables
// beside the variable. Every update of one variable is applied atomically and in arrival
// order (an ArrivalOrderMutex per variable); updates of different variables never wait
// on each other, and the store's index lock is never held while one runs.
//
// A request that fails changes nothing: names, dtypes, shapes, arguments, hyperparameters
// and the store's bounds are all checked before a byte is written. The bounds (total
// bytes and variable count, slots included) make a store that serves the network unable
// to grow without limit: past them a creation is ResourceExhausted.
#ifndef DISTRIBUTE_CORE_PS_VARIABLE_STORE_H_
#define DISTRIBUTE_CORE_PS_VARIABLE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/ps/function_registry.h"
#include "core/ps/hyperparameters.h"
#include "core/tensor/tensor.h"
#include "core/util/mutex.h"

namespace distribute::ps {

struct VariableStoreLimits {
  uint64_t max_bytes = uint64_t{16} << 30;
  int64_t max_variables = int64_t{1} << 20;
};

struct StoredVariableInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string slot_of;  // the variable this is a slot of; empty for a variable of its own
};

// Thread-safety: safe.
class VariableStore {
 public:
  // `registry` (not owned) must outlive the store; the process's registry by default.
  explicit VariableStore(VariableStoreLimits limits = {},
                         const FunctionRegistry* registry = &FunctionRegistry::Global());
  ~VariableStore();
  VariableStore(const VariableStore&) = delete;
  VariableStore& operator=(const VariableStore&) = delete;

  struct Creation {
    bool created = false;  // false: it existed, and `value` is its current value
    Tensor value;          // the creator's initial value, or a copy of the current one
  };

  // Creates `name` holding a copy of `initial`, unless it exists. An existing variable of
  // another dtype or shape is InvalidArgument naming both; so is the name of a slot.
  // ResourceExhausted past the limits.
  absl::StatusOr<Creation> CreateIfAbsent(absl::string_view name, const Tensor& initial)
      ABSL_LOCKS_EXCLUDED(index_mu_);

  // A copy of the current value (a host tensor). NotFound for an unknown name.
  absl::StatusOr<Tensor> Read(absl::string_view name) const ABSL_LOCKS_EXCLUDED(index_mu_);

  // InvalidArgument unless `value` has the variable's dtype and shape; assign_add and
  // assign_sub refuse bool. Integer arithmetic wraps (two's complement).
  absl::Status Assign(absl::string_view name, const Tensor& value) ABSL_LOCKS_EXCLUDED(index_mu_);
  absl::Status AssignAdd(absl::string_view name, const Tensor& delta) ABSL_LOCKS_EXCLUDED(index_mu_);
  absl::Status AssignSub(absl::string_view name, const Tensor& delta) ABSL_LOCKS_EXCLUDED(index_mu_);

  // Runs registered update `function` on `name` and its slots (created on first use with
  // their initial value), with `arguments` and `hyperparameters`. NotFound for an unknown
  // variable or function; InvalidArgument for a slot as `name`, a dtype the function does
  // not take, a wrong argument count, dtype or shape, bad hyperparameters, or a slot name
  // in use by something else; ResourceExhausted when the slots do not fit the limits.
  absl::Status ApplyUpdate(absl::string_view name, absl::string_view function,
                           std::span<const Tensor> arguments, const Hyperparameters& hyperparameters)
      ABSL_LOCKS_EXCLUDED(index_mu_);

  // Writes slot `slot` of variable `name` ("<name>/<slot>"), creating it beside the
  // variable when absent (a restore into fresh ps tasks). NotFound for an unknown variable;
  // InvalidArgument for a slot as `name`, a bad slot name, a value of another dtype or
  // shape than the variable's, or "<name>/<slot>" in use by something else;
  // ResourceExhausted when a new slot does not fit the limits.
  absl::Status AssignSlot(absl::string_view name, absl::string_view slot, const Tensor& value)
      ABSL_LOCKS_EXCLUDED(index_mu_);

  // NotFound for an unknown name.
  absl::StatusOr<StoredVariableInfo> Info(absl::string_view name) const ABSL_LOCKS_EXCLUDED(index_mu_);
  // Every variable and slot name, sorted.
  std::vector<std::string> Names() const ABSL_LOCKS_EXCLUDED(index_mu_);
  uint64_t bytes() const ABSL_LOCKS_EXCLUDED(index_mu_);
  int64_t size() const ABSL_LOCKS_EXCLUDED(index_mu_);

 private:
  struct Entry;
  class LockedTogether;
  using EntryPtr = std::shared_ptr<Entry>;

  absl::StatusOr<EntryPtr> Find(absl::string_view name) const ABSL_LOCKS_EXCLUDED(index_mu_);
  absl::Status CheckRoom(absl::string_view name, uint64_t bytes, int64_t count) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(index_mu_);
  // The slots of `variable` for `function`, in its order, created where missing.
  absl::StatusOr<std::vector<EntryPtr>> EnsureSlots(const EntryPtr& variable,
                                                    const UpdateFunction& function,
                                                    const Hyperparameters& hyperparameters)
      ABSL_LOCKS_EXCLUDED(index_mu_);
  // Adds `delta` to the variable (`subtract`: takes it away).
  absl::Status Accumulate(absl::string_view name, const Tensor& delta, bool subtract);

  const VariableStoreLimits limits_;
  const FunctionRegistry* const registry_;
  mutable Mutex index_mu_;
  std::map<std::string, EntryPtr, std::less<>> entries_ ABSL_GUARDED_BY(index_mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(index_mu_) = 0;
};

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_VARIABLE_STORE_H_
