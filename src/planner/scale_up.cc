#include "planner/scale_up.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <ranges>
#include <unordered_map>
#include <unordered_set>

#include "base/check.h"
#include "planner/made_up_node.h"
#include "planner/model_fork.h"
#include "planner/plan_json.h"
#include "planner/scale_up_pass.h"
#include "planner/slot_pools.h"
#include "sched/cluster_model.h"

namespace tidepool::planner {
namespace scale_up_detail {

Pass::~Pass() {
  if (OnModel()) snap_.Revert();
}

ClusterSnapshot& Pass::ChooseSnapshot() {
  if (in_.model == nullptr || in_.dra != nullptr) return own_snap_;
  for (const Pool& p : cfg_.pools)
    if (!p.devices.empty()) return own_snap_;
  std::vector<const Node*> registered;
  registered.reserve(in_.nodes.size());
  for (const Node* n : in_.nodes)
    if (!n->meta.deletion_timestamp) registered.push_back(n);
  std::optional<ModelNodes> found = FindOnModel(*in_.model, registered);
  if (!found) return own_snap_;
  model_nodes_ = std::move(*found);
  return in_.model->snapshot();
}

void Pass::BuildSnapshot() {
  InitPools();
  if (OnModel()) {
    UseModel();
  } else {
    InitDra();
    AddRegisteredNodes();
  }
  AddUpcomingNodes();
  base_slots_ = snap_.NodeSlots();
  base_cluster_nodes_ = cluster_nodes_;
}

RoomIndex Pass::RoomsUpTo(size_t end) const {
  RoomIndex rooms;
  for (size_t r = 0; r < end; ++r) rooms.Append(SnapshotRoom(snap_, SlotAt(r)));
  return rooms;
}

void Pass::CountRegistered(const Node& node, const Pool* pool,
                           std::unordered_map<const Pool*, PoolState*>& state_of) {
  ++cluster_nodes_;
  cluster_capacity_.Add(node.capacity);
  if (pool == nullptr) return;
  if (auto it = state_of.find(pool); it != state_of.end()) ++it->second->current;
}

void Pass::InitPools() {
  pools_.reserve(cfg_.pools.size());
  for (const Pool& p : cfg_.pools) {
    PoolState ps;
    ps.pool = &p;
    if (auto it = in_.backoff_until.find(p.name);
        it != in_.backoff_until.end() && it->second > in_.now) {
      ps.backoff_until = it->second;
    }
    ps.SetDaemonSetPods(DaemonSetPodsFor(p.template_node, in_.daemon_sets));
    pools_.push_back(std::move(ps));
  }
  std::sort(pools_.begin(), pools_.end(),
            [](const PoolState& a, const PoolState& b) { return a.pool->name < b.pool->name; });
}

void Pass::InitDra() {
  bool devices = in_.dra != nullptr;
  for (const Pool& p : cfg_.pools) devices = devices || !p.devices.empty();
  if (!devices) return;
  static const model::DraObjects kNone;
  dra_ = std::make_unique<sched::DraState>(in_.dra != nullptr ? *in_.dra : kNone);
  snap_.AttachDra(dra_.get());
  for (const PoolState& ps : pools_) GiveTemplateDevices(&ps.pool->template_node, *ps.pool);
}

void Pass::AddRegisteredNodes() {
  std::unordered_map<const Pool*, PoolState*> state_of;
  for (auto& ps : pools_) state_of.emplace(ps.pool, &ps);
  snap_.ReserveNodes(in_.nodes.size());
  for (const Node* n : in_.nodes) {
    if (n->meta.deletion_timestamp) continue;
    auto idx = snap_.AddNode(n);
    if (!idx) continue;  // duplicate name in the input: the first one wins
    order_.push_back(*idx);
    CountRegistered(*n, PoolOf(*n, in_, pool_names_), state_of);
  }
  NodeIndex last = sched::kNoNode;
  for (const Pod* p : in_.pods) {
    if (p->node_name.empty() || p->IsTerminal()) continue;
    // Pods often come grouped by node; the previous lookup then answers.
    NodeIndex idx = last != sched::kNoNode && snap_.Get(last).node->name() == p->node_name
                        ? last
                        : snap_.FindNode(p->node_name);
    if (idx == sched::kNoNode) continue;
    last = idx;
    (void)snap_.AddPod(p, idx);
  }
}

void Pass::UseModel() {
  SlotPools* slot_pools = in_.slot_pools;
  if (slot_pools != nullptr) slot_pools->Begin(*in_.model, cfg_);
  snap_.Fork();
  TakeInputNodes(snap_, model_nodes_);
  // The snapshot's real nodes are the model's, some replaced by the input's copies (same names).
  numbered_may_clash_ = SomeNameStartsWith(*in_.model, kNewNodePrefix) ||
                        SomeNameStartsWith(*in_.model, kUpcomingNodePrefix);
  std::unordered_map<const Pool*, PoolState*> state_of;
  for (auto& ps : pools_) state_of.emplace(ps.pool, &ps);
  for (size_t k = 0; k < model_nodes_.nodes.size(); ++k) {
    const NodeIndex slot = model_nodes_.slots[k];
    const Node& node = *model_nodes_.nodes[k];
    order_.push_back(slot);
    CountRegistered(node, PoolOfSlot(slot_pools, slot, node, in_, pool_names_), state_of);
  }
}

// Upcoming nodes: requested, not registered yet. Modelled from the pool template so pods that
// will fit them trigger nothing.
void Pass::AddUpcomingNodes() {
  for (auto& ps : pools_) {
    auto it = in_.upcoming.find(ps.pool->name);
    int n = it == in_.upcoming.end() ? 0 : it->second;
    for (int k = 0; k < n; ++k) {
      upcoming_nodes_.push_back(ps.pool->template_node);
      Node& node = upcoming_nodes_.back();
      node.meta.name = fmt::format("{}{}-{}", kUpcomingNodePrefix, ps.pool->name, k);
      GiveTemplateDevices(&node, *ps.pool);
      NodeIndex idx = AddNumberedNode(snap_, node, numbered_may_clash_);
      order_.push_back(idx);
      for (const Pod* d : ps.ds_pods) (void)snap_.AddPod(d, idx);
      ++ps.current;
      ++cluster_nodes_;
      cluster_capacity_.Add(node.capacity);
    }
  }
}

std::vector<const Pod*> Pass::PendingByPriority() const {
  std::vector<const Pod*> pending = UnboundPods(in_);
  std::erase_if(pending, [&](const Pod* p) {
    return !IsPendingForScaleUp(*p, cfg_.scale_up.expendable_priority_cutoff);
  });
  SortForScheduling(pending);
  return pending;
}

Pass::Flexibility Pass::FlexibilityOf(const Pod* pod) {
  const uint32_t g = GroupOf(pod);
  auto [it, inserted] = templates_fitting_.emplace(g, 0);
  if (inserted) it->second = TemplatesFitting(g, *pod);
  return {-int64_t{pod->PriorityOrZero()}, it->second};  // priority descending
}

// A pod that tolerates spot must not take the upcoming on-demand node a pod without that
// toleration needs, which would make every later pass ask for one more node.
void Pass::SortByFlexibility(std::vector<const Pod*>& singles) {
  SortPods(
      singles, [&](const Pod* p) { return FlexibilityOf(p); }, std::less<>());
}

int Pass::TemplatesFitting(uint32_t group, const Pod& pod) {
  int n = 0;
  // A nodeName and claims are asked per pool.
  if (!pod.node_name.empty() || !pod.resource_claims().empty()) {
    for (size_t i = 0; i < pools_.size(); ++i) n += FitsTemplate(group, pod, i) ? 1 : 0;
    return n;
  }
  const std::vector<int>& passing = PassingByRoomClass(group, pod);
  for (size_t c = 0; c < passing.size(); ++c) {
    if (passing[c] == 0) continue;
    const PoolState& ps = pools_[room_classes_.first[c]];
    if (sched::HasResources(pod, ps.pool->template_node.allocatable, ps.DaemonSetUse()))
      n += passing[c];
  }
  return n;
}

void Pass::MakeRoomClasses() {
  // Pools by what a new node has free for pods: a handful of shapes, often one.
  for (size_t i = 0; i < pools_.size(); ++i) {
    auto same = [&](size_t j) {
      return pools_[j].pool->template_node.allocatable ==
                 pools_[i].pool->template_node.allocatable &&
             pools_[j].DaemonSetUse() == pools_[i].DaemonSetUse();
    };
    auto it = std::find_if(room_classes_.first.begin(), room_classes_.first.end(), same);
    room_classes_.of.push_back(static_cast<uint32_t>(it - room_classes_.first.begin()));
    if (it == room_classes_.first.end()) room_classes_.first.push_back(i);
  }
}

const std::vector<int>& Pass::PassingByRoomClass(uint32_t group, const Pod& pod) {
  if (room_classes_.of.empty()) MakeRoomClasses();
  const uint32_t set = ConstraintSetOf(pod, group);
  if (room_classes_.passing.size() <= set) room_classes_.passing.resize(set + 1);
  std::vector<int>& passing = room_classes_.passing[set];
  if (passing.empty()) {
    passing.assign(room_classes_.first.size(), 0);
    for (size_t i = 0; i < pools_.size(); ++i)
      passing[room_classes_.of[i]] += PassesTemplateConstraints(group, pod, i) ? 1 : 0;
  }
  return passing;
}

// The gangs keep their order (the scheduler's): a gang less flexible than one before it finds the
// singles that go before it placed already.
std::vector<const Pod*> Pass::PlaceGangsAndSingles(Gangs& gangs, ScaleUpPlan& plan,
                                                   std::map<std::string, ScaleUp>& ups) {
  std::vector<const Pod*>& singles = gangs.singles;
  SortByFlexibility(singles);
  std::vector<const Pod*> need;
  ExistingRoom room;
  auto placed = singles.cbegin();  // the singles before it are placed
  for (const std::string& g : gangs.order) {
    Flexibility gang{INT64_MAX, INT_MAX};
    for (const Pod* m : gangs.pending[g]) gang = std::min(gang, FlexibilityOf(m));
    // Singles as flexible as the gang go first, as they did before gangs took part in the order.
    auto last = std::partition_point(placed, singles.cend(),
                                     [&](const Pod* p) { return FlexibilityOf(p) <= gang; });
    PlaceSinglesOnExisting(placed, last, room, plan, need);
    placed = last;
    PlanGang(g, gangs, plan, ups);
    room.placed_since = true;  // its members may have taken room
  }
  PlaceSinglesOnExisting(placed, singles.cend(), room, plan, need);
  return need;
}

sched::RoomBound Pass::RoomOfExisting() const {
  sched::RoomBound room;
  for (size_t rank = 0; rank < order_.size(); ++rank) {
    const sched::NodeInfo& info = snap_.Get(SlotAt(rank));
    if (!info.removed) room.Add(info);
  }
  return room;
}

void Pass::PlaceSinglesOnExisting(std::vector<const Pod*>::const_iterator first,
                                  std::vector<const Pod*>::const_iterator last, ExistingRoom& room,
                                  ScaleUpPlan& plan, std::vector<const Pod*>& need) {
  if (first >= last) return;
  // Room only shrinks here: a pod that asks more than any node has fits nowhere.
  if (!room.bound) room.bound = RoomOfExisting();
  for (const Pod* p : std::ranges::subrange(first, last)) {
    const bool within = !room.bound->Excludes(*p);
    NodeIndex i = within ? PlaceOnExisting(*p, GroupOf(p), order_.size(),
                                           options_.placement_cursors ? &room.rooms : nullptr)
                         : sched::kNoNode;
    // A pod the bound let through fitted nowhere: pods placed since the bound was taken may have
    // filled the roomiest nodes (nodes on their way, first), so it is taken again. Each search
    // that fails costs a walk of the nodes already; so does this, and the pods like this one that
    // follow (a queue of jobs waiting for quota: thousands, each its own owner) skip the search.
    if (within && i == sched::kNoNode && room.placed_since) {
      room.bound = RoomOfExisting();
      room.placed_since = false;
    }
    room.placed_since = room.placed_since || i != sched::kNoNode;
    if (i != sched::kNoNode) {
      plan.fits_existing.push_back(p->Key());
      if (plan.fits_existing.back() == explain_pod_)
        fits_node_[explain_pod_] = snap_.Get(i).node->name();
    } else {
      need.push_back(p);
    }
  }
}

void Pass::PlanSingles(std::vector<const Pod*>& need, ScaleUpPlan& plan,
                       std::map<std::string, ScaleUp>& ups) {
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
      PoolReason& slot = r[ps.pool->name];
      if (slot.text.empty()) {
        slot = {ReasonKind::kScaleUpLimit,
                fmt::format("pool {} cannot take it in this pass", ps.pool->name)};
      }
    }
    plan.unschedulable.push_back({p->Key(), r});
  }
}

void Pass::Finish(ScaleUpPlan& plan, std::map<std::string, ScaleUp>& ups) {
  for (auto& [pool, up] : ups) {
    std::sort(up.pods.begin(), up.pods.end());
    if (up.add > 0 || !up.pods.empty()) plan.scale_ups.push_back(std::move(up));
  }
  std::erase_if(plan.scale_ups, [](const ScaleUp& u) { return u.add == 0; });
  std::sort(plan.unschedulable.begin(), plan.unschedulable.end(),
            [](const Unschedulable& a, const Unschedulable& b) { return a.pod < b.pod; });
  std::sort(plan.fits_existing.begin(), plan.fits_existing.end());
}

std::unordered_set<const Pod*> Pass::DaemonSetPods() const {
  std::unordered_set<const Pod*> out;
  for (const PoolState& ps : pools_) out.insert(ps.ds_pods.begin(), ps.ds_pods.end());
  return out;
}

void Pass::ListNewNodes(ScaleUpPlan& plan) const {
  const std::unordered_set<const Pod*> daemon_set_pods = DaemonSetPods();
  plan.new_nodes.reserve(pass_nodes_.size());
  for (const auto& [index, shape] : pass_nodes_) {
    NewNode& n = plan.new_nodes.emplace_back();
    n.pool = pools_[shape].pool->name;
    for (const Pod* p : snap_.Get(index).pods) {
      if (!daemon_set_pods.contains(p) && ListedInPlan(*p)) n.pods.push_back(p->Key());
    }
    std::sort(n.pods.begin(), n.pods.end());
  }
}

ScaleUpPlan Pass::Run() {
  BuildSnapshot();
  ScaleUpPlan plan;
  std::vector<const Pod*> pending = PendingByPriority();
  BuildFamilies(pending);
  Gangs gangs = CollectGangs(pending);
  // 1. Singles that fit existing or upcoming capacity trigger nothing; 2. gangs, all or nothing.
  // Within a priority, the least flexible pods (whose group fits the fewest pool templates) go
  // first, a gang with its least flexible member.
  std::map<std::string, ScaleUp> ups;
  std::vector<const Pod*> need = PlaceGangsAndSingles(gangs, plan, ups);
  // 3. Singles that need new nodes: one pool per round, chosen by the expanders, until no pool
  // can take any of the pods left; then the new nodes whose pods the others can take go.
  PlanSingles(need, plan, ups);
  CompactNewNodes(pending, gangs, ups);
  // 4. Warm placeholders, after every real pod.
  if (!in_.placeholders.empty()) PlanWarm(plan, ups);
  if (options_.list_new_nodes) ListNewNodes(plan);
  Finish(plan, ups);
  return plan;
}

}  // namespace scale_up_detail

namespace {

ScaleUpPlan PlanOnce(const PlannerInput& input, const ScaleUpOptions& options) {
  scale_up_detail::Pass pass(input, "", options);
  return pass.Run();
}

// All of a plan, for the model's debug mode: the plan JSON and what it leaves out.
std::string Everything(const ScaleUpPlan& plan) {
  std::string out = PlanToJson(plan, {}).dump(1);
  for (const NewNode& n : plan.new_nodes) {
    out += fmt::format("\nnew node of {}: {}", n.pool, fmt::join(n.pods, " "));
  }
  for (const auto& [pod, node] : plan.gang_nodes) out += fmt::format("\n{} on {}", pod, node);
  for (const auto& [pool, why] : plan.warm_unmet) out += fmt::format("\nwarm {}: {}", pool, why);
  return out;
}

}  // namespace

ScaleUpPlan ScaleUpPlanner::Plan(const PlannerInput& input, const ScaleUpOptions& options) const {
  TIDEPOOL_CHECK(input.config != nullptr);
  if (!VerifyingModel(input)) return PlanOnce(input, options);
  CheckUnbound(input);
  PlannerInput built = input;
  built.model = nullptr;
  std::string want = Everything(PlanOnce(built, options));
  ScaleUpPlan got = PlanOnce(input, options);
  CheckSamePlan("scale-up", Everything(got), want);
  return got;
}

}  // namespace tidepool::planner
