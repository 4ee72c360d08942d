#include "core/backend/transport_factory.h"

#include "absl/strings/str_cat.h"
#include "core/gloo/gloo_transport.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<TransportKind> ChooseTransport(const CommunicationOptions& options,
                                              DeviceType device_type) {
  if (device_type != DeviceType::kCpu) {
    return absl::FailedPreconditionError(
        "multi-worker collectives between GPU replicas need the NCCL transport, which is not "
        "built yet");
  }
  switch (options.implementation) {
    case CommunicationImplementation::kNccl:
      return absl::FailedPreconditionError(
          "communication implementation NCCL needs GPU replicas; this strategy's replicas are CPU "
          "devices (use AUTO or RING)");
    case CommunicationImplementation::kAuto:
    case CommunicationImplementation::kRing:
      break;
  }
  return TransportKind::kGlooTcp;
}

absl::StatusOr<std::unique_ptr<Transport>> ConnectTransport(TransportKind kind,
                                                            const TransportRequest& request,
                                                            const Deadline& deadline) {
  switch (kind) {
    case TransportKind::kGlooTcp: {
      ASSIGN_OR_RETURN(std::unique_ptr<GlooTransport> gloo,
                       GlooTransport::Connect(*request.coordination,
                                              absl::StrCat(request.key_prefix, "gloo/"), request.rank,
                                              request.task_names, request.listen_host, request.job_token,
                                              deadline));
      return std::unique_ptr<Transport>(std::move(gloo));
    }
  }
  return absl::InternalError(absl::StrCat("unknown transport kind ", static_cast<int32_t>(kind)));
}

}  // namespace distribute
