// Since when each node has been unneeded (the Cluster Autoscaler's unneeded-node timers), which
// nodes carry the DeletionCandidate mark, and why the others are kept.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/status.h"
#include "autoscaler/step_context.h"
#include "autoscaler/timers.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

// What the planner's unrestricted scale-down pass found (nodes being removed left out).
struct UnneededPass {
  std::set<std::string> nodes;  // could go now, or right after a checkpoint
  // Those of `nodes` whose removal waits for a training pod's checkpoint.
  std::map<std::string, CheckpointWait, std::less<>> waiting;
  std::vector<planner::Keep> kept;  // the other managed nodes, with why
  // Consolidation weighed training pods on some node: its verdicts move with time, so the pass
  // is due again at the next minute.
  bool weighed_training = false;
  // The pass weighed only some candidates (scaleDown.candidatesPerPass): where the next pass's
  // turn starts (ScaleDownPlan::turn_ends_at); "" when it weighed every one.
  std::string turn_ends_at;
  // It left some candidates out (ScaleDownPlan::turn_left_out): which ones it weighed depended on
  // which nodes were unneeded before.
  bool turn_left_out = false;
};

// The most DeletionCandidate marks one scan adds (scaleDown.markCandidates); the other unneeded
// nodes are marked at the next scans, so a cluster that empties out is not written all at once.
// The Cluster Autoscaler's --max-bulk-soft-taint-count is the same number.
inline constexpr size_t kMaxCandidateMarksPerScan = 10;

// A node is unneeded while the planner's unrestricted scale-down pass lists it; it becomes
// ripe for removal after scaleDown.unneededTime of that. A node waiting for a checkpoint is
// unneeded meanwhile, so it can go right after the checkpoint. Starting a removal (or rolling
// one back) resets its clock.
class UnneededTracker {
 public:
  explicit UnneededTracker(const model::AutoscalerConfig& config);

  // Scale-down is off: no timers, no reasons, marks taken off.
  void Disable(StepContext& ctx, const std::function<bool(std::string_view)>& removing);
  void Update(StepContext& ctx, UnneededPass pass,
              const std::function<bool(std::string_view)>& removing);
  // Unneeded for scaleDown.unneededTime by now.
  std::vector<std::string> Ripe(Time now) const;
  // Listed by the last pass: such nodes are weighed first by a bounded pass (CandidateTurn).
  bool Unneeded(std::string_view node) const { return since_.contains(node); }
  // Where the next bounded pass's turn starts (CandidateTurn::after).
  const std::string& turn_after() const { return turn_after_; }
  // "unneeded for 4m of scaleDown.unneededTime 10m", or "not unneeded".
  std::string NotYetReason(std::string_view node, Time now) const;
  void Forget(std::string_view node);

  void Cleanup(const StepContext& ctx);
  void AddDigest(Digest& d) const;
  void AddTimers(Timers& t) const;
  void FillStatus(Status& s) const;

 private:
  void UpdateMarks(StepContext& ctx, const std::set<std::string>& unneeded,
                   const std::function<bool(std::string_view)>& removing);

  const model::AutoscalerConfig& config_;
  std::map<std::string, Time, std::less<>> since_;
  std::set<std::string, std::less<>> marked_;  // nodes the loop marked DeletionCandidate
  std::map<std::string, CheckpointWait, std::less<>> waiting_;
  KeptNodes kept_ = NoKeptNodes();
  bool weighed_training_ = false;
  std::string turn_after_;
  bool turn_left_out_ = false;  // the last pass's (UnneededPass::turn_left_out)
};

}  // namespace tidepool::autoscaler
