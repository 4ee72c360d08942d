#include "core/strategy/thread_context.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"

namespace distribute {

ThreadContext& ThreadContext::Current() {
  thread_local ThreadContext context;
  return context;
}

std::shared_ptr<Strategy> ThreadContext::strategy() const {
  if (!frames_.empty()) return frames_.back().strategy;
  if (set_strategy_ != nullptr) return set_strategy_;
  return Strategy::Default();
}

bool ThreadContext::in_cross_replica() const {
  if (!frames_.empty()) return frames_.back().kind != FrameKind::kReplica;
  return set_strategy_ != nullptr;
}

ReplicaContext* ThreadContext::replica_context() const {
  if (!frames_.empty()) {
    return frames_.back().kind == FrameKind::kReplica ? frames_.back().replica : nullptr;
  }
  if (set_strategy_ != nullptr) return nullptr;
  return &ReplicaContext::DefaultContext();
}

bool ThreadContext::has_strategy() const {
  return strategy()->kind() != StrategyKind::kDefault;
}

FrameKind ThreadContext::top_kind() const {
  return frames_.empty() ? FrameKind::kScope : frames_.back().kind;
}

absl::Status ThreadContext::EnterScope(const std::shared_ptr<Strategy>& strategy) {
  const std::shared_ptr<Strategy> current = this->strategy();
  const bool any_scope = !frames_.empty() || set_strategy_ != nullptr;
  if (any_scope && current.get() != strategy.get() &&
      current->kind() != StrategyKind::kDefault) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot enter the scope of a ", StrategyKindName(strategy->kind()),
        " strategy inside the scope of a different ", StrategyKindName(current->kind()),
        " strategy: mixing strategies is not allowed"));
  }
  if (!frames_.empty() && current.get() == strategy.get()) {
    // Re-entering keeps the context kind (a scope inside a replica function stays in
    // replica context).
    Frame copy = frames_.back();
    copy.reentered = true;
    frames_.push_back(std::move(copy));
    return absl::OkStatus();
  }
  frames_.push_back(Frame{FrameKind::kScope, strategy});
  return absl::OkStatus();
}

absl::Status ThreadContext::ExitScope(const Strategy* strategy) {
  if (frames_.empty() || frames_.back().strategy.get() != strategy ||
      (frames_.back().kind != FrameKind::kScope && !frames_.back().reentered)) {
    return absl::FailedPreconditionError(
        "the innermost scope on this thread is not this strategy's scope: scopes must be "
        "exited in the reverse order they were entered, on the thread that entered them");
  }
  if (frames_.back().colocation) {
    return absl::FailedPreconditionError(
        "a colocate_vars_with is still open inside this scope: exit it first");
  }
  frames_.pop_back();
  return absl::OkStatus();
}

absl::Status ThreadContext::SetStrategy(std::shared_ptr<Strategy> strategy) {
  if (!frames_.empty()) {
    return absl::FailedPreconditionError(
        "experimental_set_strategy must not be called inside a strategy's scope or a "
        "replica function");
  }
  if (strategy != nullptr && strategy->kind() == StrategyKind::kDefault) strategy = nullptr;
  set_strategy_ = std::move(strategy);
  return absl::OkStatus();
}

absl::Status ThreadContext::ColocateEnter(const Strategy* strategy, std::vector<DeviceSpec> devices,
                                          std::string variable_name) {
  if (frames_.empty() || frames_.back().strategy.get() != strategy ||
      frames_.back().kind != FrameKind::kScope) {
    return absl::FailedPreconditionError(
        "colocate_vars_with must be used inside this strategy's scope (cross-replica context)");
  }
  Frame copy = frames_.back();
  copy.reentered = true;
  copy.colocation = true;
  copy.colocate_devices = std::move(devices);
  copy.colocate_variable = std::move(variable_name);
  frames_.push_back(std::move(copy));
  return absl::OkStatus();
}

absl::Status ThreadContext::ColocateExit(const Strategy* strategy) {
  if (frames_.empty() || frames_.back().strategy.get() != strategy ||
      !frames_.back().colocation) {
    return absl::FailedPreconditionError(
        "the innermost frame on this thread is not a colocate_vars_with of this strategy");
  }
  frames_.pop_back();
  return absl::OkStatus();
}

std::string ThreadContext::colocation_variable() const {
  return frames_.empty() ? std::string() : frames_.back().colocate_variable;
}

std::vector<DeviceSpec> ThreadContext::colocation() const {
  return frames_.empty() ? std::vector<DeviceSpec>() : frames_.back().colocate_devices;
}

absl::Status RequireCrossReplica(const Strategy& strategy, absl::string_view what) {
  const ThreadContext& context = ThreadContext::Current();
  if (context.top_kind() == FrameKind::kReplica) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " must be called in cross-replica context (inside the strategy's scope, in "
              "merge_call's function, or outside any scope), not inside a replica function"));
  }
  const std::shared_ptr<Strategy> current = context.strategy();
  if (current.get() != &strategy && current->kind() != StrategyKind::kDefault) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " was called on a ", StrategyKindName(strategy.kind()),
        " strategy inside the scope of a different ", StrategyKindName(current->kind()),
        " strategy"));
  }
  return absl::OkStatus();
}

ReduceOp LossReduction() { return ReduceOp::kSum; }

absl::Status RequireCurrentReplicaContext(const ReplicaContext& context) {
  if (ThreadContext::Current().replica_context() != &context) {
    return absl::FailedPreconditionError(
        "the context is not this thread's current replica context: collectives must be called "
        "in replica context, from the replica function (or joined thread) the context belongs to");
  }
  return absl::OkStatus();
}

}  // namespace distribute
