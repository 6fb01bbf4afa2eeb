#include "sched/anti_affinity_index.h"

#include <algorithm>

#include "base/check.h"

namespace tidepool::sched {

template <typename F>
void AntiAffinityIndex::ForEachList(const model::PodAffinityTerm& term, F&& f) {
  if (!term.has_label_selector) return;
  const model::LabelSelector& sel = term.label_selector;
  // matchLabels first: the pod must carry that key with that value.
  if (!sel.match_labels.empty()) {
    const auto& [key, value] = *sel.match_labels.begin();
    f(by_key_[key].value[value]);
    return;
  }
  for (const model::SelectorRequirement& r : sel.match_expressions) {
    if (r.op == model::SelectorOp::kIn) {
      KeyLists& lists = by_key_[r.key];
      std::vector<std::string_view> seen;
      for (const std::string& v : r.values) {
        if (std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
        seen.push_back(v);
        f(lists.value[v]);
      }
      return;
    }
  }
  for (const model::SelectorRequirement& r : sel.match_expressions) {
    if (r.op == model::SelectorOp::kExists || r.op == model::SelectorOp::kGt ||
        r.op == model::SelectorOp::kLt) {
      f(by_key_[r.key].any);
      return;
    }
  }
  f(unfiled_);
}

void AntiAffinityIndex::Add(const model::Pod& pod, uint32_t node) {
  const auto& terms = pod.affinity().pod_anti_affinity_required;
  for (uint32_t t = 0; t < terms.size(); ++t)
    ForEachList(terms[t], [&](std::vector<Entry>& list) { list.push_back({&pod, t, node}); });
}

void AntiAffinityIndex::Remove(const model::Pod& pod, uint32_t node) {
  const auto& terms = pod.affinity().pod_anti_affinity_required;
  for (uint32_t t = 0; t < terms.size(); ++t) {
    ForEachList(terms[t], [&](std::vector<Entry>& list) {
      // Reverts remove the latest additions first: search from the back.
      Entry e{&pod, t, node};
      auto it = std::find(list.rbegin(), list.rend(), e);
      TIDEPOOL_CHECK_MSG(it != list.rend(), "anti-affinity term of an unplaced pod");
      *it = list.back();
      list.pop_back();
    });
  }
}

}  // namespace tidepool::sched
