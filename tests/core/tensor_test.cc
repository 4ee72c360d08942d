// Tensor::Create / Wrap / FromBuffer / CopyTo. Byte sizes are computed in the test as
// elements * sizeof(C++ type); device names follow the documented canonical form
// ("/device:CPU:0" for the default device).
#include "core/tensor/tensor.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/device/local_devices.h"
#include "gtest/gtest.h"
#include "tests/core/release_probe.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::CountingRelease;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::ReleaseProbe;

constexpr int32_t kFloat32 = 1;
constexpr int32_t kFloat64 = 2;
constexpr int32_t kInt32 = 3;
constexpr int32_t kInt64 = 9;

bool HasGpu() { return GpuRuntime::Get().device_count() > 0; }

Tensor::Description Desc(int32_t dtype, const std::vector<int64_t>& dims, size_t byte_size,
                         absl::string_view device = "CPU:0") {
  Tensor::Description desc;
  desc.dtype = dtype;
  desc.dims = dims;
  desc.byte_size = byte_size;
  desc.device = device;
  return desc;
}

template <typename T>
std::vector<T> Contents(const Tensor& tensor) {
  std::vector<T> out(tensor.byte_size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), tensor.data(), tensor.byte_size());
  return out;
}

// Restores the logical CPU count for tests that change it.
class CpuCountGuard {
 public:
  CpuCountGuard() : saved_(LogicalCpuDeviceCount()) {}
  ~CpuCountGuard() { (void)SetLogicalCpuDeviceCount(saved_); }

 private:
  int32_t saved_;
};

TEST(TensorCreateTest, CopiesHostData) {
  std::vector<float> source = {1.5f, -2.f, 3.25f, 0.f, 1e30f, -0.f};
  const std::vector<int64_t> dims = {2, 3};
  absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kFloat32, dims, 6 * sizeof(float)), source.data());
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->dtype(), DType::kFloat32);
  EXPECT_EQ(tensor->shape().dims(), distribute::Dims(dims.begin(), dims.end()));
  EXPECT_EQ(tensor->shape().num_elements(), 6);
  EXPECT_EQ(tensor->byte_size(), 24u);
  EXPECT_NE(tensor->data(), source.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor->data()) % 64, 0u);
  EXPECT_EQ(Contents<float>(*tensor), source);
  EXPECT_EQ(tensor->device().type, DeviceType::kCpu);
  EXPECT_EQ(tensor->device().index, 0);
  EXPECT_EQ(tensor->device_name(), "/device:CPU:0");
  ASSERT_NE(tensor->buffer(), nullptr);
  EXPECT_EQ(tensor->buffer()->data(), tensor->data());

  const std::vector<float> before = source;
  source[0] = 99.f;  // the tensor holds its own copy
  EXPECT_EQ(Contents<float>(*tensor), before);
}

TEST(TensorCreateTest, EveryDType) {
  struct Case {
    int32_t dtype;
    size_t size;
  };
  for (const Case& c : std::vector<Case>{{1, 4}, {2, 8}, {3, 4}, {4, 1}, {5, 2}, {6, 1},
                                         {9, 8}, {10, 1}, {14, 2}, {19, 2}}) {
    SCOPED_TRACE(c.dtype);
    const std::vector<int64_t> dims = {3, 2};
    std::vector<unsigned char> bytes(6 * c.size);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i + 1);
    absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(c.dtype, dims, bytes.size()), bytes.data());
    ASSERT_TRUE(IsOk(tensor));
    EXPECT_EQ(static_cast<int32_t>(tensor->dtype()), c.dtype);
    EXPECT_EQ(Contents<unsigned char>(*tensor), bytes);
    // One byte more or less is rejected.
    EXPECT_TRUE(HasError(Tensor::Create(Desc(c.dtype, dims, bytes.size() + 1), bytes.data()),
                         absl::StatusCode::kInvalidArgument));
    EXPECT_TRUE(HasError(Tensor::Create(Desc(c.dtype, dims, bytes.size() - 1), bytes.data()),
                         absl::StatusCode::kInvalidArgument));
  }
}

TEST(TensorCreateTest, Scalar) {
  const double value = 6.02214076e23;
  absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kFloat64, {}, sizeof(double)), &value);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->shape().rank(), 0);
  EXPECT_EQ(tensor->shape().num_elements(), 1);
  EXPECT_EQ(Contents<double>(*tensor), std::vector<double>{value});
}

TEST(TensorCreateTest, NullDataWithZeroByteSizeGivesZeros) {
  const std::vector<int64_t> dims = {4, 5};
  absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kInt32, dims, 0), nullptr);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->byte_size(), 20 * sizeof(int32_t));
  EXPECT_EQ(Contents<int32_t>(*tensor), std::vector<int32_t>(20, 0));

  const std::vector<int64_t> big = {1 << 20};
  absl::StatusOr<Tensor> big_tensor = Tensor::Create(Desc(kInt64, big, 0), nullptr);
  ASSERT_TRUE(IsOk(big_tensor));
  EXPECT_EQ(Contents<int64_t>(*big_tensor), std::vector<int64_t>(1 << 20, 0));
}

TEST(TensorCreateTest, NullDataWithByteSizeIsInvalid) {
  const std::vector<int64_t> dims = {4, 5};
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt32, dims, 80), nullptr),
                       absl::StatusCode::kInvalidArgument, {"NULL", "80"}));
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt32, dims, 4), nullptr),
                       absl::StatusCode::kInvalidArgument, {"NULL", "4"}));
}

TEST(TensorCreateTest, ByteSizeMismatchNamesBothSizes) {
  const std::vector<int64_t> dims = {2, 3};
  const float data[7] = {};
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kFloat32, dims, 20), data),
                       absl::StatusCode::kInvalidArgument, {"20", "float32", "[2, 3]", "24"}));
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kFloat32, dims, 28), data),
                       absl::StatusCode::kInvalidArgument, {"28", "24"}));
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kFloat32, dims, 0), data),
                       absl::StatusCode::kInvalidArgument, {"24"}));
  // The size of another dtype with the same shape.
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kFloat64, dims, 24), data),
                       absl::StatusCode::kInvalidArgument, {"float64", "48"}));
}

TEST(TensorCreateTest, EmptyTensors) {
  const std::vector<int64_t> dims = {0, 3};
  const float data[1] = {};
  for (const void* ptr : {static_cast<const void*>(data), static_cast<const void*>(nullptr)}) {
    absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kFloat32, dims, 0), ptr);
    ASSERT_TRUE(IsOk(tensor));
    EXPECT_EQ(tensor->byte_size(), 0u);
    EXPECT_EQ(tensor->shape().num_elements(), 0);
    EXPECT_EQ(tensor->shape().dims(), distribute::Dims(dims.begin(), dims.end()));
  }
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kFloat32, dims, 4), data),
                       absl::StatusCode::kInvalidArgument));
}

TEST(TensorCreateTest, RejectsBadDTypeShapeAndDevice) {
  const std::vector<int64_t> dims = {2};
  const int64_t data[2] = {};
  for (int32_t dtype : {0, 7, 8, 11, 100, -1}) {
    EXPECT_TRUE(HasError(Tensor::Create(Desc(dtype, dims, 16), data),
                         absl::StatusCode::kInvalidArgument, {absl::StrCat("dtype ", dtype)}));
  }
  const std::vector<int64_t> negative = {2, -1};
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt64, negative, 16), data),
                       absl::StatusCode::kInvalidArgument, {"shape[1]"}));
  const std::vector<int64_t> rank33(33, 1);
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt64, rank33, 8), data),
                       absl::StatusCode::kInvalidArgument, {"rank 33"}));
  const std::vector<int64_t> huge = {1LL << 40, 1LL << 40};
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt64, huge, 16), data),
                       absl::StatusCode::kInvalidArgument, {"too many elements"}));
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt64, huge, 0), nullptr),
                       absl::StatusCode::kInvalidArgument, {"too many elements"}));

  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt64, dims, 16, "TPU:0"), data),
                       absl::StatusCode::kInvalidArgument, {"'TPU'"}));
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt64, dims, 16, "/job:w/task"), data),
                       absl::StatusCode::kInvalidArgument, {"'task'"}));
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt64, dims, 16, "CPU:9999"), data),
                       absl::StatusCode::kNotFound, {"CPU:9999"}));
}

TEST(TensorCreateTest, AllocationFailureIsResourceExhausted) {
  // 2^57 int64 elements: a valid shape (2^60 bytes fit in int64_t) that no host can hold.
  const std::vector<int64_t> dims = {1LL << 57};
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt64, dims, 0), nullptr),
                       absl::StatusCode::kResourceExhausted));
}

TEST(TensorCreateTest, GpuWithoutGpuIsFailedPrecondition) {
  if (HasGpu()) GTEST_SKIP() << "this machine has a GPU";
  const std::vector<int64_t> dims = {2};
  const float data[2] = {1.f, 2.f};
  for (const char* device : {"GPU:0", "gpu", "/device:GPU:1", "/job:localhost/device:GPU:0"}) {
    SCOPED_TRACE(device);
    EXPECT_TRUE(HasError(Tensor::Create(Desc(kFloat32, dims, 8, device), data),
                         absl::StatusCode::kFailedPrecondition, {"GPU:"}));
    EXPECT_TRUE(HasError(Tensor::Create(Desc(kFloat32, dims, 0, device), nullptr),
                         absl::StatusCode::kFailedPrecondition));
  }
}

TEST(TensorCreateTest, OnAnotherLogicalCpu) {
  CpuCountGuard guard;
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(2)));
  const std::vector<int64_t> dims = {1};
  const int32_t value = 42;
  absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kInt32, dims, 4, "CPU:1"), &value);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->device().type, DeviceType::kCpu);
  EXPECT_EQ(tensor->device().index, 1);
  EXPECT_EQ(tensor->device_name(), "/device:CPU:1");
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kInt32, dims, 4, "CPU:2"), &value),
                       absl::StatusCode::kNotFound, {"CPU:2"}));
}

TEST(TensorCreateTest, DeviceNameKeepsTheGivenJob) {
  const std::vector<int64_t> dims = {1};
  const int32_t value = 1;
  for (const char* name : {"/job:localhost/replica:0/task:0/device:CPU:0", "/cpu:0", "CPU",
                           "cpu:0", "/device:CPU:*"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kInt32, dims, 4, name), &value);
    ASSERT_TRUE(IsOk(tensor));
    const std::string expected = std::string(name).starts_with("/job:")
                                     ? "/job:localhost/replica:0/task:0/device:CPU:0"
                                     : "/device:CPU:0";
    EXPECT_EQ(tensor->device_name(), expected);
  }
}

TEST(TensorTest, CopiesShareTheBuffer) {
  const std::vector<int64_t> dims = {3};
  const int32_t data[3] = {1, 2, 3};
  absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kInt32, dims, 12), data);
  ASSERT_TRUE(IsOk(tensor));
  Tensor copy = *tensor;
  EXPECT_EQ(copy.data(), tensor->data());
  EXPECT_EQ(copy.buffer(), tensor->buffer());
  EXPECT_EQ(copy.device_name(), tensor->device_name());
  static_cast<int32_t*>(copy.data())[0] = 7;
  EXPECT_EQ(Contents<int32_t>(*tensor), (std::vector<int32_t>{7, 2, 3}));
}

TEST(TensorWrapTest, BorrowsWithoutCopyingAndReleasesOnce) {
  ReleaseProbe probe;
  std::vector<int64_t> memory = {10, 20, 30, 40};
  const std::vector<int64_t> dims = {2, 2};
  {
    absl::StatusOr<Tensor> tensor =
        Tensor::Wrap(Desc(kInt64, dims, 32), memory.data(), CountingRelease(&probe));
    ASSERT_TRUE(IsOk(tensor));
    EXPECT_EQ(tensor->data(), memory.data());
    EXPECT_EQ(tensor->byte_size(), 32u);
    EXPECT_EQ(tensor->device_name(), "/device:CPU:0");
    EXPECT_EQ(Contents<int64_t>(*tensor), memory);
    memory[3] = 41;  // shared, not copied
    EXPECT_EQ(Contents<int64_t>(*tensor)[3], 41);

    Tensor copy = *tensor;
    std::vector<Tensor> copies(5, copy);
    tensor = absl::CancelledError("drop the first share");
    EXPECT_EQ(probe.calls, 0);
    copies.clear();
    EXPECT_EQ(probe.calls, 0);
  }
  EXPECT_EQ(probe.calls, 1);
  EXPECT_EQ(probe.destroyed, 1);
}

TEST(TensorWrapTest, ErrorsDestroyReleaseWithoutCallingIt) {
  std::vector<float> memory(6);
  const std::vector<int64_t> dims = {2, 3};
  const std::vector<int64_t> negative = {-2, 3};
  struct Case {
    const char* what;
    Tensor::Description desc;
    void* data;
  };
  const std::vector<Case> cases = {
      {"bad dtype", Desc(12, dims, 24), memory.data()},
      {"bad shape", Desc(kFloat32, negative, 24), memory.data()},
      {"bad device", Desc(kFloat32, dims, 24, "XPU:0"), memory.data()},
      {"missing device", Desc(kFloat32, dims, 24, "CPU:100000"), memory.data()},
      {"gpu device", Desc(kFloat32, dims, 24, "GPU:0"), memory.data()},
      {"size too small", Desc(kFloat32, dims, 20), memory.data()},
      {"size too large", Desc(kFloat32, dims, 48), memory.data()},
      {"null data", Desc(kFloat32, dims, 24), nullptr},
      {"null data, size 0", Desc(kFloat32, dims, 0), nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ReleaseProbe probe;
    {
      absl::StatusOr<Tensor> tensor = Tensor::Wrap(c.desc, c.data, CountingRelease(&probe));
      EXPECT_FALSE(tensor.ok());
    }
    EXPECT_EQ(probe.calls, 0);
    EXPECT_EQ(probe.destroyed, 1);
  }
}

TEST(TensorWrapTest, ErrorCodes) {
  std::vector<float> memory(6);
  const std::vector<int64_t> dims = {2, 3};
  EXPECT_TRUE(HasError(Tensor::Wrap(Desc(kFloat32, dims, 20), memory.data(), nullptr),
                       absl::StatusCode::kInvalidArgument, {"20", "24"}));
  EXPECT_TRUE(HasError(Tensor::Wrap(Desc(kFloat32, dims, 24), nullptr, nullptr),
                       absl::StatusCode::kInvalidArgument, {"NULL"}));
  EXPECT_TRUE(HasError(Tensor::Wrap(Desc(kFloat32, dims, 24, "CPU:100000"), memory.data(), nullptr),
                       absl::StatusCode::kNotFound));
  if (HasGpu()) {
    EXPECT_TRUE(HasError(Tensor::Wrap(Desc(kFloat32, dims, 24, "GPU:0"), memory.data(), nullptr),
                         absl::StatusCode::kInvalidArgument, {"not a CPU device"}));
  } else {
    EXPECT_TRUE(HasError(Tensor::Wrap(Desc(kFloat32, dims, 24, "GPU:0"), memory.data(), nullptr),
                         absl::StatusCode::kFailedPrecondition));
  }
}

TEST(TensorWrapTest, EmptyTensorMayHaveNullData) {
  ReleaseProbe probe;
  const std::vector<int64_t> dims = {0};
  {
    absl::StatusOr<Tensor> tensor = Tensor::Wrap(Desc(kFloat32, dims, 0), nullptr,
                                                 CountingRelease(&probe));
    ASSERT_TRUE(IsOk(tensor));
    EXPECT_EQ(tensor->byte_size(), 0u);
  }
  EXPECT_EQ(probe.calls, 1);
}

TEST(TensorWrapTest, WithoutReleaseFunction) {
  int32_t value = 5;
  absl::StatusOr<Tensor> tensor = Tensor::Wrap(Desc(kInt32, {}, 4), &value, nullptr);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->data(), &value);
}

TEST(TensorFromBufferTest, SizeMustMatch) {
  DeviceSpec cpu;
  cpu.type = DeviceType::kCpu;
  cpu.index = 0;
  absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(cpu, 24, true);
  ASSERT_TRUE(IsOk(buffer));
  const std::vector<int64_t> d23 = {2, 3}, d3 = {3}, d22 = {2, 2}, d6 = {6};

  absl::StatusOr<Tensor> floats = Tensor::FromBuffer(DType::kFloat32, *Shape::Make(d23), *buffer);
  ASSERT_TRUE(IsOk(floats));
  EXPECT_EQ(floats->data(), (*buffer)->data());
  EXPECT_EQ(floats->buffer(), *buffer);
  EXPECT_EQ(floats->device_name(), "/device:CPU:0");

  EXPECT_TRUE(IsOk(Tensor::FromBuffer(DType::kInt64, *Shape::Make(d3), *buffer)));
  EXPECT_TRUE(IsOk(Tensor::FromBuffer(DType::kFloat32, *Shape::Make(d6), *buffer)));
  EXPECT_TRUE(HasError(Tensor::FromBuffer(DType::kFloat32, *Shape::Make(d22), *buffer),
                       absl::StatusCode::kInvalidArgument, {"24", "16", "[2, 2]"}));
  EXPECT_TRUE(HasError(Tensor::FromBuffer(DType::kFloat64, *Shape::Make(d23), *buffer),
                       absl::StatusCode::kInvalidArgument, {"24", "48"}));
  EXPECT_TRUE(HasError(Tensor::FromBuffer(DType::kUInt8, Shape(), *buffer),
                       absl::StatusCode::kInvalidArgument, {"24", "1"}));
}

TEST(TensorCopyToTest, MakesAnIndependentCopy) {
  ReleaseProbe probe;
  std::vector<double> memory = {1, 2, 3, 4, 5};
  const std::vector<int64_t> dims = {5};
  absl::StatusOr<Tensor> copy = absl::UnknownError("unset");
  {
    absl::StatusOr<Tensor> source =
        Tensor::Wrap(Desc(kFloat64, dims, 40), memory.data(), CountingRelease(&probe));
    ASSERT_TRUE(IsOk(source));
    for (const char* device : {"CPU:0", "/device:CPU:0", "cpu"}) {
      SCOPED_TRACE(device);
      copy = source->CopyTo(device);
      ASSERT_TRUE(IsOk(copy));
      EXPECT_NE(copy->data(), source->data());
      EXPECT_NE(copy->buffer(), source->buffer());
      EXPECT_EQ(copy->dtype(), DType::kFloat64);
      EXPECT_TRUE(copy->shape() == source->shape());
      EXPECT_EQ(copy->byte_size(), 40u);
      EXPECT_EQ(copy->device_name(), "/device:CPU:0");
      EXPECT_EQ(Contents<double>(*copy), memory);
    }
  }
  EXPECT_EQ(probe.calls, 1);  // the copy does not hold the borrowed memory
  memory.assign(5, -1.0);
  EXPECT_EQ(Contents<double>(*copy), (std::vector<double>{1, 2, 3, 4, 5}));
}

TEST(TensorCopyToTest, ToAnotherLogicalCpu) {
  CpuCountGuard guard;
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(3)));
  const std::vector<int64_t> dims = {2};
  const int32_t data[2] = {-1, 1};
  absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kInt32, dims, 8), data);
  ASSERT_TRUE(IsOk(tensor));
  absl::StatusOr<Tensor> copy = tensor->CopyTo("CPU:2");
  ASSERT_TRUE(IsOk(copy));
  EXPECT_EQ(copy->device().index, 2);
  EXPECT_EQ(copy->device_name(), "/device:CPU:2");
  EXPECT_EQ(Contents<int32_t>(*copy), (std::vector<int32_t>{-1, 1}));
  EXPECT_TRUE(HasError(tensor->CopyTo("CPU:3"), absl::StatusCode::kNotFound, {"CPU:3"}));
}

TEST(TensorCopyToTest, EmptyAndScalar) {
  const std::vector<int64_t> empty_dims = {3, 0};
  absl::StatusOr<Tensor> empty = Tensor::Create(Desc(kFloat32, empty_dims, 0), nullptr);
  ASSERT_TRUE(IsOk(empty));
  absl::StatusOr<Tensor> empty_copy = empty->CopyTo("CPU:0");
  ASSERT_TRUE(IsOk(empty_copy));
  EXPECT_EQ(empty_copy->byte_size(), 0u);
  EXPECT_EQ(empty_copy->shape().dims(), distribute::Dims(empty_dims.begin(), empty_dims.end()));

  const int64_t value = -7;
  absl::StatusOr<Tensor> scalar = Tensor::Create(Desc(kInt64, {}, 8), &value);
  ASSERT_TRUE(IsOk(scalar));
  absl::StatusOr<Tensor> scalar_copy = scalar->CopyTo("CPU:0");
  ASSERT_TRUE(IsOk(scalar_copy));
  EXPECT_EQ(Contents<int64_t>(*scalar_copy), std::vector<int64_t>{-7});
}

TEST(TensorCopyToTest, RejectsBadDevices) {
  const std::vector<int64_t> dims = {1};
  const float value = 1.f;
  absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(kFloat32, dims, 4), &value);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_TRUE(HasError(tensor->CopyTo("bogus"), absl::StatusCode::kInvalidArgument, {"'bogus'"}));
  EXPECT_TRUE(HasError(tensor->CopyTo("/device:CPU:x"), absl::StatusCode::kInvalidArgument, {"'x'"}));
  EXPECT_TRUE(HasError(tensor->CopyTo("CPU:1000"), absl::StatusCode::kNotFound, {"CPU:1000"}));
  if (!HasGpu()) {
    EXPECT_TRUE(HasError(tensor->CopyTo("GPU:0"), absl::StatusCode::kFailedPrecondition, {"GPU:0"}));
  }
}

TEST(TensorTest, ConcurrentUseReleasesBorrowedMemoryOnce) {
  std::atomic<int> releases{0};
  std::vector<int64_t> memory(64, 3);
  const std::vector<int64_t> dims = {64};
  std::vector<std::thread> threads;
  {
    absl::StatusOr<Tensor> shared = Tensor::Wrap(Desc(kInt64, dims, 64 * 8), memory.data(),
                                                 [&releases] { releases.fetch_add(1); });
    ASSERT_TRUE(IsOk(shared));
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([copy = *shared, &dims] {
        for (int i = 0; i < 200; ++i) {
          Tensor local = copy;
          absl::StatusOr<Tensor> copied = local.CopyTo("CPU:0");
          if (!copied.ok() || Contents<int64_t>(*copied) != std::vector<int64_t>(64, 3)) {
            ADD_FAILURE() << "copy failed";
            return;
          }
          const int64_t one = 1;
          if (!Tensor::Create(Desc(kInt64, {}, 8), &one).ok()) ADD_FAILURE() << "create failed";
        }
        (void)dims;
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(releases.load(), 1);
}

TEST(TensorGpuTest, CreateCopyAndZeros) {
  if (!HasGpu()) GTEST_SKIP() << "no GPU: " << GpuRuntime::Get().unavailable_reason();
  const std::vector<int64_t> dims = {3, 4};
  std::vector<float> data(12);
  for (int i = 0; i < 12; ++i) data[i] = static_cast<float>(i) * 0.5f - 2.f;
  absl::StatusOr<Tensor> on_gpu = Tensor::Create(Desc(kFloat32, dims, 48, "GPU:0"), data.data());
  ASSERT_TRUE(IsOk(on_gpu));
  EXPECT_EQ(on_gpu->device().type, DeviceType::kGpu);
  EXPECT_EQ(on_gpu->device().index, 0);
  EXPECT_EQ(on_gpu->device_name(), "/device:GPU:0");
  EXPECT_EQ(on_gpu->byte_size(), 48u);

  absl::StatusOr<Tensor> back = on_gpu->CopyTo("CPU:0");
  ASSERT_TRUE(IsOk(back));
  EXPECT_EQ(Contents<float>(*back), data);

  absl::StatusOr<Tensor> gpu_copy = on_gpu->CopyTo("GPU:0");
  ASSERT_TRUE(IsOk(gpu_copy));
  EXPECT_NE(gpu_copy->data(), on_gpu->data());
  absl::StatusOr<Tensor> back2 = gpu_copy->CopyTo("cpu:0");
  ASSERT_TRUE(IsOk(back2));
  EXPECT_EQ(Contents<float>(*back2), data);

  absl::StatusOr<Tensor> zeros = Tensor::Create(Desc(kFloat32, dims, 0, "gpu:0"), nullptr);
  ASSERT_TRUE(IsOk(zeros));
  absl::StatusOr<Tensor> zeros_back = zeros->CopyTo("CPU:0");
  ASSERT_TRUE(IsOk(zeros_back));
  EXPECT_EQ(Contents<float>(*zeros_back), std::vector<float>(12, 0.f));

  absl::StatusOr<Tensor> host = Tensor::Create(Desc(kFloat32, dims, 48), data.data());
  ASSERT_TRUE(IsOk(host));
  absl::StatusOr<Tensor> up = host->CopyTo("GPU:0");
  ASSERT_TRUE(IsOk(up));
  absl::StatusOr<Tensor> down = up->CopyTo("CPU:0");
  ASSERT_TRUE(IsOk(down));
  EXPECT_EQ(Contents<float>(*down), data);

  const int32_t count = GpuRuntime::Get().device_count();
  EXPECT_TRUE(HasError(Tensor::Create(Desc(kFloat32, dims, 0, absl::StrCat("GPU:", count)), nullptr),
                       absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace distribute
