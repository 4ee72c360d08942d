// Shard: the elements at positions index, index + num_shards, ...
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

class ShardIterator : public DatasetIterator {
 public:
  ShardIterator(std::unique_ptr<DatasetIterator> input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (input_ == nullptr) return false;
    while (true) {
      ASSIGN_OR_RETURN(const bool got, input_->GetNext(out));
      if (!got) {
        input_.reset();
        return false;
      }
      const int64_t position = position_;
      position_ = position_ + 1 == num_shards_ ? 0 : position_ + 1;
      if (position == index_) return true;
    }
  }

 private:
  std::unique_ptr<DatasetIterator> input_;
  int64_t num_shards_, index_;
  int64_t position_ = 0;  // of the next input element, modulo num_shards
};

class ShardDataset : public Dataset {
 public:
  ShardDataset(DatasetPtr input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}

  int32_t num_components() const override { return input_->num_components(); }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t pass) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> input, input_->MakeIterator(pass));
    return std::unique_ptr<DatasetIterator>(new ShardIterator(std::move(input), num_shards_, index_));
  }

  std::vector<std::string> SourceFiles() const override { return input_->SourceFiles(); }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    ASSIGN_OR_RETURN(DatasetPtr input, input_->WithSourceFiles(std::move(files)));
    return Shard(std::move(input), num_shards_, index_);
  }


  // Element-wise transformations keep batches whole: distribution still knows the global
  // batch size when a map, shuffle, take... follows the batch.
  int64_t batch_size() const override { return input_->batch_size(); }

 private:
  DatasetPtr input_;
  int64_t num_shards_, index_;
};

}  // namespace

absl::StatusOr<DatasetPtr> Shard(DatasetPtr input, int64_t num_shards, int64_t index) {
  RETURN_IF_ERROR(CheckInput(input));
  if (num_shards < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_shards is ", num_shards, ": expected at least 1"));
  }
  if (index < 0 || index >= num_shards) {
    return absl::InvalidArgumentError(absl::StrCat("index is ", index, ": expected 0 <= index < ",
                                                   num_shards, " (num_shards)"));
  }
  return DatasetPtr(std::make_shared<ShardDataset>(std::move(input), num_shards, index));
}

}  // namespace distribute
