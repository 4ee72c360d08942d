// Fuzz target for the TFRecord reader (core/input/tfrecord.cc), plain and compressed. The
// first byte picks how the rest is read:
//   0: the bytes are a plain TFRecord file;
//   1, 2: the bytes are a ZLIB / GZIP TFRecord file as they are (mostly a bad stream);
//   3, 4: the bytes are compressed here first, so that the records inside a valid ZLIB /
//         GZIP stream are fuzzed as well as the inflating reader's framing.
// Any file must give records then OK, or a DataLoss error naming the file; a file read to
// its end must consist of exactly the records given (8 + 4 + length + 4 bytes each).
// Built with -fsanitize=fuzzer under clang, and with tests/core/fuzz_replay_main.cc as a
// corpus-replay test under any compiler.
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/input/dataset.h"
#include "core/input/sources.h"

namespace {

using distribute::Compression;

[[noreturn]] void Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "tfrecord_fuzz: %s: %s\n", what, status.ToString().c_str());
  std::abort();
}

// One file per process, rewritten for every input and removed at exit.
const std::string& FilePath() {
  static const std::string* const path = [] {
    auto* name = new std::string(absl::StrCat("/tmp/tfrecord_fuzz.", getpid(), ".tfrecord"));
    std::atexit([] { std::remove(FilePath().c_str()); });
    return name;
  }();
  return *path;
}

void WriteFile(const std::string& bytes) {
  FILE* file = std::fopen(FilePath().c_str(), "wb");
  if (file == nullptr) Fail("cannot write the input file", absl::OkStatus());
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
    Fail("short write of the input file", absl::OkStatus());
  }
  std::fclose(file);
}

// `bytes` as a ZLIB (window bits 15) or GZIP (31) stream.
std::string Compress(const std::string& bytes, int window_bits) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    Fail("deflateInit2 failed", absl::OkStatus());
  }
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) Fail("deflate failed", absl::OkStatus());
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// Reads every record; the total size of the records read (with framing) or the error.
absl::StatusOr<uint64_t> ReadAll(Compression compression) {
  absl::StatusOr<distribute::DatasetPtr> dataset = distribute::TFRecords({FilePath()}, compression);
  if (!dataset.ok()) Fail("a TFRecord dataset of one file is refused", dataset.status());
  absl::StatusOr<std::unique_ptr<distribute::DatasetIterator>> iterator = (*dataset)->MakeIterator(0);
  if (!iterator.ok()) Fail("no iterator", iterator.status());
  uint64_t framed = 0;
  distribute::Element element;
  while (true) {
    absl::StatusOr<bool> got = (*iterator)->GetNext(&element);
    if (!got.ok()) return got.status();
    if (!*got) return framed;
    if (element.size() != 1) Fail("a record is not one tensor", absl::OkStatus());
    framed += 16 + element[0].byte_size();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 5;
  const std::string payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Compression compression =
      mode == 0 ? Compression::kNone
                : (mode == 1 || mode == 3 ? Compression::kZlib : Compression::kGzip);
  if (mode == 3) {
    WriteFile(Compress(payload, 15));
  } else if (mode == 4) {
    WriteFile(Compress(payload, 31));
  } else {
    WriteFile(payload);
  }
  absl::StatusOr<uint64_t> framed = ReadAll(compression);
  if (!framed.ok()) {
    if (framed.status().code() != absl::StatusCode::kDataLoss) {
      Fail("unexpected error code", framed.status());
    }
    if (!absl::StrContains(framed.status().message(), FilePath())) {
      Fail("message does not name the file", framed.status());
    }
    return 0;
  }
  // The uncompressed bytes are known for the plain file and for streams compressed here.
  if ((mode == 0 || mode >= 3) && *framed != payload.size()) {
    Fail("the records read do not cover the file", absl::OkStatus());
  }
  return 0;
}
