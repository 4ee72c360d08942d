// FromGenerator: elements from a callback, restarted at index 0 by every iterator.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/host_tensor.h"
#include "core/input/sources.h"
#include "core/util/mutex.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

struct GeneratorState {
  std::shared_ptr<const GeneratorFn> fn;
  // The callback is promised one caller at a time, even with several iterators.
  Mutex mu;
};

class GeneratorIterator : public DatasetIterator {
 public:
  GeneratorIterator(std::shared_ptr<GeneratorState> state, int32_t num_components)
      : state_(std::move(state)), num_components_(num_components) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (done_) return false;
    if (!error_.ok()) return error_;
    Element element;
    absl::StatusOr<bool> produced;
    {
      MutexLock lock(&state_->mu);
      produced = (*state_->fn)(index_, &element);
    }
    if (!produced.ok()) {
      error_ = produced.status();
      return error_;
    }
    if (!*produced) {
      done_ = true;
      return false;
    }
    if (static_cast<int32_t>(element.size()) != num_components_) {
      error_ = absl::InvalidArgumentError(absl::StrCat(
          "the generator produced ", element.size(), " components for element ", index_,
          ": expected ", num_components_));
      return error_;
    }
    ++index_;
    *out = std::move(element);
    return true;
  }

 private:
  std::shared_ptr<GeneratorState> state_;
  int32_t num_components_;
  int64_t index_ = 0;
  bool done_ = false;
  absl::Status error_;  // a failed generator is not called again
};

class GeneratorDataset : public Dataset {
 public:
  GeneratorDataset(int32_t num_components, std::shared_ptr<GeneratorState> state)
      : num_components_(num_components), state_(std::move(state)) {}

  int32_t num_components() const override { return num_components_; }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t) const override {
    return std::unique_ptr<DatasetIterator>(new GeneratorIterator(state_, num_components_));
  }

  std::vector<std::string> SourceFiles() const override { return {}; }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string>) const override {
    return NoSourceFilesError("generator");
  }

 private:
  int32_t num_components_;
  std::shared_ptr<GeneratorState> state_;
};

}  // namespace

absl::StatusOr<DatasetPtr> FromGenerator(int32_t num_components,
                                         std::shared_ptr<const GeneratorFn> fn) {
  if (num_components < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_components is ", num_components, ": expected at least 1"));
  }
  if (fn == nullptr || !*fn) {
    return absl::InvalidArgumentError("fn is empty: expected a generator function");
  }
  auto state = std::make_shared<GeneratorState>();
  state->fn = std::move(fn);
  return DatasetPtr(std::make_shared<GeneratorDataset>(num_components, std::move(state)));
}

}  // namespace distribute
