// Shuffle: TF's buffered shuffle. The buffer fills with the first buffer_size elements;
// each step emits a random buffered element and puts the next input element in its place.
#include <cstdint>
#include <memory>
#include <random>
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

class ShuffleIterator : public DatasetIterator {
 public:
  ShuffleIterator(std::unique_ptr<DatasetIterator> input, int64_t buffer_size, uint64_t seed,
                  uint64_t pass)
      : input_(std::move(input)),
        buffer_size_(static_cast<size_t>(buffer_size)),
        rng_(SplitMix64(SplitMix64(seed) ^ pass)) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    while (input_ != nullptr && buffer_.size() < buffer_size_) {
      Element element;
      ASSIGN_OR_RETURN(const bool got, input_->GetNext(&element));
      if (!got) {
        input_.reset();
        break;
      }
      buffer_.push_back(std::move(element));
    }
    if (buffer_.empty()) return false;
    // Modulo rather than a std distribution, whose draws differ between standard libraries.
    const size_t pick = static_cast<size_t>(rng_() % buffer_.size());
    *out = std::move(buffer_[pick]);
    if (pick + 1 != buffer_.size()) buffer_[pick] = std::move(buffer_.back());
    buffer_.pop_back();
    return true;
  }

 private:
  std::unique_ptr<DatasetIterator> input_;  // null once exhausted
  size_t buffer_size_;
  std::mt19937_64 rng_;
  std::vector<Element> buffer_;
};

class ShuffleDataset : public Dataset {
 public:
  ShuffleDataset(DatasetPtr input, int64_t buffer_size, uint64_t seed)
      : input_(std::move(input)), buffer_size_(buffer_size), seed_(seed) {}

  int32_t num_components() const override { return input_->num_components(); }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t pass) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> input, input_->MakeIterator(pass));
    return std::unique_ptr<DatasetIterator>(
        new ShuffleIterator(std::move(input), buffer_size_, seed_, pass));
  }

  std::vector<std::string> SourceFiles() const override { return input_->SourceFiles(); }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    ASSIGN_OR_RETURN(DatasetPtr input, input_->WithSourceFiles(std::move(files)));
    return Shuffle(std::move(input), buffer_size_, seed_);
  }


  // Element-wise transformations keep batches whole: distribution still knows the global
  // batch size when a map, shuffle, take... follows the batch.
  int64_t batch_size() const override { return input_->batch_size(); }

 private:
  DatasetPtr input_;
  int64_t buffer_size_;
  uint64_t seed_;
};

}  // namespace

absl::StatusOr<DatasetPtr> Shuffle(DatasetPtr input, int64_t buffer_size, uint64_t seed) {
  RETURN_IF_ERROR(CheckInput(input));
  if (buffer_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer_size is ", buffer_size, ": expected at least 1"));
  }
  return DatasetPtr(std::make_shared<ShuffleDataset>(std::move(input), buffer_size, seed));
}

}  // namespace distribute
