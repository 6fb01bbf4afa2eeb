// SlotPools: the pool of each node slot of the driver's cluster model, as passes on the model
// found it, kept across passes (docs/architecture.md, "The cluster model"). Both planners ask the
// pool of every node at every pass; reading a node's labels is a few cache misses, and a slot holds
// one node object for its life (a changed node takes a new slot), so the answer holds while the
// slot holds the object, the model has not been compacted and the config is the same. Answers
// that came from the provider's mapping are not kept: it may answer otherwise later.
#pragma once

#include <cstdint>
#include <vector>

#include "model/node.h"
#include "model/pool.h"
#include "planner/cluster.h"
#include "planner/model_key.h"
#include "sched/snapshot.h"

namespace tidepool::sched {
class ClusterModel;
}

namespace tidepool::planner {

class SlotPools {
 public:
  // Starts a pass on `model` planned with `config`: forgets everything when either is not the
  // last pass's, or the model was compacted.
  void Begin(const sched::ClusterModel& model, const model::AutoscalerConfig& config);
  // The pool of `node`, which the model held at slot `slot` at Begin (or a node a pass added in its
  // layer, at a later slot: asked, never kept). `pools` must be of `input.config`.
  const model::Pool* Of(sched::NodeIndex slot, const model::Node& node, const PlannerInput& input,
                        const PoolNames& pools);

 private:
  struct Slot {
    const model::Node* node = nullptr;  // nullptr: nothing kept
    const model::Pool* pool = nullptr;  // nullptr: unmanaged
  };
  ModelKey key_;
  std::vector<Slot> slots_;
};

// `pools`' answer for slot `slot` holding `node` when the input has pools kept (SlotPools::Of),
// else PoolOf's.
inline const model::Pool* PoolOfSlot(SlotPools* pools, sched::NodeIndex slot,
                                     const model::Node& node, const PlannerInput& input,
                                     const PoolNames& names) {
  return pools != nullptr ? pools->Of(slot, node, input, names) : PoolOf(node, input, names);
}

}  // namespace tidepool::planner
