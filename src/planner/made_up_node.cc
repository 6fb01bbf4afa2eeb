#include "planner/made_up_node.h"

#include <string>

#include "base/check.h"

namespace tidepool::planner {

sched::NodeIndex AddMadeUpNode(sched::ClusterSnapshot& snapshot, model::Node& node) {
  TIDEPOOL_CHECK_MSG(!node.meta.name.empty(), "a made-up node needs a name");
  // A node added before (a pass adds the same object again after a revert) has its label: found
  // without building the key.
  auto it = node.meta.labels.find(model::kLabelHostname);
  if (it == node.meta.labels.end())
    it = node.meta.labels.emplace(std::string(model::kLabelHostname), std::string()).first;
  std::string& hostname = it->second;
  hostname = node.meta.name;
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
