#include "core/ps/variable_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/reduce_kernels.h"
#include "core/ps/arrival_order_mutex.h"
#include "core/ps/floating_kernel.h"
#include "core/ps/host_tensors.h"
#include "core/ps/names.h"
#include "core/util/status_macros.h"

namespace distribute::ps {
namespace {

std::string Describe(DType dtype, const Shape& shape) {
  return absl::StrCat(DTypeName(dtype), " ", shape.ToString());
}

}  // namespace

struct VariableStore::Entry {
  Entry(std::string name, std::string slot_of, Tensor initial)
      : name(std::move(name)),
        slot_of(std::move(slot_of)),
        dtype(initial.dtype()),
        shape(initial.shape()),
        value(std::move(initial)) {}

  // InvalidArgument unless `tensor` has this variable's dtype and shape; `what` names it.
  absl::Status CheckCompatible(absl::string_view what, const Tensor& tensor) const {
    if (tensor.dtype() == dtype && tensor.shape() == shape) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "variable ", QuotedName(name), " is ", Describe(dtype, shape), " but the ", what, " is ",
        Describe(tensor.dtype(), tensor.shape())));
  }

  const std::string name;
  const std::string slot_of;
  const DType dtype;
  const Shape shape;
  mutable ArrivalOrderMutex mu;
  Tensor value ABSL_GUARDED_BY(mu);  // host memory the store owns
};

// Holds the locks of a variable and its slots for one update. They are taken in name
// order, the one global order, so that two updates can never wait on each other's locks,
// and released however the update ends.
class VariableStore::LockedTogether {
 public:
  explicit LockedTogether(std::vector<Entry*> entries) ABSL_NO_THREAD_SAFETY_ANALYSIS
      : entries_(std::move(entries)) {
    std::sort(entries_.begin(), entries_.end(),
              [](const Entry* a, const Entry* b) { return a->name < b->name; });
    for (Entry* entry : entries_) entry->mu.Lock();
  }
  ~LockedTogether() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) (*it)->mu.Unlock();
  }
  LockedTogether(const LockedTogether&) = delete;
  LockedTogether& operator=(const LockedTogether&) = delete;

 private:
  std::vector<Entry*> entries_;
};

VariableStore::VariableStore(VariableStoreLimits limits, const FunctionRegistry* registry)
    : limits_(limits), registry_(registry) {}

VariableStore::~VariableStore() = default;

absl::StatusOr<VariableStore::EntryPtr> VariableStore::Find(absl::string_view name) const {
  MutexLock lock(&index_mu_);
  const auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("no variable ", QuotedName(name), " on this ps task"));
  }
  return it->second;
}

absl::Status VariableStore::CheckRoom(absl::string_view name, uint64_t bytes, int64_t count) const {
  if (static_cast<int64_t>(entries_.size()) + count > limits_.max_variables) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create ", QuotedName(name), ": the ps task holds ", entries_.size(),
        " variables and allows at most ", limits_.max_variables));
  }
  if (bytes > limits_.max_bytes || bytes_ > limits_.max_bytes - bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create ", QuotedName(name), " (", bytes, " bytes): the ps task holds ", bytes_,
        " bytes of variables and allows at most ", limits_.max_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<VariableStore::Creation> VariableStore::CreateIfAbsent(absl::string_view name,
                                                                      const Tensor& initial) {
  RETURN_IF_ERROR(CheckPsName("variable name", name));
  EntryPtr existing;
  {
    MutexLock lock(&index_mu_);
    if (const auto it = entries_.find(name); it != entries_.end()) {
      existing = it->second;
    } else {
      RETURN_IF_ERROR(CheckRoom(name, initial.byte_size(), 1));
      // The copy is made under the index lock so that two creators cannot both pass the
      // bounds check; creations are rare next to updates, which never take this lock long.
      ASSIGN_OR_RETURN(Tensor owned, initial.CopyTo(kHostDevice));
      entries_.emplace(std::string(name), std::make_shared<Entry>(std::string(name), "", owned));
      bytes_ += initial.byte_size();
      return Creation{true, initial};
    }
  }
  if (!existing->slot_of.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(QuotedName(name), " is a slot of variable ",
                                                   QuotedName(existing->slot_of),
                                                   ", not a variable of its own"));
  }
  if (existing->dtype != initial.dtype() || !(existing->shape == initial.shape())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable ", QuotedName(name), " is created as ", Describe(initial.dtype(), initial.shape()),
        " but exists as ", Describe(existing->dtype, existing->shape),
        ": the same name means the same variable"));
  }
  ArrivalOrderLock lock(&existing->mu);
  ASSIGN_OR_RETURN(Tensor current, existing->value.CopyTo(kHostDevice));
  return Creation{false, std::move(current)};
}

absl::StatusOr<Tensor> VariableStore::Read(absl::string_view name) const {
  ASSIGN_OR_RETURN(const EntryPtr entry, Find(name));
  ArrivalOrderLock lock(&entry->mu);
  return entry->value.CopyTo(kHostDevice);
}

absl::Status VariableStore::Assign(absl::string_view name, const Tensor& value) {
  ASSIGN_OR_RETURN(const EntryPtr entry, Find(name));
  RETURN_IF_ERROR(entry->CheckCompatible("value", value));
  ArrivalOrderLock lock(&entry->mu);
  return CopyBytes(*entry->value.buffer(), *value.buffer(), value.byte_size());
}

absl::Status VariableStore::Accumulate(absl::string_view name, const Tensor& delta, bool subtract) {
  ASSIGN_OR_RETURN(const EntryPtr entry, Find(name));
  RETURN_IF_ERROR(entry->CheckCompatible("delta", delta));
  if (entry->dtype == DType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat("variable ", QuotedName(name),
                                                   " is bool: it cannot be ",
                                                   subtract ? "subtracted from" : "added to"));
  }
  ASSIGN_OR_RETURN(const Tensor host_delta, OnHost(delta));
  const size_t count = static_cast<size_t>(entry->shape.num_elements());
  ArrivalOrderLock lock(&entry->mu);
  if (count == 0) return absl::OkStatus();
  if (subtract) {
    SubtractInPlace(entry->dtype, entry->value.data(), host_delta.data(), count);
  } else {
    const void* inputs[2] = {entry->value.data(), host_delta.data()};
    void* output = entry->value.data();
    ReduceRange(entry->dtype, ReduceOp::kSum, inputs, 2, &output, 1, 0, count, 1);
  }
  return absl::OkStatus();
}

absl::Status VariableStore::AssignAdd(absl::string_view name, const Tensor& delta) {
  return Accumulate(name, delta, /*subtract=*/false);
}

absl::Status VariableStore::AssignSub(absl::string_view name, const Tensor& delta) {
  return Accumulate(name, delta, /*subtract=*/true);
}

absl::StatusOr<std::vector<VariableStore::EntryPtr>> VariableStore::EnsureSlots(
    const EntryPtr& variable, const UpdateFunction& function,
    const Hyperparameters& hyperparameters) {
  std::vector<std::string> names;
  for (const SlotSpec& slot : function.slots) {
    names.push_back(SlotName(variable->name, slot.name));
    RETURN_IF_ERROR(CheckPsName("slot variable name", names.back()));
  }
  MutexLock lock(&index_mu_);
  std::vector<EntryPtr> slots(names.size());
  int64_t missing = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const auto it = entries_.find(names[i]);
    if (it == entries_.end()) {
      ++missing;
      continue;
    }
    const EntryPtr& slot = it->second;
    if (slot->slot_of != variable->name || slot->dtype != variable->dtype ||
        !(slot->shape == variable->shape)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the ", function.slots[i].name, " slot of variable ", QuotedName(variable->name),
          " would be named ", QuotedName(names[i]), ", but that name is taken by ",
          slot->slot_of.empty() ? "a variable of its own" : "another slot", " (",
          Describe(slot->dtype, slot->shape), ")"));
    }
    slots[i] = slot;
  }
  if (missing == 0) return slots;
  const uint64_t slot_bytes =
      static_cast<uint64_t>(variable->shape.num_elements()) * DTypeSize(variable->dtype);
  RETURN_IF_ERROR(CheckRoom(names.front(), slot_bytes * static_cast<uint64_t>(missing), missing));
  // Allocate every missing slot before inserting any, so that a failure leaves none behind.
  for (size_t i = 0; i < names.size(); ++i) {
    if (slots[i] != nullptr) continue;
    ASSIGN_OR_RETURN(Tensor initial, NewHostTensor(variable->dtype, variable->shape));
    const SlotSpec& spec = function.slots[i];
    FillTensor(initial, spec.initial_value_hyperparameter.empty()
                            ? spec.initial_value
                            : hyperparameters.at(spec.initial_value_hyperparameter));
    slots[i] = std::make_shared<Entry>(names[i], variable->name, std::move(initial));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (entries_.emplace(names[i], slots[i]).second) bytes_ += slot_bytes;
  }
  return slots;
}

// The values are read under LockedTogether, which the thread-safety analysis cannot follow.
absl::Status VariableStore::ApplyUpdate(absl::string_view name, absl::string_view function_name,
                                        std::span<const Tensor> arguments,
                                        const Hyperparameters& hyperparameters)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  ASSIGN_OR_RETURN(const std::shared_ptr<const UpdateFunction> function,
                   registry_->Lookup(function_name));
  ASSIGN_OR_RETURN(const EntryPtr entry, Find(name));
  if (!entry->slot_of.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(QuotedName(name), " is a slot of variable ",
                                                   QuotedName(entry->slot_of),
                                                   ": update the variable itself"));
  }
  if (!function->dtypes.empty() && !function->dtypes.contains(entry->dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("update function ", QuotedName(function_name),
                                                   " does not take ", DTypeName(entry->dtype),
                                                   " variables such as ", QuotedName(name)));
  }
  if (static_cast<int64_t>(arguments.size()) != function->num_arguments) {
    return absl::InvalidArgumentError(absl::StrCat("update function ", QuotedName(function_name),
                                                   " takes ", function->num_arguments,
                                                   " arguments but ", arguments.size(),
                                                   " were given"));
  }
  std::vector<Tensor> host_arguments;
  for (size_t i = 0; i < arguments.size(); ++i) {
    RETURN_IF_ERROR(entry->CheckCompatible(absl::StrCat("argument ", i), arguments[i]));
    ASSIGN_OR_RETURN(Tensor host, OnHost(arguments[i]));
    host_arguments.push_back(std::move(host));
  }
  ASSIGN_OR_RETURN(const Hyperparameters resolved,
                   ResolveHyperparameters(function_name, function->hyperparameters, hyperparameters));
  if (function->check_hyperparameters) RETURN_IF_ERROR(function->check_hyperparameters(resolved));
  ASSIGN_OR_RETURN(const std::vector<EntryPtr> slots, EnsureSlots(entry, *function, resolved));

  std::vector<Entry*> together = {entry.get()};
  for (const EntryPtr& slot : slots) together.push_back(slot.get());
  const LockedTogether lock(std::move(together));
  std::vector<Tensor> state = {entry->value};
  for (const EntryPtr& slot : slots) state.push_back(slot->value);
  return function->apply(UpdateCall{state, host_arguments, resolved});
}

absl::Status VariableStore::AssignSlot(absl::string_view name, absl::string_view slot,
                                       const Tensor& value) {
  ASSIGN_OR_RETURN(const EntryPtr variable, Find(name));
  if (!variable->slot_of.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(QuotedName(name), " is a slot of variable ",
                                                   QuotedName(variable->slot_of),
                                                   ": slots belong to the variable itself"));
  }
  RETURN_IF_ERROR(CheckPsName("slot name", slot));
  const std::string slot_name = SlotName(name, slot);
  RETURN_IF_ERROR(CheckPsName("slot variable name", slot_name));
  RETURN_IF_ERROR(variable->CheckCompatible(absl::StrCat("value of slot ", QuotedName(slot)), value));
  EntryPtr entry;
  {
    MutexLock lock(&index_mu_);
    if (const auto it = entries_.find(slot_name); it != entries_.end()) {
      entry = it->second;
    } else {
      RETURN_IF_ERROR(CheckRoom(slot_name, value.byte_size(), 1));
      ASSIGN_OR_RETURN(Tensor owned, value.CopyTo(kHostDevice));
      entries_.emplace(slot_name, std::make_shared<Entry>(slot_name, std::string(name), owned));
      bytes_ += value.byte_size();
      return absl::OkStatus();
    }
  }
  if (entry->slot_of != name) {
    return absl::InvalidArgumentError(absl::StrCat(
        QuotedName(slot_name), " is ", entry->slot_of.empty() ? "a variable of its own" : "another variable's slot",
        ", not a slot of variable ", QuotedName(name)));
  }
  ArrivalOrderLock lock(&entry->mu);
  return CopyBytes(*entry->value.buffer(), *value.buffer(), value.byte_size());
}

absl::StatusOr<StoredVariableInfo> VariableStore::Info(absl::string_view name) const {
  ASSIGN_OR_RETURN(const EntryPtr entry, Find(name));
  return StoredVariableInfo{entry->name, entry->dtype, entry->shape, entry->slot_of};
}

std::vector<std::string> VariableStore::Names() const {
  MutexLock lock(&index_mu_);
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

uint64_t VariableStore::bytes() const {
  MutexLock lock(&index_mu_);
  return bytes_;
}

int64_t VariableStore::size() const {
  MutexLock lock(&index_mu_);
  return static_cast<int64_t>(entries_.size());
}

}  // namespace distribute::ps
