// Request streams that stop sending are cancelled (issue 43, finding 3): a client of a
// streaming call (a tensor sent in chunks) that declares its bytes and then sends nothing
// would hold one of the server's bounded threads for ever, and a hundred such streams
// starve the service. Each streaming handler registers its call for the time it reads; one
// thread per service cancels a call (grpc::ServerContext::TryCancel, which ends its pending
// Read) once no message arrived for the idle limit.
//
// Thread-safety: safe. A Watch belongs to its handler's thread.
#ifndef DISTRIBUTE_CORE_SERVER_STREAM_WATCHDOG_H_
#define DISTRIBUTE_CORE_SERVER_STREAM_WATCHDOG_H_

#include <grpcpp/server_context.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace distribute {

class StreamWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  // One handler's call while it reads: registered on construction, unregistered on
  // destruction.
  class Watch {
   public:
    Watch(StreamWatchdog& watchdog, grpc::ServerContext* context);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    // A message arrived (or the handler stopped reading): the idle time starts again.
    void Progress() { last_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed); }
    // Whether the watchdog cancelled the call (its Read then returned false).
    bool cancelled() const { return cancelled_.load(); }

   private:
    friend class StreamWatchdog;
    StreamWatchdog& watchdog_;
    grpc::ServerContext* const context_;
    std::atomic<Clock::rep> last_;
    std::atomic<bool> cancelled_{false};
  };

  // A Read wrapper that reports each message to `watch`, for the templates that read a
  // stream (tensor_stream.h): Read(&message) as the stream's.
  template <typename Stream>
  class Reader {
   public:
    Reader(Stream* stream, Watch* watch) : stream_(stream), watch_(watch) {}
    template <typename Message>
    bool Read(Message* message) {
      const bool read = stream_->Read(message);
      watch_->Progress();
      return read;
    }

   private:
    Stream* const stream_;
    Watch* const watch_;
  };

  explicit StreamWatchdog(std::chrono::milliseconds idle_limit);
  ~StreamWatchdog();
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  std::chrono::milliseconds idle_limit() const { return idle_limit_; }

 private:
  void Run();

  const std::chrono::milliseconds idle_limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::set<Watch*> watches_;
  std::thread thread_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_STREAM_WATCHDOG_H_
