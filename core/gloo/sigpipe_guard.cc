#include "core/gloo/sigpipe_guard.h"

#include <pthread.h>
#include <time.h>

namespace distribute {
namespace {

sigset_t PipeSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

}  // namespace

SigpipeGuard::SigpipeGuard() {
  const sigset_t pipe = PipeSet();
  pthread_sigmask(SIG_BLOCK, &pipe, &previous_);
  was_blocked_ = sigismember(&previous_, SIGPIPE) == 1;
}

SigpipeGuard::~SigpipeGuard() {
  if (was_blocked_) return;  // the caller blocks it itself: leave its signals alone
  const sigset_t pipe = PipeSet();
  sigset_t pending;
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    const timespec zero{0, 0};
    sigtimedwait(&pipe, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

}  // namespace distribute
