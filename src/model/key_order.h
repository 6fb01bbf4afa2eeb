// Objects in key order ("namespace/name", or the name of a cluster-scoped object: ObjectMeta::Key),
// compared bytewise without building the keys. Informer caches and the cluster model keep objects
// in this order; a lookup by key (a binary search) and a check that a list is in it ask it often.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

#include "model/meta.h"

namespace tidepool::model {

namespace key_order_detail {

// A key as the strings that make it up, in order.
using KeyParts = std::array<std::string_view, 3>;

inline KeyParts PartsOf(const ObjectMeta& meta) {
  return {meta.namespace_, meta.namespace_.empty() ? "" : "/", meta.name};
}

// <0, 0 or >0 as the concatenation of `a` sorts before, with or after that of `b`.
inline int Compare(const KeyParts& a, const KeyParts& b) {
  size_t ia = 0, ib = 0;
  std::string_view sa = a[0], sb = b[0];
  while (true) {
    while (sa.empty() && ia + 1 < a.size()) sa = a[++ia];
    while (sb.empty() && ib + 1 < b.size()) sb = b[++ib];
    if (sa.empty() || sb.empty()) return sa.empty() ? (sb.empty() ? 0 : -1) : 1;
    const size_t n = std::min(sa.size(), sb.size());
    if (int c = sa.substr(0, n).compare(sb.substr(0, n)); c != 0) return c;
    sa.remove_prefix(n);
    sb.remove_prefix(n);
  }
}

}  // namespace key_order_detail

// How a.Key() sorts against b.Key().
inline int CompareKeys(const ObjectMeta& a, const ObjectMeta& b) {
  return key_order_detail::Compare(key_order_detail::PartsOf(a), key_order_detail::PartsOf(b));
}

// How meta.Key() sorts against `key`.
inline int CompareKey(const ObjectMeta& meta, std::string_view key) {
  return key_order_detail::Compare(key_order_detail::PartsOf(meta), {key, "", ""});
}

}  // namespace tidepool::model
