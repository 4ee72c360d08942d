// dist-bench: the reference thread all-reduce (see reference_all_reduce.h).
#include "reference_all_reduce.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "bench_stats.h"
#include "spin_barrier.h"

namespace dist_bench {
namespace {

// The reduction walks the inputs block by block, so that the output block stays in L1
// while the third and fourth inputs are added to it.
constexpr int64_t kReduceBlock = 2048;  // elements: 8 KiB

float InputValue(int32_t replica, int64_t i) { return static_cast<float>(replica + 1 + i % 7); }

}  // namespace

ReferenceAllReduce::ReferenceAllReduce(int32_t replicas, int64_t count, bool rewrite_inputs)
    : replicas_(replicas), count_(count), rewrite_inputs_(rewrite_inputs) {
  for (int32_t r = 0; r < replicas; ++r) {
    std::vector<float> input(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) input[static_cast<size_t>(i)] = InputValue(r, i);
    inputs_.push_back(std::move(input));
    outputs_.emplace_back(static_cast<size_t>(count), -1.0f);
  }
}

int64_t ReferenceAllReduce::SliceBegin(int32_t slice) const {
  return count_ * slice / replicas_;
}

void ReferenceAllReduce::ReduceScatter(int32_t thread) {
  float* out = outputs_[static_cast<size_t>(thread)].data();
  const int64_t end = SliceBegin(thread + 1);
  for (int64_t block = SliceBegin(thread); block < end; block += kReduceBlock) {
    const int64_t block_end = std::min(end, block + kReduceBlock);
    const float* a = inputs_[0].data();
    const float* b = inputs_[1].data();
    for (int64_t i = block; i < block_end; ++i) out[i] = a[i] + b[i];
    for (size_t r = 2; r < inputs_.size(); ++r) {
      const float* c = inputs_[r].data();
      for (int64_t i = block; i < block_end; ++i) out[i] += c[i];
    }
  }
}

void ReferenceAllReduce::AllGather(int32_t thread) {
  float* out = outputs_[static_cast<size_t>(thread)].data();
  for (int32_t s = 0; s < replicas_; ++s) {
    if (s == thread) continue;
    const int64_t begin = SliceBegin(s);
    const int64_t length = SliceBegin(s + 1) - begin;
    if (length > 0) {
      std::memcpy(out + begin, outputs_[static_cast<size_t>(s)].data() + begin,
                  static_cast<size_t>(length) * sizeof(float));
    }
  }
}

void ReferenceAllReduce::Run(int64_t iterations, std::vector<double>* times,
                             double* loop_seconds) {
  times->assign(static_cast<size_t>(iterations), 0.0);
  SpinBarrier barrier(replicas_);
  auto body = [&](int32_t thread) {
    const auto loop_start = Clock::now();
    auto t0 = loop_start;
    // The thread's input as it was made: copied over the input before each call when the
    // inputs are rewritten (the same values, written anew).
    const std::vector<float> pristine = rewrite_inputs_ ? inputs_[static_cast<size_t>(thread)] : std::vector<float>{};
    for (int64_t i = 0; i < iterations; ++i) {
      if (rewrite_inputs_) {
        std::memcpy(inputs_[static_cast<size_t>(thread)].data(), pristine.data(), pristine.size() * sizeof(float));
        barrier.Wait();  // every input rewritten: the call starts here
        if (thread == 0) t0 = Clock::now();
      }
      ReduceScatter(thread);
      barrier.Wait();  // every slice is summed
      AllGather(thread);
      // Every output is complete, and nobody still reads a slice that the next
      // iteration's reduce-scatter overwrites.
      barrier.Wait();
      if (thread == 0) {
        const auto t1 = Clock::now();
        (*times)[static_cast<size_t>(i)] = Seconds(t1 - t0);
        t0 = t1;
      }
    }
    if (thread == 0) *loop_seconds = Seconds(Clock::now() - loop_start);
  };
  std::vector<std::thread> others;
  for (int32_t t = 1; t < replicas_; ++t) others.emplace_back(body, t);
  body(0);
  for (std::thread& t : others) t.join();
}

std::string ReferenceAllReduce::Check() const {
  for (int32_t t = 0; t < replicas_; ++t) {
    const std::vector<float>& out = outputs_[static_cast<size_t>(t)];
    for (int64_t i = 0; i < count_; ++i) {
      // sum over r of (r + 1 + i % 7), in closed form.
      const float expected =
          static_cast<float>(replicas_ * (replicas_ + 1) / 2 + replicas_ * (i % 7));
      if (out[static_cast<size_t>(i)] != expected) {
        return "output of thread " + std::to_string(t) + ", element " + std::to_string(i) +
               " is " + std::to_string(out[static_cast<size_t>(i)]) + ", expected " +
               std::to_string(expected);
      }
    }
  }
  return "";
}

}  // namespace dist_bench
