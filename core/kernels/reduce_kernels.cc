#include "core/kernels/reduce_kernels.h"

#include <algorithm>
#include <cstring>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <limits>
#include <type_traits>
#include <vector>

#include "core/tensor/half.h"

namespace distribute {
namespace {

// Storage type, accumulator type and the conversions between them.
template <typename T>
struct Plain {
  using Storage = T;
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  static Acc Load(T v) { return static_cast<Acc>(v); }
  static T Store(Acc v) { return static_cast<T>(v); }
};

struct Half {
  using Storage = uint16_t;
  using Acc = float;
  static Acc Load(uint16_t v) { return HalfToFloat(v); }
  static uint16_t Store(Acc v) { return FloatToHalf(v); }
};

struct BFloat {
  using Storage = uint16_t;
  using Acc = float;
  static Acc Load(uint16_t v) { return BFloat16ToFloat(v); }
  static uint16_t Store(Acc v) { return FloatToBFloat16(v); }
};

struct Bool {
  using Storage = uint8_t;
  using Acc = uint8_t;
  static Acc Load(uint8_t v) { return v != 0; }
  static uint8_t Store(Acc v) { return v; }
};

// How partial results are stored between stages (the accumulator dtype's element): float
// for the 16-bit floats, int64 for the narrow integers, else the type itself.
template <typename Tr>
using AccStorage = std::conditional_t<std::is_same_v<Tr, Half> || std::is_same_v<Tr, BFloat>, float,
                                      typename Tr::Acc>;

// Integer sums and products wrap instead of overflowing (undefined for signed types).
template <typename Acc>
Acc Add(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) {
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename Acc>
Acc Multiply(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) {
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

struct SumOp {
  template <typename A>
  static A Apply(A a, A b) { return Add(a, b); }
};
struct ProductOp {
  template <typename A>
  static A Apply(A a, A b) { return Multiply(a, b); }
};
struct MinOp {
  template <typename A>
  static A Apply(A a, A b) { return b < a ? b : a; }
};
struct MaxOp {
  template <typename A>
  static A Apply(A a, A b) { return a < b ? b : a; }
};

// Chunks keep the accumulator in L1 while every input streams through it once.
constexpr size_t kChunk = 1024;

// Results bigger than the last-level cache are written with non-temporal stores: an
// ordinary store first reads the line it writes (read for ownership), which adds a third
// stream of memory traffic to the all-reduce's read-inputs/write-outputs minimum. Results
// that fit in the cache are better left there for the reader.
size_t StreamingMinBytes() {
  static const size_t bytes = [] {
    // Virtual machines may report the host's whole L3; a guest rarely gets more than 32 MiB.
    constexpr size_t kCap = size_t{32} << 20;
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return l3 > 0 ? std::min(static_cast<size_t>(l3), kCap) : kCap;
  }();
  return bytes;
}

void StreamCopy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  if (reinterpret_cast<uintptr_t>(dst) % 16 == 0 && bytes % 16 == 0) {
    auto* out = static_cast<__m128i*>(dst);
    const auto* in = static_cast<const __m128i*>(src);
    for (size_t i = 0; i < bytes / 16; ++i) _mm_stream_si128(out + i, _mm_loadu_si128(in + i));
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Combines inputs [lo, hi) of one chunk into `acc` in the canonical order: a binary tree
// that splits a range after its first ceil(n/2) inputs, so (a+b)+c for three and
// (a+b)+(c+d) for four. Every algorithm and backend combines replicas in this one order:
// a multi-worker all-reduce that reduces each worker's replicas first and then the
// workers' partial results gives the same bits as one process with all the replicas
// whenever the worker count is a power of two. `load(q, i)` reads input q's element i as
// an accumulator.
template <typename Acc, typename Op, typename Load>
void TreeReduce(Acc* acc, int32_t lo, int32_t hi, size_t len, const Load& load) {
  if (hi - lo == 1) {
    for (size_t i = 0; i < len; ++i) acc[i] = load(lo, i);
    return;
  }
  if (hi - lo == 2) {  // the same pair, combined in one pass instead of a copy and a pass
    for (size_t i = 0; i < len; ++i) acc[i] = Op::Apply(load(lo, i), load(lo + 1, i));
    return;
  }
  const int32_t mid = lo + (hi - lo + 1) / 2;
  TreeReduce<Acc, Op>(acc, lo, mid, len, load);
  if (hi - mid == 1) {
    for (size_t i = 0; i < len; ++i) acc[i] = Op::Apply(acc[i], load(mid, i));
    return;
  }
  Acc right[kChunk];  // one per tree level: log2(replicas) deep
  TreeReduce<Acc, Op>(right, mid, hi, len, load);
  for (size_t i = 0; i < len; ++i) acc[i] = Op::Apply(acc[i], right[i]);
}

// Reduces elements [begin, end) of `num_inputs` arrays of `In` (read as accumulators by
// `to_acc`) and hands each chunk of accumulators to `emit(base, acc, len)`.
template <typename Tr, typename Op, typename In, typename ToAcc, typename Emit>
void ReduceChunks(const void* const* inputs, int32_t num_inputs, size_t begin, size_t end,
                  const ToAcc& to_acc, const Emit& emit) {
  using Acc = typename Tr::Acc;
  Acc acc[kChunk];
  for (size_t base = begin; base < end; base += kChunk) {
    const size_t len = std::min(kChunk, end - base);
    TreeReduce<Acc, Op>(acc, 0, num_inputs, len, [&](int32_t q, size_t i) {
      return to_acc(static_cast<const In*>(inputs[q])[base + i]);
    });
    emit(base, acc, len);
  }
}

// Divides by the MEAN divisor, converts to the stored type and writes every output.
template <typename Tr>
struct StoreOutputs {
  using T = typename Tr::Storage;
  using Acc = typename Tr::Acc;
  void* const* outputs;
  int32_t num_outputs;
  int64_t mean_divisor;
  bool stream;

  void operator()(size_t base, Acc* acc, size_t len) const {
    if (mean_divisor > 1) {
      const Acc divisor = static_cast<Acc>(mean_divisor);
      for (size_t i = 0; i < len; ++i) acc[i] = acc[i] / divisor;
    }
    if (stream) {
      T converted[kChunk];
      for (size_t i = 0; i < len; ++i) converted[i] = Tr::Store(acc[i]);
      for (int32_t q = 0; q < num_outputs; ++q) {
        StreamCopy(static_cast<T*>(outputs[q]) + base, converted, len * sizeof(T));
      }
    } else {
      for (int32_t q = 0; q < num_outputs; ++q) {
        T* out = static_cast<T*>(outputs[q]) + base;
        for (size_t i = 0; i < len; ++i) out[i] = Tr::Store(acc[i]);
      }
    }
  }
};

// Two inputs into one or two outputs (a 2-replica reduction of a slice into both replicas'
// outputs, a tiny staged all-reduce into its caller's, two workers' partial results): one
// pass from the inputs to the outputs, with the chunked path's arithmetic in its order (the
// pair, then the MEAN division, then the conversion), so the same bits, without the
// accumulator buffer and the chunk loop, which were most of the instructions of a
// reduction of a few elements. Element i is read before it is written, as in place needs.
// `In` is the stored type or, for partial results, the accumulator; `load` reads it as an
// accumulator, as the chunked path does.
template <typename Tr, typename Op, bool kMean, typename In, typename Load>
void ReducePairInto(const In* a, const In* b, typename Tr::Storage* out0, typename Tr::Storage* out1,
                    size_t begin, size_t end, typename Tr::Acc divisor, const Load& load) {
  for (size_t i = begin; i < end; ++i) {
    typename Tr::Acc v = Op::Apply(load(a[i]), load(b[i]));
    if constexpr (kMean) v = v / divisor;
    const typename Tr::Storage stored = Tr::Store(v);
    out0[i] = stored;
    if (out1 != nullptr) out1[i] = stored;
  }
}

template <typename Tr, typename Op, typename In, typename Load>
void ReducePair(const void* const* inputs, void* const* outputs, int32_t num_outputs, size_t begin,
                size_t end, int64_t mean_divisor, const Load& load) {
  using T = typename Tr::Storage;
  const In* a = static_cast<const In*>(inputs[0]);
  const In* b = static_cast<const In*>(inputs[1]);
  T* out0 = static_cast<T*>(outputs[0]);
  T* out1 = num_outputs == 2 ? static_cast<T*>(outputs[1]) : nullptr;
  if (mean_divisor > 1) {
    ReducePairInto<Tr, Op, true>(a, b, out0, out1, begin, end, static_cast<typename Tr::Acc>(mean_divisor), load);
  } else {
    ReducePairInto<Tr, Op, false>(a, b, out0, out1, begin, end, 1, load);
  }
}

template <typename Tr, typename Op>
void ReduceTyped(const void* const* inputs, int32_t num_inputs, void* const* outputs,
                 int32_t num_outputs, size_t begin, size_t end, int64_t mean_divisor) {
  using T = typename Tr::Storage;
  const bool stream = (end - begin) * sizeof(T) * static_cast<size_t>(num_outputs) >= StreamingMinBytes();
  if (num_inputs == 2 && num_outputs >= 1 && num_outputs <= 2 && !stream) {
    ReducePair<Tr, Op, T>(inputs, outputs, num_outputs, begin, end, mean_divisor, [](T v) { return Tr::Load(v); });
    return;
  }
  ReduceChunks<Tr, Op, T>(inputs, num_inputs, begin, end, [](T v) { return Tr::Load(v); },
                          StoreOutputs<Tr>{outputs, num_outputs, mean_divisor, stream});
  if (stream) StreamFence();
}

// Accumulator inputs (partial results of other stages) to stored outputs.
template <typename Tr, typename Op>
void ReduceAccumulatorsTyped(const void* const* inputs, int32_t num_inputs, void* const* outputs,
                             int32_t num_outputs, size_t begin, size_t end, int64_t mean_divisor) {
  using Acc = typename Tr::Acc;
  // Two workers' partial results (a cross-worker piece, a small all-reduce): one pass.
  if (num_inputs == 2 && num_outputs >= 1 && num_outputs <= 2) {
    ReducePair<Tr, Op, Acc>(inputs, outputs, num_outputs, begin, end, mean_divisor, [](Acc v) { return v; });
    return;
  }
  ReduceChunks<Tr, Op, Acc>(inputs, num_inputs, begin, end, [](Acc v) { return v; },
                            StoreOutputs<Tr>{outputs, num_outputs, mean_divisor, false});
}

// Stored inputs to one accumulator output (a partial result for a later stage).
template <typename Tr, typename Op>
void ReduceToAccumulatorsTyped(const void* const* inputs, int32_t num_inputs, void* output,
                               size_t begin, size_t end) {
  using T = typename Tr::Storage;
  using Acc = typename Tr::Acc;
  ReduceChunks<Tr, Op, T>(inputs, num_inputs, begin, end, [](T v) { return Tr::Load(v); },
                          [&](size_t base, Acc* acc, size_t len) {
                            std::memcpy(static_cast<Acc*>(output) + base, acc, len * sizeof(Acc));
                          });
}

// Calls fn.template operator()<Op>() for `op` (MEAN sums; the divisor is applied later).
template <typename Fn>
void DispatchOp(ReduceOp op, Fn&& fn) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      return fn.template operator()<SumOp>();
    case ReduceOp::kMin:
      return fn.template operator()<MinOp>();
    case ReduceOp::kMax:
      return fn.template operator()<MaxOp>();
    case ReduceOp::kProduct:
      return fn.template operator()<ProductOp>();
  }
}

template <typename Tr>
void DivideTyped(void* data, size_t count, int64_t divisor) {
  using Acc = typename Tr::Acc;
  auto* values = static_cast<typename Tr::Storage*>(data);
  for (size_t i = 0; i < count; ++i) {
    values[i] = Tr::Store(Tr::Load(values[i]) / static_cast<Acc>(divisor));
  }
}

// Calls fn.template operator()<Traits>() for the traits of `dtype`.
template <typename Fn>
void DispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn.template operator()<Plain<float>>();
    case DType::kFloat64:
      return fn.template operator()<Plain<double>>();
    case DType::kInt32:
      return fn.template operator()<Plain<int32_t>>();
    case DType::kUInt8:
      return fn.template operator()<Plain<uint8_t>>();
    case DType::kInt16:
      return fn.template operator()<Plain<int16_t>>();
    case DType::kInt8:
      return fn.template operator()<Plain<int8_t>>();
    case DType::kInt64:
      return fn.template operator()<Plain<int64_t>>();
    case DType::kBool:
      return fn.template operator()<Bool>();
    case DType::kBFloat16:
      return fn.template operator()<BFloat>();
    case DType::kFloat16:
      return fn.template operator()<Half>();
  }
}

}  // namespace

void ReduceRange(DType dtype, ReduceOp op, const void* const* inputs, int32_t num_inputs,
                 void* const* outputs, int32_t num_outputs, size_t begin, size_t end,
                 int64_t mean_divisor) {
  if (begin >= end || num_inputs <= 0) return;
  const int64_t divisor = op == ReduceOp::kMean ? mean_divisor : 1;
  DispatchDType(dtype, [&]<typename Tr>() {
    DispatchOp(op, [&]<typename Op>() {
      ReduceTyped<Tr, Op>(inputs, num_inputs, outputs, num_outputs, begin, end, divisor);
    });
  });
}

void ReduceRangeToAccumulator(DType dtype, ReduceOp op, const void* const* inputs,
                              int32_t num_inputs, void* output, size_t begin, size_t end) {
  if (begin >= end || num_inputs <= 0) return;
  DispatchDType(dtype, [&]<typename Tr>() {
    DispatchOp(op, [&]<typename Op>() {
      ReduceToAccumulatorsTyped<Tr, Op>(inputs, num_inputs, output, begin, end);
    });
  });
}

void ReduceAccumulatorRange(DType dtype, ReduceOp op, const void* const* inputs,
                            int32_t num_inputs, void* const* outputs, int32_t num_outputs,
                            size_t begin, size_t end, int64_t mean_divisor) {
  if (begin >= end || num_inputs <= 0) return;
  const int64_t divisor = op == ReduceOp::kMean ? mean_divisor : 1;
  DispatchDType(dtype, [&]<typename Tr>() {
    DispatchOp(op, [&]<typename Op>() {
      ReduceAccumulatorsTyped<Tr, Op>(inputs, num_inputs, outputs, num_outputs, begin, end, divisor);
    });
  });
}

// The value that changes nothing under `op`, within the range of the stored type (an
// int8 MIN starts at 127, not at the int64 accumulator's maximum).
template <typename Tr>
typename Tr::Acc Identity(ReduceOp op) {
  using Acc = typename Tr::Acc;
  using Limits = std::numeric_limits<std::conditional_t<std::is_floating_point_v<Acc>, Acc,
                                                        typename Tr::Storage>>;
  const bool is_bool = std::is_same_v<Tr, Bool>;
  switch (op) {
    case ReduceOp::kProduct:
      return Acc(1);
    case ReduceOp::kMin:
      if (is_bool) return Acc(1);
      if constexpr (std::is_floating_point_v<Acc>) return Limits::infinity();
      return static_cast<Acc>(Limits::max());
    case ReduceOp::kMax:
      if (is_bool) return Acc(0);
      if constexpr (std::is_floating_point_v<Acc>) return -Limits::infinity();
      return static_cast<Acc>(Limits::lowest());
    default:
      return Acc(0);
  }
}

// Out is the accumulator dtype's storage: float for the 16-bit floats, else the type itself.
template <typename Tr, typename Op, typename Out>
void ReduceAxisTyped(ReduceOp op, const void* input, int64_t outer, int64_t len, int64_t inner,
                     void* output) {
  using Acc = typename Tr::Acc;
  const auto* in = static_cast<const typename Tr::Storage*>(input);
  auto* out = static_cast<Out*>(output);
  std::vector<Acc> row(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) row[i] = Identity<Tr>(op);
    for (int64_t l = 0; l < len; ++l) {
      const auto* slice = in + (o * len + l) * inner;
      for (int64_t i = 0; i < inner; ++i) row[i] = Op::Apply(row[i], Tr::Load(slice[i]));
    }
    for (int64_t i = 0; i < inner; ++i) out[o * inner + i] = static_cast<Out>(row[i]);
  }
}

void SubtractInPlace(DType dtype, void* dst, const void* src, size_t count) {
  DispatchDType(dtype, [&]<typename Tr>() {
    using Acc = typename Tr::Acc;
    auto* out = static_cast<typename Tr::Storage*>(dst);
    const auto* in = static_cast<const typename Tr::Storage*>(src);
    for (size_t i = 0; i < count; ++i) {
      out[i] = Tr::Store(Add<Acc>(Tr::Load(out[i]), Multiply<Acc>(Tr::Load(in[i]), Acc(-1))));
    }
  });
}

void ReduceAxisToAccumulator(DType dtype, ReduceOp op, const void* input, int64_t outer,
                             int64_t len, int64_t inner, void* output) {
  DispatchDType(dtype, [&]<typename Tr>() {
    using Out = AccStorage<Tr>;
    switch (op) {
      case ReduceOp::kProduct:
        return ReduceAxisTyped<Tr, ProductOp, Out>(op, input, outer, len, inner, output);
      case ReduceOp::kMin:
        return ReduceAxisTyped<Tr, MinOp, Out>(op, input, outer, len, inner, output);
      case ReduceOp::kMax:
        return ReduceAxisTyped<Tr, MaxOp, Out>(op, input, outer, len, inner, output);
      default:
        return ReduceAxisTyped<Tr, SumOp, Out>(op, input, outer, len, inner, output);
    }
  });
}

DType AccumulatorDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16:
      return DType::kFloat32;
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kUInt8:
      return DType::kInt64;
    default:
      return dtype;
  }
}

void ToAccumulator(DType dtype, const void* src, void* dst, size_t count) {
  DispatchDType(dtype, [&]<typename Tr>() {
    const auto* in = static_cast<const typename Tr::Storage*>(src);
    auto* out = static_cast<AccStorage<Tr>*>(dst);
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<AccStorage<Tr>>(Tr::Load(in[i]));
  });
}

void FromAccumulator(DType dtype, const void* src, void* dst, size_t count) {
  DispatchDType(dtype, [&]<typename Tr>() {
    const auto* in = static_cast<const AccStorage<Tr>*>(src);
    auto* out = static_cast<typename Tr::Storage*>(dst);
    for (size_t i = 0; i < count; ++i) out[i] = Tr::Store(static_cast<typename Tr::Acc>(in[i]));
  });
}

void IntegerSumToMean(DType dtype, const void* sums, void* out, size_t count, int64_t divisor) {
  DispatchDType(dtype, [&]<typename Tr>() {
    using T = typename Tr::Storage;
    if constexpr (std::is_same_v<Tr, Plain<T>> && std::is_integral_v<T>) {
      const auto* in = static_cast<const T*>(sums);
      // The float type truediv computes in: float32 for 8- and 16-bit integers.
      using F = std::conditional_t<sizeof(T) <= 2, float, double>;
      auto* result = static_cast<F*>(out);
      const F denominator = static_cast<F>(divisor);
      for (size_t i = 0; i < count; ++i) result[i] = static_cast<F>(in[i]) / denominator;
    }
  });
}

void DivideInPlace(DType dtype, void* data, size_t count, int64_t divisor) {
  if (divisor <= 1 || dtype == DType::kBool) return;
  DispatchDType(dtype, [&]<typename Tr>() { DivideTyped<Tr>(data, count, divisor); });
}

}  // namespace distribute
