// ModelKey: which model state and config something kept across planning passes was read from.
// What a pass keeps per node slot (ScaleDownMemo, SlotPools) holds while the model is the same one
// (ClusterModel::id: the same address may hold another model), it was not compacted (a compaction
// hands the slots out again: ClusterModel::generation) and the config object is the same.
#pragma once

#include <cstdint>

#include "model/pool.h"
#include "sched/cluster_model.h"

namespace tidepool::planner {

struct ModelKey {
  uint64_t model_id = 0;  // 0: no model yet
  uint64_t generation = 0;
  const model::AutoscalerConfig* config = nullptr;

  static ModelKey Of(const sched::ClusterModel& model, const model::AutoscalerConfig& config) {
    return ModelKey{model.id(), model.generation(), &config};
  }
  bool operator==(const ModelKey&) const = default;
};

}  // namespace tidepool::planner
