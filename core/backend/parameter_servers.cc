#include "core/backend/parameter_servers.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ps/variable_store.h"
#include "core/server/server.h"
#include "core/util/status_macros.h"

namespace distribute {

ParameterServers::ParameterServers() = default;

ParameterServers::~ParameterServers() {
  hosts.clear();
  server.reset();
}

absl::StatusOr<std::shared_ptr<ParameterServers>> LocalParameterServers(ps::PlacementPolicy policy) {
  auto servers = std::make_shared<ParameterServers>();
  servers->hosts.push_back(ps::NewLocalVariableHost(std::make_shared<ps::VariableStore>()));
  servers->devices.push_back(DeviceSpec{}.WithDefaults());
  ASSIGN_OR_RETURN(servers->placement, ps::Placement::Create(1, policy));
  return servers;
}

}  // namespace distribute
