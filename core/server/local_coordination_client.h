// The chief's coordination client: calls on the service its own server hosts, with no RPC.
//
// Thread-safety: safe, as CoordinationClient.
#ifndef DISTRIBUTE_CORE_SERVER_LOCAL_COORDINATION_CLIENT_H_
#define DISTRIBUTE_CORE_SERVER_LOCAL_COORDINATION_CLIENT_H_

#include <string>

#include "core/server/coordination_client.h"
#include "core/server/coordination_service.h"

namespace distribute {

class LocalCoordinationClient final : public CoordinationClient {
 public:
  // `service` is borrowed and must outlive the client; `task` is registered with it.
  LocalCoordinationClient(CoordinationService* service, std::string task)
      : service_(service), task_(std::move(task)) {}

  const std::string& task_name() const override { return task_; }
  absl::Status Set(absl::string_view key, absl::string_view value) override {
    return service_->Set(key, value);
  }
  absl::StatusOr<std::string> Get(absl::string_view key, const Deadline& deadline) override {
    return service_->Get(key, deadline);
  }
  absl::Status Barrier(absl::string_view name, const Deadline& deadline) override {
    return service_->Barrier(name, task_, deadline);
  }
  absl::Status PeerHealth() override { return service_->PeerHealth(); }
  absl::Status WaitForPeerFailure(const Deadline& deadline) override {
    return service_->WaitForPeerFailure(deadline);
  }

 private:
  CoordinationService* const service_;
  const std::string task_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_LOCAL_COORDINATION_CLIENT_H_
