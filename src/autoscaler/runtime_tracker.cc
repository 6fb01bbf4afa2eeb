#include "autoscaler/runtime_tracker.h"

#include "planner/cluster.h"

namespace tidepool::autoscaler {

void RuntimeTracker::Observe(const std::vector<const model::Pod*>& pods, Time now) {
  std::unordered_set<std::string> present;
  for (const model::Pod* pod : pods) {
    if (pod->phase != model::PodPhase::kSucceeded || !pod->start_time) continue;
    if (!planner::IsTrainingPod(*pod)) continue;
    const std::string& uid = pod->meta.uid.empty() ? pod->Key() : pod->meta.uid;
    present.insert(uid);
    if (seen_.contains(uid)) continue;
    seen_.insert(uid);
    std::string key = planner::RuntimeOwnerKey(*pod);
    if (key.empty()) continue;
    auto it = owners_.find(key);
    if (it == owners_.end()) {
      if (owners_.size() >= kMaxOwners) continue;
      it = owners_.emplace(key, Owner{}).first;
    }
    ++it->second.count;
    it->second.total += std::max(Duration::zero(), now - *pod->start_time);
    hints_.Set(key, it->second.total / it->second.count);
  }
  std::erase_if(seen_, [&](const std::string& uid) { return !present.contains(uid); });
}

}  // namespace tidepool::autoscaler
