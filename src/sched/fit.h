// The scheduling simulation: does a pod fit a node, and if not, the first failing filter with
// kube-scheduler's wording. Mirrors the default filter plugins that matter for autoscaling.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/node.h"
#include "model/pod.h"
#include "sched/snapshot.h"

namespace tidepool::sched {

struct PodClaims;

// Which filter rejected the pod. Order is the order the filters run in, as in kube-scheduler's
// default profile: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
// NodeResourcesFit, PodTopologySpread, InterPodAffinity.
enum class FitCode {
  kFits,
  kNodeUnschedulable,  // "node(s) were unschedulable"
  kNodeName,           // "node(s) didn't match the requested node name"
  kTaintToleration,    // "node(s) had untolerated taint {key: value}"
  kNodeAffinity,       // "node(s) didn't match Pod's node affinity/selector"
  kNodePorts,          // "node(s) didn't have free ports for the requested pod ports"
  kNodeResources,      // "Insufficient cpu" / "Insufficient nvidia.com/gpu" / "Too many pods"
  // "node(s) didn't match pod topology spread constraints (missing required label)"
  kTopologySpreadMissingLabel,
  kTopologySpread,        // "node(s) didn't match pod topology spread constraints"
  kPodAffinity,           // "node(s) didn't match pod affinity rules"
  kPodAntiAffinity,       // "node(s) didn't match pod anti-affinity rules"
  kExistingAntiAffinity,  // "node(s) didn't satisfy existing pods anti-affinity rules"
  // "cannot allocate all claims: <claim>: request \"gpu\": no device matches selector ..."
  kDynamicResources,
};

struct FitResult {
  FitCode code = FitCode::kFits;
  std::string reason;  // empty when it fits
  // kNodeResources only: the resource that ran short (model::kPods for "Too many pods").
  model::ResourceId resource = 0;
  // kPodAffinity only: no placed pod matches the pod's affinity terms anywhere (and the pod does
  // not match them itself), or the node lacks a term's topology key. Adding nodes cannot help.
  bool pod_affinity_unresolvable = false;
  // kDynamicResources only: the pod's claims cannot be resolved (a claim, template or device
  // class that does not exist, a selector outside the supported CEL), so no node can help.
  bool claims_unresolvable = false;

  bool fits() const { return code == FitCode::kFits; }
  // True when adding more of the same node cannot help: kube-scheduler's
  // UnschedulableAndUnresolvable. True for NodeUnschedulable, NodeName, TaintToleration,
  // NodeAffinity, TopologySpreadMissingLabel, an unresolvable PodAffinity and unresolvable
  // claims; false for
  // resources, ports, anti-affinity and topology skew (capacity elsewhere can fix those).
  bool unresolvable() const;
  static FitResult Fit() { return {}; }
};

// Checks one pod against many nodes of one snapshot state. The constructor precomputes what
// the inter-pod filters need once for the pod (kube-scheduler's PreFilter): the topology domain
// counts of placed pods matching each of the pod's required (anti-)affinity terms, the domains
// where placed pods' anti-affinity terms match the pod, and per DoNotSchedule spread constraint
// the matching-pod counts per eligible domain. Check() is then O(resource kinds + terms) and
// allocates nothing when the pod fits. The checker reads the snapshot: build a new one after the
// snapshot changes. The pod and snapshot must outlive it. Construction may build topology
// indexes inside the snapshot (ClusterSnapshot::Topology), so it is not safe to construct
// checkers on one snapshot from several threads.
//
// Semantics that differ from kube-scheduler because tidepool has no Namespace objects: a
// PodAffinityTerm's namespaceSelector that is empty ({}) selects all namespaces; a non-empty one
// selects no namespace beyond the term's `namespaces` list.
//
// A pod with resourceClaims is checked against the devices of the snapshot's DraState
// (ClusterSnapshot::AttachDra): its claims are resolved once here, then each node is searched
// for an allocation as kube-scheduler's DynamicResources filter does. Without a DraState no node
// has devices, so such a pod fits nowhere.
class FitChecker {
 public:
  FitChecker(const model::Pod& pod, const ClusterSnapshot& snapshot);
  ~FitChecker();
  FitChecker(FitChecker&&) noexcept;
  FitChecker& operator=(FitChecker&&) noexcept;

  // `node` must be a live node of the snapshot (checked).
  FitResult Check(NodeIndex node) const;
  // Check(node).fits(), without composing the reason of a failure: for loops over many nodes
  // that only need the answer.
  bool Fits(NodeIndex node) const;
  // Checks against a node not in the snapshot (e.g. a pool template), treating it as empty
  // except for `existing_requests` (DaemonSet pods on it; its "pods" entry is ignored, the pod
  // count is `existing_pods`). Inter-pod rules see the snapshot's pods in the node's topology
  // domains (a new node in zone A sees zone A's counts). The new node is always its own, new
  // kubernetes.io/hostname domain (count 0), with or without that label on the template.
  FitResult CheckTemplate(const model::Node& node, const model::Resources& existing_requests,
                          int existing_pods) const;

  const model::Pod& pod() const { return *pod_; }

  // Incremental updates, as kube-scheduler's PreFilter AddPod extension: after the caller adds
  // a node (with whatever pods it carries) or places a pod in the snapshot, these bring the
  // precomputed counts up to date in O(terms) instead of rebuilding the checker in
  // O(cluster). Call them for every change made since the checker was built, in order; any
  // other change (a removal, a revert) needs a new checker.
  void OnNodeAdded(NodeIndex node);
  void OnPodAdded(const model::Pod& placed, NodeIndex node);

  // Scale-up only: a node like `template_node` (a pool template) can be created, so for every
  // DoNotSchedule spread constraint of the pod on a key other than kubernetes.io/hostname, whose
  // key the template has and whose nodeAffinityPolicy / nodeTaintsPolicy let the template count,
  // the template's domain counts as an eligible domain, with the matching pods already placed
  // there (none when no node of the snapshot is in it yet). The global minimum is then 0 until
  // every offered domain has matching pods, as Karpenter counts the zones its pools offer; a
  // constraint whose key has no node yet is enforced instead of skipped. Without offers the
  // checker is kube-scheduler's Filter over the snapshot's nodes. Offers persist through
  // OnNodeAdded / OnPodAdded. Returns true when the template offered a domain not offered before.
  bool OfferDomain(const model::Node& template_node);

  // How many of the updates above raised the global minimum of one of the pod's spread
  // constraints (as the filter applies it: 0 below minDomains, none without eligible domains).
  // Only such a rise lets the spread filter pass a node it failed before. Of the other filters
  // only required pod affinity can (a placed pod its terms select opens the nodes of that pod's
  // domains); the rest only close nodes as nodes and pods are added.
  uint64_t SpreadLoosened() const;

 private:
  struct Precomputed;

  // The filters after NodeResourcesFit: PodTopologySpread, InterPodAffinity, DynamicResources.
  // `index` is kNoNode for a template node.
  template <bool kReason>
  FitResult CheckLast(const model::Node& node, NodeIndex index) const;
  // Check and Fits: with kReason a failure carries kube-scheduler's wording, else only its code.
  template <bool kReason>
  FitResult CheckNode(NodeIndex index) const;

  const model::Pod* pod_;
  const ClusterSnapshot* snapshot_;
  const PodClaims* claims_ = nullptr;  // when the pod has claims and there is a DraState
  std::unique_ptr<Precomputed> pre_;   // null when the pod and cluster need no inter-pod checks
};

// Convenience: one check. Builds a FitChecker, so prefer FitChecker in loops.
FitResult Fits(const model::Pod& pod, NodeIndex node, const ClusterSnapshot& snapshot);

// The cheap, snapshot-independent filters (unschedulable, node name, taints, affinity/selector)
// and the resource check of `pod` on a node with `allocatable` that already has `requested`
// (including its "pods" slot count). Exposed for callers that keep their own accounting
// (bin-packing estimates).
FitResult CheckNodeStatic(const model::Pod& pod, const model::Node& node);
FitResult CheckResources(const model::Pod& pod, const model::Resources& allocatable,
                         const model::Resources& requested);
// The same two checks when only the answer is wanted: no reason is worded (a planner asking
// about hundreds of pool templates for each pod turns most of them down).
bool PassesNodeStatic(const model::Pod& pod, const model::Node& node);
bool HasResources(const model::Pod& pod, const model::Resources& allocatable,
                  const model::Resources& requested);
// The DynamicResources filter alone: whether the pod's claims can be allocated on `node` (a
// snapshot node or a template node given to the snapshot's DraState) in the snapshot's state.
FitResult CheckClaims(const model::Pod& pod, const model::Node& node,
                      const ClusterSnapshot& snapshot);

// The most room any of a set of nodes has, per amount the resource filter checks on every pod:
// cpu, memory and pod slots (NodeInfo::allocatable less requested). While those nodes only gain
// pods, a pod that asks more of one of these than the bound fits none of them, so a search over
// them all can be skipped; the pods that wait for new nodes are usually such pods.
struct RoomBound {
  int64_t cpu = 0, memory = 0, pods = 0;

  void Add(const NodeInfo& info) {
    cpu = std::max(cpu, info.allocatable.cpu_milli() - info.requested.cpu_milli());
    memory = std::max(memory, info.allocatable.memory() - info.requested.memory());
    pods = std::max(pods, info.allocatable.pods() - info.requested.pods());
  }
  // The resource filter turns `pod` down on every node added (ResourcesVerdict).
  bool Excludes(const model::Pod& pod) const {
    return pods < 1 || pod.requests.cpu_milli() > cpu || pod.requests.memory() > memory;
  }
};

// Whether `pod` passes NodeUnschedulable, TaintToleration and NodeAffinity on `info`'s node: the
// node-local filters that read no amounts and no name. The same for every pod of one
// planner::NodeConstraintsKey, so a search can walk only the nodes that pass them.
bool PassesNodeConstraints(const model::Pod& pod, const NodeInfo& info);

// True when the node matches the pod's nodeSelector and required node affinity (what the
// NodeAffinity filter and the spread constraints' nodeAffinityPolicy Honor test).
bool MatchesNodeAffinity(const model::Pod& pod, const model::Node& node);

}  // namespace tidepool::sched
