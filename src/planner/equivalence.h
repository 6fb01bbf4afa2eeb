// Pod equivalence keys: pods with the same key are interchangeable for the planner. Scale-up plans
// them as one group; scale-down's placement of pending pods searches once per key.
#pragma once

#include <string>

#include "model/pod.h"

namespace tidepool::planner {

// Everything that decides where a pod can go: the same owner, requests, selectors, tolerations,
// inter-pod rules and, when those rules can match the pod itself, the same labels. A compact
// binary string, not for display.
std::string EquivalenceKey(const model::Pod& p);

// The part of it that sched::PassesNodeConstraints reads (nodeSelector, required node affinity,
// tolerations): pods with the same key pass those filters on the same nodes.
std::string NodeConstraintsKey(const model::Pod& p);

}  // namespace tidepool::planner
