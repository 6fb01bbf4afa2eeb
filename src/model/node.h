// Node: the scheduling-relevant part of a v1 Node (allocatable, labels, taints, readiness).
// Also used for pool templates, i.e. the node a pool would create.
#pragma once

#include <string>
#include <vector>

#include "base/time.h"
#include "model/meta.h"
#include "model/resources.h"
#include "model/selector.h"

namespace tidepool::model {

// Well-known node labels.
inline constexpr std::string_view kLabelHostname = "kubernetes.io/hostname";
inline constexpr std::string_view kLabelZone = "topology.kubernetes.io/zone";
inline constexpr std::string_view kLabelInstanceType = "node.kubernetes.io/instance-type";

// The taints Cluster Autoscaler puts on nodes, which other tools recognise; tidepool writes and
// reads the same. ToBeDeleted (NoSchedule) marks a node being removed, its value the unix time
// in seconds it was added; DeletionCandidate (PreferNoSchedule) marks an unneeded node.
inline constexpr std::string_view kToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler";
inline constexpr std::string_view kDeletionCandidateTaint = "DeletionCandidateOfClusterAutoscaler";
// The value of those taints for `now`: unix seconds, as the Cluster Autoscaler writes it.
std::string TaintTimestamp(Time now);

struct Node {
  ObjectMeta meta;
  bool unschedulable = false;
  std::vector<Taint> taints;
  std::string provider_id;
  Resources capacity;
  Resources allocatable;  // the decoder falls back to capacity when status.allocatable is absent
  bool ready = false;     // condition Ready == True

  friend bool operator==(const Node&, const Node&) = default;

  const std::string& name() const { return meta.name; }
  const Labels& labels() const { return meta.labels; }
};

}  // namespace tidepool::model
