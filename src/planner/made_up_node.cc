#include "planner/made_up_node.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/check.h"

namespace tidepool::planner {

namespace {

// The node's hostname label, made if it has none, set to its name.
std::string& SetHostname(model::Node& node) {
  TIDEPOOL_CHECK_MSG(!node.meta.name.empty(), "a made-up node needs a name");
  // A node added before (a pass adds the same object again after a revert) has its label: found
  // without building the key.
  auto it = node.meta.labels.find(model::kLabelHostname);
  if (it == node.meta.labels.end())
    it = node.meta.labels.emplace(std::string(model::kLabelHostname), std::string()).first;
  it->second = node.meta.name;
  return it->second;
}

}  // namespace

sched::NodeIndex AddNumberedNode(sched::ClusterSnapshot& snapshot, model::Node& node,
                                 bool may_clash) {
  std::string& hostname = SetHostname(node);
  // Names passes choose never end in '-': one that takes a '-' clashes with no other.
  while (may_clash && snapshot.FindNode(node.meta.name) != sched::kNoNode) {
    node.meta.name += '-';
    hostname = node.meta.name;
  }
  return snapshot.AddUnnamedNode(&node);
}

bool SomeNameStartsWith(const sched::ClusterModel& model, std::string_view prefix) {
  const std::vector<sched::NodeIndex>& by_name = model.NodesByName();
  const sched::ClusterSnapshot& snapshot = model.snapshot();
  auto it = std::lower_bound(
      by_name.begin(), by_name.end(), prefix,
      [&](sched::NodeIndex i, std::string_view p) { return snapshot.Get(i).node->name() < p; });
  return it != by_name.end() && snapshot.Get(*it).node->name().starts_with(prefix);
}

sched::NodeIndex AddMadeUpNode(sched::ClusterSnapshot& snapshot, model::Node& node) {
  std::string& hostname = SetHostname(node);
  while (true) {
    Result<sched::NodeIndex> index = snapshot.AddNode(&node);
    if (index) return *index;
    TIDEPOOL_CHECK_MSG(index.error().code() == Error::Code::kConflict,
                       "a made-up node is refused for another reason than its name");
    node.meta.name += '-';
    hostname = node.meta.name;
  }
}

}  // namespace tidepool::planner
