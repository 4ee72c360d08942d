// Sequential reading of the decompressed bytes of a ZLIB- or GZIP-compressed file, as
// TF's ZlibInputStream reads the files a TFRecordWriter with
// TFRecordOptions(compression_type="ZLIB" or "GZIP") writes: one deflate stream with a
// zlib or a gzip wrapper (several concatenated gzip members are read one after another).
#ifndef DISTRIBUTE_CORE_INPUT_INFLATING_READER_H_
#define DISTRIBUTE_CORE_INPUT_INFLATING_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/input/file_reader.h"

namespace distribute {

// tf.io.TFRecordOptions.compression_type. The numbers are the C API's.
enum class Compression : int32_t { kNone = 0, kZlib = 1, kGzip = 2 };

absl::StatusOr<Compression> CompressionFromInt(int32_t value);
absl::string_view CompressionName(Compression compression);

// The compression `head` (a file's first bytes) looks like: a gzip magic number, or a
// zlib header (deflate, valid check bits); kNone otherwise.
Compression SniffCompression(const unsigned char* head, size_t size);

class InflatingReader {
 public:
  // `compression` is kZlib or kGzip. Errors name `path`.
  static absl::StatusOr<std::unique_ptr<InflatingReader>> Open(const std::string& path,
                                                               Compression compression);
  InflatingReader(const InflatingReader&) = delete;
  InflatingReader& operator=(const InflatingReader&) = delete;
  ~InflatingReader();

  // Reads up to n decompressed bytes into dst: fewer only at the end of the data. A
  // corrupt or truncated stream is DataLoss naming the file and the compressed offset.
  absl::StatusOr<size_t> Read(void* dst, size_t n);

  const std::string& path() const { return file_->path(); }
  uint64_t offset() const { return offset_; }  // decompressed bytes read so far

 private:
  struct Stream;  // zlib's z_stream, kept out of this header
  InflatingReader(std::unique_ptr<FileReader> file, Compression compression);
  absl::Status DataLoss(absl::string_view what) const;

  std::unique_ptr<FileReader> file_;
  const Compression compression_;
  std::unique_ptr<Stream> stream_;
  std::vector<unsigned char> input_;
  bool input_end_ = false;   // the file has no more compressed bytes
  bool stream_end_ = false;  // the deflate stream ended with no member after it
  uint64_t offset_ = 0;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_INFLATING_READER_H_
