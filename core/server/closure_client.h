// The coordinator's handle on one worker task's closure service (closures.proto). The
// gRPC implementation is remote_closure_client.h; the coordinator's tests use fakes.
//
// Failure model, which the coordinator's fault tolerance rests on: a method returns OK
// whenever the worker answered, whatever the answer's `status` says (a function's error,
// an unknown function, a missing resource). It returns kUnauthenticated when the worker
// refused this job's token (not a worker failure: the coordinator fails the closure), and
// any other non-OK status when the worker did not answer within the deadline (dead,
// unreachable, restarting, silent): the coordinator then treats the worker as lost.
//
// Thread-safety: safe; calls may run concurrently, and Cancel may be called from any thread.
#ifndef DISTRIBUTE_CORE_SERVER_CLOSURE_CLIENT_H_
#define DISTRIBUTE_CORE_SERVER_CLOSURE_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "core/util/deadline.h"
#include "server/closures.pb.h"

namespace distribute {

class ClosureClient {
 public:
  virtual ~ClosureClient() = default;
  // "worker:1".
  virtual const std::string& task() const = 0;
  virtual absl::Status RunClosure(const closures::RunClosureRequest& request,
                                  closures::RunClosureResponse* response, Deadline deadline) = 0;
  virtual absl::Status CreateResource(const closures::CreateResourceRequest& request,
                                      closures::CreateResourceResponse* response,
                                      Deadline deadline) = 0;
  virtual absl::Status ReleaseResources(const closures::ReleaseResourcesRequest& request,
                                        closures::ReleaseResourcesResponse* response,
                                        Deadline deadline) = 0;
  virtual absl::Status Ping(closures::PingResponse* response, Deadline deadline) = 0;
  // Makes the calls in flight and every later call fail at once (kCancelled): the
  // coordinator's shutdown.
  virtual void Cancel() = 0;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_CLOSURE_CLIENT_H_
