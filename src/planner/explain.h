// Turns a planner reason into what a person needs: what blocks the pod in this pool and what
// would unblock it. Used by `tidepool explain`, Events and the status.
#pragma once

#include <string>

#include "model/pod.h"
#include "model/pool.h"
#include "planner/reason.h"

namespace tidepool::planner {

// `reason` is what the scale-up recorded for (pod, pool); returns it with the remedy appended,
// e.g. "pool gpu-light lacks a toleration for taint sku=gpu:NoSchedule (add a toleration to
// the pod, or use a pool without the taint)".
std::string ExplainReason(const model::Pod& pod, const model::Pool& pool, const PoolReason& reason);

}  // namespace tidepool::planner
