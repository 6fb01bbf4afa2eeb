// The metrics tidepool exports on /metrics, with Prometheus naming (tidepool_ prefix, units in
// names, _total counters): gauges derived from the loop's Status, counters the controller bumps.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/status.h"
#include "base/error.h"
#include "model/pool.h"
#include "ops/metrics.h"
#include "planner/decision.h"

namespace tidepool::ops {

// Bucket bounds (seconds) of the loop, planning and request duration histograms: 1 ms to 60 s.
const std::vector<double>& DurationBuckets();

// What an eviction request came to, for tidepool_evictions_total{result}.
enum class EvictionResult {
  kEvicted,       // 2xx
  kNotFound,      // the pod was gone already (counts as evicted for the loop)
  kBlockedByPdb,  // 429: a PodDisruptionBudget allows no disruption now
  kError,         // anything else (5xx, transport)
};
std::string_view EvictionResultName(EvictionResult r);
// The result as the eviction's Result<void> reports it (kNotFound / kThrottled error codes).
EvictionResult EvictionResultOf(const Result<void>& result);

// The tidepool metric set, registered in `registry` at construction (once per registry).
//
// Thread-safe: every method may be called from any thread (the loop thread, informer and
// request threads) while /metrics is scraped. Label values passed in should come from bounded
// sets (pool names, verbs, resources, codes, kinds); never pod names or free text.
//
// Families (see docs/install.md for the full list with help texts):
//   tidepool_build_info{version}                             gauge, always 1
//   tidepool_leader                                           gauge 0/1
//   tidepool_last_step_timestamp_seconds                      gauge
//   tidepool_pending_pods                                     gauge
//   tidepool_gated_pods                                       gauge
//   tidepool_unschedulable_pods{reason}                       gauge
//   tidepool_unneeded_nodes                                   gauge
//   tidepool_nodes{pool,state}      state: ready, not_ready, upcoming, removing
//   tidepool_pool_min_nodes{pool}, tidepool_pool_max_nodes{pool}, tidepool_pool_target_nodes{pool}
//   tidepool_pool_backoff{pool}                               gauge 0/1
//   tidepool_pool_backoff_until_timestamp_seconds{pool}       gauge, pools in backoff only
//   tidepool_pool_stockout{pool}                              gauge 0/1
//   tidepool_pool_stopped_nodes{pool}                         gauge (scaleDown.mode deallocate)
//   tidepool_pool_estimated_cost_per_hour{pool}               gauge, in the config's price unit
//   tidepool_scale_ups_total{pool,reason}, tidepool_scale_up_nodes_total{pool}
//   tidepool_scale_downs_total{pool,reason}, tidepool_scale_down_failures_total{pool}
//   tidepool_consolidations_total{pool}, tidepool_consolidation_work_lost_gpu_hours_total{pool},
//   tidepool_consolidation_expected_savings_total{pool}
//   tidepool_consolidation_replacements_total{pool,outcome}  outcome: started, abandoned
//   tidepool_evictions_total{result}
//   tidepool_provisioning_requests_total{class,outcome}
//   tidepool_loop_duration_seconds                            histogram
//   tidepool_loop_unchanged_steps_total                       counter
//   tidepool_planning_duration_seconds{phase}                 histogram, scale_up | scale_down
//   tidepool_kube_api_requests_total{verb,resource,code}
//   tidepool_kube_api_errors_total{verb,resource,code}
//   tidepool_kube_api_request_duration_seconds{verb}          histogram
//   tidepool_cloud_requests_total{provider,operation,code}
//   tidepool_cloud_errors_total{provider,operation,code}
//   tidepool_cloud_request_duration_seconds{provider,operation} histogram
//   tidepool_invalid_objects_skipped_total{kind}
class TidepoolMetrics {
 public:
  TidepoolMetrics(Registry& registry, std::string_view version);

  // Recomputes every Status-derived gauge (pools, nodes, backoffs, cost, pending, unschedulable,
  // unneeded) from one Status. Series of pools no longer in the Status are dropped. Cost per pool
  // is max(target, registered + removing) x pricePerHour of the pool in `config`.
  void Update(const autoscaler::Status& status, const model::AutoscalerConfig& config);
  // Recomputes tidepool_unschedulable_pods from the last scale-up plan: each pod counts once under
  // every distinct category among its per-pool reasons.
  void SetUnschedulable(const std::vector<planner::Unschedulable>& pods);
  void SetLeader(bool leader);

  // One increase of `pool` by `nodes` nodes. `reason` is a short category, e.g. "pending_pods",
  // "gang" or "min_size".
  void RecordScaleUp(std::string_view pool, std::string_view reason, int nodes);
  // A node removed (deleted) from `pool`; `reason` from planner::RemovalKindName.
  void RecordScaleDown(std::string_view pool, std::string_view reason);
  // A node removed although it ran training pods, because it paid: its work lost and savings.
  void RecordConsolidation(std::string_view pool, const planner::ConsolidationVerdict& v);
  // Consolidation's replace move on a node of `pool`: "started" or "abandoned".
  void RecordReplacement(std::string_view pool, std::string_view outcome);
  // A removal rolled back (taint, eviction or deletion failed).
  void RecordScaleDownFailure(std::string_view pool);
  void RecordEviction(EvictionResult result);
  // One ProvisioningRequest condition written: `cls` from model::ProvisioningClassLabel,
  // `outcome` from model::ProvisioningOutcomeLabel.
  void RecordProvisioning(std::string_view cls, std::string_view outcome);

  void ObserveLoopDuration(double seconds);
  // A loop step skipped: nothing it reads changed since a step that decided nothing.
  void RecordUnchangedStep();
  // `phase`: "scale_up" or "scale_down".
  void ObservePlanningDuration(std::string_view phase, double seconds);

  // One Kubernetes API request: `verb` as the API names it (get, list, watch, create, patch,
  // update, delete), `resource` plural (pods, nodes, pods/eviction, leases), `http_status` the
  // response's status, 0 when there was no response (connect error, timeout). Status >= 400 or 0
  // also counts as an error.
  void RecordKubeRequest(std::string_view verb, std::string_view resource, int http_status,
                         double seconds);
  // One cloud provider request (ARM for Azure): `operation` names the call without resource
  // names, e.g. "GET virtualMachineScaleSets" (cloud/azure ArmOperationName); `http_status` as
  // for RecordKubeRequest.
  void RecordCloudRequest(std::string_view provider, std::string_view operation, int http_status,
                          double seconds);
  // An object from the API server or a state file that could not be decoded and was skipped.
  void RecordInvalidObject(std::string_view kind);

  Registry& registry() { return *registry_; }

 private:
  // The metric families, registered in the order /metrics lists them.
  void AddLoopGauges(Registry& r);      // leader, last step, pending, unschedulable, unneeded
  void AddPoolGauges(Registry& r);      // nodes per state and the pool gauges
  void AddActionCounters(Registry& r);  // scale-ups, scale-downs, evictions, provisioning
  void AddRequestMetrics(Registry& r);  // durations, API and cloud requests, skipped objects

  Registry* registry_;
  Gauge* leader_;
  Gauge* last_step_;
  Gauge* pending_;
  Gauge* gated_;
  Gauge* unschedulable_;
  Gauge* unneeded_;
  Gauge* nodes_;
  Gauge* pool_min_;
  Gauge* pool_max_;
  Gauge* pool_target_;
  Gauge* pool_backoff_;
  Gauge* pool_backoff_until_;
  Gauge* pool_stockout_;
  Gauge* pool_stopped_;
  Gauge* pool_cost_;
  Counter* scale_ups_;
  Counter* scale_up_nodes_;
  Counter* scale_downs_;
  Counter* scale_down_failures_;
  Counter* evictions_;
  Counter* provisioning_;
  Counter* consolidations_;
  Counter* consolidation_work_lost_;
  Counter* consolidation_savings_;
  Counter* consolidation_replacements_;
  Histogram* loop_duration_;
  Counter* unchanged_steps_;
  Histogram* planning_duration_;
  Counter* kube_requests_;
  Counter* kube_errors_;
  Histogram* kube_duration_;
  Counter* cloud_requests_;
  Counter* cloud_errors_;
  Histogram* cloud_duration_;
  Counter* invalid_objects_;
};

}  // namespace tidepool::ops
