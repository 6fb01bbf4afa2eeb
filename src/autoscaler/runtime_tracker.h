// RuntimeTracker: how long training pods of each owner run, learned from the pods the loop sees
// finish, for consolidation's horizon (planner::RuntimeHints, docs/consolidation.md).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/time.h"
#include "model/pod.h"
#include "planner/disruption.h"

namespace tidepool::autoscaler {

class RuntimeTracker {
 public:
  // At most this many owners are remembered; later owners are not learned.
  static constexpr size_t kMaxOwners = 20000;

  // Learns from every training pod of `pods` seen Succeeded for the first time: its runtime is
  // from status.startTime to `now` (the first time it is seen done; at most a scan late).
  void Observe(const std::vector<const model::Pod*>& pods, Time now);

  // Mean runtime per owner, for PlannerInput::runtime_hints.
  const planner::RuntimeHints& hints() const { return hints_; }

 private:
  struct Owner {
    int64_t count = 0;
    Duration total{};
  };
  std::unordered_map<std::string, Owner> owners_;
  // Pods already learned from, still present; pruned of those gone at each Observe.
  std::unordered_set<std::string> seen_;
  planner::RuntimeHints hints_;
};

}  // namespace tidepool::autoscaler
