// The in-memory and text/fixed-length file sources.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/input/sources.h"
#include "gtest/gtest.h"
#include "tests/core/input_test_util.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::Bytes;
using ::distribute::testing::Collect;
using ::distribute::testing::CollectBytes;
using ::distribute::testing::CollectScalars;
using ::distribute::testing::HasError;
using ::distribute::testing::Int64Tensor;
using ::distribute::testing::IsOk;
using ::distribute::testing::MakeTensor;
using ::distribute::testing::Values;
using ::distribute::testing::WriteFile;

TEST(TensorSlicesTest, SlicesEveryComponentAlongTheFirstAxis) {
  Tensor a = Int64Tensor({3, 2}, {0, 1, 10, 11, 20, 21});
  Tensor b = MakeTensor<float>(DType::kFloat32, {3}, {0.5f, 1.5f, 2.5f});
  auto ds = FromTensorSlices({a, b});
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ((*ds)->num_components(), 2);
  std::vector<Element> elements = Collect(*ds);
  ASSERT_EQ(elements.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    const Element& e = elements[static_cast<size_t>(i)];
    EXPECT_EQ(e[0].shape().dims(), distribute::Dims({2}));
    EXPECT_EQ(Values<int64_t>(e[0]), std::vector<int64_t>({10 * i, 10 * i + 1}));
    EXPECT_EQ(e[1].shape().rank(), 0);
    EXPECT_EQ(Values<float>(e[1]), std::vector<float>({0.5f + static_cast<float>(i)}));
    EXPECT_EQ(e[1].device_name(), a.device_name());
  }
  // A second iterator is an independent pass.
  EXPECT_EQ(Collect(*ds).size(), 3u);
}

TEST(TensorSlicesTest, ElementsOutliveTheDatasetAndItsComponents) {
  Element kept;
  {
    auto ds = FromTensorSlices({Int64Tensor({2}, {7, 8})});
    ASSERT_TRUE(IsOk(ds));
    std::vector<Element> elements = Collect(*ds);
    ASSERT_EQ(elements.size(), 2u);
    kept = elements[1];
  }
  EXPECT_EQ(Values<int64_t>(kept[0]), std::vector<int64_t>({8}));
}

TEST(TensorSlicesTest, RejectsBadComponents) {
  EXPECT_TRUE(HasError(FromTensorSlices({}), absl::StatusCode::kInvalidArgument, {"components"}));
  EXPECT_TRUE(HasError(FromTensorSlices({Int64Tensor({}, {1})}),
                       absl::StatusCode::kInvalidArgument, {"component 0", "rank"}));
  EXPECT_TRUE(HasError(FromTensorSlices({Int64Tensor({2}, {1, 2}), Int64Tensor({3}, {1, 2, 3})}),
                       absl::StatusCode::kInvalidArgument, {"component 1", "[3]", "[2]"}));
}

TEST(TensorSlicesTest, ZeroRowsIsEmpty) {
  auto ds = FromTensorSlices({Int64Tensor({0, 4}, {})});
  ASSERT_TRUE(IsOk(ds));
  EXPECT_TRUE(Collect(*ds).empty());
}

TEST(TensorSlicesTest, ReadsNoFiles) {
  auto ds = FromTensorSlices({Int64Tensor({1}, {1})});
  ASSERT_TRUE(IsOk(ds));
  EXPECT_TRUE((*ds)->SourceFiles().empty());
  EXPECT_TRUE(HasError((*ds)->WithSourceFiles({"x"}), absl::StatusCode::kFailedPrecondition));
}

TEST(RangeTest, CountsUpAndDown) {
  auto up = Range(2, 11, 3);
  ASSERT_TRUE(IsOk(up));
  EXPECT_EQ(CollectScalars(*up), std::vector<int64_t>({2, 5, 8}));
  auto down = Range(5, 0, -2);
  ASSERT_TRUE(IsOk(down));
  EXPECT_EQ(CollectScalars(*down), std::vector<int64_t>({5, 3, 1}));
  auto empty = Range(5, 5, 1);
  ASSERT_TRUE(IsOk(empty));
  EXPECT_TRUE(CollectScalars(*empty).empty());
  auto wrong_way = Range(0, 5, -1);
  ASSERT_TRUE(IsOk(wrong_way));
  EXPECT_TRUE(CollectScalars(*wrong_way).empty());
}

TEST(RangeTest, StopsAtTheEdgeOfInt64) {
  const int64_t max = INT64_MAX;
  auto ds = Range(max - 2, max, 5);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectScalars(*ds), std::vector<int64_t>({max - 2}));
}

TEST(RangeTest, RejectsAZeroStep) {
  EXPECT_TRUE(HasError(Range(0, 1, 0), absl::StatusCode::kInvalidArgument, {"step"}));
  auto ds = Range(0, 1, 1);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_TRUE(HasError((*ds)->WithSourceFiles({"x"}), absl::StatusCode::kFailedPrecondition));
}

std::shared_ptr<const GeneratorFn> CountTo(int64_t n, int32_t components) {
  return std::make_shared<const GeneratorFn>(
      [n, components](int64_t index, Element* out) -> absl::StatusOr<bool> {
        if (index >= n) return false;
        for (int32_t c = 0; c < components; ++c) out->push_back(Int64Tensor({}, {index * 10 + c}));
        return true;
      });
}

TEST(GeneratorTest, EveryIteratorRestartsAtIndexZero) {
  auto ds = FromGenerator(2, CountTo(4, 2));
  ASSERT_TRUE(IsOk(ds));
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Element> elements = Collect(*ds);
    ASSERT_EQ(elements.size(), 4u);
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(testing::Scalar(elements[static_cast<size_t>(i)][0]), i * 10);
      EXPECT_EQ(testing::Scalar(elements[static_cast<size_t>(i)][1]), i * 10 + 1);
    }
  }
}

TEST(GeneratorTest, ChecksTheComponentCount) {
  auto ds = FromGenerator(3, CountTo(4, 2));
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kInvalidArgument, {"2", "3"}));
}

TEST(GeneratorTest, AFailingGeneratorFailsGetNextAndStaysDestroyable) {
  int calls = 0;
  auto fn = std::make_shared<const GeneratorFn>([&calls](int64_t index, Element* out) -> absl::StatusOr<bool> {
    ++calls;
    if (index == 1) return absl::InternalError("generator broke");
    out->push_back(Int64Tensor({}, {index}));
    return true;
  });
  auto ds = FromGenerator(1, fn);
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  EXPECT_TRUE(IsOk((*it)->GetNext(&e)));
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kInternal, {"generator broke"}));
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kInternal, {"generator broke"}));
  EXPECT_EQ(calls, 2);
}

TEST(GeneratorTest, RejectsBadArguments) {
  EXPECT_TRUE(HasError(FromGenerator(0, CountTo(1, 1)), absl::StatusCode::kInvalidArgument,
                       {"num_components"}));
  EXPECT_TRUE(HasError(FromGenerator(1, nullptr), absl::StatusCode::kInvalidArgument, {"fn"}));
}

TEST(TextLinesTest, SplitsLinesAcrossFilesWithoutTerminators) {
  const std::string a = WriteFile("a.txt", "first\nsecond\r\n\nno newline");
  const std::string b = WriteFile("b.txt", "");
  const std::string c = WriteFile("c.txt", "x\n");
  auto ds = TextLines({a, b, c});
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectBytes(*ds),
            std::vector<std::string>({"first", "second", "", "no newline", "x"}));
  EXPECT_EQ((*ds)->SourceFiles(), std::vector<std::string>({a, b, c}));
  auto only_c = (*ds)->WithSourceFiles({c});
  ASSERT_TRUE(IsOk(only_c));
  EXPECT_EQ(CollectBytes(*only_c), std::vector<std::string>({"x"}));
}

TEST(TextLinesTest, ReadsLinesLongerThanTheReadBuffer) {
  const std::string long_line(600 * 1024, 'q');
  const std::string path = WriteFile("long.txt", "a\n" + long_line + "\nb");
  auto ds = TextLines({path});
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectBytes(*ds), std::vector<std::string>({"a", long_line, "b"}));
}

TEST(TextLinesTest, AMissingFileIsAnErrorNamingIt) {
  const std::string good = WriteFile("good.txt", "line\n");
  const std::string missing = testing::TempPath("does_not_exist.txt");
  auto ds = TextLines({good, missing});
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  absl::StatusOr<bool> first = (*it)->GetNext(&e);
  ASSERT_TRUE(IsOk(first));
  EXPECT_TRUE(*first);
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kNotFound, {missing}));
}

TEST(TextLinesTest, ADirectoryIsAnErrorNamingIt) {
  const std::string dir = ::testing::TempDir();
  auto ds = TextLines({dir});
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  absl::StatusOr<bool> got = (*it)->GetNext(&e);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(std::string(got.status().message()).find(dir), std::string::npos);
}

TEST(FixedLengthRecordsTest, SkipsHeaderAndFooter) {
  const std::string a = WriteFile("a.bin", "HHabcdefFFF");
  const std::string b = WriteFile("b.bin", "HHxyFFF");
  auto ds = FixedLengthRecords({a, b}, 2, 2, 3);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectBytes(*ds), std::vector<std::string>({"ab", "cd", "ef", "xy"}));
  EXPECT_EQ((*ds)->SourceFiles(), std::vector<std::string>({a, b}));
  auto only_b = (*ds)->WithSourceFiles({b});
  ASSERT_TRUE(IsOk(only_b));
  EXPECT_EQ(CollectBytes(*only_b), std::vector<std::string>({"xy"}));
}

TEST(FixedLengthRecordsTest, APartialRecordIsAnErrorNamingTheFile) {
  const std::string path = WriteFile("partial.bin", "abcde");
  auto ds = FixedLengthRecords({path}, 2, 0, 0);
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kDataLoss, {path}));
  const std::string tiny = WriteFile("tiny.bin", "a");
  auto short_ds = FixedLengthRecords({tiny}, 1, 1, 1);
  ASSERT_TRUE(IsOk(short_ds));
  auto it2 = (*short_ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it2));
  EXPECT_TRUE(HasError((*it2)->GetNext(&e), absl::StatusCode::kDataLoss, {tiny}));
}

TEST(FixedLengthRecordsTest, RejectsBadArguments) {
  EXPECT_TRUE(HasError(FixedLengthRecords({}, 0, 0, 0), absl::StatusCode::kInvalidArgument,
                       {"record_bytes is 0"}));
  EXPECT_TRUE(HasError(FixedLengthRecords({}, 1, -1, 0), absl::StatusCode::kInvalidArgument,
                       {"header_bytes"}));
  EXPECT_TRUE(HasError(FixedLengthRecords({}, 1, 0, -1), absl::StatusCode::kInvalidArgument,
                       {"footer_bytes"}));
}

}  // namespace
}  // namespace distribute
