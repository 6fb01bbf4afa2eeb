#include "planner/constraint_lists.h"

#include "planner/equivalence.h"

namespace tidepool::planner {

uint32_t ConstraintLists::IdOf(const model::Pod& pod) {
  auto [it, added] = ids_.try_emplace(NodeConstraintsKey(pod), static_cast<uint32_t>(sets_.size()));
  if (added) sets_.emplace_back();
  return it->second;
}

}  // namespace tidepool::planner
