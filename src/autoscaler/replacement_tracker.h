// Consolidation's replace move in the loop (docs/consolidation.md): a node tied to the one new
// node of a cheaper pool that replaces it, kept until that node is Ready, then drained as usual.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/options.h"
#include "autoscaler/pool_tracker.h"
#include "autoscaler/step_context.h"
#include "autoscaler/timers.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

// One node waiting for its replacement.
struct ReplacementTie {
  std::string pool;                  // of the replacement
  std::string node_pool;             // of the node replaced
  Time requested_at{};               // the IncreasePool of one node of `pool`
  std::set<std::string> had;         // the nodes of `pool` then: the replacement is none of them
  std::optional<std::string> ready;  // the replacement, once a new node of `pool` is Ready
  std::optional<planner::ConsolidationVerdict> verdict;
  // When one new node replaces several nodes: all of them, this one included (the others' ties
  // take the same new node); empty for one.
  std::vector<std::string> group;
};

// Starting a replace move asks for one node of the cheaper pool (IncreasePool with `replaces`)
// and keeps the node replaced, evicting nothing. Once a node of that pool that was not there
// before is Ready, the loop plans the node's removal again (Ready()); a removal the new plan
// finds is carried out by the RemovalTracker. A replacement not Ready within the pool's provision
// timeout, a failure of the pool's scale-up, or a new plan that no longer removes the node drops
// the tie (a ConsolidationReplace Warning Event): the node stays, and the new node, unused, goes
// by the normal scale-down of empty nodes.
class ReplacementTracker {
 public:
  ReplacementTracker(const model::AutoscalerConfig& config, PoolTracker& pools);

  bool Tied(std::string_view node) const { return ties_.contains(node); }
  // Tied, with other nodes, to one new node (ReplacementTie::group).
  bool Grouped(std::string_view node) const {
    auto it = ties_.find(node);
    return it != ties_.end() && !it->second.group.empty();
  }
  // Asks for the replacement of sd.node (a plan's replace move): IncreasePool + Event.
  void Start(StepContext& ctx, const planner::ScaleDown& sd) { Start(ctx, {&sd}); }
  // The same for the members of one replacement group (ScaleDown::replacement_group): one new
  // node for all of them, an Event on each.
  void Start(StepContext& ctx, const std::vector<const planner::ScaleDown*>& members);
  // Notes replacements that are Ready, and drops the ties that failed, timed out or whose node
  // went away (so no separate cleanup is needed: it runs at every pass).
  void Advance(StepContext& ctx);
  // Nodes whose replacement is Ready: their removal is to be planned again.
  std::vector<std::string> Ready() const;
  // The new plan removes the node (its RemovalTracker removal has started): the tie is done.
  void Complete(std::string_view node);
  // The new plan keeps the node for `why`: the tie is dropped.
  void Drop(StepContext& ctx, const std::string& node, const std::string& why);
  // Keep entries for the tied nodes ("replacement of pool X coming up").
  std::vector<planner::Keep> Kept(Time now) const;

  void AddDigest(Digest& d) const;
  void AddTimers(Timers& t) const;

 private:
  Time Deadline(const ReplacementTie& tie) const;
  // Whether another node of `tie`'s group is still tied to it.
  bool GroupStays(const std::string& node, const ReplacementTie& tie) const;
  void Tell(StepContext& ctx, const std::string& node, const ReplacementTie& tie,
            std::string message, bool warning) const;

  const model::AutoscalerConfig& config_;
  PoolTracker& pools_;
  std::map<std::string, ReplacementTie, std::less<>> ties_;  // by the node replaced
};

}  // namespace tidepool::autoscaler
