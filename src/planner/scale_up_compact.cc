// After the rounds, a new node whose pods all fit the pass's other new nodes is not needed. The
// greedy rounds open such nodes: a node that refused a pod because growing into a dearer shape
// did not pay then (TakeOn) may have grown into that shape anyway for later pods, and a spread
// pod the global minimum kept off a node may fit there once the other domains filled. Nodes are
// tried last opened first; each of a node's pods, largest first, goes to the first other new node
// kube-scheduler's filters let it onto, and the node is dropped only when all of them find one.
#include <algorithm>

#include "base/check.h"
#include "planner/scale_up_pass.h"

namespace tidepool::planner::scale_up_detail {
namespace {

// Whether nodes `a` and `b` are in the same domain of every key in `keys`.
bool SameDomains(const model::Node& a, const model::Node& b,
                 const std::vector<std::string_view>& keys) {
  for (std::string_view key : keys) {
    const std::string* x = a.meta.Label(key);
    const std::string* y = b.meta.Label(key);
    if ((x == nullptr) != (y == nullptr) || (x != nullptr && *x != *y)) return false;
  }
  return true;
}

// Whether node `to` may take a pod pinned by `pin` from node `from`.
bool PinHolds(const Pin& pin, const model::Node& from, const sched::NodeInfo& to) {
  if (!SameDomains(from, *to.node, pin.keys)) return false;
  for (const model::LabelSelector* s : pin.alone) {
    for (const Pod* p : to.pods)
      if (s->Matches(p->meta.labels)) return false;
  }
  return true;
}

}  // namespace

// The selectors of the pending pods' required affinity terms and DoNotSchedule spread
// constraints, with their topology keys. A pod one of them selects keeps its domain of that key:
// moving it elsewhere could strand the pods that follow it into its domain, or lower its domain's
// count below what the pods spread elsewhere were placed against (their skew is checked when each
// is placed, not again). Within the same domain every count stays as it was. Every node is its
// own hostname domain: a pod a hostname affinity term selects stays on its node, and one a
// hostname spread selects goes only to a node where that spread counts none, so no node's count
// rises above one and its node's count leaves with the node. Namespaces are not compared, which
// only pins more pods.
std::vector<Anchor> Pass::AnchorSelectors(const std::vector<const Pod*>& pending) {
  std::vector<Anchor> out;
  std::unordered_set<uint32_t> groups;  // a group's pods have the same terms
  for (const Pod* p : pending) {
    if (!p->has_required_affinity && p->topology_spread_constraints().empty()) continue;
    if (!groups.insert(GroupOf(p)).second) continue;
    for (const model::PodAffinityTerm& t : p->affinity().pod_affinity_required)
      if (t.has_label_selector) out.push_back({&t.label_selector, t.topology_key, false});
    for (const model::TopologySpreadConstraint& c : p->topology_spread_constraints()) {
      if (c.has_label_selector && c.when_unsatisfiable == model::WhenUnsatisfiable::kDoNotSchedule)
        out.push_back({&c.label_selector, c.topology_key, true});
    }
  }
  return out;
}

Compaction Pass::StartCompaction(const std::vector<const Pod*>& pending, const Gangs& gangs,
                                 const std::map<std::string, ScaleUp>& ups) {
  Compaction c;
  c.listed.resize(pools_.size(), 0);
  for (size_t i = 0; i < pools_.size(); ++i) {
    auto it = ups.find(pools_[i].pool->name);
    if (it != ups.end()) c.listed[i] = it->second.pods.size();
  }
  c.daemon_set_pods = DaemonSetPods();
  c.anchors = AnchorSelectors(pending);
  c.closed.resize(pass_nodes_.size(), false);
  for (const auto& [index, shape] : pass_nodes_) c.rooms.Append(SnapshotRoom(snap_, index));
  if (!gangs.pending.empty()) {
    // A gang's nodes are its own: what it books is not shared, nor given back with others' pods.
    // Members not created yet are copies without a name.
    std::unordered_set<const Pod*> members;
    for (const auto& [gang, pods] : gangs.pending) members.insert(pods.begin(), pods.end());
    for (size_t k = 0; k < pass_nodes_.size(); ++k) {
      for (const Pod* p : snap_.Get(pass_nodes_[k].first).pods) {
        if (c.daemon_set_pods.contains(p)) continue;
        if (members.contains(p) || p->meta.name.empty()) c.closed[k] = true;
      }
    }
  }
  c.SumFree();
  return c;
}

std::optional<std::vector<const Pod*>> Pass::MovablePods(size_t j, const Compaction& c) {
  std::vector<const Pod*> pods;
  for (const Pod* p : snap_.Get(pass_nodes_[j].first).pods) {
    if (c.daemon_set_pods.contains(p)) continue;  // they go with the node
    // A warm placeholder is planned after this; claims are allocated on the node's own devices.
    if (!p->resource_claims().empty() || p->meta.Annotation(kWarmPoolAnnotation) != nullptr)
      return {};
    pods.push_back(p);
  }
  SortForPacking(pods);
  return pods;
}

std::optional<Pin> Pass::PinOf(const Pod& pod, Compaction& c) {
  auto pin = [&]() -> std::optional<Pin> {
    Pin out;
    for (const Anchor& a : c.anchors) {
      if (!a.selector->Matches(pod.meta.labels)) continue;
      if (a.key != model::kLabelHostname) {
        if (std::find(out.keys.begin(), out.keys.end(), a.key) == out.keys.end())
          out.keys.push_back(a.key);
      } else if (a.spread) {
        out.alone.push_back(a.selector);
      } else {
        return std::nullopt;
      }
    }
    return out;
  };
  // A group's pods have the same labels only when they have inter-pod rules (EquivalenceKey).
  if (!pod.has_required_affinity && !pod.has_required_anti_affinity &&
      pod.topology_spread_constraints().empty()) {
    return pin();
  }
  auto [it, first] = c.pinned_groups.try_emplace(GroupOf(&pod));
  if (first) it->second = pin();
  return it->second;
}

bool Pass::RoomForAll(size_t j, const std::vector<const Pod*>& pods, Compaction& c) const {
  RoomIndex& rooms = c.rooms;
  std::vector<std::pair<size_t, RoomIndex::Room>> changed;
  bool all = true;
  for (const Pod* pod : pods) {
    const Resources& need = pod->requests;
    size_t k = rooms.Next(0, need);
    while (k < rooms.size() && (k == j || c.closed[k])) k = rooms.Next(k + 1, need);
    if (k == rooms.size()) {
      all = false;
      break;
    }
    RoomIndex::Room r = rooms.At(k);
    changed.emplace_back(k, r);
    rooms.Set(k, RoomIndex::Room{r.cpu - need.cpu_milli(), r.memory - need.memory()});
  }
  for (auto it = changed.rbegin(); it != changed.rend(); ++it) rooms.Set(it->first, it->second);
  return all;
}

bool Pass::MoveOff(size_t j, const std::vector<const Pod*>& pods, const std::vector<Pin>& pins,
                   Compaction& c) {
  const Node& from = *snap_.Get(pass_nodes_[j].first).node;
  snap_.Fork();
  TIDEPOOL_CHECK(snap_.RemoveNodeAt(pass_nodes_[j].first).has_value());
  c.moves.clear();
  for (size_t i = 0; i < pods.size(); ++i) {
    const Pod* pod = pods[i];
    FitChecker checker(*pod, snap_);
    OfferSpreadDomains(*pod, checker);
    auto takes = [&](size_t k) {
      NodeIndex n = pass_nodes_[k].first;
      return k != j && !c.closed[k] && PinHolds(pins[i], from, snap_.Get(n)) && checker.Fits(n);
    };
    size_t k = c.rooms.Next(0, pod->requests);
    while (k < c.rooms.size() && !takes(k)) k = c.rooms.Next(k + 1, pod->requests);
    if (k == c.rooms.size()) break;
    (void)snap_.AddPod(pod, pass_nodes_[k].first);
    c.SetRoom(k, SnapshotRoom(snap_, pass_nodes_[k].first));
    c.moves.emplace_back(pod, k);
  }
  if (c.moves.size() == pods.size()) {
    snap_.Commit();
    c.Close(j);
    return true;
  }
  snap_.Revert();
  for (const auto& [pod, k] : c.moves) c.SetRoom(k, SnapshotRoom(snap_, pass_nodes_[k].first));
  // A group whose pod found no other node is not tried again: the nodes only fill up from here
  // on. A filter that may miss a drop, never makes one.
  c.stuck.insert(GroupOf(pods[c.moves.size()]));
  return false;
}

void Pass::AccountDropped(size_t j, Compaction& c, std::map<std::string, ScaleUp>& ups) {
  const size_t src = pass_nodes_[j].second;
  PoolState& ps = pools_[src];
  --ps.added;
  --cluster_nodes_;
  cluster_capacity_.Add(ps.pool->template_node.capacity, -1);
  --ups[ps.pool->name].add;
  for (const auto& [pod, k] : c.moves) {
    const size_t to = pass_nodes_[k].second;
    if (to == src) continue;
    --c.listed[src];
    ++c.listed[to];
    // The pod's first pool is where ScaleUp::pods lists it until Relist.
    auto [it, first] = c.relisted.try_emplace(pod, src, to);
    if (!first) it->second.second = to;
  }
}

void Pass::Relist(const Compaction& c, std::map<std::string, ScaleUp>& ups) {
  std::map<size_t, std::unordered_set<std::string>> gone;  // pool -> keys listed elsewhere now
  for (const auto& [pod, pools] : c.relisted) {
    const auto [from, to] = pools;
    if (from == to) continue;
    std::string key = pod->Key();
    const std::string& name = pools_[to].pool->name;
    if (key == explain_pod_) pool_for_[explain_pod_] = name;
    ups[name].pods.push_back(key);
    gone[from].insert(std::move(key));
  }
  for (const auto& [from, keys] : gone)
    std::erase_if(ups[pools_[from].pool->name].pods,
                  [&](const std::string& k) { return keys.contains(k); });
}

bool Pass::TryDrop(size_t j, Compaction& c, std::map<std::string, ScaleUp>& ups) {
  if (c.closed[j]) return false;
  // What the node's own pods take (not its DaemonSet pods) against all the room the others have:
  // most nodes of a pass are full and stop here.
  const PoolState& ps = pools_[pass_nodes_[j].second];
  const Resources& requested = snap_.Get(pass_nodes_[j].first).requested;
  if (requested.cpu_milli() - ps.ds_requests.cpu_milli() >
          c.free_cpu - std::max<int64_t>(0, c.rooms.At(j).cpu) ||
      requested.memory() - ps.ds_requests.memory() >
          c.free_memory - std::max<int64_t>(0, c.rooms.At(j).memory)) {
    return false;
  }
  std::optional<std::vector<const Pod*>> pods = MovablePods(j, c);
  if (!pods) return false;
  // A pool's last node keeps pods listed under it that sit elsewhere (AccountRetroPod).
  const size_t pool = pass_nodes_[j].second;
  if (ups[pools_[pool].pool->name].add == 1 && c.listed[pool] > pods->size()) return false;
  auto stuck = [&](const Pod* p) { return c.stuck.contains(GroupOf(p)); };
  if (std::any_of(pods->begin(), pods->end(), stuck) || !RoomForAll(j, *pods, c)) return false;
  std::vector<Pin> pins;
  for (const Pod* p : *pods) {
    std::optional<Pin> pin = PinOf(*p, c);
    if (!pin) return false;
    pins.push_back(std::move(*pin));
  }
  if (!MoveOff(j, *pods, pins, c)) return false;
  AccountDropped(j, c, ups);
  return true;
}

void Pass::CompactNewNodes(const std::vector<const Pod*>& pending, const Gangs& gangs,
                           std::map<std::string, ScaleUp>& ups) {
  if (!options_.compact_new_nodes || pass_nodes_.size() < 2) return;
  Compaction c = StartCompaction(pending, gangs, ups);
  std::vector<bool> dropped(pass_nodes_.size(), false);
  for (size_t j = pass_nodes_.size(); j-- > 0;) dropped[j] = TryDrop(j, c, ups);
  Relist(c, ups);
  size_t kept = 0;
  for (size_t j = 0; j < pass_nodes_.size(); ++j)
    if (!dropped[j]) pass_nodes_[kept++] = pass_nodes_[j];
  pass_nodes_.resize(kept);
}

}  // namespace tidepool::planner::scale_up_detail
