#include "base/name_index.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "base/check.h"

namespace tidepool {

void NameIndex::reserve(size_t n) {
  // At most half full: probes stay short.
  const size_t want = std::bit_ceil(std::max<size_t>(16, 2 * n));
  if (want > slots_.size()) Grow(want);
}

size_t NameIndex::Probe(uint64_t hash, std::string_view name) const {
  const size_t mask = slots_.size() - 1;
  size_t i = Home(hash);
  while (slots_[i].data != nullptr && !Holds(slots_[i], hash, name)) i = (i + 1) & mask;
  return i;
}

bool NameIndex::try_emplace(std::string_view name, uint32_t value) {
  TIDEPOOL_CHECK_MSG(name.data() != nullptr, "NameIndex: a name needs characters to point at");
  TIDEPOOL_CHECK_MSG(name.size() <= UINT32_MAX, "NameIndex: name too long");
  if (2 * (size_ + 1) > slots_.size()) Grow(std::max<size_t>(16, 2 * slots_.size()));
  const uint64_t hash = Hash(name);
  Slot& s = slots_[Probe(hash, name)];
  if (s.data != nullptr) return false;
  s = Slot{name.data(), static_cast<uint32_t>(name.size()), value, hash};
  ++size_;
  return true;
}

uint32_t NameIndex::find(std::string_view name) const {
  if (size_ == 0) return kNone;
  const Slot& s = slots_[Probe(Hash(name), name)];
  return s.data != nullptr ? s.value : kNone;
}

bool NameIndex::erase(std::string_view name) {
  if (size_ == 0) return false;
  const size_t mask = slots_.size() - 1;
  size_t hole = Probe(Hash(name), name);
  if (slots_[hole].data == nullptr) return false;
  // Backward shift: each later entry of the run that may sit in the hole moves into it, so every
  // entry stays reachable from its home without passing an empty slot.
  for (size_t j = (hole + 1) & mask; slots_[j].data != nullptr; j = (j + 1) & mask) {
    const size_t home = Home(slots_[j].hash);
    // `home` lies cyclically in (hole, j]: the entry is past the hole already and stays.
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Slot{};
  --size_;
  return true;
}

void NameIndex::Grow(size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  for (const Slot& s : old) {
    if (s.data == nullptr) continue;
    size_t i = Home(s.hash);
    while (slots_[i].data != nullptr) i = (i + 1) & (capacity - 1);
    slots_[i] = s;
  }
}

}  // namespace tidepool
