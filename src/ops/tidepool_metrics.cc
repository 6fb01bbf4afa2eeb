#include "ops/tidepool_metrics.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace tidepool::ops {
namespace {

double ToSeconds(Time t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

std::string CodeLabel(int http_status) {
  return http_status <= 0 ? std::string("none") : std::to_string(http_status);
}

bool IsError(int http_status) { return http_status <= 0 || http_status >= 400; }

}  // namespace

const std::vector<double>& DurationBuckets() {
  static const std::vector<double> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                               0.5,   1,      2.5,   5,    10,    30,   60};
  return kBuckets;
}

std::string_view EvictionResultName(EvictionResult r) {
  switch (r) {
    case EvictionResult::kEvicted:
      return "evicted";
    case EvictionResult::kNotFound:
      return "not_found";
    case EvictionResult::kBlockedByPdb:
      return "blocked_by_pdb";
    case EvictionResult::kError:
      return "error";
  }
  return "error";
}

EvictionResult EvictionResultOf(const Result<void>& result) {
  if (result) return EvictionResult::kEvicted;
  switch (result.error().code()) {
    case Error::Code::kNotFound:
      return EvictionResult::kNotFound;
    case Error::Code::kThrottled:
      return EvictionResult::kBlockedByPdb;
    default:
      return EvictionResult::kError;
  }
}

TidepoolMetrics::TidepoolMetrics(Registry& registry, std::string_view version)
    : registry_(&registry) {
  Registry& r = registry;
  r.AddGauge("tidepool_build_info", "tidepool's version; the value is always 1.", {"version"})
      ->Set({version}, 1);
  AddLoopGauges(r);
  AddPoolGauges(r);
  AddActionCounters(r);
  AddRequestMetrics(r);
}

void TidepoolMetrics::AddLoopGauges(Registry& r) {
  leader_ = r.AddGauge("tidepool_leader",
                       "1 while this replica holds the leader lease and runs the loop, else 0.");
  last_step_ = r.AddGauge("tidepool_last_step_timestamp_seconds",
                          "Unix time of the decision loop's last step (0 before the first).");
  pending_ =
      r.AddGauge("tidepool_pending_pods", "Pending pods the scale-up considered at the last step.");
  gated_ = r.AddGauge("tidepool_gated_pods",
                      "Pods without a node held by scheduling gates (spec.schedulingGates) at the "
                      "last step: the scale-up waits until their gates are removed.");
  unschedulable_ = r.AddGauge(
      "tidepool_unschedulable_pods",
      "Pending pods no scale-up can help, by reason category (a pod counts once per distinct "
      "category among its pools' reasons).",
      {"reason"});
  unneeded_ = r.AddGauge("tidepool_unneeded_nodes",
                         "Managed nodes found unneeded and waiting for scaleDown.unneededTime.");
}

void TidepoolMetrics::AddPoolGauges(Registry& r) {
  nodes_ = r.AddGauge("tidepool_nodes",
                      "Nodes per pool and state: ready, not_ready (registered, not ready yet), "
                      "upcoming (requested or starting) and removing (being drained or deleted).",
                      {"pool", "state"});
  pool_min_ =
      r.AddGauge("tidepool_pool_min_nodes", "Configured minimum size of the pool.", {"pool"});
  pool_max_ =
      r.AddGauge("tidepool_pool_max_nodes", "Configured maximum size of the pool.", {"pool"});
  pool_target_ = r.AddGauge("tidepool_pool_target_nodes",
                            "The pool's target size as the loop counts it.", {"pool"});
  pool_backoff_ =
      r.AddGauge("tidepool_pool_backoff",
                 "1 while the pool may not grow after a failed scale-up, else 0.", {"pool"});
  pool_backoff_until_ =
      r.AddGauge("tidepool_pool_backoff_until_timestamp_seconds",
                 "Unix time the pool's scale-up backoff ends (pools in backoff).", {"pool"});
  pool_stockout_ = r.AddGauge("tidepool_pool_stockout",
                              "1 when the provider reported no capacity for the pool at the last "
                              "step, else 0.",
                              {"pool"});
  pool_stopped_ =
      r.AddGauge("tidepool_pool_stopped_nodes",
                 "Stopped (deallocated) machines kept for a fast restart, per pool with "
                 "scaleDown.mode deallocate.",
                 {"pool"});
  pool_cost_ = r.AddGauge("tidepool_pool_estimated_cost_per_hour",
                          "Estimated cost per hour of the pool's nodes: max(target, registered + "
                          "removing) times the configured pricePerHour.",
                          {"pool"});
}

void TidepoolMetrics::AddActionCounters(Registry& r) {
  scale_ups_ = r.AddCounter("tidepool_scale_ups_total",
                            "Pool size increases requested from the provider.", {"pool", "reason"});
  scale_up_nodes_ =
      r.AddCounter("tidepool_scale_up_nodes_total", "Nodes requested by scale-ups.", {"pool"});
  scale_downs_ = r.AddCounter("tidepool_scale_downs_total",
                              "Nodes removed by scale-down, by reason (empty, underutilized).",
                              {"pool", "reason"});
  scale_down_failures_ =
      r.AddCounter("tidepool_scale_down_failures_total",
                   "Node removals rolled back (taint, eviction or deletion failed).", {"pool"});
  consolidations_ = r.AddCounter(
      "tidepool_consolidations_total",
      "Nodes removed although they ran training pods, because the savings paid for the work lost.",
      {"pool"});
  consolidation_work_lost_ =
      r.AddCounter("tidepool_consolidation_work_lost_gpu_hours_total",
                   "GPU-hours of unsaved training progress those removals threw away.", {"pool"});
  consolidation_savings_ = r.AddCounter(
      "tidepool_consolidation_expected_savings_total",
      "What those removals were expected to save (node price x horizon), in the config's price "
      "unit.",
      {"pool"});
  consolidation_replacements_ = r.AddCounter(
      "tidepool_consolidation_replacements_total",
      "Replace moves on nodes of the pool, by outcome: started (a node of a cheaper pool asked "
      "for) or abandoned (it was not Ready in time, or the move no longer fit or paid).",
      {"pool", "outcome"});
  evictions_ = r.AddCounter("tidepool_evictions_total",
                            "Pod eviction requests, by result (evicted, not_found, "
                            "blocked_by_pdb, error).",
                            {"result"});
  provisioning_ = r.AddCounter("tidepool_provisioning_requests_total",
                               "ProvisioningRequest conditions written, by class (check_capacity, "
                               "best_effort_atomic) and outcome (accepted, waiting, provisioned, "
                               "failed, booking_expired).",
                               {"class", "outcome"});
}

// Step and planning durations, then the Kubernetes and cloud API requests and skipped objects.
void TidepoolMetrics::AddRequestMetrics(Registry& r) {
  loop_duration_ = r.AddHistogram("tidepool_loop_duration_seconds",
                                  "Duration of one decision loop step, observation to actions.", {},
                                  DurationBuckets());
  unchanged_steps_ = r.AddCounter("tidepool_loop_unchanged_steps_total",
                                  "Loop steps skipped: nothing they read changed since a step "
                                  "that decided nothing.",
                                  {});
  planning_duration_ = r.AddHistogram("tidepool_planning_duration_seconds",
                                      "Duration of one planning pass, by phase (scale_up, "
                                      "scale_down).",
                                      {"phase"}, DurationBuckets());
  kube_requests_ = r.AddCounter(
      "tidepool_kube_api_requests_total",
      "Kubernetes API requests, by verb, resource and HTTP status (none: no response).",
      {"verb", "resource", "code"});
  kube_errors_ = r.AddCounter("tidepool_kube_api_errors_total",
                              "Kubernetes API requests that failed (status >= 400 or no response).",
                              {"verb", "resource", "code"});
  kube_duration_ = r.AddHistogram("tidepool_kube_api_request_duration_seconds",
                                  "Kubernetes API request latency (watches: until the stream "
                                  "opened).",
                                  {"verb"}, DurationBuckets());
  cloud_requests_ =
      r.AddCounter("tidepool_cloud_requests_total",
                   "Cloud provider API requests, by operation and HTTP status (none: no response).",
                   {"provider", "operation", "code"});
  cloud_errors_ = r.AddCounter("tidepool_cloud_errors_total",
                               "Cloud provider API requests that failed (status >= 400 or no "
                               "response).",
                               {"provider", "operation", "code"});
  cloud_duration_ = r.AddHistogram("tidepool_cloud_request_duration_seconds",
                                   "Cloud provider API request latency.", {"provider", "operation"},
                                   DurationBuckets());
  invalid_objects_ = r.AddCounter(
      "tidepool_invalid_objects_skipped_total",
      "Objects that could not be decoded and were left out of the cluster view, by kind.",
      {"kind"});
}

void TidepoolMetrics::Update(const autoscaler::Status& status,
                             const model::AutoscalerConfig& config) {
  last_step_->Set({}, status.last_step ? ToSeconds(*status.last_step) : 0);
  pending_->Set({}, status.pending_pods);
  gated_->Set({}, status.gated_pods);
  unneeded_->Set({}, static_cast<double>(status.unneeded.size()));
  SetUnschedulable(*status.unschedulable);

  std::map<std::string, int> removing;
  for (const autoscaler::RemovalStatus& r : status.removals) ++removing[r.pool];

  std::map<LabelValues, double> nodes, min, max, target, backoff, backoff_until, stockout, cost,
      stopped;
  for (const autoscaler::PoolStatus& p : status.pools) {
    int rm = removing.contains(p.name) ? removing[p.name] : 0;
    nodes[{p.name, "ready"}] = p.ready;
    nodes[{p.name, "not_ready"}] = std::max(0, p.registered - p.ready);
    nodes[{p.name, "upcoming"}] = p.upcoming;
    nodes[{p.name, "removing"}] = rm;
    min[{p.name}] = p.min;
    max[{p.name}] = p.max;
    target[{p.name}] = p.target;
    backoff[{p.name}] = p.backoff_until ? 1 : 0;
    if (p.backoff_until) backoff_until[{p.name}] = ToSeconds(*p.backoff_until);
    stockout[{p.name}] = p.stockout ? 1 : 0;
    if (p.deallocate) stopped[{p.name}] = p.stopped;
    const model::Pool* pool = config.FindPool(p.name);
    double price = pool ? pool->price_per_hour : 0;
    cost[{p.name}] = std::max(p.target, p.registered + rm) * price;
  }
  nodes_->Replace(std::move(nodes));
  pool_min_->Replace(std::move(min));
  pool_max_->Replace(std::move(max));
  pool_target_->Replace(std::move(target));
  pool_backoff_->Replace(std::move(backoff));
  pool_backoff_until_->Replace(std::move(backoff_until));
  pool_stockout_->Replace(std::move(stockout));
  pool_stopped_->Replace(std::move(stopped));
  pool_cost_->Replace(std::move(cost));
}

void TidepoolMetrics::SetUnschedulable(const std::vector<planner::Unschedulable>& pods) {
  std::map<LabelValues, double> counts;
  for (const planner::Unschedulable& u : pods) {
    std::set<std::string_view> categories;
    for (const auto& [pool, reason] : u.reasons) categories.insert(ReasonKindLabel(reason.kind));
    if (categories.empty()) categories.insert("other");
    for (std::string_view c : categories) counts[{std::string(c)}] += 1;
  }
  unschedulable_->Replace(std::move(counts));
}

void TidepoolMetrics::SetLeader(bool leader) { leader_->Set({}, leader ? 1 : 0); }

void TidepoolMetrics::RecordScaleUp(std::string_view pool, std::string_view reason, int nodes) {
  scale_ups_->Inc({pool, reason});
  if (nodes > 0) scale_up_nodes_->Inc({pool}, nodes);
}

void TidepoolMetrics::RecordScaleDown(std::string_view pool, std::string_view reason) {
  scale_downs_->Inc({pool, reason});
}

void TidepoolMetrics::RecordConsolidation(std::string_view pool,
                                          const planner::ConsolidationVerdict& v) {
  consolidations_->Inc({pool});
  consolidation_work_lost_->Inc({pool}, v.gpu_hours_lost);
  consolidation_savings_->Inc({pool}, v.savings);
}

void TidepoolMetrics::RecordReplacement(std::string_view pool, std::string_view outcome) {
  consolidation_replacements_->Inc({pool, outcome});
}

void TidepoolMetrics::RecordScaleDownFailure(std::string_view pool) {
  scale_down_failures_->Inc({pool});
}

void TidepoolMetrics::RecordEviction(EvictionResult result) {
  evictions_->Inc({EvictionResultName(result)});
}

void TidepoolMetrics::RecordProvisioning(std::string_view cls, std::string_view outcome) {
  provisioning_->Inc({cls, outcome});
}

void TidepoolMetrics::ObserveLoopDuration(double seconds) { loop_duration_->Observe({}, seconds); }

void TidepoolMetrics::RecordUnchangedStep() { unchanged_steps_->Inc({}); }

void TidepoolMetrics::ObservePlanningDuration(std::string_view phase, double seconds) {
  planning_duration_->Observe({phase}, seconds);
}

void TidepoolMetrics::RecordKubeRequest(std::string_view verb, std::string_view resource,
                                        int http_status, double seconds) {
  std::string code = CodeLabel(http_status);
  kube_requests_->Inc({verb, resource, code});
  if (IsError(http_status)) kube_errors_->Inc({verb, resource, code});
  kube_duration_->Observe({verb}, seconds);
}

void TidepoolMetrics::RecordCloudRequest(std::string_view provider, std::string_view operation,
                                         int http_status, double seconds) {
  std::string code = CodeLabel(http_status);
  cloud_requests_->Inc({provider, operation, code});
  if (IsError(http_status)) cloud_errors_->Inc({provider, operation, code});
  cloud_duration_->Observe({provider, operation}, seconds);
}

void TidepoolMetrics::RecordInvalidObject(std::string_view kind) { invalid_objects_->Inc({kind}); }

}  // namespace tidepool::ops
