#include "autoscaler/runtime_tracker.h"

#include "planner/cluster.h"

namespace tidepool::autoscaler {

std::string RuntimeTracker::Uid(const model::Pod& pod) {
  return pod.meta.uid.empty() ? pod.Key() : pod.meta.uid;
}

bool RuntimeTracker::Learn(const model::Pod& pod, Time now) {
  if (pod.phase != model::PodPhase::kSucceeded || !pod.start_time) return false;
  if (!planner::IsTrainingPod(pod)) return false;
  if (!seen_.insert(Uid(pod)).second) return true;
  std::string key = planner::RuntimeOwnerKey(pod);
  if (key.empty()) return true;
  auto it = owners_.find(key);
  if (it == owners_.end()) {
    if (owners_.size() >= kMaxOwners) return true;
    it = owners_.emplace(key, Owner{}).first;
  }
  ++it->second.count;
  it->second.total += std::max(Duration::zero(), now - *pod.start_time);
  hints_.Set(key, it->second.total / it->second.count);
  return true;
}

void RuntimeTracker::Observe(const std::vector<const model::Pod*>& pods, Time now) {
  model_id_ = 0;
  std::unordered_set<std::string> present;
  for (const model::Pod* pod : pods)
    if (Learn(*pod, now)) present.insert(Uid(*pod));
  std::erase_if(seen_, [&](const std::string& uid) { return !present.contains(uid); });
}

void RuntimeTracker::Observe(const sched::ClusterModel& model, Time now) {
  // Another model (or a list before): every Succeeded pod, as a list, against what was learned.
  if (model.id() != model_id_ || seen_.size() > 2 * model.SucceededCount() + 1024) {
    cursor_ = 0;  // all of them, and the cursor after them, in one read
    Observe(model.SucceededSince(cursor_), now);
    model_id_ = model.id();
    return;
  }
  for (const model::Pod* pod : model.SucceededSince(cursor_)) Learn(*pod, now);
}

}  // namespace tidepool::autoscaler
