#include "core/values/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <new>
#include <optional>
#include <system_error>
#include <unordered_set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/device/device_spec.h"
#include "core/tensor/buffer.h"
#include "core/util/status_macros.h"
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

// Names come from files and callers: escape them so a message stays one printable line.
std::string Quoted(absl::string_view name) { return absl::StrCat("'", absl::CHexEscape(name), "'"); }

bool IsHost(const Tensor& tensor) {
  return tensor.device().type == DeviceType::kCpu ||
         tensor.device().type == DeviceType::kUnspecified;
}

bool IsValidUtf8(const std::string& name) {
  try {
    (void)nlohmann::json(name).dump();  // dump() rejects ill-formed UTF-8
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
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": tensor #", i, " has an empty name"));
    }
    if (name == kMetadataKey) {
      return absl::InvalidArgumentError(absl::StrCat(
          context, ": tensor #", i, " is named '", kMetadataKey, "', which is reserved"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": two tensors are named ", Quoted(name)));
    }
    if (!IsValidUtf8(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": tensor name ", Quoted(name), " is not valid UTF-8"));
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
                                 {"shape", tensor.shape().dims()},
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
        absl::StrCat(tensor, " has dtype \"", absl::CHexEscape(dtype_name),
                     "\", which is not supported: expected one of ", KnownDTypeNames()));
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
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // Empty ranges hold no bytes and overlap nothing.
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    if (entry.begin == entry.end) continue;
    if (previous != nullptr && entry.begin < previous->end) {
      return absl::DataLossError(absl::StrCat(
          file, ": tensors ", Quoted(previous->name), " at ",
          OffsetsText(previous->begin, previous->end), " and ", Quoted(entry.name), " at ",
          OffsetsText(entry.begin, entry.end), " overlap"));
    }
    previous = &entry;
  }

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

std::string ErrnoText(int error) { return std::generic_category().message(error); }

absl::StatusCode CodeForErrno(int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      return absl::StatusCode::kResourceExhausted;
    case EIO:
      return absl::StatusCode::kDataLoss;
    case EISDIR:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status ErrnoStatus(int error, absl::string_view what) {
  return absl::Status(CodeForErrno(error), absl::StrCat(what, ": ", ErrnoText(error)));
}

// A temporary file beside the destination, removed unless committed by a rename.
class TempFile {
 public:
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!name_.empty()) ::unlink(name_.c_str());
  }

  absl::Status Create(const std::string& path) {
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      const std::string name = absl::StrCat(path, ".tmp-", absl::Hex(UniqueSuffix(counter++),
                                                                      absl::kZeroPad8));
      const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        fd_ = fd;
        name_ = name;
        return absl::OkStatus();
      }
      if (errno != EEXIST) {
        return ErrnoStatus(errno, absl::StrCat("cannot write ", path,
                                               ": creating the temporary file ", name));
      }
    }
    return absl::AlreadyExistsError(
        absl::StrCat("cannot write ", path, ": no free temporary file name beside it"));
  }

  absl::Status Write(const char* data, size_t size) {
    while (size > 0) {
      const size_t chunk = std::min<size_t>(size, size_t{1} << 30);
      const ssize_t written = ::write(fd_, data, chunk);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) return ErrnoStatus(written < 0 ? errno : EIO, Context("writing"));
      data += written;
      size -= static_cast<size_t>(written);
    }
    return absl::OkStatus();
  }

  // Flushes, closes and renames over `path`; the file then no longer needs removing.
  absl::Status CommitAs(const std::string& path) {
    if (::fsync(fd_) != 0) return ErrnoStatus(errno, Context("flushing"));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoStatus(errno, Context("closing"));
    if (::rename(name_.c_str(), path.c_str()) != 0) {
      return ErrnoStatus(errno, absl::StrCat("cannot write ", path, ": renaming ", name_,
                                             " to it"));
    }
    name_.clear();
    SyncDirectoryOf(path);
    return absl::OkStatus();
  }

 private:
  static uint32_t UniqueSuffix(uint64_t count) {
    // splitmix64 over pid, time and a counter: distinct across threads and processes.
    uint64_t x = (static_cast<uint64_t>(::getpid()) << 32) ^ count ^
                 static_cast<uint64_t>(
                     std::chrono::steady_clock::now().time_since_epoch().count());
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<uint32_t>(x ^ (x >> 31));
  }

  // Makes the rename itself durable. Best effort: the new file is already in place, and a
  // failure here cannot be undone, so it is not reported.
  static void SyncDirectoryOf(const std::string& path) {
    const std::filesystem::path directory = std::filesystem::path(path).parent_path();
    const int fd = ::open(directory.empty() ? "." : directory.c_str(),
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)::fsync(fd);
    ::close(fd);
  }

  std::string Context(absl::string_view action) const {
    return absl::StrCat("cannot write ", name_, ": ", action);
  }

  int fd_ = -1;
  std::string name_;
};

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat info {};
  if (::fstat(fd, &info) != 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
  if (S_ISDIR(info.st_mode)) return ErrnoStatus(EISDIR, absl::StrCat("cannot read ", path));

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
      if (got < 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
      if (got == 0) break;
      filled += static_cast<size_t>(got);
    }
    contents.resize(filled);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot read ", path, ": not enough memory for its ", info.st_size, " bytes"));
  }
  return contents;
}

}  // namespace

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
  ASSIGN_OR_RETURN(const std::string header, BuildHeader(tensors, absl::StrCat("cannot write ", path)));
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
