// Nodes a pass makes up (a pool's template as a new, upcoming or replacement node) in the pass's
// snapshot, under a name no real node holds.
#pragma once

#include "model/node.h"
#include "sched/snapshot.h"

namespace tidepool::planner {

// Adds `node`, which the pass made up, to `snapshot`, with its hostname label set to its name. A
// real node may carry the name the pass chose ("new-gpu-0" is a valid node name): then the name
// takes a '-' until it is free (the names passes choose never end in one). Returns its index.
sched::NodeIndex AddMadeUpNode(sched::ClusterSnapshot& snapshot, model::Node& node);

// The same for a node whose name no other node the pass made up holds (its pool's or family's
// name and a number: "new-gpu-3", "upcoming-cpu-0"): added without indexing its name
// (ClusterSnapshot::AddUnnamedNode), which only a real node's could clash with. A pass adds
// thousands of these and takes them back at its end.
sched::NodeIndex AddNumberedNode(sched::ClusterSnapshot& snapshot, model::Node& node);

}  // namespace tidepool::planner
