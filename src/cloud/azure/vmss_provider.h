// VmssProvider ("azure-vmss"): pools are Uniform VM scale sets (aks-engine, CAPZ-style or
// hand-made clusters); size is sku.capacity, machines are the scale set's instances.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cloud/azure/azure_provider.h"
#include "cloud/azure/vmss_instance.h"

namespace tidepool::cloud::azure {

// Per pool (CloudProvider and AzureProvider contracts, plus):
//  - Binding: provider.scaleSets.<pool> names the scale set; otherwise, with discovery on, the
//    scale set whose poolName / aks-managed-poolName tag, or whose own name, equals the pool's
//    name among the discovered ones (re-listed at most once a minute). An unbound pool is left
//    out of Refresh (with a warning) and is kNotFound for the other calls.
//  - Refresh: GET the scale set (target = sku.capacity, so a spot scale set that shrank by
//    eviction is simply reported smaller: reconcile, don't fight) and its instances with their
//    instance view. instances = those neither Failed nor Deleting. Failed instances whose error
//    is a stockout (IsStockoutError) mark the pool stocked out; failed instances whose node has
//    not joined (NodeJoined; without it, only stockout failures, which never got a VM) are
//    deleted in one POST .../delete, and the target reported is lowered by them.
//  - IncreaseSize: GET, then PATCH {"sku": {"capacity": n}} with If-Match: <etag>; on 412 the
//    scale set is read again and the PATCH retried once. The new capacity may not pass the
//    pool's max. The operation is followed by later Refresh calls.
//  - DeleteNode: POST .../delete {"instanceIds": [id]} (forceDeletion=true when configured);
//    the providerID must name this pool's scale set. 404 is success. The scale set's capacity
//    drops with the instance.
//  - DecreaseTargetSize: deletes up to `delta` instances that have not joined, in this order:
//    Failed, then Creating, then the newest (highest instance id). "Joined" is NodeJoined, or
//    without it "provisioningState Succeeded". Capacity not yet backed by a listed instance is
//    given back with a PATCH. If fewer than `delta` could be cancelled, the rest is a
//    kConflict error naming how many (they may have joined: remove them with DeleteNode).
//  - PoolOf: the pool bound to the scale set in the node's providerID (case-insensitive).
// Pools with scaleDown.mode deallocate (MachineStopper; vmss_stopped.cc). A deallocated instance
// stays in the scale set and in sku.capacity, so for these pools:
//  - Refresh: instances whose power state is deallocated or deallocating are `stopped`; target is
//    sku.capacity minus them (and minus the failed ones deleted).
//  - IncreaseSize: lists the instances, checks running + delta against the pool's max, POSTs
//    .../start {"instanceIds": [...]} for up to `delta` stopped ones (highest instance id
//    first), and PATCHes the capacity for the rest only. A start that ARM refuses at once is
//    logged and its instances are created instead; a start whose operation fails leaves the
//    instance Failed, which Refresh deletes like any failed instance (the target drops, the
//    pods are planned again and the next increase creates).
//  - StopNode: POST .../deallocate {"instanceIds": [id]} (the providerID checked as for
//    DeleteNode); 404 is success.
//  - DeleteStopped: POST .../delete for the `count` stopped instances with the lowest ids.
//  - DecreaseTargetSize never cancels a stopped instance (it has no Node, but is not upcoming).
class VmssProvider final : public AzureProvider, public MachineStopper {
 public:
  VmssProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps);

  std::string_view Name() const override { return "azure-vmss"; }
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time now) override;
  std::string PoolOf(const model::Node& node) const override;
  Result<std::vector<model::Pool>> DiscoverPools(Time now) override;
  // MachineStopper.
  Result<void> StopNode(const std::string& pool, const model::Node& node, Time now) override;
  Result<void> DeleteStopped(const std::string& pool, int count, Time now) override;

  // The scale set bound to `pool`, or nullopt.
  std::optional<std::string> ScaleSetOf(const std::string& pool) const;

 private:
  struct ScaleSetView {
    nlohmann::json body;
    int capacity = 0;
    std::string etag;
    bool from_cache = false;
  };

  Result<std::optional<PoolSize>> RefreshPool(const model::Pool& pool, Time now) override;
  Result<void> BeforeRefresh(Time now) override;
  Result<void> Grow(const model::Pool& pool, int delta, Time now) override;
  Result<void> Shrink(const model::Pool& pool, int delta, Time now) override;

  Result<void> Discover(Time now, bool force);
  Result<std::string> Bound(const std::string& pool) const;
  std::string ScaleSetPath(const std::string& scale_set) const;
  Result<ScaleSetView> ReadScaleSet(const std::string& scale_set);
  Result<std::vector<VmssInstance>> ListInstances(const std::string& scale_set);
  // POST .../delete for `ids`; tracks the operation. 404: nothing to do.
  Result<void> DeleteInstances(const std::string& pool, const std::string& scale_set,
                               const std::vector<std::string>& ids, Time now);
  // PATCH the capacity (If-Match, one retry on 412) to `compute(current capacity)`.
  Result<void> SetCapacity(const std::string& pool, const std::string& scale_set,
                           const std::function<Result<int>(int)>& compute, Time now);
  bool Joined(const VmssInstance& instance) const;
  // The node's instance id, after checking that its providerID names this pool's scale set.
  Result<std::string> InstanceOf(const std::string& pool, const std::string& scale_set,
                                 const model::Node& node) const;
  // POST .../<action> ("start", "deallocate") {"instanceIds": ids}; tracks the operation.
  // 404: nothing to do.
  Result<void> PostInstances(const std::string& pool, const std::string& scale_set,
                             std::string_view action, const std::vector<std::string>& ids,
                             Time now);
  // Deallocate pools: starts up to `delta` stopped instances, then creates the rest.
  Result<void> GrowFromStopped(const model::Pool& pool, const std::string& scale_set, int delta,
                               Time now);

  std::map<std::string, std::string> bound_;  // pool -> scale set
  std::vector<nlohmann::json> discovered_;    // scale sets matching the discovery tags
  std::optional<Time> discovered_at_;
  std::set<std::string> warned_unbound_;
};

}  // namespace tidepool::cloud::azure
