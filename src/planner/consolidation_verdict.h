// ConsolidationVerdict: the numbers behind one node's consolidation decision (planner/
// disruption.h weighs them), plain values carried by the scale-down plan.
#pragma once

#include <string>
#include <string_view>

#include "base/time.h"

namespace tidepool::planner {

enum class ConsolidationDecision {
  kPays,               // evict now
  kDoesNotPay,         // keep: the savings do not cover the work lost x safety factor
  kWaitForCheckpoint,  // keep for now: evicting right after a near checkpoint pays more
};
std::string_view ConsolidationDecisionName(ConsolidationDecision d);

// The numbers behind one node's decision, for the plan, `explain --node`, Events and metrics.
struct ConsolidationVerdict {
  ConsolidationDecision decision = ConsolidationDecision::kDoesNotPay;
  double node_price_per_hour = 0;
  Duration horizon{};  // how long the node would otherwise run (at most max_horizon)
  double savings = 0;  // node price x horizon
  // What the nodes its training pods move to cost for running longer than they would have
  // (their price x how much longer), set once a pass placed the pods.
  double extension = 0;
  double work_lost = 0;       // price of the unsaved progress and the restarts
  double gpu_hours_lost = 0;  // GPU-hours of unsaved progress
  double safety_factor = 1;
  int training_pods = 0;
  Duration wait{};          // kWaitForCheckpoint: until the checkpoint evicting waits for
  std::string waiting_for;  // kWaitForCheckpoint: the pod whose checkpoint that is
  // kWaitForCheckpoint: the work lost when evicting right after that checkpoint (the price of
  // what is unsaved by then, restarts included).
  double work_lost_after_wait = 0;
  // The replace move: the pool of the one new node that takes the pods no node that stays holds,
  // and its price ("" and 0 for the delete move). The savings are then (node price - this) x
  // horizon.
  std::string replacement_pool;
  double replacement_price_per_hour = 0;
};

}  // namespace tidepool::planner
