// The decisions a planning pass produces, each with the reasons a person reads in
// `tidepool plan`, `explain`, Events and the status. Plain values; deterministic order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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

// Why a node goes: it runs no pods that move, it is below its utilization threshold, or the new
// node of consolidation's replace move is Ready to take its pods (whatever its utilization).
enum class RemovalKind { kEmpty, kUnderutilized, kReplaced };
// "empty", "underutilized" or "replaced": the plan JSON's scaleDown reason, the metrics label, log
// words.
inline std::string_view RemovalKindName(RemovalKind kind) {
  switch (kind) {
    case RemovalKind::kEmpty:
      return "empty";
    case RemovalKind::kUnderutilized:
      return "underutilized";
    case RemovalKind::kReplaced:
      return "replaced";
  }
  return "unknown";
}
// Whether the removal evicts pods (a drain), which maxNonEmptyPerPool counts.
inline bool Drains(RemovalKind kind) { return kind != RemovalKind::kEmpty; }

// Utilization of a node as scale-down judges it. A node with allocatable GPUs is judged by
// GPUs requested / allocatable (idle GPUs are waste even when CPU pods keep the node warm);
// any other node by max(cpu, memory) requested / allocatable. Only kMove pods count. Devices of
// Dynamic Resource Allocation count as GPUs: `devices` on the node, `devices_allocated` of them
// allocated to claims (an allocated device is in use whoever holds it).
struct NodeUtilization {
  bool gpu = false;
  double value = 0;             // the ratio compared with the threshold
  std::string_view resource;    // "cpu", "memory" or "gpu"
  int64_t gpu_requested = 0;    // when gpu
  int64_t gpu_allocatable = 0;  // when gpu
};

// A node kept because its utilization is at or above its threshold.
struct BusyNode {
  NodeUtilization utilization;
  double threshold = 0;
};

struct ScaleDown {
  std::string node;
  std::string pool;
  RemovalKind kind = RemovalKind::kEmpty;
  std::vector<std::string> evict;  // pods to evict, namespace/name
  // The node's utilization against its threshold: the numbers, worded by Detail() (a pass
  // chooses the same unneeded nodes again every scan, and their words are read only when one
  // of them goes).
  NodeUtilization utilization;
  double threshold = 0;
  // Set when the node runs training pods: why evicting them pays.
  std::optional<ConsolidationVerdict> consolidation;
  // The replace move (docs/consolidation.md): one new node of `replacement_pool` takes
  // `replacement_pods` (those no node that stays holds); the node goes only once that node is
  // Ready.
  std::string replacement_pool;
  std::vector<std::string> replacement_pods;
  // When one new node replaces several nodes: all of them (this one included), in plan order.
  // They go together once that one node is Ready.
  std::vector<std::string> replacement_group;

  // "utilization 0.21 < 0.5 (cpu)", with "; " and the consolidation verdict's words after it
  // when there is one.
  std::string Detail() const;
};

struct Keep {
  std::string node;
  // Why, in words; when `busy` is set, what follows the utilization (or nothing).
  std::string text;
  // Kept for its utilization: the numbers. Most managed nodes of a busy cluster stay for this at
  // every pass, so they are worded only when Reason() is asked.
  std::optional<BusyNode> busy;
  // Set when the node runs training pods that consolidation weighed (whatever kept the node).
  // Behind a pointer: the plan lists every managed node, and most have none.
  std::shared_ptr<const ConsolidationVerdict> consolidation;
  // The verdict kept the node: its words follow `text` (worded, like `busy`, only when asked).
  bool verdict_says = false;
  // Not weighed: the pass's bound (scaleDown.candidatesPerPass, this number) was reached before its
  // turn. 0: weighed. Worded when asked: a bounded pass on a large cluster leaves thousands out.
  uint32_t waits_turn = 0;

  // "utilization 0.83 >= threshold 0.5 (cpu)", "; " and `text` (with the verdict's words when
  // verdict_says) after it when both are set.
  std::string Reason() const;
  // Replaces the reason with `words`.
  void Say(std::string words) {
    text = std::move(words);
    busy.reset();
    verdict_says = false;
    waits_turn = 0;
  }
};

// A verdict as Keep::consolidation holds it (null for none).
inline std::shared_ptr<const ConsolidationVerdict> ShareVerdict(
    std::optional<ConsolidationVerdict> verdict) {
  if (!verdict) return nullptr;
  return std::make_shared<const ConsolidationVerdict>(std::move(*verdict));
}

struct ScaleDownPlan {
  std::vector<ScaleDown> scale_downs;
  std::vector<Keep> keep;  // managed nodes that are not removable, with why
  // A pass bounded by ScaleDownOptions::turn: where the next pass's turn starts (CandidateTurn::
  // after); "" when the pass weighed every candidate.
  std::string turn_ends_at;
  // The turn left some candidates out, so which ones the pass weighed depended on the turn's
  // inputs (CandidateTurn::unneeded_before and after); false when it weighed every candidate.
  bool turn_left_out = false;
};

}  // namespace tidepool::planner
