// What must hold at every moment of a simulated run (SimConfig::check_invariants): pools within
// their max, pods only on ready nodes, gangs all-or-nothing, pending counted right, cost rising.
#pragma once

#include <string>

#include "sim/sim_cloud.h"
#include "sim/workload.h"

namespace tidepool::sim {

// The first invariant violated at `now`, naming the time and the object; "" when all hold.
// `cost` is the cost billed so far; `last_cost` the cost at the previous check (updated).
std::string CheckInvariants(Time now, const SimCloud& cloud, const Workload& workload, double cost,
                            double& last_cost);

}  // namespace tidepool::sim
