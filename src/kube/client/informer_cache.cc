#include "kube/client/informer_cache.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace tidepool::kube {

InformerCache::Items& InformerCache::Writable() {
  // A reader drops its copy of list_ on its own thread; once the count reads 1, the fence orders
  // every read it made of the list before the writes that follow.
  if (list_.use_count() > 1) {
    list_ = std::make_shared<Items>(*list_);
  } else {
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  return *list_;
}

size_t InformerCache::Position(const std::string& key) const {
  auto it = std::lower_bound(order_.begin(), order_.end(), key,
                             [](const std::string* a, const std::string& k) { return *a < k; });
  return static_cast<size_t>(it - order_.begin());
}

bool InformerCache::Set(const std::string& key, Item item) {
  Decoded value = item.value;
  auto [it, inserted] = items_.insert_or_assign(key, std::move(item));
  const size_t at = Position(key);
  Items& list = Writable();
  if (inserted) {
    order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(at), &it->first);
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(at), std::move(value));
  } else {
    list[at] = std::move(value);
  }
  return inserted;
}

bool InformerCache::Erase(const std::string& key) {
  auto it = items_.find(key);
  if (it == items_.end()) return false;
  const auto at = static_cast<std::ptrdiff_t>(Position(key));
  Items& list = Writable();
  order_.erase(order_.begin() + at);
  list.erase(list.begin() + at);
  items_.erase(it);
  return true;
}

void InformerCache::Replace(std::map<std::string, Item> items) {
  items_ = std::move(items);
  order_.clear();
  order_.reserve(items_.size());
  auto list = std::make_shared<Items>();
  list->reserve(items_.size());
  for (const auto& [key, item] : items_) {
    order_.push_back(&key);
    list->push_back(item.value);
  }
  list_ = std::move(list);
}

const InformerCache::Item* InformerCache::Find(const std::string& key) const {
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : &it->second;
}

}  // namespace tidepool::kube
