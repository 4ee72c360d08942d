// The gRPC handlers of a task's server: the coordination service (on the chief) and the
// task service (on every task). They translate requests into calls on the core objects
// and add nothing else but what only the transport knows: a Watch stream that closes
// without a Disconnect first means the task died.
#ifndef DISTRIBUTE_CORE_SERVER_GRPC_SERVICES_H_
#define DISTRIBUTE_CORE_SERVER_GRPC_SERVICES_H_

#include <cstdint>
#include <memory>
#include <string>

namespace grpc {
class Service;
}  // namespace grpc

namespace distribute {

class CoordinationService;

// Handlers over `service`, which must outlive the gRPC server they are registered with.
std::unique_ptr<grpc::Service> NewCoordinationGrpcService(CoordinationService* service);

// Answers who serves this address.
std::unique_ptr<grpc::Service> NewTaskGrpcService(std::string task, uint64_t incarnation);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_GRPC_SERVICES_H_
