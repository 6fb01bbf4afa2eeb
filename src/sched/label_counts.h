// LabelCounts: how many placed pods of one namespace carry each value of one label key, per
// node slot. Lets the PreFilters of the spread and inter-pod affinity filters count the pods a
// one-key selector matches on a node without reading every pod (docs/architecture.md, "Label
// counts").
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/pod.h"

namespace tidepool::sched {

class LabelCounts {
 public:
  static constexpr uint32_t kNoValue = UINT32_MAX;

  LabelCounts(std::string ns, std::string key) : ns_(std::move(ns)), key_(std::move(key)) {}
  LabelCounts(const LabelCounts&) = delete;
  LabelCounts& operator=(const LabelCounts&) = delete;

  const std::string& ns() const { return ns_; }
  const std::string& key() const { return key_; }
  // The id of a label value, or kNoValue when no counted pod ever carried it. Ids are dense and
  // never reused, so ValueCount() growing is the only way an unknown value becomes known.
  uint32_t Find(std::string_view value) const {
    auto it = ids_.find(value);
    return it == ids_.end() ? kNoValue : it->second;
  }
  size_t ValueCount() const { return values_.size(); }
  // Pods on the node slot that carry the value; terminating ones (a deletionTimestamp, which the
  // spread filter skips and the inter-pod affinity filter does not) only with `terminating`.
  int32_t Count(uint32_t node, uint32_t value, bool terminating) const {
    for (const Entry& e : per_node_[node])
      if (e.value == value) return e.live + (terminating ? e.terminating : 0);
    return 0;
  }
  // The node slots with a pod (live or terminating) that carries the value, in no particular
  // order, so a count over the few nodes with the value need not visit every node. A slot whose
  // node was removed keeps its counts, as Count does, until the snapshot restores or pops it.
  const std::vector<uint32_t>& NodesWith(uint32_t value) const { return nodes_with_[value]; }

 private:
  friend class ClusterSnapshot;
  void AddSlot() { per_node_.emplace_back(); }
  void PopSlot();
  // +1 or -1 for a pod placed on or taken off the node slot.
  void Change(const model::Pod& pod, uint32_t node, int32_t delta);
  // Counts the node slot again from the pods on it (a node restored by a revert).
  void Recount(uint32_t node, const std::vector<const model::Pod*>& pods);

  std::string ns_;
  std::string key_;
  std::deque<std::string> values_;                      // owned; ids index it
  std::unordered_map<std::string_view, uint32_t> ids_;  // views into values_
  struct Entry {
    uint32_t value;
    int32_t live;
    int32_t terminating;
    uint32_t listed;  // the node's position in nodes_with_[value]
  };
  // Takes the node off nodes_with_[value] (its entry for the value is going).
  void Unlist(uint32_t node, const Entry& entry);
  // Per node slot, the values present; a handful per node.
  std::vector<std::vector<Entry>> per_node_;
  // Per value id, the node slots with an entry for it.
  std::vector<std::vector<uint32_t>> nodes_with_;
};

}  // namespace tidepool::sched
