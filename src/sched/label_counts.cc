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
    nodes_with_.emplace_back();
  }
  auto& entries = per_node_[node];
  auto it =
      std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.value == id; });
  if (it == entries.end()) {
    TIDEPOOL_CHECK(delta > 0);
    auto listed = static_cast<uint32_t>(nodes_with_[id].size());
    nodes_with_[id].push_back(node);
    it = entries.insert(entries.end(), Entry{id, 0, 0, listed});
  }
  int32_t& count = pod.meta.deletion_timestamp ? it->terminating : it->live;
  count += delta;
  TIDEPOOL_CHECK(count >= 0);
  if (it->live == 0 && it->terminating == 0) {
    Unlist(node, *it);
    *it = entries.back();
    entries.pop_back();
  }
}

void LabelCounts::Unlist(uint32_t node, const Entry& entry) {
  std::vector<uint32_t>& nodes = nodes_with_[entry.value];
  TIDEPOOL_CHECK(entry.listed < nodes.size() && nodes[entry.listed] == node);
  uint32_t moved = nodes.back();
  nodes.pop_back();
  if (entry.listed == nodes.size()) return;
  nodes[entry.listed] = moved;
  for (Entry& e : per_node_[moved]) {
    if (e.value == entry.value) {
      e.listed = entry.listed;
      return;
    }
  }
  TIDEPOOL_CHECK_MSG(false, "a listed node without an entry for the value");
}

void LabelCounts::PopSlot() {
  uint32_t node = static_cast<uint32_t>(per_node_.size() - 1);
  for (const Entry& e : per_node_.back()) Unlist(node, e);
  per_node_.pop_back();
}

void LabelCounts::Recount(uint32_t node, const std::vector<const model::Pod*>& pods) {
  for (const Entry& e : per_node_[node]) Unlist(node, e);
  per_node_[node].clear();
  for (const model::Pod* p : pods) Change(*p, node, +1);
}

}  // namespace tidepool::sched
