// Nodes a pass makes up (a pool's template as a new, upcoming or replacement node) in the pass's
// snapshot, under a name no real node holds.
#pragma once

#include <string_view>

#include "model/node.h"
#include "sched/cluster_model.h"
#include "sched/snapshot.h"

namespace tidepool::planner {

// Adds `node`, which the pass made up, to `snapshot`, with its hostname label set to its name. A
// real node may carry the name the pass chose ("new-gpu-0" is a valid node name): then the name
// takes a '-' until it is free (the names passes choose never end in one). Returns its index.
sched::NodeIndex AddMadeUpNode(sched::ClusterSnapshot& snapshot, model::Node& node);

// How scale-up's new and upcoming nodes are named: the prefix, their pool's (or family's) name,
// '-' and a number.
inline constexpr std::string_view kNewNodePrefix = "new-";
inline constexpr std::string_view kUpcomingNodePrefix = "upcoming-";

// The same for a node whose name no other node the pass made up holds (its pool's or family's
// name and a number: "new-gpu-3", "upcoming-cpu-0"): added without indexing its name
// (ClusterSnapshot::AddUnnamedNode), which only a real node's could clash with. A pass adds
// thousands of these and takes them back at its end. `may_clash` false: the caller knows no real
// node's name starts as this one's does (SomeNameStartsWith), and the lookup is skipped.
sched::NodeIndex AddNumberedNode(sched::ClusterSnapshot& snapshot, model::Node& node,
                                 bool may_clash = true);

// Whether a live node of `model` has a name that starts with `prefix` ("new-"), by a binary search
// in its name order.
bool SomeNameStartsWith(const sched::ClusterModel& model, std::string_view prefix);

}  // namespace tidepool::planner
