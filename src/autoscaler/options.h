// The loop's knobs that the configuration file does not (yet) expose: eviction retries, grace
// periods, and the planner options the simulator's comparison policies change.
#pragma once

#include <chrono>
#include <optional>

#include "base/time.h"
#include "planner/scale_up.h"

namespace tidepool::autoscaler {

// Knobs of the loop that the configuration file does not (yet) expose.
struct LoopOptions {
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
  // ProvisioningRequests (docs/kueue.md): how long a request may name a PodTemplate not seen yet
  // (it may be created just after). The booking time is scaleUp.provisioningRequests.bookingTime.
  Duration template_grace = std::chrono::seconds(10);
};

}  // namespace tidepool::autoscaler
