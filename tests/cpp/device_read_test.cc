// A tensor in device memory is never read by the wrapper (issue 42): data<T>() and
// scalar<T>() of a tensor on a GPU are FAILED_PRECONDITION naming the device and the remedy
// (the dtype is checked first), read_scalar<T>() (the library's getters) copies it to the
// host, and copy_to_device("CPU:0") gives a readable copy. Runs on the fake GPU plugin
// (tests/gpu_fake, DIST_CUDA_PLUGIN, set below unless already set), whose device pointers
// fault when the host dereferences them: a read that touched one crashes this test.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "distribute/distribute.hpp"

namespace {

// Before main, so before the library looks for its CUDA plugin (once per process).
const bool kFakeGpu = [] {
  setenv("DIST_CUDA_PLUGIN", DIST_FAKE_GPU_PLUGIN, 0);
  setenv("DIST_FAKE_GPU_COUNT", "1", 0);
  return true;
}();

using ReadTypes = std::tuple<float, double, int32_t, int64_t, int16_t, int8_t, uint8_t, bool>;

class DeviceReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kFakeGpu);
    dist::Result<const char*> why = dist::gpu_unavailable_reason();
    ASSERT_TRUE(why.ok()) << why.status().to_string();
    ASSERT_STREQ(*why, "") << "no (fake) GPU: DIST_CUDA_PLUGIN=" << std::getenv("DIST_CUDA_PLUGIN");
  }
};

// Reading a GPU tensor as its own dtype: refused, naming the op, the device and the remedy.
// data<T>() first, so that a missing check fails here, before scalar<T>() would dereference.
template <class T>
void expect_device_refused(const dist::Value& t, int* refused) {
  const std::string name = std::string("<") + dist_dtype_name(dist::dtype_of_v<T>) + ">";
  const char* device = t.device().value();
  dist::Result<dist::Span<T>> d = t.data<T>();
  ASSERT_FALSE(d.ok()) << "data" << name << " of a tensor on " << device << " gave its device pointer "
                       << static_cast<const void*>(d->data());
  EXPECT_EQ(d.status().code(), DIST_FAILED_PRECONDITION) << d.status().to_string();
  EXPECT_EQ(d.status().message(),
            std::string("dist::ValueView::data: the tensor is on ") + device +
                ", in device memory, which host code cannot read: copy it to the host first "
                "(copy_to_device(\"CPU:0\")) or read one element with read_scalar()");
  dist::Result<T> s = t.scalar<T>();
  ASSERT_FALSE(s.ok()) << "scalar" << name << " of a tensor on " << device;
  EXPECT_EQ(s.status().code(), DIST_FAILED_PRECONDITION) << s.status().to_string();
  EXPECT_NE(s.status().message().find(std::string("dist::ValueView::scalar: the tensor is on ") + device),
            std::string::npos)
      << s.status().message();
  *refused += 2;
}

template <class... T>
void expect_all_device_refused(std::tuple<T...>*, int* refused) {
  (
      [&] {
        dist::Result<dist::Value> t = dist::scalar<T>(static_cast<T>(1), "GPU:0");
        ASSERT_TRUE(t.ok()) << t.status().to_string();
        ASSERT_NE(std::string(t->device().value()).find("GPU:0"), std::string::npos) << t->device().value();
        expect_device_refused<T>(*t, refused);
      }(),
      ...);
}

// Every typed read of a GPU tensor of its own dtype is refused.
TEST_F(DeviceReadTest, EveryTypedReadRefusesDeviceMemory) {
  int refused = 0;
  expect_all_device_refused(static_cast<ReadTypes*>(nullptr), &refused);
  EXPECT_EQ(refused, 8 * 2);
}

// Another dtype is INVALID_ARGUMENT even on a GPU: the dtype is checked first.
TEST_F(DeviceReadTest, DtypeIsCheckedFirst) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  dist::Value g = dist::tensor<float>(values, {3}, "GPU:0").value();
  dist::Result<dist::Span<int32_t>> d = g.data<int32_t>();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), DIST_INVALID_ARGUMENT) << d.status().to_string();
  EXPECT_EQ(d.status().message(), "dist::ValueView::data: the tensor holds float32, not int32");
  EXPECT_EQ(g.scalar<double>().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(g.data<float>().status().code(), DIST_FAILED_PRECONDITION);
}

// The remedies the message names work: a host copy reads, and read_scalar copies itself.
TEST_F(DeviceReadTest, HostCopyAndLibraryScalarReadsWork) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  dist::Value g = dist::tensor<float>(values, {3}, "GPU:0").value();
  dist::Value h = g.copy_to_device("CPU:0").value();
  dist::Span<float> host = h.data<float>().value();
  EXPECT_EQ(std::vector<float>(host.begin(), host.end()), values);
  dist::Value s = dist::scalar<float>(7.5f, "GPU:0").value();
  EXPECT_EQ(s.read_scalar<float>().value(), 7.5f);
  dist::Value i = dist::scalar<int64_t>(-9, "GPU:0").value();
  EXPECT_EQ(i.read_scalar<int64_t>().value(), -9);
  EXPECT_EQ(i.read_scalar<int32_t>().status().code(), DIST_INVALID_ARGUMENT);
}

}  // namespace
