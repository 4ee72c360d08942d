// CRC32C and the TFRecord source and writer.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "core/input/crc32c.h"
#include "core/input/inflating_reader.h"
#include "core/input/sources.h"
#include "gtest/gtest.h"
#include "tests/core/input_test_util.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::CollectBytes;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::TempPath;
using ::distribute::testing::WriteFile;

// Bit-at-a-time CRC32C, independent of the table and hardware versions.
uint32_t ReferenceCrc32c(const std::string& data) {
  uint32_t c = 0xffffffffu;
  for (unsigned char byte : data) {
    c ^= byte;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? 0x82f63b78u : 0u);
  }
  return ~c;
}

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32cExtendPortable(0, "123456789", 9), 0xE3069283u);
  // RFC 3720, B.4.
  EXPECT_EQ(Crc32c(std::string(32, '\0').data(), 32), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff').data(), 32), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc32c(ascending.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
}

TEST(Crc32cTest, AllVersionsAgreeAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::string data(20000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t len : {0, 1, 7, 8, 9, 31, 32, 33, 100, 991, 3071, 3072, 3073, 6151, 19990}) {
      const std::string piece = data.substr(start, len);
      const uint32_t expected = ReferenceCrc32c(piece);
      EXPECT_EQ(Crc32c(piece.data(), piece.size()), expected) << start << " " << len;
      EXPECT_EQ(Crc32cExtendPortable(0, piece.data(), piece.size()), expected);
      // Extending in two parts gives the CRC of the whole.
      const size_t half = len / 2;
      EXPECT_EQ(Crc32cExtend(Crc32c(piece.data(), half), piece.data() + half, len - half), expected);
    }
  }
}

TEST(Crc32cTest, MaskRoundTrips) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xffffffffu}) {
    EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(crc)), crc);
    EXPECT_EQ(MaskCrc32c(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  }
}

// Two records, "abc" and "hello world", framed by hand (CRCs from an independent
// bit-at-a-time implementation). The second record starts at byte 19.
std::string HandWrittenFile() {
  const unsigned char bytes[] = {
      0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb0, 0x99, 0x49, 0x0e, 0x61, 0x62, 0x63,
      0x6e, 0x57, 0xf1, 0x21,
      0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x86, 0x15, 0xf5, 0x04, 0x68, 0x65, 0x6c,
      0x6c, 0x6f, 0x20, 0x77, 0x6f, 0x72, 0x6c, 0x64, 0x00, 0x7e, 0xd8, 0x6d};
  return std::string(reinterpret_cast<const char*>(bytes), sizeof(bytes));
}

TEST(TFRecordTest, ReadsAHandWrittenFile) {
  const std::string path = WriteFile("hand.tfrecord", HandWrittenFile());
  auto ds = TFRecords({path});
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectBytes(*ds), std::vector<std::string>({"abc", "hello world"}));
}

TEST(TFRecordTest, WriterProducesTheSameBytes) {
  const std::string path = TempPath("written.tfrecord");
  ASSERT_TRUE(IsOk(WriteTFRecordFile(path, {"abc", "hello world"})));
  std::ifstream in(path, std::ios::binary);
  const std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, HandWrittenFile());
}

TEST(TFRecordTest, RoundTripsLargeAndEmptyRecordsAcrossFiles) {
  std::mt19937 rng(3);
  std::vector<std::string> first, second;
  for (size_t len : {0, 1, 300 * 1024, 5, 1024 * 1024 + 3}) {
    std::string record(len, '\0');
    for (char& c : record) c = static_cast<char>(rng());
    first.push_back(record);
  }
  second.push_back("tail");
  const std::string a = TempPath("a.tfrecord");
  const std::string b = TempPath("b.tfrecord");
  const std::string empty = TempPath("empty.tfrecord");
  ASSERT_TRUE(IsOk(WriteTFRecordFile(a, first)));
  ASSERT_TRUE(IsOk(WriteTFRecordFile(empty, {})));
  ASSERT_TRUE(IsOk(WriteTFRecordFile(b, second)));
  auto ds = TFRecords({a, empty, b});
  ASSERT_TRUE(IsOk(ds));
  std::vector<std::string> expected = first;
  expected.push_back("tail");
  EXPECT_EQ(CollectBytes(*ds), expected);
  EXPECT_EQ((*ds)->SourceFiles(), std::vector<std::string>({a, empty, b}));
  auto only_b = (*ds)->WithSourceFiles({b});
  ASSERT_TRUE(IsOk(only_b));
  EXPECT_EQ(CollectBytes(*only_b), second);
}

// Reads `contents`: the first record must come back, the second fail with DataLoss
// naming the file and offset 19.
void ExpectSecondRecordLost(const std::string& name, const std::string& contents,
                            absl::string_view what) {
  SCOPED_TRACE(name);
  const std::string path = WriteFile(name, contents);
  auto ds = TFRecords({path});
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  absl::StatusOr<bool> first = (*it)->GetNext(&e);
  ASSERT_TRUE(IsOk(first));
  ASSERT_TRUE(*first);
  EXPECT_EQ(testing::Bytes(e[0]), "abc");
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kDataLoss, {path, "offset 19", what}));
  // The error stays, and the iterator stays destroyable.
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kDataLoss, {path}));
}

TEST(TFRecordTest, CorruptionInEachFieldIsDataLossNamingFileAndOffset) {
  const std::string good = HandWrittenFile();
  struct Case {
    const char* name;
    size_t byte;
    const char* what;
  };
  for (const Case& c : {Case{"length.tfrecord", 19, "length"}, Case{"length_crc.tfrecord", 27, "length"},
                        Case{"data.tfrecord", 31, "data"}, Case{"data_crc.tfrecord", 43, "data"}}) {
    std::string bad = good;
    bad[c.byte] = static_cast<char>(bad[c.byte] ^ 0x01);
    ExpectSecondRecordLost(c.name, bad, c.what);
  }
}

TEST(TFRecordTest, TruncationAtEachFieldIsDataLossNamingFileAndOffset) {
  const std::string good = HandWrittenFile();
  for (size_t keep : {20, 26, 28, 31, 38, 43, 45}) {
    ExpectSecondRecordLost("cut" + std::to_string(keep) + ".tfrecord", good.substr(0, keep),
                           "truncated");
  }
}

TEST(TFRecordTest, AMissingFileIsAnErrorNamingIt) {
  const std::string missing = TempPath("missing.tfrecord");
  auto ds = TFRecords({missing});
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kNotFound, {missing}));
}

TEST(TFRecordTest, WriterReportsAnUnwritablePath) {
  EXPECT_FALSE(WriteTFRecordFile(TempPath("no_such_dir/x.tfrecord"), {"a"}).ok());
}

// ---- Compressed TFRecord files ----

// `data` deflated as TF's ZlibOutputBuffer does for TFRecordOptions(compression_type=...):
// deflateInit2 with window bits MAX_WBITS (ZLIB) or MAX_WBITS + 16 (GZIP).
std::string Deflate(const std::string& data, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Gzip(const std::string& data) { return Deflate(data, MAX_WBITS + 16); }
std::string Zlib(const std::string& data) { return Deflate(data, MAX_WBITS); }

// TF: with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type="GZIP"))
// writing b"abc" and b"hello world", list(tf.data.TFRecordDataset(path, "GZIP")) gives
// [b"abc", b"hello world"]; the same with "ZLIB".
TEST(TFRecordTest, ReadsZlibAndGzipFiles) {
  const std::string plain = HandWrittenFile();
  for (const auto& [compression, bytes] :
       {std::pair{Compression::kGzip, Gzip(plain)}, std::pair{Compression::kZlib, Zlib(plain)}}) {
    SCOPED_TRACE(CompressionName(compression));
    const std::string path =
        WriteFile(absl::StrCat("hand.", CompressionName(compression), ".tfrecord"), bytes);
    auto ds = TFRecords({path}, compression);
    ASSERT_TRUE(IsOk(ds));
    EXPECT_EQ(CollectBytes(*ds), std::vector<std::string>({"abc", "hello world"}));
    // FILE sharding keeps the compression.
    auto again = (*ds)->WithSourceFiles({path, path});
    ASSERT_TRUE(IsOk(again));
    EXPECT_EQ(CollectBytes(*again).size(), 4u);
  }
}

TEST(TFRecordTest, ReadsLargeRecordsAndConcatenatedGzipMembers) {
  std::mt19937 rng(5);
  std::vector<std::string> records;
  for (size_t len : {0, 3 * 1024 * 1024 + 7, 1, 70000}) {
    std::string record(len, '\0');
    for (char& c : record) c = static_cast<char>(rng() % 7);  // compressible
    records.push_back(record);
  }
  const std::string plain_path = TempPath("large.tfrecord");
  ASSERT_TRUE(IsOk(WriteTFRecordFile(plain_path, records)));
  std::ifstream in(plain_path, std::ios::binary);
  const std::string plain((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Two gzip members, split inside the second record: gzip readers read them as one.
  const size_t cut = plain.size() / 3;
  const std::string path =
      WriteFile("members.tfrecord.gz", Gzip(plain.substr(0, cut)) + Gzip(plain.substr(cut)));
  auto ds = TFRecords({path}, Compression::kGzip);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectBytes(*ds), records);
}

// What reading `path` with `compression` to the end gives: the first failure, or OK.
absl::Status ReadToTheEnd(const std::string& path, Compression compression) {
  auto ds = TFRecords({path}, compression);
  if (!ds.ok()) return ds.status();
  auto it = (*ds)->MakeIterator(0);
  if (!it.ok()) return it.status();
  Element e;
  absl::StatusOr<bool> got = (*it)->GetNext(&e);
  while (got.ok() && *got) got = (*it)->GetNext(&e);
  return got.status();
}

TEST(TFRecordTest, AnUncompressedReaderSaysTheFileLooksCompressed) {
  const std::string gz = WriteFile("looks.gz.tfrecord", Gzip(HandWrittenFile()));
  const std::string zl = WriteFile("looks.zlib.tfrecord", Zlib(HandWrittenFile()));
  EXPECT_TRUE(HasError(ReadToTheEnd(gz, Compression::kNone), absl::StatusCode::kDataLoss,
                       {gz, "offset 0", "looks GZIP-compressed"}));
  EXPECT_TRUE(HasError(ReadToTheEnd(zl, Compression::kNone), absl::StatusCode::kDataLoss,
                       {zl, "offset 0", "looks ZLIB-compressed"}));
  // A plain corrupt file says nothing about compression.
  std::string bad = HandWrittenFile();
  bad[0] = 0x04;
  const absl::Status plain = ReadToTheEnd(WriteFile("bad.plain.tfrecord", bad), Compression::kNone);
  EXPECT_TRUE(HasError(plain, absl::StatusCode::kDataLoss, {"offset 0"}));
  EXPECT_EQ(plain.message().find("looks"), absl::string_view::npos);
}

TEST(TFRecordTest, CorruptOrTruncatedCompressedFilesAreDataLoss) {
  const std::string gz = Gzip(HandWrittenFile());
  const std::string cut = WriteFile("cut.gz", gz.substr(0, gz.size() / 2));
  EXPECT_TRUE(HasError(ReadToTheEnd(cut, Compression::kGzip), absl::StatusCode::kDataLoss,
                       {cut, "truncated"}));
  std::string flipped = gz;
  flipped[12] = static_cast<char>(flipped[12] ^ 0x5a);
  const std::string corrupt = WriteFile("corrupt.gz", flipped);
  EXPECT_TRUE(HasError(ReadToTheEnd(corrupt, Compression::kGzip), absl::StatusCode::kDataLoss,
                       {corrupt}));
  // A plain file read as GZIP is not a gzip stream.
  const std::string plain = WriteFile("plain.notgz", HandWrittenFile());
  EXPECT_TRUE(HasError(ReadToTheEnd(plain, Compression::kGzip), absl::StatusCode::kDataLoss,
                       {plain, "GZIP"}));
}

TEST(TFRecordTest, CompressionIsSniffedAndNamed) {
  const std::string gz = Gzip("x"), zl = Zlib("x");
  EXPECT_EQ(SniffCompression(reinterpret_cast<const unsigned char*>(gz.data()), gz.size()),
            Compression::kGzip);
  EXPECT_EQ(SniffCompression(reinterpret_cast<const unsigned char*>(zl.data()), zl.size()),
            Compression::kZlib);
  const std::string plain = HandWrittenFile();
  EXPECT_EQ(SniffCompression(reinterpret_cast<const unsigned char*>(plain.data()), 12),
            Compression::kNone);
  EXPECT_TRUE(IsOk(CompressionFromInt(2)));
  EXPECT_TRUE(HasError(CompressionFromInt(3), absl::StatusCode::kInvalidArgument,
                       {"compression 3", "NONE (0), ZLIB (1) or GZIP (2)"}));
}

}  // namespace
}  // namespace distribute
