#include "core/input/value_iterator.h"

#include <utility>

#include "core/util/status_macros.h"

namespace distribute {
namespace {

class PlainValueIterator : public ValueIterator {
 public:
  PlainValueIterator(DatasetPtr dataset, std::unique_ptr<DatasetIterator> pass)
      : dataset_(std::move(dataset)), pass_(std::move(pass)) {}

  absl::StatusOr<bool> GetNext(std::vector<Value>* out) override {
    Element element;
    ASSIGN_OR_RETURN(const bool has_value, pass_->GetNext(&element));
    out->clear();
    for (Tensor& tensor : element) out->emplace_back(std::move(tensor));
    return has_value;
  }
  int32_t num_components() const override { return dataset_->num_components(); }

 private:
  DatasetPtr dataset_;  // the pass reads it
  std::unique_ptr<DatasetIterator> pass_;
};

class DistributedValueIterator : public ValueIterator {
 public:
  explicit DistributedValueIterator(std::unique_ptr<DistributedIterator> pass) : pass_(std::move(pass)) {}

  absl::StatusOr<bool> GetNext(std::vector<Value>* out) override { return pass_->GetNext(out); }
  int32_t num_components() const override { return pass_->num_components(); }

 private:
  std::unique_ptr<DistributedIterator> pass_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ValueIterator>> IterateDataset(DatasetPtr dataset) {
  ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> pass, dataset->MakeIterator(0));
  return std::unique_ptr<ValueIterator>(new PlainValueIterator(std::move(dataset), std::move(pass)));
}

absl::StatusOr<std::unique_ptr<ValueIterator>> IterateDistributed(const DistributedDataset& dataset) {
  ASSIGN_OR_RETURN(std::unique_ptr<DistributedIterator> pass, dataset.MakeIterator());
  return std::unique_ptr<ValueIterator>(new DistributedValueIterator(std::move(pass)));
}

}  // namespace distribute
