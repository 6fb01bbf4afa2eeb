// Sparse<T>: a value kept behind a pointer until it is first written, for the parts of an object
// that most instances leave empty (model::PodExtras).
#pragma once

#include <memory>

namespace tidepool::model {

// A T behind a pointer that is null until the value is first written; it reads as T{} before.
// Copies copy the value.
template <typename T>
class Sparse {
 public:
  Sparse() = default;
  Sparse(const Sparse& other) { *this = other; }
  Sparse& operator=(const Sparse& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Sparse(Sparse&&) noexcept = default;
  Sparse& operator=(Sparse&&) noexcept = default;

  const T& get() const { return value_ ? *value_ : Empty(); }
  T& mutable_get() {
    if (!value_) value_ = std::make_unique<T>();
    return *value_;
  }
  bool allocated() const { return value_ != nullptr; }
  // By value: an unallocated one equals one holding T{}.
  friend bool operator==(const Sparse& a, const Sparse& b) { return a.get() == b.get(); }

 private:
  static const T& Empty() {
    static const T kEmpty{};
    return kEmpty;
  }
  std::unique_ptr<T> value_;
};

}  // namespace tidepool::model
