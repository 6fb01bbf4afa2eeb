// The restarts evictions caused in one or several runs, one CSV row each, so the work a policy
// throws away can be read eviction by eviction (`tidepool simulate --losses FILE`).
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "sim/compare.h"

namespace tidepool::sim {

// The CSV: a header, then per run (in order) its restarts in the order they happened:
//   policy,pod,at,ran_hours,lost_hours,gpus,work_lost_gpu_hours,cause
// `at` is RFC 3339; `cause` is "spot" (its spot node was reclaimed) or "drain".
std::string LossesCsv(const std::vector<PolicyRun>& runs);

// Writes LossesCsv(runs) to `path`; the error names the path.
Result<void> WriteLossesCsv(const std::vector<PolicyRun>& runs, const std::string& path);

}  // namespace tidepool::sim
