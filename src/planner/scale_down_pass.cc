// A scale-down pass: candidates in order, each kept for a reason or removed in a snapshot layer
// once all its pods found a place.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "base/check.h"
#include "planner/scale_down_run.h"

namespace tidepool::planner::scale_down_detail {
namespace {

constexpr uint32_t kNotKept = UINT32_MAX;

std::string FormatAmount(const Amounts& a, size_t i) {
  switch (i) {
    case 0:
      return model::FormatAmount(model::kCpu, a[i]);
    case 1:
      return model::FormatAmount(model::kMemory, a[i]);
    default:
      return fmt::format("{}", a[i]);
  }
}

// "namespace/name" with one allocation (ObjectMeta::Key builds it in two steps).
std::string PodKey(const model::Pod& pod) {
  const std::string& ns = pod.meta.namespace_;
  const std::string& name = pod.meta.name;
  if (ns.empty()) return name;
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append(1, '/').append(name);
  return key;
}

}  // namespace

void ScaleDownRun::CoveringPdbs(const model::Pod& pod, std::vector<uint32_t>& out) const {
  out.clear();
  if (pdbs_.empty()) return;
  auto it = pdbs_by_namespace_.find(pod.meta.namespace_);
  if (it == pdbs_by_namespace_.end()) return;
  for (uint32_t i : it->second)
    if (pdbs_[i].pdb->Selects(pod.meta)) out.push_back(i);
}

std::string ScaleDownRun::PdbBlocker(const NodeEntry& e, const std::vector<int32_t>& remaining,
                                     std::vector<std::pair<uint32_t, int32_t>>& needed) const {
  needed.clear();
  if (pdbs_.empty()) return "";
  std::vector<uint32_t> covering;
  for (const model::Pod* pod : Own(e)) {
    CoveringPdbs(*pod, covering);
    for (uint32_t i : covering) {
      auto it =
          std::find_if(needed.begin(), needed.end(), [i](const auto& n) { return n.first == i; });
      if (it == needed.end()) it = needed.insert(needed.end(), {i, 0});
      ++it->second;
      if (it->second <= remaining[i]) continue;
      const PdbState& s = pdbs_[i];
      std::string why;
      if (s.allowed == 0) {
        why = "allows no disruptions now";
      } else if (remaining[i] < s.allowed) {
        why = fmt::format("allows {} disruption(s) and other removals in this pass use {}",
                          s.allowed, s.allowed - remaining[i]);
      } else {
        why = fmt::format("allows {} disruption(s) and draining this node needs more", s.allowed);
      }
      return fmt::format("pod {} is not evictable: PodDisruptionBudget {} {}", pod->Key(),
                         s.pdb->meta.Key(), why);
    }
  }
  return "";
}

Why ScaleDownRun::Simulate(NodeIndex c, std::vector<std::pair<std::string, std::string>>* moves,
                           Amounts& free, std::vector<Amounts>& contrib) {
  const NodeEntry& e = entries_[c];
  replacement_.erase(c);
  to_move_.assign(OwnFacts(e).begin(), OwnFacts(e).end());
  to_move_.insert(to_move_.end(), moved_in_[c].begin(), moved_in_[c].end());
  bool was_usable = usable_[c] != 0;
  // Why the pods cannot all move to nodes that stay; with the replace move, the ones that do not
  // go to one new node of a cheaper pool instead. A busy node's all go there, unless its
  // replacement is Ready: then it moves its pods like any candidate.
  const bool place = !e.replace_only || ReplacementReady(e);
  std::string cannot_move = place ? PrecheckMove(c, was_usable, free, contrib) : "";
  if (!cannot_move.empty() && !MayReplace(e)) return cannot_move;

  snapshot_.Fork();
  TIDEPOOL_CHECK(snapshot_.RemoveNode(e.node->name()).has_value());
  SetUsable(c, false);
  std::stable_sort(to_move_.begin(), to_move_.end(),
                   [this](uint32_t a, uint32_t b) { return BiggerThan(facts_[a], facts_[b]); });
  touched_.clear();
  placed_.clear();
  leftover_.clear();
  size_t recorded = moves ? moves->size() : 0;
  for (uint32_t f : to_move_) {
    NodeIndex n = place ? placer_.Find(facts_[f]) : kNoNode;
    if (n == kNoNode) {
      if (place && cannot_move.empty()) {
        cannot_move = fmt::format("pod {} cannot be moved: {}", facts_[f].pod->Key(),
                                  placer_.Diagnose(facts_[f]));
      }
      if (!MayReplace(e)) {
        UndoSimulate(c, was_usable, moves, recorded);
        return cannot_move;
      }
      leftover_.push_back(f);
      continue;
    }
    TIDEPOOL_CHECK(snapshot_.AddPod(facts_[f].pod, n).has_value());
    touched_.push_back(n);
    placed_.push_back(f);
    moved_in_[n].push_back(f);
    moved_in_changed_.push_back(n);
    if (moves) moves->emplace_back(facts_[f].pod->Key(), entries_[n].node->name());
  }
  if (!leftover_.empty()) {
    // Only pending pods the simulation put here fit nowhere else: that is scale-up's business,
    // not a reason for a new node in place of this one.
    bool own = std::any_of(leftover_.begin(), leftover_.end(),
                           [&](uint32_t f) { return facts_[f].pod->node_name == e.node->name(); });
    Why why = own ? Replace(c) : Why("the pods that fit nowhere else are pending pods");
    if (!why.empty()) {
      UndoSimulate(c, was_usable, moves, recorded);
      if (!own && !cannot_move.empty()) return cannot_move;
      if (!cannot_move.empty()) why.text = cannot_move + "; " + why.text;
      return why;
    }
    if (moves) {
      for (uint32_t f : leftover_) {
        moves->emplace_back(facts_[f].pod->Key(),
                            fmt::format("a new node of pool {}", ReplacementOf(c)->pool->name));
      }
    }
  }
  // A group's member was weighed with its share of the new node when that was asked for.
  if (Why reason = GroupReplacementReady(e) ? Why() : WeighExtension(c); !reason.empty()) {
    UndoSimulate(c, was_usable, moves, recorded);
    return reason;
  }
  snapshot_.Commit();
  moved_in_[c].clear();
  moved_in_changed_.push_back(c);
  if (const PassReplacement* r = ReplacementOf(c)) {
    const model::Pool* pool = r->pool;
    ++replacements_added_[pool];
    replacement_capacity_ += pool->template_node.capacity;
  }
  if (was_usable) {
    AddTo(free, contrib[c], -1);
    contrib[c] = {};
  }
  for (size_t i = 0; i < touched_.size(); ++i) {
    NodeIndex t = touched_[i];
    if (i > 0 && touched_[i - 1] == t) continue;  // unchanged since the previous entry
    AddTo(free, contrib[t], -1);
    contrib[t] = FreeOn(Facts(t), snapshot_.Get(t));
    AddTo(free, contrib[t], 1);
  }
  return {};
}

std::string ScaleDownRun::PrecheckMove(NodeIndex c, bool was_usable, const Amounts& free,
                                       const std::vector<Amounts>& contrib) const {
  if (to_move_.empty()) return "";
  const PodFacts& first = facts_[to_move_.front()];
  if (usable_count_ == (was_usable ? 1u : 0u)) {
    return fmt::format("pod {} cannot be moved: no other ready, schedulable node to move it to",
                       first.pod->Key());
  }
  // A necessary condition first: what the pods request in total must be free somewhere.
  Amounts need{};
  for (uint32_t f : to_move_) {
    const PodFacts& p = facts_[f];
    AddTo(need, {p.cpu, p.memory, 1, p.gpus}, 1);
  }
  Amounts available = free;
  if (was_usable) AddTo(available, contrib[c], -1);
  for (size_t r = 0; r < need.size(); ++r) {
    if (need[r] <= available[r]) continue;
    std::vector<const model::Pod*> pods;
    pods.reserve(to_move_.size());
    for (uint32_t f : to_move_) pods.push_back(facts_[f].pod);
    return fmt::format(
        "pods {} cannot be moved: they request {} {} in total and the other ready, "
        "schedulable nodes have {} free",
        JoinKeys(pods, 3), kAmountNames[r], FormatAmount(need, r), FormatAmount(available, r));
  }
  return "";
}

void ScaleDownRun::UndoSimulate(NodeIndex c, bool was_usable,
                                std::vector<std::pair<std::string, std::string>>* moves,
                                size_t recorded) {
  snapshot_.Revert();
  SetUsable(c, was_usable);
  for (auto it = touched_.rbegin(); it != touched_.rend(); ++it) moved_in_[*it].pop_back();
  if (moves) moves->resize(recorded);
}

Duration ScaleDownRun::PassHorizon(NodeIndex n) {
  if (horizon_[n] != kUnknown) return horizon_[n];
  const NodeEntry& e = entries_[n];
  ScaleDownMemo::Node::Disruptions* kept = KeptDisruptions(e);
  if (kept != nullptr && kept->horizon) return horizon_[n] = *kept->horizon;
  OwnPodsFromModel(n);
  const model::ConsolidationConfig& c = config_.consolidation;
  Duration h{};
  for (const model::Pod* pod : Own(e)) {
    if (!ConsolidationWeighs(*pod)) {
      h = c.max_horizon;
      break;
    }
    Result<PodDisruption> d = DisruptionOf(*pod, *e.node, e.pool->price_per_hour, c,
                                           input_.runtime_hints, WeighTime(input_.now));
    h = std::max(h, d ? d->remaining : c.max_horizon);
  }
  if (kept != nullptr) kept->horizon = h;
  return horizon_[n] = h;
}

Why ScaleDownRun::WeighExtension(NodeIndex c) {
  if (!BaseVerdict(c)) return {};
  // The longest-running pod each destination takes, against how long it runs anyway.
  std::vector<std::pair<NodeIndex, Duration>> longest;
  for (size_t i = 0; i < touched_.size(); ++i) {
    Duration r = FactRemaining(placed_[i]);
    auto it = std::find_if(longest.begin(), longest.end(),
                           [&](const auto& l) { return l.first == touched_[i]; });
    if (it == longest.end()) it = longest.insert(longest.end(), {touched_[i], r});
    it->second = std::max(it->second, r);
  }
  double extension = 0;
  for (const auto& [n, r] : longest) {
    const model::Pool* pool = entries_[n].pool;
    if (pool == nullptr || r <= PassHorizon(n)) continue;
    extension += pool->price_per_hour * Hours(r - PassHorizon(n));
  }
  extension_[c] = extension;
  std::optional<ConsolidationVerdict> v = PassVerdict(c);
  if (!GoesAhead(*v)) return Why::Verdict();
  for (const auto& [n, r] : longest) {
    if (entries_[n].pool != nullptr) horizon_[n] = std::max(PassHorizon(n), r);
  }
  return {};
}

std::optional<ConsolidationVerdict> ScaleDownRun::PassVerdict(NodeIndex c) const {
  std::optional<ConsolidationVerdict> v = BaseVerdict(c);
  if (!v || extension_[c] == 0) return v;
  v->extension = extension_[c];
  if (!Pays(*v)) v->decision = ConsolidationDecision::kDoesNotPay;
  return v;
}

void ScaleDownRun::ResetPass(Amounts& free, std::vector<Amounts>& contrib) {
  for (NodeIndex n : destinations_) usable_[n] = 1;
  usable_count_ = destinations_.size();
  for (NodeIndex i : moved_in_changed_) moved_in_[i] = base_moved_in_[i];
  moved_in_changed_.clear();
  horizon_.assign(entries_.size(), kUnknown);
  extension_.assign(entries_.size(), 0);
  replacement_.clear();
  replacements_added_.Clear();
  replacement_capacity_ = {};
  placer_.Reset();
  for (NodeIndex n : destinations_) {
    contrib[n] = FreeOn(Facts(n), snapshot_.Get(n));
    AddTo(free, contrib[n], 1);
  }
}

PassBudget ScaleDownRun::StartBudget() const {
  PassBudget b(pool_size_);
  b.pdb_remaining.resize(pdbs_.size());
  for (size_t i = 0; i < pdbs_.size(); ++i) b.pdb_remaining[i] = pdbs_[i].allowed;
  return b;
}

Why ScaleDownRun::Blocker(const NodeEntry& e, const PassOptions& options, PassBudget& b) const {
  if (std::string r = PoolMinBlocker(e, b); !r.empty()) return r;
  if (Why r = PodsBlocker(e, b); !r.empty()) return r;
  if (std::string r = NotYetBlocker(e, options); !r.empty()) return r;
  return RateLimitBlocker(e, options, b);
}

Why ScaleDownRun::ReadPodsUnlessBlocked(NodeIndex c, const PassOptions& options, PassBudget& b) {
  const NodeEntry& e = entries_[c];
  if (std::string r = PoolMinBlocker(e, b); !r.empty()) return r;
  if (std::string r = NotYetBlocker(e, options); !r.empty()) return r;
  if (!e.replace_only) {
    // Deferred for a bound or for may_remove (RunOptions): the pods first, as Blocker words it.
    ReadCandidatePods(c);
    if (Why r = PodsBlocker(e, b); !r.empty()) return r;
    return RateLimitBlocker(e, options, b);
  }
  if (std::string r = RateLimitBlocker(e, options, b); !r.empty()) return r;
  ReadCandidatePods(c);
  return PodsBlocker(e, b);
}

Why ScaleDownRun::PodsBlocker(const NodeEntry& e, PassBudget& b) const {
  const WeighedPods& w = Weighed(e);
  if (!w.blocker.empty()) return w.blocker;
  if (std::string r = PdbBlocker(e, b.pdb_remaining, b.needed); !r.empty()) return r;
  // A busy node's removal is weighed at its replacement's price (Replace), until that is Ready.
  bool replace_only = e.replace_only && !ReplacementReady(e);
  if (w.verdict && !GoesAhead(*w.verdict) && !replace_only) return Why::Verdict();
  return {};
}

std::string ScaleDownRun::PoolMinBlocker(const NodeEntry& e, const PassBudget& b) const {
  if (b.pool_size[e.pool] > e.pool->min) return {};
  return fmt::format("pool {} at min {}", e.pool->name, e.pool->min);
}

std::string ScaleDownRun::NotYetBlocker(const NodeEntry& e, const PassOptions& options) const {
  if (!options.may_remove || !*options.may_remove || (*options.may_remove)(*e.node)) return {};
  std::string r;
  if (options.not_yet_reason && *options.not_yet_reason) r = (*options.not_yet_reason)(*e.node);
  return r.empty() ? std::string(kDefaultNotYet) : r;
}

std::string ScaleDownRun::RateLimitBlocker(const NodeEntry& e, const PassOptions& options,
                                           PassBudget& b) const {
  if (!options.rate_limit) return {};
  if (!HasPodsToMove(e) && b.empty_removed >= config_.max_empty_bulk_delete) {
    return fmt::format("maxEmptyBulkDelete {} reached in this pass", config_.max_empty_bulk_delete);
  }
  if (HasPodsToMove(e) && b.non_empty_removed[e.pool] >= config_.max_non_empty_per_pool) {
    // Every later candidate of the pool stays for this: worded once per pool and pass.
    std::string& words = b.pool_limit_words[e.pool];
    if (words.empty()) {
      words = fmt::format("maxNonEmptyPerPool {} reached for pool {} in this pass",
                          config_.max_non_empty_per_pool, e.pool->name);
    }
    return words;
  }
  return {};
}

ScaleDown ScaleDownRun::Remove(NodeIndex index, PassBudget& b, bool describe) const {
  const NodeEntry& e = entries_[index];
  const std::vector<const model::Pod*>& own = Own(e);
  bool empty = own.empty();
  --b.pool_size[e.pool];
  if (empty) {
    ++b.empty_removed;
  } else {
    ++b.non_empty_removed[e.pool];
  }
  for (const auto& [pdb, count] : b.needed) b.pdb_remaining[pdb] -= count;
  ScaleDown sd;
  sd.node = Facts(index).name;
  sd.pool = e.pool->name;
  sd.kind = empty                 ? RemovalKind::kEmpty
            : ReplacementReady(e) ? RemovalKind::kReplaced
                                  : RemovalKind::kUnderutilized;
  if (!describe) return sd;
  sd.evict.reserve(own.size());
  for (const model::Pod* p : own) sd.evict.push_back(PodKey(*p));
  if (!std::is_sorted(sd.evict.begin(), sd.evict.end()))
    std::sort(sd.evict.begin(), sd.evict.end());
  sd.utilization = e.util;
  sd.threshold = Threshold(e);
  sd.consolidation = PassVerdict(index);
  if (const PassReplacement* r = ReplacementOf(index)) {
    sd.replacement_pool = r->pool->name;
    // Pending pods the simulation put on the node go along, but are not the node's to evict.
    for (uint32_t f : r->pods) {
      const model::Pod& pod = *facts_[f].pod;
      if (pod.node_name == sd.node) sd.replacement_pods.push_back(PodKey(pod));
    }
    std::sort(sd.replacement_pods.begin(), sd.replacement_pods.end());
  }
  return sd;
}

Keep ScaleDownRun::CandidateKeep(NodeIndex c, Why r) const {
  const NodeEntry& e = entries_[c];
  // A busy node that no replacement takes stays for its utilization, as without the move.
  if (e.replace_only && ReplacementOf(c) != nullptr) {
    // Weighed, and the numbers (or the extension) keep it.
    return Keep{Facts(c).name, "replace: " + r.text, Busy(e), ShareVerdict(PassVerdict(c)),
                r.verdict};
  }
  if (e.replace_only) return Keep{Facts(c).name, std::string(KeepWords(e)), Busy(e)};
  // Kept before its pods were read (NodeEntry::deferred): no verdict to share.
  if (e.weighed == NodeEntry::kNotWeighed) return Keep{Facts(c).name, std::move(r.text)};
  return Keep{Facts(c).name, std::move(r.text), {}, ShareVerdict(PassVerdict(c)), r.verdict};
}

PassResult ScaleDownRun::RunPass(const PassOptions& options) {
  PassResult out;
  replacement_ready_ = options.replacement_ready;
  replacement_group_ready_ = options.replacement_group_ready;
  waiting_is_removable_ = options.waiting_is_removable;
  if (options.restore) snapshot_.Fork();
  Amounts free{};
  std::vector<Amounts> contrib(entries_.size());
  ResetPass(free, contrib);
  PassBudget budget = StartBudget();
  // The candidates that stay, in the order tried, and where each slot's Keep is among them (a few
  // bytes per node: most nodes are not candidates); every managed node's Keep goes out in name
  // order at the end.
  std::vector<Keep> kept;
  std::vector<uint32_t> kept_at(options.names_only ? 0 : entries_.size(), kNotKept);
  std::vector<NodeIndex> unplaced;  // for the replace move of several nodes
  for (NodeIndex c : order_) {
    const NodeEntry& e = entries_[c];
    Why r = e.deferred ? ReadPodsUnlessBlocked(c, options, budget) : Blocker(e, options, budget);
    if (r.empty()) {
      r = Simulate(c, options.record == c ? &out.moves : nullptr, free, contrib);
      if (!r.empty() && replace_together_ && moved_in_[c].empty() && !ReplacementReady(e))
        unplaced.push_back(c);
    }
    if (!r.empty()) {
      if (!options.names_only) {
        kept_at[c] = static_cast<uint32_t>(kept.size());
        kept.push_back(CandidateKeep(c, std::move(r)));
      }
      continue;
    }
    out.plan.scale_downs.push_back(Remove(c, budget, /*describe=*/!options.names_only));
  }
  for (NodeIndex c : ReplaceTogether(unplaced, options, budget, out.plan.scale_downs))
    if (!options.names_only) kept_at[c] = kNotKept;
  if (options.restore) snapshot_.Revert();
  if (options.names_only) return out;

  out.plan.keep.reserve(by_name_.size() - out.plan.scale_downs.size());
  for (NodeIndex i : by_name_) {
    const NodeEntry& e = entries_[i];
    if (kept_at[i] != kNotKept) {
      out.plan.keep.push_back(std::move(kept[kept_at[i]]));
    } else if (e.pool != nullptr && !e.candidate) {
      // Made in place: most managed nodes of a busy cluster stay, at every pass.
      Keep& k = out.plan.keep.emplace_back();
      k.node = Facts(i).name;
      k.text = KeepWords(e);
      k.busy = Busy(e);
      if (e.waits_turn) k.waits_turn = static_cast<uint32_t>(turn_->at_most);
    }
  }
  return out;
}

}  // namespace tidepool::planner::scale_down_detail
