// TextLines: the lines of text files, without their terminators.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/input/file_reader.h"
#include "core/input/host_tensor.h"
#include "core/input/file_source.h"
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

}  // namespace

absl::StatusOr<DatasetPtr> TextLines(std::vector<std::string> files) {
  return DatasetPtr(std::make_shared<FileSourceDataset<TextLinesIterator>>(std::move(files), &TextLines));
}

}  // namespace distribute
