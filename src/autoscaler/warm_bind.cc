// WarmPlanner::BindPlaceholders: warm placeholders bound to the pool's nodes for the scale-down
// simulation, so the nodes holding spare capacity and headroom are not unneeded.
#include <fmt/format.h>

#include <optional>

#include "autoscaler/warm_planner.h"

namespace tidepool::autoscaler {
namespace {

struct Host {
  std::string_view name;
  model::Resources free;
  bool busy = false;
};

// The pool's ready nodes that may hold placeholders, with their free room, in name order.
std::vector<Host> Hosts(const StepContext& ctx, const model::Pool& pool,
                        const std::function<bool(std::string_view)>& removing) {
  std::vector<Host> hosts;
  for (const auto& [name, p] : ctx.pool_of) {
    if (p != &pool || ctx.ClassOf(name) != NodeClass::kReady) continue;
    const model::Node& node = *ctx.nodes.at(name);
    if (removing(name) || node.unschedulable || HasTaint(node, planner::kToBeDeletedTaint)) {
      continue;
    }
    Host h{name, node.allocatable, false};
    if (auto load = ctx.loads.find(name); load != ctx.loads.end()) {
      load->second.requested.ForEach([&](model::ResourceId id, int64_t v) {
        h.free.Set(id, std::max<int64_t>(0, h.free.Get(id) - v));
      });
      h.busy = load->second.busy;
    }
    h.free.Set(model::kPods, 0);
    hosts.push_back(std::move(h));
  }
  return hosts;
}

// The untaken host the chunk fits best (least free of the pool's primary resource).
std::optional<size_t> BestFit(const std::vector<Host>& hosts, const std::vector<bool>& taken,
                              const model::Pool& pool, const model::Resources& chunk) {
  const model::ResourceId id = PrimaryResource(pool);
  std::optional<size_t> best;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (taken[i]) continue;
    bool fits = true;
    for (model::ResourceId r : pool.warm.headroom_set)
      if (hosts[i].free.Get(r) < chunk.Get(r)) fits = false;
    if (!fits) continue;
    if (!best || hosts[i].free.Get(id) < hosts[*best].free.Get(id)) best = i;
  }
  return best;
}

}  // namespace

std::map<std::string, std::string> WarmPlanner::BindPlaceholders(
    StepContext& ctx, planner::PlannerInput& in,
    const std::function<bool(std::string_view)>& removing) const {
  std::map<std::string, std::string> kept_for;
  const int32_t priority = config_.scale_up.expendable_priority_cutoff;
  for (const model::Pool& pool : config_.pools) {
    auto wit = ctx.warm.find(pool.name);
    if (wit == ctx.warm.end()) continue;
    const WarmPoolStep& wp = wit->second;
    std::vector<Host> hosts = Hosts(ctx, pool, removing);
    auto bind = [&](Host& h, std::string_view kind, int i, const model::Resources& req, bool whole,
                    std::string why) {
      ctx.warm_pods.push_back(MakePlaceholder(pool,
                                              fmt::format("warm-{}-{}-{}", pool.name, kind, i), req,
                                              whole, priority, std::string(h.name)));
      planner::AddUnmodelledPod(in, &ctx.warm_pods.back());
      kept_for[std::string(h.name)] = std::move(why);
    };
    // Whole-node placeholders on idle nodes (name order), then headroom where it fits best.
    int whole = wp.spare + wp.prewarm;
    std::vector<bool> taken(hosts.size(), false);
    for (size_t i = 0, k = 0; i < hosts.size() && static_cast<int>(k) < whole; ++i) {
      if (hosts[i].busy) continue;
      taken[i] = true;
      bool spare = static_cast<int>(k) < wp.spare;
      bind(hosts[i], spare ? "spare" : "prewarm", static_cast<int>(k), hosts[i].free, true,
           spare ? fmt::format("warm: a spare node of pool {} (warm.spareNodes {})", pool.name,
                               wp.spare)
                 : fmt::format("{}: held idle for it", wp.prewarm_reason));
      ++k;
    }
    for (size_t c = 0; c < wp.headroom.size(); ++c) {
      const model::Resources& chunk = wp.headroom[c];
      std::optional<size_t> best = BestFit(hosts, taken, pool, chunk);
      if (!best) break;
      Host& h = hosts[*best];
      bind(h, "headroom", static_cast<int>(c), chunk, false,
           fmt::format("warm: holds headroom of pool {} (warm.headroom {})", pool.name,
                       wp.headroom_words));
      for (model::ResourceId r : pool.warm.headroom_set) {
        h.free.Set(r, h.free.Get(r) - chunk.Get(r));
      }
    }
  }
  return kept_for;
}

}  // namespace tidepool::autoscaler
