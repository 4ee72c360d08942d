#include "core/tensor/dlpack_exchange.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/device/local_devices.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Keeps the exported tensor's buffer alive until the consumer calls the deleter.
struct ExportContext {
  Tensor tensor;
  std::vector<int64_t> shape;
  DLManagedTensor managed{};
};

DLDataType ToDlType(DType dtype) {
  const uint8_t bits = static_cast<uint8_t>(DTypeSize(dtype) * 8);
  switch (dtype) {
    case DType::kFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return {kDLFloat, bits, 1};
    case DType::kBFloat16:
      return {kDLBfloat, bits, 1};
    case DType::kUInt8:
      return {kDLUInt, bits, 1};
    case DType::kBool:
      return {kDLBoolCode, 8, 1};
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return {kDLInt, bits, 1};
  }
  return {kDLOpaqueHandle, 0, 1};
}

absl::StatusOr<DType> FromDlType(DLDataType type) {
  if (type.lanes != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype.lanes is ", type.lanes, ": only 1 lane is supported"));
  }
  switch (type.code) {
    case kDLFloat:
      if (type.bits == 16) return DType::kFloat16;
      if (type.bits == 32) return DType::kFloat32;
      if (type.bits == 64) return DType::kFloat64;
      break;
    case kDLBfloat:
      if (type.bits == 16) return DType::kBFloat16;
      break;
    case kDLInt:
      if (type.bits == 8) return DType::kInt8;
      if (type.bits == 16) return DType::kInt16;
      if (type.bits == 32) return DType::kInt32;
      if (type.bits == 64) return DType::kInt64;
      break;
    case kDLUInt:
      if (type.bits == 8) return DType::kUInt8;
      break;
    case kDLBoolCode:
      if (type.bits == 8) return DType::kBool;
      break;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "dtype (code ", type.code, ", bits ", type.bits,
      ") is not supported: expected float 16/32/64, bfloat 16, int 8/16/32/64, uint 8 or bool 8"));
}

absl::StatusOr<DeviceSpec> FromDlDevice(DLDevice device) {
  DeviceSpec spec;
  switch (device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
      spec.type = DeviceType::kCpu;
      spec.index = 0;
      break;
    case kDLCUDA:
      if (device.device_id < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "device.device_id is ", device.device_id, ": a kDLCUDA device id must be >= 0"));
      }
      spec.type = DeviceType::kGpu;
      spec.index = device.device_id;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "device type ", static_cast<int>(device.device_type),
          " is not supported: expected kDLCPU, kDLCUDAHost or kDLCUDA"));
  }
  return ResolveLocalDevice(spec);
}

absl::Status CheckCompactStrides(const DLTensor& dl, const Shape& shape) {
  // An empty tensor has no layout to get wrong, and producers give it strides computed
  // with max(dim, 1); checking them would only reject valid tensors.
  if (dl.strides == nullptr || shape.num_elements() == 0) return absl::OkStatus();
  int64_t expected = 1;
  for (int i = dl.ndim - 1; i >= 0; --i) {
    // A dimension of size 1 may carry any stride (frameworks differ there).
    if (dl.shape[i] != 1 && dl.strides[i] != expected) {
      return absl::InvalidArgumentError(absl::StrCat(
          "strides[", i, "] is ", dl.strides[i], " but a compact row-major tensor needs ",
          expected, ": make the tensor contiguous first"));
    }
    expected *= dl.shape[i];
  }
  return absl::OkStatus();
}

// One past the highest user-space address this platform's processes can have: 57-bit
// (5-level paging) on x86-64, 52-bit on AArch64; anything above is the kernel's half or not
// canonical, and its first read faults.
constexpr uintptr_t kUserAddressEnd =
#if defined(__x86_64__)
    uintptr_t{1} << 56;
#elif defined(__aarch64__)
    uintptr_t{1} << 52;
#else
    UINTPTR_MAX;
#endif

// Whether the page holding `address` is mapped in this process (mincore fails with
// ENOMEM for an unmapped one, reading nothing).
bool PageIsMapped(uintptr_t address) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  unsigned char residency = 0;
  return mincore(reinterpret_cast<void*>(address & ~(page - 1)), 1, &residency) == 0;
}

// What a producer's pointer into host memory must satisfy before the library reads through
// it: the range lies in user space and its first and last bytes are mapped here. The
// producer is trusted for the rest (the bytes between, and that they stay valid until its
// deleter runs), as DLPack consumers trust producers. Device memory is only handed to the
// GPU plugin, never read by the host.
absl::Status CheckProducerRange(uintptr_t first, size_t bytes, const DeviceSpec& device) {
  if (device.type != DeviceType::kCpu) return absl::OkStatus();
  const uintptr_t last = first + (bytes - 1);
  if (last >= kUserAddressEnd) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data + byte_offset (0x", absl::Hex(first), ", ", bytes,
        " bytes) lies outside this process's user address space"));
  }
  const bool first_mapped = PageIsMapped(first);
  if (!first_mapped || !PageIsMapped(last)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data + byte_offset (0x", absl::Hex(first), ", ", bytes, " bytes) is not memory of this process: its ",
        first_mapped ? "last" : "first", " page is not mapped"));
  }
  return absl::OkStatus();
}

}  // namespace

DLManagedTensor* ExportDlpack(const Tensor& tensor) {
  auto* ctx = new ExportContext{
      tensor, std::vector<int64_t>(tensor.shape().dims().begin(), tensor.shape().dims().end()), {}};
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = tensor.data();
  const DeviceSpec& device = tensor.device();
  dl.device = device.type == DeviceType::kGpu ? DLDevice{kDLCUDA, device.index} : DLDevice{kDLCPU, 0};
  dl.ndim = tensor.shape().rank();
  dl.dtype = ToDlType(tensor.dtype());
  dl.shape = ctx->shape.empty() ? nullptr : ctx->shape.data();
  dl.strides = nullptr;
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportContext*>(self->manager_ctx);
  };
  return &ctx->managed;
}

absl::StatusOr<Tensor> ImportDlpack(DLManagedTensor* managed) {
  const DLTensor& dl = managed->dl_tensor;
  if (dl.ndim < 0 || dl.ndim > kMaxRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("ndim is ", dl.ndim, ": expected 0 to ", kMaxRank));
  }
  if (dl.ndim > 0 && dl.shape == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("shape is NULL but ndim is ", dl.ndim));
  }
  ASSIGN_OR_RETURN(DType dtype, FromDlType(dl.dtype));
  ASSIGN_OR_RETURN(Shape shape, Shape::Make(std::span<const int64_t>(
                                    dl.shape, static_cast<size_t>(dl.ndim))));
  RETURN_IF_ERROR(CheckCompactStrides(dl, shape));
  ASSIGN_OR_RETURN(DeviceSpec device, FromDlDevice(dl.device));
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  if (dl.data == nullptr && bytes != 0) {
    return absl::InvalidArgumentError("data is NULL for a non-empty tensor");
  }
  // The producer's allocation is unknown, but an offset must not wrap the address space
  // (data + byte_offset + bytes), nor point anywhere from NULL.
  const uintptr_t base = reinterpret_cast<uintptr_t>(dl.data);
  if (dl.byte_offset != 0 && dl.data == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("byte_offset is ", dl.byte_offset, " but data is NULL"));
  }
  if (dl.byte_offset > UINTPTR_MAX - base || bytes > UINTPTR_MAX - base - dl.byte_offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "byte_offset ", dl.byte_offset, " with ", bytes, " bytes of data wraps around the address space"));
  }
  // The address is formed as an integer and checked before it becomes a pointer: an offset
  // past the producer's allocation must not be pointer arithmetic.
  const uintptr_t address = base + dl.byte_offset;
  if (bytes > 0) RETURN_IF_ERROR(CheckProducerRange(address, bytes, device));
  void* data = dl.data == nullptr ? nullptr : reinterpret_cast<void*>(address);
  auto buffer = Buffer::Borrow(device, data, bytes, [managed] {
    if (managed->deleter != nullptr) managed->deleter(managed);
  });
  return Tensor::FromBuffer(dtype, std::move(shape), std::move(buffer));
}

}  // namespace distribute
