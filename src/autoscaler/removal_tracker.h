// Nodes on their way out, each through taint -> evict -> delete, rolled back on failure; nodes
// the loop deleted whose Node object may linger; and the cooldown of nodes whose removal failed.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/options.h"
#include "autoscaler/pool_tracker.h"
#include "autoscaler/state.h"
#include "autoscaler/status.h"
#include "autoscaler/step_context.h"
#include "autoscaler/timers.h"
#include "autoscaler/unneeded_tracker.h"
#include "base/error.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

// Evictions start once the ToBeDeleted taint is confirmed (its result, or the taint seen);
// refused evictions are retried with a doubling delay until scaleDown.maxPodEvictionTime after
// the drain began; the node is deleted once its pods are gone. Any failure rolls the removal
// back: UntaintNode + a ScaleDownFailed Event, and the node rests for
// LoopOptions::removal_cooldown (default scaleDown.unneededTime). After a restart, nodes found
// with the taint are adopted: their removal resumes when the planner still finds them
// removable, else they are untainted (no node stays cordoned).
class RemovalTracker {
 public:
  RemovalTracker(const model::AutoscalerConfig& config, const LoopOptions& options,
                 PoolTracker& pools, UnneededTracker& unneeded);

  bool Empty() const { return removals_.empty(); }
  bool Removing(std::string_view node) const { return removals_.contains(node); }
  // Deleting it, or deleted it: the node counts for nothing.
  bool Gone(std::string_view node) const;
  // Non-empty drains running per pool.
  std::map<std::string, int> DrainsPerPool() const;
  // Why a node may not start its removal now (cooldown, pool scaling up), or "".
  std::string NotRemovableReason(const StepContext& ctx, std::string_view node) const;

  // Moves every removal on by what the observation shows.
  void Advance(StepContext& ctx);
  // Nodes with the ToBeDeleted taint the loop is not removing: resume or untaint (periodic).
  void Adopt(StepContext& ctx);
  void Start(StepContext& ctx, const planner::ScaleDown& sd);

  // Results; actions they cause go to `out`. Each returns when the loop should Step again.
  std::optional<Time> OnTaintResult(const std::string& node, const Result<void>& result, Time now,
                                    std::vector<Action>& out);
  std::optional<Time> OnEvictResult(const std::string& node, const std::string& pod,
                                    const Result<void>& result, Time now);
  std::optional<Time> OnDeleteResult(const std::string& node, const Result<void>& result, Time now,
                                     std::vector<Action>& out);

  void Cleanup(const StepContext& ctx);
  void AddDigest(Digest& d) const;
  void AddTimers(Timers& t) const;
  void FillStatus(Status& s) const;

 private:
  void AdvanceOne(StepContext& ctx, Removal& r);
  // Draining: evicts the pods still there, deletes the node once they are gone, or rolls back.
  void Drain(StepContext& ctx, Removal& r);
  // Ends a removal: UntaintNode + ScaleDownFailed to `out`, and a cooldown for the node.
  void RollBack(const std::string& node, const std::string& why, Time now,
                std::vector<Action>& out);
  std::set<std::string_view> Orphans(const StepContext& ctx) const;
  void Resume(StepContext& ctx, const planner::ScaleDown& sd);
  static Removal FromPlan(const planner::ScaleDown& sd, Time now);

  const model::AutoscalerConfig& config_;
  const LoopOptions& options_;
  PoolTracker& pools_;
  UnneededTracker& unneeded_;
  std::map<std::string, Removal, std::less<>> removals_;  // nodes being removed
  std::map<std::string, Time, std::less<>> deleted_;      // deleted, Node object may linger
  std::map<std::string, Time, std::less<>> cooldown_;     // removal failed: rest until
  std::map<std::string, Time, std::less<>> untainted_;    // UntaintNode sent at
  std::optional<ScaleDownRecord> last_scale_down_;
};

}  // namespace tidepool::autoscaler
