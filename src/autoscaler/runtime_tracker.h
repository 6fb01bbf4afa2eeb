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
#include "sched/cluster_model.h"

namespace tidepool::autoscaler {

class RuntimeTracker {
 public:
  // At most this many owners are remembered; later owners are not learned.
  static constexpr size_t kMaxOwners = 20000;

  // Learns from every training pod of `pods` seen Succeeded for the first time: its runtime is
  // from status.startTime to `now` (the first time it is seen done; at most a scan late).
  void Observe(const std::vector<const model::Pod*>& pods, Time now);
  // The same, with the model's Succeeded pods: only those that became Succeeded since the last
  // call on this model are read (ClusterModel::SucceededSince). A cluster that keeps tens of
  // thousands of finished Job pods pays for the new ones, not for all of them at every scan.
  // Succeeded is for good: a pod leaves it only when deleted, and its uid does not come back. What
  // was learned from is pruned of the pods gone when it outnumbers the present ones twice over.
  void Observe(const sched::ClusterModel& model, Time now);

  // Mean runtime per owner, for PlannerInput::runtime_hints.
  const planner::RuntimeHints& hints() const { return hints_; }

 private:
  // Learns from `pod` unless it is no finished training pod or was learned from already; returns
  // whether it is a finished training pod (learned from now or before).
  bool Learn(const model::Pod& pod, Time now);
  static std::string Uid(const model::Pod& pod);

  struct Owner {
    int64_t count = 0;
    Duration total{};
  };
  std::unordered_map<std::string, Owner> owners_;
  // Pods already learned from, still present; pruned of those gone at each Observe.
  std::unordered_set<std::string> seen_;
  // The model the last Observe read (0: none, or a list), and its SucceededSince cursor.
  uint64_t model_id_ = 0;
  uint64_t cursor_ = 0;
  planner::RuntimeHints hints_;
};

}  // namespace tidepool::autoscaler
