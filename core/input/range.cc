// Range: int64 scalars start, start + step, ... excluding stop.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/input/host_tensor.h"
#include "core/input/sources.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

class RangeDataset : public Dataset {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step) : start_(start), stop_(stop), step_(step) {}

  int32_t num_components() const override { return 1; }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t) const override;

  std::vector<std::string> SourceFiles() const override { return {}; }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string>) const override {
    return NoSourceFilesError("range");
  }

 private:
  int64_t start_, stop_, step_;
};

class RangeIterator : public DatasetIterator {
 public:
  RangeIterator(int64_t start, int64_t stop, int64_t step)
      : next_(start), stop_(stop), step_(step) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (done_ || (step_ > 0 ? next_ >= stop_ : next_ <= stop_)) {
      done_ = true;
      return false;
    }
    ASSIGN_OR_RETURN(Tensor t, NewHostTensor(DType::kInt64, {}));
    *static_cast<int64_t*>(t.data()) = next_;
    out->clear();
    out->push_back(std::move(t));
    // Past the int64 range the sequence has necessarily reached stop.
    if (__builtin_add_overflow(next_, step_, &next_)) done_ = true;
    return true;
  }

 private:
  int64_t next_, stop_, step_;
  bool done_ = false;
};

absl::StatusOr<std::unique_ptr<DatasetIterator>> RangeDataset::MakeIterator(uint64_t) const {
  return std::unique_ptr<DatasetIterator>(new RangeIterator(start_, stop_, step_));
}

}  // namespace

absl::StatusOr<DatasetPtr> Range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return absl::InvalidArgumentError("step is 0: expected a non-zero step");
  return DatasetPtr(std::make_shared<RangeDataset>(start, stop, step));
}

}  // namespace distribute
