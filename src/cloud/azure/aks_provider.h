// AksProvider ("aks"): pools are agent pools of one AKS managed cluster; size is the agent
// pool's `count`, machines are its agentPools/machines, removal is agentPools/deleteMachines.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cloud/azure/azure_provider.h"
#include "cloud/azure/vmss_instance.h"

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
//    retry once). Refused while a previous operation of ours on the agent pool is still running
//    (AKS accepts one at a time: kUnavailable; a deallocation, below, is not one) and for agent
//    pools with enableAutoScaling (AKS's own autoscaler owns their count: kInvalidArgument).
//  - DeleteNode / DecreaseTargetSize (machines not joined, newest name first): POST
//    .../deleteMachines {"machineNames": [...]}; AKS lowers the count itself. The machine of a
//    node is: the machine whose resourceId equals the node's providerID; else the node's name
//    when it has the AKS form aks-<agentpool>-<digits>-vmss<6 base-36 chars> for this pool's
//    agent pool; else the name derived from the providerID's scale set and instance id
//    (AksMachineName). "Joined" is NodeJoined; without it, a machine whose status says
//    Succeeded (or that has no status) counts as joined.
//  - PoolOf: the agent pool in the providerID's scale set name (aks-<agentpool>-<digits>-vmss).
// Pools with scaleDown.mode deallocate (MachineStopper; aks_stopped.cc, docs/azure.md "Stopped
// machines"). The agent pool must have scaleDownMode Deallocate, and the machines API must answer
// (it names the scale set in the node resource group). AKS has no per-machine stop, so the drained
// node's own instance is deallocated through the Compute API; `count` is read as the number of
// machines AKS keeps running, which AKS changes only when the agent pool is written:
//  - Refresh: `stopped` are the scale set instances whose power state is deallocated or
//    deallocating; target = min(count, machines not stopped) (count while an operation of ours
//    is pending). When count still counts stopped machines and nothing of ours is pending, count
//    is lowered to the machines not stopped (one PUT), so AKS's next write does not start them.
//  - IncreaseSize: PUT count = machines not stopped + delta (the max applies to that); AKS starts
//    deallocated machines first, then creates. A start that fails leaves a Failed machine, which
//    DecreaseTargetSize deletes like any failed one. With another scaleDownMode: count + delta,
//    as for a delete pool (logged).
//  - StopNode: POST <scale set>/deallocate {"instanceIds": [id]} for the node's instance (the
//    providerID checked as for DeleteNode); 404 is success. Refused (kInvalidArgument, nothing
//    sent) when the agent pool's scaleDownMode is not Deallocate: AKS deletes deallocated VMs of
//    such pools. tidepool never changes scaleDownMode itself.
//  - DeleteStopped: deleteMachines with the names of the `count` stopped machines of lowest
//    instance id.
//  - DecreaseTargetSize never cancels a stopped machine, and waits (kUnavailable) while a
//    deallocation runs.
class AksProvider final : public AzureProvider, public MachineStopper {
 public:
  AksProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps);

  std::string_view Name() const override { return "aks"; }
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time now) override;
  std::string PoolOf(const model::Node& node) const override;
  Result<std::vector<model::Pool>> DiscoverPools(Time now) override;
  // MachineStopper.
  Result<void> StopNode(const std::string& pool, const model::Node& node, Time now) override;
  Result<void> DeleteStopped(const std::string& pool, int count, Time now) override;

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

  // Deallocate pools (aks_stopped.cc).
  struct StoppedView {
    std::vector<AksMachine> machines;
    std::vector<VmssInstance> instances;  // of the agent pool's scale set
    int stopped = 0;
    int not_stopped = 0;                // instances neither stopped nor being deleted
    std::set<std::string> stopped_ids;  // providerIDs of the stopped instances, lower case
  };
  using Machines = std::optional<std::vector<AksMachine>>;  // nullopt: no machines API
  // The machines and their scale set's instances. kInvalidArgument without the machines API.
  Result<StoppedView> ReadStopped(const std::string& pool, const std::string& agent_pool);
  // The same from machines already listed.
  Result<StoppedView> StoppedOf(const std::string& pool, const std::string& agent_pool,
                                Machines machines);
  // kInvalidArgument naming the fix unless the agent pool's scaleDownMode is Deallocate.
  Result<void> CheckDeallocateMode(const std::string& pool, const std::string& agent_pool,
                                   const nlohmann::json& agent_pool_body) const;
  // Refresh's part, from the machines Refresh listed: stopped, target and instances; lowers a
  // count that counts stopped machines.
  Result<void> RefreshStopped(const model::Pool& pool, const std::string& agent_pool,
                              const AgentPoolView& ap, Machines machines, PoolSize& size, Time now);
  Result<void> GrowKeepingStopped(const model::Pool& pool, const std::string& agent_pool, int delta,
                                  Time now);

  std::map<std::string, std::vector<AksMachine>> machines_;  // pool -> last listing
  std::map<std::string, std::string> warned_;  // deallocate pool -> the mismatch last logged
};

}  // namespace tidepool::cloud::azure
