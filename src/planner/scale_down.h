// ScaleDownPlanner: which managed nodes can go now, with the pods to evict, and why each other
// managed node stays. Pure: no I/O, no clock (time comes in PlannerInput::now).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "planner/cluster.h"
#include "planner/decision.h"
#include "planner/scale_down_turn.h"

namespace tidepool::planner {

struct ScaleDownOptions {
  // Apply the per-pass rate limits (maxEmptyBulkDelete empty nodes in bulk; maxNonEmptyPerPool
  // non-empty nodes per pool). Off: every node that can go in one consistent simulation.
  bool rate_limit = true;
  // When set, only nodes for which it returns true may be removed (the autoscaler passes "has
  // been unneeded for unneededTime"); the others are still simulated as staying and get a Keep
  // entry with `not_yet_reason(node)`.
  std::function<bool(const model::Node&)> may_remove;
  std::function<std::string(const model::Node&)> not_yet_reason;
  // Running training pods (IsTrainingPod) may be evicted like any controller-owned pod, as the
  // Cluster Autoscaler does. Off (tidepool's policy): they keep their node.
  bool evict_training_pods = false;
  // A node whose consolidation verdict waits for a checkpoint is removed in the simulation, as
  // evicting right after the checkpoint pays; its ScaleDown carries that kWaitForCheckpoint
  // verdict. For the unneeded-node pass: the node is unneeded while it waits, so its
  // unneededTime runs and it can go right after the checkpoint. Off: it is kept, saying why.
  bool waiting_is_removable = false;
  // Nodes whose replacement (consolidation's replace move) is Ready: their pods move to the nodes
  // there are, the new one included, even when the node is busy; they are not replaced again.
  std::vector<std::string> replacement_ready;
  // Of those, the nodes one new node replaces together (ScaleDown::replacement_group): the new
  // node's price was weighed, shared among them, when it was asked for, so their pods' moving onto
  // it is not charged again to whichever node the pass tries first.
  std::vector<std::string> replacement_group_ready;
  // Which candidates with pods to move the pass weighs (scaleDown.candidatesPerPass; the
  // autoscaler's unneeded pass); the others stay this pass, saying so. Default: every one.
  // ScaleDownPlan::turn_ends_at says where the next pass's turn starts.
  CandidateTurn turn;
};

// How a pass decides (details in scale_down_pass.cc and scale_down_rules.h):
//  - A managed node is a candidate unless it is being deleted (ToBeDeletedByClusterAutoscaler
//    taint), annotated scale-down-disabled, younger than delayAfterAdd, or at or above its
//    utilization threshold (GPU nodes: GPUs requested / allocatable against
//    gpuUtilizationThreshold; others: max(cpu, memory)). Each such node gets a Keep with why.
//  - Candidates are tried in order: empty ones first, then ascending utilization, then name.
//    Each is kept when its pool is at min (counting this pass's removals), a pod may not be
//    evicted (EvictionBlocker), the PDB budgets left in this pass forbid its evictions,
//    may_remove says not yet, a rate limit is reached, or its pods (including pods earlier
//    removals moved onto it) do not all fit on ready, schedulable nodes that stay.
//  - Moved pods prefer nodes that are not candidates, then candidates tried last, so a node
//    rarely has to take pods it will later give away.
//  - Replace (scaleDown.consolidation.replace, docs/consolidation.md): a candidate whose own pods
//    do not all fit may go when one node of the cheapest cheaper pool that may grow holds the
//    rest and the move pays at the price difference (ScaleDown::replacement_pool); a node at or
//    above its threshold is a candidate for this move only, all its pods going to the new node.
// Unmanaged nodes are never removed and get no Keep, but take moved pods. Keep entries are in
// node-name order; scale-downs in the order they were decided.
class ScaleDownPlanner {
 public:
  // The result is deterministic for a given input, whatever the order of input.nodes and
  // input.pods. `out_unneeded` (when given) receives every node that could go ignoring rate
  // limits and may_remove, in decision order, so the caller can track unneeded-since timers.
  ScaleDownPlan Plan(const PlannerInput& input, const ScaleDownOptions& options = {},
                     std::vector<std::string>* out_unneeded = nullptr) const;

  // Why this one node would or would not be removed now (for `explain --node`).
  std::string Explain(const PlannerInput& input, std::string_view node_name) const;

 private:
  // Plan, on the input's cluster model when it has one.
  ScaleDownPlan PlanOnce(const PlannerInput& input, const ScaleDownOptions& options,
                         std::vector<std::string>* out_unneeded) const;
};

}  // namespace tidepool::planner
