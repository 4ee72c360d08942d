// Element-wise reduction of several equally shaped arrays, the arithmetic under every
// collective. Inputs are combined in one fixed order whatever thread or process runs the
// kernel: a binary tree splitting after the first ceil(n/2) inputs ((a+b)+c, (a+b)+(c+d)),
// so results are deterministic, and a reduction of partial results (each worker's
// replicas, then the workers) matches the flat one when the worker count is a power of 2.
// float16/bfloat16 accumulate in float32, integer sums and products wrap (two's
// complement). An integer MEAN is a SUM here; IntegerSumToMean then divides as TF does.
#ifndef DISTRIBUTE_CORE_KERNELS_REDUCE_KERNELS_H_
#define DISTRIBUTE_CORE_KERNELS_REDUCE_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "core/kernels/reduce_op.h"
#include "core/tensor/dtype.h"

namespace distribute {

// Elements [begin, end) of every input, reduced, are written to the same elements of
// every output (outputs may alias inputs). MEAN divides by `mean_divisor`.
void ReduceRange(DType dtype, ReduceOp op, const void* const* inputs, int32_t num_inputs,
                 void* const* outputs, int32_t num_outputs, size_t begin, size_t end,
                 int64_t mean_divisor);

// The two halves of ReduceRange for a reduction in stages. The first reduces stored
// inputs into accumulators (AccumulatorDType elements; MEAN sums); the second reduces
// accumulators (in the same tree order), divides a MEAN by `mean_divisor` and stores.
void ReduceRangeToAccumulator(DType dtype, ReduceOp op, const void* const* inputs,
                              int32_t num_inputs, void* output, size_t begin, size_t end);
void ReduceAccumulatorRange(DType dtype, ReduceOp op, const void* const* inputs,
                            int32_t num_inputs, void* const* outputs, int32_t num_outputs,
                            size_t begin, size_t end, int64_t mean_divisor);

// Divides `count` elements of `data` in place by `divisor` (MEAN's last step when the
// sum was computed elsewhere).
void DivideInPlace(DType dtype, void* data, size_t count, int64_t divisor);

// TF's integer MEAN: the wrapped integer sums (`count` elements of `dtype`) cast to
// ReducedDType(dtype, MEAN) and divided there by `divisor` (math_ops.truediv), into `out`.
// A divisor of 0 gives NaN (0/0) or an infinity, as float division does.
void IntegerSumToMean(DType dtype, const void* sums, void* out, size_t count, int64_t divisor);

// Reduces a row-major [outer, len, inner] array along its middle axis into [outer, inner]:
// input of dtype `dtype`, output of its accumulator dtype (see AccumulatorDType) so that
// later stages lose no precision. MEAN must be passed as SUM (the caller
// divides by the total count). An empty axis gives the op's identity.
void ReduceAxisToAccumulator(DType dtype, ReduceOp op, const void* input, int64_t outer,
                             int64_t len, int64_t inner, void* output);

// dst[i] = dst[i] - src[i] for `count` elements (assign_sub); wraps for integers.
void SubtractInPlace(DType dtype, void* dst, const void* src, size_t count);

// The accumulator dtype of `dtype`: float32 for float16 and bfloat16, int64 for the
// narrow integers (so that a MEAN divides the true sum), else itself.
DType AccumulatorDType(DType dtype);

// Converts `count` elements between `dtype` and its accumulator dtype.
void ToAccumulator(DType dtype, const void* src, void* dst, size_t count);
void FromAccumulator(DType dtype, const void* src, void* dst, size_t count);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_KERNELS_REDUCE_KERNELS_H_
