// The clusterapi provider: tidepool's pools are Cluster API node groups (MachineDeployments,
// MachineSets, MachinePools) on any infrastructure; it scales them through the scale subresource.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cloud/clusterapi/cluster_api.h"
#include "cloud/clusterapi/discovery.h"
#include "cloud/provider.h"
#include "kube/client/api_client.h"

namespace tidepool::cloud::clusterapi {

// CloudProvider over the management cluster (see cloud/provider.h for the contract).
//  - Refresh lists the node groups and Machines: target = spec.replicas; instances = Machines
//    neither failed nor being deleted (a MachinePool without Machines: its providerIDList); a
//    failed Machine is a stockout whose reason names it. A node group whose size annotations
//    or presence changed since startup is reported once (pools are read at startup).
//  - IncreaseSize writes replicas + delta through the scale subresource, guarded by the
//    resourceVersion it read.
//  - DeleteNode marks the node's Machine with cluster.x-k8s.io/delete-machine (and
//    tidepool.dev/delete-machine), then lowers replicas by one guarded by the resourceVersion
//    read before marking, so the MachineSet deletes that Machine and no other; if the write
//    fails the mark is taken off again.
//  - DecreaseTargetSize marks Machines that never joined (failed first, then newest) and lowers
//    replicas the same way; replicas the MachineSet has not created yet need no mark.
//  - At start, marks tidepool left behind (killed between marking and lowering replicas) are
//    taken off: the loop resumes that removal from the node's ToBeDeleted taint, or does not.
//  - PoolOf maps a Node by providerID (else by the Machines' nodeRef) to its group's pool.
class ClusterApiProvider final : public CloudProvider {
 public:
  static Result<std::unique_ptr<ClusterApiProvider>> Create(
      ClusterApi api, std::map<std::string, NodeGroup> groups);

  std::string_view Name() const override { return "clusterapi"; }
  Result<std::vector<PoolSize>> Refresh(Time now) override;
  Result<void> IncreaseSize(const std::string& pool, int delta, Time now) override;
  Result<void> DecreaseTargetSize(const std::string& pool, int delta, Time now) override;
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time now) override;
  std::string PoolOf(const model::Node& node) const override;

 private:
  struct PoolState {
    NodeGroup group;                // as listed at the last Refresh
    std::vector<Machine> machines;  // its Machines, not being deleted
  };

  ClusterApiProvider(ClusterApi api, std::map<std::string, NodeGroup> groups);
  Result<void> RollBackMarks();
  // Lists groups and Machines into pools_ and the node maps.
  Result<void> Load();
  void NoteChange(const std::string& pool, const NodeGroup* now);
  Result<PoolState> Lookup(const std::string& pool) const;
  // Marks `machines`, then writes `replicas`; on a failed write the marks come off again.
  Result<void> MarkAndScale(const NodeGroup& group, const std::vector<Machine>& machines,
                            const Scale& read, int32_t replicas, Time now);

  ClusterApi api_;
  const std::map<std::string, NodeGroup> started_with_;  // pool -> group at startup

  mutable std::mutex mu_;  // guards what follows (PoolOf runs on the loop's thread)
  std::map<std::string, PoolState> pools_;
  std::map<std::string, std::string> pool_by_provider_id_;
  std::map<std::string, std::string> pool_by_node_name_;
  std::set<std::string> reported_;  // changes already logged
};

}  // namespace tidepool::cloud::clusterapi
