// The one executor of the decision loop's actions, against two ports: the cloud provider and the
// cluster writer. The live controller and the simulator both carry out actions through it.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "actuator/cluster_writer.h"
#include "autoscaler/action.h"
#include "autoscaler/loop.h"
#include "autoscaler/observation.h"
#include "base/time.h"
#include "cloud/provider.h"

namespace tidepool::actuator {

// Told of every action's outcome (metrics, logs). An EvictPods action reports once per pod.
class Listener {
 public:
  virtual ~Listener() = default;
  virtual void Carried(const autoscaler::Action& action, const std::string* pod,
                       const Result<void>& result) = 0;
  // A failure beside an action's own result (a Node object left after its machine went, a
  // taint not taken off again): worth a log line, changes no decision.
  virtual void SideFailure(const Error& error) = 0;
};

// Carries out actions in order and reports each result the loop waits for back to it:
//  - IncreasePool / DecreaseTarget: the provider, then OnIncreaseResult / OnDecreaseResult.
//  - TaintNode: the ToBeDeleted taint, then the node's pods read fresh: a pod there that the
//    view the plan was made from did not have means the cache lagged, so the taint is taken off
//    again and the removal fails (OnTaintResult) rather than going on with stale data.
//  - EvictPods: one eviction per pod, each reported (OnEvictResult).
//  - DeleteNode: the provider deletes the machine (lowering the target), then the Node object
//    goes; a node already gone from the view is success (OnDeleteResult). With method kStop the
//    provider stops it instead (cloud::MachineStopper); a provider without that capability
//    fails the action (kInvalidArgument), so the loop rolls the removal back.
//  - DeleteStopped: the provider's MachineStopper; fire and forget.
//  - Mark/UnmarkCandidate, UntaintNode, Event, UpdateProvisioningRequest, UpdateCapacityBuffer:
//    fire and forget.
// `view` is the observation the actions were decided on; its objects must stay valid for the
// whole call, also when a provider deletes what they describe (the live view holds shared
// pointers; the simulator keeps an ended node until its next observation). Each action is
// carried out, and its results reported, at clock.Now(). Not thread-safe; borrows everything.
class Actuator {
 public:
  Actuator(cloud::CloudProvider& provider, ClusterWriter& writer, const Clock& clock,
           Listener* listener = nullptr)
      : provider_(provider),
        stopper_(dynamic_cast<cloud::MachineStopper*>(&provider)),
        writer_(writer),
        clock_(clock),
        listener_(listener) {}

  // Asked before each action; false stops the batch there (the live controller: leadership).
  using Proceed = std::function<bool(const autoscaler::Action&)>;
  // Carries out `actions` in order while `proceed` (when set) says yes; returns how many were
  // carried out.
  size_t Carry(std::span<const autoscaler::Action> actions, const autoscaler::Observation& view,
               autoscaler::Autoscaler& loop, const Proceed& proceed = {});

 private:
  class Batch;  // one Carry call: the view, the loop and the uid index (actuator.cc)

  cloud::CloudProvider& provider_;
  cloud::MachineStopper* stopper_;  // the provider's capability, or nullptr
  ClusterWriter& writer_;
  const Clock& clock_;
  Listener* listener_;
};

}  // namespace tidepool::actuator
