#include "planner/reason.h"

#include <fmt/format.h>

namespace tidepool::planner {
namespace {

ReasonKind KindOfFit(const sched::FitResult& fit) {
  switch (fit.code) {
    case sched::FitCode::kNodeResources:
      return fit.resource == model::kPods ? ReasonKind::kTooManyPods
                                          : ReasonKind::kInsufficientResources;
    case sched::FitCode::kNodeUnschedulable:
      return ReasonKind::kNodeUnschedulable;
    case sched::FitCode::kNodeName:
      return ReasonKind::kNodeName;
    case sched::FitCode::kTaintToleration:
      return ReasonKind::kTaint;
    case sched::FitCode::kNodeAffinity:
      return ReasonKind::kNodeAffinity;
    case sched::FitCode::kNodePorts:
      return ReasonKind::kNodePorts;
    case sched::FitCode::kTopologySpreadMissingLabel:
    case sched::FitCode::kTopologySpread:
      return ReasonKind::kTopologySpread;
    case sched::FitCode::kPodAffinity:
      return ReasonKind::kPodAffinity;
    case sched::FitCode::kPodAntiAffinity:
    case sched::FitCode::kExistingAntiAffinity:
      return ReasonKind::kPodAntiAffinity;
    case sched::FitCode::kDynamicResources:
      return ReasonKind::kDeviceClaims;
    case sched::FitCode::kFits:
      break;
  }
  return ReasonKind::kInsufficientResources;  // not reached: a fit has no reason
}

}  // namespace

PoolReason FromFit(const sched::FitResult& fit) { return {KindOfFit(fit), fit.reason}; }

std::string_view ReasonKindLabel(ReasonKind kind) {
  switch (kind) {
    case ReasonKind::kInsufficientResources:
      return "insufficient_resources";
    case ReasonKind::kTooManyPods:
      return "too_many_pods";
    case ReasonKind::kTaint:
      return "taint";
    case ReasonKind::kNodeAffinity:
      return "node_affinity";
    case ReasonKind::kNodeName:
      return "node_name";
    case ReasonKind::kNodeUnschedulable:
      return "node_unschedulable";
    case ReasonKind::kNodePorts:
      return "node_ports";
    case ReasonKind::kTopologySpread:
      return "topology_spread";
    case ReasonKind::kPodAffinity:
      return "pod_affinity";
    case ReasonKind::kPodAntiAffinity:
      return "pod_anti_affinity";
    case ReasonKind::kDeviceClaims:
      return "device_claims";
    case ReasonKind::kBackoff:
      return "backoff";
    case ReasonKind::kPoolMax:
      return "pool_max";
    case ReasonKind::kClusterMaxNodes:
    case ReasonKind::kClusterResource:
      return "cluster_limit";
    case ReasonKind::kScaleUpLimit:
      return "scale_up_limit";
    case ReasonKind::kGang:
      return "gang";
  }
  return "other";
}

std::optional<PoolReason> GrowthLimit(const model::Pool& pool, int64_t pool_nodes,
                                      const model::ClusterLimits& limits, int64_t cluster_nodes,
                                      const LimitedCapacity& cluster_capacity,
                                      const model::Resources& more) {
  if (AtPoolMax(pool, pool_nodes)) {
    return PoolReason{ReasonKind::kPoolMax, fmt::format("pool {} at max {}", pool.name, pool.max)};
  }
  if (limits.max_nodes && cluster_nodes >= *limits.max_nodes) {
    return PoolReason{ReasonKind::kClusterMaxNodes,
                      fmt::format("cluster limit maxNodes {} reached", *limits.max_nodes)};
  }
  const model::Resources& cap = pool.template_node.capacity;
  for (model::ResourceId id : limits.limited) {
    int64_t limit = limits.resources.Get(id);
    if (cap.Get(id) > 0 && cluster_capacity.Get(id) + more.Get(id) + cap.Get(id) > limit) {
      return PoolReason{ReasonKind::kClusterResource,
                        fmt::format("cluster limit {} {} reached", model::ResourceName(id),
                                    model::FormatAmount(id, limit)),
                        id};
    }
  }
  return std::nullopt;
}

}  // namespace tidepool::planner
