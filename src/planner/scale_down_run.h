// ScaleDownRun, one ScaleDownPlanner call: the snapshot and the per-node facts built once, and
// passes that remove candidates one by one in snapshot layers (scale_down_run.cc, _pass.cc).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/check.h"
#include "planner/disruption.h"
#include "planner/scale_down.h"
#include "planner/scale_down_memo.h"
#include "planner/scale_down_placer.h"
#include "planner/scale_down_rules.h"
#include "sched/dra/dra_state.h"

namespace tidepool::planner::scale_down_detail {

inline constexpr std::string_view kDisabledInConfig = "scale-down disabled in config";
inline constexpr std::string_view kDefaultNotYet = "not unneeded for long enough yet";

// Amounts the free-capacity bound tracks: cpu (milli), memory, pod slots, GPUs.
using Amounts = std::array<int64_t, 4>;
inline constexpr std::array<std::string_view, 4> kAmountNames = {"cpu", "memory", "pods", "gpu"};

// `node`: the facts of the node `info` holds (its allocatable, without reading the node object).
inline Amounts FreeOn(const NodeFacts& node, const NodeInfo& info) {
  const model::Resources& r = info.requested;
  return {std::max<int64_t>(0, node.cpu - r.cpu_milli()),
          std::max<int64_t>(0, node.memory - r.memory()),
          std::max<int64_t>(0, node.pods - r.pods()), std::max<int64_t>(0, node.gpus - r.gpus())};
}

inline void AddTo(Amounts& a, const Amounts& b, int sign) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += sign * b[i];
}

struct NodeEntry {
  const model::Node* node = nullptr;
  const model::Pool* pool = nullptr;  // nullptr: unmanaged
  // On the model, with a memo: what the memo keeps about the node (read, or to be written).
  ScaleDownMemo::Node* memo = nullptr;
  bool being_deleted = false;  // ToBeDeletedByClusterAutoscaler taint
  bool destination = false;    // ready, schedulable, not being deleted
  // Where its pods that move are (ScaleDownRun::node_pods_, NodePods), or kNone: none read.
  // Apart from the entry, which every node has: most nodes' pods are never read.
  uint32_t pods = kNone;
  // On the model, until OwnPodsFromModel reads them: how many of the node's first pods in the
  // snapshot are its own (the run only adds pods after them). 0 once read, and when built.
  uint32_t unread_pods = 0;
  NodeUtilization util;
  bool candidate = false;
  // At or above its utilization threshold: a candidate for the replace move only (all its pods go
  // to one new node of a cheaper pool); `keep` says why it stays otherwise.
  bool replace_only = false;
  // A candidate with pods to move whose pods are read and weighed only once a pass gets past its
  // pool's minimum, its unneeded time and the rate limits (ScaleDownRun::ReadCandidatePods): a
  // replace-only one (most busy nodes stay for those, whatever their pods say; its utilization
  // says it has pods), or any in a run whose passes weigh only some candidates or may remove only
  // some nodes (RunOptions).
  bool deferred = false;
  // Left out of a bounded run: stays, for that (Keep::waits_turn).
  bool waits_turn = false;
  // Why a managed non-candidate stays (both unset for candidates): for its utilization (`busy`:
  // ScaleDownRun::Busy has the numbers), or for the words at `keep` (ScaleDownRun::KeepWords).
  bool busy = false;
  uint32_t keep = kNone;
  // Candidates: where their pods' verdicts are (ScaleDownRun::weighed_); most nodes have none.
  uint32_t weighed = kNotWeighed;
  static constexpr uint32_t kNotWeighed = UINT32_MAX;
  static constexpr uint32_t kNone = UINT32_MAX;
};

// A node's pods that move (NodeEntry::pods): its non-terminal pods with DrainRole::kMove, in
// namespace/name order once own_facts is built. On the model they are read when first needed
// (ScaleDownRun::OwnPodsFromModel): for candidates, nodes being deleted and destinations whose
// horizon is asked. `own_facts`: indices into ScaleDownRun::facts_ of `own`, same order; only for
// nodes that may be candidates and nodes being deleted.
struct NodePods {
  std::vector<const model::Pod*> own;
  std::vector<uint32_t> own_facts;
};

// What a candidate's pods say about its removal (ScaleDownRun::WeighCandidate).
struct WeighedPods {
  std::string blocker;  // the first pod that may not be evicted, or ""
  const model::Pod* blocker_pod = nullptr;
  // When consolidation weighs training pods: the running training pods, whether other pods keep
  // the node busy too, and the verdict (docs/consolidation.md).
  std::vector<PodDisruption> training;
  bool other_pods = false;
  std::optional<ConsolidationVerdict> verdict;
};

struct PdbState {
  const model::PodDisruptionBudget* pdb = nullptr;
  int32_t allowed = 0;  // at the start of a pass
};

struct PassOptions {
  bool rate_limit = true;
  const std::function<bool(const model::Node&)>* may_remove = nullptr;
  const std::function<std::string(const model::Node&)>* not_yet_reason = nullptr;
  // Record where the pods of this node go (for Explain); kNoNode: record nothing.
  NodeIndex record = kNoNode;
  // Leave the snapshot as the pass found it (another pass follows).
  bool restore = false;
  // ScaleDownOptions::replacement_ready and replacement_group_ready.
  const std::vector<std::string>* replacement_ready = nullptr;
  const std::vector<std::string>* replacement_group_ready = nullptr;
  // ScaleDownOptions::waiting_is_removable.
  bool waiting_is_removable = false;
  // Only the names of the nodes removed are asked (the unneeded pass): the plan has no Keeps, and
  // its ScaleDowns only their node, pool and kind.
  bool names_only = false;
};

// Why a candidate stays in this pass: words, and whether its verdict's words follow them (a
// verdict that does not pay is worded only if the Keep's Reason() is asked: Keep::verdict_says).
struct Why {
  std::string text;
  bool verdict = false;

  Why() = default;
  Why(std::string words) : text(std::move(words)) {}  // NOLINT: any reason in words is a Why
  static Why Verdict(std::string before = "") {
    Why w(std::move(before));
    w.verdict = true;
    return w;
  }
  bool empty() const { return text.empty() && !verdict; }
};

struct PassResult {
  ScaleDownPlan plan;
  std::vector<std::pair<std::string, std::string>> moves;  // pod key -> node, for `record`
};

// A replace move weighed for a candidate in this pass: the cheapest pool whose new node holds the
// pods no node that stays takes, and the verdict at its price.
struct PassReplacement {
  const model::Pool* pool = nullptr;
  ConsolidationVerdict verdict;
  std::vector<uint32_t> pods;  // facts indices of the pods the new node takes
};

// Several candidates one new node replaces (ScaleDownRun::ReplaceTogether): the members in pass
// order, the pool of the new node, all their pods (facts indices), their prices' sum, and each
// member's verdict at its share of the new node's price.
struct GroupReplacement {
  std::vector<NodeIndex> members;
  const model::Pool* pool = nullptr;
  std::vector<uint32_t> pods;
  double price_sum = 0;
  std::vector<ConsolidationVerdict> verdicts;
};

// A count per configured pool, kept by the pool's place in the config: the run's pools are
// entries of `pools` (PoolNames hands out pointers into it), so a count is an array access, not
// a hash lookup. A pass asks it for every node.
class PoolCounts {
 public:
  explicit PoolCounts(const std::vector<model::Pool>& pools)
      : base_(pools.data()), counts_(pools.size(), 0) {}
  int32_t& operator[](const model::Pool* pool) { return counts_[Index(pool)]; }
  int32_t operator[](const model::Pool* pool) const { return counts_[Index(pool)]; }
  int32_t Sum() const {
    int32_t sum = 0;
    for (int32_t c : counts_) sum += c;
    return sum;
  }
  void Clear() { std::fill(counts_.begin(), counts_.end(), 0); }
  // The same pools, every count 0.
  PoolCounts Zeroed() const {
    PoolCounts z = *this;
    z.Clear();
    return z;
  }

 private:
  size_t Index(const model::Pool* pool) const {
    const auto i = static_cast<size_t>(pool - base_);
    TIDEPOOL_CHECK_MSG(i < counts_.size(), "PoolCounts: a pool that is not of the config");
    return i;
  }
  const model::Pool* base_;
  std::vector<int32_t> counts_;
};

// What a pass has used up so far: pool sizes, removals by kind and PDB budgets.
struct PassBudget {
  explicit PassBudget(const PoolCounts& sizes)
      : pool_size(sizes), non_empty_removed(sizes.Zeroed()) {}
  PoolCounts pool_size;  // nodes that stay so far
  PoolCounts non_empty_removed;
  std::unordered_map<const model::Pool*, std::string> pool_limit_words;  // once reached
  int32_t empty_removed = 0;
  std::vector<int32_t> pdb_remaining;                // per PDB
  std::vector<std::pair<uint32_t, int32_t>> needed;  // the candidate's evictions per PDB
};

// What shapes a run before it reads the nodes (from ScaleDownOptions).
struct RunOptions {
  bool evict_training_pods = false;  // running training pods are evictable
  // Which candidates with pods to move the run weighs; null: every one. A bound reads the pods of
  // the candidates it weighs only, when a pass reaches them (NodeEntry::deferred).
  const CandidateTurn* turn = nullptr;
  // Its first pass may remove only some nodes (ScaleDownOptions::may_remove): a candidate's pods
  // are read when a pass gets past the checks that read none (NodeEntry::deferred).
  bool pods_when_reached = false;
};

// One Plan call: the snapshot and everything about the nodes that does not depend on the pass,
// built once. A pass removes candidates one by one, each inside a snapshot layer that is
// committed when all its pods found a place and reverted otherwise.
class ScaleDownRun {
 public:
  explicit ScaleDownRun(const PlannerInput& input, const RunOptions& options = {});
  // Takes back what the run changed in the input's cluster model, if it used one.
  ~ScaleDownRun();
  ScaleDownRun(const ScaleDownRun&) = delete;
  ScaleDownRun& operator=(const ScaleDownRun&) = delete;

  PassResult RunPass(const PassOptions& options);
  // Where the next bounded run's turn starts (ChooseTurn), or "" when this one weighed every
  // candidate.
  const std::string& turn_ends_at() const { return turn_ends_at_; }
  // ScaleDownPlan::turn_left_out.
  bool turn_left_out() const { return turn_left_out_; }

  // Entry index of a node name (also of nodes being deleted), or kNoNode.
  NodeIndex Find(std::string_view name) const;
  const NodeEntry& entry(NodeIndex i) const { return entries_[i]; }
  const NodeFacts& Facts(NodeIndex i) const { return *node_facts_[i]; }
  double Threshold(const NodeEntry& e) const {
    return e.util.gpu ? config_.gpu_utilization_threshold : config_.utilization_threshold;
  }
  // The numbers of a node kept for its utilization, or nothing.
  std::optional<BusyNode> Busy(const NodeEntry& e) const {
    if (!e.busy) return std::nullopt;
    return BusyNode{e.util, Threshold(e)};
  }
  // A candidate's pods' verdicts (NodeEntry::weighed).
  const WeighedPods& Weighed(const NodeEntry& e) const { return weighed_[e.weighed]; }
  WeighedPods& Weighed(NodeEntry& e) { return weighed_[e.weighed]; }

 private:
  // The snapshot: the input's cluster model, forked and made the input's view (UseModel), or
  // one built from the input's nodes and pods (BuildSnapshot). Both leave by_name_ and entries_.
  ClusterSnapshot& ChooseSnapshot(const PlannerInput& input);
  void UseModel();
  void BuildSnapshot();
  bool OnModel() const { return &snapshot_ != &own_snapshot_; }
  NodeEntry& AddEntry(NodeIndex index, const model::Node* node);
  void AddPendingPods();
  void AddPods();
  // Each node's pods that move (`own`): when built, from the input as its pods go into the
  // snapshot; on the model, only counted here and read later (OwnPodsFromModel).
  void CollectOwnPods();
  // On the model, node `i`'s pods that move (`own`, in namespace/name order), read once, when the
  // node needs them: from the memo when it has them, else from the snapshot (and kept there).
  void OwnPodsFromModel(NodeIndex i);
  static bool ByKey(const model::Pod* a, const model::Pod* b);  // namespace/name order
  // `e`'s pods' facts (NodePods::own_facts), and with `blockers` its blocker and weighed training
  // pods.
  void AddFacts(NodeEntry& e, bool blockers);
  void WeighCandidate(NodeIndex i);
  // Candidate `i`'s pods that move: their facts, blockers and verdict (WeighedPods).
  void ReadCandidatePods(NodeIndex i);
  // Orders the candidates: those without pods to move first, then by utilization, then by name.
  void SortCandidates();
  // In a bounded run, once the candidates are in order: the ones not weighed leave the order and
  // stay, saying why.
  void TakeTurn();
  bool Bounded() const { return turn_ != nullptr && turn_->at_most > 0; }
  // Node `e`'s pods that move and their facts (NodePods; empty when none were read), and the
  // record to fill, made when first asked.
  const std::vector<const model::Pod*>& Own(const NodeEntry& e) const {
    return e.pods == NodeEntry::kNone ? kNoPods.own : node_pods_[e.pods].own;
  }
  const std::vector<uint32_t>& OwnFacts(const NodeEntry& e) const {
    return e.pods == NodeEntry::kNone ? kNoPods.own_facts : node_pods_[e.pods].own_facts;
  }
  NodePods& PodsOf(NodeEntry& e) {
    if (e.pods == NodeEntry::kNone) {
      e.pods = static_cast<uint32_t>(node_pods_.size());
      node_pods_.emplace_back();
    }
    return node_pods_[e.pods];
  }
  static const NodePods kNoPods;
  // Why managed node `e` stays, in words ("" when nothing but its utilization keeps it, or it is
  // a candidate), and setting them.
  std::string_view KeepWords(const NodeEntry& e) const {
    return e.keep == NodeEntry::kNone ? std::string_view() : keep_words_[e.keep];
  }
  void SetKeep(NodeEntry& e, std::string words);
  // Whether candidate `e` has pods to move, read or not yet (NodeEntry::deferred).
  bool HasPodsToMove(const NodeEntry& e) const { return !Own(e).empty() || e.deferred; }
  // The memo holds the candidate's pods that move, some, and `own` has not read them yet.
  static bool MemoHasPods(const NodeEntry& e) {
    return e.unread_pods > 0 && e.memo != nullptr && e.memo->own_read && !e.memo->facts.empty();
  }
  // Why the pod of `f` (a kMove pod of candidate `e`) may not be evicted, or ""; a running
  // training pod that consolidation weighs goes into its WeighedPods::training instead.
  // `kept`: where the memo keeps the pod's disruption for the passes at the same weigh time
  // (read when set, written when not), or nullptr without a memo.
  std::string PodBlocker(NodeEntry& e, PodFacts& f, std::optional<PodDisruption>* kept);
  // What the memo keeps of consolidation's weighing of `e` at this pass's weigh time, or nullptr.
  ScaleDownMemo::Node::Disruptions* KeptDisruptions(const NodeEntry& e) const;
  void WeighConsolidation(NodeEntry& e);
  // Expected remaining runtime of a pod that moves (facts index): its PodDisruption's when it is
  // a weighed training pod, else maxHorizon.
  Duration FactRemaining(uint32_t f) const;
  // How long managed node `n` runs anyway in this pass: its longest pod's expected remaining
  // runtime (maxHorizon for pods that are not weighed training pods), raised by the training pods
  // the pass moved onto it. Computed when first asked: only removals that evict training ask.
  Duration PassHorizon(NodeIndex n);
  // Candidate `c`'s pods were placed (touched_, to_move_): what their destinations cost for
  // running longer, recorded in extension_[c]; "" when the removal still pays.
  Why WeighExtension(NodeIndex c);
  // The replace move weighed for candidate `c` in this pass, or nullptr.
  const PassReplacement* ReplacementOf(NodeIndex c) const {
    auto it = replacement_.find(c);
    return it == replacement_.end() ? nullptr : &it->second;
  }
  // The verdict of candidate `c` before the extension: its replace move's when one was weighed in
  // this pass, else its WeighedPods::verdict.
  std::optional<ConsolidationVerdict> BaseVerdict(NodeIndex c) const {
    if (const PassReplacement* r = ReplacementOf(c)) return r->verdict;
    return Weighed(entries_[c]).verdict;
  }
  // BaseVerdict of candidate `c` with this pass's extension applied.
  std::optional<ConsolidationVerdict> PassVerdict(NodeIndex c) const;
  // Whether a verdict lets the removal go ahead in this pass: it pays, or it waits for a
  // checkpoint and the pass takes waiting nodes as removable.
  bool GoesAhead(const ConsolidationVerdict& v) const {
    return v.decision == ConsolidationDecision::kPays ||
           (waiting_is_removable_ && v.decision == ConsolidationDecision::kWaitForCheckpoint);
  }
  // The replace move (scale_down_replace.cc). Pools cheaper than some managed node, cheapest
  // first, and what they and the cluster hold now (nodes, upcoming ones, capacity).
  void InitReplacement();
  bool MayReplace(const NodeEntry& e) const {
    return replace_ && e.pool != nullptr &&
           cheaper_pools_.front()->price_per_hour < e.pool->price_per_hour && !ReplacementReady(e);
  }
  bool ReplacementReady(const NodeEntry& e) const { return Lists(replacement_ready_, e); }
  bool GroupReplacementReady(const NodeEntry& e) const {
    return Lists(replacement_group_ready_, e);
  }
  static bool Lists(const std::vector<std::string>* names, const NodeEntry& e) {
    return names != nullptr &&
           std::find(names->begin(), names->end(), e.node->name()) != names->end();
  }
  // Candidate `c`'s pods leftover_ fit on no node that stays: weighs replacing it with one node
  // of the cheapest pool that may grow and holds them (ReplacementOf(c)); "" when that pays, else
  // why not.
  Why Replace(NodeIndex c);
  // Why `pool` may not take one more node now (backoff, its max, cluster limits), or "".
  std::string GrowBlocker(const model::Pool& pool) const;
  // Whether an empty node of `pool` (with its DaemonSet pods) holds every pod of `pods` (facts
  // indices), by the scheduler's filters; "" when it does, else which pod does not fit and why.
  std::string Holds(const model::Pool& pool, const std::vector<uint32_t>& pods);
  // The replace move for several nodes, after the pass tried each candidate alone: `unplaced`
  // are the candidates it kept because their pods fit on no node that stays, in pass order. The
  // first group found whose new node is cheaper than its members together, holds all their pods,
  // and pays for every member goes into `removals`, all its members or none; returns them.
  static constexpr size_t kMaxGroup = 8;       // members of one group
  static constexpr size_t kMaxGroupSeeds = 4;  // candidates tried as a group's first member
  static constexpr size_t kGroupWindow = 16;   // candidates tried from each first member on
  std::vector<NodeIndex> ReplaceTogether(const std::vector<NodeIndex>& unplaced,
                                         const PassOptions& options, PassBudget& budget,
                                         std::vector<ScaleDown>& removals);
  // The members gathered from unplaced[seed] on, each joining while one new node still holds
  // them all, weighed; nothing when fewer than two join or a member's move does not pay.
  std::optional<GroupReplacement> GatherGroup(const std::vector<NodeIndex>& unplaced, size_t seed);
  // The cheapest pool priced below `below` that may grow and whose new node holds `pods`.
  const model::Pool* CheapestHolder(const std::vector<uint32_t>& pods, double below);
  void ComputePdbBudgets();
  // Covering PDB indices of a pod (PDBs of its namespace that select it).
  void CoveringPdbs(const model::Pod& pod, std::vector<uint32_t>& out) const;
  // The first pod of `e` whose eviction the remaining budgets forbid, as a reason; "" when all
  // may go, with `needed` holding the evictions per PDB.
  std::string PdbBlocker(const NodeEntry& e, const std::vector<int32_t>& remaining,
                         std::vector<std::pair<uint32_t, int32_t>>& needed) const;
  // Why a managed node is not a candidate judging by the node alone (being deleted, annotation,
  // delayAfterAdd), or "".
  std::string NodeKeep(NodeIndex i) const;
  void OrderDestinations();
  // A pass starts from the usable destinations and what the base state moved onto them.
  void ResetPass(Amounts& free, std::vector<Amounts>& contrib);
  PassBudget StartBudget() const;
  // Why candidate `e` stays before any simulation (pool min, a pod that may not be evicted, a
  // PDB, not unneeded long enough, a rate limit), or "".
  Why Blocker(const NodeEntry& e, const PassOptions& options, PassBudget& b) const;
  // Blocker for a deferred candidate: its pods are read only once the checks that read none let
  // it through (a busy node: the rate limits too). The same checks in another order: whether it
  // stays is the same; a busy node's Keep does not use the words, and any other node the pass may
  // remove is worded as Blocker words it.
  Why ReadPodsUnlessBlocked(NodeIndex c, const PassOptions& options, PassBudget& b);
  // The parts of Blocker: what the candidate's pods say (a pod that may not be evicted, a PDB, a
  // verdict that does not pay); and those that read no pod: the pool's minimum, the unneeded
  // time, the rate limits.
  Why PodsBlocker(const NodeEntry& e, PassBudget& b) const;
  std::string PoolMinBlocker(const NodeEntry& e, const PassBudget& b) const;
  std::string NotYetBlocker(const NodeEntry& e, const PassOptions& options) const;
  std::string RateLimitBlocker(const NodeEntry& e, const PassOptions& options, PassBudget& b) const;
  // Why candidate `c` stays in this pass, as the plan says it (`r`: the pass's words).
  Keep CandidateKeep(NodeIndex c, Why r) const;
  // Accounts the removal of `e` in the budget and describes it (without `describe`: its node,
  // pool and kind only).
  ScaleDown Remove(NodeIndex index, PassBudget& b, bool describe = true) const;
  // Removes candidate `c` inside a snapshot layer and moves its pods; commits and returns ""
  // when all of them found a place, else reverts and returns the reason.
  Why Simulate(NodeIndex c, std::vector<std::pair<std::string, std::string>>* moves, Amounts& free,
               std::vector<Amounts>& contrib);
  // Why candidate `c`'s pods (to_move_) cannot all move to the usable nodes, judging by their
  // count and total requests, or "" when they might.
  std::string PrecheckMove(NodeIndex c, bool was_usable, const Amounts& free,
                           const std::vector<Amounts>& contrib) const;
  // Takes back a Simulate of `c` that placed touched_ (and recorded moves from `recorded` on).
  void UndoSimulate(NodeIndex c, bool was_usable,
                    std::vector<std::pair<std::string, std::string>>* moves, size_t recorded);
  void SetUsable(NodeIndex n, bool usable) {
    if ((usable_[n] != 0) == usable) return;
    usable_[n] = usable ? 1 : 0;
    if (usable) {
      ++usable_count_;
    } else {
      --usable_count_;
    }
  }

  const PlannerInput& input_;
  const model::ScaleDownConfig& config_;
  const PoolNames pool_names_{*input_.config};  // for the pool of each node
  const bool evict_training_pods_;
  const CandidateTurn* const turn_;
  const bool pods_when_reached_;
  std::string turn_ends_at_;
  bool turn_left_out_ = false;
  // Running training pods are weighed (consolidation on, and not evicted regardless).
  const bool weigh_training_;
  // Input nodes by snapshot slot (entries of other slots have no node), and their slots in name
  // order (the first of duplicate names wins).
  std::vector<NodeEntry> entries_;
  std::vector<NodeIndex> by_name_;
  std::vector<const model::Node*> nodes_by_name_;  // the input's nodes, sorted, once
  bool model_as_is_ = false;        // on the model, and they are its live nodes (ModelNodes::as_is)
  std::vector<PodFacts> facts_;     // see NodePods::own_facts
  std::deque<NodePods> node_pods_;  // see NodeEntry::pods; grows, its records stay put
  std::vector<std::string> keep_words_;  // see NodeEntry::keep
  // By slot, for the slots of input nodes: the memo's facts of the node, or the run's own (kept in
  // own_node_facts_ when the memo does not hold them).
  std::vector<const NodeFacts*> node_facts_;
  std::deque<NodeFacts> own_node_facts_;
  std::vector<WeighedPods> weighed_;  // see NodeEntry::weighed
  ScaleDownMemo* memo_ = nullptr;     // on the model, the input's memo if any
  SlotPools* slot_pools_ = nullptr;   // on the model, the input's pools if any
  // Devices and claims (when the input has DRA objects), attached to snapshot_: a moved pod's
  // claims are allocated where it lands.
  std::unique_ptr<sched::DraState> dra_;
  ClusterSnapshot own_snapshot_;
  ClusterSnapshot& snapshot_;  // own_snapshot_, or the input model's, forked (OnModel)
  // Nodes that may receive pods: those that stay for sure first (name order), then candidates
  // latest-tried first, so moved pods land where they are least likely to move again.
  std::vector<NodeIndex> destinations_;
  std::vector<uint8_t> usable_;  // per node: may receive pods now
  size_t usable_count_ = 0;
  Placer placer_;
  // Per node: facts indices of pods placed on it by the simulation (base: from nodes being
  // deleted; a pass adds the pods of the candidates it removes).
  std::vector<std::vector<uint32_t>> base_moved_in_;
  std::vector<std::vector<uint32_t>> moved_in_;
  // Nodes whose moved_in_ may differ from base_moved_in_ (a pass's changes; before the first
  // pass, the nodes with base pods): what the next pass resets.
  std::vector<NodeIndex> moved_in_changed_;
  // Managed nodes per pool, those being deleted aside: what a pass's budget starts from.
  PoolCounts pool_size_;
  std::vector<PdbState> pdbs_;
  std::unordered_map<std::string_view, std::vector<uint32_t>> pdbs_by_namespace_;
  std::vector<NodeIndex> order_;  // candidates: empty first, then utilization, then name
  // Remaining runtimes of the weighed training pods among facts_ (by facts index; shorter than
  // facts_ when the last ones are not).
  std::vector<Duration> fact_remaining_;
  // Per pass: each node's horizon once asked (kUnknown before), and each removal's extension.
  static constexpr Duration kUnknown{-1};
  std::vector<Duration> horizon_;
  std::vector<double> extension_;
  // The replace move: on (scaleDown.consolidation.replace, and training pods are weighed rather
  // than evicted regardless); pools cheaper than the dearest managed node, cheapest first; per
  // pool its nodes (registered, not being deleted, and upcoming); the cluster's nodes and
  // capacity (for maxNodes and the resource limits).
  bool replace_ = false;
  // The replace move for several nodes: on with the move, when there is any pool.
  bool replace_together_ = false;
  std::vector<const model::Pool*> pools_by_price_;                     // every pool, cheapest first
  const std::vector<std::string>* replacement_ready_ = nullptr;        // this pass's
  const std::vector<std::string>* replacement_group_ready_ = nullptr;  // this pass's
  bool waiting_is_removable_ = false;                                  // this pass's
  std::vector<const model::Pool*> cheaper_pools_;
  PoolCounts pool_nodes_;  // pool_size_ and the upcoming nodes
  int32_t cluster_nodes_ = 0;
  LimitedCapacity cluster_capacity_{input_.config->limits};
  // Per pass: the replace move weighed for each candidate (kept when it did not pay, for the Keep),
  // and the new nodes the pass's removals asked for.
  std::unordered_map<NodeIndex, PassReplacement> replacement_;  // the few candidates weighed
  PoolCounts replacements_added_;
  model::Resources replacement_capacity_;
  // Scratch buffers reused across candidates.
  std::vector<uint32_t> to_move_;
  std::vector<NodeIndex> touched_;
  std::vector<uint32_t> placed_;    // facts index of each touched_ entry
  std::vector<uint32_t> leftover_;  // pods no node that stays holds (the replace move's)
  std::vector<uint32_t> covering_;
};

}  // namespace tidepool::planner::scale_down_detail
