// NameMap<V>: values by name in one sorted vector, for the maps a Step fills once, nearly always
// in name order, and then only reads (StepContext's nodes, their pools and classes).
#pragma once

#include <algorithm>
#include <cassert>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"

namespace tidepool {

// Advances `it` over entries (pairs keyed by name, in name order) that come before `name`, and
// says whether it stopped at `name`: the step of a walk that pairs two lists in name order, with
// one comparison per entry passed (names share long prefixes, so comparing twice costs).
template <typename It>
bool SeekName(It& it, It end, std::string_view name) {
  int order = 1;  // of it->first against name
  while (it != end && (order = std::string_view(it->first).compare(name)) < 0) ++it;
  return it != end && order == 0;
}

// A std::map<std::string_view, V> for that use: one allocation for all entries instead of one per
// entry, and lookups by binary search over contiguous names. Iteration is in name order. The
// names are views: what they point into must outlive the map.
template <typename V>
class NameMap {
 public:
  using value_type = std::pair<std::string_view, V>;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  // Adds `name` unless it is there already (the first value of a name wins). In name order this
  // appends; out of order it inserts, moving the names after it.
  void Add(std::string_view name, V value) {
    if (entries_.empty() || entries_.back().first < name) {
      entries_.emplace_back(name, std::move(value));
      return;
    }
    auto at = LowerBound(name);
    if (at != entries_.end() && at->first == name) return;
    entries_.emplace(at, name, std::move(value));
  }
  // Adds `name`, which comes after every name there: for a walk over another NameMap (or any
  // list of distinct names in name order), without the comparison Add makes per name.
  void Append(std::string_view name, V value) {
    assert(entries_.empty() || entries_.back().first < name);
    entries_.emplace_back(name, std::move(value));
  }
  void Reserve(size_t n) { entries_.reserve(n); }

  const_iterator find(std::string_view name) const {
    auto at = LowerBound(name);
    return at != entries_.end() && at->first == name ? at : entries_.end();
  }
  bool contains(std::string_view name) const { return find(name) != end(); }
  // The value of a name that is there (checked).
  const V& at(std::string_view name) const {
    auto it = find(name);
    TIDEPOOL_CHECK_MSG(it != end(), "NameMap::at: no such name");
    return it->second;
  }

  // Looks up names asked in name order (nodes walked in name order, looked up in a map of some
  // of them): each search goes on from where the last one ended, so a walk costs one pass over
  // the map, not a binary search per name. A name asked out of order is searched for anew. A view
  // of the very bytes of an entry's name (the map's names are often views of the caller's)
  // matches without comparing them.
  class Walker {
   public:
    explicit Walker(const NameMap& map) : map_(map), at_(map.begin()) {}
    const_iterator find(std::string_view name) {
      const const_iterator end = map_.end();
      if (at_ != end && SameBytes(at_->first, name)) return at_;
      if (at_ != end && at_->first < name) {
        do ++at_;
        while (at_ != end && !SameBytes(at_->first, name) && at_->first < name);
      } else if (at_ != map_.begin() && !(std::prev(at_)->first < name)) {
        at_ = map_.LowerBound(name);  // asked out of order
      }
      return at_ != end && (SameBytes(at_->first, name) || at_->first == name) ? at_ : end;
    }
    // The value of a name that is there (checked), as NameMap::at.
    const V& at(std::string_view name) {
      auto it = find(name);
      TIDEPOOL_CHECK_MSG(it != map_.end(), "NameMap::Walker::at: no such name");
      return it->second;
    }

   private:
    static bool SameBytes(std::string_view a, std::string_view b) {
      return a.data() == b.data() && a.size() == b.size();
    }
    const NameMap& map_;
    const_iterator at_;
  };

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  typename std::vector<value_type>::const_iterator LowerBound(std::string_view name) const {
    return std::lower_bound(entries_.begin(), entries_.end(), name,
                            [](const value_type& e, std::string_view n) { return e.first < n; });
  }

  std::vector<value_type> entries_;
};

}  // namespace tidepool
