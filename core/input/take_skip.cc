// Take and Skip: a prefix or all but a prefix of the input.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/input_check.h"
#include "core/input/transformations.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

class TakeIterator : public DatasetIterator {
 public:
  TakeIterator(std::unique_ptr<DatasetIterator> input, int64_t count)
      : input_(std::move(input)), left_(count) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (input_ == nullptr) return false;
    // Never pulls past the last element taken: the input may be endless or slow.
    if (left_ == 0) {
      input_.reset();
      return false;
    }
    ASSIGN_OR_RETURN(const bool got, input_->GetNext(out));
    if (!got) {
      input_.reset();
      return false;
    }
    if (left_ > 0) --left_;
    return true;
  }

 private:
  std::unique_ptr<DatasetIterator> input_;
  int64_t left_;  // -1: all
};

class SkipIterator : public DatasetIterator {
 public:
  SkipIterator(std::unique_ptr<DatasetIterator> input, int64_t count)
      : input_(std::move(input)), to_skip_(count) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (input_ == nullptr) return false;
    while (to_skip_ > 0) {
      Element skipped;
      ASSIGN_OR_RETURN(const bool got, input_->GetNext(&skipped));
      if (!got) {
        input_.reset();
        return false;
      }
      --to_skip_;
    }
    ASSIGN_OR_RETURN(const bool got, input_->GetNext(out));
    if (!got) input_.reset();
    return got;
  }

 private:
  std::unique_ptr<DatasetIterator> input_;
  int64_t to_skip_;
};

enum class Kind { kTake, kSkip };

class TakeSkipDataset : public Dataset {
 public:
  TakeSkipDataset(Kind kind, DatasetPtr input, int64_t count)
      : kind_(kind), input_(std::move(input)), count_(count) {}

  int32_t num_components() const override { return input_->num_components(); }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t pass) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> input, input_->MakeIterator(pass));
    if (kind_ == Kind::kTake) {
      return std::unique_ptr<DatasetIterator>(new TakeIterator(std::move(input), count_));
    }
    return std::unique_ptr<DatasetIterator>(new SkipIterator(std::move(input), count_));
  }

  std::vector<std::string> SourceFiles() const override { return input_->SourceFiles(); }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    ASSIGN_OR_RETURN(DatasetPtr input, input_->WithSourceFiles(std::move(files)));
    return DatasetPtr(std::make_shared<TakeSkipDataset>(kind_, std::move(input), count_));
  }


  // Element-wise transformations keep batches whole: distribution still knows the global
  // batch size when a map, shuffle, take... follows the batch.
  int64_t batch_size() const override { return input_->batch_size(); }

 private:
  Kind kind_;
  DatasetPtr input_;
  int64_t count_;
};

}  // namespace

absl::StatusOr<DatasetPtr> Take(DatasetPtr input, int64_t count) {
  RETURN_IF_ERROR(CheckInput(input));
  if (count < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("count is ", count, ": expected -1 (all) or at least 0"));
  }
  return DatasetPtr(std::make_shared<TakeSkipDataset>(Kind::kTake, std::move(input), count));
}

absl::StatusOr<DatasetPtr> Skip(DatasetPtr input, int64_t count) {
  RETURN_IF_ERROR(CheckInput(input));
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat("count is ", count, ": expected at least 0"));
  }
  return DatasetPtr(std::make_shared<TakeSkipDataset>(Kind::kSkip, std::move(input), count));
}

}  // namespace distribute
