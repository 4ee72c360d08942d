// Which strategy is current on this thread and in which context (tf.distribute's
// distribution_strategy_context): a thread-local stack of frames.
//   scope    entered with Strategy scope: cross-replica context
//   replica  inside a replica function (run or a joined replica): replica context
//   merge    inside merge_call's function: cross-replica context
//   update   inside StrategyExtended.update's function: cross-replica (update) context
// With no frame, the strategy set with experimental_set_strategy is current in
// cross-replica context, or else the default strategy in its replica context.
#ifndef DISTRIBUTE_CORE_STRATEGY_THREAD_CONTEXT_H_
#define DISTRIBUTE_CORE_STRATEGY_THREAD_CONTEXT_H_

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/kernels/reduce_op.h"
#include "core/device/device_spec.h"

namespace distribute {

class ReplicaContext;
class Strategy;
class Variable;

enum class FrameKind { kScope, kReplica, kMerge, kUpdate };

struct Frame {
  Frame(FrameKind k, std::shared_ptr<Strategy> s, ReplicaContext* r = nullptr)
      : kind(k), strategy(std::move(s)), replica(r) {}

  FrameKind kind;
  std::shared_ptr<Strategy> strategy;
  ReplicaContext* replica = nullptr;  // the innermost replica context, for kReplica
  bool reentered = false;  // a scope re-entered on top of a frame of the same strategy
  bool colocation = false;  // pushed by colocate_vars_with (exited by its own exit only)
  // Where new variables go while a colocate_vars_with is open (empty: the strategy decides).
  std::vector<DeviceSpec> colocate_devices;
  std::string colocate_variable;  // the variable colocated with (ParameterServer placement)
};

class ThreadContext {
 public:
  static ThreadContext& Current();

  // The strategy in force (never null: the default strategy at the bottom).
  std::shared_ptr<Strategy> strategy() const;
  bool in_cross_replica() const;
  // The replica context, or null in cross-replica context. With no frame and no set
  // strategy, the default strategy's replica context.
  ReplicaContext* replica_context() const;
  bool has_strategy() const;
  FrameKind top_kind() const;  // kScope when there is no frame but a set strategy
  bool in_update() const { return !frames_.empty() && frames_.back().kind == FrameKind::kUpdate; }
  const Frame* top() const { return frames_.empty() ? nullptr : &frames_.back(); }

  absl::Status EnterScope(const std::shared_ptr<Strategy>& strategy);
  absl::Status ExitScope(const Strategy* strategy);
  absl::Status SetStrategy(std::shared_ptr<Strategy> strategy);

  absl::Status ColocateEnter(const Strategy* strategy, std::vector<DeviceSpec> devices,
                             std::string variable_name);
  absl::Status ColocateExit(const Strategy* strategy);
  // The devices new variables should be placed on; empty when no colocation is open.
  std::vector<DeviceSpec> colocation() const;
  // The name of the variable new variables are colocated with; empty when none.
  std::string colocation_variable() const;

  // Push returns the frame's depth; Truncate(depth) pops it and anything a callback left
  // above it (a scope entered and never exited), so no frame outlives its owner.
  size_t Push(Frame frame) {
    frames_.push_back(std::move(frame));
    return frames_.size() - 1;
  }
  size_t depth() const { return frames_.size(); }
  void Truncate(size_t depth) {
    if (frames_.size() > depth) frames_.erase(frames_.begin() + static_cast<std::ptrdiff_t>(depth), frames_.end());
  }

 private:
  std::vector<Frame> frames_;
  std::shared_ptr<Strategy> set_strategy_;
};

// Pushes a frame for the lifetime of the object.
class ScopedFrame {
 public:
  explicit ScopedFrame(Frame frame) : depth_(ThreadContext::Current().Push(std::move(frame))) {}
  ~ScopedFrame() { ThreadContext::Current().Truncate(depth_); }
  ScopedFrame(const ScopedFrame&) = delete;
  ScopedFrame& operator=(const ScopedFrame&) = delete;

 private:
  const size_t depth_;
};

// tf.distribute.get_loss_reduction: SUM, as TF returns outside Estimator.
ReduceOp LossReduction();

// FailedPrecondition naming `what` when this thread is in replica context (inside a
// replica function), or inside the scope of a strategy other than `strategy`. TF allows
// cross-replica calls with no scope at all (the default context), and so do we.
absl::Status RequireCrossReplica(const Strategy& strategy, absl::string_view what);

// FailedPrecondition unless `context` is this thread's current replica context (a run's
// replica function, a joined replica's thread, or the default context with no scope): a
// context used from another thread, after its function returned, or from merge_call's
// function would rendezvous as a replica that is not there.
absl::Status RequireCurrentReplicaContext(const ReplicaContext& context);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_THREAD_CONTEXT_H_
