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

// The pod has a DoNotSchedule spread constraint.
bool HasSpread(const Pod& pod) {
  return std::any_of(pod.topology_spread_constraints().begin(),
                     pod.topology_spread_constraints().end(), [](const auto& c) {
                       return c.when_unsatisfiable == model::WhenUnsatisfiable::kDoNotSchedule;
                     });
}
// The pod has a DoNotSchedule spread constraint on a key other than the hostname.
bool HasDomainSpread(const Pod& pod) {
  return std::any_of(pod.topology_spread_constraints().begin(),
                     pod.topology_spread_constraints().end(), [](const auto& c) {
                       return c.when_unsatisfiable == model::WhenUnsatisfiable::kDoNotSchedule &&
                              c.topology_key != model::kLabelHostname;
                     });
}

}  // namespace

sched::FitResult Pass::TemplateFit(const Pod& pod, const PoolState& ps) const {
  sched::FitResult r = sched::CheckNodeStatic(pod, ps.pool->template_node);
  if (!r.fits()) return r;
  r = sched::CheckResources(pod, ps.pool->template_node.allocatable, ps.DaemonSetUse());
  if (!r.fits()) return r;
  return sched::CheckClaims(pod, ps.pool->template_node, snap_);
}

bool Pass::FitsTemplate(uint32_t group, const Pod& pod, size_t pool_index) {
  if (static_fit_.size() <= group) static_fit_.resize(group + 1);
  auto& row = static_fit_[group];
  if (row.empty()) row.assign(pools_.size(), -1);
  if (row[pool_index] < 0) {
    // TemplateFit(...).fits() without words, its first check shared by a constraint set.
    const PoolState& ps = pools_[pool_index];
    const bool fits =
        PassesTemplateConstraints(group, pod, pool_index) &&
        sched::HasResources(pod, ps.pool->template_node.allocatable, ps.DaemonSetUse()) &&
        (pod.resource_claims().empty() ||
         sched::CheckClaims(pod, ps.pool->template_node, snap_).fits());
    row[pool_index] = fits ? 1 : 0;
  }
  return row[pool_index] == 1;
}

bool Pass::PassesTemplateConstraints(uint32_t group, const Pod& pod, size_t pool_index) {
  const Node& node = pools_[pool_index].pool->template_node;
  // The NodeName filter reads the pod's own node name, which no constraint set says.
  if (!pod.node_name.empty()) return sched::PassesNodeStatic(pod, node);
  const uint32_t set = ConstraintSetOf(pod, group);
  if (constraint_fit_.size() <= set) constraint_fit_.resize(set + 1);
  auto& row = constraint_fit_[set];
  if (row.empty()) row.assign(pools_.size(), -1);
  if (row[pool_index] < 0) row[pool_index] = sched::PassesNodeStatic(pod, node) ? 1 : 0;
  return row[pool_index] == 1;
}

std::optional<PoolReason> Pass::LimitReason(const PoolState& ps, int extra,
                                            const Resources& extra_cap,
                                            std::optional<int> cluster_extra) const {
  const int all = cluster_extra.value_or(extra);
  if (auto limit = GrowthLimit(*ps.pool, ps.current + ps.added + extra, cfg_.limits,
                               cluster_nodes_ + all, cluster_capacity_, extra_cap)) {
    return limit;
  }
  // maxNodesPerScaleUp bounds the whole pass: nodes committed in earlier rounds (other pools,
  // gangs) count as well as those of the estimate in progress.
  if (cluster_nodes_ - base_cluster_nodes_ + all >= cfg_.scale_up.max_nodes_per_scale_up) {
    return PoolReason{ReasonKind::kScaleUpLimit,
                      fmt::format("maxNodesPerScaleUp {} reached for this pass",
                                  cfg_.scale_up.max_nodes_per_scale_up)};
  }
  return std::nullopt;
}

Estimate Pass::Pack(const Candidate& c) {
  Family& family = families_[c.family];
  const std::vector<size_t>& shapes = c.shapes;
  Estimate e;
  e.twins.push_back(Twin{&family, shapes});
  e.twins.insert(e.twins.end(), c.twins.begin(), c.twins.end());
  e.claimed.assign(pools_.size(), 0);
  e.first_slot = static_cast<NodeIndex>(snap_.NodeSlots());
  // Pods arrive grouped and sorted bigger-first. One checker per equivalence group, kept up to
  // date as nodes and pods are added, and one cursor (PackCursor): while a group is packed only
  // its own pods are placed, and its required affinity, if any, selects them all or none of them,
  // so nodes it saw closed stay closed but for the changes the cursor watches.
  PackCursor cursor;
  uint32_t group = UINT32_MAX;
  std::optional<FitChecker> checker;
  Solo solo;
  std::vector<const Pod*> order = c.pods;
  if (family.members.size() > 1 && !shapes.empty()) SortForBalance(order, family.largest);
  // Pods with required anti-affinity first: they open the nodes they cannot share (one per
  // node for a group against itself), and the other pods then fill the room around them instead
  // of leaving it on nodes opened earlier.
  std::stable_partition(order.begin(), order.end(),
                        [](const Pod* p) { return p->has_required_anti_affinity; });
  auto pack = [&](const Pod* pod) {
    uint32_t key = GroupOf(pod);
    if (key != group || !checker) {
      group = key;
      checker.emplace(*pod, snap_);
      OfferSpreadDomains(*pod, *checker);
      solo = SoloShape(*pod, shapes);
      cursor = PackCursor{.loosened = checker->SpreadLoosened(), .released = e.released};
    }
    size_t outside = e.outside.size();
    if (!PackOne(*pod, *checker, cursor, e, solo)) return false;
    if (e.outside.size() == outside) e.pods.push_back(pod);
    return true;
  };
  std::vector<const Pod*> waiting;  // pods with required affinity that no node took
  for (const Pod* pod : order)
    if (!pack(pod) && pod->has_required_affinity) waiting.push_back(pod);
  // A pod whose affinity selects only pods packed after it had nothing to join when its turn
  // came; kube-scheduler tries it again once they are bound, so the estimate does too.
  for (bool placed = true; placed && !waiting.empty();) placed = std::erase_if(waiting, pack) > 0;
  Close(e);
  return e;
}

bool Pass::PackOne(const Pod& pod, FitChecker& checker, PackCursor& cursor, Estimate& e,
                   const Solo& solo) {
  if (PlaceOnEstimate(pod, checker, cursor, e, solo)) return true;
  if (HasSpread(pod) && PlaceOutsideEstimate(pod, checker, cursor, e)) return true;
  if (e.twins.size() == 1) return OpenNode(pod, checker, e, 0, solo);
  // Zone twins: the one with the fewest nodes in this pass first (the lowest index on a tie).
  std::vector<uint32_t> order(e.twins.size());
  for (uint32_t t = 0; t < order.size(); ++t) order[t] = t;
  auto nodes = [&](uint32_t t) { return e.twins[t].family->used + e.twins[t].opened; };
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return nodes(a) < nodes(b); });
  return std::any_of(order.begin(), order.end(),
                     [&](uint32_t t) { return OpenNode(pod, checker, e, t, solo); });
}

bool Pass::OpenNode(const Pod& pod, FitChecker& checker, Estimate& e, uint32_t t,
                    const Solo& solo) {
  Twin& twin = e.twins[t];
  Family& family = *twin.family;
  auto note = [&](const PoolReason& why) { NoteFamilyReason(pod, family, why); };
  if (auto limit = FamilyLimitReason(family, twin.shapes, twin.opened,
                                     static_cast<int>(e.new_nodes.size()), Resources())) {
    note(*limit);
    return false;
  }
  // A fresh node must take the pod; inter-pod rules may still refuse it.
  const PoolState& first = pools_[family.members.front()];
  sched::FitResult r = checker.CheckTemplate(family.largest, first.ds_requests,
                                             static_cast<int>(first.ds_pods.size()));
  if (!r.fits()) {
    note(FromFit(r));
    return false;
  }
  FlexNode node{sched::kNoNode, t, twin.shapes};
  if (twin.shapes.empty() || !TakeOn(node, pod, solo, e)) {
    // No single shape holds the pod beside the DaemonSets (the largest node mixes shapes).
    for (size_t i : family.members)
      NoteReason(pod, pools_[i].pool->name, FromFit(TemplateFit(pod, pools_[i])));
    return false;
  }
  node.index = AddFlexNode(family, family.used + twin.opened);
  ++twin.opened;
  checker.OnNodeAdded(node.index);
  e.rooms.Set(e.new_nodes.size(), node.room);
  e.new_nodes.push_back(std::move(node));
  Place(pod, checker, e, e.new_nodes.size() - 1);
  return true;
}

void Pass::SyncCursor(PackCursor& cursor, const FitChecker& checker, const Estimate& e) const {
  // A raised spread minimum or a claim given back at a pool's max may open nodes the group
  // found closed: start again from the first (always, without cursors).
  if (!options_.placement_cursors || cursor.loosened != checker.SpreadLoosened() ||
      cursor.released != e.released) {
    cursor = PackCursor{.loosened = checker.SpreadLoosened(), .released = e.released};
  }
}

bool Pass::PlaceOnEstimate(const Pod& pod, FitChecker& checker, PackCursor& cursor, Estimate& e,
                           const Solo& solo) {
  SyncCursor(cursor, checker, e);
  // Several shapes: a node whose current shape has room for the pod costs nothing more, so it
  // goes first (best fit); then any node that may grow into a larger shape (first fit).
  if (e.family().members.size() > 1) {
    for (size_t i = NextWithRoom(e.rooms, cursor.room, pod.requests); i < e.new_nodes.size();
         i = NextWithRoom(e.rooms, i + 1, pod.requests)) {
      FlexNode& node = e.new_nodes[i];
      if (!node.HasRoomFor(pod) || !checker.Fits(node.index)) continue;
      TIDEPOOL_CHECK(TakeOn(node, pod, solo, e));
      e.rooms.Set(i, node.room);
      Place(pod, checker, e, i);
      cursor.room = i;
      return true;
    }
    cursor.room = e.new_nodes.size();
    if (GrowLeast(pod, checker, cursor, e, solo)) return true;
  }
  return FirstFit(pod, checker, cursor, e, solo);
}

bool Pass::FirstFit(const Pod& pod, FitChecker& checker, PackCursor& cursor, Estimate& e,
                    const Solo& solo) {
  const size_t end = e.new_nodes.size();
  // A family of one shape has nothing to grow into: its nodes fill in order, as first fit
  // decreasing packs them.
  const size_t start =
      e.family().members.size() > 1 ? std::clamp(e.grow_next, cursor.fit, end) : cursor.fit;
  auto take = [&](size_t i) {
    FlexNode& node = e.new_nodes[i];
    if (!checker.Fits(node.index) || !TakeOn(node, pod, solo, e)) return false;
    e.rooms.Set(i, node.room);
    Place(pod, checker, e, i);
    e.grow_next = i + 1;
    // The node may have grown into a larger shape, with room for pods it had none for.
    cursor.room = std::min(cursor.room, i);
    return true;
  };
  for (size_t i = start; i < end; ++i) {
    if (i >= cursor.failed_from && i < cursor.failed_to) {
      i = cursor.failed_to - 1;
      continue;
    }
    if (!take(i)) continue;
    if (start == cursor.fit) cursor.fit = i;  // the nodes before it failed the pod
    return true;
  }
  // Every node from `start` on failed the pod; with the run before it, if they join, one run.
  if (start < cursor.failed_from || start > cursor.failed_to) cursor.failed_from = start;
  cursor.failed_to = end;
  for (size_t i = cursor.fit; i < start; ++i) {
    if (!take(i)) continue;
    cursor.fit = i;
    return true;
  }
  cursor.fit = end;
  return false;
}

bool Pass::GrowLeast(const Pod& pod, FitChecker& checker, PackCursor& cursor, Estimate& e,
                     const Solo& solo) {
  const std::vector<size_t>& shapes = e.twins.front().shapes;
  if (shapes.empty()) return false;
  // A step: the smallest shape (EligibleShapes are largest first).
  const Resources& step = pools_[shapes.back()].pool->template_node.allocatable;
  if (step.cpu_milli() <= 0 || step.memory() <= 0) return false;
  const RoomIndex::Room size{pod.requests.cpu_milli(), pod.requests.memory()};
  for (int64_t k = 1;; ++k) {
    // Room that k steps of growth would make enough.
    const RoomIndex::Room need{size.cpu - k * step.cpu_milli(), size.memory - k * step.memory()};
    if (need.cpu <= 0 && need.memory <= 0) return false;
    for (size_t i = e.rooms.Next(cursor.fit, need); i < e.new_nodes.size();
         i = e.rooms.Next(i + 1, need)) {
      FlexNode& node = e.new_nodes[i];
      if (!checker.Fits(node.index) || !TakeOn(node, pod, solo, e)) continue;
      e.rooms.Set(i, node.room);
      Place(pod, checker, e, i);
      // The node grew into a larger shape, with room the group's next pods may use.
      cursor.room = std::min(cursor.room, i);
      return true;
    }
  }
}

void Pass::RefreshOpenFamilies() {
  offering_families_.clear();
  family_open_.assign(families_.size(), 0);
  for (size_t f = 0; f < families_.size(); ++f) {
    for (size_t i : families_[f].members) {
      const PoolState& ps = pools_[i];
      if (!ps.backoff_until && !LimitReason(ps, 0, Resources())) {
        family_open_[f] = 1;
        break;
      }
    }
  }
}

// Karpenter counts the zones its pools can create nodes in; kube-scheduler only those with nodes,
// so from zero it would put every pod of a zone spread in the first zone that gets a node. The
// offered domains keep the global minimum at 0 until each of them has a node with matching pods,
// so a family's estimate takes only what maxSkew allows in its zone and the rounds open the other
// zones. Once the planned nodes exist, kube-scheduler's Filter lets each pod onto the node
// planned for it, in the order the plan placed them: its PreFilter counts the same pods per zone
// (every planned node is eligible, as the pods' policies let its pool offer its zone), and its
// global minimum is never below the plan's, because the plan's domains are the real ones plus
// offered zones that had no pods (0). So count + 1 - minimum <= maxSkew, checked with the plan's
// minimum, holds with the real one; minDomains too: when the real domains are fewer than the
// plan's, an offered zone is still empty and the plan's minimum was 0 already.
void Pass::OfferSpreadDomains(const Pod& pod, FitChecker& checker) {
  if (!HasDomainSpread(pod)) return;
  if (family_open_.size() != families_.size()) RefreshOpenFamilies();
  auto offer = [&](size_t f) {
    return checker.OfferDomain(pools_[families_[f].members.front()].pool->template_node);
  };
  // The families that offer the group a new domain, found once per round (with many pools packed
  // alone there are as many families as pools, and a few zones).
  auto [cached, first] = offering_families_.try_emplace(GroupOf(&pod));
  if (!first) {
    for (size_t f : cached->second) offer(f);
    return;
  }
  for (size_t f = 0; f < families_.size(); ++f)
    if (family_open_[f] && offer(f)) cached->second.push_back(f);
}

bool Pass::PlaceOutsideEstimate(const Pod& pod, FitChecker& checker, PackCursor& cursor,
                                Estimate& e) {
  // Before the estimate changed anything the pod fit no node outside it.
  if (e.new_nodes.empty() && e.outside.empty()) return false;
  SyncCursor(cursor, checker, e);
  const size_t end = RankEnd(e.first_slot);
  if (!e.outside_rooms) e.outside_rooms = RoomsUpTo(end);
  RoomIndex& rooms = *e.outside_rooms;
  for (size_t n = NextWithRoom(rooms, cursor.outside, pod.requests); n < end;
       n = NextWithRoom(rooms, n + 1, pod.requests)) {
    NodeIndex i = SlotAt(n);
    if (snap_.Get(i).removed || !checker.Fits(i)) continue;
    (void)snap_.AddPod(&pod, i);
    rooms.Set(n, SnapshotRoom(snap_, i));
    checker.OnPodAdded(pod, i);
    e.outside.emplace_back(&pod, i);
    e.outside_at.push_back(e.pods.size());
    cursor.outside = n;
    return true;
  }
  cursor.outside = end;
  return false;
}

void Pass::PlaceSpreadPodsAgain(std::vector<const Pod*>& remaining,
                                std::map<std::string, ScaleUp>& ups) {
  if (pass_nodes_.size() == retried_at_) return;
  retried_at_ = pass_nodes_.size();
  size_t fallback = pass_nodes_.back().second;
  if (std::none_of(remaining.begin(), remaining.end(), [](const Pod* p) { return HasSpread(*p); }))
    return;
  RoomIndex rooms = RoomsUpTo(Ranks());
  for (bool placed = true; placed;) {
    placed = false;
    std::unordered_set<uint32_t> failed;  // groups no node takes in this sweep
    std::erase_if(remaining, [&](const Pod* p) {
      if (!HasSpread(*p) || failed.contains(GroupOf(p))) return false;
      FitChecker checker(*p, snap_);
      OfferSpreadDomains(*p, checker);
      for (size_t n = NextWithRoom(rooms, 0, p->requests); n < Ranks();
           n = NextWithRoom(rooms, n + 1, p->requests)) {
        NodeIndex i = SlotAt(n);
        if (snap_.Get(i).removed || !checker.Fits(i)) continue;
        (void)snap_.AddPod(p, i);
        rooms.Set(n, SnapshotRoom(snap_, i));
        AccountRetroPod(*p, i, fallback, ups);
        placed = true;
        return true;
      }
      failed.insert(GroupOf(p));
      return false;
    });
  }
}

void Pass::AccountRetroPod(const Pod& pod, NodeIndex node, std::optional<size_t> fallback,
                           std::map<std::string, ScaleUp>& ups) {
  if (!ListedInPlan(pod)) return;
  std::optional<size_t> pool = fallback;
  for (const auto& [index, shape] : pass_nodes_)
    if (index == node) pool = shape;
  TIDEPOOL_CHECK_MSG(pool.has_value(), "a pod accounted to a node this pass did not add");
  const std::string& name = pools_[*pool].pool->name;
  ScaleUp& up = ups[name];
  up.pool = name;
  up.pods.push_back(pod.Key());
  if (!explain_pod_.empty() && up.pods.back() == explain_pod_) pool_for_[explain_pod_] = name;
}

void Pass::Place(const Pod& pod, FitChecker& checker, Estimate& e, size_t node) {
  (void)snap_.AddPod(&pod, e.new_nodes[node].index);
  checker.OnPodAdded(pod, e.new_nodes[node].index);
  e.pod_node.push_back(static_cast<uint32_t>(node));
}

NodeIndex Pass::PlaceOnExisting(const Pod& pod, uint32_t group, size_t ranks,
                                std::optional<RoomIndex>* rooms) {
  const size_t n = std::min(Ranks(), ranks);
  if (n == 0) return sched::kNoNode;
  // A group that fit no node still fits none while only pods have been added since.
  if (n != no_fit_node_ranks_) {
    no_fit_groups_.clear();
    no_fit_node_ranks_ = n;
  }
  if (no_fit_groups_.contains(group)) return sched::kNoNode;
  FitChecker checker(pod, snap_);
  size_t start = 0;
  if (auto it = hints_.find(group); it != hints_.end()) start = it->second;
  const RoomIndex::Room need{pod.requests.cpu_milli(), pod.requests.memory()};
  auto next = [&](size_t from, size_t end) {
    if (rooms == nullptr) return from;
    if (!*rooms) *rooms = RoomsUpTo(n);
    return (*rooms)->Next(from, need, end);
  };
  const size_t rank = constraint_lists_.Walk(
      [&] { return ConstraintSetOf(pod, group); }, n, start,
      [&](size_t r) { return sched::PassesNodeConstraints(pod, snap_.Get(SlotAt(r))); },
      [&](size_t r) {
        const NodeIndex i = SlotAt(r);
        return !snap_.Get(i).removed && checker.Fits(i);
      },
      next);
  if (rank == ConstraintLists::kNotFound) {
    no_fit_groups_.insert(group);
    return sched::kNoNode;
  }
  const NodeIndex i = SlotAt(rank);
  (void)snap_.AddPod(&pod, i);
  if (rooms != nullptr && *rooms) (*rooms)->Set(rank, SnapshotRoom(snap_, i));
  hints_[group] = rank;
  return i;
}

uint32_t Pass::ConstraintSetOf(const Pod& pod, uint32_t group) {
  if (constraint_set_of_group_.size() <= group)
    constraint_set_of_group_.resize(group + 1, kNoConstraintSet);
  uint32_t& id = constraint_set_of_group_[group];
  if (id == kNoConstraintSet) id = constraint_lists_.IdOf(pod);
  return id;
}

bool Pass::GrowOnce(std::vector<const Pod*>& remaining, std::map<std::string, ScaleUp>& ups,
                    bool balance_zones) {
  ++round_;
  RefreshOpenFamilies();
  PlaceSpreadPodsAgain(remaining, ups);
  if (remaining.empty()) return true;
  std::vector<Candidate> candidates = Candidates(remaining, balance_zones);
  if (candidates.empty()) {
    NoteLimits(remaining);
    return false;
  }
  // Rank by the fluid estimate when there are many candidates; pack them exactly in batches
  // of kMaxExactOptions, best first, until a batch yields an option that places pods (the
  // fluid estimate ignores inter-pod rules, so a whole batch can come out empty).
  if (candidates.size() > kMaxExactOptions) RankByFluidEstimate(candidates);
  std::vector<std::string> outranked;
  std::vector<std::pair<size_t, Estimate>> options = PackCandidates(candidates, outranked);
  if (options.empty()) return false;

  std::vector<ExpanderOption> eo;
  for (const auto& [c, e] : options) eo.push_back(OptionOf(e));
  ExpanderChoice choice = ChooseOption(cfg_.scale_up.expanders, eo, cfg_.scale_up.random_seed,
                                       static_cast<uint64_t>(round_), outranked);
  auto& [c, best] = options[choice.index];
  // Make the winner's changes for real: packing is deterministic, so replaying what it placed
  // where gives the state packing it again would, without its fit checks; an estimate that
  // dropped nodes is packed again.
  snap_.Fork();
  std::optional<Estimate> again;
  if (!Replay(best)) {
    again = Pack(candidates[c]);
    TIDEPOOL_CHECK(again->pods == best.pods && again->new_nodes.size() == best.new_nodes.size() &&
                   again->outside == best.outside);
  }
  snap_.Commit();
  const Estimate& e = again ? *again : best;
  AccountCommitted(e, ups, choice.reason);
  std::unordered_set<const Pod*> placed(e.pods.begin(), e.pods.end());
  for (const auto& [p, node] : e.outside) placed.insert(p);
  std::erase_if(remaining, [&](const Pod* p) { return placed.contains(p); });
  return true;
}

bool Pass::Replay(const Estimate& e) {
  if (e.Opened() != static_cast<int>(e.new_nodes.size())) return false;
  size_t opened = 0;
  std::vector<int> twin_opened(e.twins.size(), 0);
  size_t outside = 0;
  auto place_outside = [&](size_t before) {
    for (; outside < e.outside.size() && e.outside_at[outside] == before; ++outside)
      (void)snap_.AddPod(e.outside[outside].first, e.outside[outside].second);
  };
  for (size_t k = 0; k < e.pods.size(); ++k) {
    place_outside(k);
    // PackOne opens a node for the pod it places on it first.
    size_t n = e.pod_node[k];
    if (n == opened) {
      const uint32_t t = e.new_nodes[n].twin;
      Family& family = *e.twins[t].family;
      NodeIndex index = AddFlexNode(family, family.used + twin_opened[t]++);
      TIDEPOOL_CHECK(index == e.new_nodes[n].index);
      ++opened;
    }
    (void)snap_.AddPod(e.pods[k], e.new_nodes[n].index);
  }
  place_outside(e.pods.size());
  TIDEPOOL_CHECK(opened == e.new_nodes.size() && outside == e.outside.size());
  for (const FlexNode& node : e.new_nodes) {
    if (node.shapes.size() > 1)
      (void)snap_.SetAllocatable(node.index, pools_[node.pool].pool->template_node.allocatable);
  }
  return true;
}

ExpanderOption Pass::OptionOf(const Estimate& e) const {
  // A family's option is named by the shape most of its nodes got (the lowest name on a tie).
  std::map<size_t, int> count;
  for (const FlexNode& n : e.new_nodes) ++count[n.pool];
  size_t pool = e.family().members.front();
  int most = 0;
  for (const auto& [p, k] : count)
    if (k > most) std::tie(pool, most) = std::pair(p, k);
  ExpanderOption o{pools_[pool].pool, static_cast<int>(e.new_nodes.size()),
                   static_cast<int>(e.pods.size() + e.outside.size()), e.requested, e.allocatable};
  if (count.size() > 1) o.cost_per_hour = e.cost_per_hour;
  return o;
}

std::vector<Pass::Candidate> Pass::Candidates(const std::vector<const Pod*>& remaining,
                                              bool balance_zones) {
  std::vector<Candidate> candidates;
  std::vector<uint8_t> joined(families_.size(), 0);  // a twin in an earlier candidate
  for (size_t f = 0; f < families_.size(); ++f) {
    if (joined[f]) continue;
    std::vector<size_t> shapes = EligibleShapes(families_[f]);
    if (shapes.empty()) continue;
    Candidate c{f, std::move(shapes), {}, {}};
    if (balance_zones) JoinTwins(c, joined);
    for (const Pod* p : remaining) {
      bool fits = FitsAnyShape(p, c.shapes) ||
                  std::any_of(c.twins.begin(), c.twins.end(),
                              [&](const Twin& t) { return FitsAnyShape(p, t.shapes); });
      if (fits) c.pods.push_back(p);
    }
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
  for (const Candidate& c : candidates) {
    fluid.push_back(FluidOption(pools_[c.shapes.front()], c.pods));
  }
  std::vector<Candidate> ranked;
  while (!candidates.empty()) {
    size_t w = ChooseIndex(cfg_.scale_up.expanders, fluid, cfg_.scale_up.random_seed,
                           static_cast<uint64_t>(round_));
    ranked.push_back(std::move(candidates[w]));
    candidates.erase(candidates.begin() + static_cast<long>(w));
    fluid.erase(fluid.begin() + static_cast<long>(w));
  }
  candidates = std::move(ranked);
}

std::vector<std::pair<size_t, Estimate>> Pass::PackCandidates(
    const std::vector<Candidate>& candidates, std::vector<std::string>& outranked) {
  std::vector<std::pair<size_t, Estimate>> options;
  const std::vector<std::string>& chain = cfg_.scale_up.expanders;
  const bool by_priority =
      !options_.estimate_outranked && !chain.empty() && chain.front() == "priority";
  for (size_t next = 0; next < candidates.size() && options.empty(); next += kMaxExactOptions) {
    std::vector<size_t> batch;
    for (size_t i = next; i < std::min(candidates.size(), next + kMaxExactOptions); ++i)
      batch.push_back(i);
    if (by_priority) {
      std::stable_sort(batch.begin(), batch.end(), [&](size_t a, size_t b) {
        return PriorityOf(candidates[a]) > PriorityOf(candidates[b]);
      });
    }
    std::optional<int32_t> placed;  // the priority of the first options that place pods
    for (size_t i : batch) {
      const Candidate& c = candidates[i];
      if (placed && PriorityOf(c) < *placed) {
        outranked.push_back(families_[c.family].name);
        continue;
      }
      snap_.Fork();
      Estimate e = Pack(c);
      snap_.Revert();
      if (e.pods.empty()) continue;
      if (by_priority) placed = PriorityOf(c);
      options.emplace_back(i, std::move(e));
    }
  }
  std::sort(options.begin(), options.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return options;
}

void Pass::AccountCommitted(const Estimate& e, std::map<std::string, ScaleUp>& ups,
                            const std::string& why) {
  for (const Twin& t : e.twins) t.family->used += t.opened;
  for (const FlexNode& n : e.new_nodes) {
    PoolState& ps = pools_[n.pool];
    ++ps.added;
    ++cluster_nodes_;
    cluster_capacity_.Add(ps.pool->template_node.capacity);
    ScaleUp& up = ups[ps.pool->name];
    up.pool = ps.pool->name;
    ++up.add;
    if (up.reason.empty()) up.reason = why;
    pass_nodes_.emplace_back(n.index, n.pool);
  }
  for (const auto& [p, node] : e.outside) AccountRetroPod(*p, node, e.new_nodes.front().pool, ups);
  for (size_t k = 0; k < e.pods.size(); ++k) {
    const Pod* p = e.pods[k];
    if (!ListedInPlan(*p)) continue;
    const std::string& pool = pools_[e.new_nodes[e.pod_node[k]].pool].pool->name;
    ScaleUp& up = ups[pool];
    up.pods.push_back(p->Key());
    if (!explain_pod_.empty() && up.pods.back() == explain_pod_) pool_for_[explain_pod_] = pool;
  }
}

}  // namespace tidepool::planner::scale_up_detail
