// The in-process VariableHost: calls the store directly. Deadlines cannot be missed here
// (the store never waits on anything but the locks of one variable's updates), so they are
// only checked before a call, as a remote host's would be.
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/ps/variable_host.h"

namespace distribute::ps {
namespace {

class LocalVariableHost final : public VariableHost {
 public:
  LocalVariableHost(std::shared_ptr<VariableStore> store, std::string task)
      : store_(std::move(store)), task_(std::move(task)) {}

  const std::string& task() const override { return task_; }

  absl::Status WaitReady(const Deadline& deadline) override { return Live(deadline, "answer"); }

  absl::StatusOr<VariableStore::Creation> CreateIfAbsent(absl::string_view name, const Tensor& initial,
                                                         const Deadline& deadline) override {
    if (absl::Status live = Live(deadline, "create a variable"); !live.ok()) return live;
    return store_->CreateIfAbsent(name, initial);
  }
  absl::StatusOr<Tensor> Read(absl::string_view name, const Deadline& deadline) override {
    if (absl::Status live = Live(deadline, "read a variable"); !live.ok()) return live;
    return store_->Read(name);
  }
  absl::Status Assign(absl::string_view name, const Tensor& value, const Deadline& deadline) override {
    if (absl::Status live = Live(deadline, "assign a variable"); !live.ok()) return live;
    return store_->Assign(name, value);
  }
  absl::Status AssignAdd(absl::string_view name, const Tensor& delta, const Deadline& deadline) override {
    if (absl::Status live = Live(deadline, "add to a variable"); !live.ok()) return live;
    return store_->AssignAdd(name, delta);
  }
  absl::Status AssignSub(absl::string_view name, const Tensor& delta, const Deadline& deadline) override {
    if (absl::Status live = Live(deadline, "subtract from a variable"); !live.ok()) return live;
    return store_->AssignSub(name, delta);
  }
  absl::Status ApplyUpdate(absl::string_view name, absl::string_view function,
                           std::span<const Tensor> arguments, const Hyperparameters& hyperparameters,
                           const Deadline& deadline) override {
    if (absl::Status live = Live(deadline, "update a variable"); !live.ok()) return live;
    return store_->ApplyUpdate(name, function, arguments, hyperparameters);
  }
  absl::Status AssignSlot(absl::string_view name, absl::string_view slot, const Tensor& value,
                          const Deadline& deadline) override {
    if (absl::Status live = Live(deadline, "write a slot"); !live.ok()) return live;
    return store_->AssignSlot(name, slot, value);
  }
  absl::StatusOr<std::vector<StoredVariableInfo>> List(const Deadline& deadline) override {
    if (absl::Status live = Live(deadline, "list its variables"); !live.ok()) return live;
    std::vector<StoredVariableInfo> infos;
    for (const std::string& name : store_->Names()) {
      absl::StatusOr<StoredVariableInfo> info = store_->Info(name);
      if (info.ok()) infos.push_back(*std::move(info));  // a name is never removed: always ok
    }
    return infos;
  }

 private:
  absl::Status Live(const Deadline& deadline, absl::string_view what) const {
    if (!deadline.Expired()) return absl::OkStatus();
    return absl::DeadlineExceededError(absl::StrCat(
        "parameter server ", task_, " did not ", what, " within ", deadline.timeout_ms, " ms"));
  }

  const std::shared_ptr<VariableStore> store_;
  const std::string task_;
};

}  // namespace

std::unique_ptr<VariableHost> NewLocalVariableHost(std::shared_ptr<VariableStore> store,
                                                   std::string task) {
  return std::make_unique<LocalVariableHost>(std::move(store), std::move(task));
}

}  // namespace distribute::ps
