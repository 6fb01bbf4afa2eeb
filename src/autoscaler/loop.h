// The decision loop: one pure state machine, driven by both the live controller and the
// simulator, that turns observations of the cluster and the provider into actions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/action.h"
#include "autoscaler/buffer_tracker.h"
#include "autoscaler/observation.h"
#include "autoscaler/options.h"
#include "autoscaler/pool_tracker.h"
#include "autoscaler/provisioning_tracker.h"
#include "autoscaler/removal_tracker.h"
#include "autoscaler/replacement_tracker.h"
#include "autoscaler/runtime_tracker.h"
#include "autoscaler/scale_up_tracker.h"
#include "autoscaler/status.h"
#include "autoscaler/unneeded_tracker.h"
#include "autoscaler/warm_planner.h"
#include "base/error.h"
#include "base/time.h"
#include "model/pool.h"
#include "planner/scale_down_memo.h"
#include "planner/slot_pools.h"

namespace tidepool::autoscaler {

// The decision loop (docs/architecture.md): a short orchestrator over trackers that each own
// their state, deadlines and digest: the pools (targets, upcoming nodes, provision timeouts,
// backoff and the availability cache), the scale-up batch window and verdicts, the unneeded
// timers, the removals (taint, evict, delete; roll back on failure) and warm capacity.
//
// Contract: the driver calls Step with a fresh Observation whenever the cluster changed (a pod
// turned pending, a node appeared, a pod went away) and at the latest at NextWakeup(); it
// carries out the returned actions in order and reports results through the On*Result methods
// (those calls may come between Steps; actions they cause are returned by the next Step, and
// NextWakeup() then says "now"). Time only ever comes in as an argument and should not go
// backwards; the same sequence of calls with the same arguments yields the same actions.
//
// Pure: no I/O, no clock reads, no threads, no randomness. Not thread-safe: one driver thread
// calls everything. The Autoscaler copies the config it is given and keeps no pointers into
// observations. Failures of the outside world come in as Result errors and become backoffs,
// retries or rollbacks, never a crash; an inconsistent observation (duplicate node names, pods
// on unknown nodes) is tolerated (the first node of a name wins, such pods are ignored).
//
// ProvisioningRequests (docs/kueue.md, ProvisioningTracker): check-capacity is answered from
// existing and upcoming nodes; a best-effort-atomic request is planned as one gang, all or
// nothing, and Provisioned once its capacity has registered; booked capacity is held for the pods
// that consume it until BookingExpired. Their conditions are UpdateProvisioningRequest actions.
//
// Crash safety: the state is rebuilt from observations. A fresh Autoscaler treats target -
// registered as upcoming requested now (so no duplicate scale-up), and resumes the removal of
// nodes carrying the ToBeDeletedByClusterAutoscaler taint when the planner still finds them
// removable (empty ones are deleted), or untaints them otherwise (no node stays cordoned).
class Autoscaler {
 public:
  explicit Autoscaler(const model::AutoscalerConfig& config, LoopOptions options = {});
  // The trackers hold references to the config and options: not copyable or movable.
  Autoscaler(const Autoscaler&) = delete;
  Autoscaler& operator=(const Autoscaler&) = delete;

  // One step at `now`: returns the actions to carry out now, in order.
  //  - Batching: a pending pod not pending at the previous Step opens (or extends) a batch;
  //    scale-up is planned when no pod has turned pending for scaleUp.batchIdle or the batch is
  //    scaleUp.batchMax old, at a periodic pass (every scanInterval) when no batch is open, and
  //    at once after a pool failed (stockout, provision timeout, increase error) or when a
  //    pool's backoff ran out while pods wait.
  //  - Upcoming: per pool, target - registered nodes, plus registered nodes still starting
  //    (not Ready, no GPUs allocatable yet while the template has GPUs, or no ResourceSlices
  //    yet while the template has devices) within the pool's provision timeout of their
  //    creation; these are passed to the planner as upcoming, so
  //    the same pods never cause a second scale-up. The target counted is the provider's, or
  //    the one the loop asked for until the provider shows it (see LoopOptions::observe_grace).
  //  - Failures: requested nodes not registered within the provision timeout, a stockout, a
  //    node not ready within the timeout put the pool in backoff (scaleUp.backoff.initial,
  //    doubling to .max; reset when a node of the pool registers); requested nodes that have
  //    not come are cancelled (DecreaseTarget) and the pending pods re-planned in this Step.
  //  - Scale-down (at the periodic pass, not in a Step that scaled up): unneeded-since timers
  //    from the planner's unrestricted pass; nodes unneeded for scaleDown.unneededTime go
  //    through taint -> evict (once the taint is confirmed) -> delete (once the pods are gone);
  //    failed evictions are retried until scaleDown.maxPodEvictionTime, then rolled back
  //    (UntaintNode + ScaleDownFailed) and the node rests for LoopOptions::removal_cooldown.
  //    No removal in a pool with upcoming nodes; at most scaleDown.maxNonEmptyPerPool non-empty
  //    drains per pool at a time. Empty nodes skip eviction.
  std::vector<Action> Step(const Observation& obs, Time now);

  // When the driver should call Step again at the latest (a batch window closing, the next
  // periodic pass, a timeout, an eviction retry). Before the first Step: Time{} (at once).
  Time NextWakeup() const { return wakeup_; }
  // Steps that returned at once, having seen the observation and state of a Step that decided
  // nothing (LoopOptions::skip_unchanged).
  uint64_t skipped_steps() const { return skipped_steps_; }
  // Whether Step would return at once for an observation of `version` at `now` (what a skipped
  // Step reads of its observation is the version alone): a driver may then leave the rest of the
  // observation unbuilt.
  bool Unchanged(uint64_t version, Time now) const;

  // Feedback. `now` is the time of the report. Unknown pools and nodes are ignored.
  // An increase that failed puts the pool in backoff and re-plans its pods at the next Step.
  void OnIncreaseResult(const std::string& pool, int count, const Result<void>& result, Time now);
  // A failed cancellation: the nodes count as upcoming again (and may time out again).
  void OnDecreaseResult(const std::string& pool, int count, const Result<void>& result, Time now);
  // The ToBeDeleted taint is on: evictions (or the deletion of an empty node) may start. A
  // failure rolls the removal back.
  void OnTaintResult(const std::string& node, const Result<void>& result, Time now);
  // An eviction: ok (or kNotFound) counts as evicted; any other error (429 from a PDB, 5xx) is
  // retried with backoff until scaleDown.maxPodEvictionTime after the drain began, then the
  // removal is rolled back: UntaintNode + ScaleDownFailed event.
  void OnEvictResult(const std::string& node, const std::string& pod, const Result<void>& result,
                     Time now);
  // A deletion: ok (or kNotFound) finishes the removal with a ScaleDown event; any other error
  // rolls it back.
  void OnDeleteResult(const std::string& node, const Result<void>& result, Time now);

  Status GetStatus() const;
  const model::AutoscalerConfig& config() const { return config_; }

  // Warm capacity (pools[].warm). Spare nodes and headroom are placeholder demand: pods that
  // exist only inside the loop, pinned to their pool, planned after every real pod (so a scale-up
  // adds nodes when the room is not there) and bound to nodes in the scale-down simulation (so
  // the nodes holding them are not unneeded). They never appear in actions, pending counts or
  // Events; a scale-up made for them has reason "warm: ..." and a WarmScaleUp Event on the
  // status ConfigMap. Predictive pools learn a DemandProfile of the GPUs (CPU cores) requested
  // by pods on their nodes and hold idle nodes for a predicted burst when the wait it saves is
  // worth more than the idle cost, within maxCostPerDay (docs/configuration.md, Warm capacity).
  //
  // What the loop has learned (profiles, boot time estimates, the pre-warm spend ledger) as
  // JSON with a version, for a restart (the controller keeps it in a ConfigMap).
  bool HasPredictive() const;
  std::string ExportWarmState() const;
  // Replaces what was learned with `json`; pools not in the config are ignored. A malformed
  // state is an error naming what is wrong and leaves the loop's state unchanged.
  Result<void> ImportWarmState(std::string_view json);

 private:
  // The Step's indexes of the observation: nodes by name, their pools, pods on nodes going away.
  void Index(StepContext& ctx);
  // ProvisioningRequests before the scale-up (ProvisioningTracker::Prepare).
  void PrepareProvisioning(StepContext& ctx);
  bool RunScaleUp(StepContext& ctx);
  // Scale-down at a periodic pass: unneeded timers from the planner's unrestricted pass, then
  // (when `may_start`) the removals of ripe nodes, at most scaleDown.maxNonEmptyPerPool
  // non-empty drains per pool at a time.
  void RunScaleDown(StepContext& ctx, bool may_start);
  void StartRipeRemovals(StepContext& ctx, const planner::PlannerInput& in);
  // Nodes whose replacement is Ready: their removal is planned again, and started when the new
  // plan still removes them (without another replacement), else the tie is dropped. True when a
  // removal started.
  bool FinishReplacements(StepContext& ctx, const planner::PlannerInput& in);
  void Cleanup(StepContext& ctx);
  // Sets the wakeup, and remembers a Step that decided nothing (`quiet`) for the skip.
  void Finish(const StepContext& ctx, bool quiet);
  void Wake(Time t) { wakeup_ = std::min(wakeup_, t); }
  bool Removing(std::string_view node) const { return removals_.Removing(node); }
  // The skip of unchanged Steps (LoopOptions::skip_unchanged): a digest of every piece of loop
  // state that decisions read (all but the step and scan times).
  uint64_t StateDigest() const;
  // Takes the shortcut when it applies: returns true after updating the step and scan times.
  bool SkipUnchangedStep(const Observation& obs, Time now);

  model::AutoscalerConfig config_;
  LoopOptions options_;
  PoolTracker pools_{config_, options_};
  UnneededTracker unneeded_{config_};
  RuntimeTracker runtimes_;
  // What the scale-down passes read about nodes that did not change since (a cache: decisions are
  // the same without it).
  planner::ScaleDownMemo scale_down_memo_;
  // The pool of each node slot of the driver's model, for every planner pass of every Step.
  planner::SlotPools slot_pools_;
  RemovalTracker removals_{config_, options_, pools_, unneeded_};
  ReplacementTracker replacements_{config_, pools_};
  WarmPlanner warm_{config_};
  ScaleUpTracker scale_up_{config_, options_};
  ProvisioningTracker provisioning_{config_, options_, pools_};
  BufferTracker buffers_;
  // Whether the loop is removing a node: what the trackers and the planner input ask.
  const std::function<bool(std::string_view)> removing_ = [this](std::string_view n) {
    return removals_.Removing(n);
  };

  std::optional<Time> last_scan_;
  std::optional<Time> last_step_;
  Time wakeup_{};
  std::vector<Action> outbox_;  // actions caused by feedback, returned by the next Step

  // The last Step that decided nothing (see SkipUnchangedStep): its observation version, until
  // when its decisions hold, and the wakeup it computed apart from the periodic scan.
  struct QuietStep {
    uint64_t version = 0;
    Time until{};
    Time timers_wakeup{};
  };
  std::optional<QuietStep> quiet_;
  uint64_t skipped_steps_ = 0;
};

}  // namespace tidepool::autoscaler
