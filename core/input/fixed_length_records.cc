// FixedLengthRecords: header, whole records, footer per file.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/file_reader.h"
#include "core/input/host_tensor.h"
#include "core/input/sources.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

struct Layout {
  int64_t record_bytes, header_bytes, footer_bytes;
};

class FixedLengthRecordsIterator : public DatasetIterator {
 public:
  FixedLengthRecordsIterator(std::vector<std::string> files, Layout layout)
      : files_(std::move(files)), layout_(layout) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (!error_.ok()) return error_;
    absl::StatusOr<bool> got = Next(out);
    if (!got.ok()) error_ = got.status();
    return got;
  }

 private:
  absl::Status OpenNext() {
    const std::string& path = files_[next_file_++];
    ASSIGN_OR_RETURN(reader_, FileReader::Open(path));
    const uint64_t size = reader_->size();
    const uint64_t frame = static_cast<uint64_t>(layout_.header_bytes + layout_.footer_bytes);
    if (size < frame) {
      return absl::DataLossError(absl::StrCat(
          "file ", Quoted(path), " has ", size, " bytes: too short for its header of ",
          layout_.header_bytes, " and footer of ", layout_.footer_bytes, " bytes"));
    }
    if ((size - frame) % static_cast<uint64_t>(layout_.record_bytes) != 0) {
      const uint64_t body = size - frame;
      return absl::DataLossError(absl::StrCat(
          "file ", Quoted(path), " has ", size, " bytes: after a header of ", layout_.header_bytes,
          " and a footer of ", layout_.footer_bytes, " bytes, its body of ", body,
          " bytes is not a whole number of ", layout_.record_bytes, "-byte records"));
    }
    records_left_ = (size - frame) / static_cast<uint64_t>(layout_.record_bytes);
    ASSIGN_OR_RETURN(const size_t skipped, reader_->Skip(static_cast<size_t>(layout_.header_bytes)));
    if (skipped != static_cast<size_t>(layout_.header_bytes)) return Truncated();
    return absl::OkStatus();
  }

  absl::Status Truncated() const {
    return absl::DataLossError(absl::StrCat("file ", Quoted(reader_->path()),
                                            " is truncated at offset ", reader_->offset()));
  }

  absl::StatusOr<bool> Next(Element* out) {
    while (reader_ == nullptr || records_left_ == 0) {
      reader_.reset();
      if (next_file_ >= files_.size()) return false;
      RETURN_IF_ERROR(OpenNext());
    }
    const int64_t dims[1] = {layout_.record_bytes};
    ASSIGN_OR_RETURN(Tensor t, NewHostTensor(DType::kUInt8, dims));
    ASSIGN_OR_RETURN(const size_t got, reader_->Read(t.data(), t.byte_size()));
    if (got != t.byte_size()) return Truncated();
    --records_left_;
    out->clear();
    out->push_back(std::move(t));
    return true;
  }

  std::vector<std::string> files_;
  Layout layout_;
  size_t next_file_ = 0;
  std::unique_ptr<FileReader> reader_;
  uint64_t records_left_ = 0;
  absl::Status error_;
};

class FixedLengthRecordsDataset : public Dataset {
 public:
  FixedLengthRecordsDataset(std::vector<std::string> files, Layout layout)
      : files_(std::move(files)), layout_(layout) {}

  int32_t num_components() const override { return 1; }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t) const override {
    return std::unique_ptr<DatasetIterator>(new FixedLengthRecordsIterator(files_, layout_));
  }

  std::vector<std::string> SourceFiles() const override { return files_; }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    return DatasetPtr(std::make_shared<FixedLengthRecordsDataset>(std::move(files), layout_));
  }

 private:
  std::vector<std::string> files_;
  Layout layout_;
};

}  // namespace

absl::StatusOr<DatasetPtr> FixedLengthRecords(std::vector<std::string> files, int64_t record_bytes,
                                              int64_t header_bytes, int64_t footer_bytes) {
  if (record_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("record_bytes is ", record_bytes, ": expected at least 1"));
  }
  if (header_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("header_bytes is ", header_bytes, ": expected at least 0"));
  }
  if (footer_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("footer_bytes is ", footer_bytes, ": expected at least 0"));
  }
  int64_t frame;
  if (__builtin_add_overflow(header_bytes, footer_bytes, &frame)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header_bytes ", header_bytes, " plus footer_bytes ", footer_bytes, " overflows int64"));
  }
  return DatasetPtr(std::make_shared<FixedLengthRecordsDataset>(
      std::move(files), Layout{record_bytes, header_bytes, footer_bytes}));
}

}  // namespace distribute
