// Scale-down rules about one node or one pod: utilization as the thresholds read it, and whether
// a pod may be evicted to drain its node (the Cluster Autoscaler's drainability rules).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/node.h"
#include "model/pod.h"
#include "model/resources.h"
#include "planner/decision.h"

namespace tidepool::planner {

// What draining a node does with one of its pods.
enum class DrainRole {
  kMove,     // must be evicted and rescheduled on another node
  kStays,    // DaemonSet or mirror pod: goes away with the node, never moves
  kIgnored,  // terminal or already terminating: holds nothing worth moving
};
DrainRole DrainRoleOf(const model::Pod& pod);

// `moving` is the sum of the requests of the node's kMove pods.
NodeUtilization ComputeUtilization(const model::Node& node, const model::Resources& moving,
                                   int64_t devices = 0, int64_t devices_allocated = 0);

// "utilization 0.21 < 0.5 (cpu)" / "gpu utilization 0/1 < 0.5" when below the threshold,
// "utilization 0.83 >= threshold 0.5 (cpu)" / "gpu utilization 1/1 >= threshold 0.5" otherwise.
std::string DescribeUtilization(const NodeUtilization& u, double threshold);

// Why `pod` (a kMove pod) must not be evicted, as a reason naming the pod; "" when it may be
// (PodDisruptionBudget budgets are counted separately, per pass). In order: karpenter.sh/
// do-not-disrupt=true, safe-to-evict=false; then safe-to-evict=true allows everything below;
// no controller (bare pod), a running training pod (IsTrainingPod), local storage (emptyDir not
// in memory, hostPath), a kube-system pod that no PDB covers (`covered_by_pdb`).
// `evict_training_pods` drops the running-training-pod rule (ScaleDownOptions).
std::string EvictionBlocker(const model::Pod& pod, bool covered_by_pdb,
                            bool evict_training_pods = false);

// False only when EvictionBlocker(pod, covered, evict) is "" whatever `covered` and `evict` are:
// none of the annotations it reads, a controller, not a training pod, no local storage, not in
// kube-system. It reads the pod once, so a drain simulation can keep it (PodFacts) and word a
// blocker only for the pods that may have one.
bool MayBlockEviction(const model::Pod& pod);

}  // namespace tidepool::planner
