// The scale-up side of the loop between Steps: the batching window over newly pending pods,
// when to plan, turning a plan into IncreasePool actions and pod Events, and its verdicts.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "autoscaler/options.h"
#include "autoscaler/pool_tracker.h"
#include "autoscaler/status.h"
#include "autoscaler/step_context.h"
#include "autoscaler/timers.h"
#include "autoscaler/warm_planner.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

// A pending pod not pending at the previous Step opens (or extends) a batch; scale-up is
// planned when no pod has turned pending for scaleUp.batchIdle or the batch is
// scaleUp.batchMax old, at a periodic pass when no batch is open, at once after a pool failed
// (RequestReplan) or when a pool's backoff ran out while pods wait.
class ScaleUpTracker {
 public:
  ScaleUpTracker(const model::AutoscalerConfig& config, const LoopOptions& options);

  // Collects the pending pods into ctx.pending and opens or extends the batch.
  void ObservePending(StepContext& ctx);
  bool ShouldPlan(const StepContext& ctx, bool scan, const PoolTracker& pools) const;
  // Plans and appends the actions; true when any pool grows.
  bool Run(StepContext& ctx, const planner::PlannerInput& in, PoolTracker& pools,
           WarmPlanner& warm);
  // The time of the last plan moves on although nothing was planned (a skipped periodic pass
  // that would have found nothing to add).
  void MarkPlanned(Time now) { last_planned_ = now; }

  // Plan scale-up at `at` whatever the batch (a pool failed: now; a throttled request: a little
  // later). The earliest request wins.
  void RequestReplan(Time at) { replan_at_ = replan_at_ ? std::min(*replan_at_, at) : at; }
  // After a Step at `now`: a replan that was due has been served.
  void ClearReplan(Time now) {
    if (replan_at_ && *replan_at_ <= now) replan_at_.reset();
  }
  bool replan() const { return replan_at_.has_value(); }
  int pending_count() const { return pending_count_; }
  const WarmPlanner::PlannedPools& planned_pools() const { return planned_pool_; }

  void Cleanup(StepContext& ctx);
  void AddDigest(Digest& d) const;
  void AddTimers(Timers& t) const;
  void FillStatus(Status& s) const;

 private:
  // One pool's scale-up: its IncreasePool action and pod Events; false when nothing is added.
  bool Increase(StepContext& ctx, const model::Pool& pool, planner::ScaleUp su, PoolTracker& pools,
                WarmPlanner& warm);
  void RecordVerdicts(StepContext& ctx, const planner::ScaleUpPlan& plan);
  // The NotTriggerScaleUp Event for pod verdict `u` when its words changed since they were last
  // told. `before`: the pod's verdict at the previous plan, if that plan told it.
  void TellNotTriggered(StepContext& ctx, const planner::Unschedulable& u,
                        const planner::Unschedulable* before);

  const model::AutoscalerConfig& config_;
  const LoopOptions& options_;
  std::unordered_set<std::string> prev_pending_;
  std::optional<Time> batch_start_;
  Time batch_last_add_{};
  std::optional<Time> replan_at_;     // RequestReplan
  std::optional<Time> last_planned_;  // the last scale-up plan
  int pending_count_ = 0;
  // Pods that would be pending for a scale-up but for their scheduling gates (Status::gated_pods).
  int gated_count_ = 0;
  // NotTriggerScaleUp messages sent per pending pod, so each reason change is told once.
  std::map<std::string, std::string> not_triggered_;
  // The last plan's verdict per pod still pending, in pod-key order (Status::unschedulable and
  // waiting_for_capacity); not decision state. Never changed in place once made: a Status may
  // share it (FillStatus).
  std::shared_ptr<const std::vector<planner::Unschedulable>> unschedulable_ = NoUnschedulablePods();
  std::set<std::string, std::less<>> waiting_for_capacity_;
  // Of those, the pods standing in for a ProvisioningRequest, with the request's key: the status
  // shows the request once, by its name, instead of its stand-in pods.
  std::map<std::string, std::string, std::less<>> request_of_;
  // Pending pods a scale-up plan added nodes for in a warm pool, with the pool.
  WarmPlanner::PlannedPools planned_pool_;
  std::optional<ScaleUpRecord> last_scale_up_;
};

}  // namespace tidepool::autoscaler
