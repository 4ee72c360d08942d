// The state of a variable: its name, TF synchronization and aggregation, and one copy per
// device it lives on (one for plain variables, one per replica for MirroredVariable and
// SyncOnReadVariable). Reads take snapshots and writes copy bytes in, both under the
// variable's lock, so a tensor handed out never changes under its holder. The rules of
// *when* a write aggregates live with the strategy (core/strategy/variable_ops.h).
#ifndef DISTRIBUTE_CORE_VALUES_VARIABLE_H_
#define DISTRIBUTE_CORE_VALUES_VARIABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor/tensor.h"
#include "core/util/mutex.h"
#include "core/values/value.h"

namespace distribute {

enum class VariableSync : int32_t { kAuto = 0, kNone = 1, kOnWrite = 2, kOnRead = 3 };
enum class VariableAggregation : int32_t {
  kNone = 0,
  kSum = 1,
  kMean = 2,
  kOnlyFirstReplica = 3,
};

absl::StatusOr<VariableSync> VariableSyncFromInt(int32_t value);
absl::StatusOr<VariableAggregation> VariableAggregationFromInt(int32_t value);
absl::string_view VariableAggregationName(VariableAggregation aggregation);

// The storage of a variable whose one copy lives outside this process's memory (on a
// parameter server: core/strategy/ps_variable_storage.h). The variable checks dtypes and
// shapes; the storage moves the bytes and applies each update atomically where it lives.
class VariableStorage {
 public:
  virtual ~VariableStorage() = default;
  // A host tensor holding the current value.
  virtual absl::StatusOr<Tensor> Read() const = 0;
  virtual absl::Status Assign(const Tensor& value) = 0;
  virtual absl::Status AssignAdd(const Tensor& delta) = 0;
  virtual absl::Status AssignSub(const Tensor& delta) = 0;
};

class Variable {
 public:
  // `copies` become the variable's own storage (each must have its own buffer).
  Variable(std::string name, ValueKind kind, VariableSync sync, VariableAggregation aggregation,
           std::vector<Tensor> copies, uint64_t strategy_id);
  // A plain variable with one copy on `device`, kept by `storage` (ValueKind::kVariable).
  Variable(std::string name, VariableSync sync, VariableAggregation aggregation, DType dtype,
           Shape shape, DeviceSpec device, std::shared_ptr<VariableStorage> storage,
           uint64_t strategy_id);

  // The outside storage, or null for a variable held in this process.
  const std::shared_ptr<VariableStorage>& storage() const { return storage_; }

  const std::string& name() const { return name_; }
  ValueKind kind() const { return kind_; }
  VariableSync sync() const { return sync_; }
  VariableAggregation aggregation() const { return aggregation_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int32_t num_copies() const { return num_copies_; }
  const DeviceSpec& device(int32_t copy) const { return devices_[static_cast<size_t>(copy)]; }
  // The canonical name of copy `copy`'s device, alive as long as the variable (the C API
  // lends it out); OutOfRange naming the copy count for a bad index.
  absl::StatusOr<const std::string*> DeviceName(int32_t copy) const;
  uint64_t strategy_id() const { return strategy_id_; }

  // InvalidArgument unless `value` has this variable's dtype and shape.
  absl::Status CheckCompatible(const Tensor& value) const;

  absl::StatusOr<Tensor> Snapshot(int32_t copy) const;
  absl::StatusOr<std::vector<Tensor>> SnapshotAll() const;

  absl::Status Assign(int32_t copy, const Tensor& value);
  absl::Status AssignAdd(int32_t copy, const Tensor& delta);
  absl::Status AssignSub(int32_t copy, const Tensor& delta);
  // Writes values[i] to copy i for every copy, all checked before any is written.
  absl::Status AssignAll(const std::vector<Tensor>& values);

 private:
  absl::Status CheckCopy(int32_t copy) const;

  const std::string name_;
  const ValueKind kind_;
  const VariableSync sync_;
  const VariableAggregation aggregation_;
  const DType dtype_;
  const Shape shape_;
  const int32_t num_copies_;
  const std::vector<DeviceSpec> devices_;
  const std::vector<std::string> device_names_;
  const uint64_t strategy_id_;
  const std::shared_ptr<VariableStorage> storage_;
  mutable Mutex mu_;
  std::vector<Tensor> copies_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_VALUES_VARIABLE_H_
