// Pool and AutoscalerConfig: the values of tidepool's configuration (docs/configuration.md), with
// defaults. Loading and validation live in kube/config (autoscaler_config.h); plain values here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "model/dra.h"
#include "model/node.h"
#include "model/resources.h"

namespace tidepool::model {

inline constexpr std::string_view kLabelPool = "tidepool.dev/pool";

enum class CapacityType { kOnDemand, kSpot };
std::string_view CapacityTypeName(CapacityType t);

// Warm capacity of a pool (`pools[].warm`): room kept ready beyond what pods ask for, so a burst
// does not wait for nodes to boot. The decision loop turns it into placeholder demand.
struct WarmConfig {
  int32_t spare_nodes = 0;  // idle ready nodes kept beyond demand
  // Machines kept created and stopped for a fast restart (scaleDown.mode deallocate): tidepool
  // creates nodes for the shortfall and scale-down stops them once they are idle.
  int32_t stopped_nodes = 0;
  Resources headroom;                    // free room kept for this much extra request
  std::vector<ResourceId> headroom_set;  // which ids in `headroom` are set
  // Pre-warming ahead of the bursts the loop has learned (autoscaler/demand_profile.h).
  struct Predictive {
    bool enabled = false;
    Duration horizon = std::chrono::hours(1);  // how far ahead a burst is looked for
    double max_cost_per_day = 0;               // pre-warm spend allowed in any 24 h
    double wait_value_per_gpu_hour = 0;        // what an hour of a GPU waiting is worth
  } predictive;

  bool Any() const {
    return spare_nodes > 0 || stopped_nodes > 0 || !headroom_set.empty() || predictive.enabled;
  }
};

// `template.devices[]`: devices each new node of a pool has, as its DRA driver will publish them
// in a ResourceSlice, so pods with ResourceClaims can scale a pool from zero.
struct TemplateDevices {
  std::string driver;
  int32_t count = 1;
  DeviceAttributes attributes;  // qualified names (the driver's domain when none is given)
  DeviceCapacity capacity;
};

// The ResourceSlices a new node of `pool_name` publishes for `devices`: one per driver, pool
// "<pool_name>-<driver>", node-local (nodeName `node_name`), devices "<driver's first label>-<k>"
// numbered per driver.
std::vector<ResourceSlice> TemplateSlices(std::string_view pool_name, std::string_view node_name,
                                          const std::vector<TemplateDevices>& devices);

// What scale-down does with a pool's machines (`pools[].scaleDown`, docs/configuration.md).
enum class ScaleDownMode {
  kDelete,      // delete the machine (the default)
  kDeallocate,  // stop (deallocate) it and keep it for a fast restart, up to max_stopped
};
std::string_view ScaleDownModeName(ScaleDownMode mode);  // "delete" | "deallocate"

struct PoolScaleDown {
  ScaleDownMode mode = ScaleDownMode::kDelete;
  // kDeallocate: at most this many stopped machines are kept; a node removed beyond them is
  // deleted. Defaults to the pool's max.
  int32_t max_stopped = 0;
  bool Deallocates() const { return mode == ScaleDownMode::kDeallocate; }
};

struct Pool {
  std::string name;
  int32_t min = 0;
  int32_t max = 0;
  CapacityType capacity_type = CapacityType::kOnDemand;
  double price_per_hour = 0;
  int32_t priority = 0;
  std::string instance_type;
  std::optional<Duration> provision_timeout;  // overrides scaleUp.provisionTimeout
  std::optional<Duration> boot_delay;         // kwok / simulation
  std::optional<Duration> restart_delay;      // kwok: a stopped node coming back (deallocate)
  // The node this pool creates: labels (including tidepool.dev/pool), taints, capacity and
  // allocatable (equal to capacity unless the config says otherwise), ready.
  Node template_node;
  std::vector<TemplateDevices> devices;
  // TemplateSlices(name, template_node's name, devices): what the planner gives template nodes.
  std::vector<ResourceSlice> device_slices;
  WarmConfig warm;
  PoolScaleDown scale_down;
};

struct ProviderConfig {
  std::string type = "kwok";  // kwok | azure-vmss | aks | azure-vms | clusterapi
  std::optional<Duration> boot_delay;
  std::vector<std::string> unavailable_pools;
  // Provider-specific keys the core does not interpret (Azure settings), kept as text pairs.
  std::map<std::string, std::string> settings;
};

struct ClusterLimits {
  std::optional<int32_t> max_nodes;
  Resources resources;              // only the resources named in the config are limited
  std::vector<ResourceId> limited;  // which ids in `resources` are set
};

struct ScaleUpConfig {
  std::vector<std::string> expanders = {"priority", "least-waste"};
  Duration provision_timeout = std::chrono::minutes(15);
  Duration backoff_initial = std::chrono::minutes(5);
  Duration backoff_max = std::chrono::minutes(30);
  int32_t expendable_priority_cutoff = -10;
  Duration batch_idle = std::chrono::seconds(1);
  Duration batch_max = std::chrono::seconds(10);
  int32_t max_nodes_per_scale_up = 1000;
  uint64_t random_seed = 1;
  // scaleUp.balanceZones: pools that differ only in their zone (same shapes and prices, once
  // flexible families are formed) are zone twins, and one estimate opens its new nodes across
  // them, each in the twin with the fewest nodes that takes the pod, as the Cluster Autoscaler's
  // --balance-similar-node-groups does; pods bound to a zone still go where they must, and a
  // gang's nodes stay in one zone. Off: each zone is a candidate of its own and a round fills one
  // zone.
  bool balance_zones = true;
  // scaleUp.provisioningRequests.bookingTime: how long a Provisioned ProvisioningRequest's
  // capacity stays booked (docs/kueue.md).
  Duration booking_time = std::chrono::minutes(10);
};

// Consolidation of nodes that run training (docs/consolidation.md): a running training pod is
// evicted only when what removing its node saves over the horizon exceeds, by `safety_factor`,
// the work the eviction throws away.
struct ConsolidationConfig {
  bool enabled = true;  // off: running training pods are never evicted
  double safety_factor = 2.0;
  // What a restart costs besides the lost work (rescheduling, image pull, loading data).
  Duration restart_delay = std::chrono::minutes(2);
  // The savings are counted over at most this long (expected remaining runtimes are uncertain).
  Duration max_horizon = std::chrono::hours(6);
  // A candidate whose pods do not all fit on the nodes that stay may be replaced by one node of
  // a cheaper pool that takes the rest, Ready before anything is evicted. Off by default: on the
  // Alibaba trace it evicted more and saved nothing (docs/performance.md).
  bool replace = false;
};

struct ScaleDownConfig {
  bool enabled = true;
  double utilization_threshold = 0.5;
  double gpu_utilization_threshold = 0.5;
  Duration unneeded_time = std::chrono::minutes(10);
  Duration delay_after_add = std::chrono::minutes(10);
  int32_t max_empty_bulk_delete = 10;
  int32_t max_non_empty_per_pool = 1;
  // The most candidates with pods to move one unneeded pass weighs (nodes found unneeded before
  // first, then the others in turn); 0: every candidate (docs/configuration.md).
  int32_t candidates_per_pass = 100;
  Duration max_pod_eviction_time = std::chrono::minutes(2);
  // Unneeded nodes carry the DeletionCandidateOfClusterAutoscaler:PreferNoSchedule taint while
  // they wait out unneededTime, so the scheduler prefers other nodes (docs/annotations.md).
  bool mark_candidates = false;
  ConsolidationConfig consolidation;
};

struct AutoscalerConfig {
  ProviderConfig provider;
  ClusterLimits limits;
  ScaleUpConfig scale_up;
  ScaleDownConfig scale_down;
  Duration scan_interval = std::chrono::seconds(10);
  std::vector<Pool> pools;

  const Pool* FindPool(std::string_view name) const {
    for (const auto& p : pools)
      if (p.name == name) return &p;
    return nullptr;
  }
};

}  // namespace tidepool::model
