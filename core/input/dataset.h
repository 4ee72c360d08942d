// The input pipeline's two interfaces: a Dataset is an immutable description of a sequence
// of elements (each a fixed number of tensors); an iterator is one pass over it.
// Transformations hold their input dataset by shared_ptr, so pipelines share structure
// and any handle may be released first.
#ifndef DISTRIBUTE_CORE_INPUT_DATASET_H_
#define DISTRIBUTE_CORE_INPUT_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor/tensor.h"

namespace distribute {

using Element = std::vector<Tensor>;

class DatasetIterator {
 public:
  virtual ~DatasetIterator() = default;
  // The next element in *out (replacing its contents): true, or false at the end (and at
  // every later call). An error leaves the iterator destroyable.
  virtual absl::StatusOr<bool> GetNext(Element* out) = 0;

  // Sources that hold their elements as rows of larger tensors hand out up to `max_rows`
  // next elements already stacked into one batch (views of the rows, no copy): the number
  // of rows given (0 at the end). -1 when this iterator cannot; Batch then stacks element
  // by element.
  virtual absl::StatusOr<int64_t> GetNextRows(int64_t max_rows, Element* out) {
    (void)max_rows;
    (void)out;
    return -1;
  }
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int32_t num_components() const = 0;

  // One pass. `pass` numbers the passes a repeat makes over this dataset (0 otherwise);
  // shuffles derive their order from it.
  virtual absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t pass) const = 0;

  // The files the pipeline's source reads, in order; empty when it reads no files.
  virtual std::vector<std::string> SourceFiles() const = 0;

  // The same pipeline over another list of files (FILE auto-sharding): each
  // transformation rebuilds itself on its rebuilt input. FailedPrecondition when the
  // source reads no files.
  virtual absl::StatusOr<std::shared_ptr<const Dataset>> WithSourceFiles(
      std::vector<std::string> files) const = 0;

  // The batch size when the last transformation is a batch, else 0 (distribution uses it
  // to know the global batch size before the first element).
  virtual int64_t batch_size() const { return 0; }
};

using DatasetPtr = std::shared_ptr<const Dataset>;

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_DATASET_H_
