// The pools as the loop tracks them between Steps: targets it asked for and the provider's
// view, nodes requested and not registered yet, provision timeouts, backoff and stockouts.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autoscaler/options.h"
#include "autoscaler/state.h"
#include "autoscaler/status.h"
#include "autoscaler/step_context.h"
#include "autoscaler/timers.h"
#include "base/error.h"
#include "model/pool.h"
#include "planner/cluster.h"

namespace tidepool::autoscaler {

// After a throttled (or conflicting) IncreasePool, the pause before its pods are planned again.
inline constexpr Duration kThrottledRetry = std::chrono::seconds(5);

// Owns every configured pool's PoolState and the memory of each node seen (first seen, ever
// usable). Upcoming nodes per pool are target - registered plus registered nodes still starting;
// the target counted is the provider's, or the one the loop asked for until the provider shows
// it (LoopOptions::observe_grace). Failures (a stockout, requested nodes not registered within
// the provision timeout, a node never usable) put the pool in backoff, doubling from
// scaleUp.backoff.initial to .max, reset when a node of the pool registers.
class PoolTracker {
 public:
  PoolTracker(const model::AutoscalerConfig& config, const LoopOptions& options);

  // A node of `pool` joined while requests were open: the oldest one took `took`, restarting
  // a stopped machine (scaleDown.mode deallocate) or booting a new one.
  struct Arrival {
    std::string pool;
    Duration took{};
    bool restart = false;
  };
  // Reads the provider's view and classifies the managed nodes of `ctx` (node_class,
  // next_starting_deadline); `gone` says which nodes the loop is deleting or deleted.
  std::vector<Arrival> Observe(StepContext& ctx, const std::function<bool(std::string_view)>& gone);
  // Backs off the pools that failed and cancels their requested nodes that have not come
  // (DecreaseTarget actions). True when pending pods must be re-planned at once.
  bool HandleFailures(StepContext& ctx);

  // The loop asked for `count` more nodes of `pool`.
  void RecordIncrease(const std::string& pool, int count, Time now);
  // The loop is deleting one registered node of `pool`.
  void RecordDeletion(const std::string& pool, Time now);
  // Results. OnIncreaseResult returns when the pods must be planned again if the increase
  // failed: at once, with the pool in backoff; kThrottledRetry later, without backoff, when the
  // failure was kThrottled or kConflict.
  std::optional<Time> OnIncreaseResult(const std::string& pool, int count,
                                       const Result<void>& result, Time now);
  void OnDecreaseResult(const std::string& pool, int count, const Result<void>& result, Time now);
  void OnDeleteReported(const std::string& pool, bool ok, Time now);

  // The failure that began the pool's last backoff, when it came at or after `since`: a scale-up
  // made then failed (a pool grows only out of backoff, so its first failure after begins one).
  std::optional<PoolFailure> FailureSince(std::string_view pool, Time since) const;
  // Cancels up to `count` requested nodes of `pool` that have not registered (a DecreaseTarget
  // with `reason`), the newest first; returns how many.
  int GiveBack(StepContext& ctx, const std::string& pool, int count, std::string reason);
  // Pools with scaleDown.mode deallocate (stopped_machines.cc). Whether a node of `pool`
  // removed now is stopped or deleted (always deleted in other pools), with the reason in words
  // ("" for other pools); a stop is counted in the pool's stopped machines at once.
  struct RemovalChoice {
    bool stop = false;
    std::string why;
  };
  RemovalChoice ChooseRemoval(const std::string& pool, Time now);
  // A stop's result (a failed stop is taken back from the count).
  void OnStopReported(const std::string& pool, bool ok, Time now);
  // How many of a pool's stopped machines are worth keeping now, and why; nullopt: nothing
  // known beyond maxStopped.
  struct StoppedKeep {
    int keep = 0;
    std::string why;
  };
  using KeepStopped = std::function<std::optional<StoppedKeep>(const model::Pool&, Time)>;
  // DeleteStopped actions for the stopped machines beyond maxStopped, or beyond what
  // `worth_keeping` says (WarmPlanner::StoppedWorthKeeping).
  void TrimStopped(StepContext& ctx, const KeepStopped& worth_keeping);

  int Upcoming(std::string_view pool) const;
  int Stopped(std::string_view pool) const;  // stopped machines, counting stops just asked for
  int Target(std::string_view pool) const;
  bool InBackoff(std::string_view pool, Time now) const;
  // Upcoming nodes (and with `backoffs`, the pools in backoff) for the planner.
  void FillPlannerInput(planner::PlannerInput& in, Time now, bool backoffs) const;
  // A backoff ran out since `last_planned`: its pool may take waiting pods now.
  bool BackoffEndedSince(Time now, const std::optional<Time>& last_planned) const;
  Duration ProvisionTimeout(const model::Pool& pool) const {
    return pool.provision_timeout.value_or(config_.scale_up.provision_timeout);
  }

  // Forgets nodes no longer observed.
  void Cleanup(const StepContext& ctx);
  void AddDigest(Digest& d) const;
  void AddTimers(Timers& t, bool pods_pending) const;
  // The pool's counts, target and backoff (warm fields left empty).
  PoolStatus Status(const model::Pool& pool, Time now) const;

 private:
  void Remember(StepContext& ctx);
  // The model's (id, NamesVersion) when the Step's nodes are the model's; nullopt otherwise.
  static std::optional<std::pair<uint64_t, uint64_t>> NamesOf(const StepContext& ctx);
  // The Step's nodes are the model's, and their names are those nodes_ holds.
  bool NamesUnchanged(const StepContext& ctx) const {
    return names_of_ && names_of_ == NamesOf(ctx);
  }
  // What the provider reported of the config's i-th pool, or nullptr.
  static const PoolObservation* Reported(const Observation& obs, size_t i, std::string_view pool);
  void Classify(StepContext& ctx, const std::function<bool(std::string_view)>& gone);
  void ReadProvider(const model::Pool& pool, PoolState& ps, const PoolObservation* reported,
                    Time now);
  void HandleStockout(StepContext& ctx, const model::Pool& pool, PoolState& ps, bool& replan);
  bool HandleTimeout(StepContext& ctx, const model::Pool& pool, PoolState& ps);
  bool HandleBrokenNodes(StepContext& ctx);
  // Recounts not-registered nodes from target and registered and matches the scale-up
  // requests to them: arrivals fill the oldest, unexplained ones are requested `now`.
  void SyncRequests(PoolState& ps, Time now);
  // Forgets the `count` most recently requested nodes (cancelled or refused).
  void DropNewestRequests(PoolState& ps, int count);
  // Cancels the `count` (> 0) most recently requested nodes of `pool`: a DecreaseTarget with
  // `reason`, expected until the provider shows it.
  void CancelNewest(StepContext& ctx, const std::string& pool, PoolState& ps, int count,
                    std::string reason);
  // Puts the pool in backoff (unless it is in backoff already) with the doubling duration, and
  // records the failure as its cause; `refused`: an increase the provider refused.
  void Backoff(PoolState& ps, std::string reason, Time now, bool refused = false);
  // Records a target change the loop asked for, until the provider's target shows it.
  void ExpectTargetChange(PoolState& ps, int delta, Time now);
  // The same for the stopped count; and the provider's stopped count read into `ps`.
  void ExpectStoppedChange(PoolState& ps, int delta, Time now);
  void ReadStopped(PoolState& ps, const PoolObservation* reported, Time now);
  // An increase starts stopped machines first: the expected stopped count drops with it.
  void NoteIncrease(PoolState& ps, int count, Time now);
  static bool InBackoff(const PoolState& ps, Time now) {
    return ps.backoff_until && *ps.backoff_until > now;
  }

  const model::AutoscalerConfig& config_;
  const LoopOptions& options_;
  std::map<std::string, PoolState, std::less<>> pools_;   // every configured pool
  std::map<std::string, NodeMemory, std::less<>> nodes_;  // nodes seen at the last Step
  // Bumped by every change of nodes_ (a node remembered or forgotten, a flag set): the digest
  // reads it instead of every node.
  uint64_t node_changes_ = 0;
  // The model (id, NamesVersion) whose live node names nodes_ holds exactly, set by a Cleanup on
  // the model's nodes; unset otherwise. While they stay, Remember and Cleanup have nothing to do:
  // a Step of a large cluster skips two walks of every name.
  std::optional<std::pair<uint64_t, uint64_t>> names_of_;
};

}  // namespace tidepool::autoscaler
