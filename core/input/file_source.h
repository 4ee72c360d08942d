// The dataset of a source that reads a list of files, one element component each (text
// lines, TFRecords): its iterator is built from the files, and FILE auto-sharding rebuilds
// it on another list.
#ifndef DISTRIBUTE_CORE_INPUT_FILE_SOURCE_H_
#define DISTRIBUTE_CORE_INPUT_FILE_SOURCE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/input/dataset.h"

namespace distribute {

template <typename Iterator>
class FileSourceDataset : public Dataset {
 public:
  // `rebuild` is the source's own factory (TextLines, TFRecords).
  using Factory = absl::StatusOr<DatasetPtr> (*)(std::vector<std::string> files);

  FileSourceDataset(std::vector<std::string> files, Factory rebuild)
      : files_(std::move(files)), rebuild_(rebuild) {}

  int32_t num_components() const override { return 1; }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t) const override {
    return std::unique_ptr<DatasetIterator>(new Iterator(files_));
  }

  std::vector<std::string> SourceFiles() const override { return files_; }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    return rebuild_(std::move(files));
  }

 private:
  std::vector<std::string> files_;
  Factory rebuild_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_FILE_SOURCE_H_
