// DeviceSpec::Parse, ToString and WithDefaults, checked against device names written out
// by hand in TensorFlow's grammar "/job:J/replica:R/task:T/device:TYPE:INDEX".
#include "core/device/device_spec.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();

DeviceSpec Spec(std::string job, int32_t replica, int32_t task, DeviceType type, int32_t index) {
  DeviceSpec spec;
  spec.job = std::move(job);
  spec.replica = replica;
  spec.task = task;
  spec.type = type;
  spec.index = index;
  return spec;
}

struct ValidCase {
  const char* name;
  DeviceSpec expected;
  const char* canonical;  // the expected ToString() of the parsed spec
};

constexpr DeviceType kNone = DeviceType::kUnspecified;
constexpr DeviceType kCpu = DeviceType::kCpu;
constexpr DeviceType kGpu = DeviceType::kGpu;

std::vector<ValidCase> ValidCases() {
  return {
      // Full form, every part.
      {"/job:worker/replica:0/task:1/device:GPU:0", Spec("worker", 0, 1, kGpu, 0),
       "/job:worker/replica:0/task:1/device:GPU:0"},
      {"/job:worker/replica:2/task:3/device:CPU:4", Spec("worker", 2, 3, kCpu, 4),
       "/job:worker/replica:2/task:3/device:CPU:4"},
      {"/job:localhost/replica:0/task:0/device:CPU:0", Spec("localhost", 0, 0, kCpu, 0),
       "/job:localhost/replica:0/task:0/device:CPU:0"},
      // Subsets of the parts, in order.
      {"/job:ps", Spec("ps", -1, -1, kNone, -1), "/job:ps"},
      {"/replica:7", Spec("", 7, -1, kNone, -1), "/replica:7"},
      {"/task:5", Spec("", -1, 5, kNone, -1), "/task:5"},
      {"/job:w/task:1", Spec("w", -1, 1, kNone, -1), "/job:w/task:1"},
      {"/job:w/replica:3", Spec("w", 3, -1, kNone, -1), "/job:w/replica:3"},
      {"/replica:1/device:GPU:2", Spec("", 1, -1, kGpu, 2), "/replica:1/device:GPU:2"},
      {"/job:chief/device:CPU:0", Spec("chief", -1, -1, kCpu, 0), "/job:chief/device:CPU:0"},
      {"/task:0/device:GPU:1", Spec("", -1, 0, kGpu, 1), "/task:0/device:GPU:1"},
      // Device part alone; the type is case-insensitive; no index or "*" means any.
      {"/device:CPU:0", Spec("", -1, -1, kCpu, 0), "/device:CPU:0"},
      {"/device:cpu:1", Spec("", -1, -1, kCpu, 1), "/device:CPU:1"},
      {"/device:Gpu:3", Spec("", -1, -1, kGpu, 3), "/device:GPU:3"},
      {"/device:GPU", Spec("", -1, -1, kGpu, -1), "/device:GPU:*"},
      {"/device:GPU:*", Spec("", -1, -1, kGpu, -1), "/device:GPU:*"},
      {"/job:w/device:cpu:*", Spec("w", -1, -1, kCpu, -1), "/job:w/device:CPU:*"},
      // Legacy "/cpu:0".
      {"/cpu:0", Spec("", -1, -1, kCpu, 0), "/device:CPU:0"},
      {"/gpu:1", Spec("", -1, -1, kGpu, 1), "/device:GPU:1"},
      {"/GPU:2", Spec("", -1, -1, kGpu, 2), "/device:GPU:2"},
      {"/job:w/task:0/gpu:1", Spec("w", -1, 0, kGpu, 1), "/job:w/task:0/device:GPU:1"},
      {"/job:w/cpu:*", Spec("w", -1, -1, kCpu, -1), "/job:w/device:CPU:*"},
      // Short forms.
      {"CPU:0", Spec("", -1, -1, kCpu, 0), "/device:CPU:0"},
      {"gpu:1", Spec("", -1, -1, kGpu, 1), "/device:GPU:1"},
      {"CPU", Spec("", -1, -1, kCpu, -1), "/device:CPU:*"},
      {"gpu", Spec("", -1, -1, kGpu, -1), "/device:GPU:*"},
      {"GPU:*", Spec("", -1, -1, kGpu, -1), "/device:GPU:*"},
      {"device:CPU:0", Spec("", -1, -1, kCpu, 0), "/device:CPU:0"},
      {"DEVICE:gpu:3", Spec("", -1, -1, kGpu, 3), "/device:GPU:3"},
      {"Device:GPU", Spec("", -1, -1, kGpu, -1), "/device:GPU:*"},
      // Job names: a letter, then letters, digits and '_'.
      {"/job:Worker_2", Spec("Worker_2", -1, -1, kNone, -1), "/job:Worker_2"},
      {"/job:a", Spec("a", -1, -1, kNone, -1), "/job:a"},
      {"/job:a_", Spec("a_", -1, -1, kNone, -1), "/job:a_"},
      // Numbers: 0 to INT32_MAX.
      {"/replica:2147483647", Spec("", kInt32Max, -1, kNone, -1), "/replica:2147483647"},
      {"/task:2147483647/device:GPU:2147483647", Spec("", -1, kInt32Max, kGpu, kInt32Max),
       "/task:2147483647/device:GPU:2147483647"},
      {"/task:007", Spec("", -1, 7, kNone, -1), "/task:7"},
  };
}

TEST(DeviceSpecTest, ParsesValidNames) {
  for (const ValidCase& c : ValidCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DeviceSpec> parsed = DeviceSpec::Parse(c.name);
    ASSERT_TRUE(IsOk(parsed));
    EXPECT_EQ(parsed->job, c.expected.job);
    EXPECT_EQ(parsed->replica, c.expected.replica);
    EXPECT_EQ(parsed->task, c.expected.task);
    EXPECT_EQ(parsed->type, c.expected.type);
    EXPECT_EQ(parsed->index, c.expected.index);
    EXPECT_TRUE(*parsed == c.expected);
  }
}

TEST(DeviceSpecTest, ToStringIsCanonical) {
  for (const ValidCase& c : ValidCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DeviceSpec> parsed = DeviceSpec::Parse(c.name);
    ASSERT_TRUE(IsOk(parsed));
    EXPECT_EQ(parsed->ToString(), c.canonical);
  }
}

TEST(DeviceSpecTest, ParseOfToStringRoundTripsParsedNames) {
  for (const ValidCase& c : ValidCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DeviceSpec> parsed = DeviceSpec::Parse(c.name);
    ASSERT_TRUE(IsOk(parsed));
    absl::StatusOr<DeviceSpec> reparsed = DeviceSpec::Parse(parsed->ToString());
    ASSERT_TRUE(IsOk(reparsed));
    EXPECT_TRUE(*reparsed == *parsed) << reparsed->ToString();
    // The canonical name is a fixed point.
    EXPECT_EQ(reparsed->ToString(), parsed->ToString());
  }
}

TEST(DeviceSpecTest, ParseOfToStringRoundTripsEveryCombinationOfParts) {
  const std::vector<std::string> jobs = {"", "w", "Worker_1", "localhost"};
  const std::vector<int32_t> numbers = {-1, 0, 5, kInt32Max};
  const std::vector<DeviceType> types = {kNone, kCpu, kGpu};
  int checked = 0;
  for (const std::string& job : jobs) {
    for (int32_t replica : numbers) {
      for (int32_t task : numbers) {
        for (DeviceType type : types) {
          // An index without a type is not expressible in a name.
          const std::vector<int32_t> indices =
              type == kNone ? std::vector<int32_t>{-1} : std::vector<int32_t>{-1, 0, 3, kInt32Max};
          for (int32_t index : indices) {
            const DeviceSpec spec = Spec(job, replica, task, type, index);
            const std::string name = spec.ToString();
            if (job.empty() && replica < 0 && task < 0 && type == kNone) {
              EXPECT_EQ(name, "");
              continue;
            }
            SCOPED_TRACE(name);
            absl::StatusOr<DeviceSpec> parsed = DeviceSpec::Parse(name);
            ASSERT_TRUE(IsOk(parsed));
            EXPECT_TRUE(*parsed == spec);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(DeviceSpecTest, ToStringWritesOnlyTheSetParts) {
  EXPECT_EQ(DeviceSpec{}.ToString(), "");
  EXPECT_EQ(Spec("w", -1, -1, kNone, -1).ToString(), "/job:w");
  EXPECT_EQ(Spec("", 1, -1, kNone, -1).ToString(), "/replica:1");
  EXPECT_EQ(Spec("", -1, 2, kNone, -1).ToString(), "/task:2");
  EXPECT_EQ(Spec("", -1, -1, kCpu, -1).ToString(), "/device:CPU:*");
  EXPECT_EQ(Spec("", -1, -1, kGpu, 7).ToString(), "/device:GPU:7");
  EXPECT_EQ(Spec("j", 0, 0, kGpu, 0).ToString(), "/job:j/replica:0/task:0/device:GPU:0");
}

struct InvalidCase {
  const char* name;
  std::vector<const char*> parts;  // what the message must name
};

std::vector<InvalidCase> InvalidCases() {
  return {
      {"", {"empty"}},
      // Empty parts.
      {"/", {"empty part"}},
      {"//job:w", {"empty part"}},
      {"/job:w/", {"empty part"}},
      {"/job:w//task:0", {"empty part"}},
      // A part without ':'.
      {"/job", {"'job'", "':'"}},
      {"/job:w/task", {"'task'", "':'"}},
      {"/cpu", {"'cpu'", "':'"}},
      // Bad job names.
      {"/job:", {"job name ''"}},
      {"/job:1abc", {"'1abc'"}},
      {"/job:a-b", {"'a-b'"}},
      {"/job:_a", {"'_a'"}},
      {"/job:a b", {"'a b'"}},
      {"/job:w:x", {"'w:x'"}},
      // Bad numbers.
      {"/replica:x", {"replica 'x'"}},
      {"/replica:-1", {"replica '-1'"}},
      {"/replica:+1", {"replica '+1'"}},
      {"/replica:", {"replica ''"}},
      {"/replica:2147483648", {"replica '2147483648'"}},
      {"/replica:99999999999999999999", {"replica '99999999999999999999'"}},
      {"/replica:1.5", {"replica '1.5'"}},
      {"/replica: 1", {"replica ' 1'"}},
      {"/task:0x1", {"task '0x1'"}},
      {"/task:1a", {"task '1a'"}},
      {"/task:-0", {"task '-0'"}},
      // Bad device parts.
      {"/device:TPU:0", {"'TPU'"}},
      {"/device::0", {"device type is empty"}},
      {"/device:", {"device type is empty"}},
      {"/device:CPU:-1", {"device index '-1'"}},
      {"/device:CPU:", {"device index ''"}},
      {"/device:CPU:0:1", {"device index '0:1'"}},
      {"/device:CPU:a", {"device index 'a'"}},
      {"/device:CPU:**", {"device index '**'"}},
      {"/device:GPU:2147483648", {"device index '2147483648'"}},
      {"/foo:0", {"'foo'"}},
      {"/tpu:0", {"'tpu'"}},
      // Order and repetition.
      {"/task:0/job:w", {"'job:w'", "out of order"}},
      {"/replica:0/job:w", {"'job:w'"}},
      {"/task:0/replica:0", {"'replica:0'"}},
      {"/job:a/job:b", {"'job:b'", "repeated"}},
      {"/task:1/task:1", {"'task:1'"}},
      {"/device:CPU:0/device:GPU:0", {"'device:GPU:0'"}},
      {"/cpu:0/task:1", {"'task:1'"}},
      {"/device:CPU:0/replica:0", {"'replica:0'"}},
      {"/job:w/replica:0/task:1/device:GPU:0/device:GPU:1", {"'device:GPU:1'"}},
      // Short forms.
      {"TPU:0", {"'TPU'"}},
      {"CPU:x", {"device index 'x'"}},
      {"CPU:", {"device index ''"}},
      {"CPU:-2", {"device index '-2'"}},
      {":0", {"device type is empty"}},
      {"device:", {"device type is empty"}},
      {"device", {"'device'"}},
      {"cpu0", {"'cpu0'"}},
      {" CPU:0", {"' CPU'"}},
      {"CPU:0 ", {"device index '0 '"}},
      {"CPU:0/task:1", {"device index '0/task:1'"}},
      {"job:worker", {"'job'"}},
  };
}

TEST(DeviceSpecTest, RejectsInvalidNamesNamingTheBadPart) {
  for (const InvalidCase& c : InvalidCases()) {
    SCOPED_TRACE(std::string("name: \"") + c.name + "\"");
    absl::StatusOr<DeviceSpec> parsed = DeviceSpec::Parse(c.name);
    ASSERT_FALSE(parsed.ok()) << parsed->ToString();
    EXPECT_TRUE(HasError(parsed, absl::StatusCode::kInvalidArgument));
    for (const char* part : c.parts) {
      EXPECT_TRUE(HasError(parsed, absl::StatusCode::kInvalidArgument, {part}));
    }
    // The whole name is quoted too, so the caller sees which argument was wrong.
    if (*c.name != '\0') {
      EXPECT_TRUE(
          HasError(parsed, absl::StatusCode::kInvalidArgument, {std::string("'") + c.name + "'"}));
    }
  }
}

TEST(DeviceSpecTest, RejectsEmbeddedNul) {
  const std::string name("CPU:0\0", 6);
  EXPECT_FALSE(DeviceSpec::Parse(absl::string_view(name.data(), name.size())).ok());
}

TEST(DeviceSpecTest, WithDefaultsFillsTypeAndIndexOnly) {
  EXPECT_TRUE(DeviceSpec{}.WithDefaults() == Spec("", -1, -1, kCpu, 0));
  EXPECT_TRUE(Spec("", -1, -1, kGpu, -1).WithDefaults() == Spec("", -1, -1, kGpu, 0));
  EXPECT_TRUE(Spec("", -1, -1, kGpu, 3).WithDefaults() == Spec("", -1, -1, kGpu, 3));
  EXPECT_TRUE(Spec("w", 1, 2, kNone, -1).WithDefaults() == Spec("w", 1, 2, kCpu, 0));
  EXPECT_TRUE(Spec("w", 1, 2, kCpu, 5).WithDefaults() == Spec("w", 1, 2, kCpu, 5));
}

TEST(DeviceSpecTest, EqualityComparesEveryField) {
  const DeviceSpec base = Spec("w", 1, 2, kGpu, 3);
  EXPECT_TRUE(base == Spec("w", 1, 2, kGpu, 3));
  EXPECT_FALSE(base == Spec("x", 1, 2, kGpu, 3));
  EXPECT_FALSE(base == Spec("w", 0, 2, kGpu, 3));
  EXPECT_FALSE(base == Spec("w", 1, 0, kGpu, 3));
  EXPECT_FALSE(base == Spec("w", 1, 2, kCpu, 3));
  EXPECT_FALSE(base == Spec("w", 1, 2, kGpu, 0));
}

TEST(DeviceSpecTest, DeviceTypeName) {
  EXPECT_EQ(DeviceTypeName(kCpu), "CPU");
  EXPECT_EQ(DeviceTypeName(kGpu), "GPU");
  EXPECT_EQ(DeviceTypeName(kNone), "");
}

}  // namespace
}  // namespace distribute
