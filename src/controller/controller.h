// The live controller: reads the cluster, asks the decision loop what to do, and carries it out
// through the cloud provider and the API server. The only place real time meets the loop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "actuator/actuator.h"
#include "autoscaler/loop.h"
#include "base/time.h"
#include "cloud/provider.h"
#include "controller/ports.h"
#include "controller/provider_epoch.h"
#include "model/pool.h"
#include "ops/tidepool_metrics.h"

namespace tidepool::controller {

struct ControllerOptions {
  // Log what would be done and do none of it (no provider call, no write).
  bool dry_run = false;
  // Give up starting when the caches have not listed within this.
  Duration sync_timeout = std::chrono::minutes(2);
  // The status ConfigMap is rewritten when it changed, at most this often.
  Duration status_interval = std::chrono::seconds(5);
  // With a predictive warm pool, what the loop learned is saved (ClusterWriter::WriteWarmState)
  // this often when it changed, and at shutdown; it is loaded whenever a fresh loop starts.
  Duration warm_state_interval = std::chrono::minutes(5);
  // Passes closer together than this are merged (a burst of pod events is one pass).
  Duration min_pass_interval = std::chrono::milliseconds(20);
  // After a failed provider refresh, the next try waits this long (doubling up to 30 s).
  Duration refresh_retry = std::chrono::seconds(1);
  // Whether this replica may act now (leader election); unset: always.
  std::function<bool()> is_leader;
  autoscaler::LoopOptions loop;
  // Where the controller counts what it does (scale-ups, evictions, pass durations) and
  // publishes the loop's status gauges. Borrowed; unset: no metrics.
  ops::TidepoolMetrics* metrics = nullptr;
};

// Why a pass did not act, or stopped acting.
enum class SkipReason {
  kNone,
  kNotLeader,
  kNotSynced,              // the caches have not listed yet
  kWaitingForProvider,     // retrying the provider after a failed refresh, not yet due
  kProviderRefreshFailed,  // the provider's view could not be read: no decisions on half a view
  kLostLeadership,         // in the middle of the pass; the rest of its actions dropped
};

// What happened in the last pass, for tests, metrics and the status page.
struct PassReport {
  Time time{};
  bool acted = false;  // false: not leader, not synced, or the provider refresh failed
  SkipReason skip = SkipReason::kNone;
  std::string skipped_because;  // the same in words, with the provider's error
  std::vector<autoscaler::Action> actions;
  // The loop skipped its Step: nothing it reads (the view's objects, the provider's pool sizes and
  // node mapping) changed since a Step that decided nothing, and no timer is due.
  bool unchanged = false;
  Duration duration{};
};

// The objects of a view as the loop observes them (pointers into the view, which must outlive
// it): no pools, provider mapping, model or version.
autoscaler::Observation ObservationOf(const ClusterView& view);

// Contract: Run() blocks until `stop` is set. Each pass: snapshot the cluster, refresh the
// provider (a failure skips the pass: the loop never decides on a half view), Step the loop,
// carry out its actions in order and report each result back. A pass runs when the loop asks
// (NextWakeup), when the reader reports an urgent change, and at least every scanInterval.
//
// Leadership: before every action the controller asks `is_leader`; once it says no, the rest
// of the pass is dropped and the decision loop is discarded. A replica that becomes leader
// starts a fresh loop, which rebuilds its state from the cluster and the provider (the loop's
// crash-safety contract), exactly as after a restart.
//
// Thread-safety: Run on one thread; Notify, Status and LastPass from any thread.
class Controller {
 public:
  Controller(const model::AutoscalerConfig& config, ClusterReader& reader, ClusterWriter& writer,
             cloud::CloudProvider& provider, const Clock& clock, ControllerOptions options = {});

  Result<void> Run(const std::atomic<bool>& stop);
  // One pass at `now` (Run calls it; tests call it directly).
  PassReport RunOnce(Time now);
  // Wakes Run for a pass now.
  void Notify();

  std::optional<autoscaler::Status> Status() const;
  PassReport LastPass() const;

 private:
  bool Leading() const { return !options_.is_leader || options_.is_leader(); }
  // False (and why in `report`) when the pass may not act now.
  bool MayAct(PassReport& report, Time now);
  // The provider's view; nullopt (and why in `report`) when it could not be read.
  std::optional<std::vector<cloud::PoolSize>> RefreshProvider(PassReport& report, Time now);
  // The provider's view for this pass: read when none is kept, after tidepool's own actions
  // changed it, or once it is a scan interval old; otherwise the one kept. A pass woken by a pod
  // event that only opens a batch window so touches no API. A refresh tells the provider epoch
  // what it read, with the pass's `view`.
  std::optional<std::vector<cloud::PoolSize>> ProviderView(PassReport& report, Time now,
                                                           const ClusterView& view);
  // The observation of the view and the provider's sizes, versioned by both (unversioned when
  // the view is).
  autoscaler::Observation Observe(const ClusterView& view,
                                  const std::vector<cloud::PoolSize>& sizes) const;
  // The observation's version: the view's with the provider epoch's (0 when the view has none).
  uint64_t VersionOf(const ClusterView& view) const;
  // Carries out the actions through the actuator, checking leadership before each.
  void Act(PassReport& report, const autoscaler::Observation& obs);
  PassReport& Finish(PassReport& report);
  void PublishStatus(Time now);
  // Warm-capacity state: load into a fresh loop; save when due (or `force`).
  void LoadWarmState();
  void SaveWarmState(Time now, bool force);

  model::AutoscalerConfig config_;
  ClusterReader& reader_;
  ClusterWriter& writer_;
  cloud::CloudProvider& provider_;
  const Clock& clock_;
  ControllerOptions options_;

  std::unique_ptr<autoscaler::Autoscaler> loop_;  // null while not leading
  std::optional<Time> refresh_retry_at_;
  Duration refresh_backoff_{};
  std::optional<std::vector<cloud::PoolSize>> sizes_;  // the provider's last answer
  Time sizes_at_{};
  ProviderEpoch provider_epoch_{config_};
  std::string last_status_text_;
  std::optional<Time> last_status_write_;
  std::string last_warm_state_;
  std::optional<Time> last_warm_save_;

  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  bool notified_ = false;
  std::optional<autoscaler::Status> status_;
  PassReport last_pass_;
};

}  // namespace tidepool::controller
