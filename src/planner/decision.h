// The decisions a planning pass produces, each with the reasons a person reads in
// `tidepool plan`, `explain`, Events and the status. Plain values; deterministic order.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/consolidation_verdict.h"
#include "planner/reason.h"

namespace tidepool::planner {

// Grow `pool` by `add` nodes for `pods` (namespace/name keys).
struct ScaleUp {
  std::string pool;
  int add = 0;
  std::vector<std::string> pods;
  std::string reason;  // why this pool (the expander chain's words)
  int warm_add = 0;    // of `add`: nodes for warm placeholders only (PlannerInput::placeholders)
};

// A pending pod that no scale-up helps, with the reason per pool.
struct Unschedulable {
  std::string pod;
  std::map<std::string, PoolReason> reasons;  // pool -> reason
};

// One node a scale-up adds, with the pending pods the plan puts on it.
struct NewNode {
  std::string pool;
  std::vector<std::string>
      pods;  // namespace/name, sorted; DaemonSet and warm placeholder pods not listed
};

struct ScaleUpPlan {
  std::vector<ScaleUp> scale_ups;  // ordered by pool name
  // The nodes of scale_ups one by one, in the order the pass opened them (a node's pods may have
  // joined it in a later round). Their counts per pool are scale_ups' `add`. Only with
  // ScaleUpOptions::list_new_nodes.
  std::vector<NewNode> new_nodes;
  std::vector<Unschedulable> unschedulable;  // ordered by pod key
  // Pending pods that fit on existing or upcoming nodes; nothing to do for them.
  std::vector<std::string> fits_existing;
  // Of those, gang members: the node each was placed on (an upcoming node's name is made up and
  // names no Node), so a caller can hold the room (ProvisioningRequest bookings).
  std::map<std::string, std::string> gang_nodes;
  // Pools whose warm placeholders could not all be placed, with why (e.g. "pool gpu at max 4").
  std::map<std::string, std::string> warm_unmet;
};

enum class RemovalKind { kEmpty, kUnderutilized };
// "empty" or "underutilized": the plan JSON's scaleDown reason, the metrics label, log words.
inline std::string_view RemovalKindName(RemovalKind kind) {
  return kind == RemovalKind::kEmpty ? "empty" : "underutilized";
}

struct ScaleDown {
  std::string node;
  std::string pool;
  RemovalKind kind = RemovalKind::kEmpty;
  std::vector<std::string> evict;  // pods to evict, namespace/name
  std::string detail;              // e.g. "utilization 0.21 < 0.5 (cpu)"
  // Set when the node runs training pods: why evicting them pays.
  std::optional<ConsolidationVerdict> consolidation;
  // The replace move (docs/consolidation.md): one new node of `replacement_pool` takes
  // `replacement_pods` (those no node that stays holds); the node goes only once that node is
  // Ready.
  std::string replacement_pool;
  std::vector<std::string> replacement_pods;
};

struct Keep {
  std::string node;
  std::string reason;
  // Set when the node runs training pods that consolidation weighed (whatever kept the node).
  std::optional<ConsolidationVerdict> consolidation;
};

struct ScaleDownPlan {
  std::vector<ScaleDown> scale_downs;
  std::vector<Keep> keep;  // managed nodes that are not removable, with why
};

}  // namespace tidepool::planner
