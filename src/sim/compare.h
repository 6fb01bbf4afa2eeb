// `simulate --compare`: the same trace and cloud model run under several autoscaling policies,
// each one a configuration of the one decision loop and its planner options, not new code.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/simulator.h"

namespace tidepool::sim {

// One policy's run.
struct PolicyRun {
  std::string name;         // "tidepool", "ca-like", "static"
  std::string description;  // one line for tables and the report
  Summary summary;
};

// tidepool's default policy: the config as written, default LoopOptions.
SimInput TidepoolPolicy(const SimInput& base);

// The Cluster Autoscaler's defaults on the same pools: 10 s scan interval, the least-waste
// expander alone (no priority, so no spot-first), unneededTime 10m, utilization thresholds 0.5,
// delayAfterAdd 10m, provisionTimeout 15m for every pool (the fallback waits for it), no gang
// awareness in scale-up and no second look at the new nodes it opened (compact_new_nodes off),
// running Job and training pods evictable by scale-down.
SimInput CaLikePolicy(const SimInput& base);

// A fixed cluster sized for the trace's peak: every pool starts with, and keeps, `peak` nodes
// (min = max = peak, from the most nodes the pool had at once under tidepool's policy, i.e.
// what the trace's busiest moment needed of it); scale-down is off. Pools missing from `peak`
// get 0 nodes.
SimInput StaticPolicy(const SimInput& base, const std::map<std::string, int>& peak);

// Runs tidepool, then ca-like and static (static needs tidepool's peaks), in that order.
// `base.loop_options` is the starting point for every policy. Errors: the first failed run.
Result<std::vector<PolicyRun>> RunComparison(const SimInput& base);

// `simulate --warm-eval`: the warm-capacity policies (pools[].warm) on the same trace, applied
// to every on-demand pool whose nodes have GPUs (spot capacity may not be there to keep warm):
//  - off: the config as written with every pool's warm settings removed and scale-down deleting
//    (tidepool's default);
//  - spare: warm.spareNodes 1;
//  - headroom: warm.headroom nvidia.com/gpu 4;
//  - predictive: warm.predictive with horizon 1h, waitValuePerGpuHour 4x the pool's price per
//    GPU-hour and maxCostPerDay 10% of the pool's daily cost in the `off` run (so pre-warming
//    can add at most ~10% to what the pool cost);
//  - predict-50: the same with maxCostPerDay 50% (a point further along the cost-wait frontier);
//  - deallocate: no warm capacity, but scaleDown.mode deallocate with maxStopped = max on every
//    pool whose nodes have GPUs (spot ones too): removed nodes are stopped and restarted.
// Every run stops when the trace's jobs are done (SimInput::stop_when_jobs_done), so the idle
// tail after the trace is billed to none. Runs them in that order. Errors: the first failed run.
Result<std::vector<PolicyRun>> RunWarmEvaluation(const SimInput& base);
SimInput WarmOffPolicy(const SimInput& base);

// One table, a row per warm policy: cost and its change against `off`, GPU-job wait p95 and its
// change, all-job wait p95, nodes added/removed.
std::string WarmEvaluationToText(const std::vector<PolicyRun>& runs);

// `simulate --queue-eval`: the same trace twice under tidepool's policy, gang jobs of two pods or
// more as they come (`pending`: their pods pending at submit) and held as Kueue holds them
// (`queued`: SimConfig::queue_gangs, admitted once a ProvisioningRequest for all their pods is
// Provisioned). Both stop when the trace's jobs are done. Errors: the first failed run.
Result<std::vector<PolicyRun>> RunQueueEvaluation(const SimInput& base);

// One table, a row per mode: cost and its change against `pending`, gang-job wait p50/p95 and the
// change of p95, all-job wait p95, gang jobs started, ProvisioningRequests made/failed, nodes
// added/removed.
std::string QueueEvaluationToText(const std::vector<PolicyRun>& runs);

// {"policies": [{"policy": name, "description": ..., <SummaryToJson keys>}, ...]}.
nlohmann::ordered_json ComparisonToJson(const std::vector<PolicyRun>& runs);

// One table, a row per policy: cost, cost / lower bound, wait p50/p95/max, GPU hours paid and
// used, jobs completed, evictions, nodes added/removed.
std::string ComparisonToText(const std::vector<PolicyRun>& runs);

}  // namespace tidepool::sim
