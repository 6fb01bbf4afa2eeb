#include "planner/scale_up.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/check.h"
#include "planner/expander.h"
#include "planner/explain.h"
#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::planner {
namespace {

using model::Node;
using model::Pod;
using model::Pool;
using model::Resources;
using sched::ClusterSnapshot;
using sched::FitChecker;
using sched::NodeIndex;

// Per pool state for one pass.
struct PoolState {
  const Pool* pool = nullptr;
  int current = 0;  // registered nodes plus upcoming ones
  int added = 0;    // committed in this pass
  std::optional<Time> backoff_until;
  std::vector<const Pod*> ds_pods;
  Resources ds_requests;
  // Template node copies for new nodes of this pass: [k] is "new-<pool>-<k>". Reused across
  // estimates, which only ever use indexes >= added.
  std::deque<Node> new_nodes;
};

// Pods that are the same for scheduling: checked once per pool for static fit.
struct Group {
  std::string key;
  std::vector<const Pod*> pods;
  const Pod* rep() const { return pods.front(); }
};

// The outcome of bin-packing some pods onto new nodes of one pool.
struct Estimate {
  PoolState* ps = nullptr;
  int nodes = 0;
  std::vector<const Pod*> pods;
  Resources requested;  // of the placed pods plus DaemonSets on the new nodes
  Resources allocatable;
};


// A compact, allocation-light serialization of the scheduling-relevant spec (no formatting).
class KeyWriter {
 public:
  KeyWriter() { key_.reserve(256); }
  void Str(std::string_view v) {
    Int(static_cast<int64_t>(v.size()));
    key_.append(v);
  }
  void Int(int64_t v) { key_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void Tag(char c) { key_.push_back(c); }
  void Selector(const model::LabelSelector& sel) {
    for (const auto& [k, v] : sel.match_labels) {
      Str(k);
      Str(v);
    }
    Requirements(sel.match_expressions);
  }
  void Requirements(const std::vector<model::SelectorRequirement>& reqs) {
    for (const auto& r : reqs) {
      Str(r.key);
      Int(static_cast<int>(r.op));
      for (const auto& v : r.values) Str(v);
      Tag(';');
    }
  }
  std::string Take() { return std::move(key_); }

 private:
  std::string key_;
};

// Everything that decides where a pod can go: two pods with the same key are interchangeable
// for the planner (same owner, requests, selectors, tolerations, inter-pod rules and, when
// those rules can match the pod itself, the same labels).
std::string EquivalenceKey(const Pod& p) {
  KeyWriter w;
  if (const model::OwnerReference* c = p.meta.Controller()) {
    w.Tag('c');
    w.Str(c->uid);
    w.Str(c->name);
  } else {
    w.Tag('p');
    w.Str(p.meta.name);
  }
  w.Str(p.meta.namespace_);
  p.requests.ForEach([&](model::ResourceId id, int64_t v) {
    w.Int(id);
    w.Int(v);
  });
  w.Tag('n');
  for (const auto& [k, v] : p.node_selector) {
    w.Str(k);
    w.Str(v);
  }
  w.Tag('t');
  for (const auto& t : p.tolerations) {
    w.Str(t.key);
    w.Int(static_cast<int>(t.op));
    w.Str(t.value);
    w.Int(t.effect ? static_cast<int>(*t.effect) : -1);
  }
  if (p.affinity.node_required) {
    for (const auto& term : p.affinity.node_required->terms) {
      w.Tag('a');
      w.Requirements(term.match_expressions);
      w.Tag('f');
      w.Requirements(term.match_fields);
    }
  }
  bool inter_pod = p.has_required_affinity || p.has_required_anti_affinity ||
                   !p.topology_spread_constraints.empty();
  if (inter_pod) {
    for (const auto* terms : {&p.affinity.pod_affinity_required, &p.affinity.pod_anti_affinity_required}) {
      w.Tag('P');
      for (const auto& t : *terms) {
        w.Str(t.topology_key);
        w.Selector(t.label_selector);
        for (const auto& n : t.namespaces) w.Str(n);
        w.Tag(t.namespace_selector ? 'S' : '-');
      }
    }
    for (const auto& c : p.topology_spread_constraints) {
      w.Tag('s');
      w.Str(c.topology_key);
      w.Int(c.max_skew);
      w.Int(static_cast<int>(c.when_unsatisfiable));
      w.Int(c.min_domains.value_or(0));
      w.Int(static_cast<int>(c.node_affinity_policy));
      w.Int(static_cast<int>(c.node_taints_policy));
      w.Selector(c.label_selector);
      for (const auto& k : c.match_label_keys) w.Str(k);
    }
    w.Tag('l');
    for (const auto& [k, v] : p.meta.labels) {
      w.Str(k);
      w.Str(v);
    }
  }
  for (const auto* list : {&p.init_containers, &p.containers})
    for (const auto& c : *list)
      for (const auto& port : c.ports)
        if (port.host_port != 0) {
          w.Tag('h');
          w.Int(port.host_port);
          w.Str(port.protocol);
          w.Str(port.host_ip);
        }
  return w.Take();
}

class Pass {
 public:
  // `explain_pod`: the one pod whose placement Explain wants to know; others are not tracked.
  Pass(const PlannerInput& in, std::string explain_pod = "", ScaleUpOptions options = {})
      : in_(in), cfg_(*in.config), explain_pod_(std::move(explain_pod)), options_(options) {}

  ScaleUpPlan Run();

  // For Explain: after Run().
  const std::map<std::string, std::string>* ReasonsFor(const std::string& pod) const {
    auto it = reasons_.find(pod);
    return it == reasons_.end() ? nullptr : &it->second;
  }
  std::string FitsNodeOf(const std::string& pod) const {
    auto it = fits_node_.find(pod);
    return it == fits_node_.end() ? "" : it->second;
  }
  std::string PoolFor(const std::string& pod) const {
    auto it = pool_for_.find(pod);
    return it == pool_for_.end() ? "" : it->second;
  }

 private:
  void BuildSnapshot();
  NodeIndex AddNewNode(PoolState& ps, int k);
  // Static fit of a pod on an empty template node of the pool (with its DaemonSet pods).
  sched::FitResult TemplateFit(const Pod& pod, const PoolState& ps) const;
  // TemplateFit(...).fits(), cached per (equivalence group, pool).
  bool FitsTemplate(const Pod* pod, size_t pool_index);
  // Why the pool cannot take another node now, or "" when it can. `extra` counts nodes already
  // added by the estimate in progress.
  std::string LimitReason(const PoolState& ps, int extra, const Resources& extra_capacity) const;
  // Bin-packs pods onto new nodes of one pool. Leaves the snapshot changed (caller reverts or
  // commits). Records per-pod limit reasons for pods left over.
  Estimate Pack(PoolState& ps, const std::vector<const Pod*>& pods);
  // Tries to place one pod on any node already in the snapshot. Returns its index or kNoNode.
  NodeIndex PlaceOnExisting(const Pod& pod, uint32_t group);
  // Warm placeholders (step 4 of Run): a node of the placeholder's pool with room for it, or
  // kNoNode. Real nodes are matched by PoolOf, so nodes found by the agentpool label count.
  // `daemon_set_pods`: the pods every node of a pool runs (an idle node holds only those).
  NodeIndex FindWarmRoom(const Pod& pod, const std::unordered_set<const Pod*>& daemon_set_pods);
  void PlanWarm(ScaleUpPlan& plan, std::map<std::string, ScaleUp>& ups);
  // One round of "choose the best pool for these pods and commit it". Returns false when no
  // pool can take any of them.
  bool GrowOnce(std::vector<const Pod*>& remaining, std::map<std::string, ScaleUp>& ups);
  // The equivalence group of a pod, computed once per pod per pass.
  uint32_t GroupOf(const Pod* pod) {
    auto it = group_of_.find(pod);
    if (it != group_of_.end()) return it->second;
    auto [git, inserted] = group_ids_.emplace(EquivalenceKey(*pod), group_ids_.size());
    group_of_.emplace(pod, git->second);
    return git->second;
  }
  // First-fit decreasing order: bigger pods first (GPUs, cpu, memory), members of one group
  // together; otherwise the incoming (deterministic) order is kept.
  void SortForPacking(std::vector<const Pod*>& pods) {
    struct Item {
      int64_t gpus, cpu, memory;
      uint32_t group;
      const Pod* pod;
    };
    std::vector<Item> items;
    items.reserve(pods.size());
    for (const Pod* p : pods)
      items.push_back({p->requests.gpus(), p->requests.cpu_milli(), p->requests.memory(), GroupOf(p), p});
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return std::tie(b.gpus, b.cpu, b.memory, a.group) < std::tie(a.gpus, a.cpu, a.memory, b.group);
    });
    for (size_t i = 0; i < items.size(); ++i) pods[i] = items[i].pod;
  }
  void NoteReason(const Pod& pod, const std::string& pool, std::string reason) {
    reasons_[pod.Key()][pool] = std::move(reason);
  }
  void RecordStaticReasons(const std::vector<const Pod*>& pods);
  void AccountCommitted(const Estimate& e, std::map<std::string, ScaleUp>& ups,
                        const std::string& why);

  const PlannerInput& in_;
  const model::AutoscalerConfig& cfg_;
  ClusterSnapshot snap_;
  std::deque<Node> upcoming_nodes_;
  std::deque<Pod> phantom_pods_;
  std::vector<PoolState> pools_;  // sorted by pool name
  int cluster_nodes_ = 0;         // registered + upcoming + added in this pass
  int base_cluster_nodes_ = 0;    // cluster_nodes_ before this pass added any
  Resources cluster_capacity_;    // of the same nodes
  std::unordered_map<uint32_t, NodeIndex> hints_;  // group -> last node a member fit
  // Groups that fit no node of the snapshot as it had no_fit_node_slots_ node slots. Valid
  // while only pods are added: more pods never make room. New nodes clear it.
  std::unordered_set<uint32_t> no_fit_groups_;
  size_t no_fit_node_slots_ = 0;
  std::unordered_map<std::string, uint32_t> group_ids_;
  std::vector<std::vector<int8_t>> static_fit_;  // [group][pool]: -1 unknown, 0 no, 1 yes
  std::unordered_map<const Pod*, uint32_t> group_of_;
  std::map<std::string, std::map<std::string, std::string>> reasons_;  // pod -> pool -> why
  std::map<std::string, std::string> fits_node_;
  std::map<std::string, std::string> pool_for_;
  int round_ = 0;
  std::string explain_pod_;
  ScaleUpOptions options_;
};

void Pass::BuildSnapshot() {
  pools_.reserve(cfg_.pools.size());
  for (const Pool& p : cfg_.pools) {
    PoolState ps;
    ps.pool = &p;
    if (auto it = in_.backoff_until.find(p.name); it != in_.backoff_until.end() &&
                                                  it->second > in_.now) {
      ps.backoff_until = it->second;
    }
    ps.ds_pods = DaemonSetPodsFor(p.template_node, in_.daemon_sets);
    for (const Pod* d : ps.ds_pods) ps.ds_requests += d->requests;
    pools_.push_back(std::move(ps));
  }
  std::sort(pools_.begin(), pools_.end(),
            [](const PoolState& a, const PoolState& b) { return a.pool->name < b.pool->name; });

  for (const Node* n : in_.nodes) {
    if (n->meta.deletion_timestamp) continue;
    auto idx = snap_.AddNode(n);
    if (!idx) continue;  // duplicate name in the input: the first one wins
    ++cluster_nodes_;
    cluster_capacity_ += n->capacity;
    if (const Pool* p = PoolOf(*n, in_)) {
      for (auto& ps : pools_)
        if (ps.pool == p) ++ps.current;
    }
  }
  for (const Pod* p : in_.pods) {
    if (p->node_name.empty() || p->IsTerminal()) continue;
    NodeIndex idx = snap_.FindNode(p->node_name);
    if (idx != sched::kNoNode) (void)snap_.AddPod(p, idx);
  }
  // Upcoming nodes: requested, not registered yet. Modelled from the pool template so pods that
  // will fit them trigger nothing.
  for (auto& ps : pools_) {
    auto it = in_.upcoming.find(ps.pool->name);
    int n = it == in_.upcoming.end() ? 0 : it->second;
    for (int k = 0; k < n; ++k) {
      upcoming_nodes_.push_back(ps.pool->template_node);
      Node& node = upcoming_nodes_.back();
      node.meta.name = fmt::format("upcoming-{}-{}", ps.pool->name, k);
      node.meta.labels[std::string(model::kLabelHostname)] = node.meta.name;
      auto idx = snap_.AddNode(&node);
      TIDEPOOL_CHECK(idx.has_value());
      for (const Pod* d : ps.ds_pods) (void)snap_.AddPod(d, *idx);
      ++ps.current;
      ++cluster_nodes_;
      cluster_capacity_ += node.capacity;
    }
  }
  base_cluster_nodes_ = cluster_nodes_;
}

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

std::string Pass::LimitReason(const PoolState& ps, int extra, const Resources& extra_cap) const {
  if (ps.current + ps.added + extra >= ps.pool->max) {
    return fmt::format("pool {} at max {}", ps.pool->name, ps.pool->max);
  }
  if (cfg_.limits.max_nodes && cluster_nodes_ + extra >= *cfg_.limits.max_nodes) {
    return fmt::format("cluster limit maxNodes {} reached", *cfg_.limits.max_nodes);
  }
  const Resources& cap = ps.pool->template_node.capacity;
  for (model::ResourceId id : cfg_.limits.limited) {
    int64_t limit = cfg_.limits.resources.Get(id);
    if (cluster_capacity_.Get(id) + extra_cap.Get(id) + cap.Get(id) > limit && cap.Get(id) > 0) {
      return fmt::format("cluster limit {} {} reached", model::ResourceName(id),
                         model::FormatAmount(id, limit));
    }
  }
  // maxNodesPerScaleUp bounds the whole pass: nodes committed in earlier rounds (other pools,
  // gangs) count as well as those of the estimate in progress.
  if (cluster_nodes_ - base_cluster_nodes_ + extra >= cfg_.scale_up.max_nodes_per_scale_up) {
    return fmt::format("maxNodesPerScaleUp {} reached for this pass",
                       cfg_.scale_up.max_nodes_per_scale_up);
  }
  return "";
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
      std::string limit = LimitReason(ps, e.nodes, added_capacity);
      if (!limit.empty()) {
        NoteReason(*pod, ps.pool->name, limit);
        continue;
      }
      // A fresh node must take the pod; inter-pod rules may still refuse it.
      sched::FitResult r = checker->CheckTemplate(ps.pool->template_node, ps.ds_requests,
                                                  static_cast<int>(ps.ds_pods.size()));
      if (!r.fits()) {
        NoteReason(*pod, ps.pool->name, r.reason);
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

void Pass::RecordStaticReasons(const std::vector<const Pod*>& pods) {
  for (const Pod* pod : pods) {
    for (const PoolState& ps : pools_) {
      std::string& slot = reasons_[pod->Key()][ps.pool->name];
      if (ps.backoff_until) {
        slot = fmt::format("pool {} in backoff until {}", ps.pool->name,
                           FormatRfc3339(*ps.backoff_until));
        continue;
      }
      sched::FitResult r = TemplateFit(*pod, ps);
      if (!r.fits()) slot = r.reason;
    }
  }
}

// With many pools, exact bin-packing for every one of them each round costs
// O(pools x pods); the options are first ranked by a fluid estimate (resources only) and only
// the best kMaxExactOptions are packed exactly. With fewer pools every option is exact.
constexpr size_t kMaxExactOptions = 8;

bool Pass::GrowOnce(std::vector<const Pod*>& remaining, std::map<std::string, ScaleUp>& ups) {
  ++round_;
  struct Candidate {
    size_t pool;
    std::vector<const Pod*> pods;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < pools_.size(); ++i) {
    if (pools_[i].backoff_until) continue;
    if (!LimitReason(pools_[i], 0, Resources()).empty()) continue;
    Candidate c{i, {}};
    for (const Pod* p : remaining)
      if (FitsTemplate(p, i)) c.pods.push_back(p);
    if (!c.pods.empty()) candidates.push_back(std::move(c));
  }
  if (candidates.empty()) {
    // Record why the pools that could host the pods cannot grow, for the reasons.
    for (const PoolState& ps : pools_) {
      std::string limit = LimitReason(ps, 0, Resources());
      if (limit.empty() || ps.backoff_until) continue;
      size_t i = &ps - pools_.data();
      for (const Pod* p : remaining)
        if (FitsTemplate(p, i)) NoteReason(*p, ps.pool->name, limit);
    }
    return false;
  }
  // Rank by the fluid estimate when there are many candidates; pack them exactly in batches
  // of kMaxExactOptions, best first, until a batch yields an option that places pods (the
  // fluid estimate ignores inter-pod rules, so a whole batch can come out empty).
  if (candidates.size() > kMaxExactOptions) {
    std::vector<ExpanderOption> fluid;
    for (const Candidate& c : candidates) {
      const PoolState& ps = pools_[c.pool];
      const Resources& alloc = ps.pool->template_node.allocatable;
      Resources sum;
      for (const Pod* p : c.pods) sum += p->requests;
      int64_t nodes = 1;
      sum.ForEach([&](model::ResourceId id, int64_t v) {
        int64_t room = alloc.Get(id) - ps.ds_requests.Get(id);
        if (room > 0) nodes = std::max(nodes, (v + room - 1) / room);
      });
      ExpanderOption o{ps.pool, static_cast<int>(nodes), static_cast<int>(c.pods.size()), sum, {}};
      for (int64_t k = 0; k < nodes; ++k) o.allocatable += alloc;
      o.requested += ps.ds_requests;
      fluid.push_back(o);
    }
    std::vector<Candidate> ranked;
    while (!candidates.empty()) {
      size_t w = ChooseOption(cfg_.scale_up.expanders, fluid, cfg_.scale_up.random_seed,
                              static_cast<uint64_t>(round_)).index;
      ranked.push_back(std::move(candidates[w]));
      candidates.erase(candidates.begin() + static_cast<long>(w));
      fluid.erase(fluid.begin() + static_cast<long>(w));
    }
    candidates = std::move(ranked);
  }

  std::vector<Estimate> options;
  for (size_t next = 0; next < candidates.size() && options.empty(); next += kMaxExactOptions) {
    for (size_t i = next; i < std::min(candidates.size(), next + kMaxExactOptions); ++i) {
      snap_.Fork();
      Estimate e = Pack(pools_[candidates[i].pool], candidates[i].pods);
      snap_.Revert();
      if (!e.pods.empty()) options.push_back(std::move(e));
    }
  }
  if (options.empty()) return false;

  std::vector<ExpanderOption> eo;
  for (const Estimate& e : options) {
    eo.push_back({e.ps->pool, e.nodes, static_cast<int>(e.pods.size()), e.requested,
                  e.allocatable});
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
    if (!explain_pod_.empty() && up.pods.back() == explain_pod_) pool_for_[explain_pod_] = ps.pool->name;
  }
}

NodeIndex Pass::FindWarmRoom(const Pod& pod,
                             const std::unordered_set<const Pod*>& daemon_set_pods) {
  const std::string* pool_name = pod.meta.Annotation(kWarmPoolAnnotation);
  if (pool_name == nullptr) return sched::kNoNode;
  const std::string* whole_value = pod.meta.Annotation(kWarmWholeNodeAnnotation);
  const bool whole = whole_value != nullptr && *whole_value == "true";
  for (size_t i = 0; i < snap_.NodeSlots(); ++i) {
    const sched::NodeInfo& info = snap_.Get(static_cast<NodeIndex>(i));
    if (info.removed || info.unschedulable) continue;
    const Pool* pool = PoolOf(*info.node, in_);
    if (pool == nullptr || pool->name != *pool_name) continue;
    if (model::FindUntoleratedTaint(info.node->taints, pod.tolerations) != nullptr) continue;
    if (whole) {
      // Idle: nothing placed but what every node runs.
      bool idle = std::all_of(info.pods.begin(), info.pods.end(), [&](const Pod* p) {
        return p->IsDaemonSetPod() || p->IsMirrorPod() || daemon_set_pods.contains(p);
      });
      if (idle) return static_cast<NodeIndex>(i);
    } else if (sched::CheckResources(pod, info.allocatable, info.requested).fits()) {
      return static_cast<NodeIndex>(i);
    }
  }
  return sched::kNoNode;
}

void Pass::PlanWarm(ScaleUpPlan& plan, std::map<std::string, ScaleUp>& ups) {
  std::vector<const Pod*> need;
  std::unordered_set<const Pod*> daemon_set_pods;
  if (!in_.placeholders.empty()) {
    for (const PoolState& ps : pools_) daemon_set_pods.insert(ps.ds_pods.begin(), ps.ds_pods.end());
  }
  for (const Pod* p : in_.placeholders) {
    NodeIndex i = FindWarmRoom(*p, daemon_set_pods);
    if (i == sched::kNoNode) {
      need.push_back(p);
    } else {
      // A whole-node placeholder takes the node whatever its exact size.
      (void)snap_.AddPod(p, i);
      no_fit_groups_.clear();
    }
  }
  SortForPacking(need);
  std::map<std::string, ScaleUp> warm_ups;
  while (!need.empty() && GrowOnce(need, warm_ups)) {
  }
  for (auto& [pool, up] : warm_ups) {
    ScaleUp& dst = ups[pool];
    dst.pool = pool;
    dst.add += up.add;
    dst.warm_add += up.add;
    if (dst.reason.empty()) dst.reason = up.reason;
  }
  for (const Pod* p : need) {
    const std::string& pool = *p->meta.Annotation(kWarmPoolAnnotation);
    if (plan.warm_unmet.contains(pool)) continue;
    std::string why = reasons_[p->Key()][pool];
    for (const PoolState& ps : pools_) {
      if (ps.pool->name != pool) continue;
      if (ps.backoff_until) {
        why = fmt::format("pool {} in backoff until {}", pool, FormatRfc3339(*ps.backoff_until));
      } else if (why.empty()) {
        why = LimitReason(ps, 0, Resources());
      }
    }
    plan.warm_unmet[pool] = why.empty() ? "no room for it in this pass" : why;
  }
}

ScaleUpPlan Pass::Run() {
  BuildSnapshot();
  ScaleUpPlan plan;

  // Pending pods, highest priority first, then oldest, then by name.
  std::vector<const Pod*> pending;
  for (const Pod* p : in_.pods)
    if (IsPendingForScaleUp(*p, cfg_.scale_up.expendable_priority_cutoff)) pending.push_back(p);
  {
    struct Item {
      int32_t priority;
      Time created;
      std::string key;
      const Pod* pod;
    };
    std::vector<Item> items;
    items.reserve(pending.size());
    for (const Pod* p : pending)
      items.push_back({p->PriorityOrZero(), p->meta.creation_timestamp.value_or(Time{}), p->Key(), p});
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return std::tie(b.priority, a.created, a.key) < std::tie(a.priority, b.created, b.key);
    });
    for (size_t i = 0; i < items.size(); ++i) pending[i] = items[i].pod;
  }

  // Gangs: members seen (bound or pending) and the pending ones, in first-seen order.
  std::map<std::string, std::vector<const Pod*>> gang_pending;
  std::map<std::string, int> gang_seen;
  std::vector<std::string> gang_order;
  for (const Pod* p : in_.pods) {
    if (p->IsTerminal() || p->meta.deletion_timestamp) continue;
    std::string g = GangOf(*p);
    if (!g.empty()) ++gang_seen[g];
  }
  std::vector<const Pod*> singles;
  for (const Pod* p : pending) {
    std::string g = options_.gang_aware ? GangOf(*p) : std::string();
    if (g.empty()) {
      singles.push_back(p);
      continue;
    }
    if (!gang_pending.contains(g)) gang_order.push_back(g);
    gang_pending[g].push_back(p);
  }

  // 1. Singles that fit existing or upcoming capacity trigger nothing. Within a priority, the
  // least flexible pods (whose group fits the fewest pool templates) go first, so a pod that
  // tolerates spot does not take the upcoming on-demand node a pod without that toleration
  // needs, which would make every later pass ask for one more node.
  {
    struct Item {
      int32_t priority;
      int flexibility;
      const Pod* pod;
    };
    std::vector<Item> items;
    items.reserve(singles.size());
    for (const Pod* p : singles) {
      int flexibility = 0;
      for (size_t i = 0; i < pools_.size(); ++i) flexibility += FitsTemplate(p, i) ? 1 : 0;
      items.push_back({p->PriorityOrZero(), flexibility, p});
    }
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return std::tie(b.priority, a.flexibility) < std::tie(a.priority, b.flexibility);
    });
    for (size_t i = 0; i < items.size(); ++i) singles[i] = items[i].pod;
  }
  std::vector<const Pod*> need;
  for (const Pod* p : singles) {
    NodeIndex i = PlaceOnExisting(*p, GroupOf(p));
    if (i != sched::kNoNode) {
      plan.fits_existing.push_back(p->Key());
      if (plan.fits_existing.back() == explain_pod_) fits_node_[explain_pod_] = snap_.Get(i).node->name();
    } else {
      need.push_back(p);
    }
  }

  std::map<std::string, ScaleUp> ups;
  // 2. Gangs, all or nothing: members on existing capacity first, then new nodes from any pools
  // their selectors allow, within all limits; otherwise nothing for the whole gang.
  for (const std::string& g : gang_order) {
    std::vector<const Pod*> members = gang_pending[g];
    int size = gang_seen[g];
    if (const std::string* s = members.front()->meta.Annotation(kGangSizeAnnotation)) {
      int declared = std::atoi(s->c_str());
      // Members not created yet are planned as copies of a pending one.
      for (int i = size; i < declared; ++i) {
        phantom_pods_.push_back(*members.front());
        phantom_pods_.back().meta.name.clear();  // not reported by name
        members.push_back(&phantom_pods_.back());
      }
      size = std::max(size, declared);
    }
    snap_.Fork();
    std::vector<const Pod*> left;
    std::vector<std::pair<const Pod*, std::string>> on_existing;
    for (const Pod* m : members) {
      NodeIndex i = PlaceOnExisting(*m, GroupOf(m));
      if (i == sched::kNoNode) {
        left.push_back(m);
      } else {
        on_existing.emplace_back(m, snap_.Get(i).node->name());
      }
    }
    SortForPacking(left);
    // Tentative accounting, undone if the gang does not fit whole.
    std::vector<int> added_before;
    for (const PoolState& ps : pools_) added_before.push_back(ps.added);
    int nodes_before = cluster_nodes_;
    Resources capacity_before = cluster_capacity_;
    std::map<std::string, ScaleUp> gang_ups;
    while (!left.empty() && GrowOnce(left, gang_ups)) {
    }
    if (left.empty()) {
      snap_.Commit();
      for (auto& [m, node] : on_existing) {
        if (!m->meta.name.empty()) {
          plan.fits_existing.push_back(m->Key());
          fits_node_[m->Key()] = node;
        }
      }
      for (auto& [pool, up] : gang_ups) {
        ScaleUp& dst = ups[pool];
        dst.pool = pool;
        dst.add += up.add;
        if (dst.reason.empty()) dst.reason = up.reason;
        dst.pods.insert(dst.pods.end(), up.pods.begin(), up.pods.end());
      }
      continue;
    }
    snap_.Revert();
    no_fit_groups_.clear();  // the revert freed the room the gang's members had taken
    for (size_t i = 0; i < pools_.size(); ++i) pools_[i].added = added_before[i];
    cluster_nodes_ = nodes_before;
    cluster_capacity_ = capacity_before;
    RecordStaticReasons(left);
    std::map<std::string, std::string> why;  // pool -> reason, from a member that was left
    for (const Pod* m : left)
      for (const auto& [pool, r] : reasons_[m->Key()])
        if (!r.empty() && !why.contains(pool)) why[pool] = r;
    for (const Pod* m : members) {
      pool_for_.erase(m->Key());
      if (m->meta.name.empty()) continue;
      for (const PoolState& ps : pools_) {
        std::string r = why.contains(ps.pool->name) ? why[ps.pool->name] : "room for only part of the gang";
        reasons_[m->Key()][ps.pool->name] =
            fmt::format("gang {} ({} members, all or nothing): {} member(s) cannot be placed: {}",
                        g, size, left.size(), r);
      }
      plan.unschedulable.push_back({m->Key(), reasons_[m->Key()]});
    }
  }

  // 3. Singles that need new nodes: one pool per round, chosen by the expanders, until no pool
  // can take any of the pods left.
  SortForPacking(need);
  for (const Pod* p : need) {
    // Explain shows every pool's verdict, also for a pod that does get a scale-up.
    if (p->Key() == explain_pod_) RecordStaticReasons({p});
  }
  while (!need.empty() && GrowOnce(need, ups)) {
  }
  RecordStaticReasons(need);
  for (const Pod* p : need) {
    auto& r = reasons_[p->Key()];
    for (const PoolState& ps : pools_) {
      std::string& slot = r[ps.pool->name];
      if (slot.empty()) slot = fmt::format("pool {} cannot take it in this pass", ps.pool->name);
    }
    plan.unschedulable.push_back({p->Key(), r});
  }

  // 4. Warm placeholders, after every real pod.
  if (!in_.placeholders.empty()) PlanWarm(plan, ups);

  for (auto& [pool, up] : ups) {
    std::sort(up.pods.begin(), up.pods.end());
    if (up.add > 0 || !up.pods.empty()) plan.scale_ups.push_back(std::move(up));
  }
  std::erase_if(plan.scale_ups, [](const ScaleUp& u) { return u.add == 0; });
  std::sort(plan.unschedulable.begin(), plan.unschedulable.end(),
            [](const Unschedulable& a, const Unschedulable& b) { return a.pod < b.pod; });
  std::sort(plan.fits_existing.begin(), plan.fits_existing.end());
  return plan;
}

}  // namespace

ScaleUpPlan ScaleUpPlanner::Plan(const PlannerInput& input, const ScaleUpOptions& options) const {
  TIDEPOOL_CHECK(input.config != nullptr);
  Pass pass(input, "", options);
  return pass.Run();
}

PodExplanation ScaleUpPlanner::Explain(const PlannerInput& input, std::string_view pod_key) const {
  PodExplanation ex;
  ex.pod = std::string(pod_key);
  const Pod* pod = nullptr;
  for (const Pod* p : input.pods)
    if (p->Key() == pod_key) pod = p;
  if (pod == nullptr) return ex;
  ex.found = true;
  const auto& cfg = *input.config;
  if (!IsPendingForScaleUp(*pod, cfg.scale_up.expendable_priority_cutoff)) {
    if (!pod->node_name.empty()) {
      ex.not_pending_reason = fmt::format("bound to node {}", pod->node_name);
    } else if (pod->IsTerminal()) {
      ex.not_pending_reason = "finished (phase Succeeded or Failed)";
    } else if (pod->meta.deletion_timestamp) {
      ex.not_pending_reason = "being deleted";
    } else if (pod->IsDaemonSetPod() || pod->IsMirrorPod()) {
      ex.not_pending_reason = "a DaemonSet or mirror pod (its node brings it)";
    } else {
      ex.not_pending_reason = fmt::format(
          "priority {} is below scaleUp.expendablePriorityCutoff {}: expendable pods never "
          "trigger a scale-up",
          pod->PriorityOrZero(), cfg.scale_up.expendable_priority_cutoff);
    }
    return ex;
  }
  ex.pending = true;
  Pass pass(input, ex.pod);
  pass.Run();
  ex.fits_node = pass.FitsNodeOf(ex.pod);
  ex.scale_up_pool = pass.PoolFor(ex.pod);
  const auto* reasons = pass.ReasonsFor(ex.pod);
  for (const Pool& p : cfg.pools) {
    std::string r = reasons ? (reasons->contains(p.name) ? reasons->at(p.name) : "") : "";
    ex.pools[p.name] = r.empty() ? "fits the template" : ExplainReason(*pod, p, r);
  }
  return ex;
}

}  // namespace tidepool::planner
