#include "kube/client/informer_cache.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace tidepool::kube {

InformerCache::Items& InformerCache::Writable() {
  if (list_->readers.load(std::memory_order_acquire) > 0) {
    auto copy = std::make_shared<Shared>();
    copy->items = list_->items;
    list_ = std::move(copy);
  }
  return list_->items;
}

std::shared_ptr<const InformerCache::Items> InformerCache::List() const {
  // What the reader holds: the values, and a hold on the count that it gives back when the last
  // copy of its list goes.
  struct Hold {
    explicit Hold(std::shared_ptr<Shared> s) : shared(std::move(s)) {
      shared->readers.fetch_add(1, std::memory_order_relaxed);
    }
    ~Hold() { shared->readers.fetch_sub(1, std::memory_order_release); }
    std::shared_ptr<Shared> shared;
  };
  auto hold = std::make_shared<Hold>(list_);
  const Items* items = &hold->shared->items;
  return std::shared_ptr<const Items>(std::move(hold), items);
}

size_t InformerCache::Position(const std::string& key) const {
  auto it = std::lower_bound(order_.begin(), order_.end(), key,
                             [](const std::string* a, const std::string& k) { return *a < k; });
  return static_cast<size_t>(it - order_.begin());
}

bool InformerCache::Set(const std::string& key, Item item) {
  Decoded value = item.value;
  ++changes_;
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

void InformerCache::Restamp(const std::string& key, std::string resource_version) {
  auto it = items_.find(key);
  TIDEPOOL_CHECK(it != items_.end());
  it->second.resource_version = std::move(resource_version);
}

bool InformerCache::Erase(const std::string& key) {
  auto it = items_.find(key);
  if (it == items_.end()) return false;
  ++changes_;
  const auto at = static_cast<std::ptrdiff_t>(Position(key));
  Items& list = Writable();
  order_.erase(order_.begin() + at);
  list.erase(list.begin() + at);
  items_.erase(it);
  return true;
}

void InformerCache::Replace(std::map<std::string, Item> items) {
  auto same = [](const auto& a, const auto& b) {
    return a.first == b.first && a.second.value == b.second.value;
  };
  if (!std::equal(items.begin(), items.end(), items_.begin(), items_.end(), same)) ++changes_;
  items_ = std::move(items);
  order_.clear();
  order_.reserve(items_.size());
  auto list = std::make_shared<Shared>();
  list->items.reserve(items_.size());
  for (const auto& [key, item] : items_) {
    order_.push_back(&key);
    list->items.push_back(item.value);
  }
  list_ = std::move(list);
}

const InformerCache::Item* InformerCache::Find(const std::string& key) const {
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : &it->second;
}

}  // namespace tidepool::kube
