#include "core/values/variable.h"

#include <cstring>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "core/kernels/reduce_kernels.h"
#include "core/device/gpu_runtime.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

std::vector<DeviceSpec> DevicesOf(const std::vector<Tensor>& copies) {
  std::vector<DeviceSpec> devices;
  for (const Tensor& t : copies) devices.push_back(t.device());
  return devices;
}

std::vector<std::string> NamesOf(const std::vector<DeviceSpec>& devices) {
  std::vector<std::string> names;
  for (const DeviceSpec& d : devices) names.push_back(d.ToString());
  return names;
}

enum class Update { kAdd, kSubtract };

// Runs `update(target, delta)` on host memory, for a target in host memory or (with a
// plugin that cannot update in place) a host copy of a GPU target, written back.
absl::Status UpdateOnHost(const Tensor& target, const Tensor& delta,
                          absl::FunctionRef<void(void* target, const void* delta)> update) {
  ASSIGN_OR_RETURN(const Tensor host_delta, delta.OnHost());
  if (target.in_host_memory()) {
    update(target.data(), host_delta.data());
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const Tensor host_target, target.OnHost());
  update(host_target.data(), host_delta.data());
  return CopyBytes(*target.buffer(), *host_target.buffer(), target.byte_size());
}

// `target op= delta` where the target lives. A copy on a GPU is updated there by the CUDA
// plugin's kernels (the CPU kernels' bits), the delta first copied next to it when it lives
// elsewhere; with a plugin built before the update entries, on a host copy written back.
// `on_host` is the host arithmetic.
absl::Status UpdateInPlace(const Tensor& target, const Tensor& delta, Update update,
                           absl::FunctionRef<void(void* target, const void* delta)> on_host) {
  const GpuRuntime& gpu = GpuRuntime::Get();
  if (target.in_host_memory() || !gpu.can_update_in_place()) return UpdateOnHost(target, delta, on_host);
  const DeviceSpec& device = target.device();
  ASSIGN_OR_RETURN(const Tensor beside, delta.PlacedOn(device));
  const auto count = static_cast<size_t>(target.shape().num_elements());
  const auto dtype = static_cast<int32_t>(target.dtype());
  return update == Update::kAdd ? gpu.AddInPlace(device.index, dtype, target.data(), beside.data(), count)
                                : gpu.SubtractInPlace(device.index, dtype, target.data(), beside.data(), count);
}

}  // namespace

absl::StatusOr<VariableSync> VariableSyncFromInt(int32_t value) {
  if (value < 0 || value > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "synchronization ", value,
        " is not one of DIST_SYNC_AUTO, DIST_SYNC_NONE, DIST_SYNC_ON_WRITE, DIST_SYNC_ON_READ"));
  }
  return static_cast<VariableSync>(value);
}

absl::StatusOr<VariableAggregation> VariableAggregationFromInt(int32_t value) {
  if (value < 0 || value > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aggregation ", value,
        " is not one of DIST_AGGREGATION_NONE, SUM, MEAN, ONLY_FIRST_REPLICA"));
  }
  return static_cast<VariableAggregation>(value);
}

absl::string_view VariableAggregationName(VariableAggregation aggregation) {
  switch (aggregation) {
    case VariableAggregation::kNone:
      return "NONE";
    case VariableAggregation::kSum:
      return "SUM";
    case VariableAggregation::kMean:
      return "MEAN";
    case VariableAggregation::kOnlyFirstReplica:
      return "ONLY_FIRST_REPLICA";
  }
  return "INVALID";
}

Variable::Variable(std::string name, ValueKind kind, VariableSync sync,
                   VariableAggregation aggregation, std::vector<Tensor> copies,
                   uint64_t strategy_id)
    : name_(std::move(name)),
      kind_(kind),
      sync_(sync),
      aggregation_(aggregation),
      dtype_(copies.front().dtype()),
      shape_(copies.front().shape()),
      num_copies_(static_cast<int32_t>(copies.size())),
      devices_(DevicesOf(copies)),
      device_names_(NamesOf(devices_)),
      strategy_id_(strategy_id),
      copies_(std::move(copies)) {}

Variable::Variable(std::string name, VariableSync sync, VariableAggregation aggregation, DType dtype,
                   Shape shape, DeviceSpec device, std::shared_ptr<VariableStorage> storage,
                   uint64_t strategy_id)
    : name_(std::move(name)),
      kind_(ValueKind::kVariable),
      sync_(sync),
      aggregation_(aggregation),
      dtype_(dtype),
      shape_(std::move(shape)),
      num_copies_(1),
      devices_{device},
      device_names_(NamesOf(devices_)),
      strategy_id_(strategy_id),
      storage_(std::move(storage)) {}

absl::Status Variable::CheckCompatible(const Tensor& value) const {
  if (value.dtype() != dtype_ || !(value.shape() == shape_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable ", Quoted(name_), " is ", DTypeName(dtype_), shape_.ToString(),
        " but the value is ", DTypeName(value.dtype()), value.shape().ToString()));
  }
  return absl::OkStatus();
}

absl::Status Variable::CheckCopy(int32_t copy) const {
  if (copy < 0 || copy >= num_copies_) {
    return absl::OutOfRangeError(absl::StrCat("variable ", Quoted(name_), " has ", num_copies_,
                                              " copies; there is no copy ", copy));
  }
  return absl::OkStatus();
}

absl::StatusOr<const std::string*> Variable::DeviceName(int32_t copy) const {
  RETURN_IF_ERROR(CheckCopy(copy));
  return &device_names_[static_cast<size_t>(copy)];
}

absl::StatusOr<Tensor> Variable::Snapshot(int32_t copy) const {
  RETURN_IF_ERROR(CheckCopy(copy));
  if (storage_ != nullptr) return storage_->Read();
  MutexLock lock(&mu_);
  const Tensor& source = copies_[static_cast<size_t>(copy)];
  return source.CopyTo(source.device_name());
}

absl::StatusOr<std::vector<Tensor>> Variable::SnapshotAll() const {
  std::vector<Tensor> out;
  if (storage_ != nullptr) {
    ASSIGN_OR_RETURN(Tensor value, storage_->Read());
    out.push_back(std::move(value));
    return out;
  }
  MutexLock lock(&mu_);
  for (const Tensor& source : copies_) {
    ASSIGN_OR_RETURN(Tensor copy, source.CopyTo(source.device_name()));
    out.push_back(std::move(copy));
  }
  return out;
}

absl::Status Variable::Assign(int32_t copy, const Tensor& value) {
  RETURN_IF_ERROR(CheckCopy(copy));
  RETURN_IF_ERROR(CheckCompatible(value));
  if (storage_ != nullptr) return storage_->Assign(value);
  MutexLock lock(&mu_);
  const Tensor& target = copies_[static_cast<size_t>(copy)];
  return CopyBytes(*target.buffer(), *value.buffer(), value.byte_size());
}

absl::Status Variable::AssignAdd(int32_t copy, const Tensor& delta) {
  RETURN_IF_ERROR(CheckCopy(copy));
  RETURN_IF_ERROR(CheckCompatible(delta));
  if (dtype_ == DType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat("variable ", Quoted(name_), " is bool: it cannot be added to"));
  }
  if (storage_ != nullptr) return storage_->AssignAdd(delta);
  MutexLock lock(&mu_);
  return UpdateInPlace(copies_[static_cast<size_t>(copy)], delta, Update::kAdd, [&](void* target, const void* d) {
    const void* inputs[2] = {target, d};
    ReduceRange(dtype_, ReduceOp::kSum, inputs, 2, &target, 1, 0,
                static_cast<size_t>(shape_.num_elements()), 1);
  });
}

absl::Status Variable::AssignSub(int32_t copy, const Tensor& delta) {
  RETURN_IF_ERROR(CheckCopy(copy));
  RETURN_IF_ERROR(CheckCompatible(delta));
  if (dtype_ == DType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat("variable ", Quoted(name_), " is bool: it cannot be subtracted from"));
  }
  if (storage_ != nullptr) return storage_->AssignSub(delta);
  MutexLock lock(&mu_);
  return UpdateInPlace(copies_[static_cast<size_t>(copy)], delta, Update::kSubtract, [&](void* target, const void* d) {
    SubtractInPlace(dtype_, target, d, static_cast<size_t>(shape_.num_elements()));
  });
}

absl::Status Variable::AssignAll(const std::vector<Tensor>& values) {
  if (static_cast<int32_t>(values.size()) != num_copies_) {
    return absl::InvalidArgumentError(absl::StrCat("variable ", Quoted(name_), " has ", num_copies_,
                                                   " copies but ", values.size(),
                                                   " values were given"));
  }
  for (const Tensor& value : values) RETURN_IF_ERROR(CheckCompatible(value));
  if (storage_ != nullptr) return storage_->Assign(values.front());
  MutexLock lock(&mu_);
  for (size_t i = 0; i < values.size(); ++i) {
    RETURN_IF_ERROR(CopyBytes(*copies_[i].buffer(), *values[i].buffer(), values[i].byte_size()));
  }
  return absl::OkStatus();
}

}  // namespace distribute
