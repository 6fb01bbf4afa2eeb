// SharedList<T>: an immutable list of shared, immutable objects, handed out in O(1) however long
// it is. An informer keeps its objects in one and gives every pass the same list until something
// changes (kube/client/informer.h); a pass reads it without copying a pointer per object.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <vector>

namespace tidepool {

// The objects are stored type-erased (std::shared_ptr<const void>), so that one list type serves
// every informer; each element must point to a T.
template <typename T>
class SharedList {
 public:
  using Items = std::vector<std::shared_ptr<const void>>;

  SharedList() = default;
  // `items` must point to T objects and stay unchanged while any list shares it.
  explicit SharedList(std::shared_ptr<const Items> items) : items_(std::move(items)) {}
  // A list of these objects (tests and drivers that build their own views).
  static SharedList Of(const std::vector<std::shared_ptr<const T>>& objects) {
    auto items = std::make_shared<Items>(objects.begin(), objects.end());
    return SharedList(std::move(items));
  }

  size_t size() const { return items_ ? items_->size() : 0; }
  bool empty() const { return size() == 0; }
  const T& operator[](size_t i) const { return *static_cast<const T*>((*items_)[i].get()); }
  // The object at `i`, shared.
  std::shared_ptr<const T> Share(size_t i) const {
    return std::static_pointer_cast<const T>((*items_)[i]);
  }

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;

    iterator() = default;
    explicit iterator(Items::const_iterator it) : it_(it) {}
    const T& operator*() const { return *static_cast<const T*>(it_->get()); }
    const T* operator->() const { return static_cast<const T*>(it_->get()); }
    iterator& operator++() {
      ++it_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++it_;
      return old;
    }
    bool operator==(const iterator& other) const = default;

   private:
    Items::const_iterator it_;
  };
  iterator begin() const { return items_ ? iterator(items_->begin()) : iterator(); }
  iterator end() const { return items_ ? iterator(items_->end()) : iterator(); }

 private:
  std::shared_ptr<const Items> items_;
};

}  // namespace tidepool
