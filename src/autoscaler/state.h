// The decision loop's memory between Steps: per pool (target expectations, scale-up requests,
// backoff), per node (first seen) and per removal (taint, evictions, deletion). Internal to loop.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>

#include "autoscaler/demand_profile.h"
#include "base/time.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

// Nodes asked for in one increase and not registered yet; arrivals fill the oldest first.
struct ScaleUpRequest {
  int remaining = 0;
  Time requested_at{};
  int restarts = 0;  // of `remaining`, stopped machines it restarts (they join first)
};

// A failure of a pool's scale-up that put the pool in backoff.
struct PoolFailure {
  Time at{};
  std::string reason;    // in words, e.g. "increasing the pool by 2 failed: ..."
  bool refused = false;  // the provider refused an increase: nothing of it was added
};

struct PoolState {
  // From the last PoolObservation (observed == false: the provider said nothing of the pool).
  bool observed = false;
  int observed_target = 0;
  int provider_registered = 0;
  bool stockout = false;
  std::string stockout_reason;
  int observed_stopped = 0;

  // A target the loop asked for (increase, cancellation, deletion) that the observed target
  // does not show yet; it wins over observed_target until it shows, or until its results are
  // all reported and LoopOptions::target_report_grace has passed.
  std::optional<int> expected_target;
  int unreported = 0;  // target-changing actions whose results are not reported yet
  Time expected_touched{};

  std::deque<ScaleUpRequest> requests;  // oldest first

  // Like expected_target, for the stopped count: what the loop's stops and DeleteStopped make
  // it, until the provider shows it or LoopOptions::observe_grace passes without a change.
  std::optional<int> expected_stopped;
  Time expected_stopped_touched{};
  std::string stopped_reason;  // the last decision about stopped machines, in words

  int backoff_level = 0;  // failures since the last successful registration
  std::optional<Time> backoff_until;
  PoolFailure backoff_cause;  // the failure that began the last backoff (set with backoff_until)

  // Counts at the last Step (see PoolStatus), and registered at the Step before (PoolTracker
  // compares the two: a node that joined ends a backoff).
  int registered = 0;
  int registered_before = 0;
  int ready = 0;
  int starting = 0;
  int not_registered = 0;

  int target() const { return expected_target.value_or(observed_target); }
  int stopped() const { return expected_stopped.value_or(observed_stopped); }
  int upcoming() const { return not_registered + starting; }
};

struct NodeMemory {
  Time first_seen{};             // stands in for a missing creationTimestamp
  bool ever_usable = false;      // was Ready (with its GPUs) at some Step
  bool broken_reported = false;  // never usable within the provision timeout; pool backed off
};

struct PodEviction {
  enum class State { kInFlight, kRetry, kEvicted };
  State state = State::kInFlight;
  int failures = 0;
  Time retry_at{};
  std::string last_error;
};

// One node on its way out.
struct Removal {
  enum class Phase { kTainting, kDraining, kDeleting };
  std::string node;
  std::string pool;
  planner::RemovalKind kind = planner::RemovalKind::kEmpty;
  std::string detail;  // the planner's words, e.g. "utilization 0.10 < 0.5 (cpu)"
  std::optional<planner::ConsolidationVerdict> consolidation;  // training pods weighed
  bool stop = false;          // kDeleting: the machine is being stopped, not deleted
  std::string method_reason;  // why it is stopped or deleted (deallocate pools), else ""
  Phase phase = Phase::kTainting;
  Time started{};                     // taint requested (or adopted after a restart)
  bool taint_confirmed = false;       // OnTaintResult ok, or the taint observed
  std::optional<Time> drain_started;  // first evictions sent
  std::optional<Time> all_evicted_at;
  std::map<std::string, PodEviction> pods;  // pod key -> eviction
};

// One pre-warm decision, charged its committed worst case against warm.predictive.maxCostPerDay.
// Its nodes are held idle (whole-node placeholders) until `until`, the end of the predicted
// burst's slot, and only then: no idle node is held for a prediction without a charge.
struct PrewarmCharge {
  Time at{};
  int nodes = 0;
  double cost = 0;
  Time until{};
};

// Warm capacity of one pool with pools[].warm (WarmPlanner, autoscaler/warm_planner.h).
struct WarmState {
  DemandProfile profile;
  std::optional<Duration> boot_estimate;  // learned: node creation -> usable (EWMA)
  std::deque<PrewarmCharge> ledger;       // the last 24 hours, oldest first
  // At the last pass (status; not decision state).
  double demand = 0;
  DemandProfile::Prediction prediction;
  int prewarm_nodes = 0;             // whole-node placeholders held for the prediction
  std::optional<Time> next_prewarm;  // when the value/cost rule would next say yes
  std::string reason;                // the last warm decision in words
  std::string unmet;                 // why the last plan could not place all placeholders
  std::string stock_reason;          // warm.stoppedNodes: the last shortfall seen, in words
};

}  // namespace tidepool::autoscaler
