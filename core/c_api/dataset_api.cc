// C entry points for datasets: sources, transformations, properties, iterators.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/c_api/user_data.h"
#include "core/c_api/value_args.h"
#include "core/input/sources.h"
#include "core/input/transformations.h"
#include "core/util/status_macros.h"
#include "distribute/dataset.h"

using distribute::DatasetPtr;
using distribute::Element;
using distribute::Tensor;
using distribute::Value;
using distribute::c_api::CallbackStatus;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearLastError;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::HandleArray;
using distribute::c_api::NullArgument;
using distribute::c_api::TakeValues;
using distribute::c_api::UserData;

namespace {

dist_status_t NewDataset(const char* function, dist_dataset_t** out,
                         absl::FunctionRef<absl::StatusOr<DatasetPtr>()> make) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(DatasetPtr dataset, make());
    *out = new dist_dataset(std::move(dataset));
    return absl::OkStatus();
  });
}

// A transformation: (dataset, ..., out) -> new dataset.
dist_status_t Transform(const char* function, const dist_dataset_t* dataset, dist_dataset_t** out,
                        absl::FunctionRef<absl::StatusOr<DatasetPtr>(DatasetPtr)> transform) {
  return NewDataset(function, out, [&]() -> absl::StatusOr<DatasetPtr> {
    RETURN_IF_ERROR(CheckHandle(dataset, "dataset"));
    return transform(dataset->dataset);
  });
}

absl::StatusOr<std::vector<std::string>> Paths(const char* const* paths, int32_t count) {
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat("num_paths is ", count, ": expected >= 0"));
  }
  if (count > 0 && paths == nullptr) return NullArgument("paths");
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    if (paths[i] == nullptr) return NullArgument(absl::StrCat("paths[", i, "]"));
    names.emplace_back(paths[i]);
  }
  return names;
}

// Takes the values a callback stored in `slots` (all of them, even on failure, so none
// leaks) and turns them into tensors.
absl::Status TakeTensors(std::vector<dist_value_t*>& slots, absl::string_view who,
                         absl::string_view slot_name, dist_status_t code, Element* out) {
  std::vector<std::optional<Value>> taken;
  const absl::Status taking = TakeValues(std::span<dist_value_t*>(slots), slot_name, taken);
  if (code != DIST_OK) return CallbackStatus(code, who);
  if (!taking.ok()) return absl::InvalidArgumentError(absl::StrCat(who, ": ", taking.message()));
  out->clear();
  out->reserve(taken.size());
  for (size_t i = 0; i < taken.size(); ++i) {
    if (!taken[i].has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, " stored no value in ", slot_name, "[", i, "]"));
    }
    absl::StatusOr<const Tensor*> tensor = taken[i]->AsTensor();
    if (!tensor.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(who, " stored a non-tensor in ", slot_name,
                                                     "[", i, "]: ", tensor.status().message()));
    }
    out->push_back(**tensor);
  }
  return absl::OkStatus();
}

std::shared_ptr<const distribute::GeneratorFn> WrapGenerator(dist_generator_fn fn,
                                                             int32_t num_components,
                                                             std::shared_ptr<UserData> user_data) {
  const size_t count = num_components > 0 ? static_cast<size_t>(num_components) : 0;
  return std::make_shared<const distribute::GeneratorFn>(
      [fn, count, user_data = std::move(user_data)](int64_t index,
                                                    Element* out) -> absl::StatusOr<bool> {
        std::vector<dist_value_t*> slots(count, nullptr);
        int32_t end = 0;
        ClearLastError();
        const dist_status_t code = fn(index, slots.data(), static_cast<int32_t>(count), &end,
                                      user_data->get());
        const std::string who = absl::StrCat("generator at index ", index);
        if (code == DIST_OK && end != 0) {
          // Values stored next to the end flag are dropped, not leaked.
          std::vector<std::optional<Value>> dropped;
          const absl::Status taking = TakeValues(std::span<dist_value_t*>(slots), "components", dropped);
          if (!taking.ok()) return absl::InvalidArgumentError(absl::StrCat(who, ": ", taking.message()));
          return false;
        }
        RETURN_IF_ERROR(TakeTensors(slots, who, "components", code, out));
        return true;
      });
}

std::shared_ptr<const distribute::MapFn> WrapMap(dist_map_fn fn, int32_t num_outputs,
                                                 std::shared_ptr<UserData> user_data) {
  const size_t count = num_outputs > 0 ? static_cast<size_t>(num_outputs) : 0;
  return std::make_shared<const distribute::MapFn>(
      [fn, count, user_data = std::move(user_data)](const Element& in,
                                                    Element* out) -> absl::Status {
        std::vector<Value> inputs;
        inputs.reserve(in.size());
        for (const Tensor& tensor : in) inputs.emplace_back(tensor);
        HandleArray handles(inputs);
        std::vector<dist_value_t*> slots(count, nullptr);
        ClearLastError();
        const dist_status_t code = fn(handles.data(), handles.size(), slots.data(),
                                      static_cast<int32_t>(count), user_data->get());
        return TakeTensors(slots, "map fn", "outputs", code, out);
      });
}

}  // namespace

extern "C" {

dist_status_t dist_dataset_from_tensor_slices(const dist_value_t* const* components,
                                              int32_t num_components, dist_dataset_t** out) {
  return NewDataset(__func__, out, [&]() -> absl::StatusOr<DatasetPtr> {
    if (num_components < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_components is ", num_components, ": expected >= 1"));
    }
    ASSIGN_OR_RETURN(std::vector<Value> values,
                     distribute::c_api::ValuesOf(components, num_components, "components"));
    std::vector<Tensor> tensors;
    tensors.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      absl::StatusOr<const Tensor*> tensor = values[i].AsTensor();
      if (!tensor.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("components[", i, "]: ", tensor.status().message()));
      }
      tensors.push_back(**tensor);
    }
    return distribute::FromTensorSlices(std::move(tensors));
  });
}

dist_status_t dist_dataset_range(int64_t start, int64_t stop, int64_t step, dist_dataset_t** out) {
  return NewDataset(__func__, out, [&] { return distribute::Range(start, stop, step); });
}

dist_status_t dist_dataset_from_generator(dist_generator_fn fn, void* user_data,
                                          dist_free_fn free_fn, int32_t num_components,
                                          dist_dataset_t** out) {
  auto owner = std::make_shared<UserData>(user_data, free_fn);
  const dist_status_t status = NewDataset(__func__, out, [&]() -> absl::StatusOr<DatasetPtr> {
    if (fn == nullptr) return NullArgument("fn");
    return distribute::FromGenerator(num_components, WrapGenerator(fn, num_components, owner));
  });
  if (status != DIST_OK) owner->Disarm();
  return status;
}

dist_status_t dist_dataset_from_text_files(const char* const* paths, int32_t num_paths,
                                           dist_dataset_t** out) {
  return NewDataset(__func__, out, [&]() -> absl::StatusOr<DatasetPtr> {
    ASSIGN_OR_RETURN(std::vector<std::string> files, Paths(paths, num_paths));
    return distribute::TextLines(std::move(files));
  });
}

dist_status_t dist_dataset_from_fixed_length_records(const char* const* paths, int32_t num_paths,
                                                     int64_t record_bytes, int64_t header_bytes,
                                                     int64_t footer_bytes, dist_dataset_t** out) {
  return NewDataset(__func__, out, [&]() -> absl::StatusOr<DatasetPtr> {
    ASSIGN_OR_RETURN(std::vector<std::string> files, Paths(paths, num_paths));
    return distribute::FixedLengthRecords(std::move(files), record_bytes, header_bytes,
                                          footer_bytes);
  });
}

dist_status_t dist_dataset_from_tfrecord_files(const char* const* paths, int32_t num_paths,
                                               dist_dataset_t** out) {
  return NewDataset(__func__, out, [&]() -> absl::StatusOr<DatasetPtr> {
    ASSIGN_OR_RETURN(std::vector<std::string> files, Paths(paths, num_paths));
    return distribute::TFRecords(std::move(files));
  });
}

dist_status_t dist_dataset_from_compressed_tfrecord_files(const char* const* paths,
                                                          int32_t num_paths,
                                                          dist_compression_t compression,
                                                          dist_dataset_t** out) {
  return NewDataset(__func__, out, [&]() -> absl::StatusOr<DatasetPtr> {
    ASSIGN_OR_RETURN(const distribute::Compression kind, distribute::CompressionFromInt(compression));
    ASSIGN_OR_RETURN(std::vector<std::string> files, Paths(paths, num_paths));
    return distribute::TFRecords(std::move(files), kind);
  });
}

dist_status_t dist_dataset_batch(const dist_dataset_t* dataset, int64_t batch_size,
                                 int32_t drop_remainder, dist_dataset_t** out) {
  return Transform(__func__, dataset, out, [&](DatasetPtr input) {
    return distribute::Batch(std::move(input), batch_size, drop_remainder != 0);
  });
}

dist_status_t dist_dataset_shard(const dist_dataset_t* dataset, int64_t num_shards, int64_t index,
                                 dist_dataset_t** out) {
  return Transform(__func__, dataset, out, [&](DatasetPtr input) {
    return distribute::Shard(std::move(input), num_shards, index);
  });
}

dist_status_t dist_dataset_repeat(const dist_dataset_t* dataset, int64_t count,
                                  dist_dataset_t** out) {
  return Transform(__func__, dataset, out, [&](DatasetPtr input) {
    return distribute::Repeat(std::move(input), count);
  });
}

dist_status_t dist_dataset_shuffle(const dist_dataset_t* dataset, int64_t buffer_size,
                                   uint64_t seed, dist_dataset_t** out) {
  return Transform(__func__, dataset, out, [&](DatasetPtr input) {
    return distribute::Shuffle(std::move(input), buffer_size, seed);
  });
}

static_assert(DIST_AUTOTUNE == distribute::kAutotune, "the C and core AUTOTUNE must agree");

dist_status_t dist_dataset_map(const dist_dataset_t* dataset, dist_map_fn fn, void* user_data,
                               dist_free_fn free_fn, int32_t num_outputs, int32_t num_parallel_calls,
                               dist_dataset_t** out) {
  auto owner = std::make_shared<UserData>(user_data, free_fn);
  const dist_status_t status = Transform(__func__, dataset, out, [&](DatasetPtr input)
                                             -> absl::StatusOr<DatasetPtr> {
    if (fn == nullptr) return NullArgument("fn");
    return distribute::Map(std::move(input), WrapMap(fn, num_outputs, owner), num_outputs,
                           num_parallel_calls);
  });
  if (status != DIST_OK) owner->Disarm();
  return status;
}

dist_status_t dist_dataset_prefetch(const dist_dataset_t* dataset, int64_t buffer_size,
                                    dist_dataset_t** out) {
  return Transform(__func__, dataset, out, [&](DatasetPtr input) {
    return distribute::Prefetch(std::move(input), buffer_size);
  });
}

dist_status_t dist_dataset_take(const dist_dataset_t* dataset, int64_t count,
                                dist_dataset_t** out) {
  return Transform(__func__, dataset, out, [&](DatasetPtr input) {
    return distribute::Take(std::move(input), count);
  });
}

dist_status_t dist_dataset_skip(const dist_dataset_t* dataset, int64_t count,
                                dist_dataset_t** out) {
  return Transform(__func__, dataset, out, [&](DatasetPtr input) {
    return distribute::Skip(std::move(input), count);
  });
}

dist_status_t dist_dataset_num_components(const dist_dataset_t* dataset, int32_t* out_count) {
  return distribute::c_api::Accessor(
      __func__, dataset, "dataset", out_count, "out_count",
      [](const dist_dataset& d, int32_t& count) {
        count = d.dataset->num_components();
        return absl::OkStatus();
      });
}

void dist_dataset_destroy(dist_dataset_t* dataset) { DestroyHandle(dataset); }

dist_status_t dist_dataset_make_iterator(const dist_dataset_t* dataset, dist_iterator_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(dataset, "dataset"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::unique_ptr<distribute::ValueIterator> iterator,
                     distribute::IterateDataset(dataset->dataset));
    *out = new dist_iterator(std::move(iterator));
    return absl::OkStatus();
  });
}

}  // extern "C"
