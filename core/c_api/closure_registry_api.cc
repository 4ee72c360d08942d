// C entry points for the closure and dataset functions a worker runs for the coordinator
// (coordinator.h): a C callback becomes a core ClosureFunction or DatasetFunction, which
// lends the worker's strategy and the resolved arguments to the callback as borrowed
// handles and takes the tensor it stores.
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/c_api/user_data.h"
#include "core/c_api/value_args.h"
#include "core/coordinator/closure_registry.h"
#include "core/ps/names.h"
#include "core/util/status_macros.h"
#include "distribute/coordinator.h"

using distribute::DatasetPtr;
using distribute::InputContext;
using distribute::Strategy;
using distribute::Tensor;
using distribute::Value;
using distribute::c_api::CallbackStatus;
using distribute::c_api::CheckOwnedHandle;
using distribute::c_api::ClearLastError;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;
using distribute::c_api::TakeCallbackResult;
using distribute::c_api::UserData;
using distribute::coordinator::ArgumentKind;
using distribute::coordinator::ClosureArguments;
using distribute::coordinator::ClosureFunction;
using distribute::coordinator::Closures;
using distribute::coordinator::DatasetFunction;
using distribute::coordinator::DatasetFunctions;

namespace {

absl::Status CheckName(const char* name) {
  if (name == nullptr) return NullArgument("name");
  return distribute::ps::CheckPsName("name", name);
}

// The arguments as a borrowed handle, with a borrowed handle for each value and iterator.
std::unique_ptr<dist_closure_args> LendArguments(const ClosureArguments& arguments) {
  auto handle = std::make_unique<dist_closure_args>();
  handle->arguments = arguments;
  for (const auto& item : arguments.items) {
    std::unique_ptr<dist_value> value;
    std::unique_ptr<dist_iterator> iterator;
    if (item.value.has_value()) {
      value = std::make_unique<dist_value>(*item.value);
      value->MarkBorrowed();
    }
    if (item.iterator != nullptr) {
      iterator = std::make_unique<dist_iterator>(item.iterator);
      iterator->MarkBorrowed();
    }
    handle->lent_values.push_back(std::move(value));
    handle->lent_iterators.push_back(std::move(iterator));
  }
  handle->MarkBorrowed();
  return handle;
}

ClosureFunction AdaptClosure(std::string name, dist_closure_fn fn, std::shared_ptr<UserData> user_data) {
  const std::string who = absl::StrCat("closure function ", distribute::ps::QuotedName(name));
  return [who, fn, user_data](const std::shared_ptr<Strategy>& strategy,
                              const ClosureArguments& arguments) -> absl::StatusOr<std::optional<Tensor>> {
    dist_strategy strategy_handle(strategy);
    strategy_handle.MarkBorrowed();
    const std::unique_ptr<dist_closure_args> args = LendArguments(arguments);
    dist_value_t* produced = nullptr;
    ClearLastError();
    const dist_status_t code = fn(&strategy_handle, args.get(), &produced, user_data->get());
    ASSIGN_OR_RETURN(std::optional<Value> result, TakeCallbackResult(code, produced, who, "out_result"));
    if (!result.has_value()) return std::optional<Tensor>();
    absl::StatusOr<const Tensor*> tensor = result->AsTensor();
    if (!tensor.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, " stored a result that is not a tensor: ", tensor.status().message()));
    }
    return std::optional<Tensor>(**tensor);
  };
}

DatasetFunction AdaptDataset(std::string name, dist_dataset_fn fn, std::shared_ptr<UserData> user_data) {
  const std::string who = absl::StrCat("dataset function ", distribute::ps::QuotedName(name));
  return [who, fn, user_data](const InputContext& context) -> absl::StatusOr<DatasetPtr> {
    dist_input_context context_handle(context);
    context_handle.MarkBorrowed();
    dist_dataset_t* produced = nullptr;
    ClearLastError();
    const dist_status_t code = fn(&context_handle, &produced, user_data->get());
    DatasetPtr dataset;
    absl::Status owned;
    if (produced != nullptr) {
      owned = CheckOwnedHandle(produced, "out");
      if (owned.ok()) {  // taken even when fn failed, so that nothing it owned leaks
        dataset = produced->dataset;
        DestroyHandle(produced);
      }
    }
    if (code != DIST_OK) return CallbackStatus(code, who);
    if (!owned.ok()) return absl::InvalidArgumentError(absl::StrCat(who, ": ", owned.message()));
    if (dataset == nullptr) return absl::InvalidArgumentError(absl::StrCat(who, " stored no dataset"));
    return dataset;
  };
}

}  // namespace

extern "C" {

dist_status_t dist_closure_register(const char* name, dist_closure_fn fn, void* user_data, dist_free_fn free_fn) {
  auto owner = std::make_shared<UserData>(user_data, free_fn);
  const dist_status_t status = Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckName(name));
    if (fn == nullptr) return NullArgument("fn");
    return Closures().Register("closure function", name, AdaptClosure(name, fn, owner), nullptr);
  });
  if (status != DIST_OK) owner->Disarm();  // refused: the caller keeps user_data
  return status;
}

dist_status_t dist_closure_unregister(const char* name) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckName(name));
    return Closures().Unregister("closure function", name);
  });
}

dist_status_t dist_closure_is_registered(const char* name, int32_t* out_registered) {
  ClearOut(out_registered);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckName(name));
    if (out_registered == nullptr) return NullArgument("out_registered");
    *out_registered = Closures().IsRegistered(name) ? 1 : 0;
    return absl::OkStatus();
  });
}

dist_status_t dist_dataset_function_register(const char* name, dist_dataset_fn fn, void* user_data,
                                             dist_free_fn free_fn) {
  auto owner = std::make_shared<UserData>(user_data, free_fn);
  const dist_status_t status = Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckName(name));
    if (fn == nullptr) return NullArgument("fn");
    return DatasetFunctions().Register("dataset function", name, AdaptDataset(name, fn, owner), nullptr);
  });
  if (status != DIST_OK) owner->Disarm();
  return status;
}

dist_status_t dist_dataset_function_unregister(const char* name) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckName(name));
    return DatasetFunctions().Unregister("dataset function", name);
  });
}

}  // extern "C"
