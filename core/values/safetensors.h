// The safetensors file format (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the raw little-endian tensor data. Checkpoints are written and read in it so
// that they are interchangeable with the Python ecosystem.
//
// Error codes when reading: kDataLoss for bytes that do not fit together (a truncated
// length prefix or header, JSON that does not parse, byte ranges outside the data section,
// overlapping or of the wrong size, and a data section the ranges do not tile exactly from
// byte 0 to the end of the file: a hole between tensors or bytes after the last one, which
// is what a header length off by a few bytes looks like); kInvalidArgument for a well-formed header that says
// something this library does not accept (a non-object header, missing or mistyped
// fields, an unsupported dtype such as "F8_E4M3", negative dimensions, duplicate or empty
// names). Every message starts with the file name.
//
// Supported dtypes: BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64. Files of other
// producers may also hold U16, U32, U64, C64, F8_E4M3, F8_E5M2 (and future ones), which
// the library has no dtype for; a read that names the tensors it wants skips every other
// tensor whatever its dtype, checking only its byte range (inside the data section, and
// part of the exact tiling above, so that a skipped tensor cannot hide a bad header).
#ifndef DISTRIBUTE_CORE_VALUES_SAFETENSORS_H_
#define DISTRIBUTE_CORE_VALUES_SAFETENSORS_H_

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor/tensor.h"

namespace distribute {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// OK when `name` can name a tensor in a file: not empty, not "__metadata__" (the header's
// reserved key) and valid UTF-8 (the header is JSON). Otherwise InvalidArgument saying
// which rule it breaks. Whatever is saved under a name (a variable) checks it up front.
absl::Status CheckTensorName(absl::string_view name);

// Writes `tensors` (host tensors with unique, non-empty, valid UTF-8 names) to `path`, data
// in the order given and "__metadata__": {"format": "distribute"}. The file is written
// beside `path` under a temporary name, flushed to disk and renamed over `path`, so `path`
// holds either its old contents or the complete new file, never a partial one.
absl::Status WriteSafetensors(const std::string& path, const NamedTensors& tensors);

// Reads a whole safetensors file into host tensors on CPU:0, in the order of their data
// offsets. With `only`, reads just the tensors named there (absent names are not an
// error here) and skips the others, whatever their dtype.
absl::StatusOr<NamedTensors> ReadSafetensors(const std::string& path,
                                             const std::set<std::string>* only = nullptr);

// The in-memory forms of the two above. `name_for_messages` (usually the file name) starts
// every error message.
absl::StatusOr<std::string> SerializeSafetensors(const NamedTensors& tensors);
absl::StatusOr<NamedTensors> ParseSafetensors(absl::string_view bytes,
                                              absl::string_view name_for_messages,
                                              const std::set<std::string>* only = nullptr);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_VALUES_SAFETENSORS_H_
