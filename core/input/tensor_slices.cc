// FromTensorSlices: element i views row i of every component.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/host_tensor.h"
#include "core/input/sources.h"
#include "core/tensor/buffer.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

struct Component {
  Tensor tensor;    // in host memory
  Shape row_shape;  // the shape without the first axis
  size_t row_bytes;
};

class TensorSlicesDataset : public Dataset {
 public:
  TensorSlicesDataset(std::vector<Component> components, int64_t rows)
      : components_(std::move(components)), rows_(rows) {}

  int32_t num_components() const override { return static_cast<int32_t>(components_.size()); }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t) const override;

  std::vector<std::string> SourceFiles() const override { return {}; }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string>) const override {
    return NoSourceFilesError("tensor slices");
  }

  int64_t rows() const { return rows_; }
  const std::vector<Component>& components() const { return components_; }

 private:
  std::vector<Component> components_;
  int64_t rows_;
};

class TensorSlicesIterator : public DatasetIterator {
 public:
  explicit TensorSlicesIterator(const TensorSlicesDataset& dataset) : dataset_(dataset) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (next_ >= dataset_.rows()) return false;
    const int64_t row = next_++;
    Element element;
    element.reserve(dataset_.components().size());
    for (const Component& c : dataset_.components()) {
      const std::shared_ptr<Buffer>& parent = c.tensor.buffer();
      char* base = static_cast<char*>(parent->data());
      void* row_data = base == nullptr ? nullptr : base + static_cast<size_t>(row) * c.row_bytes;
      // The view keeps the whole component alive.
      auto view = Buffer::Borrow(parent->device(), row_data, c.row_bytes, [parent] {});
      ASSIGN_OR_RETURN(Tensor t, Tensor::FromBuffer(c.tensor.dtype(), c.row_shape, std::move(view)));
      element.push_back(std::move(t));
    }
    *out = std::move(element);
    return true;
  }

  absl::StatusOr<int64_t> GetNextRows(int64_t max_rows, Element* out) override {
    const int64_t rows = std::min(max_rows, dataset_.rows() - next_);
    if (rows <= 0) return 0;
    Element batch;
    batch.reserve(dataset_.components().size());
    for (const Component& c : dataset_.components()) {
      const std::shared_ptr<Buffer>& parent = c.tensor.buffer();
      char* base = static_cast<char*>(parent->data());
      const size_t bytes = static_cast<size_t>(rows) * c.row_bytes;
      void* first = base == nullptr ? nullptr : base + static_cast<size_t>(next_) * c.row_bytes;
      std::vector<int64_t> dims{rows};
      dims.insert(dims.end(), c.row_shape.dims().begin(), c.row_shape.dims().end());
      ASSIGN_OR_RETURN(Shape shape, Shape::Make(dims));
      auto view = Buffer::Borrow(parent->device(), first, bytes, [parent] {});
      ASSIGN_OR_RETURN(Tensor t, Tensor::FromBuffer(c.tensor.dtype(), std::move(shape), std::move(view)));
      batch.push_back(std::move(t));
    }
    next_ += rows;
    *out = std::move(batch);
    return rows;
  }

 private:
  const TensorSlicesDataset& dataset_;  // kept alive by the owner of the iterator
  int64_t next_ = 0;
};

absl::StatusOr<std::unique_ptr<DatasetIterator>> TensorSlicesDataset::MakeIterator(uint64_t) const {
  return std::unique_ptr<DatasetIterator>(new TensorSlicesIterator(*this));
}

}  // namespace

absl::StatusOr<DatasetPtr> FromTensorSlices(std::vector<Tensor> components) {
  if (components.empty()) {
    return absl::InvalidArgumentError("components is empty: expected at least one tensor");
  }
  std::vector<Component> checked;
  checked.reserve(components.size());
  const Shape& first = components[0].shape();
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& t = components[i];
    if (t.shape().rank() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "component ", i, " has shape ", t.shape().ToString(),
          ": expected rank >= 1 to slice along the first axis"));
    }
    if (first.rank() >= 1 && t.shape().dim(0) != first.dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "component ", i, " has shape ", t.shape().ToString(), " but component 0 has shape ",
          first.ToString(), ": expected the same first dimension"));
    }
    std::vector<int64_t> row_dims(t.shape().dims().begin() + 1, t.shape().dims().end());
    ASSIGN_OR_RETURN(Shape row_shape, Shape::Make(row_dims));
    ASSIGN_OR_RETURN(Tensor host, t.OnHost());
    const size_t row_bytes = static_cast<size_t>(row_shape.num_elements()) * DTypeSize(t.dtype());
    checked.push_back(Component{std::move(host), std::move(row_shape), row_bytes});
  }
  const int64_t rows = first.dim(0);
  return DatasetPtr(std::make_shared<TensorSlicesDataset>(std::move(checked), rows));
}

}  // namespace distribute
