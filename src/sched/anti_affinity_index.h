// AntiAffinityIndex: the required anti-affinity terms of the pods placed in a snapshot, filed
// under a label that every pod a term selects must carry, so the check "which placed pods'
// anti-affinity select this pod" reads only the terms that could select it instead of every
// placed pod (docs/architecture.md, "Label counts").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/pod.h"

namespace tidepool::sched {

class AntiAffinityIndex {
 public:
  // One term of a placed pod: owner->affinity().pod_anti_affinity_required[term], on `node`.
  struct Entry {
    const model::Pod* owner;
    uint32_t term;
    uint32_t node;
    bool operator==(const Entry&) const = default;
  };

  // Calls f(entry) for every placed term that may select `pod`: those filed under one of the
  // pod's labels (key=value, or the key alone for an Exists requirement), and those with no
  // such label (a selector of NotIn or DoesNotExist only, or an empty one). Each term once;
  // f must still test the term (namespaces, the rest of the selector).
  // A template: it runs once per FitChecker, calling f for every entry.
  template <typename F>
  void ForEachCandidate(const model::Pod& pod, F&& f) const {
    for (const Entry& e : unfiled_) f(e);
    for (const auto& [key, value] : pod.meta.labels) {
      auto k = by_key_.find(key);
      if (k == by_key_.end()) continue;
      for (const Entry& e : k->second.any) f(e);
      auto v = k->second.value.find(value);
      if (v == k->second.value.end()) continue;
      for (const Entry& e : v->second) f(e);
    }
  }

 private:
  friend class ClusterSnapshot;
  // A pod with required anti-affinity placed on or taken off a node.
  void Add(const model::Pod& pod, uint32_t node);
  void Remove(const model::Pod& pod, uint32_t node);
  // Calls f(list) for each list the term is filed in (made on demand); none for a term without
  // a label selector, which selects no pods.
  template <typename F>
  void ForEachList(const model::PodAffinityTerm& term, F&& f);

  struct KeyLists {
    std::vector<Entry> any;                                        // Exists
    std::map<std::string, std::vector<Entry>, std::less<>> value;  // key=value, key In (...)
  };
  std::map<std::string, KeyLists, std::less<>> by_key_;
  std::vector<Entry> unfiled_;
};

}  // namespace tidepool::sched
