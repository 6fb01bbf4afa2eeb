#include "planner/explain.h"

#include <fmt/format.h>

#include "model/selector.h"

namespace tidepool::planner {
namespace {

std::string MissingToleration(const model::Pod& pod, const model::Pool& pool,
                              const std::string& reason) {
  const model::Taint* taint =
      model::FindUntoleratedTaint(pool.template_node.taints, pod.tolerations);
  if (taint == nullptr) return reason;
  return fmt::format(
      "pool {} lacks a toleration for taint {}={}:{} (the pod needs a toleration for it, or use a "
      "pool without the taint)",
      pool.name, taint->key, taint->value, model::TaintEffectName(taint->effect));
}

std::string SelectorMismatch(const model::Pod& pod, const model::Pool& pool) {
  std::string want;
  for (const auto& [k, v] : pod.node_selector) {
    const std::string* have = pool.template_node.meta.Label(k);
    if (have == nullptr || *have != v) {
      want += fmt::format("{}{}={} (pool has {})", want.empty() ? "" : ", ", k, v,
                          have ? *have : std::string("no such label"));
    }
  }
  if (want.empty()) want = "its required node affinity";
  return fmt::format("pool {} does not match the pod's node selector/affinity: {}", pool.name,
                     want);
}

// What would unblock a pool that could host the pod but may not grow now; "" for the rest.
std::string Remedy(ReasonKind kind, model::ResourceId resource, const model::Pool& pool) {
  switch (kind) {
    case ReasonKind::kPoolMax:
      return fmt::format(" (raise pools[{}].max to allow more nodes)", pool.name);
    case ReasonKind::kBackoff:
      return " (a recent scale-up of this pool failed or timed out; other pools are tried "
             "meanwhile)";
    case ReasonKind::kClusterMaxNodes:
      return " (raise limits.maxNodes)";
    case ReasonKind::kClusterResource:
      return fmt::format(" (raise limits.{})", model::ResourceName(resource));
    default:
      return "";
  }
}

}  // namespace

std::string ExplainReason(const model::Pod& pod, const model::Pool& pool,
                          const PoolReason& reason) {
  const std::string& r = reason.text;
  switch (reason.kind) {
    case ReasonKind::kTaint:
      return MissingToleration(pod, pool, r);
    case ReasonKind::kNodeAffinity:
      return SelectorMismatch(pod, pool);
    case ReasonKind::kInsufficientResources:
    case ReasonKind::kTooManyPods:
      return fmt::format(
          "a new node of pool {} is too small: {} (pod requests {}, node allocatable {})",
          pool.name, r, pod.requests.ToString(), pool.template_node.allocatable.ToString());
    case ReasonKind::kDeviceClaims:
      return fmt::format(
          "a new node of pool {} {}: {} (give the pool template.devices its "
          "claims can use, or change the claim's selectors)",
          pool.name,
          pool.devices.empty() ? "has no devices (template.devices is empty)"
                               : "cannot hold the pod's claims",
          r);
    case ReasonKind::kGang:
      return r + Remedy(reason.member_kind, reason.resource, pool);
    default:
      return r + Remedy(reason.kind, reason.resource, pool);
  }
}

}  // namespace tidepool::planner
