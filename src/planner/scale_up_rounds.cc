// The round loop of a scale-up pass: per round, the pools that may grow, an exact bin-packing
// estimate for the best of them, the expander chain's choice, and its commit to the snapshot.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "base/check.h"
#include "planner/expander.h"
#include "planner/scale_up_pass.h"

namespace tidepool::planner::scale_up_detail {
namespace {

// With many pools, exact bin-packing for every one of them each round costs
// O(pools x pods); the options are first ranked by a fluid estimate (resources only) and only
// the best kMaxExactOptions are packed exactly. With fewer pools every option is exact.
constexpr size_t kMaxExactOptions = 8;

// The fluid estimate of `pods` on new nodes of `ps`: resources only, no inter-pod rules.
ExpanderOption FluidOption(const PoolState& ps, const std::vector<const Pod*>& pods) {
  const Resources& alloc = ps.pool->template_node.allocatable;
  Resources sum;
  for (const Pod* p : pods) sum += p->requests;
  int64_t nodes = 1;
  sum.ForEach([&](model::ResourceId id, int64_t v) {
    int64_t room = alloc.Get(id) - ps.ds_requests.Get(id);
    if (room > 0) nodes = std::max(nodes, (v + room - 1) / room);
  });
  ExpanderOption o{ps.pool, static_cast<int>(nodes), static_cast<int>(pods.size()), sum, {}};
  for (int64_t k = 0; k < nodes; ++k) o.allocatable += alloc;
  o.requested += ps.ds_requests;
  return o;
}

}  // namespace

NodeIndex Pass::AddNewNode(PoolState& ps, int k) {
  while (static_cast<int>(ps.new_nodes.size()) <= k) {
    ps.new_nodes.push_back(ps.pool->template_node);
    Node& node = ps.new_nodes.back();
    node.meta.name = fmt::format("new-{}-{}", ps.pool->name, ps.new_nodes.size() - 1);
    node.meta.labels[std::string(model::kLabelHostname)] = node.meta.name;
  }
  auto idx = snap_.AddNode(&ps.new_nodes[k]);
  TIDEPOOL_CHECK_MSG(idx.has_value(), "new node name already in the snapshot");
  for (const Pod* d : ps.ds_pods) (void)snap_.AddPod(d, *idx);
  return *idx;
}

sched::FitResult Pass::TemplateFit(const Pod& pod, const PoolState& ps) const {
  sched::FitResult r = sched::CheckNodeStatic(pod, ps.pool->template_node);
  if (!r.fits()) return r;
  Resources used = ps.ds_requests;
  used.Set(model::kPods, static_cast<int64_t>(ps.ds_pods.size()));
  return sched::CheckResources(pod, ps.pool->template_node.allocatable, used);
}

bool Pass::FitsTemplate(const Pod* pod, size_t pool_index) {
  uint32_t g = GroupOf(pod);
  if (static_fit_.size() <= g) static_fit_.resize(g + 1);
  auto& row = static_fit_[g];
  if (row.empty()) row.assign(pools_.size(), -1);
  if (row[pool_index] < 0) row[pool_index] = TemplateFit(*pod, pools_[pool_index]).fits() ? 1 : 0;
  return row[pool_index] == 1;
}

std::optional<PoolReason> Pass::LimitReason(const PoolState& ps, int extra,
                                            const Resources& extra_cap) const {
  if (ps.current + ps.added + extra >= ps.pool->max) {
    return PoolReason{ReasonKind::kPoolMax,
                      fmt::format("pool {} at max {}", ps.pool->name, ps.pool->max)};
  }
  if (cfg_.limits.max_nodes && cluster_nodes_ + extra >= *cfg_.limits.max_nodes) {
    return PoolReason{ReasonKind::kClusterMaxNodes,
                      fmt::format("cluster limit maxNodes {} reached", *cfg_.limits.max_nodes)};
  }
  const Resources& cap = ps.pool->template_node.capacity;
  for (model::ResourceId id : cfg_.limits.limited) {
    int64_t limit = cfg_.limits.resources.Get(id);
    if (cluster_capacity_.Get(id) + extra_cap.Get(id) + cap.Get(id) > limit && cap.Get(id) > 0) {
      return PoolReason{ReasonKind::kClusterResource,
                        fmt::format("cluster limit {} {} reached", model::ResourceName(id),
                                    model::FormatAmount(id, limit)),
                        id};
    }
  }
  // maxNodesPerScaleUp bounds the whole pass: nodes committed in earlier rounds (other pools,
  // gangs) count as well as those of the estimate in progress.
  if (cluster_nodes_ - base_cluster_nodes_ + extra >= cfg_.scale_up.max_nodes_per_scale_up) {
    return PoolReason{ReasonKind::kScaleUpLimit,
                      fmt::format("maxNodesPerScaleUp {} reached for this pass",
                                  cfg_.scale_up.max_nodes_per_scale_up)};
  }
  return std::nullopt;
}

Estimate Pass::Pack(PoolState& ps, const std::vector<const Pod*>& pods) {
  Estimate e;
  e.ps = &ps;
  std::vector<NodeIndex> new_nodes;
  Resources added_capacity;
  // Pods arrive grouped and sorted bigger-first. One checker per equivalence group, kept up to
  // date as nodes and pods are added. `ptr` is the first new node not known to be full for the
  // group: packing only adds pods, so a node a member did not fit stays unfit for the group,
  // unless topology spread makes it depend on the other domains.
  size_t ptr = 0;
  uint32_t group = UINT32_MAX;
  std::optional<FitChecker> checker;
  for (const Pod* pod : pods) {
    uint32_t key = GroupOf(pod);
    if (key != group || !checker) {
      ptr = 0;
      group = key;
      checker.emplace(*pod, snap_);
    }
    bool monotone = pod->topology_spread_constraints.empty();
    size_t start = monotone ? ptr : 0;
    bool placed = false;
    for (size_t i = start; i < new_nodes.size(); ++i) {
      if (checker->Check(new_nodes[i]).fits()) {
        (void)snap_.AddPod(pod, new_nodes[i]);
        checker->OnPodAdded(*pod, new_nodes[i]);
        if (monotone) ptr = i;
        placed = true;
        break;
      }
    }
    if (!placed && monotone) ptr = new_nodes.size();
    if (!placed) {
      if (auto limit = LimitReason(ps, e.nodes, added_capacity)) {
        NoteReason(*pod, ps.pool->name, std::move(*limit));
        continue;
      }
      // A fresh node must take the pod; inter-pod rules may still refuse it.
      sched::FitResult r = checker->CheckTemplate(ps.pool->template_node, ps.ds_requests,
                                                  static_cast<int>(ps.ds_pods.size()));
      if (!r.fits()) {
        NoteReason(*pod, ps.pool->name, FromFit(r));
        continue;
      }
      NodeIndex idx = AddNewNode(ps, ps.added + e.nodes);
      checker->OnNodeAdded(idx);
      ++e.nodes;
      added_capacity += ps.pool->template_node.capacity;
      e.allocatable += ps.pool->template_node.allocatable;
      e.requested += ps.ds_requests;
      new_nodes.push_back(idx);
      (void)snap_.AddPod(pod, idx);
      checker->OnPodAdded(*pod, idx);
    }
    e.pods.push_back(pod);
    e.requested += pod->requests;
  }
  return e;
}

NodeIndex Pass::PlaceOnExisting(const Pod& pod, uint32_t group) {
  size_t n = snap_.NodeSlots();
  if (n == 0) return sched::kNoNode;
  // A group that fit no node still fits none while only pods have been added since.
  if (n != no_fit_node_slots_) {
    no_fit_groups_.clear();
    no_fit_node_slots_ = n;
  }
  if (no_fit_groups_.contains(group)) return sched::kNoNode;
  FitChecker checker(pod, snap_);
  size_t start = 0;
  if (auto it = hints_.find(group); it != hints_.end()) start = it->second;
  for (size_t k = 0; k < n; ++k) {
    auto i = static_cast<NodeIndex>((start + k) % n);
    if (snap_.Get(i).removed) continue;
    if (checker.Check(i).fits()) {
      (void)snap_.AddPod(&pod, i);
      hints_[group] = i;
      return i;
    }
  }
  no_fit_groups_.insert(group);
  return sched::kNoNode;
}

bool Pass::GrowOnce(std::vector<const Pod*>& remaining, std::map<std::string, ScaleUp>& ups) {
  ++round_;
  std::vector<Candidate> candidates = Candidates(remaining);
  if (candidates.empty()) {
    NoteLimits(remaining);
    return false;
  }
  // Rank by the fluid estimate when there are many candidates; pack them exactly in batches
  // of kMaxExactOptions, best first, until a batch yields an option that places pods (the
  // fluid estimate ignores inter-pod rules, so a whole batch can come out empty).
  if (candidates.size() > kMaxExactOptions) RankByFluidEstimate(candidates);
  std::vector<Estimate> options = PackCandidates(candidates);
  if (options.empty()) return false;

  std::vector<ExpanderOption> eo;
  for (const Estimate& e : options) {
    eo.push_back(
        {e.ps->pool, e.nodes, static_cast<int>(e.pods.size()), e.requested, e.allocatable});
  }
  ExpanderChoice choice = ChooseOption(cfg_.scale_up.expanders, eo, cfg_.scale_up.random_seed,
                                       static_cast<uint64_t>(round_));
  Estimate& best = options[choice.index];
  // Re-pack the winner for real: the estimate is deterministic, so this reproduces it.
  std::vector<const Pod*> winners = best.pods;
  snap_.Fork();
  Estimate e = Pack(*best.ps, winners);
  snap_.Commit();
  TIDEPOOL_CHECK(e.pods.size() == winners.size() && e.nodes == best.nodes);
  AccountCommitted(e, ups, choice.reason);
  std::unordered_set<const Pod*> placed(winners.begin(), winners.end());
  std::erase_if(remaining, [&](const Pod* p) { return placed.contains(p); });
  return true;
}

std::vector<Pass::Candidate> Pass::Candidates(const std::vector<const Pod*>& remaining) {
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < pools_.size(); ++i) {
    if (pools_[i].backoff_until) continue;
    if (LimitReason(pools_[i], 0, Resources())) continue;
    Candidate c{i, {}};
    for (const Pod* p : remaining)
      if (FitsTemplate(p, i)) c.pods.push_back(p);
    if (!c.pods.empty()) candidates.push_back(std::move(c));
  }
  return candidates;
}

void Pass::NoteLimits(const std::vector<const Pod*>& remaining) {
  for (const PoolState& ps : pools_) {
    std::optional<PoolReason> limit = LimitReason(ps, 0, Resources());
    if (!limit || ps.backoff_until) continue;
    size_t i = &ps - pools_.data();
    for (const Pod* p : remaining)
      if (FitsTemplate(p, i)) NoteReason(*p, ps.pool->name, *limit);
  }
}

void Pass::RankByFluidEstimate(std::vector<Candidate>& candidates) {
  std::vector<ExpanderOption> fluid;
  for (const Candidate& c : candidates) fluid.push_back(FluidOption(pools_[c.pool], c.pods));
  std::vector<Candidate> ranked;
  while (!candidates.empty()) {
    size_t w = ChooseOption(cfg_.scale_up.expanders, fluid, cfg_.scale_up.random_seed,
                            static_cast<uint64_t>(round_))
                   .index;
    ranked.push_back(std::move(candidates[w]));
    candidates.erase(candidates.begin() + static_cast<long>(w));
    fluid.erase(fluid.begin() + static_cast<long>(w));
  }
  candidates = std::move(ranked);
}

std::vector<Estimate> Pass::PackCandidates(const std::vector<Candidate>& candidates) {
  std::vector<Estimate> options;
  for (size_t next = 0; next < candidates.size() && options.empty(); next += kMaxExactOptions) {
    for (size_t i = next; i < std::min(candidates.size(), next + kMaxExactOptions); ++i) {
      snap_.Fork();
      Estimate e = Pack(pools_[candidates[i].pool], candidates[i].pods);
      snap_.Revert();
      if (!e.pods.empty()) options.push_back(std::move(e));
    }
  }
  return options;
}

void Pass::AccountCommitted(const Estimate& e, std::map<std::string, ScaleUp>& ups,
                            const std::string& why) {
  PoolState& ps = *e.ps;
  ps.added += e.nodes;
  cluster_nodes_ += e.nodes;
  for (int i = 0; i < e.nodes; ++i) cluster_capacity_ += ps.pool->template_node.capacity;
  ScaleUp& up = ups[ps.pool->name];
  up.pool = ps.pool->name;
  up.add += e.nodes;
  if (up.reason.empty()) up.reason = why;
  for (const Pod* p : e.pods) {
    if (p->meta.name.empty()) continue;  // a gang member not created yet
    if (p->meta.Annotation(kWarmPoolAnnotation) != nullptr) continue;  // a warm placeholder
    up.pods.push_back(p->Key());
    if (!explain_pod_.empty() && up.pods.back() == explain_pod_)
      pool_for_[explain_pod_] = ps.pool->name;
  }
}

}  // namespace tidepool::planner::scale_up_detail
