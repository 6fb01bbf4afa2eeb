// InformerCache: an informer's objects by key, and the same objects in key order as one shared
// list that a reader takes in O(1) (SharedList). Not thread-safe: the informer guards it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tidepool::kube {

class InformerCache {
 public:
  using Decoded = std::shared_ptr<const void>;
  using Items = std::vector<Decoded>;
  struct Item {
    Decoded value;
    std::string resource_version;
  };

  // Adds or replaces; true when the key is new.
  bool Set(const std::string& key, Item item);
  // The item under `key` (which must be there) keeps its value and takes `resource_version`: a
  // write that changed nothing the value holds. Not a change.
  void Restamp(const std::string& key, std::string resource_version);
  // False when the key was not there.
  bool Erase(const std::string& key);
  // The whole cache at once (a list).
  void Replace(std::map<std::string, Item> items);

  const Item* Find(const std::string& key) const;
  size_t size() const { return items_.size(); }
  const std::map<std::string, Item>& items() const { return items_; }
  // The values in key order. The list handed out never changes: a change made while a reader
  // holds it goes to a copy (one copy per batch of changes between two reads).
  std::shared_ptr<const Items> List() const;
  // How many times the list changed: every Set, every Erase that found its key and every Replace
  // that brought another key or another value object. Two reads with the same count read the
  // same list (the count never goes back).
  uint64_t changes() const { return changes_; }

 private:
  // The values with a count of the lists handed out and not yet dropped. A reader drops its
  // list on its own thread; the count's release there and acquire in Writable order every read
  // it made before the change that follows.
  struct Shared {
    Items items;
    std::atomic<int> readers{0};
  };
  // `list_`'s values, ready to be changed: copied first while a reader holds them.
  Items& Writable();
  // The position of `key` in key order (where it is, or would go).
  size_t Position(const std::string& key) const;

  std::map<std::string, Item> items_;
  // The keys of items_ (the map's own strings, whose addresses never move) and their values, in
  // key order; list_ is what readers share.
  std::vector<const std::string*> order_;
  std::shared_ptr<Shared> list_ = std::make_shared<Shared>();
  uint64_t changes_ = 0;
};

}  // namespace tidepool::kube
