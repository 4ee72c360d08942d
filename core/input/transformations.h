// The input pipeline's transformations: each makes a new dataset from an input dataset,
// which it holds (and which stays usable on its own).
#ifndef DISTRIBUTE_CORE_INPUT_TRANSFORMATIONS_H_
#define DISTRIBUTE_CORE_INPUT_TRANSFORMATIONS_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/input/dataset.h"

namespace distribute {

// Stacks batch_size consecutive elements along a new first axis; the last batch may be
// smaller unless drop_remainder. Components must keep dtype and shape across elements.
absl::StatusOr<DatasetPtr> Batch(DatasetPtr input, int64_t batch_size, bool drop_remainder);

// The elements at positions index, index + num_shards, ...
absl::StatusOr<DatasetPtr> Shard(DatasetPtr input, int64_t num_shards, int64_t index);

// The input `count` times, or forever for -1. Epoch e of outer pass p makes its input
// iterator with a pass number unique to (p, e), so shuffles below reshuffle every epoch.
absl::StatusOr<DatasetPtr> Repeat(DatasetPtr input, int64_t count);

// TF's buffered shuffle; the order depends only on (seed, pass).
absl::StatusOr<DatasetPtr> Shuffle(DatasetPtr input, int64_t buffer_size, uint64_t seed);

// Turns one element into num_outputs tensors in *out (empty before the call). With
// num_parallel_calls > 1 it runs concurrently on library threads; results keep input order.
// num_parallel_calls is >= 1 or kAutotune (as many as the machine has hardware threads);
// MaxMapParallelism() caps it, and threads start only as the elements in flight need them,
// so that a huge value asks for nothing the data cannot use.
using MapFn = std::function<absl::Status(const Element& in, Element* out)>;
inline constexpr int32_t kAutotune = -1;
int32_t MaxMapParallelism();
absl::StatusOr<DatasetPtr> Map(DatasetPtr input, std::shared_ptr<const MapFn> fn,
                               int32_t num_outputs, int32_t num_parallel_calls);

// Produces up to buffer_size elements ahead on a library thread; 0 returns the input;
// kAutotune keeps kAutotunePrefetchElements ahead.
inline constexpr int64_t kAutotunePrefetchElements = 2;
absl::StatusOr<DatasetPtr> Prefetch(DatasetPtr input, int64_t buffer_size);

// The first `count` elements (-1: all).
absl::StatusOr<DatasetPtr> Take(DatasetPtr input, int64_t count);

// All but the first `count` elements.
absl::StatusOr<DatasetPtr> Skip(DatasetPtr input, int64_t count);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_TRANSFORMATIONS_H_
