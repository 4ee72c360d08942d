// What a worker task's server runs for the job's coordinator (server/closure_host.h): the
// registered closure and dataset functions (closure_registry.h), with a
// ParameterServerStrategy of the worker's own and the per-worker datasets and iterators
// the coordinator asked for.
//
// A worker serves one coordinator at a time, its "session": a request with another
// coordinator id is refused until the session's coordinator ends it or stops asking for
// ten of its timeouts (then the old session's strategy and resources go). The session's
// strategy is created on its first request, with the session's replicas per worker and
// timeout and the server's job token and TLS files; a worker is never the chief, so it
// starts no server of its own.
//
// Closures run one at a time (TF runs one closure at a time per worker), so a closure
// function and the iterators it pulls from are never used from two threads at once. No
// lock of the host is held while a user's closure or dataset function runs: a hung
// closure blocks neither resource requests nor the session's handover, and a closure that
// finds the one before it still running after half its timeout answers Unavailable (its
// coordinator then runs it elsewhere).
// Bounds: at most kMaxWorkerResources datasets and iterators per session.
#ifndef DISTRIBUTE_CORE_COORDINATOR_WORKER_CLOSURE_HOST_H_
#define DISTRIBUTE_CORE_COORDINATOR_WORKER_CLOSURE_HOST_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/server/closure_host.h"

namespace distribute::coordinator {

inline constexpr size_t kMaxWorkerResources = 4096;

absl::StatusOr<std::unique_ptr<ClosureHost>> NewWorkerClosureHost(const ClosureHostContext& context);

}  // namespace distribute::coordinator

#endif  // DISTRIBUTE_CORE_COORDINATOR_WORKER_CLOSURE_HOST_H_
