// NameIndex: a hash index from names to small numbers, in one flat table, for an index that
// changes all the time (the snapshot's nodes by name: a scale-up estimate adds and reverts
// thousands of made-up nodes per pass on a 50,000-node cluster). std::unordered_map allocates a
// node per entry and reduces every hash modulo a prime; here an entry is 24 bytes in the table
// itself, the table's size is a power of two, and a lookup compares the stored hash before the
// name. Open addressing with linear probing; an erase shifts the entries after it back, so there
// are no tombstones and a lookup never walks past an empty slot. Names are views: what they point
// into must outlive their entries. Not ordered; nothing iterates it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace tidepool {

class NameIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Room for `n` names without growing.
  void reserve(size_t n);
  // Adds `name` -> `value` unless the name is there; returns whether it was added.
  bool try_emplace(std::string_view name, uint32_t value);
  // The value of `name`, or kNone.
  uint32_t find(std::string_view name) const;
  // Takes `name` out; returns whether it was there.
  bool erase(std::string_view name);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Slot {
    const char* data = nullptr;  // nullptr: empty
    uint32_t length = 0;
    uint32_t value = 0;
    uint64_t hash = 0;
  };
  static uint64_t Hash(std::string_view name) { return std::hash<std::string_view>{}(name); }
  static bool Holds(const Slot& s, uint64_t hash, std::string_view name) {
    return s.hash == hash && std::string_view(s.data, s.length) == name;
  }
  size_t Home(uint64_t hash) const { return hash & (slots_.size() - 1); }
  // The slot holding `name`, or the empty slot where it would go (the table is never full).
  size_t Probe(uint64_t hash, std::string_view name) const;
  void Grow(size_t capacity);

  std::vector<Slot> slots_;  // empty, or a power of two at most half full
  size_t size_ = 0;
};

}  // namespace tidepool
