// Consolidation's replace move (docs/consolidation.md): a candidate whose pods do not all fit on
// the nodes that stay may be replaced by one new node of a cheaper pool that takes the rest.
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
    if (e.pool == nullptr) continue;
    ++pool_nodes_[e.pool];
    dearest = std::max(dearest, e.pool->price_per_hour);
  }
  for (const model::Pool& pool : input_.config->pools) {
    auto it = input_.upcoming.find(pool.name);
    int32_t upcoming = it == input_.upcoming.end() ? 0 : it->second;
    pool_nodes_[&pool] += upcoming;
    cluster_nodes_ += upcoming;
    for (int32_t k = 0; k < upcoming; ++k) cluster_capacity_.Add(pool.template_node.capacity);
    if (pool.price_per_hour < dearest) cheaper_pools_.push_back(&pool);
  }
  std::stable_sort(
      cheaper_pools_.begin(), cheaper_pools_.end(), [](const model::Pool* a, const model::Pool* b) {
        return a->price_per_hour != b->price_per_hour ? a->price_per_hour < b->price_per_hour
                                                      : a->name < b->name;
      });
  replace_ = !cheaper_pools_.empty();
}

std::string ScaleDownRun::GrowBlocker(const model::Pool& pool) const {
  if (auto it = input_.backoff_until.find(pool.name);
      it != input_.backoff_until.end() && it->second > input_.now) {
    return fmt::format("pool {} in backoff until {}", pool.name, FormatRfc3339(it->second));
  }
  auto nodes = pool_nodes_.find(&pool);
  auto added = replacements_added_.find(&pool);
  int32_t size = (nodes == pool_nodes_.end() ? 0 : nodes->second) +
                 (added == replacements_added_.end() ? 0 : added->second);
  int32_t replacements = 0;
  for (const auto& [p, n] : replacements_added_) replacements += n;
  // The new node comes up before the old one goes: for a while the cluster has one more.
  auto limit = GrowthLimit(pool, size, input_.config->limits, cluster_nodes_ + replacements,
                           cluster_capacity_, replacement_capacity_);
  return limit ? limit->text : "";
}

std::string ScaleDownRun::HoldsLeftover(const model::Pool& pool) {
  model::Node node = pool.template_node;
  node.meta.name = "replacement-" + pool.name;
  std::deque<model::Pod> copies;  // unbound: the NodeName filter must not see the old node
  std::string why;
  snapshot_.Fork();
  const NodeIndex n = AddMadeUpNode(snapshot_, node);
  for (const model::Pod* d : DaemonSetPodsFor(node, input_.daemon_sets)) {
    (void)snapshot_.AddPod(d, n);
  }
  for (uint32_t f : leftover_) {
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
    if (why.empty()) why = HoldsLeftover(*pool);
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

}  // namespace tidepool::planner::scale_down_detail
