// The simulator's accounts: what the run cost (per second, per pool), the timeline of nodes,
// pending pods and cost for the report, and the summary of cost and waiting at the end.
#pragma once

#include <cstdint>

#include "sim/sim_cloud.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace tidepool::sim {

class Ledger {
 public:
  Ledger(const SimInput& in, const model::AutoscalerConfig& config, const SimCloud& cloud,
         const Workload& workload)
      : in_(in), config_(config), cloud_(cloud), workload_(workload) {}

  // Adds a timeline point when nodes or pending pods changed (`version` moved); `last`: always
  // (the end of the run). Only with SimInput::record_timeline.
  void RecordTimeline(Time now, uint64_t version, bool last = false);
  // Billed from each instance's request to its end (or `t`).
  double CostAt(Time t) const;
  // The summary at `now`, the end of the run; `summary` already holds the loop's counters.
  Summary Summarize(Time now, Summary summary);
  Timeline& timeline() { return timeline_; }

 private:
  void SummarizeWaits(Summary& s) const;

  const SimInput& in_;
  const model::AutoscalerConfig& config_;
  const SimCloud& cloud_;
  const Workload& workload_;
  Timeline timeline_;
  uint64_t timeline_version_ = 0;
  double timeline_cost_ = 0;
  Time timeline_at_{};
};

}  // namespace tidepool::sim
