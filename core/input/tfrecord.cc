// TFRecords: each record is a uint64 length (little-endian), the masked CRC32C of those 8
// bytes, the data, and the masked CRC32C of the data; a compressed file holds the same
// bytes deflated (inflating_reader.h). Also the writer.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/crc32c.h"
#include "core/input/file_reader.h"
#include "core/input/host_tensor.h"
#include "core/input/file_source.h"
#include "core/input/inflating_reader.h"
#include "core/input/sources.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

constexpr size_t kHeaderBytes = 12;  // length + its CRC
constexpr size_t kFooterBytes = 4;   // the data's CRC

uint64_t LoadLe64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t LoadLe32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void StoreLe64(uint64_t v, unsigned char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

void StoreLe32(uint32_t v, unsigned char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

// A compressed file's decompressed size is unknown: record data is read in chunks of at
// most this, so that a corrupt length cannot make us allocate more than the file holds.
constexpr size_t kCompressedChunkBytes = 1 << 20;

// The record reader of files with `kCompression`: FileReader for plain files, else the
// inflated stream.
template <Compression kCompression>
using RecordReader =
    std::conditional_t<kCompression == Compression::kNone, FileReader, InflatingReader>;

template <Compression kCompression>
class TFRecordIterator : public DatasetIterator {
 public:
  using Reader = RecordReader<kCompression>;
  explicit TFRecordIterator(std::vector<std::string> files) : files_(std::move(files)) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (!error_.ok()) return error_;
    absl::StatusOr<bool> got = Next(out);
    if (!got.ok()) error_ = got.status();
    return got;
  }

 private:
  absl::Status DataLoss(uint64_t offset, absl::string_view what) const {
    return absl::DataLossError(absl::StrCat(
        what, " in ", kCompression == Compression::kNone ? "" : CompressionName(kCompression),
        kCompression == Compression::kNone ? "" : " ", "TFRecord file ", Quoted(reader_->path()),
        " at offset ", offset));
  }

  // A plain reader whose first record header is not one: says so when the file starts
  // like a compressed one.
  absl::Status CorruptLength(uint64_t start, const unsigned char* header) const {
    const Compression looks = SniffCompression(header, kHeaderBytes);
    if (kCompression != Compression::kNone || start != 0 || looks == Compression::kNone) {
      return DataLoss(start, "corrupt record length (CRC mismatch)");
    }
    return DataLoss(start, absl::StrCat("corrupt record length (CRC mismatch): the file looks ",
                                        CompressionName(looks), "-compressed; read it with ",
                                        CompressionName(looks), " compression"));
  }

  // Reads `length` bytes of record data into a new uint8 tensor; nullopt when the file
  // ends first.
  absl::StatusOr<std::optional<Tensor>> ReadData(uint64_t length) {
    const int64_t dims[1] = {static_cast<int64_t>(length)};
    if constexpr (kCompression == Compression::kNone) {
      ASSIGN_OR_RETURN(Tensor out, NewHostTensor(DType::kUInt8, dims));
      ASSIGN_OR_RETURN(const size_t got, reader_->Read(out.data(), length));
      if (got != length) return std::optional<Tensor>();
      return std::optional<Tensor>(std::move(out));
    } else {
      std::string data;
      while (data.size() < length) {
        const size_t chunk = static_cast<size_t>(
            std::min<uint64_t>(length - data.size(), kCompressedChunkBytes));
        const size_t before = data.size();
        data.resize(before + chunk);
        ASSIGN_OR_RETURN(const size_t got, reader_->Read(data.data() + before, chunk));
        data.resize(before + got);
        if (got < chunk) return std::optional<Tensor>();
      }
      ASSIGN_OR_RETURN(Tensor out, NewHostTensor(DType::kUInt8, dims));
      if (length > 0) std::memcpy(out.data(), data.data(), length);
      return std::optional<Tensor>(std::move(out));
    }
  }

  absl::StatusOr<std::unique_ptr<Reader>> OpenNext(const std::string& path) {
    if constexpr (kCompression == Compression::kNone) {
      return FileReader::Open(path);
    } else {
      return InflatingReader::Open(path, kCompression);
    }
  }

  absl::StatusOr<bool> Next(Element* out) {
    while (true) {
      if (reader_ == nullptr) {
        if (next_file_ >= files_.size()) return false;
        ASSIGN_OR_RETURN(reader_, OpenNext(files_[next_file_++]));
      }
      const uint64_t start = reader_->offset();
      unsigned char header[kHeaderBytes];
      ASSIGN_OR_RETURN(const size_t got, reader_->Read(header, kHeaderBytes));
      if (got == 0) {
        reader_.reset();
        continue;
      }
      if (got != kHeaderBytes) {
        return DataLoss(start, absl::StrCat("truncated record header (", got, " of ",
                                            kHeaderBytes, " bytes)"));
      }
      if (UnmaskCrc32c(LoadLe32(header + 8)) != Crc32c(header, 8)) {
        return CorruptLength(start, header);
      }
      const uint64_t length = LoadLe64(header);
      if constexpr (kCompression == Compression::kNone) {
        const uint64_t remaining = reader_->size() - reader_->offset();
        if (remaining < kFooterBytes || length > remaining - kFooterBytes) {
          return DataLoss(start, absl::StrCat("truncated record (length ", length, ", ",
                                              remaining, " bytes left in the file)"));
        }
      }
      ASSIGN_OR_RETURN(std::optional<Tensor> data, ReadData(length));
      unsigned char footer[kFooterBytes];
      size_t footer_got = 0;
      if (data.has_value()) {
        ASSIGN_OR_RETURN(footer_got, reader_->Read(footer, kFooterBytes));
      }
      if (!data.has_value() || footer_got != kFooterBytes) {
        return DataLoss(start, absl::StrCat("truncated record (length ", length, ")"));
      }
      if (UnmaskCrc32c(LoadLe32(footer)) != Crc32c(data->data(), length)) {
        return DataLoss(start, "corrupt record data (CRC mismatch)");
      }
      out->clear();
      out->push_back(*std::move(data));
      return true;
    }
  }

  std::vector<std::string> files_;
  size_t next_file_ = 0;
  std::unique_ptr<Reader> reader_;
  absl::Status error_;
};

template <Compression kCompression>
absl::StatusOr<DatasetPtr> TFRecordsWith(std::vector<std::string> files) {
  return DatasetPtr(std::make_shared<FileSourceDataset<TFRecordIterator<kCompression>>>(
      std::move(files), &TFRecordsWith<kCompression>));
}

}  // namespace

absl::StatusOr<DatasetPtr> TFRecords(std::vector<std::string> files) {
  return TFRecordsWith<Compression::kNone>(std::move(files));
}

absl::StatusOr<DatasetPtr> TFRecords(std::vector<std::string> files, Compression compression) {
  switch (compression) {
    case Compression::kZlib:
      return TFRecordsWith<Compression::kZlib>(std::move(files));
    case Compression::kGzip:
      return TFRecordsWith<Compression::kGzip>(std::move(files));
    default:
      return TFRecordsWith<Compression::kNone>(std::move(files));
  }
}

absl::Status WriteTFRecordFile(const std::string& path, const std::vector<std::string>& records) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::UnknownError(
        absl::StrCat("cannot create file ", Quoted(path), ": ", std::strerror(errno)));
  }
  bool ok = true;
  for (const std::string& record : records) {
    unsigned char header[kHeaderBytes];
    StoreLe64(record.size(), header);
    StoreLe32(MaskCrc32c(Crc32c(header, 8)), header + 8);
    unsigned char footer[kFooterBytes];
    StoreLe32(MaskCrc32c(Crc32c(record.data(), record.size())), footer);
    ok = ok && std::fwrite(header, 1, kHeaderBytes, file) == kHeaderBytes &&
         std::fwrite(record.data(), 1, record.size(), file) == record.size() &&
         std::fwrite(footer, 1, kFooterBytes, file) == kFooterBytes;
    if (!ok) break;
  }
  const int err = errno;
  if (std::fclose(file) != 0) ok = false;
  if (!ok) {
    return absl::UnknownError(
        absl::StrCat("cannot write file ", Quoted(path), ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace distribute
