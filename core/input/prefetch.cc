// Prefetch: a library thread keeps up to buffer_size elements ready ahead of the consumer.
//
// Each side spins briefly (core/util/spin.h) before it sleeps on its condition variable:
// an element is usually microseconds away, and a futex sleep and wake-up per element
// costs tens of microseconds, which at 1 MiB batches was a quarter of the throughput.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/input_check.h"
#include "core/input/transformations.h"
#include "core/util/mutex.h"
#include "core/util/spin.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

class PrefetchIterator : public DatasetIterator {
 public:
  PrefetchIterator(std::unique_ptr<DatasetIterator> input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(static_cast<size_t>(buffer_size)) {}

  ~PrefetchIterator() override {
    {
      MutexLock lock(&mu_);
      cancelled_ = true;
      cancelled_flag_ = true;
    }
    space_.notify_all();
    // The producer finishes the element it is pulling, sees the cancel and exits.
    if (producer_.joinable()) producer_.join();
  }

  absl::StatusOr<bool> GetNext(Element* out) override {
    if (started_.load(std::memory_order_relaxed)) {
      SpinUntil(SpinBudgetNs(2), [this] { return queued_.load(std::memory_order_acquire) > 0 || done_.load(); });
    }
    MutexLock lock(&mu_);
    if (!started_.load(std::memory_order_relaxed)) {
      started_ = true;
      producer_ = std::thread([this] { Produce(); });
    }
    ready_.wait(lock.native(), [this] { return !queue_.empty() || finished_; });
    if (queue_.empty()) {
      if (!final_status_.ok()) return final_status_;
      return false;
    }
    *out = std::move(queue_.front());
    queue_.pop_front();
    queued_.store(queue_.size(), std::memory_order_release);
    space_.notify_one();
    return true;
  }

 private:
  void Produce() {
    while (true) {
      SpinUntil(SpinBudgetNs(2), [this] { return queued_.load(std::memory_order_acquire) < buffer_size_ || cancelled_flag_.load(); });
      {
        MutexLock lock(&mu_);
        space_.wait(lock.native(), [this] { return cancelled_ || queue_.size() < buffer_size_; });
        if (cancelled_) return;
      }
      Element element;
      absl::StatusOr<bool> got = input_->GetNext(&element);
      MutexLock lock(&mu_);
      if (!got.ok() || !*got) {
        // Elements already queued come first; the error or the end follows them.
        final_status_ = got.status();
        finished_ = true;
        done_ = true;
        ready_.notify_all();
        return;
      }
      queue_.push_back(std::move(element));
      queued_.store(queue_.size(), std::memory_order_release);
      ready_.notify_one();
    }
  }

  std::unique_ptr<DatasetIterator> input_;  // used by the producer only
  const size_t buffer_size_;

  Mutex mu_;
  std::condition_variable ready_;  // an element, or the end, is ready
  std::condition_variable space_;  // the queue has room, or the iterator is going away
  std::deque<Element> queue_ ABSL_GUARDED_BY(mu_);
  // Mirrors of the guarded state that the spinning side reads without the lock.
  std::atomic<size_t> queued_{0};
  std::atomic<bool> done_{false};
  std::atomic<bool> cancelled_flag_{false};
  std::atomic<bool> started_{false};  // written under mu_ by the consumer only
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  std::thread producer_;
};

class PrefetchDataset : public Dataset {
 public:
  PrefetchDataset(DatasetPtr input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {}

  int32_t num_components() const override { return input_->num_components(); }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t pass) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> input, input_->MakeIterator(pass));
    return std::unique_ptr<DatasetIterator>(new PrefetchIterator(std::move(input), buffer_size_));
  }

  std::vector<std::string> SourceFiles() const override { return input_->SourceFiles(); }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    ASSIGN_OR_RETURN(DatasetPtr input, input_->WithSourceFiles(std::move(files)));
    return Prefetch(std::move(input), buffer_size_);
  }

  // Prefetching leaves the elements as they are, so a batch below still sizes them.
  int64_t batch_size() const override { return input_->batch_size(); }

 private:
  DatasetPtr input_;
  int64_t buffer_size_;
};

}  // namespace

absl::StatusOr<DatasetPtr> Prefetch(DatasetPtr input, int64_t buffer_size) {
  RETURN_IF_ERROR(CheckInput(input));
  if (buffer_size == kAutotune) buffer_size = kAutotunePrefetchElements;
  if (buffer_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("buffer_size is ", buffer_size,
                                                   ": expected at least 0 (0 disables prefetching) or AUTOTUNE (",
                                                   kAutotune, ")"));
  }
  if (buffer_size == 0) return input;
  return DatasetPtr(std::make_shared<PrefetchDataset>(std::move(input), buffer_size));
}

}  // namespace distribute
