// CloudProvider: the narrow interface between the live controller and whatever creates and
// removes machines (kwok Node objects locally, Azure scale sets and agent pools in production).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "model/node.h"

namespace tidepool::cloud {

// One configured pool as the provider sees it at a refresh.
struct PoolSize {
  std::string pool;
  int target = 0;         // the desired size the provider is working towards
  int instances = 0;      // machines that exist (joined the cluster or not), failed ones excluded
  bool stockout = false;  // the provider cannot add capacity to this pool now
  std::string stockout_reason;  // e.g. "SkuNotAvailable: ...", shown in status and events
  // Stopped (deallocated) machines kept for a fast restart (pools[].scaleDown.mode deallocate),
  // counted in neither `target` nor `instances`. Always 0 for other pools.
  int stopped = 0;

  bool operator==(const PoolSize&) const = default;
};

// Contract:
//  - Pools are the AutoscalerConfig's pools, by name; a name the provider does not know is a
//    kNotFound error.
//  - Refresh() reads the provider's current view (the controller calls it once per scan interval
//    and after its own actions; passes in between reuse the answer) and returns one
//    PoolSize per configured pool. The other calls change it; none of them blocks until the
//    machines exist.
//  - IncreaseSize raises the target by `delta` > 0 and fails (kInvalidArgument) if that would
//    pass the pool's max; a stockout known at call time is a kUnavailable error whose message
//    says so. DecreaseTargetSize lowers the target by `delta` > 0, only cancelling machines
//    that have not joined the cluster. DeleteNode removes that node's machine and lowers the
//    target by one (Cluster Autoscaler's NodeGroup.DeleteNodes); a machine already gone is
//    success.
//  - PoolOf maps a Node to its pool from provider data (providerID, instance tags): "" when
//    the node is not one of this provider's pools. It answers from what Refresh and the provider's
//    own calls read, never from background work of its own: the controller, which refreshes after
//    its calls, versions its observations by that (controller/provider_epoch.h).
//  - Errors carry the provider's words (HTTP status, ARM error code); transient ones are
//    kUnavailable or kThrottled. kConflict: the provider's state changed under the call (another
//    writer) and nothing was changed; the caller looks again (Refresh) before retrying. The
//    provider keeps its durable state where a restarted controller finds it again (the cloud, or
//    the API server for kwok), so a restart never loses a requested machine nor requests one twice.
// Thread-safety: implementations are called from the controller's one acting thread; they may
// run their own background work.
class CloudProvider {
 public:
  virtual ~CloudProvider() = default;

  virtual std::string_view Name() const = 0;
  virtual Result<std::vector<PoolSize>> Refresh(Time now) = 0;
  virtual Result<void> IncreaseSize(const std::string& pool, int delta, Time now) = 0;
  virtual Result<void> DecreaseTargetSize(const std::string& pool, int delta, Time now) = 0;
  virtual Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time now) = 0;
  virtual std::string PoolOf(const model::Node& node) const = 0;
};

// An optional capability (its own interface; a provider that has it derives from both): pools
// whose machines can be stopped instead of deleted and started again, for pools with
// scaleDown.mode deallocate (docs/configuration.md). The config loader allows that mode only
// with provider types that implement this.
// Contract, for a deallocate pool (other pools behave as CloudProvider says):
//  - StopNode stops (deallocates) the node's machine instead of deleting it: compute is
//    released, the disk kept. Like DeleteNode it lowers the target by one; the pool's stopped
//    count (PoolSize::stopped) rises by one. The caller then deletes the Node object, as after
//    DeleteNode; a restarted machine registers again. A machine already stopped is success.
//  - IncreaseSize starts stopped machines first (up to `delta`, the most recently stopped
//    first) and creates only the rest. A stopped machine that fails to start is handled like a
//    failed create (deleted, the target lowered); the pods are planned again and get new ones.
//  - DeleteStopped deletes up to `count` > 0 stopped machines, the longest-stopped first,
//    lowering the stopped count; fewer stopped than `count` deletes them all (success).
//  - `max` bounds target (running and requested machines); stopped machines do not count against
//    it. How many may be stopped is the caller's decision (pools[].scaleDown.maxStopped).
class MachineStopper {
 public:
  virtual ~MachineStopper() = default;

  virtual Result<void> StopNode(const std::string& pool, const model::Node& node, Time now) = 0;
  virtual Result<void> DeleteStopped(const std::string& pool, int count, Time now) = 0;
};

}  // namespace tidepool::cloud
