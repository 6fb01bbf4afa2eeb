// Families of pools that differ only in shape and price, and the flexible new nodes packed onto
// them: a node keeps every shape that still holds its pods and is given one when it is closed.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>

#include "base/check.h"
#include "planner/expander.h"
#include "planner/made_up_node.h"
#include "planner/scale_up_pass.h"

namespace tidepool::planner::scale_up_detail {
namespace {

// Labels that name a shape or a pool rather than what a node offers. Pools that differ only in
// these form one family, unless some pod refers to the key.
constexpr std::string_view kShapeLabels[] = {model::kLabelInstanceType,
                                             "beta.kubernetes.io/instance-type", model::kLabelPool,
                                             kAgentPoolLabel, kAksAgentPoolLabel};

// `big` costs no more than `small` per unit of every resource `small` offers: growing a node
// into it is as cheap as opening more nodes of `small`, however full they would be.
bool NoDearerPerUnit(const PoolState& big, const PoolState& small) {
  const Resources& b = big.pool->template_node.allocatable;
  const Resources& s = small.pool->template_node.allocatable;
  bool ok = true;
  s.ForEach([&](model::ResourceId id, int64_t v) {
    if (id == model::kPods) return;
    ok = ok && big.pool->price_per_hour * static_cast<double>(v) <=
                   small.pool->price_per_hour * static_cast<double>(b.Get(id)) * (1 + 1e-9);
  });
  return ok;
}

// The label keys a pod's placement can depend on, from the pending pods' node constraints and
// inter-pod rules and the placed pods' inter-pod rules (read on the nodes the snapshot counts
// such pods on: none in most clusters).
std::set<std::string, std::less<>> ReferencedKeys(const std::vector<const Pod*>& pending,
                                                  const sched::ClusterSnapshot& snapshot) {
  std::set<std::string, std::less<>> keys;
  auto inter_pod = [&](const Pod& p) {
    for (const auto* terms :
         {&p.affinity().pod_affinity_required, &p.affinity().pod_anti_affinity_required})
      for (const auto& t : *terms) keys.insert(t.topology_key);
    for (const auto& c : p.topology_spread_constraints()) keys.insert(c.topology_key);
  };
  for (const Pod* p : pending) {
    for (const auto& [k, v] : p->node_selector) keys.insert(k);
    if (p->affinity().node_required)
      for (const auto& term : p->affinity().node_required->terms)
        for (const auto& r : term.match_expressions) keys.insert(r.key);
    inter_pod(*p);
  }
  if (snapshot.PodsWithRequiredAffinity() == 0 && snapshot.PodsWithRequiredAntiAffinity() == 0)
    return keys;
  for (sched::NodeIndex i = 0; i < snapshot.NodeSlots(); ++i) {
    const sched::NodeInfo& info = snapshot.Get(i);
    if (info.removed ||
        (info.pods_with_required_affinity == 0 && info.pods_with_required_anti_affinity == 0))
      continue;
    for (const Pod* p : info.pods)
      if (p->has_required_affinity || p->has_required_anti_affinity) inter_pod(*p);
  }
  return keys;
}

// Labels that name a node's zone: pools that differ only in these are zone twins.
constexpr std::string_view kZoneLabels[] = {model::kLabelZone,
                                            "failure-domain.beta.kubernetes.io/zone"};

bool OneOf(std::string_view key, std::span<const std::string_view> keys) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// What makes two pools one family: everything but their shape, price and unreferenced names;
// `zone` false leaves the zone out too (zone twins).
std::string FamilyKey(const PoolState& ps, const std::set<std::string, std::less<>>& referenced,
                      bool zone = true) {
  const Node& t = ps.pool->template_node;
  // Written in place: a pass keys every pool.
  std::string key;
  auto out = std::back_inserter(key);
  fmt::format_to(out, "{}|{}|{}|", ps.pool->priority, static_cast<int>(ps.pool->capacity_type),
                 t.unschedulable);
  for (const auto& [k, v] : t.labels()) {
    bool shape = OneOf(k, kShapeLabels);
    if (k == model::kLabelHostname || (shape && !referenced.contains(k))) continue;
    if (!zone && OneOf(k, kZoneLabels)) continue;
    fmt::format_to(out, "{}={};", k, v);
  }
  key += '|';
  for (const auto& taint : t.taints)
    fmt::format_to(out, "{}={}:{};", taint.key, taint.value, static_cast<int>(taint.effect));
  key += '|';
  for (const Pod* d : ps.ds_pods) fmt::format_to(out, "{};", static_cast<const void*>(d));
  key += '|';
  for (const model::TemplateDevices& d : ps.pool->devices) {
    fmt::format_to(out, "{}*{}", d.driver, d.count);
    for (const auto& [name, a] : d.attributes)
      fmt::format_to(out, ",{}={}:{}:{}:{}", name, static_cast<int>(a.kind), a.int_value,
                     a.bool_value, a.text);
    for (const auto& [name, q] : d.capacity) fmt::format_to(out, ",{}={}", name, q.ToString());
    key += ';';
  }
  return key;
}

}  // namespace

void Pass::BuildFamilies(const std::vector<const Pod*>& pending) {
  std::set<std::string, std::less<>> referenced;
  if (options_.flexible_nodes) referenced = ReferencedKeys(pending, snap_);
  std::map<std::string, size_t> by_key;
  family_of_.assign(pools_.size(), 0);
  for (size_t i = 0; i < pools_.size(); ++i) {
    std::string key =
        options_.flexible_nodes ? FamilyKey(pools_[i], referenced) : pools_[i].pool->name;
    auto [it, inserted] = by_key.emplace(std::move(key), families_.size());
    if (inserted) {
      families_.emplace_back();
      families_.back().name = pools_[i].pool->name;
    }
    families_[it->second].members.push_back(i);
    family_of_[i] = it->second;
  }
  if (options_.flexible_nodes && cfg_.scale_up.balance_zones) FindZoneTwins(referenced);
}

void Pass::FindZoneTwins(const std::set<std::string, std::less<>>& referenced) {
  std::map<std::string, std::vector<size_t>> by_key;
  for (size_t f = 0; f < families_.size(); ++f)
    by_key[FamilyKey(pools_[families_[f].members.front()], referenced, false)].push_back(f);
  for (auto& [key, group] : by_key) {
    if (group.size() < 2) continue;
    for (size_t f : group) families_[f].twins = twin_groups_.size();
    twin_groups_.push_back(std::move(group));
  }
}

void Pass::JoinTwins(Candidate& c, std::vector<uint8_t>& joined) {
  const Family& family = families_[c.family];
  if (family.twins == SIZE_MAX) return;
  auto same = [&](size_t a, size_t b) {
    const Pool& p = *pools_[a].pool;
    const Pool& q = *pools_[b].pool;
    return p.price_per_hour == q.price_per_hour &&
           p.template_node.allocatable == q.template_node.allocatable &&
           p.template_node.capacity == q.template_node.capacity;
  };
  for (size_t g : twin_groups_[family.twins]) {
    if (g == c.family || joined[g]) continue;
    std::vector<size_t> shapes = EligibleShapes(families_[g]);
    if (shapes.size() != c.shapes.size() ||
        !std::equal(shapes.begin(), shapes.end(), c.shapes.begin(), same)) {
      continue;
    }
    joined[g] = 1;
    c.twins.push_back(Twin{&families_[g], std::move(shapes)});
  }
}

void Pass::SortForBalance(std::vector<const Pod*>& pods, const Node& largest) {
  // Per pod: its largest share of `largest` (pod slots aside), the resource of that share, and its
  // share of each resource.
  struct Share {
    double dominant = 0;
    model::ResourceId resource = model::kCpu;
    std::vector<std::pair<model::ResourceId, double>> of;
  };
  std::unordered_map<const Pod*, Share> shares;
  for (const Pod* p : pods) {
    Share& s = shares[p];
    p->requests.ForEach([&](model::ResourceId id, int64_t v) {
      int64_t cap = largest.allocatable.Get(id);
      if (id == model::kPods || cap <= 0) return;
      double share = static_cast<double>(v) / static_cast<double>(cap);
      s.of.emplace_back(id, share);
      if (share > s.dominant) std::tie(s.dominant, s.resource) = std::pair(share, id);
    });
  }
  // The largest share first, the group ascending: a group's members are adjacent.
  SortPods(
      pods, [&](const Pod* p) { return std::pair(-shares[p].dominant, GroupOf(p)); },
      std::less<>());
  // Runs of one group, queued by their dominant resource in that order.
  std::map<model::ResourceId, std::deque<std::pair<size_t, size_t>>> queues;
  for (size_t i = 0, j = 0; i < pods.size(); i = j) {
    while (j < pods.size() && GroupOf(pods[j]) == GroupOf(pods[i])) ++j;
    queues[shares[pods[i]].resource].emplace_back(i, j);
  }
  std::map<model::ResourceId, double> taken;  // shares of the pods ordered so far
  std::vector<const Pod*> order;
  order.reserve(pods.size());
  while (order.size() < pods.size()) {
    auto next = queues.end();
    for (auto it = queues.begin(); it != queues.end(); ++it) {
      if (!it->second.empty() && (next == queues.end() || taken[it->first] < taken[next->first]))
        next = it;
    }
    auto [begin, end] = next->second.front();
    next->second.pop_front();
    for (size_t k = begin; k < end; ++k) {
      order.push_back(pods[k]);
      for (const auto& [id, share] : shares[pods[k]].of) taken[id] += share;
    }
  }
  pods = std::move(order);
}

std::vector<size_t> Pass::EligibleShapes(Family& family) {
  std::vector<size_t> shapes;
  for (size_t i : family.members) {
    const PoolState& ps = pools_[i];
    if (!ps.backoff_until && !LimitReason(ps, 0, Resources())) shapes.push_back(i);
  }
  auto size = [&](size_t i) {
    const Resources& a = pools_[i].pool->template_node.allocatable;
    return std::tuple(a.gpus(), a.cpu_milli(), a.memory(), a.pods());
  };
  std::stable_sort(shapes.begin(), shapes.end(),
                   [&](size_t a, size_t b) { return size(a) > size(b); });
  // The same shapes as last time (most rounds): `largest` is what it was.
  if (!shapes.empty() && shapes != family.largest_shapes) {
    family.largest = pools_[shapes.front()].pool->template_node;
    for (size_t i : shapes) {
      family.largest.allocatable.MaxWith(pools_[i].pool->template_node.allocatable);
      family.largest.capacity.MaxWith(pools_[i].pool->template_node.capacity);
    }
    // Estimates check pods against it before a new node exists.
    GiveTemplateDevices(&family.largest, *pools_[shapes.front()].pool);
    family.largest_shapes = shapes;
    ++family.largest_version;
  }
  return shapes;
}

bool Pass::FitsAnyShape(const Pod* pod, const std::vector<size_t>& shapes) {
  const uint32_t g = GroupOf(pod);
  return std::any_of(shapes.begin(), shapes.end(),
                     [&](size_t i) { return FitsTemplate(g, *pod, i); });
}

NodeIndex Pass::AddFlexNode(Family& family, int k) {
  while (static_cast<int>(family.new_nodes.size()) <= k) {
    family.new_nodes.emplace_back();
    family.new_nodes.back().node.meta.name =
        fmt::format("{}{}-{}", kNewNodePrefix, family.name, family.new_nodes.size() - 1);
  }
  Family::MadeUp& made = family.new_nodes[k];
  Node& node = made.node;
  if (made.from != family.largest_version) {
    std::string name = std::move(node.meta.name);
    node = family.largest;
    node.meta.name = std::move(name);
    made.from = family.largest_version;
  }
  // Every shape of a family has the same devices (FamilyKey).
  GiveTemplateDevices(&node, *pools_[family.members.front()].pool);
  NodeIndex idx = AddNumberedNode(snap_, node, numbered_may_clash_);
  // Every shape of a family runs the same DaemonSet pods.
  for (const Pod* d : pools_[family.members.front()].ds_pods) (void)snap_.AddPod(d, idx);
  return idx;
}

Solo Pass::SoloShape(const Pod& pod, const std::vector<size_t>& shapes) const {
  Solo solo;
  if (shapes.empty()) return solo;
  Resources need = pools_[shapes.front()].DaemonSetUse() + pod.requests;
  solo.price = std::numeric_limits<double>::infinity();
  for (size_t i : shapes) {
    const model::Pool& p = *pools_[i].pool;
    if (Within(need, p.template_node.allocatable) && p.price_per_hour < solo.price) {
      solo.price = p.price_per_hour;
      solo.shape = i;
    }
  }
  if (solo.shape == SIZE_MAX) solo.price = 0;
  return solo;
}

bool Pass::TakeOn(FlexNode& node, const Pod& pod, const Solo& solo, Estimate& e) {
  // One shape, already claimed: the fit check against its allocatable said it all.
  if (node.shapes.size() == 1 && node.claim == node.shapes.front()) return true;
  Resources after = node.index == sched::kNoNode ? pools_[node.shapes.front()].DaemonSetUse()
                                                 : snap_.Get(node.index).requested;
  after += pod.requests;
  // The shapes that hold it (each checked once: a family can have hundreds), and the cheapest of
  // them that still has room once the estimate's other nodes have claimed theirs.
  holders_.clear();
  double cheapest = std::numeric_limits<double>::infinity();
  size_t shape = SIZE_MAX;
  for (size_t i : node.shapes) {
    if (!Within(after, pools_[i].pool->template_node.allocatable)) continue;
    holders_.push_back(i);
    const double price = pools_[i].pool->price_per_hour;
    if (price < cheapest && (i == node.claim || !ClaimsFull(e, i))) {
      cheapest = price;
      shape = i;
    }
  }
  if (shape == SIZE_MAX) return false;
  if (node.index != sched::kNoNode && cheapest > node.price + solo.price + 1e-9 &&
      (solo.shape == SIZE_MAX || !NoDearerPerUnit(pools_[shape], pools_[solo.shape]))) {
    return false;
  }
  if (holders_.size() < node.shapes.size()) node.shapes.assign(holders_.begin(), holders_.end());
  if (node.claim != SIZE_MAX) {
    // A shape at its max that this node leaves can be taken by the others again.
    if (shape != node.claim && ClaimsFull(e, node.claim)) ++e.released;
    --e.claimed[node.claim];
  }
  ++e.claimed[shape];
  node.claim = shape;
  node.price = cheapest;
  node.room = pools_[shape].pool->template_node.allocatable - after;
  return true;
}

std::optional<PoolReason> Pass::FamilyLimitReason(const Family& family,
                                                  const std::vector<size_t>& shapes, int extra,
                                                  int cluster_extra,
                                                  const Resources& extra_capacity) const {
  if (family.members.size() == 1)
    return LimitReason(pools_[family.members.front()], extra, extra_capacity, cluster_extra);
  // The smallest shape with room decides the cluster limits; Close() enforces them exactly.
  int room = 0;
  for (size_t i : shapes) room += pools_[i].pool->max - pools_[i].current - pools_[i].added;
  if (room <= extra) {
    return PoolReason{ReasonKind::kPoolMax,
                      fmt::format("pools of family {} at their max", family.name)};
  }
  for (auto it = shapes.rbegin(); it != shapes.rend(); ++it) {
    const PoolState& ps = pools_[*it];
    if (ps.current + ps.added < ps.pool->max)
      return LimitReason(ps, 0, extra_capacity, cluster_extra);
  }
  return std::nullopt;
}

size_t Pass::ChooseShape(const FlexNode& node, const Given& given, ShapeChoices& choices) {
  auto room = [&](size_t i) {
    const PoolState& ps = pools_[i];
    if (given.pool_max_only) return !AtPoolMax(*ps.pool, ps.current + ps.added + given.per_pool[i]);
    return !LimitReason(ps, given.per_pool[i], given.capacity, given.all);
  };
  if (node.shapes.size() == 1) return room(node.shapes.front()) ? node.shapes.front() : SIZE_MAX;
  const sched::NodeInfo& info = snap_.Get(node.index);
  const int pods = static_cast<int>(info.pods.size());
  std::vector<size_t>& pools = choices.pools;
  pools.clear();
  for (size_t i : node.shapes)
    if (room(i)) pools.push_back(i);
  if (pools.empty()) return SIZE_MAX;
  // The chain sees only the shapes with room, the pod count and the requests: the same three
  // get the same answer (the random expander's seed and round are the pass's).
  for (const ShapeChoices::Choice& c : choices.recent)
    if (c.pods == pods && c.requested == info.requested && c.pools == pools) return c.chosen;
  std::vector<ExpanderOption>& options = choices.options;
  options.clear();
  for (size_t i : pools) {
    const model::Pool& p = *pools_[i].pool;
    options.push_back({&p, 1, pods, info.requested, p.template_node.allocatable});
  }
  const size_t chosen = pools[ChooseIndex(
      cfg_.scale_up.expanders, options, cfg_.scale_up.random_seed, static_cast<uint64_t>(round_))];
  constexpr size_t kRecent = 8;
  if (choices.recent.size() == kRecent) choices.recent.erase(choices.recent.begin());
  choices.recent.push_back({pools, pods, info.requested, chosen});
  return chosen;
}

void Pass::Close(Estimate& e) {
  Given given;
  given.per_pool.assign(pools_.size(), 0);
  given.pool_max_only =
      !cfg_.limits.max_nodes && cfg_.limits.limited.empty() &&
      cluster_nodes_ - base_cluster_nodes_ + static_cast<int>(e.new_nodes.size()) <=
          cfg_.scale_up.max_nodes_per_scale_up;
  ShapeChoices choices;
  std::vector<bool> dropped(e.new_nodes.size(), false);
  for (size_t n = 0; n < e.new_nodes.size(); ++n) {
    FlexNode& node = e.new_nodes[n];
    node.pool = ChooseShape(node, given, choices);
    if (node.pool == SIZE_MAX) {
      dropped[n] = true;
      continue;
    }
    ++given.per_pool[node.pool];
    ++given.all;
    const Node& t = pools_[node.pool].pool->template_node;
    given.capacity += t.capacity;
    e.allocatable += t.allocatable;
    e.requested += snap_.Get(node.index).requested;
    e.cost_per_hour += pools_[node.pool].pool->price_per_hour;
    if (node.shapes.size() > 1) (void)snap_.SetAllocatable(node.index, t.allocatable);
  }
  if (std::find(dropped.begin(), dropped.end(), true) != dropped.end()) DropNodes(e, dropped);
}

void Pass::DropNodes(Estimate& e, const std::vector<bool>& dropped) {
  // A node no shape may take any more (their max or a cluster limit was reached by the nodes
  // before it) goes, and so do its pods.
  std::vector<const Pod*> pods;
  std::vector<uint32_t> pod_node;
  std::vector<FlexNode> kept;
  std::vector<uint32_t> renumber(e.new_nodes.size());
  for (size_t n = 0; n < e.new_nodes.size(); ++n) {
    renumber[n] = static_cast<uint32_t>(kept.size());
    if (!dropped[n]) kept.push_back(std::move(e.new_nodes[n]));
  }
  for (size_t k = 0; k < e.pods.size(); ++k) {
    if (dropped[e.pod_node[k]]) {
      // A dropped node was not moved from: its twin is still there.
      const std::string& family = e.twins[e.new_nodes[e.pod_node[k]].twin].family->name;
      NoteReason(*e.pods[k], family,
                 {ReasonKind::kPoolMax, fmt::format("pools of family {} at their max", family)});
      continue;
    }
    pods.push_back(e.pods[k]);
    pod_node.push_back(renumber[e.pod_node[k]]);
  }
  for (size_t n = e.new_nodes.size(); n-- > 0;)
    if (dropped[n]) (void)snap_.RemoveNodeAt(e.new_nodes[n].index);
  // Pods placed outside the estimate may have needed the dropped nodes: they wait for a later
  // round.
  for (const auto& [p, node] : e.outside) (void)snap_.RemovePod(p, node);
  e.outside.clear();
  e.pods = std::move(pods);
  e.pod_node = std::move(pod_node);
  e.new_nodes = std::move(kept);
}

}  // namespace tidepool::planner::scale_up_detail
