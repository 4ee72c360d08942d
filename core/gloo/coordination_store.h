// Gloo's rendezvous store (gloo::rendezvous::Store) on the cluster's coordination
// service, so that workers find each other's Gloo addresses without a shared file system
// or Redis. Keys are namespaced by `prefix`, one per communicator, so a rebuilt
// communicator never reads a stale address.
//
// Gloo's interface reports failure by exception: a failed or timed-out wait throws
// gloo::IoException with the coordination service's message (which names the key).
#ifndef DISTRIBUTE_CORE_GLOO_COORDINATION_STORE_H_
#define DISTRIBUTE_CORE_GLOO_COORDINATION_STORE_H_

#include <chrono>
#include <string>
#include <vector>

#include "core/server/coordination_client.h"
#include "gloo/rendezvous/store.h"

namespace distribute {

class CoordinationStore : public gloo::rendezvous::Store {
 public:
  CoordinationStore(CoordinationClient& client, std::string prefix,
                    std::chrono::milliseconds timeout)
      : client_(client), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  CoordinationClient& client_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GLOO_COORDINATION_STORE_H_
