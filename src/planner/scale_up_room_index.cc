// RoomIndex (scale_up_pass.h): the cpu and memory room of a run of nodes with per-block maxima,
// which the placement loops use to pass over blocks where no node has room for a pod.
#include <algorithm>
#include <cstdint>

#include "planner/scale_up_pass.h"

namespace tidepool::planner::scale_up_detail {

void RoomIndex::Set(size_t n, Room r) {
  if (n == room_.size()) {
    Append(r);
    return;
  }
  room_[n] = r;
  // A room may shrink (a pod placed) or grow (a larger shape): the block's maxima again.
  size_t b = n / kBlock;
  Room max = room_[b * kBlock];
  for (size_t i = b * kBlock + 1; i < std::min(room_.size(), (b + 1) * kBlock); ++i) {
    max.cpu = std::max(max.cpu, room_[i].cpu);
    max.memory = std::max(max.memory, room_[i].memory);
  }
  block_max_[b] = max;
}

void RoomIndex::Append(Room r) {
  if (room_.size() % kBlock == 0) {
    block_max_.push_back(r);
  } else {
    Room& max = block_max_.back();
    max.cpu = std::max(max.cpu, r.cpu);
    max.memory = std::max(max.memory, r.memory);
  }
  room_.push_back(r);
}

size_t RoomIndex::Next(size_t n, Room need, size_t end) const {
  while (n < end) {
    if (n % kBlock == 0 && !Holds(need, block_max_[n / kBlock])) {
      n += kBlock;
      continue;
    }
    if (Holds(need, room_[n])) return n;
    ++n;
  }
  return end;
}

RoomIndex::Room SnapshotRoom(const ClusterSnapshot& snap, NodeIndex i) {
  const sched::NodeInfo& info = snap.Get(i);
  if (info.removed) return {INT64_MIN, INT64_MIN};
  return {info.allocatable.cpu_milli() - info.requested.cpu_milli(),
          info.allocatable.memory() - info.requested.memory()};
}

}  // namespace tidepool::planner::scale_up_detail
