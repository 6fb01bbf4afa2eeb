// The decision loop: one pure state machine, driven by both the live controller and the
// simulator, that turns observations of the cluster and the provider into actions (DESIGN §2).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "autoscaler/state.h"
#include "autoscaler/status.h"
#include "base/error.h"
#include "base/time.h"
#include "model/daemonset.h"
#include "model/node.h"
#include "model/pdb.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/decision.h"
#include "planner/scale_up.h"

namespace tidepool::autoscaler {

// What the provider says about one pool.
struct PoolObservation {
  std::string pool;
  int target = 0;  // the provider's desired size
  // Instances the provider has, including ones not joined yet. On a stockout only requested
  // nodes beyond these (and beyond the joined Nodes) are cancelled; they may still join.
  int registered = 0;
  bool stockout = false;  // the provider says it has no capacity for this pool now
  std::string stockout_reason;
};

// The cluster as read at one moment (informer cache or simulator state). All pointers are
// borrowed and need only stay valid during the Step call; the loop keeps none of them.
struct Observation {
  std::vector<const model::Node*> nodes;
  std::vector<const model::Pod*> pods;
  std::vector<const model::PodDisruptionBudget*> pdbs;
  std::vector<const model::DaemonSet*> daemon_sets;
  // One per configured pool, from the provider. A configured pool missing here is taken to have
  // exactly its registered nodes (nothing upcoming) and no stockout.
  std::vector<PoolObservation> pools;
  // The provider's node -> pool mapping, consulted when the labels name no pool (DESIGN §3).
  // Optional; returns "" for "not mine".
  std::function<std::string(const model::Node&)> provider_pool_of;
  // Optional change counter of the whole observation (an informer's resourceVersion high-water
  // mark, the simulator's mutation counter). 0: unknown. A driver that sets it promises that two
  // observations with the same nonzero version are identical in every field above, so the loop
  // may skip planning that cannot decide anything new (LoopOptions::skip_unchanged).
  uint64_t version = 0;
};

// Something the driver carries out (controller: cloud + kube; simulator: its fakes). Actions of
// one Step come in the order they must be carried out. Results that matter are reported back
// through the On*Result methods; the others are fire-and-forget (their failures show up in a
// later observation and the loop corrects them, e.g. a node left tainted is untainted).
struct Action {
  enum class Kind {
    kIncreasePool,     // pool, count: raise the pool's target by count. Report OnIncreaseResult.
    kDecreaseTarget,   // pool, count: lower the target by count, cancelling requested nodes that
                       // have not joined the cluster (never a joined node). OnDecreaseResult.
    kTaintNode,        // node: add ToBeDeletedByClusterAutoscaler:NoSchedule. Report
                       // OnTaintResult; evictions wait until the taint is confirmed (the result
                       // or the taint seen in an observation).
    kMarkCandidate,    // node: add DeletionCandidateOfClusterAutoscaler:PreferNoSchedule.
    kUnmarkCandidate,  // node: remove the DeletionCandidateOfClusterAutoscaler taint.
    kEvictPods,        // node, pods: evict each pod (policy/v1 Eviction), without waiting for
                       // the pods to go. Report OnEvictResult once per pod.
    kDeleteNode,       // node, pool: delete the instance, lowering the pool's target by one (as
                       // NodeGroup.DeleteNodes does), then the Node. Report OnDeleteResult.
    kUntaintNode,      // node: remove ToBeDeletedByClusterAutoscaler (the loop never cordons).
    kEvent,            // a Kubernetes Event: object_kind/object, reason, message, warning.
  };
  Kind kind = Kind::kEvent;
  std::string pool;  // pool actions; for node actions the node's pool ("" when unmanaged)
  std::string node;
  int count = 0;
  std::vector<std::string> pods;  // kEvictPods: pods to evict; kIncreasePool: pods it is for
  // kEvent: the event reason (TriggeredScaleUp, NotTriggerScaleUp, ScaleDown, ScaleDownFailed,
  // WarmScaleUp). Other kinds: why, in words, for logs.
  std::string reason;
  // kEvent only.
  std::string object_kind;  // "Pod", "Node", or "ConfigMap" (object "": the status ConfigMap)
  std::string object;       // "namespace/name" for pods, the name for nodes
  std::string message;
  bool warning = false;  // event type Warning; Normal otherwise
};

std::string_view ActionKindName(Action::Kind kind);
// One line for logs and test failure messages, e.g. "IncreasePool gpu-spot +2 (...)".
std::string DescribeAction(const Action& action);

// Knobs of the loop that the configuration file does not (yet) expose.
struct LoopOptions {
  // Emit kMarkCandidate/kUnmarkCandidate for unneeded nodes so the scheduler avoids them.
  bool mark_deletion_candidates = false;
  // Retry delay of a failed eviction (429 from a PDB, 5xx): doubles from initial up to max.
  Duration eviction_retry_initial = std::chrono::seconds(5);
  Duration eviction_retry_max = std::chrono::seconds(30);
  // After every eviction succeeded, how long the evicted pods may take to go away before the
  // removal is rolled back (CA: maxGracefulTerminationSec).
  Duration pod_termination_wait = std::chrono::minutes(10);
  // How long a node whose removal failed is not considered again; unset: scaleDown.unneededTime.
  std::optional<Duration> removal_cooldown;
  // How long a change the loop asked for may take to show in observations before the loop
  // believes what it observes again: a target change after its result was reported (in
  // PoolObservation::target), an untaint (a node still showing the ToBeDeleted taint).
  Duration observe_grace = std::chrono::minutes(1);
  // Planner knobs the shipped policy keeps at their defaults; the simulator's comparison
  // policies (e.g. `ca-like`) change them.
  planner::ScaleUpOptions scale_up;
  // Running training pods (Job, JobSet, Kubeflow kinds, gang members) may be evicted by
  // scale-down like any controller-owned pod (the Cluster Autoscaler's behaviour).
  bool evict_training_pods = false;
  // Skip the planning of a Step whose Observation::version equals that of an earlier Step that
  // changed nothing (no action, loop state unchanged) while no timer has come due since: such a
  // Step would decide nothing either. Results are identical with and without; off only in the
  // tests that check exactly that.
  bool skip_unchanged = true;
};

// The decision loop (DESIGN §2). It owns the scale-up batching window, the nodes requested and
// not registered yet ("upcoming"), provision timeouts, per-pool backoff and the availability
// cache (stockouts are remembered until the backoff expires), unneeded-since timers and the
// scale-down sequence of each node (taint, evict, delete; roll back on failure).
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
// Crash safety: the state is rebuilt from observations. A fresh Autoscaler treats target -
// registered as upcoming requested now (so no duplicate scale-up), and resumes the removal of
// nodes carrying the ToBeDeletedByClusterAutoscaler taint when the planner still finds them
// removable (empty ones are deleted), or untaints them otherwise (no node stays cordoned).
class Autoscaler {
 public:
  explicit Autoscaler(const model::AutoscalerConfig& config, LoopOptions options = {});

  // One step at `now`: returns the actions to carry out now, in order.
  //  - Batching: a pending pod not pending at the previous Step opens (or extends) a batch;
  //    scale-up is planned when no pod has turned pending for scaleUp.batchIdle or the batch is
  //    scaleUp.batchMax old, at a periodic pass (every scanInterval) when no batch is open, and
  //    at once after a pool failed (stockout, provision timeout, increase error) or when a
  //    pool's backoff ran out while pods wait.
  //  - Upcoming: per pool, target - registered nodes, plus registered nodes still starting
  //    (not Ready, or no GPUs allocatable yet while the template has GPUs) within the pool's
  //    provision timeout of their creation; these are passed to the planner as upcoming, so
  //    the same pods never cause a second scale-up. The target counted is the provider's, or
  //    the one the loop asked for until the provider shows it (see LoopOptions::observe_grace).
  //  - Failures: requested nodes not registered within the provision timeout, a stockout, a
  //    node not ready within the timeout put the pool in backoff (scaleUp.backoff.initial,
  //    doubling to .max; reset when a node of the pool registers); requested nodes that have
  //    not come are cancelled (kDecreaseTarget) and the pending pods re-planned in this Step.
  //  - Scale-down (at the periodic pass, not in a Step that scaled up): unneeded-since timers
  //    from the planner's unrestricted pass; nodes unneeded for scaleDown.unneededTime go
  //    through taint -> evict (once the taint is confirmed) -> delete (once the pods are gone);
  //    failed evictions are retried until scaleDown.maxPodEvictionTime, then rolled back
  //    (kUntaintNode + ScaleDownFailed) and the node rests for LoopOptions::removal_cooldown.
  //    No removal in a pool with upcoming nodes; at most scaleDown.maxNonEmptyPerPool non-empty
  //    drains per pool at a time. Empty nodes skip eviction.
  std::vector<Action> Step(const Observation& obs, Time now);

  // When the driver should call Step again at the latest (a batch window closing, the next
  // periodic pass, a timeout, an eviction retry). Before the first Step: Time{} (at once).
  Time NextWakeup() const { return wakeup_; }

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
  // removal is rolled back: kUntaintNode + ScaleDownFailed event.
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
  struct StepContext;  // per-Step indexes of the observation (loop.cc)

  void ObservePools(StepContext& ctx);
  void HandlePoolFailures(StepContext& ctx);
  void UpdateBatch(StepContext& ctx);
  bool ShouldPlanScaleUp(const StepContext& ctx, bool scan) const;
  bool RunScaleUp(StepContext& ctx);
  void AdvanceRemovals(StepContext& ctx);
  void AdvanceRemoval(StepContext& ctx, Removal& r);
  void AdoptTaintedNodes(StepContext& ctx);
  void RunScaleDown(StepContext& ctx, bool may_start);
  void StartRemoval(StepContext& ctx, const planner::ScaleDown& sd);
  void UpdateCandidateMarks(StepContext& ctx, const std::set<std::string>& unneeded);
  void Cleanup(StepContext& ctx);
  void ComputeWakeup(const StepContext& ctx);
  // Warm capacity: the loads of warm pools' nodes, demand observations, pre-warm decisions and
  // this Step's placeholders (ctx.warm, ctx.placeholders). Approvals only when `scan`.
  void UpdateWarm(StepContext& ctx, bool scan);
  void PlanPrewarm(StepContext& ctx, const model::Pool& pool, WarmState& ws, double pending_units,
                   double free_units, bool scan);
  // Placeholders bound to nodes for the scale-down simulation; returns why each host is kept.
  std::map<std::string, std::string> BindWarmPlaceholders(StepContext& ctx,
                                                           planner::PlannerInput& in);
  Duration BootEstimate(const model::Pool& pool) const;

  // Recounts not-registered nodes from target and registered and matches the scale-up
  // requests to them: arrivals fill the oldest, unexplained ones are requested `now`.
  void SyncRequests(PoolState& ps, Time now);
  // Forgets the `count` most recently requested nodes (cancelled or refused).
  void DropNewestRequests(PoolState& ps, int count);
  // Ends a removal: kUntaintNode + ScaleDownFailed to `out`, and a cooldown for the node.
  void RollBack(const std::string& node, const std::string& why, Time now,
                std::vector<Action>& out);
  // Puts a pool in backoff (unless it is in backoff already) with the doubling duration.
  void Backoff(PoolState& ps, std::string reason, Time now);
  // Records a target change the loop asked for, until the provider's target shows it.
  void ExpectTargetChange(PoolState& ps, int delta, Time now);
  void Wake(Time t) { wakeup_ = std::min(wakeup_, t); }
  Duration ProvisionTimeout(const model::Pool& pool) const {
    return pool.provision_timeout.value_or(config_.scale_up.provision_timeout);
  }
  bool InBackoff(const PoolState& ps, Time now) const {
    return ps.backoff_until && *ps.backoff_until > now;
  }
  // Why a ripe unneeded node may not go now, or "" when it may.
  std::string NotRemovableReason(const StepContext& ctx, std::string_view node) const;
  // The skip of unchanged Steps (LoopOptions::skip_unchanged): a digest of every piece of loop
  // state that decisions read (all but the step and scan times), and the earliest time after
  // `ctx.now` at which a timer, a backoff or a node's age could change a decision.
  uint64_t StateDigest() const;
  Time NextDecisionTime(const StepContext& ctx) const;
  // Takes the shortcut when it applies: returns true after updating the step and scan times.
  bool SkipUnchangedStep(const Observation& obs, Time now);

  model::AutoscalerConfig config_;
  LoopOptions options_;

  std::map<std::string, PoolState, std::less<>> pools_;   // every configured pool
  std::map<std::string, NodeMemory, std::less<>> nodes_;  // nodes seen at the last Step
  std::map<std::string, Removal, std::less<>> removals_;  // nodes being removed
  std::map<std::string, Time, std::less<>> deleted_;      // deleted, Node object may linger
  std::map<std::string, Time, std::less<>> cooldown_;     // removal failed: rest until
  std::map<std::string, Time, std::less<>> unneeded_since_;
  std::map<std::string, Time, std::less<>> untainted_;  // kUntaintNode sent at
  std::set<std::string, std::less<>> marked_;           // nodes the loop marked DeletionCandidate

  // Batching.
  std::unordered_set<std::string> prev_pending_;
  std::optional<Time> batch_start_;
  Time batch_last_add_{};
  bool replan_ = false;  // a pool failed: plan scale-up at the next Step whatever the batch
  std::optional<Time> last_planned_;  // the last scale-up plan
  int pending_count_ = 0;
  // NotTriggerScaleUp messages sent per pending pod, so each reason change is told once.
  std::map<std::string, std::string> not_triggered_;
  // The last scale-up plan's verdict per pod still pending (Status::unschedulable and
  // waiting_for_capacity); not decision state.
  std::map<std::string, planner::Unschedulable, std::less<>> unschedulable_;
  std::set<std::string, std::less<>> waiting_for_capacity_;
  // Pending pods a scale-up plan added nodes for, with the pool: they count as that pool's
  // demand for warm capacity until they are bound (so a burst is learned when it arrives, not
  // a boot time later).
  std::map<std::string, std::string, std::less<>> planned_pool_;

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
  Time timers_wakeup_{};  // ComputeWakeup's earliest timer, the periodic scan left out

  std::map<std::string, WarmState, std::less<>> warm_;  // pools with pools[].warm

  std::optional<ScaleUpRecord> last_scale_up_;
  std::optional<ScaleDownRecord> last_scale_down_;
  std::vector<planner::Keep> kept_;
};

}  // namespace tidepool::autoscaler
