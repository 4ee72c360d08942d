// Safetensors files: round trips of every dtype, files written by hand byte by byte, the
// layout of written files checked with an independent JSON parse, corrupt inputs of every
// kind (each an error, none a crash), and atomic writes (a failed write leaves nothing
// behind and keeps an older file intact).
#include "core/values/safetensors.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/device/device_spec.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

namespace fs = std::filesystem;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

constexpr absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;
constexpr absl::StatusCode kInvalidArgument = absl::StatusCode::kInvalidArgument;

// A tensor of `dtype` and `dims` whose bytes count up from `seed`.
Tensor MakeTensor(DType dtype, std::vector<int64_t> dims, uint8_t seed = 1) {
  int64_t elements = 1;
  for (int64_t d : dims) elements *= d;
  size_t bytes = static_cast<size_t>(elements) * DTypeSize(dtype);
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(seed + i * 7);
  // Bool elements must be 0 or 1 to be meaningful.
  if (dtype == DType::kBool) {
    for (uint8_t& b : data) b &= 1;
  }
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(dtype);
  desc.dims = dims;
  desc.byte_size = bytes;
  absl::StatusOr<Tensor> tensor = Tensor::Create(desc, bytes == 0 ? nullptr : data.data());
  EXPECT_TRUE(IsOk(tensor));
  return *std::move(tensor);
}

std::string BytesOf(const Tensor& tensor) {
  if (tensor.byte_size() == 0) return "";
  return std::string(static_cast<const char*>(tensor.data()), tensor.byte_size());
}

// The 8-byte little-endian length prefix, built without the code under test.
std::string LengthPrefix(uint64_t length) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return out;
}

std::string FileOf(const std::string& header, const std::string& data) {
  return LengthPrefix(header.size()) + header + data;
}

std::string ReadFileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFileBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> DirectoryEntries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

void ExpectSameTensors(const NamedTensors& actual, const NamedTensors& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE(expected[i].first);
    EXPECT_EQ(actual[i].first, expected[i].first);
    EXPECT_EQ(actual[i].second.dtype(), expected[i].second.dtype());
    EXPECT_EQ(actual[i].second.shape(), expected[i].second.shape());
    EXPECT_EQ(BytesOf(actual[i].second), BytesOf(expected[i].second));
    EXPECT_EQ(actual[i].second.device().type, DeviceType::kCpu);
    EXPECT_EQ(actual[i].second.device().index, 0);
  }
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "safetensors_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(dir_, ignored);
  }

  std::string PathOf(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

const DType kAllDTypes[] = {DType::kBool,  DType::kUInt8,   DType::kInt8,     DType::kInt16,
                            DType::kInt32, DType::kInt64,   DType::kFloat16,  DType::kBFloat16,
                            DType::kFloat32, DType::kFloat64};

// ---- Round trips ----

TEST_F(SafetensorsTest, RoundTripsEveryDTypeAndShape) {
  NamedTensors tensors;
  uint8_t seed = 1;
  for (DType dtype : kAllDTypes) {
    const std::string base(DTypeName(dtype));
    tensors.emplace_back(base + "/matrix", MakeTensor(dtype, {2, 3}, seed++));
    tensors.emplace_back(base + "/scalar", MakeTensor(dtype, {}, seed++));
    tensors.emplace_back(base + "/empty", MakeTensor(dtype, {0}, seed++));
    tensors.emplace_back(base + "/empty3d", MakeTensor(dtype, {3, 0, 2}, seed++));
    tensors.emplace_back(base + "/vector", MakeTensor(dtype, {5}, seed++));
  }
  const std::string path = PathOf("all.safetensors");
  ASSERT_TRUE(IsOk(WriteSafetensors(path, tensors)));
  absl::StatusOr<NamedTensors> read = ReadSafetensors(path);
  ASSERT_TRUE(IsOk(read));
  // Written in order, so data-offset order is the original order (empties included).
  ExpectSameTensors(*read, tensors);
  EXPECT_EQ(DirectoryEntries(dir_), std::vector<std::string>{"all.safetensors"});
}

TEST_F(SafetensorsTest, RoundTripsAnEmptyList) {
  const std::string path = PathOf("none.safetensors");
  ASSERT_TRUE(IsOk(WriteSafetensors(path, {})));
  absl::StatusOr<NamedTensors> read = ReadSafetensors(path);
  ASSERT_TRUE(IsOk(read));
  EXPECT_TRUE(read->empty());
}

TEST_F(SafetensorsTest, RoundTripsUnusualNames) {
  NamedTensors tensors;
  tensors.emplace_back("layer.0/kernel:0", MakeTensor(DType::kFloat32, {2}));
  tensors.emplace_back("quote\" backslash\\ newline\n", MakeTensor(DType::kInt8, {1}));
  tensors.emplace_back("\xc3\xa9t\xc3\xa9 \xe2\x9c\x93", MakeTensor(DType::kInt8, {3}));
  const std::string path = PathOf("names.safetensors");
  ASSERT_TRUE(IsOk(WriteSafetensors(path, tensors)));
  absl::StatusOr<NamedTensors> read = ReadSafetensors(path);
  ASSERT_TRUE(IsOk(read));
  ExpectSameTensors(*read, tensors);
}

TEST_F(SafetensorsTest, SerializeGivesTheBytesOfTheFile) {
  NamedTensors tensors;
  tensors.emplace_back("a", MakeTensor(DType::kFloat64, {3}));
  tensors.emplace_back("b", MakeTensor(DType::kInt16, {2, 2}));
  const std::string path = PathOf("s.safetensors");
  ASSERT_TRUE(IsOk(WriteSafetensors(path, tensors)));
  absl::StatusOr<std::string> bytes = SerializeSafetensors(tensors);
  ASSERT_TRUE(IsOk(bytes));
  EXPECT_EQ(*bytes, ReadFileBytes(path));
  absl::StatusOr<NamedTensors> parsed = ParseSafetensors(*bytes, "memory");
  ASSERT_TRUE(IsOk(parsed));
  ExpectSameTensors(*parsed, tensors);
}

TEST_F(SafetensorsTest, OverwritingReplacesTheFile) {
  const std::string path = PathOf("w.safetensors");
  NamedTensors first;
  first.emplace_back("old", MakeTensor(DType::kFloat32, {100}));
  NamedTensors second;
  second.emplace_back("new", MakeTensor(DType::kInt32, {2}, 9));
  ASSERT_TRUE(IsOk(WriteSafetensors(path, first)));
  ASSERT_TRUE(IsOk(WriteSafetensors(path, second)));
  absl::StatusOr<NamedTensors> read = ReadSafetensors(path);
  ASSERT_TRUE(IsOk(read));
  ExpectSameTensors(*read, second);
  EXPECT_EQ(DirectoryEntries(dir_), std::vector<std::string>{"w.safetensors"});
}

// ---- Files written by hand ----

TEST_F(SafetensorsTest, ReadsAHandWrittenFile) {
  // One F32 tensor of shape [2] holding 1.0 and -2.5: 0x3f800000 and 0xc0200000.
  const std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_EQ(header.size(), 54u);
  const std::string file = std::string("\x36\0\0\0\0\0\0\0", 8) + header +
                           std::string("\x00\x00\x80\x3f\x00\x00\x20\xc0", 8);
  ASSERT_EQ(file, FileOf(header, std::string("\x00\x00\x80\x3f\x00\x00\x20\xc0", 8)));
  const std::string path = PathOf("hand.safetensors");
  WriteFileBytes(path, file);

  absl::StatusOr<NamedTensors> read = ReadSafetensors(path);
  ASSERT_TRUE(IsOk(read));
  ASSERT_EQ(read->size(), 1u);
  const auto& [name, tensor] = (*read)[0];
  EXPECT_EQ(name, "x");
  EXPECT_EQ(tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(tensor.shape().dims(), distribute::Dims{2});
  ASSERT_EQ(tensor.byte_size(), 8u);
  float values[2];
  std::memcpy(values, tensor.data(), sizeof(values));
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.5f);
  EXPECT_EQ(tensor.device().type, DeviceType::kCpu);
  EXPECT_EQ(tensor.device().index, 0);
}

// A file of another producer (the Python safetensors package writes U16, U32, U64, C64
// and F8 tensors for numpy/torch arrays of those dtypes). Reading every tensor fails on
// the first dtype we lack; reading only the tensors asked for skips the others, whatever
// their dtype or shape, while their byte ranges still count for the overlap check.
TEST_F(SafetensorsTest, ReadsOnlyTheTensorsAskedFor) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("ids":{"dtype":"U16","shape":[2],"data_offsets":[0,4]},)"
      R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
      R"("step":{"dtype":"U64","shape":[1],"data_offsets":[8,16]},)"
      R"("mask":{"dtype":"U32","shape":[1],"data_offsets":[16,20]},)"
      R"("z":{"dtype":"C64","shape":[1],"data_offsets":[20,28]},)"
      R"("f8":{"dtype":"F8_E4M3","shape":"odd","data_offsets":[28,30]}})";
  std::string data(30, '\0');
  const float w = 2.5f;
  std::memcpy(data.data() + 4, &w, 4);
  const std::string file = FileOf(header, data);
  EXPECT_TRUE(HasError(ParseSafetensors(file, "p.safetensors"), absl::StatusCode::kInvalidArgument,
                       {"p.safetensors", "'ids'", "'U16'", "not supported"}));
  const std::set<std::string> only = {"w", "absent"};
  absl::StatusOr<NamedTensors> read = ParseSafetensors(file, "p.safetensors", &only);
  ASSERT_TRUE(IsOk(read));
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].first, "w");
  float got;
  std::memcpy(&got, (*read)[0].second.data(), 4);
  EXPECT_EQ(got, 2.5f);
  // A tensor asked for keeps every check; a skipped one still needs its byte range.
  const std::set<std::string> ids = {"ids"};
  EXPECT_TRUE(HasError(ParseSafetensors(file, "p.safetensors", &ids),
                       absl::StatusCode::kInvalidArgument, {"'ids'", "U16"}));
  const std::string overlapping =
      FileOf(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
             R"("u":{"dtype":"U32","shape":[1],"data_offsets":[2,6]}})",
             std::string(8, '\0'));
  const std::set<std::string> just_w = {"w"};
  EXPECT_TRUE(HasError(ParseSafetensors(overlapping, "o", &just_w), absl::StatusCode::kDataLoss,
                       {"overlap"}));
  const std::string outside =
      FileOf(R"({"u":{"dtype":"U32","shape":[1],"data_offsets":[0,40]}})", std::string(8, '\0'));
  EXPECT_TRUE(HasError(ParseSafetensors(outside, "o", &just_w), absl::StatusCode::kDataLoss,
                       {"'u'", "outside"}));
  const std::string no_offsets = FileOf(R"({"u":{"dtype":"U32"}})", "");
  EXPECT_TRUE(HasError(ParseSafetensors(no_offsets, "o", &just_w),
                       absl::StatusCode::kInvalidArgument, {"'u'", "data_offsets"}));
}

TEST_F(SafetensorsTest, ReadsHandWrittenHeadersInDataOrder) {
  // Header order differs from data order; metadata, padding, an extra field, a scalar and
  // an empty tensor between the other two.
  const std::string header =
      R"({"__metadata__":{"format":"pt","note":"x"},)"
      R"("late":{"dtype":"BF16","shape":[],"data_offsets":[2,4],"extra":true},)"
      R"("none":{"dtype":"I64","shape":[0,4],"data_offsets":[2,2]},)"
      R"("early":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}})"
      "      ";
  const std::string data("\x34\x12\x80\x3f", 4);
  absl::StatusOr<NamedTensors> read = ParseSafetensors(FileOf(header, data), "m.safetensors");
  ASSERT_TRUE(IsOk(read));
  ASSERT_EQ(read->size(), 3u);
  EXPECT_EQ((*read)[0].first, "early");
  EXPECT_EQ((*read)[1].first, "none");
  EXPECT_EQ((*read)[2].first, "late");
  int16_t early;
  std::memcpy(&early, (*read)[0].second.data(), 2);
  EXPECT_EQ(early, 0x1234);
  EXPECT_EQ((*read)[1].second.dtype(), DType::kInt64);
  EXPECT_EQ((*read)[1].second.shape().dims(), (distribute::Dims{0, 4}));
  EXPECT_EQ((*read)[1].second.byte_size(), 0u);
  EXPECT_EQ((*read)[2].second.dtype(), DType::kBFloat16);
  EXPECT_EQ((*read)[2].second.shape().rank(), 0);
  EXPECT_EQ(BytesOf((*read)[2].second), std::string("\x80\x3f", 2));  // bfloat16 1.0
}

// ---- The data section must be tiled exactly by the tensors ----

// A valid file whose length prefix is one byte short: the JSON still parses (its last byte
// is padding) but the data section then starts one byte early, so every tensor would be
// read one byte off. The format says the tensors cover the data section exactly.
TEST_F(SafetensorsTest, AHeaderLengthOneByteShortIsDataLoss) {
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"I16","shape":[2],"data_offsets":[8,12]}})";
  header.append(8 - header.size() % 8, ' ');  // padding, as writers align the data
  const std::string data("\x00\x00\x80\x3f\x00\x00\x20\xc0\x01\x00\x02\x00", 12);
  ASSERT_TRUE(IsOk(ParseSafetensors(FileOf(header, data), "s.safetensors")));
  const std::string one_short = LengthPrefix(header.size() - 1) + header + data;
  EXPECT_TRUE(HasError(ParseSafetensors(one_short, "s.safetensors"), kDataLoss,
                       {"s.safetensors", "13 bytes", "cover only the first 12"}));
  // The restore path reads only some tensors; the whole file's coverage still counts.
  const std::set<std::string> just_b = {"b"};
  EXPECT_TRUE(HasError(ParseSafetensors(one_short, "s.safetensors", &just_b), kDataLoss,
                       {"cover only the first 12"}));
  // The same through the file reader, for a file our own writer made.
  NamedTensors tensors;
  tensors.emplace_back("w", MakeTensor(DType::kFloat32, {3, 4}));
  tensors.emplace_back("v", MakeTensor(DType::kInt64, {5}));
  absl::StatusOr<std::string> bytes = SerializeSafetensors(tensors);
  ASSERT_TRUE(IsOk(bytes));
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= uint64_t{static_cast<unsigned char>((*bytes)[i])} << (8 * i);
  const std::string path = PathOf("short.safetensors");
  WriteFileBytes(path, LengthPrefix(length - 1) + bytes->substr(8));
  EXPECT_TRUE(HasError(ReadSafetensors(path), kDataLoss, {path}));
  const std::set<std::string> just_v = {"v"};
  EXPECT_TRUE(HasError(ReadSafetensors(path, &just_v), kDataLoss, {path}));
}

TEST_F(SafetensorsTest, TrailingBytesAreDataLoss) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
  ASSERT_TRUE(IsOk(ParseSafetensors(FileOf(header, "abcd"), "t")));
  EXPECT_TRUE(HasError(ParseSafetensors(FileOf(header, "abcdX"), "t"), kDataLoss,
                       {"the data section is 5 bytes", "cover only the first 4"}));
  const std::set<std::string> nothing;
  EXPECT_TRUE(HasError(ParseSafetensors(FileOf(header, "abcdX"), "t", &nothing), kDataLoss));
  // No tensors at all: the data section must be empty.
  EXPECT_TRUE(IsOk(ParseSafetensors(FileOf("{}", ""), "t")));
  EXPECT_TRUE(HasError(ParseSafetensors(FileOf("{}", "x"), "t"), kDataLoss,
                       {"cover only the first 0"}));
}

TEST_F(SafetensorsTest, HolesInTheDataSectionAreDataLoss) {
  // Bytes [2, 3) belong to no tensor.
  const std::string between = FileOf(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                     R"("b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})",
                                     "abcde");
  EXPECT_TRUE(HasError(ParseSafetensors(between, "h"), kDataLoss,
                       {"bytes [2, 3)", "'b'", "[3, 5]", "holes"}));
  const std::set<std::string> just_a = {"a"};
  EXPECT_TRUE(HasError(ParseSafetensors(between, "h", &just_a), kDataLoss, {"bytes [2, 3)"}));
  // The first tensor must start at byte 0.
  EXPECT_TRUE(HasError(
      ParseSafetensors(FileOf(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", "abc"),
                       "h"),
      kDataLoss, {"bytes [0, 1)", "'a'"}));
  // An empty tensor takes no bytes: it cannot fill a hole, and it may sit at any boundary.
  EXPECT_TRUE(HasError(
      ParseSafetensors(FileOf(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                              R"("e":{"dtype":"U8","shape":[0],"data_offsets":[3,3]},)"
                              R"("b":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}})",
                              "abcd"),
                       "h"),
      kDataLoss, {"bytes [2, 3)"}));
  absl::StatusOr<NamedTensors> boundary =
      ParseSafetensors(FileOf(R"({"e0":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                              R"("a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                              R"("e2":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})",
                              "ab"),
                       "h");
  ASSERT_TRUE(IsOk(boundary));
  EXPECT_EQ(boundary->size(), 3u);
}

TEST_F(SafetensorsTest, MapsEveryDTypeName) {
  const std::pair<const char*, DType> names[] = {
      {"BOOL", DType::kBool},   {"U8", DType::kUInt8},      {"I8", DType::kInt8},
      {"I16", DType::kInt16},   {"I32", DType::kInt32},     {"I64", DType::kInt64},
      {"F16", DType::kFloat16}, {"BF16", DType::kBFloat16}, {"F32", DType::kFloat32},
      {"F64", DType::kFloat64}};
  for (const auto& [name, dtype] : names) {
    SCOPED_TRACE(name);
    const size_t size = DTypeSize(dtype);
    const std::string header = absl::StrCat(R"({"t":{"dtype":")", name,
                                            R"(","shape":[1],"data_offsets":[0,)", size, "]}}");
    absl::StatusOr<NamedTensors> read =
        ParseSafetensors(FileOf(header, std::string(size, '\1')), "d.safetensors");
    ASSERT_TRUE(IsOk(read));
    ASSERT_EQ(read->size(), 1u);
    EXPECT_EQ((*read)[0].second.dtype(), dtype);

    // And the writer uses the same name.
    NamedTensors one;
    one.emplace_back("t", MakeTensor(dtype, {1}));
    absl::StatusOr<std::string> bytes = SerializeSafetensors(one);
    ASSERT_TRUE(IsOk(bytes));
    EXPECT_NE(bytes->find(absl::StrCat("\"dtype\":\"", name, "\"")), std::string::npos);
  }
}

// ---- The layout of written files, checked independently ----

TEST_F(SafetensorsTest, WrittenFileHasTheStandardLayout) {
  NamedTensors tensors;
  tensors.emplace_back("a", MakeTensor(DType::kFloat32, {2}));
  tensors.emplace_back("b", MakeTensor(DType::kInt64, {3}));
  tensors.emplace_back("c", MakeTensor(DType::kUInt8, {0}));
  tensors.emplace_back("d", MakeTensor(DType::kBFloat16, {}));
  const std::string path = PathOf("layout.safetensors");
  ASSERT_TRUE(IsOk(WriteSafetensors(path, tensors)));
  const std::string file = ReadFileBytes(path);

  ASSERT_GE(file.size(), 8u);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | static_cast<uint8_t>(file[i]);
  EXPECT_EQ(header_size % 8, 0u);
  ASSERT_EQ(file.size(), 8 + header_size + 8 + 24 + 0 + 2);

  const std::string header = file.substr(8, header_size);
  const size_t json_end = header.find_last_not_of(' ') + 1;
  EXPECT_EQ(header[json_end - 1], '}');
  EXPECT_LT(header.size() - json_end, 8u);  // at most 7 spaces of padding
  const nlohmann::json json = nlohmann::json::parse(header, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << header;
  ASSERT_TRUE(json.is_object());
  EXPECT_EQ(json.size(), 5u);
  EXPECT_EQ(json["__metadata__"], nlohmann::json({{"format", "distribute"}}));
  EXPECT_EQ(json["a"], nlohmann::json::parse(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})"));
  EXPECT_EQ(json["b"], nlohmann::json::parse(R"({"dtype":"I64","shape":[3],"data_offsets":[8,32]})"));
  EXPECT_EQ(json["c"], nlohmann::json::parse(R"({"dtype":"U8","shape":[0],"data_offsets":[32,32]})"));
  EXPECT_EQ(json["d"], nlohmann::json::parse(R"({"dtype":"BF16","shape":[],"data_offsets":[32,34]})"));

  const std::string data = file.substr(8 + header_size);
  EXPECT_EQ(data.substr(0, 8), BytesOf(tensors[0].second));
  EXPECT_EQ(data.substr(8, 24), BytesOf(tensors[1].second));
  EXPECT_EQ(data.substr(32, 2), BytesOf(tensors[3].second));
}

// ---- Corrupt input: an error naming the file, never a crash ----

struct CorruptCase {
  const char* what;
  std::string bytes;
  absl::StatusCode code;
  std::vector<std::string> message_parts;
};

std::vector<CorruptCase> CorruptCases() {
  const std::string f32x4(16, '\0');
  auto entry = [](const std::string& body) { return absl::StrCat(R"({"w":)", body, "}"); };
  return {
      {"empty file", "", kDataLoss, {"too short"}},
      {"truncated length", std::string("\x10\0\0", 3), kDataLoss, {"3 bytes", "too short"}},
      {"length past the end", LengthPrefix(100) + "{}", kDataLoss, {"header length is 100"}},
      {"length near 2^64", LengthPrefix(~uint64_t{0}) + "{}", kDataLoss, {"header length"}},
      {"invalid JSON", FileOf(R"({"w":{"dtype":)", ""), kDataLoss, {"not valid JSON"}},
      {"not JSON at all", FileOf("\xff\xfe garbage", ""), kDataLoss, {"not valid JSON"}},
      {"trailing junk after the object", FileOf("{} x", ""), kDataLoss, {"not valid JSON"}},
      {"array header", FileOf("[1,2]", ""), kInvalidArgument, {"array", "expected an object"}},
      {"string header", FileOf(R"("w")", ""), kInvalidArgument, {"expected an object"}},
      {"entry not an object", FileOf(entry("[1]"), ""), kInvalidArgument, {"'w'", "array"}},
      {"unsupported dtype",
       FileOf(entry(R"({"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]})"), "\1"),
       kInvalidArgument, {"'w'", "F8_E4M3", "not supported"}},
      {"dtype not a string",
       FileOf(entry(R"({"dtype":1,"shape":[1],"data_offsets":[0,1]})"), "\1"), kInvalidArgument,
       {"'w'", "dtype"}},
      {"missing dtype", FileOf(entry(R"({"shape":[1],"data_offsets":[0,1]})"), "\1"),
       kInvalidArgument, {"'w'", "dtype"}},
      {"negative dimension",
       FileOf(entry(R"({"dtype":"U8","shape":[-2],"data_offsets":[0,0]})"), ""),
       kInvalidArgument, {"'w'", "-2", ">= 0"}},
      {"fractional dimension",
       FileOf(entry(R"({"dtype":"U8","shape":[2.5],"data_offsets":[0,2]})"), "ab"),
       kInvalidArgument, {"'w'", "shape[0]"}},
      {"shape not an array",
       FileOf(entry(R"({"dtype":"U8","shape":2,"data_offsets":[0,2]})"), "ab"),
       kInvalidArgument, {"'w'", "shape"}},
      {"missing shape", FileOf(entry(R"({"dtype":"U8","data_offsets":[0,2]})"), "ab"),
       kInvalidArgument, {"'w'", "shape"}},
      {"rank 33",
       FileOf(entry(absl::StrCat(R"({"dtype":"U8","shape":[)",
                                 absl::StrJoin(std::vector<int>(33, 1), ","),
                                 R"(],"data_offsets":[0,1]})")),
              "a"),
       kInvalidArgument, {"'w'", "rank 33"}},
      {"element count overflows",
       FileOf(entry(R"({"dtype":"U8","shape":[1099511627776,1099511627776],"data_offsets":[0,0]})"),
              ""),
       kInvalidArgument, {"'w'", "too many elements"}},
      {"dimension above int64",
       FileOf(entry(R"({"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,0]})"), ""),
       kInvalidArgument, {"'w'", "too large"}},
      {"offsets past the data section",
       FileOf(entry(R"({"dtype":"F32","shape":[2,2],"data_offsets":[0,16]})"), std::string(12, 'x')),
       kDataLoss, {"'w'", "[0, 16]", "only 12 bytes"}},
      {"offsets beyond 2^64",
       FileOf(entry(R"({"dtype":"U8","shape":[1],"data_offsets":[0,99999999999999999999999]})"),
              "x"),
       kInvalidArgument, {"'w'", "data_offsets"}},
      {"begin after end",
       FileOf(entry(R"({"dtype":"U8","shape":[0],"data_offsets":[4,2]})"), "abcd"), kDataLoss,
       {"'w'", "[4, 2]", "begin is after end"}},
      {"negative offset",
       FileOf(entry(R"({"dtype":"U8","shape":[1],"data_offsets":[-1,0]})"), "a"),
       kInvalidArgument, {"'w'", "data_offsets"}},
      {"three offsets",
       FileOf(entry(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1,2]})"), "ab"),
       kInvalidArgument, {"'w'", "data_offsets"}},
      {"missing offsets", FileOf(entry(R"({"dtype":"U8","shape":[1]})"), "a"), kInvalidArgument,
       {"'w'", "data_offsets"}},
      {"size mismatch",
       FileOf(entry(R"({"dtype":"F32","shape":[2,2],"data_offsets":[0,12]})"), f32x4), kDataLoss,
       {"f.safetensors: tensor 'w' has data_offsets [0, 12] but a float32 tensor of shape [2, 2] "
        "needs 16 bytes"}},
      {"overlapping entries",
       FileOf(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
              R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
              "abcdef"),
       kDataLoss, {"'a'", "'b'", "[0, 4]", "[2, 6]", "overlap"}},
      {"identical entries",
       FileOf(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
              R"("b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
              "ab"),
       kDataLoss, {"overlap"}},
      {"repeated name",
       FileOf(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
              R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
              "ab"),
       kInvalidArgument, {"'a'", "twice"}},
      {"empty name", FileOf(R"({"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "a"),
       kInvalidArgument, {"empty name"}},
  };
}

TEST_F(SafetensorsTest, CorruptInputsAreErrors) {
  for (const CorruptCase& c : CorruptCases()) {
    SCOPED_TRACE(c.what);
    absl::StatusOr<NamedTensors> parsed = ParseSafetensors(c.bytes, "f.safetensors");
    ASSERT_TRUE(HasError(parsed, c.code, {"f.safetensors: "}));
    for (const std::string& part : c.message_parts) {
      EXPECT_NE(parsed.status().message().find(part), absl::string_view::npos)
          << parsed.status() << "\n  does not contain: " << part;
    }
  }
}

TEST_F(SafetensorsTest, CorruptFilesAreErrorsNamingThePath) {
  int index = 0;
  for (const CorruptCase& c : CorruptCases()) {
    SCOPED_TRACE(c.what);
    const std::string path = PathOf(absl::StrCat("bad", index++, ".safetensors"));
    WriteFileBytes(path, c.bytes);
    EXPECT_TRUE(HasError(ReadSafetensors(path), c.code, {path}));
  }
}

TEST_F(SafetensorsTest, EveryTruncationOfAValidFileIsAnError) {
  NamedTensors tensors;
  tensors.emplace_back("a", MakeTensor(DType::kFloat32, {3}));
  tensors.emplace_back("b", MakeTensor(DType::kInt8, {2, 2}));
  absl::StatusOr<std::string> bytes = SerializeSafetensors(tensors);
  ASSERT_TRUE(IsOk(bytes));
  ASSERT_TRUE(IsOk(ParseSafetensors(*bytes, "t")));
  for (size_t size = 0; size < bytes->size(); ++size) {
    SCOPED_TRACE(size);
    absl::StatusOr<NamedTensors> parsed = ParseSafetensors(absl::string_view(*bytes).substr(0, size), "t");
    ASSERT_FALSE(parsed.ok());
    EXPECT_TRUE(parsed.status().code() == kDataLoss || parsed.status().code() == kInvalidArgument)
        << parsed.status();
  }
}

TEST_F(SafetensorsTest, FlippedBytesNeverCrash) {
  NamedTensors tensors;
  tensors.emplace_back("a", MakeTensor(DType::kFloat32, {3}));
  tensors.emplace_back("b", MakeTensor(DType::kInt8, {2, 2}));
  absl::StatusOr<std::string> bytes = SerializeSafetensors(tensors);
  ASSERT_TRUE(IsOk(bytes));
  int errors = 0;
  for (size_t i = 0; i < bytes->size(); ++i) {
    for (unsigned char value : {0x00, 0x01, 0x22, 0x2c, 0x5b, 0x7b, 0x7d, 0x80, 0xff}) {
      std::string corrupt = *bytes;
      corrupt[i] = static_cast<char>(value);
      absl::StatusOr<NamedTensors> parsed = ParseSafetensors(corrupt, "t");
      if (!parsed.ok()) {
        ++errors;
        EXPECT_TRUE(parsed.status().code() == kDataLoss ||
                    parsed.status().code() == kInvalidArgument)
            << parsed.status();
      }
    }
  }
  EXPECT_GT(errors, 0);
}

TEST_F(SafetensorsTest, DeeplyNestedHeaderDoesNotExhaustTheStack) {
  const size_t depth = 100000;
  const std::string nested = std::string(depth, '[') + std::string(depth, ']');
  absl::StatusOr<NamedTensors> skipped =
      ParseSafetensors(FileOf(absl::StrCat(R"({"__metadata__":)", nested, "}"), ""), "n");
  ASSERT_TRUE(IsOk(skipped));
  EXPECT_TRUE(skipped->empty());
  EXPECT_TRUE(HasError(ParseSafetensors(FileOf(absl::StrCat(R"({"w":)", nested, "}"), ""), "n"),
                       kInvalidArgument, {"'w'"}));
  EXPECT_TRUE(HasError(ParseSafetensors(FileOf(std::string(depth, '{'), ""), "n"), kDataLoss));
}

// ---- Reading files ----

TEST_F(SafetensorsTest, ReadingAMissingFileIsNotFound) {
  const std::string path = PathOf("missing.safetensors");
  EXPECT_TRUE(HasError(ReadSafetensors(path), absl::StatusCode::kNotFound,
                       {path, "No such file or directory"}));
}

TEST_F(SafetensorsTest, ReadingADirectoryFails) {
  EXPECT_TRUE(HasError(ReadSafetensors(dir_.string()), absl::StatusCode::kFailedPrecondition,
                       {dir_.string(), "Is a directory"}));
}

// ---- Writing: argument checks and atomicity ----

TEST_F(SafetensorsTest, WritingToAMissingDirectoryFailsAndLeavesNothing) {
  const std::string path = PathOf("no/such/dir/x.safetensors");
  NamedTensors tensors;
  tensors.emplace_back("a", MakeTensor(DType::kFloat32, {2}));
  EXPECT_TRUE(HasError(WriteSafetensors(path, tensors), absl::StatusCode::kNotFound,
                       {path, "No such file or directory"}));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(DirectoryEntries(dir_).empty());
}

TEST_F(SafetensorsTest, WritingOverADirectoryFailsAndLeavesNothing) {
  const std::string path = PathOf("taken");
  fs::create_directory(path);
  NamedTensors tensors;
  tensors.emplace_back("a", MakeTensor(DType::kFloat32, {2}));
  const absl::Status status = WriteSafetensors(path, tensors);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(path), absl::string_view::npos) << status;
  EXPECT_EQ(DirectoryEntries(dir_), std::vector<std::string>{"taken"});
  EXPECT_TRUE(fs::is_directory(path));
}

TEST_F(SafetensorsTest, WritingIntoAReadOnlyDirectoryIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  const std::string path = PathOf("x.safetensors");
  NamedTensors tensors;
  tensors.emplace_back("a", MakeTensor(DType::kFloat32, {2}));
  EXPECT_TRUE(HasError(WriteSafetensors(path, tensors), absl::StatusCode::kPermissionDenied,
                       {path, "Permission denied"}));
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_TRUE(DirectoryEntries(dir_).empty());
}

TEST_F(SafetensorsTest, BadNamesAreRejectedBeforeAnythingIsWritten) {
  const std::string path = PathOf("x.safetensors");
  const Tensor t = MakeTensor(DType::kUInt8, {1});
  const std::vector<std::pair<NamedTensors, std::vector<absl::string_view>>> cases = {
      {{{"a", t}, {"b", t}, {"a", t}}, {"two tensors are named 'a'"}},
      {{{"a", t}, {"", t}}, {"tensor #1", "empty name"}},
      {{{"__metadata__", t}}, {"__metadata__", "reserved"}},
      {{{"bad\xff", t}}, {"UTF-8"}},
  };
  for (const auto& [tensors, parts] : cases) {
    SCOPED_TRACE(parts.front());
    const absl::Status status = WriteSafetensors(path, tensors);
    EXPECT_TRUE(HasError(status, kInvalidArgument, {path}));
    for (absl::string_view part : parts) {
      EXPECT_NE(status.message().find(part), absl::string_view::npos) << status;
    }
    EXPECT_TRUE(HasError(SerializeSafetensors(tensors), kInvalidArgument));
  }
  EXPECT_TRUE(DirectoryEntries(dir_).empty());
}

TEST_F(SafetensorsTest, DeviceTensorsAreRejected) {
  DeviceSpec gpu;
  gpu.type = DeviceType::kGpu;
  gpu.index = 0;
  // Never dereferenced: the writer must refuse before touching the data.
  static char fake_device_memory[4];
  auto buffer = Buffer::Borrow(gpu, fake_device_memory, 4, nullptr);
  const std::vector<int64_t> dims = {1};
  absl::StatusOr<Tensor> tensor = Tensor::FromBuffer(DType::kFloat32, *Shape::Make(dims), buffer);
  ASSERT_TRUE(IsOk(tensor));
  const std::string path = PathOf("gpu.safetensors");
  EXPECT_TRUE(HasError(WriteSafetensors(path, {{"g", *tensor}}), kInvalidArgument,
                       {path, "'g'", "GPU", "host"}));
  EXPECT_TRUE(DirectoryEntries(dir_).empty());
}

// Run in a child process, so that the limit does not outlive the test: exits 0 when the
// write fails with ResourceExhausted naming the path.
[[noreturn]] void WriteUnderFileSizeLimit(const std::string& path, const NamedTensors& tensors) {
  ::signal(SIGXFSZ, SIG_IGN);
  const struct rlimit limit = {64 * 1024, 64 * 1024};
  ::setrlimit(RLIMIT_FSIZE, &limit);
  const absl::Status status = WriteSafetensors(path, tensors);
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  const bool expected = status.code() == absl::StatusCode::kResourceExhausted &&
                        status.message().find(path) != absl::string_view::npos;
  std::_Exit(expected ? 0 : 1);
}

// A write that runs out of space (here: the file size limit, which gives EFBIG) fails
// with the path in the message, leaves no temporary file and keeps the old file intact.
TEST_F(SafetensorsTest, FailedWriteKeepsTheOldFile) {
  const std::string path = PathOf("keep.safetensors");
  NamedTensors old_tensors;
  old_tensors.emplace_back("old", MakeTensor(DType::kInt32, {4}));
  ASSERT_TRUE(IsOk(WriteSafetensors(path, old_tensors)));
  NamedTensors big;
  big.emplace_back("big", MakeTensor(DType::kFloat64, {1 << 16}));

  EXPECT_EXIT(WriteUnderFileSizeLimit(path, big), ::testing::ExitedWithCode(0),
              "RESOURCE_EXHAUSTED: cannot write .*keep.safetensors.tmp-");

  EXPECT_EQ(DirectoryEntries(dir_), std::vector<std::string>{"keep.safetensors"});
  absl::StatusOr<NamedTensors> read = ReadSafetensors(path);
  ASSERT_TRUE(IsOk(read));
  ExpectSameTensors(*read, old_tensors);
}

}  // namespace
}  // namespace distribute
