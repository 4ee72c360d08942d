// The arguments of a scheduled function (dist_closure_args_t), as the coordinator holds
// them before they are sent, and as a closure function on a worker sees them once
// resolved there.
#ifndef DISTRIBUTE_CORE_COORDINATOR_CLOSURE_ARGUMENTS_H_
#define DISTRIBUTE_CORE_COORDINATOR_CLOSURE_ARGUMENTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/input/value_iterator.h"
#include "core/values/value.h"

namespace distribute::coordinator {

class PerWorkerResource;  // per_worker_resource.h: a per-worker dataset or iterator

// The DIST_CLOSURE_ARG_* constants.
enum class ArgumentKind : int32_t { kTensor = 0, kVariable = 1, kIterator = 2 };

inline constexpr int32_t kMaxClosureArguments = 64;
// Tensor bytes of one closure's arguments, together (what fits one 4 MiB message with
// room for the rest of it).
inline constexpr uint64_t kMaxClosureArgumentBytes = (uint64_t{4} << 20) - (uint64_t{64} << 10);

struct ClosureArgument {
  ArgumentKind kind = ArgumentKind::kTensor;
  // kTensor: a host tensor. kVariable: a ParameterServerStrategy variable (the
  // coordinator's; on a worker, the worker strategy's variable of the same name). Empty
  // for kIterator.
  std::optional<Value> value;
  // kIterator, on the coordinator: the per-worker iterator.
  std::shared_ptr<PerWorkerResource> per_worker;
  // kIterator, on a worker: this worker's iterator (its session owns it too).
  std::shared_ptr<ValueIterator> iterator;
};

struct ClosureArguments {
  bool on_worker = false;  // resolved on a worker (lent to a closure function)
  std::vector<ClosureArgument> items;
};

}  // namespace distribute::coordinator

#endif  // DISTRIBUTE_CORE_COORDINATOR_CLOSURE_ARGUMENTS_H_
