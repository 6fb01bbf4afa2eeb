#include "planner/model_fork.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "base/check.h"
#include "sched/cluster_model.h"

namespace tidepool::planner {

std::optional<ModelNodes> FindOnModel(const sched::ClusterModel& model,
                                      const std::vector<const model::Node*>& nodes) {
  const sched::ClusterSnapshot& snapshot = model.snapshot();
  const std::vector<sched::NodeIndex>& by_name = model.NodesByName();
  ModelNodes found;
  found.nodes.reserve(nodes.size());
  found.slots.reserve(nodes.size());
  std::vector<uint8_t> seen(snapshot.NodeSlots(), 0);
  // The input lists nodes in name order, as the model does, and mostly the model's own objects:
  // the next node by name is then the one the input names, found without reading its name.
  size_t next = 0;
  bool guessed_all = true;  // every node was the next one by name
  for (const model::Node* node : nodes) {
    sched::NodeIndex slot = sched::kNoNode;
    const sched::NodeInfo* guess = next < by_name.size() ? &snapshot.Get(by_name[next]) : nullptr;
    if (guess != nullptr && guess->node == node && !guess->removed) {
      slot = by_name[next++];
    } else {
      guessed_all = false;
      slot = snapshot.FindNode(node->name());
      if (slot == sched::kNoNode) return std::nullopt;
      // Go on from its place, or from where the walk was for a slot the model's order lacks.
      if (uint32_t place = model.PlaceByName(slot); place != sched::ClusterModel::kNoPlace)
        next = place + 1;
    }
    if (seen[slot]) continue;
    seen[slot] = 1;
    found.nodes.push_back(node);
    found.slots.push_back(slot);
  }
  // Each guess took the next live node by name, none twice: all of them, in that order.
  found.as_is = guessed_all && next == by_name.size();
  return found;
}

bool InModelOrder(const sched::ClusterModel& model, const std::vector<const model::Node*>& nodes) {
  const std::vector<sched::NodeIndex>& by_name = model.NodesByName();
  if (by_name.size() != nodes.size()) return false;
  const sched::ClusterSnapshot& snapshot = model.snapshot();
  for (size_t k = 0; k < nodes.size(); ++k) {
    const sched::NodeInfo& info = snapshot.Get(by_name[k]);
    if (info.node != nodes[k] || info.removed) return false;
  }
  return true;
}

void TakeInputNodes(sched::ClusterSnapshot& snapshot, ModelNodes& found) {
  if (found.as_is) return;
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

void CheckUnbound(const PlannerInput& input) {
  if (!input.unbound) return;
  std::vector<const model::Pod*> want;
  for (const model::Pod* pod : input.pods)
    if (pod->WaitsForNode()) want.push_back(pod);
  std::vector<const model::Pod*> got = *input.unbound;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  if (got == want) return;
  // Multisets: a pod listed twice is one too many.
  std::vector<const model::Pod*> extra, missing;
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::back_inserter(missing));
  auto first = [](const std::vector<const model::Pod*>& pods) {
    return pods.empty() ? std::string("none") : pods.front()->Key();
  };
  std::string diff = fmt::format(
      "the input's unbound pods ({}) are not those of its pods that wait for a node ({}): {} too "
      "many (first {}), {} missing (first {})",
      got.size(), want.size(), extra.size(), first(extra), missing.size(), first(missing));
  TIDEPOOL_CHECK_MSG(false, diff.c_str());
}

}  // namespace tidepool::planner
