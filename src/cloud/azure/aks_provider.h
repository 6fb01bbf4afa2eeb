// AksProvider ("aks"): pools are agent pools of one AKS managed cluster; size is the agent
// pool's `count`, machines are its agentPools/machines, removal is agentPools/deleteMachines.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cloud/azure/azure_provider.h"

namespace tidepool::cloud::azure {

// One machine of an agent pool.
struct AksMachine {
  std::string name;          // aks-<pool>-<digits>-vmss00000a: also the node name
  std::string provider_id;   // "azure://" + properties.resourceId (the VMSS VM), "" if absent
  std::string provisioning;  // properties.status.provisioningState when the API gives it
};

// Per pool (CloudProvider and AzureProvider contracts, plus):
//  - Binding: provider.agentPools.<pool> names the agent pool, default the pool's own name.
//  - Refresh: GET the agent pool (target = count) and its machines (instances = machines not
//    Failed; when the machines API is not available, instances = count). A Failed agent pool
//    whose status.provisioningError is a stockout marks the pool stocked out.
//  - IncreaseSize / DecreaseTargetSize (capacity not backed by a machine yet): GET, then PUT the
//    agent pool with the new count and If-Match: <eTag> when it has one (412: read again and
//    retry once). Refused while a previous operation of ours on the pool is still running
//    (AKS accepts one at a time: kUnavailable) and for agent pools with enableAutoScaling
//    (AKS's own autoscaler owns their count: kInvalidArgument).
//  - DeleteNode / DecreaseTargetSize (machines not joined, newest name first): POST
//    .../deleteMachines {"machineNames": [...]}; AKS lowers the count itself. The machine of a
//    node is: the machine whose resourceId equals the node's providerID; else the node's name
//    when it has the AKS form aks-<agentpool>-<digits>-vmss<6 base-36 chars> for this pool's
//    agent pool; else the name derived from the providerID's scale set and instance id
//    (AksMachineName). "Joined" is NodeJoined; without it, a machine whose status says
//    Succeeded (or that has no status) counts as joined.
//  - PoolOf: the agent pool in the providerID's scale set name (aks-<agentpool>-<digits>-vmss).
class AksProvider final : public AzureProvider {
 public:
  AksProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps);

  std::string_view Name() const override { return "aks"; }
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time now) override;
  std::string PoolOf(const model::Node& node) const override;
  Result<std::vector<model::Pool>> DiscoverPools(Time now) override;

 private:
  struct AgentPoolView {
    nlohmann::json body;
    int count = 0;
    std::string etag;
    bool from_cache = false;
  };

  Result<std::optional<PoolSize>> RefreshPool(const model::Pool& pool, Time now) override;
  Result<void> Grow(const model::Pool& pool, int delta, Time now) override;
  Result<void> Shrink(const model::Pool& pool, int delta, Time now) override;

  std::string ClusterPath() const;
  std::string AgentPoolPath(const std::string& agent_pool) const;
  Result<std::string> AgentPoolOf(const std::string& pool) const;
  Result<AgentPoolView> ReadAgentPool(const std::string& agent_pool);
  // nullopt when the API has no machines endpoint for this cluster (404/400).
  Result<std::optional<std::vector<AksMachine>>> ListMachines(const std::string& agent_pool);
  Result<void> SetCount(const std::string& pool, const std::string& agent_pool,
                        const std::function<Result<int>(int)>& compute, Time now);
  Result<void> DeleteMachines(const std::string& pool, const std::string& agent_pool,
                              const std::vector<std::string>& names, Time now);
  Result<void> CheckIdle(const std::string& pool) const;
  bool Joined(const AksMachine& m) const;

  std::map<std::string, std::vector<AksMachine>> machines_;  // pool -> last listing
};

}  // namespace tidepool::cloud::azure
