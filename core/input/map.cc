// Map: applies a function to every element, on the caller's thread or, with
// num_parallel_calls > 1, on up to that many library threads (capped by the machine) with
// results kept in input order.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input/input_check.h"
#include "core/input/transformations.h"
#include "core/util/mutex.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Map functions may wait on I/O, so a few threads per core can still pay; more only add
// stacks and scheduling (10 elements once started 32,160 threads before failing).
constexpr int32_t kMapThreadsPerHardwareThread = 4;

int32_t HardwareThreads() {
  return static_cast<int32_t>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 1024));
}

absl::Status Apply(const MapFn& fn, int32_t num_outputs, const Element& in, Element* out) {
  out->clear();
  RETURN_IF_ERROR(fn(in, out));
  if (static_cast<int32_t>(out->size()) != num_outputs) {
    return absl::InvalidArgumentError(absl::StrCat("the map function produced ", out->size(),
                                                   " outputs: expected ", num_outputs));
  }
  return absl::OkStatus();
}

class SequentialMapIterator : public DatasetIterator {
 public:
  SequentialMapIterator(std::unique_ptr<DatasetIterator> input, std::shared_ptr<const MapFn> fn,
                        int32_t num_outputs)
      : input_(std::move(input)), fn_(std::move(fn)), num_outputs_(num_outputs) {}

  absl::StatusOr<bool> GetNext(Element* out) override {
    Element in;
    ASSIGN_OR_RETURN(const bool got, input_->GetNext(&in));
    if (!got) return false;
    Element result;
    RETURN_IF_ERROR(Apply(*fn_, num_outputs_, in, &result));
    *out = std::move(result);
    return true;
  }

 private:
  std::unique_ptr<DatasetIterator> input_;
  std::shared_ptr<const MapFn> fn_;
  int32_t num_outputs_;
};

// Workers take input elements in order, each into the next slot of a queue, and fill the
// slot when the function returns; the consumer takes slots from the front as they fill.
// At most `parallelism` slots exist at once, which bounds both the work in flight and the
// results waiting. Workers start one at a time, each when the last idle one takes an
// element, so there are never more threads than the elements in flight can use (one more
// than the elements at most) nor more than `parallelism`.
class ParallelMapIterator : public DatasetIterator {
 public:
  ParallelMapIterator(std::unique_ptr<DatasetIterator> input, std::shared_ptr<const MapFn> fn,
                      int32_t num_outputs, int32_t parallelism)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        num_outputs_(num_outputs),
        parallelism_(static_cast<size_t>(parallelism)) {}

  ~ParallelMapIterator() override {
    std::vector<std::thread> workers;
    {
      MutexLock lock(&mu_);
      cancelled_ = true;  // no worker starts after this
      workers.swap(workers_);
    }
    space_.notify_all();
    // Workers finish the call they are in, then see the cancel.
    for (std::thread& worker : workers) worker.join();
  }

  absl::StatusOr<bool> GetNext(Element* out) override {
    MutexLock lock(&mu_);
    if (workers_.empty() && !StartWorker()) {
      return absl::ResourceExhaustedError("cannot start a thread for the parallel map");
    }
    ready_.wait(lock.native(), [this] {
      return (!slots_.empty() && slots_.front()->done) || (slots_.empty() && input_done_);
    });
    if (slots_.empty()) {
      if (!input_status_.ok()) return input_status_;
      return false;
    }
    std::shared_ptr<Slot> slot = std::move(slots_.front());
    slots_.pop_front();
    space_.notify_one();
    if (!slot->status.ok()) return slot->status;
    *out = std::move(slot->out);
    return true;
  }

 private:
  struct Slot {
    Element out;
    absl::Status status;
    bool done = false;
  };

  // One more worker, which starts idle. False when the system has no thread to give.
  bool StartWorker() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    try {
      workers_.emplace_back([this] { Work(); });
    } catch (const std::system_error&) {
      return false;
    }
    ++idle_workers_;
    return true;
  }

  void Work() {
    while (true) {
      std::shared_ptr<Slot> slot;
      Element in;
      {
        // Holding input_mu_ from the slot's creation to the pull keeps slots in input order.
        MutexLock input_lock(&input_mu_);
        {
          MutexLock lock(&mu_);
          space_.wait(lock.native(), [this] {
            return cancelled_ || input_done_ || slots_.size() < parallelism_;
          });
          if (cancelled_ || input_done_) return;
          slot = std::make_shared<Slot>();
          slots_.push_back(slot);
        }
        absl::StatusOr<bool> got = input_->GetNext(&in);
        if (!got.ok() || !*got) {
          MutexLock lock(&mu_);
          // The reserved slot is dropped: the error or end comes after the slots before it.
          for (auto it = slots_.begin(); it != slots_.end(); ++it) {
            if (*it == slot) {
              slots_.erase(it);
              break;
            }
          }
          input_done_ = true;
          input_status_ = got.status();
          ready_.notify_all();
          space_.notify_all();
          return;
        }
        MutexLock lock(&mu_);
        --idle_workers_;
        // Someone must be ready for the next element while this one is mapped. A thread
        // the system refuses only lowers the parallelism.
        if (idle_workers_ == 0 && workers_.size() < parallelism_ && !cancelled_) {
          (void)StartWorker();
        }
      }
      Element result;
      absl::Status status = Apply(*fn_, num_outputs_, in, &result);
      MutexLock lock(&mu_);
      slot->out = std::move(result);
      slot->status = std::move(status);
      slot->done = true;
      ++idle_workers_;
      ready_.notify_all();
    }
  }

  Mutex input_mu_;  // serializes input_ and the ordering of new slots
  std::unique_ptr<DatasetIterator> input_ ABSL_GUARDED_BY(input_mu_);
  const std::shared_ptr<const MapFn> fn_;
  const int32_t num_outputs_;
  const size_t parallelism_;

  Mutex mu_;
  std::condition_variable ready_;  // the front slot is done, or no slot will come
  std::condition_variable space_;  // a slot is free, or the iterator is going away
  std::deque<std::shared_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
  bool input_done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status input_status_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);  // the first starts in GetNext
  size_t idle_workers_ ABSL_GUARDED_BY(mu_) = 0;  // started and not mapping an element
};

class MapDataset : public Dataset {
 public:
  MapDataset(DatasetPtr input, std::shared_ptr<const MapFn> fn, int32_t num_outputs,
             int32_t parallelism)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        num_outputs_(num_outputs),
        parallelism_(parallelism) {}

  int32_t num_components() const override { return num_outputs_; }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t pass) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> input, input_->MakeIterator(pass));
    if (parallelism_ == 1) {
      return std::unique_ptr<DatasetIterator>(
          new SequentialMapIterator(std::move(input), fn_, num_outputs_));
    }
    return std::unique_ptr<DatasetIterator>(
        new ParallelMapIterator(std::move(input), fn_, num_outputs_, parallelism_));
  }

  std::vector<std::string> SourceFiles() const override { return input_->SourceFiles(); }
  absl::StatusOr<DatasetPtr> WithSourceFiles(std::vector<std::string> files) const override {
    ASSIGN_OR_RETURN(DatasetPtr input, input_->WithSourceFiles(std::move(files)));
    return Map(std::move(input), fn_, num_outputs_, parallelism_);
  }


  // Element-wise transformations keep batches whole: distribution still knows the global
  // batch size when a map, shuffle, take... follows the batch.
  int64_t batch_size() const override { return input_->batch_size(); }

 private:
  DatasetPtr input_;
  std::shared_ptr<const MapFn> fn_;
  int32_t num_outputs_;
  int32_t parallelism_;  // num_parallel_calls as resolved by Map()
};

}  // namespace

int32_t MaxMapParallelism() { return kMapThreadsPerHardwareThread * HardwareThreads(); }

absl::StatusOr<DatasetPtr> Map(DatasetPtr input, std::shared_ptr<const MapFn> fn,
                               int32_t num_outputs, int32_t num_parallel_calls) {
  RETURN_IF_ERROR(CheckInput(input));
  if (fn == nullptr || !*fn) {
    return absl::InvalidArgumentError("fn is empty: expected a map function");
  }
  if (num_outputs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_outputs is ", num_outputs, ": expected at least 1"));
  }
  if (num_parallel_calls < 1 && num_parallel_calls != kAutotune) {
    return absl::InvalidArgumentError(absl::StrCat("num_parallel_calls is ", num_parallel_calls,
                                                   ": expected at least 1, or AUTOTUNE (",
                                                   kAutotune, ")"));
  }
  const int32_t parallelism = num_parallel_calls == kAutotune
                                  ? HardwareThreads()
                                  : std::min(num_parallel_calls, MaxMapParallelism());
  return DatasetPtr(
      std::make_shared<MapDataset>(std::move(input), std::move(fn), num_outputs, parallelism));
}

}  // namespace distribute
