#include "sched/label_counts.h"

#include <algorithm>

#include "base/check.h"

namespace tidepool::sched {

void LabelCounts::Change(const model::Pod& pod, uint32_t node, int32_t delta) {
  if (pod.meta.namespace_ != ns_) return;
  auto label = pod.meta.labels.find(key_);
  if (label == pod.meta.labels.end()) return;
  uint32_t id = Find(label->second);
  if (id == kNoValue) {
    TIDEPOOL_CHECK(delta > 0);
    id = static_cast<uint32_t>(values_.size());
    values_.push_back(label->second);
    ids_.emplace(values_.back(), id);
  }
  auto& entries = per_node_[node];
  auto it =
      std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.value == id; });
  if (it == entries.end()) {
    TIDEPOOL_CHECK(delta > 0);
    it = entries.insert(entries.end(), Entry{id, 0, 0});
  }
  int32_t& count = pod.meta.deletion_timestamp ? it->terminating : it->live;
  count += delta;
  TIDEPOOL_CHECK(count >= 0);
  if (it->live == 0 && it->terminating == 0) {
    *it = entries.back();
    entries.pop_back();
  }
}

void LabelCounts::Recount(uint32_t node, const std::vector<const model::Pod*>& pods) {
  per_node_[node].clear();
  for (const model::Pod* p : pods) Change(*p, node, +1);
}

}  // namespace tidepool::sched
