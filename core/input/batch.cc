// Batch: stacks consecutive elements along a new first axis.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/host_tensor.h"
#include "core/input/input_check.h"
#include "core/input/transformations.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

class BatchIterator : public DatasetIterator {
 public:
  BatchIterator(std::unique_ptr<DatasetIterator> input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (done_) return false;
    // Rows of one source tensor come stacked already, as a view: no per-element copy.
    Element chunk;
    ASSIGN_OR_RETURN(int64_t rows, input_->GetNextRows(batch_size_, &chunk));
    if (rows >= 0) {
      std::vector<Element> chunks;
      int64_t total = 0;
      while (rows > 0) {
        chunks.push_back(std::move(chunk));
        total += rows;
        if (total == batch_size_) break;
        ASSIGN_OR_RETURN(rows, input_->GetNextRows(batch_size_ - total, &chunk));
      }
      if (total < batch_size_) {
        done_ = true;
        input_.reset();
        if (total == 0 || drop_remainder_) return false;
      }
      if (chunks.size() == 1) {
        *out = std::move(chunks.front());
      } else {
        ASSIGN_OR_RETURN(*out, Concatenate(chunks));  // a batch across an epoch boundary
      }
      return true;
    }
    std::vector<Element> elements;
    while (static_cast<int64_t>(elements.size()) < batch_size_) {
      Element element;
      ASSIGN_OR_RETURN(const bool got, input_->GetNext(&element));
      if (!got) {
        done_ = true;
        input_.reset();
        break;
      }
      elements.push_back(std::move(element));
    }
    if (elements.empty()) return false;
    if (drop_remainder_ && static_cast<int64_t>(elements.size()) < batch_size_) return false;
    ASSIGN_OR_RETURN(*out, Stack(elements));
    return true;
  }

 private:
  // Joins row chunks (each [rows, ...], same row shape) along their first axis.
  static absl::StatusOr<Element> Concatenate(const std::vector<Element>& chunks) {
    Element batch;
    for (size_t c = 0; c < chunks[0].size(); ++c) {
      const Tensor& first = chunks[0][c];
      Dims dims = first.shape().dims();
      dims[0] = 0;
      for (const Element& chunk : chunks) dims[0] += chunk[c].shape().dim(0);
      ASSIGN_OR_RETURN(Tensor joined, NewHostTensor(first.dtype(), dims));
      char* dst = static_cast<char*>(joined.data());
      for (const Element& chunk : chunks) {
        const size_t bytes = chunk[c].byte_size();
        if (bytes > 0) std::memcpy(dst, chunk[c].data(), bytes);
        dst += bytes;
      }
      batch.push_back(std::move(joined));
    }
    return batch;
  }

  static absl::StatusOr<Element> Stack(const std::vector<Element>& elements) {
    const size_t components = elements[0].size();
    Element batch;
    batch.reserve(components);
    for (size_t c = 0; c < components; ++c) {
      const Tensor& first = elements[0][c];
      for (size_t e = 1; e < elements.size(); ++e) {
        const Tensor& t = elements[e][c];
        if (t.dtype() != first.dtype() || !(t.shape() == first.shape())) {
          return absl::InvalidArgumentError(absl::StrCat(
              "cannot batch component ", c, ": element ", e, " of the batch is ",
              DTypeName(t.dtype()), " ", t.shape().ToString(), " but element 0 is ",
              DTypeName(first.dtype()), " ", first.shape().ToString(),
              " (components must keep their dtype and shape to be batched)"));
        }
      }
      std::vector<int64_t> dims;
      dims.reserve(static_cast<size_t>(first.shape().rank()) + 1);
      dims.push_back(static_cast<int64_t>(elements.size()));
      dims.insert(dims.end(), first.shape().dims().begin(), first.shape().dims().end());
      ASSIGN_OR_RETURN(Tensor stacked, NewHostTensor(first.dtype(), dims));
      const size_t row_bytes = first.byte_size();
      char* dst = static_cast<char*>(stacked.data());
      for (size_t e = 0; e < elements.size(); ++e) {
        ASSIGN_OR_RETURN(Tensor host, elements[e][c].OnHost());
        if (row_bytes > 0) std::memcpy(dst + e * row_bytes, host.data(), row_bytes);
      }
      batch.push_back(std::move(stacked));
    }
    return batch;
  }

  std::unique_ptr<DatasetIterator> input_;
  int64_t batch_size_;
  bool drop_remainder_;
  bool done_ = false;
};

class BatchDataset : public Dataset {
 public:
  BatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

  int32_t num_components() const override { return input_->num_components(); }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t pass) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> input, input_->MakeIterator(pass));
    return std::unique_ptr<DatasetIterator>(
        new BatchIterator(std::move(input), batch_size_, drop_remainder_));
  }

  std::vector<std::string> SourceFiles() const override { return input_->SourceFiles(); }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    ASSIGN_OR_RETURN(DatasetPtr input, input_->WithSourceFiles(std::move(files)));
    return Batch(std::move(input), batch_size_, drop_remainder_);
  }

  int64_t batch_size() const override { return batch_size_; }

 private:
  DatasetPtr input_;
  int64_t batch_size_;
  bool drop_remainder_;
};

}  // namespace

absl::StatusOr<DatasetPtr> Batch(DatasetPtr input, int64_t batch_size, bool drop_remainder) {
  RETURN_IF_ERROR(CheckInput(input));
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size is ", batch_size, ": expected at least 1"));
  }
  return DatasetPtr(std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder));
}

}  // namespace distribute
