// The reduction kernels against references computed here: float sums in double (with
// inputs whose float32 sums are exact), integer sums and products in uint64 (two's
// complement wrap-around), MEAN truncating toward zero for integers, and float16 /
// bfloat16 results rounded once from a float32 accumulator.
#include "core/kernels/reduce_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"

namespace distribute {
namespace {

using ::distribute::testing::AllDTypes;
using ::distribute::testing::BFloat16Value;
using ::distribute::testing::EncodeExact;
using ::distribute::testing::HalfValue;
using ::distribute::testing::IsFloating;
using ::distribute::testing::IsHalfLike;
using ::distribute::testing::LoadFloat;
using ::distribute::testing::LoadInt;
using ::distribute::testing::Name;
using ::distribute::testing::RoundFloatTo;
using ::distribute::testing::RoundToBFloat16;
using ::distribute::testing::RoundToHalf;
using ::distribute::testing::SizeOf;
using ::distribute::testing::StoreFloat;
using ::distribute::testing::StoreInt;
using ::distribute::testing::WrapTo;

const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kProduct};

std::string OpName(ReduceOp op) { return std::string(ReduceOpName(op)); }

// A host array of one dtype, 8-byte aligned.
struct Array {
  Array(DType dtype, size_t count)
      : dtype(dtype), count(count), words((count * SizeOf(dtype) + 7) / 8 + 1, 0) {}
  void* data() { return words.data(); }
  const void* data() const { return words.data(); }
  double F(size_t i) const { return LoadFloat(dtype, data(), i); }
  int64_t I(size_t i) const { return LoadInt(dtype, data(), i); }
  void SetF(size_t i, double v) { StoreFloat(dtype, data(), i, v); }
  void SetI(size_t i, int64_t v) { StoreInt(dtype, data(), i, v); }

  DType dtype;
  size_t count;
  std::vector<uint64_t> words;
};

// Fills `a` with values whose float32 sums and products (of up to 5 of them) are exact:
// multiples of 0.5 in [-4, 4] for floats; the whole range for the narrow integers and
// int32; for int64 the whole range, or +-2^50 where MEAN must not overflow the sum.
void FillRandom(Array& a, std::mt19937& rng, bool small_int64) {
  std::uniform_int_distribution<int> halves(-8, 8);
  std::uniform_int_distribution<int64_t> any64(std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max());
  std::uniform_int_distribution<int64_t> small64(-(int64_t{1} << 50), int64_t{1} << 50);
  std::uniform_int_distribution<int> bits(0, 3);
  for (size_t i = 0; i < a.count; ++i) {
    if (IsFloating(a.dtype)) {
      a.SetF(i, 0.5 * halves(rng));
    } else if (a.dtype == DType::kBool) {
      const int b = bits(rng);
      a.SetI(i, b == 0 ? 0 : b == 1 ? 1 : b == 2 ? 2 : 255);  // any nonzero byte is true
    } else if (a.dtype == DType::kInt64) {
      a.SetI(i, small_int64 ? small64(rng) : any64(rng));
    } else {
      a.SetI(i, any64(rng));  // truncated to the dtype by StoreInt
    }
  }
}

// The expected element `i` of reducing `inputs` with `op` (MEAN divides by `divisor`).
struct Expected {
  double f = 0;
  int64_t i = 0;
};

Expected Reference(DType dtype, ReduceOp op, const std::vector<Array>& inputs, size_t i,
                   int64_t divisor) {
  Expected e;
  if (dtype == DType::kBool) {
    bool all = true, any = false;
    for (const Array& a : inputs) {
      all = all && a.I(i) != 0;
      any = any || a.I(i) != 0;
    }
    e.i = op == ReduceOp::kMin ? all : any;
    return e;
  }
  if (IsFloating(dtype)) {
    // Exact in double for the inputs FillRandom makes.
    double sum = 0, product = 1;
    double lo = inputs[0].F(i), hi = inputs[0].F(i);
    for (const Array& a : inputs) {
      sum += a.F(i);
      product *= a.F(i);
      lo = std::min(lo, a.F(i));
      hi = std::max(hi, a.F(i));
    }
    if (dtype == DType::kFloat64) {
      switch (op) {
        case ReduceOp::kSum: e.f = sum; break;
        case ReduceOp::kMean: e.f = divisor > 1 ? sum / static_cast<double>(divisor) : sum; break;
        case ReduceOp::kMin: e.f = lo; break;
        case ReduceOp::kMax: e.f = hi; break;
        case ReduceOp::kProduct: e.f = product; break;
      }
      return e;
    }
    // float32, and the float32 accumulator of the 16-bit floats, rounded once.
    float acc = 0;
    switch (op) {
      case ReduceOp::kSum: acc = static_cast<float>(sum); break;
      case ReduceOp::kMean:
        acc = divisor > 1 ? static_cast<float>(sum) / static_cast<float>(divisor)
                          : static_cast<float>(sum);
        break;
      case ReduceOp::kMin: acc = static_cast<float>(lo); break;
      case ReduceOp::kMax: acc = static_cast<float>(hi); break;
      case ReduceOp::kProduct: acc = static_cast<float>(product); break;
    }
    e.f = RoundFloatTo(dtype, acc);
    return e;
  }
  uint64_t sum = 0, product = 1;
  int64_t exact_sum = 0;
  int64_t lo = inputs[0].I(i), hi = inputs[0].I(i);
  for (const Array& a : inputs) {
    sum += static_cast<uint64_t>(a.I(i));
    product *= static_cast<uint64_t>(a.I(i));
    // Callers keep this from overflowing when they ask for MEAN; wrap (defined) otherwise.
    exact_sum = static_cast<int64_t>(static_cast<uint64_t>(exact_sum) + static_cast<uint64_t>(a.I(i)));
    lo = std::min(lo, a.I(i));
    hi = std::max(hi, a.I(i));
  }
  switch (op) {
    case ReduceOp::kSum: e.i = WrapTo(dtype, static_cast<int64_t>(sum)); break;
    case ReduceOp::kMean:
      // C++ integer division truncates toward zero.
      e.i = WrapTo(dtype, divisor > 1 ? exact_sum / divisor : exact_sum);
      break;
    case ReduceOp::kMin: e.i = lo; break;
    case ReduceOp::kMax: e.i = hi; break;
    case ReduceOp::kProduct: e.i = WrapTo(dtype, static_cast<int64_t>(product)); break;
  }
  return e;
}

bool OpApplies(DType dtype, ReduceOp op) {
  return dtype != DType::kBool || op == ReduceOp::kMin || op == ReduceOp::kMax;
}

// Checks elements [begin, end) of `out` against the reference.
void ExpectMatchesReference(DType dtype, ReduceOp op, const std::vector<Array>& inputs,
                            const Array& out, size_t begin, size_t end, int64_t divisor) {
  for (size_t i = begin; i < end; ++i) {
    const Expected e = Reference(dtype, op, inputs, i, divisor);
    if (IsFloating(dtype)) {
      ASSERT_EQ(out.F(i), e.f) << Name(dtype) << " " << OpName(op) << " element " << i;
    } else if (dtype == DType::kBool) {
      ASSERT_EQ(out.I(i), e.i) << "bool " << OpName(op) << " element " << i;
    } else {
      ASSERT_EQ(out.I(i), e.i) << Name(dtype) << " " << OpName(op) << " element " << i;
    }
  }
}

std::vector<const void*> Pointers(const std::vector<Array>& arrays) {
  std::vector<const void*> p;
  for (const Array& a : arrays) p.push_back(a.data());
  return p;
}

TEST(ReduceRangeTest, EveryDTypeAndOpMatchesTheReference) {
  std::mt19937 rng(2024);
  constexpr size_t kCount = 2500;  // more than two of the kernel's chunks
  for (DType dtype : AllDTypes()) {
    for (ReduceOp op : kAllOps) {
      if (!OpApplies(dtype, op)) continue;
      for (int32_t n : {1, 2, 3, 5}) {
        SCOPED_TRACE(Name(dtype) + " " + OpName(op) + " n=" + std::to_string(n));
        std::vector<Array> inputs;
        for (int32_t q = 0; q < n; ++q) {
          inputs.emplace_back(dtype, kCount);
          FillRandom(inputs.back(), rng, op == ReduceOp::kMean);
        }
        Array out(dtype, kCount);
        void* outputs[1] = {out.data()};
        ReduceRange(dtype, op, Pointers(inputs).data(), n, outputs, 1, 0, kCount, n);
        ExpectMatchesReference(dtype, op, inputs, out, 0, kCount, n);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(ReduceRangeTest, BoolMinIsAndMaxIsOrForAnyNonzeroByte) {
  const DType dtype = DType::kBool;
  std::vector<Array> inputs(2, Array(dtype, 4));
  const int64_t a[] = {0, 0, 7, 255};
  const int64_t b[] = {0, 2, 0, 1};
  for (size_t i = 0; i < 4; ++i) {
    inputs[0].SetI(i, a[i]);
    inputs[1].SetI(i, b[i]);
  }
  Array out(dtype, 4);
  void* outputs[1] = {out.data()};
  ReduceRange(dtype, ReduceOp::kMin, Pointers(inputs).data(), 2, outputs, 1, 0, 4, 2);
  EXPECT_EQ(out.I(0), 0);
  EXPECT_EQ(out.I(1), 0);
  EXPECT_EQ(out.I(2), 0);
  EXPECT_EQ(out.I(3), 1);
  ReduceRange(dtype, ReduceOp::kMax, Pointers(inputs).data(), 2, outputs, 1, 0, 4, 2);
  EXPECT_EQ(out.I(0), 0);
  EXPECT_EQ(out.I(1), 1);
  EXPECT_EQ(out.I(2), 1);
  EXPECT_EQ(out.I(3), 1);
}

TEST(ReduceRangeTest, RangeNotStartingAtZeroTouchesOnlyThatRange) {
  std::mt19937 rng(7);
  constexpr size_t kCount = 3000;
  constexpr size_t kBegin = 1001, kEnd = 2777;
  for (DType dtype : {DType::kFloat32, DType::kInt8, DType::kFloat16, DType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax}) {
      for (int32_t n : {2, 3}) {  // 2: the two-input pass
        SCOPED_TRACE(Name(dtype) + " " + OpName(op) + " n=" + std::to_string(n));
        std::vector<Array> inputs;
        for (int q = 0; q < n; ++q) {
          inputs.emplace_back(dtype, kCount);
          FillRandom(inputs.back(), rng, true);
        }
        Array out(dtype, kCount);
        std::memset(out.data(), 0x5a, out.words.size() * 8);
        const Array before = out;
        void* outputs[1] = {out.data()};
        ReduceRange(dtype, op, Pointers(inputs).data(), n, outputs, 1, kBegin, kEnd, n);
        ExpectMatchesReference(dtype, op, inputs, out, kBegin, kEnd, n);
        const size_t element = SizeOf(dtype);
        const auto* got = static_cast<const unsigned char*>(out.data());
        const auto* old = static_cast<const unsigned char*>(before.data());
        EXPECT_EQ(std::memcmp(got, old, kBegin * element), 0) << "bytes before the range changed";
        EXPECT_EQ(std::memcmp(got + kEnd * element, old + kEnd * element, (kCount - kEnd) * element), 0)
            << "bytes after the range changed";
      }
    }
  }
}

TEST(ReduceRangeTest, OutputsMayAliasTheInputs) {
  std::mt19937 rng(99);
  constexpr size_t kCount = 2100;
  for (DType dtype : {DType::kFloat32, DType::kInt8, DType::kFloat16, DType::kBFloat16,
                      DType::kInt32, DType::kFloat64}) {
    for (ReduceOp op : kAllOps) {
      for (int32_t n : {2, 4}) {  // 2: the two-input pass, each input its own output
        SCOPED_TRACE(Name(dtype) + " " + OpName(op) + " n=" + std::to_string(n));
        std::vector<Array> inputs;
        for (int q = 0; q < n; ++q) {
          inputs.emplace_back(dtype, kCount);
          FillRandom(inputs.back(), rng, true);
        }
        const std::vector<Array> originals = inputs;
        std::vector<void*> outputs;
        for (Array& a : inputs) outputs.push_back(a.data());
        ReduceRange(dtype, op, Pointers(inputs).data(), n, outputs.data(), n, 0, kCount, n);
        for (const Array& a : inputs) {
          ExpectMatchesReference(dtype, op, originals, a, 0, kCount, n);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(ReduceRangeTest, EveryOutputGetsTheResult) {
  std::mt19937 rng(5);
  constexpr size_t kCount = 1500;
  for (DType dtype : {DType::kInt16, DType::kFloat32, DType::kBFloat16}) {
    for (int32_t n : {2, 3}) {  // 2: the two-input pass into two outputs
      std::vector<Array> inputs;
      for (int q = 0; q < n; ++q) {
        inputs.emplace_back(dtype, kCount);
        FillRandom(inputs.back(), rng, true);
      }
      std::vector<Array> outs(static_cast<size_t>(n), Array(dtype, kCount));
      std::vector<void*> outputs;
      for (Array& a : outs) outputs.push_back(a.data());
      ReduceRange(dtype, ReduceOp::kSum, Pointers(inputs).data(), n, outputs.data(), n, 0, kCount, n);
      for (const Array& a : outs) ExpectMatchesReference(dtype, ReduceOp::kSum, inputs, a, 0, kCount, n);
    }
  }
}

TEST(ReduceAccumulatorRangeTest, EveryDTypeAndOpFromAccumulatorsMatchesTheReference) {
  // Partial results in accumulator precision (as the cross-worker step combines them) to
  // the stored dtype: 2 inputs (the two-input pass) and 3, into one output and two, on a
  // range that starts and ends inside the arrays.
  std::mt19937 rng(11);
  constexpr size_t kCount = 700, kBegin = 5, kEnd = kCount - 3;
  for (DType dtype : AllDTypes()) {
    const DType acc = AccumulatorDType(dtype);
    for (ReduceOp op : kAllOps) {
      if (!OpApplies(dtype, op)) continue;
      for (int32_t n : {2, 3}) {
        for (int32_t num_outputs : {1, 2}) {
          std::vector<Array> inputs, partials;
          for (int q = 0; q < n; ++q) {
            inputs.emplace_back(dtype, kCount);
            FillRandom(inputs.back(), rng, op == ReduceOp::kMean);
            partials.emplace_back(acc, kCount);
            ToAccumulator(dtype, inputs.back().data(), partials.back().data(), kCount);
          }
          std::vector<Array> outs(static_cast<size_t>(num_outputs), Array(dtype, kCount));
          std::vector<void*> outputs;
          for (Array& a : outs) {
            std::memset(a.data(), 0x5a, a.words.size() * 8);
            outputs.push_back(a.data());
          }
          ReduceAccumulatorRange(dtype, op, Pointers(partials).data(), n, outputs.data(), num_outputs, kBegin,
                                 kEnd, 4);
          for (const Array& a : outs) {
            ExpectMatchesReference(dtype, op, inputs, a, kBegin, kEnd, 4);
            const auto* bytes = static_cast<const unsigned char*>(a.data());
            const size_t element = SizeOf(dtype);
            for (size_t b = 0; b < kBegin * element; ++b) ASSERT_EQ(bytes[b], 0x5a) << Name(dtype) << " before";
            for (size_t b = kEnd * element; b < kCount * element; ++b) ASSERT_EQ(bytes[b], 0x5a) << Name(dtype) << " after";
          }
        }
      }
    }
  }
}

TEST(ReduceAccumulatorRangeTest, InPlaceIntoTheFirstInput) {
  // Two partial results reduced into the first one's own memory, as a cross-worker piece
  // of a float32 pack is: into float32 accumulators, and float16 results written over
  // their own float32 accumulators (narrower elements, so element i lands before i is read).
  std::mt19937 rng(13);
  constexpr size_t kCount = 501;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kInt8}) {
    const DType acc = AccumulatorDType(dtype);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      std::vector<Array> inputs, partials;
      for (int q = 0; q < 2; ++q) {
        inputs.emplace_back(dtype, kCount);
        FillRandom(inputs.back(), rng, true);
        partials.emplace_back(acc, kCount);
        ToAccumulator(dtype, inputs.back().data(), partials.back().data(), kCount);
      }
      void* output = partials[0].data();
      ReduceAccumulatorRange(dtype, op, Pointers(partials).data(), 2, &output, 1, 0, kCount, 2);
      Array result(dtype, kCount);
      std::memcpy(result.data(), output, kCount * SizeOf(dtype));
      ExpectMatchesReference(dtype, op, inputs, result, 0, kCount, 2);
    }
  }
}

// Reduces single elements given as integers.
int64_t ReduceInts(DType dtype, ReduceOp op, std::vector<int64_t> values) {
  std::vector<Array> inputs;
  for (int64_t v : values) {
    inputs.emplace_back(dtype, 1);
    inputs.back().SetI(0, v);
  }
  Array out(dtype, 1);
  void* outputs[1] = {out.data()};
  ReduceRange(dtype, op, Pointers(inputs).data(), static_cast<int32_t>(values.size()), outputs, 1,
              0, 1, static_cast<int64_t>(values.size()));
  return out.I(0);
}

TEST(ReduceRangeTest, IntegerSumsAndProductsWrapAround) {
  EXPECT_EQ(ReduceInts(DType::kInt8, ReduceOp::kSum, {100, 100}), -56);
  EXPECT_EQ(ReduceInts(DType::kInt8, ReduceOp::kSum, {-128, -1}), 127);
  EXPECT_EQ(ReduceInts(DType::kUInt8, ReduceOp::kSum, {200, 100}), 44);
  EXPECT_EQ(ReduceInts(DType::kInt16, ReduceOp::kSum, {30000, 30000}), -5536);
  EXPECT_EQ(ReduceInts(DType::kInt32, ReduceOp::kSum, {std::numeric_limits<int32_t>::max(), 1}),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(ReduceInts(DType::kInt64, ReduceOp::kSum, {std::numeric_limits<int64_t>::max(), 1}),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ReduceInts(DType::kInt8, ReduceOp::kProduct, {16, 16}), 0);
  EXPECT_EQ(ReduceInts(DType::kInt8, ReduceOp::kProduct, {100, 3}), 44);
  EXPECT_EQ(ReduceInts(DType::kUInt8, ReduceOp::kProduct, {255, 255}), 1);
  EXPECT_EQ(ReduceInts(DType::kInt64, ReduceOp::kProduct, {int64_t{1} << 62, 4}), 0);
  EXPECT_EQ(ReduceInts(DType::kInt64, ReduceOp::kProduct, {std::numeric_limits<int64_t>::min(), -1}),
            std::numeric_limits<int64_t>::min());
}

TEST(ReduceRangeTest, IntegerMeanTruncatesTowardZero) {
  EXPECT_EQ(ReduceInts(DType::kInt32, ReduceOp::kMean, {-7, 0}), -3);
  EXPECT_EQ(ReduceInts(DType::kInt32, ReduceOp::kMean, {7, 0}), 3);
  EXPECT_EQ(ReduceInts(DType::kInt32, ReduceOp::kMean, {-1, -1, 0}), 0);
  EXPECT_EQ(ReduceInts(DType::kInt64, ReduceOp::kMean, {-10, -1, 0}), -3);
  // The sum is accumulated wide, so the mean of narrow values does not wrap.
  EXPECT_EQ(ReduceInts(DType::kInt8, ReduceOp::kMean, {100, 100}), 100);
  EXPECT_EQ(ReduceInts(DType::kInt8, ReduceOp::kMean, {-128, -128, -127}), -127);
  EXPECT_EQ(ReduceInts(DType::kUInt8, ReduceOp::kMean, {255, 255, 1}), 170);
  EXPECT_EQ(ReduceInts(DType::kInt16, ReduceOp::kMean, {32767, 32767, 32767, 32766}), 32766);
  EXPECT_EQ(ReduceInts(DType::kInt32,
                       ReduceOp::kMean, {std::numeric_limits<int32_t>::max(),
                                         std::numeric_limits<int32_t>::max()}),
            std::numeric_limits<int32_t>::max());
}

TEST(ReduceRangeTest, MeanDividesByTheGivenDivisor) {
  Array in(DType::kFloat32, 1);
  in.SetF(0, 10);
  const void* inputs[1] = {in.data()};
  Array out(DType::kFloat32, 1);
  void* outputs[1] = {out.data()};
  ReduceRange(DType::kFloat32, ReduceOp::kMean, inputs, 1, outputs, 1, 0, 1, 4);
  EXPECT_EQ(out.F(0), 2.5);
  ReduceRange(DType::kFloat32, ReduceOp::kMean, inputs, 1, outputs, 1, 0, 1, 1);
  EXPECT_EQ(out.F(0), 10);
  // Only MEAN divides.
  ReduceRange(DType::kFloat32, ReduceOp::kSum, inputs, 1, outputs, 1, 0, 1, 4);
  EXPECT_EQ(out.F(0), 10);
}

TEST(ReduceRangeTest, SixteenBitFloatsAccumulateInFloat32) {
  for (bool bfloat16 : {false, true}) {
    const DType dtype = bfloat16 ? DType::kBFloat16 : DType::kFloat16;
    SCOPED_TRACE(Name(dtype));
    // 4096 ones: accumulating in the 16-bit type would stop at 2048 (half) or 256
    // (bfloat16), where adding 1 no longer changes the sum.
    constexpr int32_t kInputs = 4096;
    std::vector<Array> inputs(kInputs, Array(dtype, 1));
    for (Array& a : inputs) a.SetF(0, 1.0);
    Array out(dtype, 1);
    void* outputs[1] = {out.data()};
    ReduceRange(dtype, ReduceOp::kSum, Pointers(inputs).data(), kInputs, outputs, 1, 0, 1, kInputs);
    EXPECT_EQ(out.F(0), 4096.0);
    EXPECT_EQ(static_cast<const uint16_t*>(out.data())[0], bfloat16 ? 0x4580 : 0x6c00);
    ReduceRange(dtype, ReduceOp::kMean, Pointers(inputs).data(), kInputs, outputs, 1, 0, 1, kInputs);
    EXPECT_EQ(out.F(0), 1.0);
  }
  // Rounded once at the end: 1 + 2^-11 + 2^-11 is 1 + 2^-10 in float32, while summing
  // in half would round 1 + 2^-11 (a tie) back to 1 twice.
  std::vector<Array> inputs(3, Array(DType::kFloat16, 1));
  inputs[0].SetF(0, 1.0);
  inputs[1].SetF(0, std::ldexp(1.0, -11));
  inputs[2].SetF(0, std::ldexp(1.0, -11));
  Array out(DType::kFloat16, 1);
  void* outputs[1] = {out.data()};
  ReduceRange(DType::kFloat16, ReduceOp::kSum, Pointers(inputs).data(), 3, outputs, 1, 0, 1, 3);
  EXPECT_EQ(out.F(0), 1.0 + std::ldexp(1.0, -10));
}

// The canonical combination order, written independently of the kernel: a range of n
// inputs splits after its first ceil(n/2), each half is combined, then the two halves.
float TreeCombine(const std::vector<std::vector<float>>& inputs, size_t i, int32_t lo, int32_t hi,
                  bool product) {
  if (hi - lo == 1) return inputs[lo][i];
  const int32_t mid = lo + (hi - lo + 1) / 2;
  volatile float left = TreeCombine(inputs, i, lo, mid, product);
  volatile float right = TreeCombine(inputs, i, mid, hi, product);
  volatile float combined = product ? left * right : left + right;
  return combined;
}

TEST(ReduceRangeTest, DeterministicInTreeOrder) {
  // Arbitrary floats, where the order of operations changes the result: the kernel must
  // combine the inputs in the canonical tree for every element, whichever range it runs
  // on (so that a reduction in stages, worker by worker, gives the same bits).
  std::mt19937 rng(31337);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  constexpr size_t kCount = 5000;
  for (const int32_t num_inputs : {2, 7}) {  // 2: the two-input pass
    SCOPED_TRACE(std::to_string(num_inputs) + " inputs");
    std::vector<std::vector<float>> inputs(num_inputs, std::vector<float>(kCount));
    for (auto& in : inputs) {
      for (float& v : in) v = dist(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
    }
    std::vector<const void*> pointers;
    for (auto& in : inputs) pointers.push_back(in.data());
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProduct}) {
      SCOPED_TRACE(OpName(op));
      std::vector<float> expected(kCount);
      for (size_t i = 0; i < kCount; ++i) {
        volatile float acc = TreeCombine(inputs, i, 0, num_inputs, op == ReduceOp::kProduct);
        if (op == ReduceOp::kMean) acc = acc / static_cast<float>(num_inputs);
        expected[i] = acc;
      }
      std::vector<float> whole(kCount), again(kCount), pieces(kCount);
      void* out_whole[1] = {whole.data()};
      void* out_again[1] = {again.data()};
      void* out_pieces[1] = {pieces.data()};
      ReduceRange(DType::kFloat32, op, pointers.data(), num_inputs, out_whole, 1, 0, kCount, num_inputs);
      ReduceRange(DType::kFloat32, op, pointers.data(), num_inputs, out_again, 1, 0, kCount, num_inputs);
      for (size_t begin : {size_t{0}, size_t{13}, size_t{1100}, size_t{4097}}) {
        const size_t end = begin == 4097 ? kCount : begin == 0 ? 13 : begin == 13 ? 1100 : 4097;
        ReduceRange(DType::kFloat32, op, pointers.data(), num_inputs, out_pieces, 1, begin, end, num_inputs);
      }
      EXPECT_EQ(std::memcmp(whole.data(), again.data(), kCount * sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(whole.data(), pieces.data(), kCount * sizeof(float)), 0);
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(std::memcmp(&whole[i], &expected[i], sizeof(float)), 0)
            << "element " << i << ": " << whole[i] << " vs " << expected[i];
      }
    }
  }
}

TEST(ReduceRangeTest, MinAndMaxOfEqualValuesKeepTheFirstInput) {
  // +0 and -0 compare equal: the tree keeps the left operand, so the result's sign says
  // which input came first (a kernel that swapped its inputs would flip it).
  const float plus = 0.0f, minus = -0.0f;
  for (const ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    for (const bool plus_first : {true, false}) {
      const std::vector<float> a(3, plus_first ? plus : minus), b(3, plus_first ? minus : plus);
      const void* inputs[2] = {a.data(), b.data()};
      std::vector<float> out(3, 1.0f);
      void* outputs[1] = {out.data()};
      ReduceRange(DType::kFloat32, op, inputs, 2, outputs, 1, 0, 3, 2);
      for (float v : out) EXPECT_EQ(std::signbit(v), !plus_first) << OpName(op);
    }
  }
}

TEST(ReduceRangeTest, EmptyRangeOrNoInputsWritesNothing) {
  Array in(DType::kInt32, 4);
  for (size_t i = 0; i < 4; ++i) in.SetI(i, 9);
  const void* inputs[1] = {in.data()};
  Array out(DType::kInt32, 4);
  for (size_t i = 0; i < 4; ++i) out.SetI(i, -5);
  void* outputs[1] = {out.data()};
  ReduceRange(DType::kInt32, ReduceOp::kSum, inputs, 1, outputs, 1, 2, 2, 1);
  ReduceRange(DType::kInt32, ReduceOp::kSum, inputs, 1, outputs, 1, 3, 1, 1);
  ReduceRange(DType::kInt32, ReduceOp::kSum, inputs, 0, outputs, 1, 0, 4, 1);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(out.I(i), -5);
}

// ---- ReduceAxisToAccumulator ----

// Reference for a [outer, len, inner] input reduced along the middle axis, as the value
// the accumulator dtype holds (float32 for the 16-bit floats, else the dtype itself).
double AxisReference(DType dtype, ReduceOp op, const Array& in, int64_t outer, int64_t len,
                     int64_t inner, int64_t o, int64_t k) {
  if (IsFloating(dtype)) {
    double acc = op == ReduceOp::kProduct ? 1 : op == ReduceOp::kMin ? INFINITY
                 : op == ReduceOp::kMax   ? -INFINITY
                                          : 0;
    for (int64_t l = 0; l < len; ++l) {
      const double v = in.F(static_cast<size_t>((o * len + l) * inner + k));
      if (op == ReduceOp::kSum) acc += v;
      if (op == ReduceOp::kProduct) acc *= v;
      if (op == ReduceOp::kMin) acc = std::min(acc, v);
      if (op == ReduceOp::kMax) acc = std::max(acc, v);
    }
    (void)outer;
    return acc;  // exact for the inputs used
  }
  ADD_FAILURE() << "AxisReference is for floats";
  return 0;
}

TEST(ReduceAxisToAccumulatorTest, FloatLayoutsMatchTheReference) {
  std::mt19937 rng(11);
  struct Layout {
    int64_t outer, len, inner;
  };
  const Layout layouts[] = {{1, 1, 1}, {1, 5, 1}, {3, 4, 5}, {1, 7, 3}, {4, 3, 1}, {2, 1, 6}};
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    const DType acc = IsHalfLike(dtype) ? DType::kFloat32 : dtype;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (const Layout& l : layouts) {
        SCOPED_TRACE(Name(dtype) + " " + OpName(op) + " [" + std::to_string(l.outer) + ", " +
                     std::to_string(l.len) + ", " + std::to_string(l.inner) + "]");
        Array in(dtype, static_cast<size_t>(l.outer * l.len * l.inner));
        FillRandom(in, rng, true);
        Array out(acc, static_cast<size_t>(l.outer * l.inner));
        ReduceAxisToAccumulator(dtype, op, in.data(), l.outer, l.len, l.inner, out.data());
        for (int64_t o = 0; o < l.outer; ++o) {
          for (int64_t k = 0; k < l.inner; ++k) {
            EXPECT_EQ(out.F(static_cast<size_t>(o * l.inner + k)),
                      AxisReference(dtype, op, in, l.outer, l.len, l.inner, o, k))
                << "output [" << o << ", " << k << "]";
          }
        }
      }
    }
  }
}

TEST(ReduceAxisToAccumulatorTest, IntegerLayoutsMatchTheReference) {
  std::mt19937 rng(12);
  for (DType dtype : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32, DType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      SCOPED_TRACE(Name(dtype) + " " + OpName(op));
      constexpr int64_t kOuter = 3, kLen = 4, kInner = 5;
      Array in(dtype, kOuter * kLen * kInner);
      FillRandom(in, rng, false);
      Array out(AccumulatorDType(dtype), kOuter * kInner);  // int64 for narrow integers
      ReduceAxisToAccumulator(dtype, op, in.data(), kOuter, kLen, kInner, out.data());
      for (int64_t o = 0; o < kOuter; ++o) {
        for (int64_t k = 0; k < kInner; ++k) {
          uint64_t sum = 0, product = 1;
          int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
          for (int64_t l = 0; l < kLen; ++l) {
            const int64_t v = in.I(static_cast<size_t>((o * kLen + l) * kInner + k));
            sum += static_cast<uint64_t>(v);
            product *= static_cast<uint64_t>(v);
            lo = std::min(lo, v);
            hi = std::max(hi, v);
          }
          const int64_t expected = op == ReduceOp::kSum       ? static_cast<int64_t>(sum)
                                   : op == ReduceOp::kProduct ? static_cast<int64_t>(product)
                                   : op == ReduceOp::kMin     ? lo
                                                              : hi;
          EXPECT_EQ(out.I(static_cast<size_t>(o * kInner + k)), expected) << "[" << o << ", " << k << "]";
        }
      }
    }
  }
}

TEST(ReduceAxisToAccumulatorTest, SixteenBitFloatsAreNotRoundedBackToSixteenBits) {
  // 2048 + 1 + 1 is not a float16 (nor 256 + 1 + 1 a bfloat16): the float32 output keeps it.
  for (bool bfloat16 : {false, true}) {
    const DType dtype = bfloat16 ? DType::kBFloat16 : DType::kFloat16;
    const double big = bfloat16 ? 256 : 2048;
    Array in(dtype, 3);
    in.SetF(0, big);
    in.SetF(1, 1);
    in.SetF(2, 1);
    float out = 0;
    ReduceAxisToAccumulator(dtype, ReduceOp::kSum, in.data(), 1, 3, 1, &out);
    EXPECT_EQ(out, big + 2) << Name(dtype);
    ReduceAxisToAccumulator(dtype, ReduceOp::kMax, in.data(), 1, 3, 1, &out);
    EXPECT_EQ(out, big) << Name(dtype);
  }
}

TEST(ReduceAxisToAccumulatorTest, EmptyAxisGivesTheFloatIdentity) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    float out[3];
    ReduceAxisToAccumulator(dtype, ReduceOp::kSum, nullptr, 1, 0, 3, out);
    for (float v : out) EXPECT_EQ(v, 0.0f) << Name(dtype);
    ReduceAxisToAccumulator(dtype, ReduceOp::kProduct, nullptr, 1, 0, 3, out);
    for (float v : out) EXPECT_EQ(v, 1.0f) << Name(dtype);
    ReduceAxisToAccumulator(dtype, ReduceOp::kMin, nullptr, 1, 0, 3, out);
    for (float v : out) EXPECT_EQ(v, INFINITY) << Name(dtype);
    ReduceAxisToAccumulator(dtype, ReduceOp::kMax, nullptr, 1, 0, 3, out);
    for (float v : out) EXPECT_EQ(v, -INFINITY) << Name(dtype);
  }
  double out64[2];
  ReduceAxisToAccumulator(DType::kFloat64, ReduceOp::kMin, nullptr, 2, 0, 1, out64);
  EXPECT_EQ(out64[0], INFINITY);
  EXPECT_EQ(out64[1], INFINITY);
}

// Reduces an empty [1, 0, 2] integer array.
std::vector<int64_t> EmptyIntegerAxis(DType dtype, ReduceOp op) {
  Array out(AccumulatorDType(dtype), 2);  // narrow integers accumulate in int64
  ReduceAxisToAccumulator(dtype, op, nullptr, 1, 0, 2, out.data());
  return {out.I(0), out.I(1)};
}

TEST(ReduceAxisToAccumulatorTest, EmptyAxisGivesTheIntegerIdentity) {
  struct Limits {
    DType dtype;
    int64_t min, max;
  };
  const Limits limits[] = {
      {DType::kInt8, -128, 127},
      {DType::kUInt8, 0, 255},
      {DType::kInt16, -32768, 32767},
      {DType::kInt32, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()},
      {DType::kInt64, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()},
  };
  for (const Limits& l : limits) {
    SCOPED_TRACE(Name(l.dtype));
    EXPECT_EQ(EmptyIntegerAxis(l.dtype, ReduceOp::kSum), (std::vector<int64_t>{0, 0}));
    EXPECT_EQ(EmptyIntegerAxis(l.dtype, ReduceOp::kProduct), (std::vector<int64_t>{1, 1}));
    // MIN's identity is the dtype's largest value, MAX's its smallest.
    EXPECT_EQ(EmptyIntegerAxis(l.dtype, ReduceOp::kMin), (std::vector<int64_t>{l.max, l.max}));
    EXPECT_EQ(EmptyIntegerAxis(l.dtype, ReduceOp::kMax), (std::vector<int64_t>{l.min, l.min}));
  }
  // bool: MIN (and) of nothing is true, MAX (or) of nothing false.
  const std::vector<int64_t> all = EmptyIntegerAxis(DType::kBool, ReduceOp::kMin);
  EXPECT_NE(all[0], 0);
  EXPECT_NE(all[1], 0);
  EXPECT_EQ(EmptyIntegerAxis(DType::kBool, ReduceOp::kMax), (std::vector<int64_t>{0, 0}));
}

TEST(ReduceAxisToAccumulatorTest, BoolAndOr) {
  Array in(DType::kBool, 6);  // [1, 3, 2]: rows {1, 0}, {5, 1}, {1, 0}
  const int64_t v[] = {1, 0, 5, 1, 1, 0};
  for (size_t i = 0; i < 6; ++i) in.SetI(i, v[i]);
  Array out(DType::kBool, 2);
  ReduceAxisToAccumulator(DType::kBool, ReduceOp::kMin, in.data(), 1, 3, 2, out.data());
  EXPECT_EQ(out.I(0), 1);
  EXPECT_EQ(out.I(1), 0);
  ReduceAxisToAccumulator(DType::kBool, ReduceOp::kMax, in.data(), 1, 3, 2, out.data());
  EXPECT_EQ(out.I(0), 1);
  EXPECT_EQ(out.I(1), 1);
}

// ---- DivideInPlace, SubtractInPlace, accumulator conversions ----

TEST(DivideInPlaceTest, FloatsAndIntegers) {
  Array f(DType::kFloat32, 3);
  f.SetF(0, 3);
  f.SetF(1, -3);
  f.SetF(2, 1);
  DivideInPlace(DType::kFloat32, f.data(), 3, 2);
  EXPECT_EQ(f.F(0), 1.5);
  EXPECT_EQ(f.F(1), -1.5);
  EXPECT_EQ(f.F(2), 0.5);

  Array i32(DType::kInt32, 4);
  const int64_t values[] = {7, -7, 6, -1};
  for (size_t i = 0; i < 4; ++i) i32.SetI(i, values[i]);
  DivideInPlace(DType::kInt32, i32.data(), 4, 2);
  EXPECT_EQ(i32.I(0), 3);
  EXPECT_EQ(i32.I(1), -3);  // toward zero, not -4
  EXPECT_EQ(i32.I(2), 3);
  EXPECT_EQ(i32.I(3), 0);

  Array i8(DType::kInt8, 1);
  i8.SetI(0, -128);
  DivideInPlace(DType::kInt8, i8.data(), 1, 3);
  EXPECT_EQ(i8.I(0), -42);

  Array u8(DType::kUInt8, 1);
  u8.SetI(0, 255);
  DivideInPlace(DType::kUInt8, u8.data(), 1, 2);
  EXPECT_EQ(u8.I(0), 127);

  Array i64(DType::kInt64, 1);
  i64.SetI(0, std::numeric_limits<int64_t>::min());
  DivideInPlace(DType::kInt64, i64.data(), 1, 2);
  EXPECT_EQ(i64.I(0), std::numeric_limits<int64_t>::min() / 2);

  Array d(DType::kFloat64, 1);
  d.SetF(0, 1);
  DivideInPlace(DType::kFloat64, d.data(), 1, 3);
  EXPECT_EQ(d.F(0), 1.0 / 3.0);
}

TEST(DivideInPlaceTest, SixteenBitFloatsDivideInFloat32AndRoundOnce) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(Name(dtype));
    Array a(dtype, 3);
    a.SetF(0, 3);
    a.SetF(1, 1);
    a.SetF(2, -100);
    DivideInPlace(dtype, a.data(), 3, 3);
    EXPECT_EQ(a.F(0), 1.0);
    EXPECT_EQ(a.F(1), RoundFloatTo(dtype, 1.0f / 3.0f));
    EXPECT_EQ(a.F(2), RoundFloatTo(dtype, -100.0f / 3.0f));
  }
}

TEST(DivideInPlaceTest, DivisorOfOneOrLessAndBoolLeaveDataUnchanged) {
  Array a(DType::kInt32, 2);
  a.SetI(0, 9);
  a.SetI(1, -9);
  DivideInPlace(DType::kInt32, a.data(), 2, 1);
  DivideInPlace(DType::kInt32, a.data(), 2, 0);
  DivideInPlace(DType::kInt32, a.data(), 2, -3);
  EXPECT_EQ(a.I(0), 9);
  EXPECT_EQ(a.I(1), -9);
  Array b(DType::kBool, 2);
  b.SetI(0, 1);
  b.SetI(1, 0);
  DivideInPlace(DType::kBool, b.data(), 2, 2);
  EXPECT_EQ(b.I(0), 1);
  EXPECT_EQ(b.I(1), 0);
}

TEST(SubtractInPlaceTest, IntegersWrapAround) {
  struct Case {
    DType dtype;
    int64_t a, b, expected;
  };
  const Case cases[] = {
      {DType::kInt8, -128, 1, 127},
      {DType::kInt8, 100, -100, -56},
      {DType::kUInt8, 0, 1, 255},
      {DType::kUInt8, 10, 3, 7},
      {DType::kInt16, -32768, 1, 32767},
      {DType::kInt32, std::numeric_limits<int32_t>::min(), 1, std::numeric_limits<int32_t>::max()},
      {DType::kInt32, 5, 7, -2},
      {DType::kInt64, std::numeric_limits<int64_t>::min(), 1, std::numeric_limits<int64_t>::max()},
      {DType::kInt64, 0, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min()},
  };
  for (const Case& c : cases) {
    Array dst(c.dtype, 1), src(c.dtype, 1);
    dst.SetI(0, c.a);
    src.SetI(0, c.b);
    SubtractInPlace(c.dtype, dst.data(), src.data(), 1);
    EXPECT_EQ(dst.I(0), c.expected) << Name(c.dtype) << " " << c.a << " - " << c.b;
    EXPECT_EQ(src.I(0), WrapTo(c.dtype, c.b)) << "the source changed";
  }
}

TEST(SubtractInPlaceTest, FloatsMatchTheReference) {
  std::mt19937 rng(3);
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(Name(dtype));
    constexpr size_t kCount = 1000;
    Array dst(dtype, kCount), src(dtype, kCount);
    FillRandom(dst, rng, true);
    FillRandom(src, rng, true);
    const Array original = dst;
    SubtractInPlace(dtype, dst.data(), src.data(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(dst.F(i), original.F(i) - src.F(i)) << "element " << i;
    }
  }
  // One rounding from float32: 1 - 2^-12 is the tie between 1 - 2^-11 and 1 in half,
  // and goes to the even one (1.0).
  Array dst(DType::kFloat16, 1), src(DType::kFloat16, 1);
  dst.SetF(0, 1.0);
  src.SetF(0, std::ldexp(1.0, -12));
  SubtractInPlace(DType::kFloat16, dst.data(), src.data(), 1);
  EXPECT_EQ(dst.F(0), RoundToHalf(1.0f - std::ldexp(1.0f, -12)));
  EXPECT_EQ(dst.F(0), 1.0);
}

TEST(AccumulatorTest, DTypes) {
  EXPECT_EQ(AccumulatorDType(DType::kFloat16), DType::kFloat32);
  EXPECT_EQ(AccumulatorDType(DType::kBFloat16), DType::kFloat32);
  for (DType dtype : AllDTypes()) {
    const bool narrow_integer = dtype == DType::kInt8 || dtype == DType::kInt16 ||
                                dtype == DType::kInt32 || dtype == DType::kUInt8;
    if (narrow_integer) {
      EXPECT_EQ(AccumulatorDType(dtype), DType::kInt64) << Name(dtype);
    } else if (!IsHalfLike(dtype)) {
      EXPECT_EQ(AccumulatorDType(dtype), dtype) << Name(dtype);
    }
  }
}

TEST(AccumulatorTest, SixteenBitFloatsConvertExactlyOneWayAndRoundTheOther) {
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b <= 0xffff; ++b) all[b] = static_cast<uint16_t>(b);
  std::vector<float> wide(65536);
  ToAccumulator(DType::kFloat16, all.data(), wide.data(), all.size());
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const double v = HalfValue(static_cast<uint16_t>(b));
    if (std::isnan(v)) {
      ASSERT_TRUE(std::isnan(wide[b]));
    } else {
      ASSERT_EQ(wide[b], v) << std::hex << b;
    }
  }
  ToAccumulator(DType::kBFloat16, all.data(), wide.data(), all.size());
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const double v = BFloat16Value(static_cast<uint16_t>(b));
    if (std::isnan(v)) {
      ASSERT_TRUE(std::isnan(wide[b]));
    } else {
      ASSERT_EQ(wide[b], v) << std::hex << b;
    }
  }
  // Back: float32 values that need rounding.
  const float values[] = {1.0f / 3, 65519.0f, 65520.0f, -0.1f, 2049.0f, 1.0e-8f, 257.0f};
  std::vector<uint16_t> narrow(std::size(values));
  FromAccumulator(DType::kFloat16, values, narrow.data(), std::size(values));
  for (size_t i = 0; i < std::size(values); ++i) {
    EXPECT_EQ(HalfValue(narrow[i]), RoundToHalf(values[i])) << values[i];
  }
  FromAccumulator(DType::kBFloat16, values, narrow.data(), std::size(values));
  for (size_t i = 0; i < std::size(values); ++i) {
    EXPECT_EQ(BFloat16Value(narrow[i]), RoundToBFloat16(values[i])) << values[i];
  }
}

TEST(AccumulatorTest, NarrowIntegersWidenToInt64AndWrapBack) {
  EXPECT_EQ(AccumulatorDType(DType::kInt8), DType::kInt64);
  EXPECT_EQ(AccumulatorDType(DType::kInt16), DType::kInt64);
  EXPECT_EQ(AccumulatorDType(DType::kInt32), DType::kInt64);
  EXPECT_EQ(AccumulatorDType(DType::kUInt8), DType::kInt64);
  const int32_t ints[] = {1, -2, 2147483647};
  int64_t wide[3] = {};
  ToAccumulator(DType::kInt32, ints, wide, 3);
  EXPECT_EQ(wide[0], 1);
  EXPECT_EQ(wide[1], -2);
  EXPECT_EQ(wide[2], 2147483647);
  const int64_t sums[] = {7, 2147483648LL, -2147483649LL};  // the last two wrap in int32
  int32_t back[3] = {};
  FromAccumulator(DType::kInt32, sums, back, 3);
  EXPECT_EQ(back[0], 7);
  EXPECT_EQ(back[1], -2147483647 - 1);
  EXPECT_EQ(back[2], 2147483647);
}

TEST(AccumulatorTest, WideTypesAreCopied) {
  EXPECT_EQ(AccumulatorDType(DType::kInt64), DType::kInt64);
  EXPECT_EQ(AccumulatorDType(DType::kFloat64), DType::kFloat64);
  const double doubles[] = {0.1, -1e300};
  double dcopy[2] = {};
  FromAccumulator(DType::kFloat64, doubles, dcopy, 2);
  EXPECT_EQ(std::memcmp(doubles, dcopy, sizeof doubles), 0);
  const int64_t longs[] = {1, -9223372036854775807LL - 1};
  int64_t lcopy[2] = {};
  ToAccumulator(DType::kInt64, longs, lcopy, 2);
  EXPECT_EQ(std::memcmp(longs, lcopy, sizeof longs), 0);
}

}  // namespace
}  // namespace distribute
