// Status: what the decision loop reports about itself (per pool sizes and backoffs, the last
// scale-up and scale-down, unneeded nodes), for the status ConfigMap, the status page and explain.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

struct PoolStatus {
  std::string name;
  int min = 0;
  int max = 0;
  // The provider's desired size as the loop counts it: the observed target, or what the loop's
  // own increases, cancellations and deletions make it while the provider has not caught up.
  int target = 0;
  int registered = 0;  // Node objects of the pool (excluding nodes the loop is deleting)
  int ready = 0;       // registered, Ready, and with their GPUs when the template has GPUs
  // What the planner is told will come: requested and not registered, plus registered nodes
  // still starting (not Ready, or GPU allocatable still 0) within the provision timeout.
  int upcoming = 0;
  std::optional<Time> backoff_until;  // set while the pool may not grow
  std::string backoff_reason;
  bool stockout = false;  // the provider reported no capacity at the last step
  // Stopped machines (pools[].scaleDown.mode deallocate; zero and empty for other pools).
  bool deallocate = false;
  int stopped = 0;
  int max_stopped = 0;
  std::string stopped_reason;  // the last stop / delete / trim decision in words
  // Warm capacity (pools[].warm); zero and empty when the pool has none.
  bool warm = false;
  int warm_spare_nodes = 0;    // warm.spareNodes
  int warm_stopped_nodes = 0;  // warm.stoppedNodes
  std::string warm_headroom;   // warm.headroom in words, e.g. "nvidia.com/gpu 4"
  bool warm_predictive = false;
  // GPUs (CPU cores) requested by pods on the pool's nodes, and by pending pods a scale-up of
  // the pool is for, now.
  double warm_demand = 0;
  double warm_predicted = 0;   // the largest demand expected within the horizon
  double warm_confidence = 0;  // of that prediction, 0..1
  std::optional<Time> warm_predicted_at;
  int warm_prewarm_nodes = 0;  // idle nodes held for the predicted burst at the last pass
  double warm_spend_24h = 0;   // pre-warm spend committed in the last 24 hours
  double warm_max_cost_per_day = 0;
  std::string warm_reason;  // the last warm decision in words
};

struct ScaleUpRecord {
  Time time{};
  std::string pool;
  int from = 0;
  int to = 0;
  // namespace/name of the pods it is for; a ProvisioningRequest's pods as one
  // "provreq/namespace/name" (ShownRequest)
  std::vector<std::string> pods;
  std::string reason;  // the expander chain's words
};

struct ScaleDownRecord {
  Time time{};
  std::string node;
  std::string pool;
  std::string outcome;  // "started", "deleted", "stopped" or "failed"
  std::string reason;   // why the node went (or why it failed)
};

// An unneeded node whose removal waits for a training pod's next checkpoint (consolidation's
// verdict): it goes right after `at`, once unneeded for scaleDown.unneededTime too.
struct CheckpointWait {
  std::string pod;  // namespace/name
  Time at{};
};

struct UnneededNode {
  std::string node;
  Time since{};
  std::optional<CheckpointWait> waiting;
};

// A node between taint and deletion.
struct RemovalStatus {
  std::string node;
  std::string pool;
  std::string phase;  // "tainting", "draining" or "deleting"
  Time started{};
  int pods_left = 0;  // pods not evicted yet
};

// A CapacityBuffer as the loop served it at the last Step (docs/capacity-buffers.md).
struct BufferStatusLine {
  std::string buffer;  // namespace/name
  std::string source;  // "PodTemplate ns/name" or "Deployment ns/name"; "" when not resolved
  std::optional<int32_t> replicas;
  std::string ready;               // ReadyForProvisioning: "True Resolved: ..." or "False ...: why"
  std::string provisioning;        // Provisioning likewise; "" before a plan decided it
  std::vector<std::string> pools;  // pools a scale-up grew for its copies at the last plan
};

// The Keeps of one scale-down pass, shared and never null. A status is taken at every pass
// (metrics, the status page) and a large cluster has a Keep per node: they are not copied.
using KeptNodes = std::shared_ptr<const std::vector<planner::Keep>>;
// An empty list, shared.
KeptNodes NoKeptNodes();
// The pending pods no scale-up helps, shared in the same way: a status is taken at every pass,
// and with thousands of pods waiting for a quota the list is long and seldom changes.
using UnschedulablePods = std::shared_ptr<const std::vector<planner::Unschedulable>>;
UnschedulablePods NoUnschedulablePods();

struct Status {
  std::optional<Time> last_step;  // unset before the first Step
  std::vector<PoolStatus> pools;  // in config order
  std::optional<ScaleUpRecord> last_scale_up;
  std::optional<ScaleDownRecord> last_scale_down;
  std::vector<UnneededNode> unneeded;   // node-name order
  std::vector<RemovalStatus> removals;  // node-name order
  // Managed nodes that are not unneeded at the last scale-down pass, with why (node order).
  KeptNodes kept = NoKeptNodes();
  int pending_pods = 0;
  // Pods that wait for a node but are held by scheduling gates (spec.schedulingGates, e.g.
  // Kueue's admission gate): not in pending_pods, and no scale-up is planned for them.
  int gated_pods = 0;
  std::optional<Time> batch_open_since;  // a scale-up batch window is open
  // From the last scale-up plan, pods still pending at the last Step (pod-key order): those no
  // scale-up helps, with the reason per pool, and those that will land on existing or upcoming
  // nodes (nothing to do for them). A ProvisioningRequest's stand-in pods appear once, as
  // "provreq/namespace/name" (the name `tidepool explain` takes).
  UnschedulablePods unschedulable = NoUnschedulablePods();
  std::vector<std::string> waiting_for_capacity;
  std::vector<BufferStatusLine> buffers;  // CapacityBuffers served, in key order
};

// One line about a pool's warm capacity (spare, headroom, prediction, spend, last reason).
std::string FormatWarm(const PoolStatus& pool);

// One line about a CapacityBuffer: "buffer/ns/name: 2 pod(s) of PodTemplate ns/t; ready: ...;
// provisioning: ...".
std::string FormatBuffer(const BufferStatusLine& buffer);

// A readable multi-line rendering (the body of the tidepool-status ConfigMap).
std::string FormatStatus(const Status& status);

}  // namespace tidepool::autoscaler
