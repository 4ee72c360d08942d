// Repeat: the input `count` times, or forever for -1.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/input_check.h"
#include "core/input/transformations.h"
#include "core/util/mix.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

class RepeatIterator : public DatasetIterator {
 public:
  RepeatIterator(DatasetPtr input, int64_t count, uint64_t outer_pass)
      : input_(std::move(input)), count_(count), outer_pass_(outer_pass) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    ASSIGN_OR_RETURN(const int64_t got, Next([&](DatasetIterator& input) -> absl::StatusOr<int64_t> {
      ASSIGN_OR_RETURN(const bool has_value, input.GetNext(out));
      return has_value ? 1 : 0;
    }));
    return got > 0;
  }

  // Rows pass through from a row source; a batch spanning two epochs is assembled by the
  // batch from two calls.
  absl::StatusOr<int64_t> GetNextRows(int64_t max_rows, Element* out) override {
    return Next([&](DatasetIterator& input) { return input.GetNextRows(max_rows, out); });
  }

 private:
  // Runs `take` on the current epoch's iterator, moving to the next epoch when it gives 0;
  // passes on -1 (rows not supported) and errors.
  template <typename Take>
  absl::StatusOr<int64_t> Next(Take take) {
    while (!done_) {
      if (current_ == nullptr) {
        if (count_ >= 0 && epoch_ >= static_cast<uint64_t>(count_)) break;
        ASSIGN_OR_RETURN(current_, input_->MakeIterator(InnerPass()));
        epoch_had_elements_ = false;
      }
      ASSIGN_OR_RETURN(const int64_t got, take(*current_));
      if (got != 0) {
        if (got > 0) epoch_had_elements_ = true;
        return got;
      }
      current_.reset();
      ++epoch_;
      // An empty input would make repeat(-1) spin forever.
      if (!epoch_had_elements_) break;
    }
    done_ = true;
    current_.reset();
    return 0;
  }

 public:

 private:
  // Unique per (outer pass, epoch), and just the epoch under an outer pass 0.
  uint64_t InnerPass() const {
    if (count_ >= 0) return outer_pass_ * static_cast<uint64_t>(count_) + epoch_;
    if (outer_pass_ == 0) return epoch_;
    return SplitMix64(SplitMix64(outer_pass_) ^ epoch_);
  }

  DatasetPtr input_;
  int64_t count_;
  uint64_t outer_pass_;
  uint64_t epoch_ = 0;
  bool epoch_had_elements_ = false;
  bool done_ = false;
  std::unique_ptr<DatasetIterator> current_;
};

class RepeatDataset : public Dataset {
 public:
  RepeatDataset(DatasetPtr input, int64_t count) : input_(std::move(input)), count_(count) {}

  int32_t num_components() const override { return input_->num_components(); }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t pass) const override {
    return std::unique_ptr<DatasetIterator>(new RepeatIterator(input_, count_, pass));
  }

  std::vector<std::string> SourceFiles() const override { return input_->SourceFiles(); }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    ASSIGN_OR_RETURN(DatasetPtr input, input_->WithSourceFiles(std::move(files)));
    return Repeat(std::move(input), count_);
  }


  // Element-wise transformations keep batches whole: distribution still knows the global
  // batch size when a map, shuffle, take... follows the batch.
  int64_t batch_size() const override { return input_->batch_size(); }

 private:
  DatasetPtr input_;
  int64_t count_;
};

}  // namespace

absl::StatusOr<DatasetPtr> Repeat(DatasetPtr input, int64_t count) {
  RETURN_IF_ERROR(CheckInput(input));
  if (count < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("count is ", count, ": expected -1 (forever) or at least 0"));
  }
  return DatasetPtr(std::make_shared<RepeatDataset>(std::move(input), count));
}

}  // namespace distribute
