// Consolidation's replace move (docs/consolidation.md): a candidate whose pods do not all fit on
// the nodes that stay may be replaced by one new node of a cheaper pool that takes the rest; and
// several such candidates by one new node that is cheaper than all of them together.
#include <fmt/format.h>

#include <algorithm>
#include <deque>

#include "base/check.h"
#include "planner/made_up_node.h"
#include "planner/reason.h"
#include "planner/scale_down_run.h"
#include "sched/fit.h"

namespace tidepool::planner::scale_down_detail {

void ScaleDownRun::InitReplacement() {
  if (!config_.consolidation.replace || evict_training_pods_) return;
  double dearest = -1;
  for (const NodeEntry& e : entries_) {
    if (e.node == nullptr || e.being_deleted) continue;
    ++cluster_nodes_;
    cluster_capacity_.Add(e.node->capacity);
    if (e.pool != nullptr) dearest = std::max(dearest, e.pool->price_per_hour);
  }
  pool_nodes_ = pool_size_;  // the managed nodes that stay, counted by the constructor
  for (const model::Pool& pool : input_.config->pools) {
    auto it = input_.upcoming.find(pool.name);
    int32_t upcoming = it == input_.upcoming.end() ? 0 : it->second;
    pool_nodes_[&pool] += upcoming;
    cluster_nodes_ += upcoming;
    for (int32_t k = 0; k < upcoming; ++k) cluster_capacity_.Add(pool.template_node.capacity);
    pools_by_price_.push_back(&pool);
  }
  std::stable_sort(pools_by_price_.begin(), pools_by_price_.end(),
                   [](const model::Pool* a, const model::Pool* b) {
                     return a->price_per_hour != b->price_per_hour
                                ? a->price_per_hour < b->price_per_hour
                                : a->name < b->name;
                   });
  for (const model::Pool* pool : pools_by_price_)
    if (pool->price_per_hour < dearest) cheaper_pools_.push_back(pool);
  replace_ = !cheaper_pools_.empty();
  replace_together_ = !pools_by_price_.empty();
}

std::string ScaleDownRun::GrowBlocker(const model::Pool& pool) const {
  if (auto it = input_.backoff_until.find(pool.name);
      it != input_.backoff_until.end() && it->second > input_.now) {
    return fmt::format("pool {} in backoff until {}", pool.name, FormatRfc3339(it->second));
  }
  const int32_t size = pool_nodes_[&pool] + replacements_added_[&pool];
  // The new node comes up before the old one goes: for a while the cluster has one more.
  auto limit =
      GrowthLimit(pool, size, input_.config->limits, cluster_nodes_ + replacements_added_.Sum(),
                  cluster_capacity_, replacement_capacity_);
  return limit ? limit->text : "";
}

std::string ScaleDownRun::Holds(const model::Pool& pool, const std::vector<uint32_t>& pods) {
  model::Node node = pool.template_node;
  node.meta.name = "replacement-" + pool.name;
  std::deque<model::Pod> copies;  // unbound: the NodeName filter must not see the old node
  std::string why;
  snapshot_.Fork();
  const NodeIndex n = AddMadeUpNode(snapshot_, node);
  for (const model::Pod* d : DaemonSetPodsFor(node, input_.daemon_sets)) {
    (void)snapshot_.AddPod(d, n);
  }
  for (uint32_t f : pods) {
    const model::Pod& pod = *facts_[f].pod;
    if (!pod.resource_claims().empty()) {
      why = fmt::format("pod {} has resource claims, which the replace move does not allocate",
                        pod.Key());
      break;
    }
    model::Pod& copy = copies.emplace_back(pod);
    copy.node_name.clear();
    sched::FitResult fit = sched::FitChecker(copy, snapshot_).Check(n);
    if (!fit.fits()) {
      why = fmt::format("pod {} does not fit a node of pool {}: {}", pod.Key(), pool.name,
                        fit.reason);
      break;
    }
    TIDEPOOL_CHECK(snapshot_.AddPod(&copy, n).has_value());
  }
  snapshot_.Revert();
  return why;
}

Why ScaleDownRun::Replace(NodeIndex c) {
  const NodeEntry& e = entries_[c];
  std::vector<std::string> refused;  // why the cheaper pools do not do, cheapest first
  for (const model::Pool* pool : cheaper_pools_) {
    if (pool->price_per_hour >= e.pool->price_per_hour) break;
    std::string why = GrowBlocker(*pool);
    if (why.empty()) why = Holds(*pool, leftover_);
    if (!why.empty()) {
      refused.push_back(std::move(why));
      continue;
    }
    // The cheapest pool that holds them saves the most: the horizon and work lost are the same.
    ReplacementPrice price{pool->name, pool->price_per_hour};
    PassReplacement& r = replacement_[c] = PassReplacement{};
    r.pool = pool;
    r.pods = leftover_;
    r.verdict = Weigh(Weighed(e).training, Weighed(e).other_pods, e.pool->price_per_hour,
                      config_.consolidation, &price);
    if (!GoesAhead(r.verdict)) return Why::Verdict();
    return {};
  }
  if (refused.empty()) return Why("no cheaper pool to replace the node with");
  constexpr size_t kShown = 3;
  std::string out = "no cheaper pool's new node takes them: ";
  for (size_t i = 0; i < refused.size() && i < kShown; ++i) out += (i ? "; " : "") + refused[i];
  if (refused.size() > kShown) out += fmt::format("; and {} more pool(s)", refused.size() - kShown);
  return out;
}

const model::Pool* ScaleDownRun::CheapestHolder(const std::vector<uint32_t>& pods, double below) {
  Amounts need{};
  for (uint32_t f : pods) AddTo(need, {facts_[f].cpu, facts_[f].memory, 1, facts_[f].gpus}, 1);
  for (const model::Pool* pool : pools_by_price_) {
    if (pool->price_per_hour >= below) break;
    // Their total requests first: most pools are ruled out without a fit check per pod.
    const model::Resources& a = pool->template_node.allocatable;
    if (need[0] > a.cpu_milli() || need[1] > a.memory() || need[2] > a.pods() ||
        need[3] > a.gpus()) {
      continue;
    }
    if (GrowBlocker(*pool).empty() && Holds(*pool, pods).empty()) return pool;
  }
  return nullptr;
}

std::optional<GroupReplacement> ScaleDownRun::GatherGroup(const std::vector<NodeIndex>& unplaced,
                                                          size_t seed) {
  GroupReplacement g;
  const size_t end = std::min(unplaced.size(), seed + kGroupWindow);
  for (size_t i = seed; i < end && g.members.size() < kMaxGroup; ++i) {
    const NodeEntry& e = entries_[unplaced[i]];
    std::vector<uint32_t> pods = g.pods;
    pods.insert(pods.end(), OwnFacts(e).begin(), OwnFacts(e).end());
    const double sum = g.price_sum + e.pool->price_per_hour;
    const model::Pool* pool = nullptr;
    if (!g.members.empty()) {
      pool = CheapestHolder(pods, sum);
      if (pool == nullptr) continue;  // this one does not join; a later one may
    }
    g.members.push_back(unplaced[i]);
    g.pods = std::move(pods);
    g.price_sum = sum;
    g.pool = pool;
  }
  if (g.members.size() < 2) return std::nullopt;
  // Each member is weighed as a replace move at its share of the new node's price (in proportion
  // to its own price); the group goes only when every member's move pays.
  for (NodeIndex c : g.members) {
    const NodeEntry& e = entries_[c];
    const double price = e.pool->price_per_hour;
    ReplacementPrice share{g.pool->name, g.pool->price_per_hour * price / g.price_sum};
    ConsolidationVerdict v =
        Weigh(Weighed(e).training, Weighed(e).other_pods, price, config_.consolidation, &share);
    if (!GoesAhead(v)) return std::nullopt;
    g.verdicts.push_back(std::move(v));
  }
  return g;
}

std::vector<NodeIndex> ScaleDownRun::ReplaceTogether(const std::vector<NodeIndex>& unplaced,
                                                     const PassOptions& options, PassBudget& budget,
                                                     std::vector<ScaleDown>& removals) {
  if (!replace_together_ || unplaced.size() < 2) return {};
  for (size_t seed = 0; seed + 1 < unplaced.size() && seed < kMaxGroupSeeds; ++seed) {
    std::optional<GroupReplacement> g = GatherGroup(unplaced, seed);
    if (!g) continue;
    // Every member must still be removable with what the pass used since it was tried (pool
    // minimums, PodDisruptionBudgets, rate limits): all of them go, or none. The group is one move:
    // it counts once against maxNonEmptyPerPool in each pool it drains.
    PassBudget b = budget;
    std::vector<ScaleDown> out;
    for (size_t i = 0; i < g->members.size(); ++i) {
      const NodeIndex c = g->members[i];
      const model::Pool* pool = entries_[c].pool;
      b.non_empty_removed[pool] = budget.non_empty_removed[pool];
      if (!Blocker(entries_[c], options, b).empty()) break;
      out.push_back(Remove(c, b));  // its verdict and replacement are set below
    }
    if (out.size() != g->members.size()) continue;
    // All its pods go to the new node (Remove described a single move tried earlier, if any).
    for (size_t i = 0; i < g->members.size(); ++i) {
      out[i].consolidation = g->verdicts[i];
      out[i].replacement_pool = g->pool->name;
      out[i].replacement_pods = out[i].evict;
    }
    std::vector<std::string> names;
    for (const ScaleDown& sd : out) names.push_back(sd.node);
    for (ScaleDown& sd : out) {
      sd.replacement_group = names;
      removals.push_back(std::move(sd));
    }
    // The pass's last move: nothing after it asks what the pass's new nodes take.
    budget = std::move(b);
    return g->members;
  }
  return {};
}

}  // namespace tidepool::planner::scale_down_detail
