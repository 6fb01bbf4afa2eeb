#include "planner/made_up_node.h"

#include <string>

#include "base/check.h"

namespace tidepool::planner {

sched::NodeIndex AddMadeUpNode(sched::ClusterSnapshot& snapshot, model::Node& node) {
  TIDEPOOL_CHECK_MSG(!node.meta.name.empty(), "a made-up node needs a name");
  std::string& hostname = node.meta.labels[std::string(model::kLabelHostname)];
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
