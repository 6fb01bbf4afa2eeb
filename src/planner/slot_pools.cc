#include "planner/slot_pools.h"

#include "sched/cluster_model.h"

namespace tidepool::planner {

void SlotPools::Begin(const sched::ClusterModel& model, const model::AutoscalerConfig& config) {
  const ModelKey key = ModelKey::Of(model, config);
  if (key != key_) slots_.clear();
  key_ = key;
  slots_.resize(model.snapshot().NodeSlots());
}

const model::Pool* SlotPools::Of(sched::NodeIndex slot, const model::Node& node,
                                 const PlannerInput& input, const PoolNames& pools) {
  if (slot < slots_.size() && slots_[slot].node == &node) return slots_[slot].pool;
  bool lasting = false;
  const model::Pool* pool = PoolOf(node, input, pools, &lasting);
  if (slot < slots_.size() && lasting) slots_[slot] = Slot{&node, pool};
  return pool;
}

}  // namespace tidepool::planner
