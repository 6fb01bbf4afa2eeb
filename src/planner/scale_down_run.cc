#include "planner/scale_down_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_set>

#include "base/check.h"
#include "planner/cluster.h"
#include "planner/equivalence.h"
#include "planner/model_fork.h"
#include "planner/slot_pools.h"
#include "sched/cluster_model.h"

namespace tidepool::planner::scale_down_detail {

ScaleDownRun::ScaleDownRun(const PlannerInput& input, const RunOptions& options)
    : input_(input),
      config_(input.config->scale_down),
      evict_training_pods_(options.evict_training_pods),
      turn_(options.turn),
      pods_when_reached_(options.pods_when_reached ||
                         (options.turn != nullptr && options.turn->at_most > 0)),
      weigh_training_(!options.evict_training_pods && config_.consolidation.enabled),
      snapshot_(ChooseSnapshot(input)),
      placer_(snapshot_, node_facts_, destinations_, usable_),
      pool_size_(input.config->pools),
      pool_nodes_(input.config->pools),
      replacements_added_(input.config->pools) {
  if (OnModel()) {
    UseModel();
  } else {
    BuildSnapshot();
  }
  // WeighCandidate reads what moves as `requested` less `staying_requested`: a snapshot without
  // that sum would make every pod look like one that moves.
  TIDEPOOL_CHECK_MSG(snapshot_.keeps_staying_sums(),
                     "scale-down on a snapshot that does not keep the staying sums");
  usable_.assign(entries_.size(), 0);
  base_moved_in_.resize(entries_.size());
  moved_in_.resize(entries_.size());

  for (const NodeEntry& e : entries_)
    if (e.pool != nullptr && !e.being_deleted) ++pool_size_[e.pool];
  ComputePdbBudgets();
  InitReplacement();
  AddPods();
  SortCandidates();
  TakeTurn();
  OrderDestinations();

  // Pods of nodes being deleted are about to be rescheduled: they take room on the nodes that
  // stay (best effort; the ones that fit nowhere are scale-up's business).
  for (NodeIndex i : by_name_) {
    NodeEntry& e = entries_[i];
    if (!e.being_deleted) continue;
    for (uint32_t f : OwnFacts(e)) {
      NodeIndex n = placer_.Find(facts_[f]);
      if (n == kNoNode) continue;
      TIDEPOOL_CHECK(snapshot_.AddPod(facts_[f].pod, n).has_value());
      base_moved_in_[n].push_back(f);
    }
  }
  AddPendingPods();
  for (NodeIndex i = 0; i < base_moved_in_.size(); ++i)
    if (!base_moved_in_[i].empty()) moved_in_changed_.push_back(i);
}

ScaleDownRun::~ScaleDownRun() {
  if (OnModel()) snapshot_.Revert();
}

ClusterSnapshot& ScaleDownRun::ChooseSnapshot(const PlannerInput& input) {
  // Nodes in name order; the first of duplicate names wins.
  nodes_by_name_ = input.nodes;
  // The model serves when it knows every node (devices and claims it does not model).
  const bool model_serves = input.model != nullptr && input.dra == nullptr;
  if (model_serves && InModelOrder(*input.model, nodes_by_name_)) {
    by_name_ = input.model->NodesByName();
    model_as_is_ = true;
    return input.model->snapshot();
  }
  auto by_name = [](const model::Node* a, const model::Node* b) { return a->name() < b->name(); };
  // The loop lists them in name order already: checking costs a comparison per node.
  if (!std::is_sorted(nodes_by_name_.begin(), nodes_by_name_.end(), by_name))
    std::stable_sort(nodes_by_name_.begin(), nodes_by_name_.end(), by_name);
  std::erase_if(nodes_by_name_, [](const model::Node* n) { return n->name().empty(); });
  nodes_by_name_.erase(std::unique(nodes_by_name_.begin(), nodes_by_name_.end(),
                                   [](const model::Node* a, const model::Node* b) {
                                     return a->name() == b->name();
                                   }),
                       nodes_by_name_.end());
  if (!model_serves) return own_snapshot_;
  std::optional<ModelNodes> found = FindOnModel(*input.model, nodes_by_name_);
  if (!found) return own_snapshot_;
  by_name_ = std::move(found->slots);
  model_as_is_ = found->as_is;
  return input.model->snapshot();
}

NodeEntry& ScaleDownRun::AddEntry(NodeIndex index, const model::Node* node) {
  if (entries_.size() <= index) entries_.resize(index + 1);
  if (node_facts_.size() <= index) node_facts_.resize(index + 1, nullptr);
  NodeEntry& e = entries_[index];
  e.node = node;
  e.memo = memo_ != nullptr ? memo_->Find(index, node) : nullptr;
  if (e.memo == nullptr && memo_ != nullptr) e.memo = memo_->Keep(index, node);
  e.pool = PoolOfSlot(slot_pools_, index, *node, input_, pool_names_);
  const NodeFacts* facts =
      e.memo != nullptr ? &e.memo->node_facts : &own_node_facts_.emplace_back(NodeFacts::Of(*node));
  node_facts_[index] = facts;
  e.being_deleted = facts->being_deleted;
  e.destination = facts->destination;
  return e;
}

void ScaleDownRun::BuildSnapshot() {
  snapshot_.KeepStayingSums();
  if (input_.dra != nullptr) {
    dra_ = std::make_unique<sched::DraState>(*input_.dra);
    snapshot_.AttachDra(dra_.get());
  }
  entries_.reserve(nodes_by_name_.size());
  node_facts_.reserve(nodes_by_name_.size());
  by_name_.reserve(nodes_by_name_.size());
  snapshot_.ReserveNodes(nodes_by_name_.size());
  for (const model::Node* node : nodes_by_name_) {
    Result<NodeIndex> index = snapshot_.AddNode(node);
    TIDEPOOL_CHECK(index.has_value() && *index == entries_.size());
    AddEntry(*index, node);
    by_name_.push_back(*index);
  }
}

// The model holds the cluster as observed; the input may see some nodes otherwise (a copy with
// the deletion taint of a node being removed, one being adopted) and leaves out the nodes it
// knows are gone. Inside the run's layer, each such node takes its input object (with its pods)
// and the left-out ones go.
void ScaleDownRun::UseModel() {
  memo_ = input_.scale_down_memo;
  if (memo_ != nullptr) memo_->Begin(*input_.model, *input_.config);
  slot_pools_ = input_.slot_pools;
  if (slot_pools_ != nullptr) slot_pools_->Begin(*input_.model, *input_.config);
  snapshot_.Fork();
  ModelNodes found{nodes_by_name_, std::move(by_name_), model_as_is_};
  TakeInputNodes(snapshot_, found);
  by_name_ = std::move(found.slots);
  entries_.resize(snapshot_.NodeSlots());
  node_facts_.resize(snapshot_.NodeSlots(), nullptr);  // slots come out of order, by name
  for (size_t k = 0; k < nodes_by_name_.size(); ++k) AddEntry(by_name_[k], nodes_by_name_[k]);
}

// Pending pods that fit a node that stays are about to be bound there by kube-scheduler. They
// take room as pods moved in, so a node is removed from under a pending pod only when the pod
// fits elsewhere (Karpenter keeps nodes nominated for pending pods likewise). Without this, a
// node that has just joined for pending pods can look empty for as long as the scheduler takes
// to bind them, and a short unneededTime removes it. Pods that fit no node are scale-up's.
void ScaleDownRun::AddPendingPods() {
  // Scale-up's equivalence groups (owner and every scheduling-relevant field): a pod like one
  // that fitted nowhere fits nowhere either, as the snapshot only fills up here. A burst of
  // thousands of pending pods costs a search per group, not per pod.
  std::unordered_set<std::string> no_room;
  // Room only shrinks here: a pod that asks more than any usable node has fits nowhere.
  sched::RoomBound room;
  for (NodeIndex n : destinations_)
    if (usable_[n]) room.Add(snapshot_.Get(n));
  const int32_t cutoff = input_.config->scale_up.expendable_priority_cutoff;
  std::vector<const model::Pod*> pending = UnboundPods(input_);
  std::erase_if(pending, [&](const model::Pod* pod) {
    return !IsPendingForScaleUp(*pod, cutoff) || room.Excludes(*pod);
  });
  // The scheduler's order, whatever order the input lists them in: where room is short, the pod
  // it would bind first takes it.
  SortForScheduling(pending);
  for (const model::Pod* pod : pending) {
    // Until a group found no room, no pod is skipped for its group: its key is built when asked.
    std::string group;
    if (!no_room.empty() && no_room.contains(group = planner::EquivalenceKey(*pod))) continue;
    auto f = static_cast<uint32_t>(facts_.size());
    facts_.emplace_back(pod);
    NodeIndex n = placer_.Find(facts_[f]);
    if (n == kNoNode) {
      if (group.empty()) group = planner::EquivalenceKey(*pod);
      no_room.insert(std::move(group));
      facts_.pop_back();
      continue;
    }
    TIDEPOOL_CHECK(snapshot_.AddPod(pod, n).has_value());
    base_moved_in_[n].push_back(f);
  }
}

// One sweep over the pods, in input order, while each pod is in cache: its place in the snapshot,
// its node's pods that move and their requests. The facts and blockers of those pods are read
// afterwards only for the nodes that need them (candidates and nodes being deleted): on a large
// cluster most nodes are busy and their pods are never asked.
void ScaleDownRun::AddPods() {
  std::vector<uint8_t> maybe(entries_.size(), 0);
  for (NodeIndex i : by_name_) {
    NodeEntry& e = entries_[i];
    if (e.pool == nullptr) continue;
    std::string keep = NodeKeep(i);
    maybe[i] = keep.empty() ? 1 : 0;
    if (!keep.empty()) SetKeep(e, std::move(keep));
  }
  CollectOwnPods();
  for (NodeIndex i : by_name_) {
    NodeEntry& e = entries_[i];
    if (e.being_deleted) {
      OwnPodsFromModel(i);
      TIDEPOOL_CHECK(snapshot_.RemoveNode(e.node->name()).has_value());
      AddFacts(e, /*blockers=*/false);  // never a candidate (NodeKeep)
    }
    if (e.pool == nullptr) continue;
    if (maybe[i]) WeighCandidate(i);
  }
}

void ScaleDownRun::CollectOwnPods() {
  if (OnModel()) {
    // The model's pods are read only on the nodes that need them (OwnPodsFromModel).
    for (NodeIndex i : by_name_)
      entries_[i].unread_pods = static_cast<uint32_t>(snapshot_.Get(i).pods.size());
    return;
  }
  NodeIndex last = kNoNode;
  for (const model::Pod* pod : input_.pods) {
    if (pod->node_name.empty() || pod->IsTerminal()) continue;
    // Pods often come grouped by node; the previous lookup then answers.
    NodeIndex i = last != kNoNode && entries_[last].node->name() == pod->node_name
                      ? last
                      : snapshot_.FindNode(pod->node_name);
    if (i == kNoNode) continue;
    last = i;
    NodeEntry& e = entries_[i];
    if (!e.being_deleted) TIDEPOOL_CHECK(snapshot_.AddPod(pod, i).has_value());
    if (DrainRoleOf(*pod) == DrainRole::kMove) PodsOf(e).own.push_back(pod);
  }
}

void ScaleDownRun::OwnPodsFromModel(NodeIndex i) {
  NodeEntry& e = entries_[i];
  if (e.unread_pods == 0) return;
  if (e.memo != nullptr && e.memo->own_read) {
    if (!e.memo->facts.empty()) {
      std::vector<const model::Pod*>& own = PodsOf(e).own;
      own.reserve(e.memo->facts.size());
      for (const PodFacts& f : e.memo->facts) own.push_back(f.pod);
    }
    e.unread_pods = 0;
    return;
  }
  const std::vector<const model::Pod*>& pods = snapshot_.Get(i).pods;
  TIDEPOOL_CHECK(e.unread_pods <= pods.size());
  for (uint32_t k = 0; k < e.unread_pods; ++k)
    if (DrainRoleOf(*pods[k]) == DrainRole::kMove) PodsOf(e).own.push_back(pods[k]);
  e.unread_pods = 0;
  if (e.pods != NodeEntry::kNone) {
    std::vector<const model::Pod*>& own = node_pods_[e.pods].own;
    std::stable_sort(own.begin(), own.end(), ByKey);
  }
  if (e.memo != nullptr) {
    e.memo->facts.clear();
    for (const model::Pod* pod : Own(e)) e.memo->facts.emplace_back(pod).Resolve();
    e.memo->own_read = true;
  }
}

bool ScaleDownRun::ByKey(const model::Pod* a, const model::Pod* b) {
  int c = a->meta.namespace_.compare(b->meta.namespace_);
  return c != 0 ? c < 0 : a->meta.name < b->meta.name;
}

void ScaleDownRun::AddFacts(NodeEntry& e, bool blockers) {
  NodePods& p = PodsOf(e);
  // On the model, `own` came with its facts, resolved and in order, from the memo
  // (OwnPodsFromModel).
  std::vector<PodFacts>* kept = e.memo != nullptr && e.memo->own_read ? &e.memo->facts : nullptr;
  TIDEPOOL_CHECK(kept == nullptr || kept->size() == p.own.size());
  // Input order is namespace/name order when it comes from an API list; otherwise sort (only the
  // nodes whose pods are asked about need the order).
  if (kept == nullptr && !std::is_sorted(p.own.begin(), p.own.end(), ByKey))
    std::stable_sort(p.own.begin(), p.own.end(), ByKey);
  p.own_facts.reserve(p.own.size());
  // Where the memo keeps the pods' disruptions at this pass's weigh time, slot by slot with `own`.
  ScaleDownMemo::Node::Disruptions* weighed =
      kept != nullptr && blockers ? KeptDisruptions(e) : nullptr;
  if (weighed != nullptr) weighed->pods.resize(p.own.size());
  for (size_t k = 0; k < p.own.size(); ++k) {
    const model::Pod* pod = p.own[k];
    p.own_facts.push_back(static_cast<uint32_t>(facts_.size()));
    if (kept != nullptr) {
      // A candidate's eviction facts are read into the memo first, so later passes keep them.
      if (blockers) (*kept)[k].ResolveEviction();
      facts_.push_back((*kept)[k]);
    } else {
      facts_.emplace_back(pod);
    }
    if (!blockers) continue;
    // `own` is in namespace/name order: the first blocker found is the one to report.
    std::string blocker =
        PodBlocker(e, facts_.back(), weighed != nullptr ? &weighed->pods[k] : nullptr);
    WeighedPods& w = Weighed(e);
    if (!blocker.empty() && w.blocker_pod == nullptr) {
      w.blocker = std::move(blocker);
      w.blocker_pod = pod;
    }
  }
}

// Node `i` may be a candidate (managed, nothing keeps it): its utilization, and when it is low
// enough (or a cheaper pool might hold all of it) its pods' facts, blockers and verdict.
void ScaleDownRun::WeighCandidate(NodeIndex i) {
  NodeEntry& e = entries_[i];
  // What its pods that move request: the snapshot keeps the part that stays on drain apart.
  sched::DraState::DeviceUse devices;
  if (e.memo != nullptr && e.memo->utilization) {
    e.util = *e.memo->utilization;  // neither its pods nor the node changed (no DRA on the model)
  } else {
    const NodeInfo& info = snapshot_.Get(i);
    const model::Resources requested = info.requested - info.staying_requested;
    if (dra_) devices = dra_->UseOf(*e.node);
    e.util = ComputeUtilization(*e.node, requested, devices.devices, devices.allocated);
    if (e.memo != nullptr && !dra_) e.memo->utilization = e.util;
  }
  if (devices.allocated > 0) {
    // A device allocated to a claim no pod here uses (a standalone claim, or one whose pods
    // are gone) is held for someone: removing the node would take it away.
    auto foreign = dra_->ForeignClaimsOn(*e.node, snapshot_.Get(i).pods);
    if (!foreign.empty()) {
      SetKeep(e, fmt::format("devices allocated to claim {}, which no pod on the node uses",
                             foreign.front()));
      return;
    }
  }
  if (e.util.value >= Threshold(e)) {
    e.busy = true;
    // Busy, but a cheaper pool's node might hold all of it (back to spot, a smaller shape).
    if (!MayReplace(e)) return;
    e.replace_only = true;
  }
  e.candidate = true;
  order_.push_back(i);
  // A busy node's utilization says it has pods to move (devices aside): they wait until a pass
  // may remove it.
  if (e.replace_only && e.util.value > 0 && !dra_) {
    e.deferred = true;
    return;
  }
  if (pods_when_reached_) {
    // Whether it has pods to move orders the candidates: the memo says, or they are read now.
    if (e.memo == nullptr || !e.memo->own_read) OwnPodsFromModel(i);
    e.deferred = !Own(e).empty() || MemoHasPods(e);
    if (e.deferred) return;
  }
  ReadCandidatePods(i);
}

void ScaleDownRun::SortCandidates() {
  // Each candidate's key read once (a comparison would read two entries and their pods' lists).
  struct Ranked {
    bool has_pods;
    double util;
    uint32_t at;  // in name order: ties keep it
    NodeIndex node;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(order_.size());
  for (size_t k = 0; k < order_.size(); ++k) {
    const NodeEntry& e = entries_[order_[k]];
    ranked.push_back({HasPodsToMove(e), e.util.value, static_cast<uint32_t>(k), order_[k]});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.has_pods != b.has_pods) return b.has_pods;
    if (a.util != b.util) return a.util < b.util;
    return a.at < b.at;
  });
  for (size_t k = 0; k < ranked.size(); ++k) order_[k] = ranked[k].node;
}

void ScaleDownRun::TakeTurn() {
  if (!Bounded()) return;
  std::vector<uint32_t> rank(entries_.size(), 0);
  for (size_t k = 0; k < order_.size(); ++k) rank[order_[k]] = static_cast<uint32_t>(k);
  std::vector<TurnCandidate> by_name;
  std::vector<NodeIndex> slots;
  for (NodeIndex i : by_name_) {
    const NodeEntry& e = entries_[i];
    if (!e.candidate || !HasPodsToMove(e)) continue;
    by_name.push_back({Facts(i).name, rank[i]});
    slots.push_back(i);
  }
  const std::vector<bool> weighed = ChooseTurn(by_name, *turn_, turn_ends_at_);
  for (size_t k = 0; k < slots.size(); ++k) {
    if (weighed[k]) continue;
    turn_left_out_ = true;
    NodeEntry& e = entries_[slots[k]];
    e.candidate = false;
    e.deferred = false;
    e.replace_only = false;
    // A busy node (a candidate for the replace move only) stays for its utilization.
    e.waits_turn = !e.busy;
  }
  std::erase_if(order_, [this](NodeIndex c) { return !entries_[c].candidate; });
}

void ScaleDownRun::ReadCandidatePods(NodeIndex i) {
  NodeEntry& e = entries_[i];
  e.deferred = false;
  e.weighed = static_cast<uint32_t>(weighed_.size());
  weighed_.emplace_back();
  if (!e.being_deleted) {
    OwnPodsFromModel(i);
    AddFacts(e, /*blockers=*/true);
  }
  WeighConsolidation(e);
}

ScaleDownMemo::Node::Disruptions* ScaleDownRun::KeptDisruptions(const NodeEntry& e) const {
  if (e.memo == nullptr) return nullptr;
  const RuntimeHints* hints = input_.runtime_hints;
  return &e.memo->DisruptionsAt(WeighTime(input_.now), hints != nullptr ? hints->version() : 0);
}

std::string ScaleDownRun::PodBlocker(NodeEntry& e, PodFacts& f,
                                     std::optional<PodDisruption>* kept) {
  f.ResolveEviction();
  const model::Pod& pod = *f.pod;
  if (f.eviction_rules) {
    CoveringPdbs(pod, covering_);
    std::string blocker =
        EvictionBlocker(pod, !covering_.empty(), evict_training_pods_ || weigh_training_);
    if (!blocker.empty()) return blocker;
  }
  WeighedPods& w = Weighed(e);
  if (!weigh_training_ || !f.weighable) {
    w.other_pods = true;
    return "";
  }
  // The memo's, when this pod was weighed at this weigh time before (the node and pods unchanged).
  Result<PodDisruption> d =
      kept != nullptr && kept->has_value()
          ? Result<PodDisruption>(**kept)
          : DisruptionOf(pod, *e.node, e.pool->price_per_hour, config_.consolidation,
                         input_.runtime_hints, WeighTime(input_.now));
  if (!d) return fmt::format("pod {} is not evictable: {}", pod.Key(), d.error().message());
  if (kept != nullptr) *kept = *d;
  // The pod's facts were added just before (AddPods).
  fact_remaining_.resize(facts_.size(), config_.consolidation.max_horizon);
  fact_remaining_.back() = d->remaining;
  w.training.push_back(std::move(*d));
  return "";
}

Duration ScaleDownRun::FactRemaining(uint32_t f) const {
  return f < fact_remaining_.size() ? fact_remaining_[f] : config_.consolidation.max_horizon;
}

void ScaleDownRun::WeighConsolidation(NodeEntry& e) {
  WeighedPods& w = Weighed(e);
  if (w.training.empty() || !w.blocker.empty()) return;
  w.verdict = Weigh(w.training, w.other_pods, e.pool->price_per_hour, config_.consolidation);
}

void ScaleDownRun::ComputePdbBudgets() {
  pdbs_.reserve(input_.pdbs.size());
  bool compute = false;
  for (const model::PodDisruptionBudget* pdb : input_.pdbs) {
    pdbs_by_namespace_[pdb->meta.namespace_].push_back(static_cast<uint32_t>(pdbs_.size()));
    pdbs_.push_back({pdb, std::max(0, pdb->disruptions_allowed.value_or(0))});
    compute = compute || !pdb->disruptions_allowed;
  }
  if (!compute) return;
  // No status: what the disruption controller would compute from the pods the PDB selects
  // (expected: the non-terminal ones; healthy: the running ones not being deleted).
  std::vector<int32_t> expected(pdbs_.size()), healthy(pdbs_.size());
  for (const model::Pod* pod : input_.pods) {
    if (pod->IsTerminal()) continue;
    auto it = pdbs_by_namespace_.find(pod->meta.namespace_);
    if (it == pdbs_by_namespace_.end()) continue;
    for (uint32_t i : it->second) {
      const model::PodDisruptionBudget& pdb = *pdbs_[i].pdb;
      if (pdb.disruptions_allowed || !pdb.Selects(pod->meta)) continue;
      ++expected[i];
      if (pod->phase == model::PodPhase::kRunning && !pod->meta.deletion_timestamp) ++healthy[i];
    }
  }
  for (size_t i = 0; i < pdbs_.size(); ++i) {
    const model::PodDisruptionBudget& pdb = *pdbs_[i].pdb;
    if (pdb.disruptions_allowed) continue;
    int32_t desired = 0;
    if (pdb.max_unavailable) {
      desired = expected[i] - pdb.max_unavailable->Resolve(expected[i], /*round_up=*/true);
    } else if (pdb.min_available) {
      desired = pdb.min_available->Resolve(expected[i], /*round_up=*/true);
    }
    pdbs_[i].allowed = std::max(0, healthy[i] - desired);
  }
}

void ScaleDownRun::OrderDestinations() {
  destinations_.clear();
  // Nodes that are candidates for the replace move only are busy: they count as staying.
  auto stays = [this](NodeIndex i) { return !entries_[i].candidate || entries_[i].replace_only; };
  for (NodeIndex i : by_name_)
    if (entries_[i].destination && stays(i)) destinations_.push_back(i);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it)
    if (entries_[*it].destination && !stays(*it)) destinations_.push_back(*it);
  for (NodeIndex n : destinations_) usable_[n] = 1;
  usable_count_ = destinations_.size();
  placer_.DestinationsChanged();
}

NodeIndex ScaleDownRun::Find(std::string_view name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [this](NodeIndex i, std::string_view n) { return Facts(i).name < n; });
  if (it == by_name_.end() || Facts(*it).name != name) return kNoNode;
  return *it;
}

const NodePods ScaleDownRun::kNoPods;

void ScaleDownRun::SetKeep(NodeEntry& e, std::string words) {
  e.keep = static_cast<uint32_t>(keep_words_.size());
  keep_words_.push_back(std::move(words));
}

std::string ScaleDownRun::NodeKeep(NodeIndex i) const {
  const NodeFacts& f = Facts(i);
  if (f.being_deleted) {
    return fmt::format("being removed already ({} taint)", kToBeDeletedTaint);
  }
  if (!f.disabled_by.empty()) {
    return fmt::format("scale-down disabled by annotation {}=true", f.disabled_by);
  }
  const std::optional<Time>& created = f.created;
  if (created && *created + config_.delay_after_add > input_.now) {
    auto age =
        std::chrono::floor<std::chrono::seconds>(std::max(Duration(0), input_.now - *created));
    return fmt::format("added {} ago, delayAfterAdd {}", FormatDuration(age),
                       FormatDuration(config_.delay_after_add));
  }
  return "";
}

}  // namespace tidepool::planner::scale_down_detail
