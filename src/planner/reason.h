// Why a pool cannot take a pending pod: a kind that code counts and branches on, and the words a
// person reads. Nothing downstream parses the words (metrics, `explain` and the status page
// switch on the kind).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/pool.h"
#include "model/resources.h"
#include "sched/fit.h"

namespace tidepool::planner {

enum class ReasonKind {
  // A scheduler filter refuses the pod on an empty node of the pool (sched::FitCode).
  kInsufficientResources,
  kTooManyPods,
  kTaint,
  kNodeAffinity,
  kNodeName,
  kNodeUnschedulable,
  kNodePorts,
  kTopologySpread,
  kPodAffinity,
  kPodAntiAffinity,
  kDeviceClaims,  // DynamicResources: the pod's ResourceClaims cannot be allocated there
  // The pool could host the pod but may not grow now.
  kBackoff,          // a recent scale-up of the pool failed or timed out
  kPoolMax,          // pools[].max
  kClusterMaxNodes,  // limits.maxNodes
  kClusterResource,  // limits.<resource>; PoolReason::resource says which
  kScaleUpLimit,     // scaleUp.maxNodesPerScaleUp, or no room left in this pass
  kGang,             // a gang member: the gang does not fit whole
};

struct PoolReason {
  ReasonKind kind = ReasonKind::kInsufficientResources;
  std::string text;
  model::ResourceId resource = 0;  // kClusterResource only
  // kGang only: the kind of the reason one of the members left over got (its `resource` above),
  // so `explain` can say what would unblock the gang; kScaleUpLimit when the pools had room
  // for only part of it.
  ReasonKind member_kind = ReasonKind::kScaleUpLimit;
  // kGang only: that member's own words ("pool gpu at max 3"), without the gang's.
  std::string member_text;

  friend bool operator==(const PoolReason&, const PoolReason&) = default;
};

// The reason a failed fit gives (`fit` must not fit).
PoolReason FromFit(const sched::FitResult& fit);

// The `reason` label of tidepool_unschedulable_pods: a short, bounded word per kind
// ("insufficient_resources", "pool_max", "cluster_limit", "gang", ...); the text never goes into
// a label.
std::string_view ReasonKindLabel(ReasonKind kind);

// A cluster's capacity in the resources its limits name (ClusterLimits::limited), summed as nodes
// are counted: the only part of it GrowthLimit reads. Without resource limits it sums nothing, so
// counting 50,000 nodes costs no Resources arithmetic.
class LimitedCapacity {
 public:
  LimitedCapacity() = default;
  explicit LimitedCapacity(const model::ClusterLimits& limits)
      : limited_(limits.limited), sums_(limits.limited.size(), 0) {}

  // Adds (sign 1) or takes away (sign -1) a node's capacity.
  void Add(const model::Resources& capacity, int sign = 1) {
    for (size_t k = 0; k < limited_.size(); ++k) sums_[k] += sign * capacity.Get(limited_[k]);
  }
  // The sum for a limited resource; 0 for any other.
  int64_t Get(model::ResourceId id) const {
    for (size_t k = 0; k < limited_.size(); ++k)
      if (limited_[k] == id) return sums_[k];
    return 0;
  }

 private:
  std::vector<model::ResourceId> limited_;
  std::vector<int64_t> sums_;  // per limited_ entry
};

// Whether `pool` has reached its max with `pool_nodes` nodes: the one limit of GrowthLimit that
// reads nothing but the pool.
inline bool AtPoolMax(const model::Pool& pool, int64_t pool_nodes) {
  return pool_nodes >= pool.max;
}

// Why `pool`, with `pool_nodes` nodes (registered, upcoming and planned), may not take one more
// in a cluster of `cluster_nodes` nodes with `cluster_capacity` and `more` about to come: its max
// (kPoolMax), limits.maxNodes (kClusterMaxNodes) or a resource limit its template would pass
// (kClusterResource). Nothing when it may. Scale-up and consolidation's replace move both ask.
std::optional<PoolReason> GrowthLimit(const model::Pool& pool, int64_t pool_nodes,
                                      const model::ClusterLimits& limits, int64_t cluster_nodes,
                                      const LimitedCapacity& cluster_capacity,
                                      const model::Resources& more);

}  // namespace tidepool::planner
