// Where a worker reaches the variables of one ps task: the task's VariableStore, in this
// process (local mode, tests) or over the task's gRPC variable service
// (core/server/remote_variable_host.h). The strategy sees only this interface, so local
// and remote parameter servers behave alike, errors included: an error the store produced
// comes back with its code and message; a task that cannot be reached (dead, refusing,
// too slow) is kUnavailable or kDeadlineExceeded naming the task ("ps:1") and what was
// asked of it. Every call is bounded by its deadline: none waits past it.
#ifndef DISTRIBUTE_CORE_PS_VARIABLE_HOST_H_
#define DISTRIBUTE_CORE_PS_VARIABLE_HOST_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/ps/hyperparameters.h"
#include "core/ps/variable_store.h"
#include "core/tensor/tensor.h"
#include "core/util/deadline.h"

namespace distribute::ps {

// Thread-safety: safe.
class VariableHost {
 public:
  virtual ~VariableHost() = default;

  // The task it reaches, for messages: "ps:1", or "local" in local mode.
  virtual const std::string& task() const = 0;

  // Waits until the task answers (for start-up: a ps task may come up after the worker).
  // kDeadlineExceeded naming the task when it has not answered by `deadline`;
  // kUnauthenticated when it refuses the job token.
  virtual absl::Status WaitReady(const Deadline& deadline) = 0;

  // VariableStore's operations, with its semantics and errors. Tensors given may be on any
  // device; tensors returned are host tensors.
  virtual absl::StatusOr<VariableStore::Creation> CreateIfAbsent(absl::string_view name,
                                                                 const Tensor& initial,
                                                                 const Deadline& deadline) = 0;
  virtual absl::StatusOr<Tensor> Read(absl::string_view name, const Deadline& deadline) = 0;
  virtual absl::Status Assign(absl::string_view name, const Tensor& value, const Deadline& deadline) = 0;
  virtual absl::Status AssignAdd(absl::string_view name, const Tensor& delta, const Deadline& deadline) = 0;
  virtual absl::Status AssignSub(absl::string_view name, const Tensor& delta, const Deadline& deadline) = 0;
  virtual absl::Status ApplyUpdate(absl::string_view name, absl::string_view function,
                                   std::span<const Tensor> arguments,
                                   const Hyperparameters& hyperparameters,
                                   const Deadline& deadline) = 0;
  virtual absl::Status AssignSlot(absl::string_view name, absl::string_view slot,
                                  const Tensor& value, const Deadline& deadline) = 0;

  // Many variables (or shards) at once, in the order of `names`: one call to the task
  // where the host is remote (the strategy keeps a batch within kMaxBatchEntries names and
  // the byte bound). Each value is read atomically; the batch is not one snapshot. Any
  // name that fails fails the call. By default, one Read after another.
  virtual absl::StatusOr<std::vector<Tensor>> ReadMany(std::span<const std::string> names,
                                                       const Deadline& deadline);

  // One variable's part of ApplyUpdates: its name and its arguments.
  struct UpdateEntry {
    std::string name;
    std::vector<Tensor> arguments;
  };
  // What ApplyUpdates came to: OK, or how many entries failed and the first of them.
  struct UpdatesOutcome {
    int32_t failed = 0;
    int32_t first_failed = -1;
    absl::Status first_error;
  };
  // `function` run on every entry, in order, with the same hyperparameters; every entry is
  // applied whatever the others' outcome (one call to the task where the host is remote).
  // An error of the call itself (a bad request, the task unreachable) comes back as the
  // status: then which entries were applied is not known. By default, one ApplyUpdate
  // after another.
  virtual absl::StatusOr<UpdatesOutcome> ApplyUpdates(std::span<const UpdateEntry> entries,
                                                      absl::string_view function,
                                                      const Hyperparameters& hyperparameters,
                                                      const Deadline& deadline);

  // How much one ReadMany or ApplyUpdates call may carry: entries, tensor bytes, and the
  // bytes of names and tensor headers in its first message (a caller cuts a larger batch
  // into several calls). By default nothing but memory bounds a call.
  struct BatchLimits {
    size_t entries = SIZE_MAX;
    uint64_t tensor_bytes = UINT64_MAX;
    size_t header_bytes = SIZE_MAX;
  };
  virtual BatchLimits batch_limits() const { return {}; }

  // Every variable and slot the task holds (for checkpoints), sorted by name.
  virtual absl::StatusOr<std::vector<StoredVariableInfo>> List(const Deadline& deadline) = 0;
};

// A host over `store` in this process (shared: the store lives as long as any host of it).
// `task` names it in messages.
std::unique_ptr<VariableHost> NewLocalVariableHost(std::shared_ptr<VariableStore> store,
                                                   std::string task = "local");

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_VARIABLE_HOST_H_
