// Gloo's TCP device: it listens on the worker's host, and its event-loop thread (started
// with it) reads and writes the sockets of every pair connected through it.
//
// Why the loop may run in the background: Gloo's loop takes a pair's lock with try_lock
// and, when the user's thread holds it (posting a send or a receive, which writes to the
// socket under that lock), goes back to epoll_wait at once; the socket is still readable
// (epoll is level-triggered there), so the loop spins until the lock is free. With more
// busy threads than cores, the user's thread is often preempted while it holds the lock,
// by the spinning loops themselves, and a job stays in that state: 8-byte all-reduces
// among 4 workers on 2 cores took 2.4-3.1 ms in every row of every run, where raw Gloo
// took 0.45 ms (measured with dist-bench --multi-worker; perf: 744,000 epoll_wait calls a
// second against 6,800 reads). At the lowest priority (nice 19) a spinning loop gives the
// core to the lock's holder (its own process's thread, so whatever the scheduling group):
// 0.28-0.41 ms across runs. Two workers on 2 cores (a caller and a loop each) lost the
// same way at 4 and 16 MiB: 1.3-1.5x the time they take with the loops in the background,
// in three alternated runs. Where every caller and every loop has a core of its own this
// never builds up, and a low priority would only put the transfers behind the program's
// own compute threads: the caller asks for it only where the callers and loops of the
// machine's workers outnumber its cores.
//
// Thread-safety: safe.
#ifndef DISTRIBUTE_CORE_GLOO_GLOO_DEVICE_H_
#define DISTRIBUTE_CORE_GLOO_GLOO_DEVICE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gloo::transport {
class Device;
}

namespace distribute {

// The niceness of a background loop: the lowest priority a thread can take without
// privileges (and, unlike SCHED_IDLE, one that still lets a long transfer progress).
inline constexpr int kBackgroundLoopNice = 19;

// A device listening on `hostname` (empty: this machine's name, as Gloo takes it); with
// `background_loop` its event-loop thread runs at kBackgroundLoopNice. The loop thread
// inherits the signal mask of the calling thread (so call it where SIGPIPE is blocked,
// SigpipeGuard) and, without `background_loop`, its niceness; the caller's own niceness
// never changes. kUnavailable when Gloo cannot open
// the device (a host that does not resolve, no address to listen on, no thread to start).
absl::StatusOr<std::shared_ptr<gloo::transport::Device>> CreateGlooDevice(const std::string& hostname,
                                                                          bool background_loop);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GLOO_GLOO_DEVICE_H_
