#include "core/coordinator/closure_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/ps/names.h"

namespace distribute::coordinator {

template <typename F>
absl::Status NamedFunctions<F>::Register(absl::string_view what, absl::string_view name, F function,
                                         std::function<void()> release) {
  if (absl::Status checked = ps::CheckPsName(absl::StrCat(what, " name"), name); !checked.ok()) return checked;
  if (!function) return absl::InvalidArgumentError(absl::StrCat(what, " ", ps::QuotedName(name), " has no function"));
  MutexLock lock(&mu_);
  if (entries_.contains(name)) {
    return absl::AlreadyExistsError(absl::StrCat(what, " ", ps::QuotedName(name), " is registered already"));
  }
  if (entries_.size() >= static_cast<size_t>(kMaxRegisteredClosures)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("at most ", kMaxRegisteredClosures, " ", what, "s may be registered"));
  }
  auto entry = std::make_shared<Entry>();
  entry->function = std::move(function);
  entry->release = std::move(release);
  entries_.emplace(std::string(name), std::move(entry));
  return absl::OkStatus();
}

template <typename F>
absl::Status NamedFunctions<F>::Unregister(absl::string_view what, absl::string_view name) {
  std::shared_ptr<const Entry> removed;  // released outside the lock
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      return absl::NotFoundError(absl::StrCat(what, " ", ps::QuotedName(name), " is not registered"));
    }
    removed = std::move(it->second);
    entries_.erase(it);
  }
  return absl::OkStatus();
}

template <typename F>
bool NamedFunctions<F>::IsRegistered(absl::string_view name) const {
  MutexLock lock(&mu_);
  return entries_.contains(name);
}

template <typename F>
absl::StatusOr<std::shared_ptr<const typename NamedFunctions<F>::Entry>> NamedFunctions<F>::Find(
    absl::string_view what, absl::string_view name) const {
  MutexLock lock(&mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(
        absl::StrCat(what, " ", ps::QuotedName(name), " is not registered in this process (every process of the job "
                     "registers the same functions at start-up)"));
  }
  return it->second;
}

template class NamedFunctions<ClosureFunction>;
template class NamedFunctions<DatasetFunction>;

ClosureRegistry& Closures() {
  static auto* registry = new ClosureRegistry();
  return *registry;
}

DatasetFunctionRegistry& DatasetFunctions() {
  static auto* registry = new DatasetFunctionRegistry();
  return *registry;
}

}  // namespace distribute::coordinator
