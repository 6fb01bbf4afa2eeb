#include "autoscaler/action.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tidepool::autoscaler {
namespace {

struct Name {
  std::string_view operator()(const IncreasePool&) const { return "IncreasePool"; }
  std::string_view operator()(const DecreaseTarget&) const { return "DecreaseTarget"; }
  std::string_view operator()(const TaintNode&) const { return "TaintNode"; }
  std::string_view operator()(const UntaintNode&) const { return "UntaintNode"; }
  std::string_view operator()(const MarkCandidate&) const { return "MarkCandidate"; }
  std::string_view operator()(const UnmarkCandidate&) const { return "UnmarkCandidate"; }
  std::string_view operator()(const EvictPods&) const { return "EvictPods"; }
  std::string_view operator()(const DeleteNode&) const { return "DeleteNode"; }
  std::string_view operator()(const Event&) const { return "Event"; }
  std::string_view operator()(const UpdateProvisioningRequest&) const {
    return "UpdateProvisioningRequest";
  }
  std::string_view operator()(const DeleteStopped&) const { return "DeleteStopped"; }
  std::string_view operator()(const UpdateCapacityBuffer&) const { return "UpdateCapacityBuffer"; }
};

// A node action: "TaintNode n1" or "TaintNode n1 (why)".
std::string DescribeNodeAction(std::string_view name, const std::string& node,
                               const std::string& reason) {
  return reason.empty() ? fmt::format("{} {}", name, node)
                        : fmt::format("{} {} ({})", name, node, reason);
}

struct Describe {
  std::string_view name;
  std::string operator()(const IncreasePool& a) const {
    return fmt::format("{} {} +{} for [{}] ({})", name, a.pool, a.count, fmt::join(a.pods, ", "),
                       a.reason);
  }
  std::string operator()(const DecreaseTarget& a) const {
    return fmt::format("{} {} -{} ({})", name, a.pool, a.count, a.reason);
  }
  std::string operator()(const DeleteStopped& a) const {
    return fmt::format("{} {} -{} ({})", name, a.pool, a.count, a.reason);
  }
  std::string operator()(const DeleteNode& a) const {
    std::string_view verb = a.method == RemovalMethod::kStop ? "StopNode" : name;
    return DescribeNodeAction(verb, a.node, a.reason);
  }
  std::string operator()(const EvictPods& a) const {
    return fmt::format("{} {} [{}]", name, a.node, fmt::join(a.pods, ", "));
  }
  std::string operator()(const Event& a) const {
    return fmt::format("{} {} {} {}{}: {}", name, EventObjectKind(a.object_kind), a.object,
                       EventReasonName(a.reason), a.warning ? " (Warning)" : "", a.message);
  }
  std::string operator()(const UpdateProvisioningRequest& a) const {
    std::vector<std::string> conditions;
    for (const model::Condition& c : a.conditions) {
      conditions.push_back(fmt::format("{}={} {}: {}", model::ProvisioningConditionName(c.type),
                                       model::ConditionStatusName(c.status), c.reason, c.message));
    }
    return fmt::format("{} {}/{} [{}]", name, a.ns, a.name, fmt::join(conditions, "; "));
  }
  std::string operator()(const UpdateCapacityBuffer& a) const {
    std::vector<std::string> conditions;
    for (const model::BufferCondition& c : a.status.conditions) {
      conditions.push_back(fmt::format("{}={} {}: {}", model::BufferConditionName(c.type),
                                       model::ConditionStatusName(c.status), c.reason, c.message));
    }
    return fmt::format("{} {}/{} replicas {} [{}]", name, a.ns, a.name,
                       a.status.replicas ? fmt::format("{}", *a.status.replicas) : "-",
                       fmt::join(conditions, "; "));
  }
  std::string operator()(const auto& a) const {  // the node actions
    return DescribeNodeAction(name, a.node, a.reason);
  }
};

}  // namespace

std::string_view EventReasonName(EventReason reason) {
  switch (reason) {
    case EventReason::kTriggeredScaleUp:
      return "TriggeredScaleUp";
    case EventReason::kNotTriggerScaleUp:
      return "NotTriggerScaleUp";
    case EventReason::kScaleDown:
      return "ScaleDown";
    case EventReason::kScaleDownFailed:
      return "ScaleDownFailed";
    case EventReason::kWarmScaleUp:
      return "WarmScaleUp";
    case EventReason::kProvisioned:
      return "Provisioned";
    case EventReason::kProvisioningFailed:
      return "ProvisioningFailed";
    case EventReason::kBufferNotReady:
      return "BufferNotReady";
    case EventReason::kConsolidationReplace:
      return "ConsolidationReplace";
  }
  return "?";
}

std::string_view EventObjectKind(EventObject object) {
  switch (object) {
    case EventObject::kPod:
      return "Pod";
    case EventObject::kNode:
      return "Node";
    case EventObject::kStatus:
      return "ConfigMap";
    case EventObject::kProvisioningRequest:
      return "ProvisioningRequest";
    case EventObject::kCapacityBuffer:
      return "CapacityBuffer";
  }
  return "?";
}

std::string_view RemovalMethodName(RemovalMethod method) {
  return method == RemovalMethod::kStop ? "stop" : "delete";
}

std::string_view ActionName(const Action& action) { return std::visit(Name{}, action); }

std::string DescribeAction(const Action& action) {
  const std::string_view name = ActionName(action);
  return std::visit(Describe{name}, action);
}

}  // namespace tidepool::autoscaler
