#include "sched/fit.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

#include "base/check.h"
#include "sched/dra/dra_state.h"
#include "sched/fit_detail.h"

namespace tidepool::sched {
namespace {

using fit_detail::Domain;
using fit_detail::DomainCounts;
using fit_detail::ForEachHostPort;
using fit_detail::HostPort;
using fit_detail::kBindAllHostIp;
using fit_detail::MakeFailure;
using fit_detail::MatchesAffinity;
using fit_detail::Reject;
using fit_detail::Resolve;
using fit_detail::SanitizedIp;
using fit_detail::SanitizedProtocol;
using fit_detail::Spread;
using fit_detail::Target;
using fit_detail::ToResult;
using fit_detail::Verdict;
using model::Node;
using model::Pod;
using model::PodAffinityTerm;
using model::Resources;

constexpr std::string_view kUnschedulableTaintKey = "node.kubernetes.io/unschedulable";

bool ToleratesUnschedulable(const Pod& pod) {
  static const model::Taint* const kTaint =
      new model::Taint{std::string(kUnschedulableTaintKey), "", model::TaintEffect::kNoSchedule};
  for (const auto& t : pod.tolerations)
    if (t.Tolerates(*kTaint)) return true;
  return false;
}

// TaintToleration, NodeAffinity.
Verdict TaintsAndAffinity(const Pod& pod, const Node& node, bool has_taints) {
  if (has_taints) {
    if (const model::Taint* t = model::FindUntoleratedTaint(node.taints, pod.tolerations)) {
      Verdict v = Reject(FitCode::kTaintToleration);
      v.taint = t;
      return v;
    }
  }
  if ((!pod.node_selector.empty() || pod.affinity().node_required) && !MatchesAffinity(pod, node)) {
    return Reject(FitCode::kNodeAffinity);
  }
  return {};
}

// NodeUnschedulable, NodeName, TaintToleration, NodeAffinity. `unschedulable` and `has_taints`
// are the node's (NodeInfo keeps copies), so a simple pod never touches the Node itself.
Verdict StaticVerdict(const Pod& pod, const Node& node, bool unschedulable, bool has_taints) {
  if (unschedulable && !ToleratesUnschedulable(pod)) return Reject(FitCode::kNodeUnschedulable);
  if (!pod.node_name.empty() && pod.node_name != node.name()) return Reject(FitCode::kNodeName);
  return TaintsAndAffinity(pod, node, has_taints);
}

Verdict StaticVerdict(const Pod& pod, const Node& node) {
  return StaticVerdict(pod, node, node.unschedulable, !node.taints.empty());
}

Verdict Insufficient(model::ResourceId resource) {
  Verdict v = Reject(FitCode::kNodeResources);
  v.resource = resource;
  return v;
}

// The insufficient extended resource with the smallest name (cold: names are looked up).
[[gnu::cold, gnu::noinline]] Verdict InsufficientExtended(const Resources& want,
                                                          const Resources& allocatable,
                                                          const Resources& requested) {
  model::ResourceId first = 0;
  std::string_view first_name;
  auto consider = [&](model::ResourceId id, int64_t amount) {
    if (amount > 0 && amount > allocatable.Get(id) - requested.Get(id)) {
      std::string_view name = model::ResourceName(id);
      if (first_name.empty() || name < first_name) {
        first = id;
        first_name = name;
      }
    }
  };
  consider(model::kNvidiaGpuId, want.Get(model::kNvidiaGpuId));
  for (const auto& [id, amount] : want.extended()) consider(id, amount);
  return Insufficient(first);
}

// What the resource filter finds short first (ResourcesVerdict's order); kExtended stands for
// nvidia.com/gpu and the extended resources, whose names decide which is reported.
enum class Short { kNothing, kPods, kCpu, kMemory, kStorage, kExtended };

Short FirstShort(const Pod& pod, const Resources& allocatable, const Resources& requested,
                 int64_t requested_pods) {
  if (requested_pods + 1 > allocatable.pods()) return Short::kPods;
  const Resources& want = pod.requests;
  int64_t cpu = want.cpu_milli();
  if (cpu > 0 && cpu > allocatable.cpu_milli() - requested.cpu_milli()) return Short::kCpu;
  int64_t memory = want.memory();
  if (memory > 0 && memory > allocatable.memory() - requested.memory()) return Short::kMemory;
  int64_t storage = want.Get(model::kEphemeralStorage);
  if (storage > 0 && storage > allocatable.Get(model::kEphemeralStorage) -
                                   requested.Get(model::kEphemeralStorage)) {
    return Short::kStorage;
  }
  // nvidia.com/gpu is stored as a base resource but checked with the extended ones, by name.
  auto short_of = [&](model::ResourceId id, int64_t amount) {
    return amount > 0 && amount > allocatable.Get(id) - requested.Get(id);
  };
  if (short_of(model::kNvidiaGpuId, want.Get(model::kNvidiaGpuId))) return Short::kExtended;
  for (const auto& [id, amount] : want.extended()) {
    if (short_of(id, amount)) return Short::kExtended;
  }
  return Short::kNothing;
}

// NodeResourcesFit: pods first, then cpu, memory, ephemeral-storage, then extended resources
// (the insufficient one with the smallest name). Amounts the pod does not request are not
// checked, so a zero-request pod fits an overcommitted node if a pod slot is free.
Verdict ResourcesVerdict(const Pod& pod, const Resources& allocatable, const Resources& requested,
                         int64_t requested_pods) {
  switch (FirstShort(pod, allocatable, requested, requested_pods)) {
    case Short::kNothing:
      return {};
    case Short::kPods:
      return Insufficient(model::kPods);
    case Short::kCpu:
      return Insufficient(model::kCpu);
    case Short::kMemory:
      return Insufficient(model::kMemory);
    case Short::kStorage:
      return Insufficient(model::kEphemeralStorage);
    case Short::kExtended:
      return InsufficientExtended(pod.requests, allocatable, requested);
  }
  return {};
}

}  // namespace

bool MatchesNodeAffinity(const Pod& pod, const Node& node) { return MatchesAffinity(pod, node); }

bool PassesNodeConstraints(const Pod& pod, const NodeInfo& info) {
  if (info.unschedulable && !ToleratesUnschedulable(pod)) return false;
  return TaintsAndAffinity(pod, *info.node, info.has_taints).fits();
}

FitResult CheckNodeStatic(const Pod& pod, const Node& node) {
  return ToResult(StaticVerdict(pod, node));
}

FitResult CheckResources(const Pod& pod, const Resources& allocatable, const Resources& requested) {
  return ToResult(ResourcesVerdict(pod, allocatable, requested, requested.pods()));
}

bool PassesNodeStatic(const Pod& pod, const Node& node) { return StaticVerdict(pod, node).fits(); }

bool HasResources(const Pod& pod, const Resources& allocatable, const Resources& requested) {
  return FirstShort(pod, allocatable, requested, requested.pods()) == Short::kNothing;
}

bool FitChecker::Precomputed::PortsConflict(const NodeInfo& info) const {
  bool conflict = false;
  for (const Pod* existing : info.pods) {
    ForEachHostPort(*existing, [&](const model::ContainerPort& p) {
      if (conflict) return;
      std::string_view ip = SanitizedIp(p.host_ip);
      std::string_view protocol = SanitizedProtocol(p.protocol);
      for (const HostPort& want : ports) {
        if (want.port != p.host_port || want.protocol != protocol) continue;
        if (want.ip == kBindAllHostIp || ip == kBindAllHostIp || want.ip == ip) {
          conflict = true;
          return;
        }
      }
    });
    if (conflict) return true;
  }
  return false;
}

// PodTopologySpread: matching pods in the node's domain + self - global minimum <= maxSkew.
Verdict FitChecker::Precomputed::SpreadVerdict(const Target& t) const {
  for (const Spread& s : spread) {
    Domain d = Resolve(*s.topo, t);
    if (d.kind == Domain::Kind::kMissing) return Reject(FitCode::kTopologySpreadMissingLabel);
    // A node outside every eligible domain (a new node in a new domain) counts 0 pods. Were a
    // new node counted as an extra eligible domain, as kube-scheduler would once it exists, the
    // minimum would drop to 0 and its skew would be at most 1 <= maxSkew: it passes either way.
    int64_t count = 0;
    if (d.kind == Domain::Kind::kKnown && d.id < s.eligible.size() && s.eligible[d.id]) {
      count = s.counts[d.id];
    }
    // kube-scheduler skips a constraint whose topology key has no eligible domain at all.
    if (s.domains == 0) continue;
    int64_t min_count = s.domains < s.min_domains ? 0 : s.min_count;
    int64_t skew = count + (s.self_match ? 1 : 0) - min_count;
    if (skew > s.constraint->max_skew) return Reject(FitCode::kTopologySpread);
  }
  return {};
}

// InterPodAffinity: the pod's required affinity, its required anti-affinity, then placed pods'
// required anti-affinity against it.
Verdict FitChecker::Precomputed::InterPodVerdict(const Target& t) const {
  if (!affinity.empty()) {
    bool pods_exist = true;
    for (const DomainCounts& dc : affinity) {
      Domain d = Resolve(*dc.topo, t);
      if (d.kind == Domain::Kind::kMissing) {
        Verdict v = Reject(FitCode::kPodAffinity);
        v.affinity_unresolvable = true;
        return v;
      }
      if (dc.At(d) <= 0) pods_exist = false;
    }
    // The first pod of a group with affinity to itself may go anywhere with the keys.
    if (!pods_exist && (affinity_matched || !self_matches_affinity)) {
      Verdict v = Reject(FitCode::kPodAffinity);
      v.affinity_unresolvable = !affinity_matched;
      return v;
    }
  }
  if (anti_affinity_matched) {
    for (const DomainCounts& dc : anti_affinity) {
      if (dc.At(Resolve(*dc.topo, t)) > 0) return Reject(FitCode::kPodAntiAffinity);
    }
  }
  for (const DomainCounts& dc : existing_anti) {
    if (dc.At(Resolve(*dc.topo, t)) > 0) return Reject(FitCode::kExistingAntiAffinity);
  }
  return {};
}

namespace {

// DynamicResources, the last filter: the fast answer when the claims can be allocated, the
// diagnosis otherwise. `claims` is null when there is no DraState (then no node has devices).
FitResult ClaimsResult(const PodClaims* claims, const DraState* dra, const Node& node) {
  if (claims != nullptr && dra->CanAllocate(*claims, node)) return FitResult::Fit();
  FitResult r = MakeFailure(Reject(FitCode::kDynamicResources));
  if (claims == nullptr) {
    r.reason += ": no devices are known (no ResourceSlices were read)";
    return r;
  }
  r.claims_unresolvable = !claims->error.empty();
  r.reason += ": ";
  r.reason += dra->Diagnose(*claims, node);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

FitChecker::FitChecker(const Pod& pod, const ClusterSnapshot& snapshot)
    : pod_(&pod), snapshot_(&snapshot) {
  TIDEPOOL_CHECK_MSG(pod.requests.pods() > 0, "fit check of a pod without Finalize()");
  if (!pod.resource_claims().empty() && snapshot.dra() != nullptr) {
    claims_ = &snapshot.dra()->ClaimsOf(pod);
  }
  bool has_ports = false;
  ForEachHostPort(pod, [&](const model::ContainerPort&) { has_ports = true; });
  bool has_terms = !pod.affinity().pod_affinity_required.empty() ||
                   !pod.affinity().pod_anti_affinity_required.empty();
  bool existing_anti = snapshot.PodsWithRequiredAntiAffinity() > 0;
  bool has_spread =
      std::any_of(pod.topology_spread_constraints().begin(),
                  pod.topology_spread_constraints().end(), [](const auto& c) {
                    return c.when_unsatisfiable == model::WhenUnsatisfiable::kDoNotSchedule;
                  });
  if (!has_ports && !has_terms && !existing_anti && !has_spread) return;

  pre_ = std::make_unique<Precomputed>();
  pre_->pod = &pod;
  pre_->snapshot = &snapshot;
  if (has_ports) pre_->ComputePorts();
  if (has_spread) pre_->ComputeSpread();
  if (has_terms) pre_->ComputeAffinity();
  if (existing_anti) pre_->ComputeExistingAntiAffinity();
}

void FitChecker::OnNodeAdded(NodeIndex node) {
  const NodeInfo& info = snapshot_->Get(node);
  if (!pre_) {
    for (const Pod* p : info.pods) OnPodAdded(*p, node);
    return;
  }
  if (!pre_->spread.empty()) {
    pre_->AccountSpreadNode(node);  // also counts the pods already on it
    pre_->RecomputeSpreadMin();
  }
  for (const Pod* p : info.pods) {
    if (!pre_->affinity.empty() || !pre_->anti_affinity.empty()) pre_->AccountAffinityPod(*p, node);
    pre_->AccountExistingAntiPod(*p, node);
  }
}

void FitChecker::OnPodAdded(const Pod& placed, NodeIndex node) {
  if (!pre_) {
    // Only a placed pod whose anti-affinity selects this pod makes a precompute necessary.
    if (!placed.has_required_anti_affinity) return;
    pre_ = std::make_unique<Precomputed>();
    pre_->pod = pod_;
    pre_->snapshot = snapshot_;
  }
  if (!pre_->affinity.empty() || !pre_->anti_affinity.empty())
    pre_->AccountAffinityPod(placed, node);
  pre_->AccountExistingAntiPod(placed, node);
  if (!pre_->spread.empty()) {
    pre_->AccountSpreadPod(placed, node);
    pre_->RecomputeSpreadMin();
  }
}

bool FitChecker::OfferDomain(const Node& template_node) {
  if (!pre_ || pre_->spread.empty() || !pre_->OfferDomain(template_node)) return false;
  pre_->RecomputeSpreadMin();
  return true;
}

uint64_t FitChecker::SpreadLoosened() const { return pre_ ? pre_->loosened : 0; }

FitChecker::~FitChecker() = default;
FitChecker::FitChecker(FitChecker&&) noexcept = default;
FitChecker& FitChecker::operator=(FitChecker&&) noexcept = default;

namespace {

// A failure with or without its wording (Fits() needs only the code).
template <bool kReason>
FitResult Failure(const Verdict& v) {
  if constexpr (kReason) return MakeFailure(v);
  FitResult r;
  r.code = v.code;
  return r;
}

}  // namespace

// Inlined into Check and CheckTemplate: the path of a pod that fits stays free of calls.
template <bool kReason>
[[gnu::always_inline]] inline FitResult FitChecker::CheckLast(const Node& node,
                                                              NodeIndex index) const {
  if (pre_) {
    const Target t{&node, index};
    const Verdict spread = pre_->SpreadVerdict(t);
    if (!spread.fits()) return Failure<kReason>(spread);
    const Verdict inter_pod = pre_->InterPodVerdict(t);
    if (!inter_pod.fits()) return Failure<kReason>(inter_pod);
  }
  if (pod_->resource_claims().empty()) return FitResult::Fit();
  if constexpr (!kReason) {
    if (claims_ == nullptr || !snapshot_->dra()->CanAllocate(*claims_, node))
      return Failure<false>(Reject(FitCode::kDynamicResources));
    return FitResult::Fit();
  }
  return ClaimsResult(claims_, snapshot_->dra(), node);
}

template <bool kReason>
FitResult FitChecker::CheckNode(NodeIndex index) const {
  TIDEPOOL_CHECK(index < snapshot_->NodeSlots());
  const NodeInfo& info = snapshot_->Get(index);
  TIDEPOOL_CHECK_MSG(!info.removed, "fit check against a removed node");
  const Node& node = *info.node;
  // Whether it fits does not depend on the filters' order, only its wording does: without the
  // wording, the resource filter goes first. It compares a few numbers, and on a full cluster it
  // turns most nodes down before their labels and taints are read.
  if constexpr (!kReason) {
    if (FirstShort(*pod_, info.allocatable, info.requested, info.requested.pods()) !=
        Short::kNothing) {
      return Failure<false>(Reject(FitCode::kNodeResources));
    }
  }
  // Each verdict is its own constant: reassigning one Verdict made g++ copy it through
  // overlapping stack moves that stall store forwarding on the hot path.
  const Verdict fixed = StaticVerdict(*pod_, node, info.unschedulable, info.has_taints);
  if (!fixed.fits()) return Failure<kReason>(fixed);
  if (pre_ && !pre_->ports.empty() && pre_->PortsConflict(info)) {
    return Failure<kReason>(Reject(FitCode::kNodePorts));
  }
  if constexpr (kReason) {
    const Verdict resources =
        ResourcesVerdict(*pod_, info.allocatable, info.requested, info.requested.pods());
    if (!resources.fits()) return Failure<kReason>(resources);
  }
  return CheckLast<kReason>(node, index);
}

FitResult FitChecker::Check(NodeIndex index) const { return CheckNode<true>(index); }

bool FitChecker::Fits(NodeIndex index) const { return CheckNode<false>(index).fits(); }

FitResult FitChecker::CheckTemplate(const Node& node, const Resources& existing_requests,
                                    int existing_pods) const {
  const Verdict fixed = StaticVerdict(*pod_, node);
  if (!fixed.fits()) return MakeFailure(fixed);
  // A new node has no pods with host ports (DaemonSet pods' ports are not known here).
  const Verdict resources =
      ResourcesVerdict(*pod_, node.allocatable, existing_requests, existing_pods);
  if (!resources.fits()) return MakeFailure(resources);
  return CheckLast<true>(node, kNoNode);
}

FitResult CheckClaims(const Pod& pod, const Node& node, const ClusterSnapshot& snapshot) {
  if (pod.resource_claims().empty()) return FitResult::Fit();
  const DraState* dra = snapshot.dra();
  return ClaimsResult(dra != nullptr ? &dra->ClaimsOf(pod) : nullptr, dra, node);
}

FitResult Fits(const Pod& pod, NodeIndex node, const ClusterSnapshot& snapshot) {
  return FitChecker(pod, snapshot).Check(node);
}

}  // namespace tidepool::sched
