#include "core/input/inflating_reader.h"

#include <zlib.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

constexpr size_t kInputBytes = 64 * 1024;

// zlib's window bits: a zlib wrapper, or a gzip one (+16), with the largest window.
int WindowBits(Compression compression) {
  return compression == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS;
}

}  // namespace

struct InflatingReader::Stream {
  z_stream z{};
};

absl::StatusOr<Compression> CompressionFromInt(int32_t value) {
  switch (value) {
    case static_cast<int32_t>(Compression::kNone):
    case static_cast<int32_t>(Compression::kZlib):
    case static_cast<int32_t>(Compression::kGzip):
      return static_cast<Compression>(value);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "compression ", value, " is unknown: expected NONE (0), ZLIB (1) or GZIP (2)"));
  }
}

absl::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "NONE";
    case Compression::kZlib:
      return "ZLIB";
    case Compression::kGzip:
      return "GZIP";
  }
  return "unknown";
}

Compression SniffCompression(const unsigned char* head, size_t size) {
  if (size >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Compression::kGzip;
  // RFC 1950: deflate (CM 8) with a window of at most 32 KiB, and a header that is a
  // multiple of 31.
  if (size >= 2 && (head[0] & 0x0f) == 8 && (head[0] >> 4) <= 7 &&
      ((head[0] << 8) | head[1]) % 31 == 0) {
    return Compression::kZlib;
  }
  return Compression::kNone;
}

InflatingReader::InflatingReader(std::unique_ptr<FileReader> file, Compression compression)
    : file_(std::move(file)), compression_(compression), stream_(std::make_unique<Stream>()),
      input_(kInputBytes) {}

InflatingReader::~InflatingReader() { inflateEnd(&stream_->z); }

absl::StatusOr<std::unique_ptr<InflatingReader>> InflatingReader::Open(const std::string& path,
                                                                       Compression compression) {
  if (compression != Compression::kZlib && compression != Compression::kGzip) {
    return absl::InvalidArgumentError(absl::StrCat("cannot inflate ", Quoted(path), " compressed with ",
                                                   CompressionName(compression)));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<FileReader> file, FileReader::Open(path));
  std::unique_ptr<InflatingReader> reader(new InflatingReader(std::move(file), compression));
  if (inflateInit2(&reader->stream_->z, WindowBits(compression)) != Z_OK) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot start inflating ", Quoted(path)));
  }
  return reader;
}

absl::Status InflatingReader::DataLoss(absl::string_view what) const {
  return absl::DataLossError(absl::StrCat(what, " in ", CompressionName(compression_),
                                          " file ", Quoted(file_->path()), " at compressed offset ",
                                          file_->offset() - stream_->z.avail_in));
}

absl::StatusOr<size_t> InflatingReader::Read(void* dst, size_t n) {
  z_stream& z = stream_->z;
  z.next_out = static_cast<Bytef*>(dst);
  z.avail_out = static_cast<uInt>(n);
  while (z.avail_out > 0 && !stream_end_) {
    if (z.avail_in == 0 && !input_end_) {
      ASSIGN_OR_RETURN(const size_t got, file_->Read(input_.data(), input_.size()));
      input_end_ = got == 0;
      z.next_in = input_.data();
      z.avail_in = static_cast<uInt>(got);
    }
    const int result = inflate(&z, Z_NO_FLUSH);
    if (result == Z_STREAM_END) {
      // Another gzip member may follow (gzip files may be concatenated).
      const bool more = z.avail_in > 0 || (!input_end_ && file_->offset() < file_->size());
      if (!more) {
        stream_end_ = true;
      } else if (inflateReset(&z) != Z_OK) {
        return DataLoss("cannot restart inflating");
      }
      continue;
    }
    if (result == Z_BUF_ERROR && z.avail_in == 0 && input_end_) {
      return DataLoss("truncated compressed data");
    }
    if (result != Z_OK && result != Z_BUF_ERROR) {
      return DataLoss(absl::StrCat("corrupt compressed data (", z.msg != nullptr ? z.msg : "zlib error",
                                   ")"));
    }
  }
  const size_t got = n - z.avail_out;
  offset_ += got;
  return got;
}

}  // namespace distribute
