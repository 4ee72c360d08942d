// Where a worker reaches the variables of one ps task: the task's VariableStore, in this
// process (local mode, tests) or over the task's gRPC variable service
// (core/server/remote_variable_host.h). The strategy sees only this interface, so local
// and remote parameter servers behave alike, errors included: an error the store produced
// comes back with its code and message; a task that cannot be reached (dead, refusing,
// too slow) is kUnavailable or kDeadlineExceeded naming the task ("ps:1") and what was
// asked of it. Every call is bounded by its deadline: none waits past it.
#ifndef DISTRIBUTE_CORE_PS_VARIABLE_HOST_H_
#define DISTRIBUTE_CORE_PS_VARIABLE_HOST_H_

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
  // Every variable and slot the task holds (for checkpoints), sorted by name.
  virtual absl::StatusOr<std::vector<StoredVariableInfo>> List(const Deadline& deadline) = 0;
};

// A host over `store` in this process (shared: the store lives as long as any host of it).
// `task` names it in messages.
std::unique_ptr<VariableHost> NewLocalVariableHost(std::shared_ptr<VariableStore> store,
                                                   std::string task = "local");

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_VARIABLE_HOST_H_
