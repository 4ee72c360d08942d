// What a failed cross-worker transport call reports, for every transport (Gloo's TCP one,
// the shared-memory one): the same codes and words whatever carried the bytes.
//
// - A task died (the coordination service says so, at once or within a short wait):
//   kUnavailable naming it.
// - The call's deadline passed: kDeadlineExceeded, unless a task died meanwhile.
// - The transport lost a peer that did not die (it closed its end because its own wait
//   timed out a moment earlier): kDeadlineExceeded at this call's own deadline when that
//   is near, else kUnavailable "lost the connection to a peer".
#ifndef DISTRIBUTE_CORE_SERVER_TRANSPORT_FAILURE_H_
#define DISTRIBUTE_CORE_SERVER_TRANSPORT_FAILURE_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/server/coordination_client.h"
#include "core/util/deadline.h"

namespace distribute {

// The status of a call (`what`: "exchange") that failed with the transport's `error`;
// `timed_out` when the transport's own wait ran out. `close_now` ends the communicator
// (so that peers waiting on this worker learn at once) before any wait for the
// coordination service to name a lost task.
absl::Status ExplainTransportFailure(CoordinationClient& coordination, const char* what,
                                     const std::string& error, bool timed_out, const Deadline& deadline,
                                     absl::FunctionRef<void()> close_now);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_TRANSPORT_FAILURE_H_
