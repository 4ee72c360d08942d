// The `reduce` entry: one element-wise kernel, templated on the element type and the op,
// that combines up to kMaxReduceInputs arrays of one device (or of peers it may read).
//
// Determinism: thread i computes element i alone, combining the inputs in the CPU kernels'
// binary-tree order (TreeElement) in a fixed accumulator type, so the bits of the
// result depend on neither the launch shape nor the GPU model. Each step is one correctly
// rounded IEEE operation: no multiply-add can be contracted, and this file must not be
// built with --use_fast_math (it flushes denormals and approximates the division).
// float16 and bfloat16 accumulate in float32 and round once, at the store; integer sums and
// products wrap (two's complement) as the CPU kernels' do (core/collective/reduce_kernels.cc),
// and MIN and MAX use the same comparisons as those, so a NaN propagates the same way.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/devices.h"
#include "core/cuda/dtypes.h"
#include "core/cuda/plugin_entries.h"
#include "core/cuda/plugin_errors.h"

namespace distribute::gpu_plugin {
namespace {

// The input pointers travel by value in the kernel's parameters, so a call needs no device
// copy of a pointer array. The core passes one input per GPU replica of this process, one
// replica per distinct GPU, and no machine has more than 16 GPUs (HGX and DGX-2 boards).
constexpr int32_t kMaxReduceInputs = 16;
constexpr int kThreadsPerBlock = 256;
// Enough blocks to fill any current GPU; the grid-stride loop covers longer arrays.
constexpr size_t kMaxBlocks = 4096;

struct ReduceInputs {
  const void* ptr[kMaxReduceInputs];
};

// How an element is loaded into the accumulator and stored back.
template <typename T>
struct Plain {
  using Storage = T;
  using Acc = T;
  static constexpr bool kIsFloat = std::is_floating_point_v<T>;
  __host__ __device__ static Acc Load(T v) { return v; }
  __host__ __device__ static T Store(Acc v) { return v; }
};

struct Half {
  using Storage = __half;
  using Acc = float;
  static constexpr bool kIsFloat = true;
  __host__ __device__ static Acc Load(__half v) { return __half2float(v); }
  __host__ __device__ static __half Store(Acc v) { return __float2half_rn(v); }
};

struct BFloat {
  using Storage = __nv_bfloat16;
  using Acc = float;
  static constexpr bool kIsFloat = true;
  __host__ __device__ static Acc Load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __host__ __device__ static __nv_bfloat16 Store(Acc v) { return __float2bfloat16_rn(v); }
};

// TF bools are bytes; any nonzero byte is true. On 0/1 values MIN is AND and MAX is OR.
struct Bool {
  using Storage = uint8_t;
  using Acc = uint8_t;
  static constexpr bool kIsFloat = false;
  __host__ __device__ static Acc Load(uint8_t v) { return v != 0 ? 1 : 0; }
  __host__ __device__ static uint8_t Store(Acc v) { return v; }
};

// Integer arithmetic in an unsigned type at least as wide as int, so it wraps instead of
// overflowing (undefined for signed types, and for uint16 promoted to int), then truncates.
template <typename A>
using WrapType = std::conditional_t<sizeof(A) <= sizeof(uint32_t), uint32_t, uint64_t>;

struct SumOp {
  template <typename A>
  __host__ __device__ static A Apply(A a, A b) {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<WrapType<A>>(a) + static_cast<WrapType<A>>(b));
    } else {
      return a + b;
    }
  }
};
struct ProductOp {
  template <typename A>
  __host__ __device__ static A Apply(A a, A b) {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<WrapType<A>>(a) * static_cast<WrapType<A>>(b));
    } else {
      return a * b;
    }
  }
};
// a - b, for the `difference` entry (two inputs: TreeElement applies it as in0 - in1). The
// CPU kernels compute a + (b * -1): the same bits (IEEE subtraction is that addition, and
// integers wrap alike).
struct DifferenceOp {
  template <typename A>
  __host__ __device__ static A Apply(A a, A b) {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<WrapType<A>>(a) - static_cast<WrapType<A>>(b));
    } else {
      return a - b;
    }
  }
};
struct MinOp {
  template <typename A>
  __host__ __device__ static A Apply(A a, A b) { return b < a ? b : a; }
};
struct MaxOp {
  template <typename A>
  __host__ __device__ static A Apply(A a, A b) { return a < b ? b : a; }
};

// Inputs [lo, hi) of element i combined in the CPU kernels' order (core/collective/
// reduce_kernels.cc, TreeReduce): a binary tree that splits a range after its first
// ceil(n/2) inputs, so (a+b)+c for three and (a+b)+(c+d) for four. GPU reductions by this
// kernel therefore give the same bits as the CPU collectives. Depth is a template
// parameter (no device recursion): 5 levels cover kMaxReduceInputs = 16.
template <typename Tr, typename Op, int Depth>
__host__ __device__ typename Tr::Acc TreeElement(const ReduceInputs& inputs, int32_t lo, int32_t hi,
                                                 size_t i) {
  using S = typename Tr::Storage;
  if constexpr (Depth > 0) {
    if (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo + 1) / 2;
      return Op::Apply(TreeElement<Tr, Op, Depth - 1>(inputs, lo, mid, i),
                       TreeElement<Tr, Op, Depth - 1>(inputs, mid, hi, i));
    }
  }
  return Tr::Load(static_cast<const S*>(inputs.ptr[lo])[i]);
}

// Element i of the result. __host__ too, so that the arithmetic can be checked on a
// machine without a GPU.
template <typename Tr, typename Op>
__host__ __device__ typename Tr::Storage ReduceElement(const ReduceInputs& inputs, int32_t num_inputs,
                                                       size_t i, typename Tr::Acc divisor, bool divide) {
  static_assert(kMaxReduceInputs <= 32, "TreeElement's depth covers 32 inputs");
  typename Tr::Acc acc = TreeElement<Tr, Op, 5>(inputs, 0, num_inputs, i);
  if constexpr (Tr::kIsFloat) {
    if (divide) acc = acc / divisor;
  }
  return Tr::Store(acc);
}

// output may alias inputs.ptr[0]: each element is read by the thread that writes it, before
// it writes it, so no __restrict__ and no read-only cache loads.
template <typename Tr, typename Op>
__global__ void ReduceKernel(ReduceInputs inputs, int32_t num_inputs, typename Tr::Storage* output,
                             size_t count, typename Tr::Acc divisor, bool divide) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    output[i] = ReduceElement<Tr, Op>(inputs, num_inputs, i, divisor, divide);
  }
}

// What one call asks for, checked.
struct ReduceCall {
  int32_t device;
  cudaStream_t stream;
  ReduceInputs inputs;
  int32_t num_inputs;
  void* output;
  size_t count;
  int64_t divisor;
};

template <typename Tr, typename Op>
int Launch(const ReduceCall& call, char* err, size_t err_len) {
  using A = typename Tr::Acc;
  const size_t blocks_needed = (call.count + kThreadsPerBlock - 1) / kThreadsPerBlock;
  const unsigned blocks = static_cast<unsigned>(blocks_needed < kMaxBlocks ? blocks_needed : kMaxBlocks);
  // A launch reports a bad configuration only through the thread's last-error record:
  // clear what an earlier call may have left there, so the check below is about this launch.
  (void)cudaGetLastError();
  ReduceKernel<Tr, Op><<<blocks, kThreadsPerBlock, 0, call.stream>>>(
      call.inputs, call.num_inputs, static_cast<typename Tr::Storage*>(call.output), call.count,
      static_cast<A>(call.divisor), call.divisor > 1);
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    return FailCuda(error, call.device, err, err_len, "launch of the reduce kernel (%u blocks of %d threads)",
                    blocks, kThreadsPerBlock);
  }
  return 0;
}

template <typename Tr>
int DispatchOp(int32_t op, const ReduceCall& call, char* err, size_t err_len) {
  if constexpr (std::is_same_v<Tr, Bool>) {
    // SUM and PRODUCT of bools were rejected by CheckOpForDType.
    return op == kReduceMin ? Launch<Tr, MinOp>(call, err, err_len) : Launch<Tr, MaxOp>(call, err, err_len);
  } else {
    switch (op) {
      case kReduceSum: return Launch<Tr, SumOp>(call, err, err_len);
      case kReduceMin: return Launch<Tr, MinOp>(call, err, err_len);
      case kReduceMax: return Launch<Tr, MaxOp>(call, err, err_len);
      default: return Launch<Tr, ProductOp>(call, err, err_len);
    }
  }
}

bool IsFloat(int32_t dtype) {
  return dtype == kFloat32 || dtype == kFloat64 || dtype == kFloat16 || dtype == kBFloat16;
}

// Everything that fails before the device is touched, with what was expected.
int CheckArguments(int32_t device, int32_t dtype, int32_t op, const void* const* inputs,
                   int32_t num_inputs, void* output, size_t count, int64_t divisor, char* err,
                   size_t err_len) {
  const char* dtype_name = DTypeName(dtype);
  const char* op_name = ReduceOpName(op);
  const int gpu = static_cast<int>(device);
  if (num_inputs < 1 || num_inputs > kMaxReduceInputs) {
    return FailWith(err, err_len, "reduce on GPU:%d: %d inputs; expected 1 to %d in one call",
                    gpu, static_cast<int>(num_inputs), static_cast<int>(kMaxReduceInputs));
  }
  if (dtype_name == nullptr) {
    return FailWith(err, err_len,
                    "reduce on GPU:%d: dtype %d is not supported; expected float32, float64, "
                    "float16, bfloat16, int8, int16, int32, int64, uint8 or bool",
                    gpu, static_cast<int>(dtype));
  }
  if (op_name == nullptr || op == kReduceMean) {
    return FailWith(err, err_len,
                    "reduce on GPU:%d: op %d (%s) is not supported; expected SUM (1), MIN (3), "
                    "MAX (4) or PRODUCT (5), MEAN as SUM with a divisor",
                    gpu, static_cast<int>(op), op_name != nullptr ? op_name : "unknown");
  }
  if (dtype == kBool && (op == kReduceSum || op == kReduceProduct)) {
    return FailWith(err, err_len,
                    "reduce on GPU:%d: %s of bool is not supported; bool has MIN (logical AND) "
                    "and MAX (logical OR)",
                    gpu, op_name);
  }
  if (divisor < 0) {
    return FailWith(err, err_len,
                    "reduce on GPU:%d: divisor %lld is negative; expected 0 or 1 (no division) "
                    "or the count to divide by",
                    gpu, static_cast<long long>(divisor));
  }
  if (divisor > 1 && !IsFloat(dtype)) {
    return FailWith(err, err_len,
                    "reduce on GPU:%d: divisor %lld with %s: true division needs a floating "
                    "dtype (float32, float64, float16, bfloat16)",
                    gpu, static_cast<long long>(divisor), dtype_name);
  }
  if (count == 0) return 0;
  if (output == nullptr || inputs == nullptr) {
    return FailWith(err, err_len, "reduce on GPU:%d: %s is NULL for %zu elements", gpu,
                    output == nullptr ? "output" : "inputs", count);
  }
  for (int32_t k = 0; k < num_inputs; ++k) {
    if (inputs[k] == nullptr) {
      return FailWith(err, err_len, "reduce on GPU:%d: inputs[%d] of %d is NULL", gpu,
                      static_cast<int>(k), static_cast<int>(num_inputs));
    }
  }
  return 0;
}

}  // namespace

int Reduce(int32_t device, void* stream, int32_t dtype, int32_t op, const void* const* inputs,
           int32_t num_inputs, void* output, size_t count, int64_t divisor, char* err,
           size_t err_len) {
  if (CheckArguments(device, dtype, op, inputs, num_inputs, output, count, divisor, err, err_len) != 0) {
    return 1;
  }
  if (UseDevice(device, err, err_len) != 0) return 1;
  if (count == 0) return 0;
  ReduceCall call{device, static_cast<cudaStream_t>(stream), {}, num_inputs, output, count, divisor};
  for (int32_t k = 0; k < num_inputs; ++k) call.inputs.ptr[k] = inputs[k];
  switch (dtype) {
    case kFloat32: return DispatchOp<Plain<float>>(op, call, err, err_len);
    case kFloat64: return DispatchOp<Plain<double>>(op, call, err, err_len);
    case kFloat16: return DispatchOp<Half>(op, call, err, err_len);
    case kBFloat16: return DispatchOp<BFloat>(op, call, err, err_len);
    case kInt8: return DispatchOp<Plain<int8_t>>(op, call, err, err_len);
    case kInt16: return DispatchOp<Plain<int16_t>>(op, call, err, err_len);
    case kInt32: return DispatchOp<Plain<int32_t>>(op, call, err, err_len);
    case kInt64: return DispatchOp<Plain<int64_t>>(op, call, err, err_len);
    case kUInt8: return DispatchOp<Plain<uint8_t>>(op, call, err, err_len);
    default: return DispatchOp<Bool>(op, call, err, err_len);  // CheckArguments left only bool
  }
}

int Difference(int32_t device, void* stream, int32_t dtype, const void* a, const void* b, void* output,
               size_t count, char* err, size_t err_len) {
  const char* dtype_name = DTypeName(dtype);
  if (dtype_name == nullptr || dtype == kBool) {
    return FailWith(err, err_len,
                    "difference on GPU:%d: dtype %d (%s) is not supported; expected float32, float64, "
                    "float16, bfloat16, int8, int16, int32, int64 or uint8",
                    static_cast<int>(device), static_cast<int>(dtype), dtype_name != nullptr ? dtype_name : "unknown");
  }
  if (count == 0) return 0;
  if (a == nullptr || b == nullptr || output == nullptr) {
    return FailWith(err, err_len, "difference on GPU:%d: an operand is NULL for %zu elements",
                    static_cast<int>(device), count);
  }
  if (UseDevice(device, err, err_len) != 0) return 1;
  ReduceCall call{device, static_cast<cudaStream_t>(stream), {}, 2, output, count, 0};
  call.inputs.ptr[0] = a;
  call.inputs.ptr[1] = b;
  switch (dtype) {
    case kFloat32: return Launch<Plain<float>, DifferenceOp>(call, err, err_len);
    case kFloat64: return Launch<Plain<double>, DifferenceOp>(call, err, err_len);
    case kFloat16: return Launch<Half, DifferenceOp>(call, err, err_len);
    case kBFloat16: return Launch<BFloat, DifferenceOp>(call, err, err_len);
    case kInt8: return Launch<Plain<int8_t>, DifferenceOp>(call, err, err_len);
    case kInt16: return Launch<Plain<int16_t>, DifferenceOp>(call, err, err_len);
    case kInt32: return Launch<Plain<int32_t>, DifferenceOp>(call, err, err_len);
    case kInt64: return Launch<Plain<int64_t>, DifferenceOp>(call, err, err_len);
    default: return Launch<Plain<uint8_t>, DifferenceOp>(call, err, err_len);  // uint8: bool refused above
  }
}

}  // namespace distribute::gpu_plugin
