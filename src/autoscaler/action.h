// What the decision loop asks its driver to do: one typed struct per kind of action, joined in
// a std::variant, so a driver reads facts from fields and enums and never parses a message.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/capacity_buffer.h"
#include "model/provisioning_request.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

// Raise the pool's target by `count`. Report Autoscaler::OnIncreaseResult.
struct IncreasePool {
  std::string pool;
  int count = 0;
  std::vector<std::string> pods;  // the pending pods ("namespace/name") it is for
  int warm = 0;                   // of `count`, nodes added for warm capacity (pools[].warm)
  std::string reason;             // why, in words, for logs
  // Consolidation's replace move: the node the one new node replaces (ReplacementTracker), the
  // first of them when it replaces several, or "".
  std::string replaces;
};

// Lower the target by `count`, cancelling requested nodes that have not joined the cluster
// (never a joined node). Report Autoscaler::OnDecreaseResult.
struct DecreaseTarget {
  std::string pool;
  int count = 0;
  std::string reason;
};

// The node actions name the node and its pool ("" when unmanaged).
//
// Add ToBeDeletedByClusterAutoscaler:NoSchedule. Report OnTaintResult; evictions wait until the
// taint is confirmed (the result, or the taint seen in an observation).
struct TaintNode {
  std::string node;
  std::string pool;
  std::string reason;
};

// Remove ToBeDeletedByClusterAutoscaler (the loop never cordons).
struct UntaintNode {
  std::string node;
  std::string pool;
  std::string reason;
};

// Add (mark) or remove (unmark) DeletionCandidateOfClusterAutoscaler:PreferNoSchedule.
struct MarkCandidate {
  std::string node;
  std::string pool;
  std::string reason;
};
struct UnmarkCandidate {
  std::string node;
  std::string pool;
  std::string reason;
};

// Evict each pod (policy/v1 Eviction) without waiting for it to go. Report OnEvictResult once
// per pod.
struct EvictPods {
  std::string node;
  std::string pool;
  planner::RemovalKind kind = planner::RemovalKind::kEmpty;
  std::vector<std::string> pods;
  std::string reason;
};

// How a removed node's machine goes (pools[].scaleDown.mode).
enum class RemovalMethod {
  kDelete,  // deleted
  kStop,    // stopped (deallocated) and kept for a fast restart (cloud::MachineStopper)
};
std::string_view RemovalMethodName(RemovalMethod method);  // "delete" | "stop"

// Delete (or stop) the instance, lowering the pool's target by one (as NodeGroup.DeleteNodes
// does), then the Node. Report OnDeleteResult.
struct DeleteNode {
  std::string node;
  std::string pool;
  planner::RemovalKind kind = planner::RemovalKind::kEmpty;
  std::string reason;
  // The removal evicted training pods because it paid (planner/disruption.h): its numbers.
  std::optional<planner::ConsolidationVerdict> consolidation;
  RemovalMethod method = RemovalMethod::kDelete;
};

// Delete `count` stopped machines of a deallocate pool, the longest-stopped first
// (cloud::MachineStopper::DeleteStopped). Fire and forget: the pool's stopped count in a later
// observation shows the result.
struct DeleteStopped {
  std::string pool;
  int count = 0;
  std::string reason;
};

// Set conditions on a ProvisioningRequest's status (through its status subresource, on a fresh
// read, resourceVersion as precondition; docs/kueue.md). Fire and forget: the loop decides from
// the conditions it observes, so a write that failed is made again at a later Step.
struct UpdateProvisioningRequest {
  std::string ns;
  std::string name;
  model::ProvisioningClass provisioning_class = model::ProvisioningClass::kOther;  // for metrics
  std::vector<model::Condition> conditions;
};

// Write a CapacityBuffer's status (podTemplateRef, replicas, podTemplateGeneration and the
// conditions given; through its status subresource, on a fresh read; docs/capacity-buffers.md).
// Fire and forget: the loop compares what it wants with the status it observes, so a write that
// failed is made again at a later Step.
struct UpdateCapacityBuffer {
  std::string ns;
  std::string name;
  model::BufferStatus status;
};

// The Kubernetes Event reasons the loop records (the Cluster Autoscaler's, plus WarmScaleUp).
enum class EventReason {
  kTriggeredScaleUp,
  kNotTriggerScaleUp,
  kScaleDown,
  kScaleDownFailed,
  kWarmScaleUp,
  kProvisioned,         // a ProvisioningRequest's capacity is there
  kProvisioningFailed,  // a ProvisioningRequest cannot be served
  kBufferNotReady,      // a CapacityBuffer does not resolve to a pod and a number of copies
  // Consolidation's replace move on the node it replaces: started (Normal), or given up
  // (Warning: the new node did not come up in time, or the move no longer fits or pays).
  kConsolidationReplace,
};
std::string_view EventReasonName(EventReason reason);

// What an Event is recorded on.
enum class EventObject {
  kPod,                  // object: "namespace/name"
  kNode,                 // object: the node's name
  kStatus,               // the tidepool-status ConfigMap; object: ""
  kProvisioningRequest,  // object: "namespace/name"
  kCapacityBuffer,       // object: "namespace/name"
};
std::string_view EventObjectKind(EventObject object);  // "Pod", "Node", "ConfigMap", ...

struct Event {
  EventObject object_kind = EventObject::kPod;
  std::string object;
  EventReason reason = EventReason::kScaleDown;
  std::string message;
  bool warning = false;  // event type Warning; Normal otherwise
  std::string pool;      // the pool of the node or scale-up it is about; "" when none
};

// Actions of one Step come in the order they must be carried out. Results that matter are
// reported back through the Autoscaler's On*Result methods; the others are fire-and-forget
// (their failures show up in a later observation and the loop corrects them, e.g. a node left
// tainted is untainted).
using Action = std::variant<IncreasePool, DecreaseTarget, TaintNode, UntaintNode, MarkCandidate,
                            UnmarkCandidate, EvictPods, DeleteNode, Event,
                            UpdateProvisioningRequest, DeleteStopped, UpdateCapacityBuffer>;

// The action's kind in one word ("IncreasePool", "Event", ...).
std::string_view ActionName(const Action& action);
// One line for logs, test failure messages and the simulator's decision digest, e.g.
// "IncreasePool gpu-spot +2 for [ns/a, ns/b] (...)".
std::string DescribeAction(const Action& action);

}  // namespace tidepool::autoscaler
