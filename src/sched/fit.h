// The scheduling simulation: does a pod fit a node, and if not, the first failing filter with
// kube-scheduler's wording. Mirrors the default filter plugins that matter for autoscaling.
#pragma once

#include <string>
#include <vector>

#include "model/node.h"
#include "model/pod.h"
#include "sched/snapshot.h"

namespace tidepool::sched {

// Which filter rejected the pod. Order is the order the filters run in.
enum class FitCode {
  kFits,
  kNodeUnschedulable,   // "node(s) were unschedulable"
  kNodeName,            // "node(s) didn't match the requested node name"
  kNodeAffinity,        // "node(s) didn't match Pod's node affinity/selector"
  kTaintToleration,     // "node(s) had untolerated taint {key: value}"
  kNodePorts,           // "node(s) didn't have free ports for the requested pod ports"
  kNodeResources,       // "Insufficient cpu" / "Too many pods"
  kPodAffinity,         // "node(s) didn't match pod affinity rules"
  kPodAntiAffinity,     // "node(s) didn't match pod anti-affinity rules"
  kExistingAntiAffinity,  // "node(s) didn't satisfy existing pods anti-affinity rules"
  kTopologySpread,      // "node(s) didn't match pod topology spread constraints"
  kTopologySpreadMissingLabel,  // "... (missing required label)"
};

struct FitResult {
  FitCode code = FitCode::kFits;
  std::string reason;  // empty when it fits

  bool fits() const { return code == FitCode::kFits; }
  // True when adding more of the same node cannot help (affinity, taints, selector): the
  // scheduler's UnschedulableAndUnresolvable.
  bool unresolvable() const;
  static FitResult Fit() { return {}; }
};

// Checks one pod against many nodes of one snapshot state. The constructor precomputes what
// the inter-pod filters need (topology domain counts) once for the pod; it reads the snapshot,
// so build a new checker after the snapshot changes. The pod and snapshot must outlive it.
class FitChecker {
 public:
  FitChecker(const model::Pod& pod, const ClusterSnapshot& snapshot);
  ~FitChecker();
  FitChecker(FitChecker&&) noexcept;
  FitChecker& operator=(FitChecker&&) noexcept;

  FitResult Check(NodeIndex node) const;
  // Checks against a node not in the snapshot (e.g. a pool template), treating it as empty
  // except for `existing` (DaemonSet pods on it). Inter-pod rules see the snapshot's pods in the
  // node's topology domains.
  FitResult CheckTemplate(const model::Node& node, const model::Resources& existing_requests,
                          int existing_pods) const;

 private:
  struct Precomputed;
  const model::Pod* pod_;
  const ClusterSnapshot* snapshot_;
  Precomputed* pre_;  // owned; null when the pod and cluster need no inter-pod checks
};

// Convenience: one check. Builds a FitChecker, so prefer FitChecker in loops.
FitResult Fits(const model::Pod& pod, NodeIndex node, const ClusterSnapshot& snapshot);

// The cheap, snapshot-independent filters (unschedulable, node name, affinity/selector,
// taints) and the resource check against `free`. Exposed for callers that keep their own
// accounting (bin-packing estimates).
FitResult CheckNodeStatic(const model::Pod& pod, const model::Node& node);
FitResult CheckResources(const model::Pod& pod, const model::Resources& allocatable,
                         const model::Resources& requested);

}  // namespace tidepool::sched
