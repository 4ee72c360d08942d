#include "core/input/distribution.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/input/transformations.h"
#include "core/tensor/buffer.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

absl::StatusOr<DatasetPtr> FileShard(const DatasetPtr& dataset, std::vector<std::string> files,
                                     int32_t num_input_pipelines, int32_t input_pipeline_id) {
  std::vector<std::string> mine;
  for (size_t i = static_cast<size_t>(input_pipeline_id); i < files.size();
       i += static_cast<size_t>(num_input_pipelines)) {
    mine.push_back(std::move(files[i]));
  }
  return dataset->WithSourceFiles(std::move(mine));
}

absl::StatusOr<Tensor> ViewRows(const Tensor& tensor, const Shape& shape, size_t offset,
                                size_t bytes, const DeviceSpec& device) {
  std::shared_ptr<Buffer> buffer = Buffer::Borrow(
      device, static_cast<char*>(tensor.data()) + offset, bytes,
      [keep_alive = tensor.buffer()]() mutable { keep_alive.reset(); });
  return Tensor::FromBuffer(tensor.dtype(), shape, std::move(buffer));
}

}  // namespace

absl::StatusOr<DatasetPtr> AutoShard(DatasetPtr dataset, AutoShardPolicy policy,
                                     int32_t num_input_pipelines, int32_t input_pipeline_id) {
  if (dataset == nullptr) return absl::InvalidArgumentError("dataset is null");
  if (num_input_pipelines < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_input_pipelines is ", num_input_pipelines, ": expected >= 1"));
  }
  if (input_pipeline_id < 0 || input_pipeline_id >= num_input_pipelines) {
    return absl::InvalidArgumentError(absl::StrCat("input_pipeline_id is ", input_pipeline_id,
                                                   ": expected 0 <= id < ", num_input_pipelines));
  }
  if (num_input_pipelines == 1 || policy == AutoShardPolicy::kOff) return dataset;
  const int32_t n = num_input_pipelines;
  switch (policy) {
    case AutoShardPolicy::kOff:
      return dataset;
    case AutoShardPolicy::kData:
      return Shard(std::move(dataset), n, input_pipeline_id);
    case AutoShardPolicy::kFile: {
      std::vector<std::string> files = dataset->SourceFiles();
      if (files.size() < static_cast<size_t>(n)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "FILE auto-sharding needs at least ", n, " files (one per input pipeline), the dataset reads ",
            files.size()));
      }
      return FileShard(dataset, std::move(files), n, input_pipeline_id);
    }
    case AutoShardPolicy::kAuto: {
      std::vector<std::string> files = dataset->SourceFiles();
      if (files.size() >= static_cast<size_t>(n)) {
        return FileShard(dataset, std::move(files), n, input_pipeline_id);
      }
      return Shard(std::move(dataset), n, input_pipeline_id);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("auto-shard policy ", static_cast<int32_t>(policy), " is unknown"));
}

int64_t SplitBatchSize(int64_t global_batch_size, int32_t num_replicas) {
  if (num_replicas < 1 || global_batch_size <= 0) return 0;
  return (global_batch_size + num_replicas - 1) / num_replicas;
}

absl::StatusOr<int64_t> BatchDimension(const Element& element) {
  int64_t rows = -1;
  for (size_t c = 0; c < element.size(); ++c) {
    const Shape& shape = element[c].shape();
    if (shape.rank() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "component ", c, " of the element is a scalar: distributed elements must be batches "
          "(rank >= 1) to split along their first axis"));
    }
    if (rows < 0) {
      rows = shape.dim(0);
    } else if (shape.dim(0) != rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "components of the element have different first dimensions: component 0 has ", rows,
          " rows, component ", c, " has ", shape.dim(0), " (shape ", shape.ToString(), ")"));
    }
  }
  return rows < 0 ? 0 : rows;
}

DeviceSpec BatchPlacement(const DeviceSpec& worker, const DeviceSpec& source,
                          bool fetch_to_device) {
  if (worker.type == DeviceType::kCpu || fetch_to_device) return worker;
  return source;
}

absl::StatusOr<Tensor> SliceRows(const Tensor& tensor, int64_t begin, int64_t end,
                                 const DeviceSpec& place) {
  const Shape& source_shape = tensor.shape();
  if (source_shape.rank() < 1) {
    return absl::InvalidArgumentError("cannot slice the rows of a scalar tensor");
  }
  const int64_t rows = source_shape.dim(0);
  if (begin < 0 || begin > end || end > rows) {
    return absl::InvalidArgumentError(absl::StrCat("rows [", begin, ", ", end,
                                                   ") are not inside a tensor of ", rows, " rows"));
  }
  if (begin == end) return EmptyBatchLike(tensor, place);
  Dims dims = source_shape.dims();
  dims[0] = end - begin;
  ASSIGN_OR_RETURN(Shape shape, Shape::Make(dims));
  const size_t row_bytes = tensor.byte_size() / static_cast<size_t>(rows);
  const size_t offset = static_cast<size_t>(begin) * row_bytes;
  const size_t bytes = static_cast<size_t>(end - begin) * row_bytes;
  const DeviceSpec& source = tensor.device();
  if ((source.type == DeviceType::kCpu && place.type == DeviceType::kCpu) || source == place) {
    return ViewRows(tensor, shape, offset, bytes, place);
  }
  ASSIGN_OR_RETURN(Tensor view, ViewRows(tensor, shape, offset, bytes, source));
  return view.CopyTo(place.ToString());
}

absl::StatusOr<Tensor> PlaceTensor(const Tensor& tensor, const DeviceSpec& place) {
  const DeviceSpec& source = tensor.device();
  if (source == place) return tensor;
  if (source.type == DeviceType::kCpu && place.type == DeviceType::kCpu) {
    return ViewRows(tensor, tensor.shape(), 0, tensor.byte_size(), place);
  }
  return tensor.CopyTo(place.ToString());
}

absl::StatusOr<Tensor> EmptyBatchLike(const Tensor& like, const DeviceSpec& place) {
  if (like.shape().rank() < 1) {
    return absl::InvalidArgumentError("a scalar component has no empty batch");
  }
  Dims dims = like.shape().dims();
  dims[0] = 0;
  const std::string device = place.ToString();
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(like.dtype());
  desc.dims = dims;
  desc.byte_size = 0;
  desc.device = device;
  return Tensor::Create(desc, nullptr);
}

absl::StatusOr<std::vector<Element>> SplitBatch(const Element& batch, int64_t per_replica,
                                                std::span<const DeviceSpec> workers,
                                                bool fetch_to_device, int32_t first_replica,
                                                int32_t replicas_in_sync, PartialBatchSplit partial) {
  if (workers.empty()) return absl::InvalidArgumentError("no replicas to split a batch across");
  ASSIGN_OR_RETURN(const int64_t rows, BatchDimension(batch));
  const auto replicas = static_cast<int32_t>(workers.size());
  const int32_t in_sync = replicas_in_sync > 0 ? replicas_in_sync : replicas;
  int64_t step = per_replica;
  const bool even_partial = partial == PartialBatchSplit::kEven && rows < step * in_sync;
  if (step < 1 || rows > step * in_sync || even_partial) step = SplitBatchSize(rows, in_sync);
  std::vector<Element> by_replica(workers.size());
  for (int32_t r = 0; r < replicas; ++r) {
    const int64_t begin = std::min(rows, (first_replica + r) * step);
    const int64_t end = std::min(rows, begin + step);
    Element& mine = by_replica[static_cast<size_t>(r)];
    mine.reserve(batch.size());
    for (const Tensor& component : batch) {
      const DeviceSpec place =
          BatchPlacement(workers[static_cast<size_t>(r)], component.device(), fetch_to_device);
      ASSIGN_OR_RETURN(Tensor slice, SliceRows(component, begin, end, place));
      mine.push_back(std::move(slice));
    }
  }
  return by_replica;
}

absl::StatusOr<std::vector<Element>> PadMissingReplicas(
    std::vector<std::optional<Element>> by_replica, std::span<const DeviceSpec> workers,
    bool fetch_to_device) {
  if (by_replica.size() != workers.size()) {
    return absl::InternalError(absl::StrCat("PadMissingReplicas: ", by_replica.size(),
                                            " elements for ", workers.size(), " replicas"));
  }
  const Element* like = nullptr;
  for (const std::optional<Element>& element : by_replica) {
    if (element.has_value()) {
      like = &*element;
      break;
    }
  }
  if (like == nullptr) return absl::FailedPreconditionError("no replica has an element to pad like");
  std::vector<Element> padded(by_replica.size());
  for (size_t r = 0; r < by_replica.size(); ++r) {
    if (by_replica[r].has_value()) continue;
    Element& empty = padded[r];
    for (size_t c = 0; c < like->size(); ++c) {
      const Tensor& model = (*like)[c];
      if (model.shape().rank() < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replica ", r, " has no element left while others do, and component ", c,
            " is a scalar: only batches (rank >= 1) can be padded with an empty batch"));
      }
      ASSIGN_OR_RETURN(Tensor batch,
                       EmptyBatchLike(model, BatchPlacement(workers[r], model.device(),
                                                            fetch_to_device)));
      empty.push_back(std::move(batch));
    }
  }
  for (size_t r = 0; r < by_replica.size(); ++r) {
    if (by_replica[r].has_value()) padded[r] = std::move(*by_replica[r]);
  }
  return padded;
}

absl::StatusOr<std::vector<Value>> PerReplicaValues(std::vector<Element> by_replica,
                                                    int32_t num_components, bool always_wrap) {
  for (size_t r = 0; r < by_replica.size(); ++r) {
    if (by_replica[r].size() != static_cast<size_t>(num_components)) {
      return absl::InvalidArgumentError(absl::StrCat("replica ", r, "'s element has ",
                                                     by_replica[r].size(), " components, expected ",
                                                     num_components));
    }
  }
  std::vector<Value> values;
  values.reserve(static_cast<size_t>(num_components));
  for (size_t c = 0; c < static_cast<size_t>(num_components); ++c) {
    if (by_replica.size() == 1 && !always_wrap) {
      values.emplace_back(std::move(by_replica.front()[c]));
      continue;
    }
    std::vector<Tensor> tensors;
    tensors.reserve(by_replica.size());
    for (Element& element : by_replica) tensors.push_back(std::move(element[c]));
    ASSIGN_OR_RETURN(Value value, Value::PerReplica(std::move(tensors)));
    values.push_back(std::move(value));
  }
  return values;
}

}  // namespace distribute
