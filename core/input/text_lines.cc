// TextLines: the lines of text files, without their terminators.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/input/file_reader.h"
#include "core/input/host_tensor.h"
#include "core/input/sources.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

class TextLinesIterator : public DatasetIterator {
 public:
  explicit TextLinesIterator(std::vector<std::string> files) : files_(std::move(files)) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (!error_.ok()) return error_;
    absl::StatusOr<bool> got = Next(out);
    if (!got.ok()) error_ = got.status();
    return got;
  }

 private:
  absl::StatusOr<bool> Next(Element* out) {
    while (true) {
      if (reader_ == nullptr) {
        if (next_file_ >= files_.size()) return false;
        ASSIGN_OR_RETURN(reader_, FileReader::Open(files_[next_file_++]));
      }
      ASSIGN_OR_RETURN(const bool has_line, reader_->ReadLine(&line_));
      if (!has_line) {
        reader_.reset();
        continue;
      }
      ASSIGN_OR_RETURN(Tensor t, HostBytesTensor(line_.data(), line_.size()));
      out->clear();
      out->push_back(std::move(t));
      return true;
    }
  }

  std::vector<std::string> files_;
  size_t next_file_ = 0;
  std::unique_ptr<FileReader> reader_;
  std::string line_;
  absl::Status error_;
};

class TextLinesDataset : public Dataset {
 public:
  explicit TextLinesDataset(std::vector<std::string> files) : files_(std::move(files)) {}

  int32_t num_components() const override { return 1; }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t) const override {
    return std::unique_ptr<DatasetIterator>(new TextLinesIterator(files_));
  }

  std::vector<std::string> SourceFiles() const override { return files_; }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    return TextLines(std::move(files));
  }

 private:
  std::vector<std::string> files_;
};

}  // namespace

absl::StatusOr<DatasetPtr> TextLines(std::vector<std::string> files) {
  return DatasetPtr(std::make_shared<TextLinesDataset>(std::move(files)));
}

}  // namespace distribute
