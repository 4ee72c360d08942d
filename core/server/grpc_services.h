// The gRPC handlers of a task's server: the coordination service (on the chief) and the
// task service (on every task). They translate requests into calls on the core objects
// and add nothing else but what only the transport knows: who is asking (a request
// without the job's token is Unauthenticated and changes nothing: job_token.h), and that
// a Watch stream that closes without a Disconnect first means the task died.
#ifndef DISTRIBUTE_CORE_SERVER_GRPC_SERVICES_H_
#define DISTRIBUTE_CORE_SERVER_GRPC_SERVICES_H_

#include <memory>
#include <string>

namespace grpc {
class Service;
}  // namespace grpc

namespace distribute {

class CoordinationService;

// Handlers over `service`, which must outlive the gRPC server they are registered with.
// `job_token`: what every request must carry ("": the job has none).
std::unique_ptr<grpc::Service> NewCoordinationGrpcService(CoordinationService* service,
                                                          std::string job_token);

// Answers which task serves this address (to the job's processes only; never with the
// task's incarnation).
std::unique_ptr<grpc::Service> NewTaskGrpcService(std::string task, std::string job_token);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_GRPC_SERVICES_H_
