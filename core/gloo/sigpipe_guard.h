// Keeps SIGPIPE from killing the host process while Gloo writes to a socket whose peer
// died (DESIGN.md, "Reliability contract"): blocks it in the calling thread for the
// guard's lifetime, and on exit discards a SIGPIPE raised meanwhile (unblocking with one
// pending would deliver it). Gloo's event-loop thread inherits the mask of the thread that
// creates its device, so a device created under a guard never sees SIGPIPE either.
#ifndef DISTRIBUTE_CORE_GLOO_SIGPIPE_GUARD_H_
#define DISTRIBUTE_CORE_GLOO_SIGPIPE_GUARD_H_

#include <signal.h>

namespace distribute {

class SigpipeGuard {
 public:
  SigpipeGuard();
  ~SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t previous_;
  bool was_blocked_ = false;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GLOO_SIGPIPE_GUARD_H_
