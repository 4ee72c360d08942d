// InternedDeviceName: one string object per canonical name, from any thread; names past
// the table's bound are not interned, and a tensor on such a device still reports its name.
#include "core/device/interned_device_name.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor/buffer.h"
#include "core/tensor/tensor.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

DeviceSpec Cpu(const std::string& job, int32_t index) {
  DeviceSpec spec;
  spec.job = job;
  spec.replica = job.empty() ? -1 : 0;
  spec.task = job.empty() ? -1 : 0;
  spec.type = DeviceType::kCpu;
  spec.index = index;
  return spec;
}

TEST(InternedDeviceNameTest, OneStringPerNameFromEveryThread) {
  const std::string* local0 = InternedDeviceName(Cpu("localhost", 0));
  ASSERT_NE(local0, nullptr);
  EXPECT_EQ(*local0, "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(InternedDeviceName(Cpu("localhost", 0)), local0);
  const std::string* local1 = InternedDeviceName(Cpu("localhost", 1));
  ASSERT_NE(local1, nullptr);
  EXPECT_NE(local1, local0);
  EXPECT_EQ(*local1, "/job:localhost/replica:0/task:0/device:CPU:1");
  EXPECT_EQ(*InternedDeviceName(Cpu("", 3)), "/device:CPU:3");
  // Past the per-thread cache (4 entries) and from other threads: still the same objects.
  for (int32_t i = 2; i < 10; ++i) ASSERT_NE(InternedDeviceName(Cpu("localhost", i)), nullptr);
  EXPECT_EQ(InternedDeviceName(Cpu("localhost", 0)), local0);
  std::vector<const std::string*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&, t] { seen[t] = InternedDeviceName(Cpu("localhost", static_cast<int32_t>(t % 2))); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < seen.size(); ++t) EXPECT_EQ(seen[t], t % 2 == 0 ? local0 : local1);
}

TEST(InternedDeviceNameTest, TheTableStopsGrowingAndTensorsStillHaveTheirNames) {
  // Distinct jobs until the table is full: from then on new names are not interned, while
  // the names already interned still are.
  const std::string* first = InternedDeviceName(Cpu("stranger0", 0));
  ASSERT_NE(first, nullptr);
  int32_t refused = 0;
  for (int32_t j = 1; j < static_cast<int32_t>(kMaxInternedDeviceNames) + 10; ++j) {
    if (InternedDeviceName(Cpu(absl::StrCat("stranger", j), 0)) == nullptr) ++refused;
  }
  EXPECT_GE(refused, 10);
  EXPECT_EQ(InternedDeviceName(Cpu("stranger0", 0)), first);
  const DeviceSpec late = Cpu("late_job", 0);
  EXPECT_EQ(InternedDeviceName(late), nullptr);
  absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(late, 8, true);
  ASSERT_TRUE(testing::IsOk(buffer));
  const int64_t dims[1] = {2};
  absl::StatusOr<Shape> shape = Shape::Make(std::vector<int64_t>(dims, dims + 1));
  ASSERT_TRUE(testing::IsOk(shape));
  absl::StatusOr<Tensor> tensor = Tensor::FromBuffer(DType::kFloat32, *shape, *buffer);
  ASSERT_TRUE(testing::IsOk(tensor));
  EXPECT_EQ(tensor->device_name(), "/job:late_job/replica:0/task:0/device:CPU:0");
  const Tensor copy = *tensor;
  EXPECT_EQ(copy.device_name(), tensor->device_name());
}

}  // namespace
}  // namespace distribute
