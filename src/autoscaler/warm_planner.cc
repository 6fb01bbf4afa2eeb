#include "autoscaler/warm_planner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sched/fit.h"

namespace tidepool::autoscaler {

constexpr std::string_view kWarmNamespace = "tidepool-warm";

model::ResourceId PrimaryResource(const model::Pool& pool) {
  if (pool.template_node.allocatable.gpus() > 0) {
    return model::InternResource(model::kNvidiaGpu);
  }
  return model::kCpu;
}

double WarmUnits(model::ResourceId id, int64_t amount) {
  return id == model::kCpu ? static_cast<double>(amount) / 1000.0 : static_cast<double>(amount);
}

std::string_view WarmUnitWord(model::ResourceId id) {
  return id == model::kCpu ? "CPU cores" : model::ResourceName(id);
}

model::Pod MakePlaceholder(const model::Pool& pool, std::string name, const model::Resources& req,
                           bool whole, int32_t priority, std::string node) {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = std::string(kWarmNamespace);
  p.meta.annotations[std::string(planner::kWarmPoolAnnotation)] = pool.name;
  if (whole) p.meta.annotations[std::string(planner::kWarmWholeNodeAnnotation)] = "true";
  p.node_selector[std::string(model::kLabelPool)] = pool.name;
  for (const model::Taint& t : pool.template_node.taints) {
    p.tolerations.push_back({t.key, model::TolerationOp::kExists, "", t.effect, std::nullopt});
  }
  model::Container c;
  c.name = "warm";
  req.ForEach([&](model::ResourceId id, int64_t v) {
    if (id != model::kPods && v > 0) c.requests.Set(id, v);
  });
  p.containers.push_back(std::move(c));
  p.priority = priority;
  p.node_name = std::move(node);
  p.phase = p.node_name.empty() ? model::PodPhase::kPending : model::PodPhase::kRunning;
  p.Finalize();
  return p;
}

WarmPlanner::WarmPlanner(const model::AutoscalerConfig& config) : config_(config) {
  for (const model::Pool& p : config_.pools) {
    if (p.warm.Any()) warm_[p.name];
  }
}

bool WarmPlanner::HasPredictive() const {
  for (const model::Pool& p : config_.pools)
    if (p.warm.predictive.enabled) return true;
  return false;
}

void WarmPlanner::LearnBoot(const std::vector<PoolTracker::Arrival>& arrivals) {
  for (const PoolTracker::Arrival& a : arrivals) {
    auto ws = warm_.find(a.pool);
    // A restart takes a minute or two: it says nothing of how long a new node boots.
    if (ws == warm_.end() || a.restart) continue;
    std::optional<Duration>& boot = ws->second.boot_estimate;
    boot = boot ? (*boot + a.took) / 2 : a.took;
  }
}

Duration WarmPlanner::BootEstimate(const model::Pool& pool) const {
  if (auto it = warm_.find(pool.name); it != warm_.end() && it->second.boot_estimate) {
    return *it->second.boot_estimate;
  }
  return pool.boot_delay.value_or(config_.provider.boot_delay.value_or(std::chrono::minutes(10)));
}

void WarmPlanner::Update(StepContext& ctx, bool scan, const PlannedPools& planned,
                         const PoolTracker& pools,
                         const std::function<bool(std::string_view)>& removing) {
  if (warm_.empty()) return;
  std::map<std::string_view, double> demand;
  ComputeLoads(ctx, planned, demand);
  for (const model::Pool& pool : config_.pools) {
    auto wit = warm_.find(pool.name);
    if (wit == warm_.end()) continue;
    WarmState& ws = wit->second;
    WarmPoolStep& wp = ctx.warm[pool.name];
    SizePool(ctx, pool, wp);
    ws.demand = demand.contains(pool.name) ? demand[pool.name] : 0;
    if (pool.warm.predictive.enabled) {
      ws.profile.Observe(ctx.now, ws.demand);
      double expected = ws.demand + PendingUnits(ctx, pool, planned);
      expected += FreeUnits(ctx, pool, removing);
      PlanPrewarm(ctx, pool, ws, expected, scan, pools.InBackoff(pool.name, ctx.now));
    }
    AddPlaceholders(ctx, pool, wp);
  }
}

void WarmPlanner::ComputeLoads(StepContext& ctx, const PlannedPools& planned,
                               std::map<std::string_view, double>& demand) const {
  for (const model::Pod* pod : ctx.obs.pods) {
    if (pod->node_name.empty() || pod->IsTerminal()) continue;
    auto pool = ctx.pool_of.find(pod->node_name);
    if (pool == ctx.pool_of.end() || !warm_.contains(pool->second->name)) continue;
    NodeLoad& load = ctx.loads[pool->first];
    load.requested += pod->requests;
    if (!MustLeave(*pod)) continue;
    load.busy = true;
    model::ResourceId id = PrimaryResource(*pool->second);
    demand[pool->second->name] += WarmUnits(id, pod->requests.Get(id));
  }
  for (const model::Pod* pod : ctx.pending) {
    if (planned.empty()) break;
    auto it = planned.find(pod->Key());
    if (it == planned.end()) continue;
    const model::Pool* pool = config_.FindPool(it->second);
    if (pool == nullptr) continue;
    model::ResourceId id = PrimaryResource(*pool);
    demand[pool->name] += WarmUnits(id, pod->requests.Get(id));
  }
}

// What one idle node of the pool offers pods (the template less its DaemonSets), the spare
// nodes, and the headroom in as few placeholders as keep each within one node.
void WarmPlanner::SizePool(StepContext& ctx, const model::Pool& pool, WarmPoolStep& wp) const {
  model::Resources room = pool.template_node.allocatable;
  for (const model::Pod* d : planner::DaemonSetPodsFor(pool.template_node, ctx.obs.daemon_sets)) {
    d->requests.ForEach([&](model::ResourceId id, int64_t v) {
      room.Set(id, std::max<int64_t>(0, room.Get(id) - v));
    });
  }
  room.Set(model::kPods, 0);
  wp.whole_request = room;
  wp.spare = pool.warm.spare_nodes;
  if (pool.warm.headroom_set.empty()) return;
  int64_t parts = 1;
  for (model::ResourceId id : pool.warm.headroom_set) {
    int64_t per_node = std::max<int64_t>(1, room.Get(id));
    parts = std::max(parts, (pool.warm.headroom.Get(id) + per_node - 1) / per_node);
  }
  model::Resources chunk;
  std::vector<std::string> words;
  for (model::ResourceId id : pool.warm.headroom_set) {
    int64_t h = pool.warm.headroom.Get(id);
    chunk.Set(id, (h + parts - 1) / parts);
    words.push_back(fmt::format("{} {}", model::ResourceName(id), model::FormatAmount(id, h)));
  }
  wp.headroom.assign(static_cast<size_t>(parts), chunk);
  wp.headroom_words = fmt::format("{}", fmt::join(words, ", "));
}

double WarmPlanner::PendingUnits(const StepContext& ctx, const model::Pool& pool,
                                 const PlannedPools& planned) const {
  model::ResourceId id = PrimaryResource(pool);
  double units = 0;
  for (const model::Pod* pod : ctx.pending) {
    if (planned.contains(pod->Key())) continue;  // counted in the demand already
    int64_t amount = pod->requests.Get(id);
    if (amount > 0 && sched::CheckNodeStatic(*pod, pool.template_node).fits()) {
      units += WarmUnits(id, amount);
    }
  }
  return units;
}

// Free room on the pool's busy nodes takes part of a burst without any new node.
double WarmPlanner::FreeUnits(const StepContext& ctx, const model::Pool& pool,
                              const std::function<bool(std::string_view)>& removing) const {
  model::ResourceId id = PrimaryResource(pool);
  double units = 0;
  for (const auto& [name, p] : ctx.pool_of) {
    if (p != &pool || ctx.ClassOf(name) != NodeClass::kReady) continue;
    if (removing(name) || HasTaint(*ctx.nodes.at(name), planner::kToBeDeletedTaint)) continue;
    auto load = ctx.loads.find(name);
    if (load == ctx.loads.end() || !load->second.busy) continue;
    int64_t free = ctx.nodes.at(name)->allocatable.Get(id) - load->second.requested.Get(id);
    units += WarmUnits(id, std::max<int64_t>(0, free));
  }
  return units;
}

void WarmPlanner::AddPlaceholders(StepContext& ctx, const model::Pool& pool,
                                  const WarmPoolStep& wp) const {
  const int32_t priority = config_.scale_up.expendable_priority_cutoff;
  auto add = [&](std::string_view kind, int i, const model::Resources& req, bool whole) {
    ctx.warm_pods.push_back(MakePlaceholder(pool, fmt::format("warm-{}-{}-{}", pool.name, kind, i),
                                            req, whole, priority));
    ctx.placeholders.push_back(&ctx.warm_pods.back());
  };
  for (int i = 0; i < wp.spare; ++i) add("spare", i, wp.whole_request, true);
  for (int i = 0; i < wp.prewarm; ++i) add("prewarm", i, wp.whole_request, true);
  for (size_t i = 0; i < wp.headroom.size(); ++i) {
    add("headroom", static_cast<int>(i), wp.headroom[i], false);
  }
}

std::string WarmPlanner::AdjustScaleUp(StepContext& ctx, planner::ScaleUp& su, int upcoming,
                                       int target, int max) {
  const WarmPoolStep& wp = ctx.warm.at(su.pool);
  // Spare and headroom placeholders fit upcoming nodes: while the pool has some, more warm
  // nodes wait for them (a guard against a template larger than the real nodes). New pre-warm
  // nodes approved in this Step may go.
  int allowed = upcoming > 0 ? wp.approved : su.warm_add;
  if (su.warm_add > allowed) {
    su.add -= su.warm_add - allowed;
    su.warm_add = allowed;
  }
  std::vector<std::string> why;
  if (wp.spare > 0) why.push_back(fmt::format("warm: spareNodes {}", wp.spare));
  if (!wp.headroom.empty()) why.push_back(fmt::format("warm: headroom {}", wp.headroom_words));
  if (wp.prewarm > 0) why.push_back(wp.prewarm_reason);
  std::string words = fmt::format("{}", fmt::join(why, "; "));
  std::string reason =
      su.warm_add == su.add ? words : fmt::format("{}; +{} for {}", su.reason, su.warm_add, words);
  if (su.warm_add > 0) {
    WarmState& ws = warm_.at(su.pool);
    ws.reason =
        fmt::format("{}: added {} node(s) at {}", words, su.warm_add, FormatRfc3339(ctx.now));
    ctx.actions.push_back(
        Event{EventObject::kStatus, "", EventReason::kWarmScaleUp,
              fmt::format("pool {} {}->{} (max: {}): {} warm node(s): {}", su.pool, target,
                          target + su.add, max, su.warm_add, words),
              false, su.pool});
  }
  return reason;
}

void WarmPlanner::SetUnmet(const std::map<std::string, std::string>& unmet) {
  for (auto& [name, ws] : warm_) {
    auto it = unmet.find(name);
    ws.unmet = it == unmet.end() ? "" : it->second;
  }
}

}  // namespace tidepool::autoscaler
