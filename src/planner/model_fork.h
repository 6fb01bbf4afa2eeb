// Planning on the driver's cluster model (docs/architecture.md, "The cluster model"): the two
// steps scale-up and scale-down both take to fork the model instead of building a snapshot.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/node.h"
#include "planner/cluster.h"
#include "sched/snapshot.h"

namespace tidepool::sched {
class ClusterModel;  // sched/cluster_model.h
}  // namespace tidepool::sched

namespace tidepool::planner {

// The input's nodes as the model holds them: distinct names, each with its slot.
struct ModelNodes {
  std::vector<const model::Node*> nodes;
  std::vector<sched::NodeIndex> slots;
  // The nodes are the model's live nodes, its own objects in its name order (as the loop lists
  // them): TakeInputNodes has nothing to take or remove.
  bool as_is = false;
};

// `nodes` in their order without a name given twice (the first one wins, as when building a
// snapshot), with where `model` holds each; nullopt when it misses one (the pass then builds its
// own snapshot).
std::optional<ModelNodes> FindOnModel(const sched::ClusterModel& model,
                                      const std::vector<const model::Node*>& nodes);

// Whether `nodes` are exactly the model's live nodes, its own objects in its name order
// (ClusterModel::NodesByName), as the loop lists them: then they are sorted, with distinct names,
// and the model's order gives their slots. One pointer comparison per node.
bool InModelOrder(const sched::ClusterModel& model, const std::vector<const model::Node*>& nodes);

// Inside an open layer of the model's snapshot: each node the input sees otherwise (a copy with
// the deletion taint, an adopted or unusable node) takes its input object with its pods, and its
// slot in `found` changes; every live node the input leaves out is removed. Nothing to do (no
// sweep over the slots) when `found.as_is`.
void TakeInputNodes(sched::ClusterSnapshot& snapshot, ModelNodes& found);

// Whether the input's model is in its debug mode (sched::ClusterModel::SetVerify): a pass on it
// is then planned again on a snapshot built from `input.model`-less input, and compared.
bool VerifyingModel(const PlannerInput& input);
// The debug mode's verdict: stops the process, printing both, when the plan `planner` made on the
// model (`on_model`, rendered) differs from the one on a built snapshot (`built`).
void CheckSamePlan(std::string_view planner, const std::string& on_model, const std::string& built);
// The debug mode's check of `input.unbound`, when set: stops the process, naming a pod, unless it
// holds exactly the pods of `input.pods` that wait for a node, each once.
void CheckUnbound(const PlannerInput& input);

}  // namespace tidepool::planner
