// The input pipeline's sources: datasets that produce elements from host tensors, an
// integer range, a generator callback, or files.
#ifndef DISTRIBUTE_CORE_INPUT_SOURCES_H_
#define DISTRIBUTE_CORE_INPUT_SOURCES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/input/dataset.h"
#include "core/input/inflating_reader.h"
#include "core/tensor/tensor.h"

namespace distribute {

// Element i is (components[0][i], components[1][i], ...): every component has rank >= 1
// and the same first dimension. Host components are shared (element tensors view their
// memory); device components are copied to the host once, here.
absl::StatusOr<DatasetPtr> FromTensorSlices(std::vector<Tensor> components);

// start, start + step, ... up to (excluding) stop, as int64 scalars; step != 0.
absl::StatusOr<DatasetPtr> Range(int64_t start, int64_t stop, int64_t step);

// Stores element `index` in *out (cleared before the call) and returns true, or returns
// false at the end. Calls are serialized per dataset, and each iterator starts at index 0.
using GeneratorFn = std::function<absl::StatusOr<bool>(int64_t index, Element* out)>;
absl::StatusOr<DatasetPtr> FromGenerator(int32_t num_components,
                                         std::shared_ptr<const GeneratorFn> fn);

// The lines of text files without "\n" / "\r\n", each a uint8 [length] tensor.
absl::StatusOr<DatasetPtr> TextLines(std::vector<std::string> files);

// header_bytes, then records of record_bytes, then footer_bytes per file; each record a
// uint8 [record_bytes] tensor.
absl::StatusOr<DatasetPtr> FixedLengthRecords(std::vector<std::string> files, int64_t record_bytes,
                                              int64_t header_bytes, int64_t footer_bytes);

// Uncompressed TFRecord files; a corrupt or truncated record is DataLoss naming the file
// and the record's byte offset (and, for a file that starts like a compressed one, saying
// so).
absl::StatusOr<DatasetPtr> TFRecords(std::vector<std::string> files);
// TFRecord files written with TFRecordOptions(compression_type=ZLIB or GZIP) (or NONE);
// offsets in errors count decompressed bytes.
absl::StatusOr<DatasetPtr> TFRecords(std::vector<std::string> files, Compression compression);

// Writes `records` as an uncompressed TFRecord file (replacing it).
absl::Status WriteTFRecordFile(const std::string& path, const std::vector<std::string>& records);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_SOURCES_H_
