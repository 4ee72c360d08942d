#include "core/values/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <optional>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/device/device_spec.h"
#include "core/tensor/buffer.h"
#include "core/util/errno_status.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"
#include "core/util/temp_file.h"
#include "nlohmann/json.hpp"

namespace distribute {
namespace {

// Tensor data is copied between memory and file as is; safetensors stores it little-endian.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

using Json = nlohmann::ordered_json;  // keeps the header in file order

constexpr size_t kLengthPrefixBytes = 8;
constexpr size_t kHeaderAlignment = 8;
constexpr char kMetadataKey[] = "__metadata__";

struct DTypeEntry {
  DType dtype;
  const char* name;
};

constexpr DTypeEntry kDTypes[] = {
    {DType::kBool, "BOOL"}, {DType::kUInt8, "U8"},      {DType::kInt8, "I8"},
    {DType::kInt16, "I16"}, {DType::kInt32, "I32"},     {DType::kInt64, "I64"},
    {DType::kFloat16, "F16"}, {DType::kBFloat16, "BF16"}, {DType::kFloat32, "F32"},
    {DType::kFloat64, "F64"},
};

const char* SafetensorsDTypeName(DType dtype) {
  for (const DTypeEntry& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.name;
  }
  return "invalid";
}

std::optional<DType> DTypeFromSafetensorsName(const std::string& name) {
  for (const DTypeEntry& entry : kDTypes) {
    if (name == entry.name) return entry.dtype;
  }
  return std::nullopt;
}

std::string KnownDTypeNames() {
  std::vector<const char*> names;
  for (const DTypeEntry& entry : kDTypes) names.push_back(entry.name);
  return absl::StrJoin(names, ", ");
}

bool IsHost(const Tensor& tensor) {
  return tensor.device().type == DeviceType::kCpu ||
         tensor.device().type == DeviceType::kUnspecified;
}

bool IsValidUtf8(absl::string_view name) {
  try {
    (void)nlohmann::json(std::string(name)).dump();  // dump() rejects ill-formed UTF-8
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// The 8-byte length prefix and the padded JSON header for `tensors`, whose data follows
// in order. `context` starts each error message.
absl::StatusOr<std::string> BuildHeader(const NamedTensors& tensors, absl::string_view context) {
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, tensor] = tensors[i];
    if (absl::Status valid = CheckTensorName(name); !valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": tensor #", i, " has an invalid name: ", valid.message()));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": two tensors are named ", Quoted(name)));
    }
    if (!IsHost(tensor)) {
      return absl::InvalidArgumentError(absl::StrCat(
          context, ": tensor ", Quoted(name), " is on ", tensor.device_name(),
          ": copy it to the host (CopyTo(\"CPU:0\")) before saving"));
    }
  }

  Json header = Json::object();
  header[kMetadataKey] = Json::object({{"format", "distribute"}});
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const uint64_t end = offset + tensor.byte_size();
    header[name] = Json::object({{"dtype", SafetensorsDTypeName(tensor.dtype())},
                                 {"shape", std::vector<int64_t>(tensor.shape().dims().begin(), tensor.shape().dims().end())},
                                 {"data_offsets", Json::array({offset, end})}});
    offset = end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const std::exception& e) {  // names were checked above; this is a safety net
    return absl::InternalError(absl::StrCat(context, ": encoding the header failed: ", e.what()));
  }
  // Padding keeps the data section 8-byte aligned in the file, as the reference writer does.
  text.append((kHeaderAlignment - text.size() % kHeaderAlignment) % kHeaderAlignment, ' ');

  std::string out(kLengthPrefixBytes, '\0');
  uint64_t length = text.size();
  for (size_t i = 0; i < kLengthPrefixBytes; ++i) {
    out[i] = static_cast<char>(length & 0xff);
    length >>= 8;
  }
  out += text;
  return out;
}

// ---- Parsing ----

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

std::string OffsetsText(uint64_t begin, uint64_t end) {
  return absl::StrCat("[", begin, ", ", end, "]");
}

absl::StatusOr<Shape> ParseShape(const Json& value, const std::string& tensor) {
  if (!value.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(tensor, " has a \"shape\" that is a JSON ", value.type_name(),
                     ", expected an array of non-negative integers"));
  }
  if (value.size() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(absl::StrCat(tensor, " has rank ", value.size(),
                                                   ", more than the supported ", kMaxRank));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < value.size(); ++i) {
    const Json& dim = value[i];
    if (dim.is_number_unsigned()) {
      const uint64_t size = dim.get<uint64_t>();
      if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError(
            absl::StrCat(tensor, " has shape[", i, "] = ", size, ", which is too large"));
      }
      dims.push_back(static_cast<int64_t>(size));
    } else if (dim.is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(
          tensor, " has shape[", i, "] = ", dim.get<int64_t>(), ": dimensions must be >= 0"));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(tensor, " has shape[", i, "] that is a JSON ",
                                                     dim.type_name(),
                                                     ", expected a non-negative integer"));
    }
  }
  absl::StatusOr<Shape> shape = Shape::Make(dims);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(tensor, " has an invalid shape: ", shape.status().message()));
  }
  return shape;
}

// The byte range of a tensor no one asked for: what the overlap check needs, whatever
// its dtype and shape say.
absl::StatusOr<Entry> ParseSkippedEntry(absl::string_view file, const std::string& name,
                                        const Json& value, uint64_t data_size) {
  const std::string tensor = absl::StrCat(file, ": tensor ", Quoted(name));
  const Json* offsets = nullptr;
  if (value.is_object()) {
    const auto it = value.find("data_offsets");
    if (it != value.end()) offsets = &*it;
  }
  if (offsets == nullptr || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    return absl::InvalidArgumentError(absl::StrCat(
        tensor, " has no \"data_offsets\" pair of non-negative integers [begin, end]"));
  }
  const uint64_t begin = (*offsets)[0].get<uint64_t>();
  const uint64_t end = (*offsets)[1].get<uint64_t>();
  if (begin > end || end > data_size) {
    return absl::DataLossError(absl::StrCat(tensor, " has data_offsets ", OffsetsText(begin, end),
                                            " outside the ", data_size, "-byte data section"));
  }
  return Entry{name, DType::kUInt8, Shape(), begin, end};
}

absl::StatusOr<Entry> ParseEntry(absl::string_view file, const std::string& name, const Json& value,
                                 uint64_t data_size) {
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": a tensor has an empty name"));
  }
  const std::string tensor = absl::StrCat(file, ": tensor ", Quoted(name));
  if (!value.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(tensor, " is a JSON ", value.type_name(),
                     ", expected an object with \"dtype\", \"shape\" and \"data_offsets\""));
  }

  const auto dtype_it = value.find("dtype");
  if (dtype_it == value.end() || !dtype_it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(tensor, " has no \"dtype\" string"));
  }
  const std::string& dtype_name = dtype_it->get_ref<const std::string&>();
  const std::optional<DType> dtype = DTypeFromSafetensorsName(dtype_name);
  if (!dtype.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(tensor, " has dtype ", Quoted(dtype_name),
                     ", which is not supported: expected one of ", KnownDTypeNames()));
  }

  const auto shape_it = value.find("shape");
  if (shape_it == value.end()) {
    return absl::InvalidArgumentError(absl::StrCat(tensor, " has no \"shape\""));
  }
  ASSIGN_OR_RETURN(Shape shape, ParseShape(*shape_it, tensor));

  const auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned()) {
    return absl::InvalidArgumentError(absl::StrCat(
        tensor, " has no \"data_offsets\" pair of non-negative integers [begin, end]"));
  }
  const uint64_t begin = (*offsets_it)[0].get<uint64_t>();
  const uint64_t end = (*offsets_it)[1].get<uint64_t>();
  if (begin > end) {
    return absl::DataLossError(absl::StrCat(tensor, " has data_offsets ", OffsetsText(begin, end),
                                            ": begin is after end"));
  }
  if (end > data_size) {
    return absl::DataLossError(absl::StrCat(tensor, " has data_offsets ", OffsetsText(begin, end),
                                            " but the data section is only ", data_size,
                                            " bytes (is the file truncated?)"));
  }
  // Shape::Make bounds num_elements so that this product cannot overflow.
  const uint64_t needed = static_cast<uint64_t>(shape.num_elements()) * DTypeSize(*dtype);
  if (end - begin != needed) {
    return absl::DataLossError(absl::StrCat(
        tensor, " has data_offsets ", OffsetsText(begin, end), " but a ", DTypeName(*dtype),
        " tensor of shape ", shape.ToString(), " needs ", needed, " bytes"));
  }
  return Entry{name, *dtype, std::move(shape), begin, end};
}

// The format requires the tensors' byte ranges, in order, to tile the data section: the
// first starts at 0, each starts where the one before it ends, the last ends at the end
// of the file. A hole or trailing bytes mean the header and the data disagree (a header
// length one byte short shifts every tensor by one byte): DataLoss rather than tensors
// read from the wrong place. Sorts `entries` into data order; skipped tensors count too.
absl::Status CheckCoverage(absl::string_view file, std::vector<Entry>& entries,
                           uint64_t data_size) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;  // the data section up to here belongs to the tensors before
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    if (entry.begin < covered) {
      return absl::DataLossError(absl::StrCat(
          file, ": tensors ", Quoted(previous->name), " at ",
          OffsetsText(previous->begin, previous->end), " and ", Quoted(entry.name), " at ",
          OffsetsText(entry.begin, entry.end), " overlap"));
    }
    if (entry.begin > covered) {
      return absl::DataLossError(absl::StrCat(
          file, ": bytes [", covered, ", ", entry.begin, ") of the data section belong to no "
          "tensor (tensor ", Quoted(entry.name), " has data_offsets ",
          OffsetsText(entry.begin, entry.end), "): the data section must be covered without "
          "holes"));
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != data_size) {
    return absl::DataLossError(absl::StrCat(
        file, ": the data section is ", data_size, " bytes but its tensors cover only the "
        "first ", covered, ": the header length is wrong or bytes follow the last tensor"));
  }
  return absl::OkStatus();
}

absl::StatusOr<NamedTensors> ParseOrError(absl::string_view bytes, absl::string_view file,
                                          const std::set<std::string>* only) {
  if (bytes.size() < kLengthPrefixBytes) {
    return absl::DataLossError(absl::StrCat(file, ": the file is ", bytes.size(),
                                            " bytes, too short for the 8-byte header length"));
  }
  uint64_t header_size = 0;
  for (size_t i = 0; i < kLengthPrefixBytes; ++i) {
    header_size |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  const uint64_t after_prefix = bytes.size() - kLengthPrefixBytes;
  if (header_size > after_prefix) {
    return absl::DataLossError(absl::StrCat(
        file, ": the header length is ", header_size, " bytes but only ", after_prefix,
        " bytes follow the length prefix (truncated, or not a safetensors file)"));
  }
  const char* header_begin = bytes.data() + kLengthPrefixBytes;
  const absl::string_view data = bytes.substr(kLengthPrefixBytes + header_size);

  // The parsed object keeps only the last of repeated keys; catch repeats while parsing.
  std::unordered_set<std::string> names;
  std::string repeated_name;
  bool repeated = false;
  const Json::parser_callback_t note_repeats = [&](int depth, Json::parse_event_t event,
                                                   Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key && !repeated && parsed.is_string()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!names.insert(key).second) {
        repeated = true;
        repeated_name = key;
      }
    }
    return true;
  };
  const Json header = Json::parse(header_begin, header_begin + header_size, note_repeats,
                                  /*allow_exceptions=*/false);
  if (header.is_discarded()) {
    return absl::DataLossError(
        absl::StrCat(file, ": the ", header_size, "-byte header is not valid JSON"));
  }
  if (!header.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": the header is a JSON ",
                                                   header.type_name(), ", expected an object"));
  }
  if (repeated) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": the header names tensor ", Quoted(repeated_name), " twice"));
  }

  std::vector<Entry> entries;
  std::set<std::string> skipped;
  for (const auto& item : header.items()) {
    if (item.key() == kMetadataKey) continue;
    if (only != nullptr && only->count(item.key()) == 0) {
      ASSIGN_OR_RETURN(Entry entry, ParseSkippedEntry(file, item.key(), item.value(), data.size()));
      skipped.insert(entry.name);
      entries.push_back(std::move(entry));
      continue;
    }
    ASSIGN_OR_RETURN(Entry entry, ParseEntry(file, item.key(), item.value(), data.size()));
    entries.push_back(std::move(entry));
  }
  RETURN_IF_ERROR(CheckCoverage(file, entries, data.size()));

  const DeviceSpec host = DeviceSpec{}.WithDefaults();
  NamedTensors tensors;
  tensors.reserve(entries.size());
  for (Entry& entry : entries) {
    if (skipped.count(entry.name) != 0) continue;
    const size_t size = static_cast<size_t>(entry.end - entry.begin);
    absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(host, size, false);
    if (!buffer.ok()) {
      return absl::Status(buffer.status().code(),
                          absl::StrCat(file, ": tensor ", Quoted(entry.name), ": ",
                                       buffer.status().message()));
    }
    if (size > 0) std::memcpy((*buffer)->data(), data.data() + entry.begin, size);
    absl::StatusOr<Tensor> tensor =
        Tensor::FromBuffer(entry.dtype, std::move(entry.shape), *std::move(buffer));
    if (!tensor.ok()) {
      return absl::Status(tensor.status().code(),
                          absl::StrCat(file, ": tensor ", Quoted(entry.name), ": ",
                                       tensor.status().message()));
    }
    tensors.emplace_back(std::move(entry.name), *std::move(tensor));
  }
  return tensors;
}

// ---- Files ----

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", Quoted(path)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat info {};
  if (::fstat(fd, &info) != 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", Quoted(path)));
  if (S_ISDIR(info.st_mode)) return ErrnoStatus(EISDIR, absl::StrCat("cannot read ", Quoted(path)));

  std::string contents;
  try {
    // The size is a hint: the file may change while it is read, so read to the end.
    size_t capacity = S_ISREG(info.st_mode) ? static_cast<size_t>(info.st_size) + 1 : 65536;
    size_t filled = 0;
    contents.resize(capacity);
    while (true) {
      if (filled == contents.size()) contents.resize(contents.size() * 2);
      const ssize_t got = ::read(fd, contents.data() + filled, contents.size() - filled);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", Quoted(path)));
      if (got == 0) break;
      filled += static_cast<size_t>(got);
    }
    contents.resize(filled);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot read ", Quoted(path), ": not enough memory for its ", info.st_size, " bytes"));
  }
  return contents;
}

}  // namespace

absl::Status CheckTensorName(absl::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("empty name: a tensor in a file needs a non-empty name");
  }
  if (name == kMetadataKey) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", kMetadataKey, "' is reserved: the header keeps the file's metadata under it"));
  }
  if (!IsValidUtf8(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quoted(name), " is not valid UTF-8: names are JSON strings in the file's header"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> SerializeSafetensors(const NamedTensors& tensors) {
  ASSIGN_OR_RETURN(std::string out, BuildHeader(tensors, "cannot serialize safetensors"));
  for (const auto& [name, tensor] : tensors) {
    if (tensor.byte_size() > 0) out.append(static_cast<const char*>(tensor.data()), tensor.byte_size());
  }
  return out;
}

absl::StatusOr<NamedTensors> ParseSafetensors(absl::string_view bytes,
                                              absl::string_view name_for_messages,
                                              const std::set<std::string>* only) {
  // nlohmann-json is used without exceptions; this catches what remains (allocation).
  try {
    return ParseOrError(bytes, name_for_messages, only);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name_for_messages, ": out of memory while reading the header"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_for_messages, ": the header cannot be read: ", e.what()));
  }
}

absl::Status WriteSafetensors(const std::string& path, const NamedTensors& tensors) {
  ASSIGN_OR_RETURN(const std::string header,
                   BuildHeader(tensors, absl::StrCat("cannot write ", Quoted(path))));
  // Temporaries of writers killed before their rename would otherwise stay forever.
  RemoveStaleTemporaries(path);
  TempFile file;
  RETURN_IF_ERROR(file.Create(path));
  RETURN_IF_ERROR(file.Write(header.data(), header.size()));
  for (const auto& [name, tensor] : tensors) {
    RETURN_IF_ERROR(file.Write(static_cast<const char*>(tensor.data()), tensor.byte_size()));
  }
  return file.CommitAs(path);
}

absl::StatusOr<NamedTensors> ReadSafetensors(const std::string& path,
                                             const std::set<std::string>* only) {
  ASSIGN_OR_RETURN(const std::string contents, ReadWholeFile(path));
  return ParseSafetensors(contents, path, only);
}

}  // namespace distribute
