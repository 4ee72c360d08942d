// One pass over a dataset as values, whichever kind of dataset it came from: a plain
// dataset's elements are tensors, a distributed dataset's are PerReplica values (one per
// component). The C API's dist_iterator_t is one of these, so the shim never asks which.
#ifndef DISTRIBUTE_CORE_INPUT_VALUE_ITERATOR_H_
#define DISTRIBUTE_CORE_INPUT_VALUE_ITERATOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/input/dataset.h"
#include "core/input/distributed_dataset.h"
#include "core/values/value.h"

namespace distribute {

class ValueIterator {
 public:
  virtual ~ValueIterator() = default;
  // The next element in *out, one value per component: true, or false at the end and at
  // every later call. An error leaves the iterator destroyable.
  virtual absl::StatusOr<bool> GetNext(std::vector<Value>* out) = 0;
  virtual int32_t num_components() const = 0;
};

// A pass over a plain dataset (kept alive by the iterator).
absl::StatusOr<std::unique_ptr<ValueIterator>> IterateDataset(DatasetPtr dataset);

// A pass over a distributed dataset (whose iterators keep their sources alive).
absl::StatusOr<std::unique_ptr<ValueIterator>> IterateDistributed(const DistributedDataset& dataset);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_VALUE_ITERATOR_H_
