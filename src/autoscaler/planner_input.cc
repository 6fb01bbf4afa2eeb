#include "autoscaler/planner_input.h"

namespace tidepool::autoscaler {
namespace {

using planner::kToBeDeletedTaint;

void AddDeletionTaint(model::Node& node) {
  if (!HasTaint(node, kToBeDeletedTaint)) {
    node.taints.push_back({std::string(kToBeDeletedTaint), "", model::TaintEffect::kNoSchedule});
  }
}

// The node as scale-up sees it, or nullptr to leave it out. `cls`: its class, or the end of
// ctx.node_class when unmanaged.
const model::Node* ForScaleUp(StepContext& ctx, NameMap<NodeClass>::const_iterator cls,
                              const model::Node* node, bool removing) {
  if (cls == ctx.node_class.end()) return node;  // unmanaged: its free capacity counts
  switch (cls->second) {
    case NodeClass::kGone:
    case NodeClass::kStarting:  // modelled from the template as upcoming
      return nullptr;
    case NodeClass::kUnusable: {
      model::Node& copy = ctx.Copy(*node);  // counts towards the pool's size, holds nothing
      copy.unschedulable = true;
      return &copy;
    }
    case NodeClass::kReady:
      break;
  }
  if (!removing) return node;
  model::Node& copy = ctx.Copy(*node);
  copy.unschedulable = true;
  AddDeletionTaint(copy);
  return &copy;
}

// The node as scale-down (or adoption) sees it.
const model::Node* ForScaleDown(StepContext& ctx, const model::Node* node, bool removing,
                                bool adopting) {
  if (adopting) {
    model::Node& copy = ctx.Copy(*node);
    std::erase_if(copy.taints, [](const model::Taint& t) { return t.key == kToBeDeletedTaint; });
    return &copy;
  }
  if (removing && !HasTaint(*node, kToBeDeletedTaint)) {
    model::Node& copy = ctx.Copy(*node);
    AddDeletionTaint(copy);
    return &copy;
  }
  return node;
}

}  // namespace

planner::PlannerInput BuildPlannerInput(StepContext& ctx, InputFor purpose,
                                        const std::function<bool(std::string_view)>& removing,
                                        const std::set<std::string_view>* adopting) {
  planner::PlannerInput in = ctx.base;
  // Both in name order: the classes are walked along with the nodes.
  NameMap<NodeClass>::Walker classes(ctx.node_class);
  for (const auto& [name, node] : ctx.nodes) {
    const model::Node* seen = nullptr;
    auto cls = classes.find(name);
    if (purpose == InputFor::kScaleUp) {
      seen = ForScaleUp(ctx, cls, node, removing(name));
    } else {
      if (cls != ctx.node_class.end() && cls->second == NodeClass::kGone) continue;
      bool adopt =
          purpose == InputFor::kAdoption && adopting != nullptr && adopting->contains(name);
      seen = ForScaleDown(ctx, node, removing(name), adopt);
    }
    if (seen != nullptr) in.nodes.push_back(seen);
  }
  return in;
}

}  // namespace tidepool::autoscaler
