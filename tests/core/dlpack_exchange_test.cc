// DLPack export/import. Type codes and bits are DLPack's (kDLInt 0, kDLUInt 1, kDLFloat 2,
// kDLBfloat 4, bool 6 with 8 bits); ownership rules: an exported tensor holds a share of
// the buffer until its deleter runs, an imported one calls the producer's deleter exactly
// once, and a rejected import takes nothing.
#include "core/tensor/dlpack_exchange.h"

#include <dlpack/dlpack.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "gtest/gtest.h"
#include "tests/core/release_probe.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::CountingRelease;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::ReleaseProbe;

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

// A producer-owned DLManagedTensor whose deleter counts its calls.
struct Producer {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::vector<unsigned char> memory;
  DLManagedTensor managed{};
  int deleter_calls = 0;

  Producer(DLDataType dtype, std::vector<int64_t> dims, size_t bytes)
      : shape(std::move(dims)), memory(bytes) {
    for (size_t i = 0; i < bytes; ++i) memory[i] = static_cast<unsigned char>(i * 3 + 1);
    DLTensor& dl = managed.dl_tensor;
    dl.data = memory.empty() ? nullptr : memory.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = dtype;
    dl.shape = shape.empty() ? nullptr : shape.data();
    dl.strides = nullptr;
    dl.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      ++static_cast<Producer*>(self->manager_ctx)->deleter_calls;
    };
  }
  void SetStrides(std::vector<int64_t> s) {
    strides = std::move(s);
    managed.dl_tensor.strides = strides.data();
  }
};

constexpr DLDataType kF32{kDLFloat, 32, 1};

struct TypeCase {
  int32_t dist_dtype;
  DType dtype;
  uint8_t code;
  uint8_t bits;
};

const std::vector<TypeCase>& TypeCases() {
  static const std::vector<TypeCase> cases = {
      {1, DType::kFloat32, kDLFloat, 32},  {2, DType::kFloat64, kDLFloat, 64},
      {19, DType::kFloat16, kDLFloat, 16}, {14, DType::kBFloat16, kDLBfloat, 16},
      {6, DType::kInt8, kDLInt, 8},        {5, DType::kInt16, kDLInt, 16},
      {3, DType::kInt32, kDLInt, 32},      {9, DType::kInt64, kDLInt, 64},
      {4, DType::kUInt8, kDLUInt, 8},      {10, DType::kBool, 6, 8},
  };
  return cases;
}

TEST(DlpackTest, BoolCodeIsDlpack08s) { EXPECT_EQ(kDLBoolCode, 6); }

TEST(DlpackExportTest, DescribesTheTensor) {
  for (const TypeCase& c : TypeCases()) {
    SCOPED_TRACE(c.dist_dtype);
    const std::vector<int64_t> dims = {2, 3, 1};
    const size_t bytes = 6 * c.bits / 8;
    std::vector<unsigned char> data(bytes, 1);
    absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(c.dist_dtype, dims, bytes), data.data());
    ASSERT_TRUE(IsOk(tensor));
    DLManagedTensor* managed = ExportDlpack(*tensor);
    ASSERT_NE(managed, nullptr);
    const DLTensor& dl = managed->dl_tensor;
    EXPECT_EQ(dl.data, tensor->data());
    EXPECT_EQ(dl.device.device_type, kDLCPU);
    EXPECT_EQ(dl.device.device_id, 0);
    EXPECT_EQ(dl.ndim, 3);
    ASSERT_NE(dl.shape, nullptr);
    EXPECT_EQ(std::vector<int64_t>(dl.shape, dl.shape + 3), dims);
    EXPECT_EQ(dl.strides, nullptr);
    EXPECT_EQ(dl.byte_offset, 0u);
    EXPECT_EQ(dl.dtype.code, c.code);
    EXPECT_EQ(dl.dtype.bits, c.bits);
    EXPECT_EQ(dl.dtype.lanes, 1);
    ASSERT_NE(managed->deleter, nullptr);
    managed->deleter(managed);
  }
}

TEST(DlpackExportTest, Scalar) {
  const float value = 3.f;
  absl::StatusOr<Tensor> tensor = Tensor::Create(Desc(1, {}, 4), &value);
  ASSERT_TRUE(IsOk(tensor));
  DLManagedTensor* managed = ExportDlpack(*tensor);
  EXPECT_EQ(managed->dl_tensor.ndim, 0);
  float read = 0;
  std::memcpy(&read, managed->dl_tensor.data, 4);
  EXPECT_EQ(read, 3.f);
  managed->deleter(managed);
}

TEST(DlpackExportTest, KeepsTheBufferUntilTheDeleterRuns) {
  ReleaseProbe probe;
  std::vector<int32_t> memory = {1, 2, 3, 4};
  const std::vector<int64_t> dims = {4};
  DLManagedTensor* first = nullptr;
  DLManagedTensor* second = nullptr;
  {
    absl::StatusOr<Tensor> tensor = Tensor::Wrap(Desc(3, dims, 16), memory.data(),
                                                 CountingRelease(&probe));
    ASSERT_TRUE(IsOk(tensor));
    first = ExportDlpack(*tensor);
    second = ExportDlpack(*tensor);
    EXPECT_NE(first, second);
    EXPECT_EQ(first->dl_tensor.data, memory.data());
  }
  EXPECT_EQ(probe.calls, 0);
  // The shape stays readable after the tensor is gone.
  EXPECT_EQ(first->dl_tensor.shape[0], 4);
  first->deleter(first);
  EXPECT_EQ(probe.calls, 0);
  second->deleter(second);
  EXPECT_EQ(probe.calls, 1);
}

TEST(DlpackImportTest, WrapsTheProducersMemoryAndDeletesOnce) {
  Producer producer(kF32, {2, 3}, 24);
  {
    absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
    ASSERT_TRUE(IsOk(tensor));
    EXPECT_EQ(tensor->data(), producer.memory.data());
    EXPECT_EQ(tensor->dtype(), DType::kFloat32);
    EXPECT_EQ(tensor->shape().dims(), (distribute::Dims{2, 3}));
    EXPECT_EQ(tensor->byte_size(), 24u);
    EXPECT_EQ(tensor->device().type, DeviceType::kCpu);
    EXPECT_EQ(tensor->device().index, 0);
    EXPECT_EQ(tensor->device_name(), "/device:CPU:0");
    Tensor copy = *tensor;
    std::vector<Tensor> copies(3, copy);
    tensor = absl::CancelledError("drop");
    copies.clear();
    EXPECT_EQ(producer.deleter_calls, 0);
  }
  EXPECT_EQ(producer.deleter_calls, 1);
}

TEST(DlpackImportTest, EveryDType) {
  for (const TypeCase& c : TypeCases()) {
    SCOPED_TRACE(c.dist_dtype);
    Producer producer({c.code, c.bits, 1}, {5}, 5 * c.bits / 8);
    {
      absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
      ASSERT_TRUE(IsOk(tensor));
      EXPECT_EQ(tensor->dtype(), c.dtype);
      EXPECT_EQ(tensor->byte_size(), 5u * c.bits / 8);
    }
    EXPECT_EQ(producer.deleter_calls, 1);
  }
}

TEST(DlpackImportTest, AppliesByteOffset) {
  Producer producer(kF32, {2}, 64);
  producer.managed.dl_tensor.byte_offset = 16;
  absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->data(), producer.memory.data() + 16);
  EXPECT_EQ(tensor->byte_size(), 8u);
}

// A producer is trusted for its memory, but not for a pointer outside this process: an
// offset of 2^63 (or one past the mapped memory) is refused before any read, which would
// fault, and nothing is taken.
TEST(DlpackImportTest, RefusesAPointerOutsideThisProcess) {
  for (const uint64_t offset : {uint64_t{1} << 63, uint64_t{1} << 56, uint64_t{1} << 46}) {
    SCOPED_TRACE(offset);
    Producer producer(kF32, {2}, 64);
    producer.managed.dl_tensor.byte_offset = offset;
    absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
    EXPECT_TRUE(HasError(tensor.status(), absl::StatusCode::kInvalidArgument, {"data + byte_offset"}));
    EXPECT_EQ(producer.deleter_calls, 0);
  }
  // Mapped memory whose last byte is past the mapping: the last page is checked too.
  const long page = sysconf(_SC_PAGESIZE);
  void* mapping = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  ASSERT_EQ(munmap(static_cast<char*>(mapping) + page, page), 0);
  Producer producer(kF32, {2}, 0);
  producer.managed.dl_tensor.data = static_cast<char*>(mapping) + page - 4;
  EXPECT_TRUE(HasError(ImportDlpack(&producer.managed).status(), absl::StatusCode::kInvalidArgument,
                       {"last page is not mapped"}));
  producer.shape[0] = 1;
  {
    absl::StatusOr<Tensor> one = ImportDlpack(&producer.managed);
    EXPECT_TRUE(IsOk(one));
  }
  munmap(mapping, page);
}

TEST(DlpackImportTest, ScalarWithNullShape) {
  Producer producer({kDLInt, 64, 1}, {}, 8);
  absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->shape().rank(), 0);
  EXPECT_EQ(tensor->byte_size(), 8u);
}

TEST(DlpackImportTest, EmptyTensorWithNullData) {
  Producer producer(kF32, {0, 4}, 0);
  ASSERT_EQ(producer.managed.dl_tensor.data, nullptr);
  {
    absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
    ASSERT_TRUE(IsOk(tensor));
    EXPECT_EQ(tensor->byte_size(), 0u);
    EXPECT_EQ(tensor->shape().num_elements(), 0);
  }
  EXPECT_EQ(producer.deleter_calls, 1);
}

TEST(DlpackImportTest, AcceptsCompactStridesAndAnyStrideOnSizeOneDims) {
  {
    Producer producer(kF32, {2, 3, 4}, 96);
    producer.SetStrides({12, 4, 1});
    EXPECT_TRUE(IsOk(ImportDlpack(&producer.managed)));
  }
  {
    Producer producer(kF32, {2, 1, 3}, 24);
    producer.SetStrides({3, 99, 1});
    EXPECT_TRUE(IsOk(ImportDlpack(&producer.managed)));
  }
  {
    Producer producer(kF32, {1, 5}, 20);
    producer.SetStrides({0, 1});
    EXPECT_TRUE(IsOk(ImportDlpack(&producer.managed)));
  }
}

// A tensor with no elements has no layout to check: NumPy and PyTorch give contiguous
// empty arrays strides computed with max(dim, 1) (np.empty((2, 0, 3)) and
// torch.empty(2, 0, 3) have element strides (3, 3, 1)), and such a producer cannot make the
// tensor "more contiguous", so the import must accept any strides there.
TEST(DlpackImportTest, ZeroElementTensorsAcceptProducerStrides) {
  {
    Producer producer(kF32, {2, 0, 3}, 0);
    producer.SetStrides({3, 3, 1});
    {
      absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
      EXPECT_TRUE(IsOk(tensor));
    }
    EXPECT_EQ(producer.deleter_calls, 1);
  }
  {
    Producer producer(kF32, {0, 3}, 0);  // torch.empty(3, 0).t()
    producer.SetStrides({1, 1});
    EXPECT_TRUE(IsOk(ImportDlpack(&producer.managed)));
  }
  {
    // Huge dimensions beside a zero one are a valid empty shape; checking their strides
    // must not overflow (the running product 2 * INT64_MAX would).
    Producer producer(kF32, {0, std::numeric_limits<int64_t>::max(), 2}, 0);
    producer.SetStrides({1, 2, 1});
    EXPECT_TRUE(IsOk(ImportDlpack(&producer.managed)));
  }
}

// "kDLCUDA (as GPU:device_id)": a negative device_id names no GPU and must be rejected as
// such, not silently read as GPU:0 (the default for an unspecified index in a name).
TEST(DlpackImportTest, NegativeCudaDeviceIdIsInvalid) {
  Producer producer(kF32, {2}, 8);
  producer.managed.dl_tensor.device = {kDLCUDA, -1};
  absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
  EXPECT_TRUE(HasError(tensor, absl::StatusCode::kInvalidArgument, {"-1"}));
  if (tensor.ok()) {
    EXPECT_NE(tensor->device().index, 0) << "device_id -1 became GPU:0";
  }
  tensor = absl::CancelledError("drop");
}

TEST(DlpackImportTest, CudaHostMemoryIsCpu) {
  Producer producer(kF32, {1}, 4);
  producer.managed.dl_tensor.device = {kDLCUDAHost, 0};
  absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->device().type, DeviceType::kCpu);
}

TEST(DlpackImportTest, NullDeleterIsAllowed) {
  Producer producer(kF32, {1}, 4);
  producer.managed.deleter = nullptr;
  absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
  ASSERT_TRUE(IsOk(tensor));
  tensor = absl::CancelledError("drop");
  EXPECT_EQ(producer.deleter_calls, 0);
}

// Each rejection leaves the DLManagedTensor with the caller: the deleter is not called.
TEST(DlpackImportTest, RejectionsTakeNothing) {
  struct Case {
    const char* what;
    absl::StatusCode code;
    std::vector<std::string> parts;
    std::function<void(Producer&)> edit;
  };
  const std::vector<Case> cases = {
      {"lanes", absl::StatusCode::kInvalidArgument, {"lanes is 4"},
       [](Producer& p) { p.managed.dl_tensor.dtype.lanes = 4; }},
      {"float8", absl::StatusCode::kInvalidArgument, {"code 2", "bits 8"},
       [](Producer& p) { p.managed.dl_tensor.dtype = {kDLFloat, 8, 1}; }},
      {"int4", absl::StatusCode::kInvalidArgument, {"code 0", "bits 4"},
       [](Producer& p) { p.managed.dl_tensor.dtype = {kDLInt, 4, 1}; }},
      {"uint16", absl::StatusCode::kInvalidArgument, {"code 1", "bits 16"},
       [](Producer& p) { p.managed.dl_tensor.dtype = {kDLUInt, 16, 1}; }},
      {"bfloat32", absl::StatusCode::kInvalidArgument, {"code 4", "bits 32"},
       [](Producer& p) { p.managed.dl_tensor.dtype = {kDLBfloat, 32, 1}; }},
      {"bool1", absl::StatusCode::kInvalidArgument, {"code 6", "bits 1"},
       [](Producer& p) { p.managed.dl_tensor.dtype = {6, 1, 1}; }},
      {"opaque", absl::StatusCode::kInvalidArgument, {"code 3"},
       [](Producer& p) { p.managed.dl_tensor.dtype = {kDLOpaqueHandle, 64, 1}; }},
      {"complex", absl::StatusCode::kInvalidArgument, {"code 5"},
       [](Producer& p) { p.managed.dl_tensor.dtype = {5, 64, 1}; }},
      {"ndim -1", absl::StatusCode::kInvalidArgument, {"ndim is -1"},
       [](Producer& p) { p.managed.dl_tensor.ndim = -1; }},
      {"ndim 33", absl::StatusCode::kInvalidArgument, {"ndim is 33", "32"},
       [](Producer& p) { p.managed.dl_tensor.ndim = 33; }},
      {"null shape", absl::StatusCode::kInvalidArgument, {"shape is NULL", "2"},
       [](Producer& p) { p.managed.dl_tensor.shape = nullptr; }},
      {"negative dim", absl::StatusCode::kInvalidArgument, {"shape[1]", "-3"},
       [](Producer& p) { p.shape[1] = -3; }},
      {"overflowing shape", absl::StatusCode::kInvalidArgument, {"too many elements"},
       [](Producer& p) { p.shape = {1LL << 40, 1LL << 40}; p.managed.dl_tensor.shape = p.shape.data(); }},
      {"transposed strides", absl::StatusCode::kInvalidArgument, {"strides[1] is 2", "needs 1"},
       [](Producer& p) { p.SetStrides({1, 2}); }},
      {"padded strides", absl::StatusCode::kInvalidArgument, {"strides[0] is 4", "needs 3"},
       [](Producer& p) { p.SetStrides({4, 1}); }},
      {"opencl device", absl::StatusCode::kInvalidArgument, {"device type 4"},
       [](Producer& p) { p.managed.dl_tensor.device = {kDLOpenCL, 0}; }},
      {"vulkan device", absl::StatusCode::kInvalidArgument, {"device type 7"},
       [](Producer& p) { p.managed.dl_tensor.device = {kDLVulkan, 0}; }},
      {"null data", absl::StatusCode::kInvalidArgument, {"NULL"},
       [](Producer& p) { p.managed.dl_tensor.data = nullptr; }},
      {"offset from NULL", absl::StatusCode::kInvalidArgument, {"byte_offset is 8 but data is NULL"},
       [](Producer& p) {
         p.shape[0] = 0;
         p.managed.dl_tensor.data = nullptr;
         p.managed.dl_tensor.byte_offset = 8;
       }},
      {"wrapping byte_offset", absl::StatusCode::kInvalidArgument, {"wraps around the address space"},
       [](Producer& p) { p.managed.dl_tensor.byte_offset = UINT64_MAX - 8; }},
      {"byte_offset to the end of the address space", absl::StatusCode::kInvalidArgument,
       {"wraps around the address space"},
       [](Producer& p) {
         p.managed.dl_tensor.byte_offset =
             UINTPTR_MAX - reinterpret_cast<uintptr_t>(p.managed.dl_tensor.data) - 4;
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Producer producer(kF32, {2, 3}, 24);
    c.edit(producer);
    const DLManagedTensor before = producer.managed;
    absl::StatusOr<Tensor> tensor = ImportDlpack(&producer.managed);
    ASSERT_FALSE(tensor.ok());
    EXPECT_EQ(tensor.status().code(), c.code) << tensor.status();
    for (const std::string& part : c.parts) {
      EXPECT_TRUE(HasError(tensor, c.code, {part}));
    }
    EXPECT_EQ(producer.deleter_calls, 0);
    // Nothing in the managed tensor was changed.
    const DLTensor& after = producer.managed.dl_tensor;
    EXPECT_EQ(after.data, before.dl_tensor.data);
    EXPECT_EQ(after.device.device_type, before.dl_tensor.device.device_type);
    EXPECT_EQ(after.device.device_id, before.dl_tensor.device.device_id);
    EXPECT_EQ(after.ndim, before.dl_tensor.ndim);
    EXPECT_EQ(after.dtype.code, before.dl_tensor.dtype.code);
    EXPECT_EQ(after.dtype.bits, before.dl_tensor.dtype.bits);
    EXPECT_EQ(after.dtype.lanes, before.dl_tensor.dtype.lanes);
    EXPECT_EQ(after.shape, before.dl_tensor.shape);
    EXPECT_EQ(after.strides, before.dl_tensor.strides);
    EXPECT_EQ(after.byte_offset, before.dl_tensor.byte_offset);
    EXPECT_EQ(producer.managed.manager_ctx, before.manager_ctx);
    EXPECT_EQ(producer.managed.deleter, before.deleter);
    tensor = absl::CancelledError("drop");
    EXPECT_EQ(producer.deleter_calls, 0);
  }
}

TEST(DlpackImportTest, CudaWithoutGpuIsFailedPreconditionAndTakesNothing) {
  if (HasGpu()) GTEST_SKIP() << "this machine has a GPU";
  Producer producer(kF32, {2}, 8);
  producer.managed.dl_tensor.device = {kDLCUDA, 0};
  EXPECT_TRUE(HasError(ImportDlpack(&producer.managed), absl::StatusCode::kFailedPrecondition,
                       {"GPU:0"}));
  EXPECT_EQ(producer.deleter_calls, 0);
}

TEST(DlpackRoundTripTest, ExportThenImportSharesMemory) {
  for (const TypeCase& c : TypeCases()) {
    SCOPED_TRACE(c.dist_dtype);
    ReleaseProbe probe;
    const std::vector<int64_t> dims = {3, 1, 2};
    std::vector<unsigned char> memory(6 * c.bits / 8);
    for (size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<unsigned char>(i);
    {
      absl::StatusOr<Tensor> original =
          Tensor::Wrap(Desc(c.dist_dtype, dims, memory.size()), memory.data(), CountingRelease(&probe));
      ASSERT_TRUE(IsOk(original));
      DLManagedTensor* managed = ExportDlpack(*original);
      absl::StatusOr<Tensor> imported = ImportDlpack(managed);
      ASSERT_TRUE(IsOk(imported));
      EXPECT_EQ(imported->data(), memory.data());
      EXPECT_EQ(imported->dtype(), c.dtype);
      EXPECT_TRUE(imported->shape() == original->shape());
      EXPECT_EQ(imported->byte_size(), memory.size());
      EXPECT_EQ(imported->device_name(), original->device_name());
      original = absl::CancelledError("drop the original first");
      EXPECT_EQ(probe.calls, 0);  // the import still holds the memory
    }
    EXPECT_EQ(probe.calls, 1);
    EXPECT_EQ(probe.destroyed, 1);
  }
}

TEST(DlpackRoundTripTest, ImportThenExportCallsTheProducerOnceAtTheEnd) {
  Producer producer({kDLInt, 32, 1}, {4}, 16);
  DLManagedTensor* exported = nullptr;
  {
    absl::StatusOr<Tensor> imported = ImportDlpack(&producer.managed);
    ASSERT_TRUE(IsOk(imported));
    exported = ExportDlpack(*imported);
    EXPECT_EQ(exported->dl_tensor.data, producer.memory.data());
    EXPECT_EQ(exported->dl_tensor.dtype.code, kDLInt);
    EXPECT_EQ(exported->dl_tensor.dtype.bits, 32);
  }
  EXPECT_EQ(producer.deleter_calls, 0);
  exported->deleter(exported);
  EXPECT_EQ(producer.deleter_calls, 1);
}

TEST(DlpackGpuTest, ExportAndImportGpuTensors) {
  if (!HasGpu()) GTEST_SKIP() << "no GPU: " << GpuRuntime::Get().unavailable_reason();
  const std::vector<int64_t> dims = {8};
  absl::StatusOr<Tensor> on_gpu = Tensor::Create(Desc(1, dims, 0, "GPU:0"), nullptr);
  ASSERT_TRUE(IsOk(on_gpu));
  DLManagedTensor* managed = ExportDlpack(*on_gpu);
  EXPECT_EQ(managed->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(managed->dl_tensor.device.device_id, 0);
  absl::StatusOr<Tensor> imported = ImportDlpack(managed);
  ASSERT_TRUE(IsOk(imported));
  EXPECT_EQ(imported->device().type, DeviceType::kGpu);
  EXPECT_EQ(imported->device_name(), "/device:GPU:0");
  EXPECT_EQ(imported->data(), on_gpu->data());

  Producer producer(kF32, {2}, 8);
  producer.managed.dl_tensor.device = {kDLCUDA, GpuRuntime::Get().device_count()};
  EXPECT_TRUE(HasError(ImportDlpack(&producer.managed), absl::StatusCode::kNotFound));
  EXPECT_EQ(producer.deleter_calls, 0);
}

}  // namespace
}  // namespace distribute
