#include "planner/model_fork.h"

#include <fmt/format.h>

#include <cstdint>

#include "base/check.h"
#include "sched/cluster_model.h"

namespace tidepool::planner {

std::optional<ModelNodes> FindOnModel(const sched::ClusterSnapshot& model,
                                      const std::vector<const model::Node*>& nodes) {
  ModelNodes found;
  found.nodes.reserve(nodes.size());
  found.slots.reserve(nodes.size());
  std::vector<uint8_t> seen(model.NodeSlots(), 0);
  for (const model::Node* node : nodes) {
    sched::NodeIndex slot = model.FindNode(node->name());
    if (slot == sched::kNoNode) return std::nullopt;
    if (seen[slot]) continue;
    seen[slot] = 1;
    found.nodes.push_back(node);
    found.slots.push_back(slot);
  }
  return found;
}

void TakeInputNodes(sched::ClusterSnapshot& snapshot, ModelNodes& found) {
  std::vector<uint8_t> kept(snapshot.NodeSlots(), 0);
  for (size_t k = 0; k < found.nodes.size(); ++k) {
    sched::NodeIndex& slot = found.slots[k];
    if (snapshot.Get(slot).node != found.nodes[k]) {
      Result<sched::NodeIndex> replaced = snapshot.ReplaceNode(found.nodes[k]);
      TIDEPOOL_CHECK(replaced.has_value());
      slot = *replaced;
      kept.resize(slot + 1, 0);
    }
    kept[slot] = 1;
  }
  for (sched::NodeIndex i = 0; i < kept.size(); ++i) {
    const sched::NodeInfo& info = snapshot.Get(i);
    if (!info.removed && !kept[i])
      TIDEPOOL_CHECK(snapshot.RemoveNode(info.node->name()).has_value());
  }
}

bool VerifyingModel(const PlannerInput& input) {
  return input.model != nullptr && input.model->verify();
}

void CheckSamePlan(std::string_view planner, const std::string& on_model,
                   const std::string& built) {
  if (on_model == built) return;
  std::string diff = fmt::format(
      "{} on the cluster model differs from {} on a snapshot built from the same input\n"
      "on the model: {}\nbuilt: {}",
      planner, planner, on_model, built);
  TIDEPOOL_CHECK_MSG(false, diff.c_str());
}

}  // namespace tidepool::planner
