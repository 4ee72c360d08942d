// Tensors and variable references to and from the closure protocol (closures.proto),
// shared by the coordinator (which encodes arguments and decodes results) and the
// workers (which decode arguments and encode results).
#ifndef DISTRIBUTE_CORE_COORDINATOR_WIRE_VALUES_H_
#define DISTRIBUTE_CORE_COORDINATOR_WIRE_VALUES_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/strategy/strategy.h"
#include "core/tensor/tensor.h"
#include "core/values/value.h"
#include "server/closures.pb.h"

namespace distribute::coordinator {

// A host tensor's dtype, dims and bytes. InvalidArgument for a tensor that is not on a
// CPU device, or past `max_bytes`.
absl::Status EncodeTensor(const Tensor& tensor, uint64_t max_bytes, closures::TensorValue* out);
// The tensor a message holds, checked before anything is allocated: a known dtype, at
// most kMaxRank non-negative dims, and exactly the bytes they take (InvalidArgument
// naming what is wrong otherwise).
absl::StatusOr<Tensor> DecodeTensor(const closures::TensorValue& message);

// The reference to a ParameterServerStrategy variable of the coordinator's strategy:
// its name, dtype, shape, synchronization, aggregation and where each shard lives.
// InvalidArgument for a value that is not such a variable.
absl::Status EncodeVariable(const Value& variable, closures::VariableRef* out);
// The variable `ref` names, as a variable of `strategy` (a worker's ParameterServerStrategy
// whose ps tasks are the coordinator's): the same shards on the same tasks, attached
// without creating anything (the caller keeps one per name). InvalidArgument for a
// malformed reference (names, dtype, dims, shard layout, a task out of range).
absl::StatusOr<Value> AttachVariable(Strategy& strategy, const closures::VariableRef& ref);

}  // namespace distribute::coordinator

#endif  // DISTRIBUTE_CORE_COORDINATOR_WIRE_VALUES_H_
