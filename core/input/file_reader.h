// Sequential buffered reading of one file, tracking the byte offset for error messages.
#ifndef DISTRIBUTE_CORE_INPUT_FILE_READER_H_
#define DISTRIBUTE_CORE_INPUT_FILE_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace distribute {

class FileReader {
 public:
  // An error naming `path` when it cannot be opened or is not a regular file.
  static absl::StatusOr<std::unique_ptr<FileReader>> Open(const std::string& path);

  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();

  // Reads up to n bytes into dst: fewer only at the end of the file.
  absl::StatusOr<size_t> Read(void* dst, size_t n);

  // Discards up to n bytes; fewer only at the end of the file.
  absl::StatusOr<size_t> Skip(size_t n);

  // The next line without its "\n" or "\r\n" in *line: false at the end of the file.
  absl::StatusOr<bool> ReadLine(std::string* line);

  const std::string& path() const { return path_; }
  uint64_t offset() const { return offset_; }  // of the next byte to read
  uint64_t size() const { return size_; }      // at open time

 private:
  FileReader(std::string path, int fd, uint64_t size);
  absl::Status Fill();  // refills an empty buffer; leaves it empty at the end of the file
  absl::Status ReadError(int err) const;

  std::string path_;
  int fd_;
  uint64_t size_;
  uint64_t offset_ = 0;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // the unread bytes in buffer_
  bool eof_ = false;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_FILE_READER_H_
