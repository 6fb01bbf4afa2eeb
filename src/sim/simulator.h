// The discrete-event simulator: the shipped decision loop and actuator in a simulated world (cloud,
// cluster, binder, workload, ledger; docs/simulator.md), and what a run costs and makes jobs wait.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/loop.h"
#include "base/error.h"
#include "base/time.h"
#include "model/pool.h"
#include "sim/sim_config.h"
#include "sim/trace.h"

namespace tidepool::sim {

// How far a run has come, for a progress display (SimInput::on_progress).
struct Progress {
  std::string_view run;  // the run's name in an evaluation ("tidepool", "ca-like", ...), or ""
  int64_t jobs_done = 0;
  int64_t jobs = 0;
  Duration simulated{};   // since SimInput::start
  Duration trace_span{};  // from SimInput::start to the last submit
  bool finished = false;  // the run's last call
};

// What one run is made of. The simulation starts at `start`; trace offsets are added to it.
struct SimInput {
  model::AutoscalerConfig config;
  SimConfig sim;
  std::vector<JobSpec> jobs;
  autoscaler::LoopOptions loop_options;
  Time start = DefaultStart();
  // Extra time after the last submit before the run is cut off.
  Duration horizon_after_last_submit = std::chrono::hours(24 * 7);
  // Record Summary::timeline (nodes per pool, pending pods, cost over time) for the report.
  bool record_timeline = false;
  // End the run when every job is done, without waiting for the cluster to shrink back to its
  // minimum (nodes are billed until then). For comparisons in which a policy keeps capacity on
  // purpose (warm nodes, pre-warming for bursts the trace no longer has), so the tail after the
  // trace counts for none of them.
  bool stop_when_jobs_done = false;
  // Called every few thousand simulated moments and once at the end of each run; results do not
  // depend on it (it sees the run, it does not change it).
  std::function<void(const Progress&)> on_progress;

  static Time DefaultStart();  // 2026-01-01T00:00:00Z
};

// One moment of a run, recorded when the number of nodes of a pool or of pending pods changed.
struct TimelinePoint {
  double hours = 0;        // since SimInput::start
  std::vector<int> nodes;  // alive (requested, booting or joined) instances per pool
  int64_t pending = 0;     // pods submitted and not running
  double cost = 0;         // billed so far
};

struct Timeline {
  std::vector<std::string> pools;  // the order of TimelinePoint::nodes (config order)
  std::vector<TimelinePoint> points;
};

// One restart an eviction caused (of a pod, or of a gang as a whole) and the progress it threw
// away; `simulate --losses FILE` lists them.
struct Loss {
  std::string pod;    // namespace/name (of a gang: the member whose eviction restarted it)
  Time at{};          // when
  Duration ran{};     // how long it had run since it last started
  Duration lost{};    // progress thrown away: what it ran since its last checkpoint
  double gpus = 0;    // GPUs of the pods that restart (of a gang: every member's)
  bool spot = false;  // its spot node was reclaimed (else a drain)
  double GpuHours() const { return Hours(lost) * gpus; }
};

// The result of a run (the summary keys of docs/simulator.md, plus a few more for people).
struct Summary {
  double cost = 0;                           // billed per second from request to deletion
  double lower_bound_cost = 0;               // clairvoyant fluid bound (LowerBoundCost)
  std::map<std::string, double> node_hours;  // per pool
  std::map<std::string, double> pool_cost;   // per pool
  double gpu_hours_paid = 0;
  double gpu_hours_used = 0;
  double wait_p50 = 0, wait_p95 = 0, wait_max = 0;  // seconds, jobs that got all pods running
  double wait_p95_gpu = 0;                          // the same, jobs asking for GPUs only
  int64_t gpu_jobs = 0;                             // jobs asking for GPUs
  std::map<std::string, double> wait_p95_gpu_by_namespace;  // the GPU p95 per job namespace
  int64_t jobs = 0;
  int64_t jobs_completed = 0;
  int64_t jobs_unfinished = 0;
  int64_t jobs_never_started = 0;         // never had all pods running (included in unfinished)
  int64_t jobs_never_ran_in_trace = 0;    // Alibaba pods that were never scheduled originally
  int64_t lower_bound_jobs_excluded = 0;  // jobs no pool can host
  int64_t evictions = 0;                  // pods evicted (scale-down drains and spot evictions)
  int64_t spot_evictions = 0;             // pods evicted because their spot node was reclaimed
  double work_lost_gpu_hours = 0;         // progress evictions threw away (since the checkpoint)
  int64_t restarts = 0;                   // evicted pods, and gangs restarted as a whole
  std::vector<Loss> losses;               // each restart; their GpuHours() add up to the above
  // Seconds: the longest a pod evicted by a drain (not a spot reclaim) was pending before it ran
  // again (with the replace move, rescheduling only: its new node was Ready first).
  double drain_wait_max = 0;
  // Gang jobs (of two pods or more) and their waits, the same way as wait_p50/p95.
  int64_t gang_jobs = 0;
  int64_t gang_jobs_started = 0;  // had all pods running at some point
  double wait_p50_gang = 0, wait_p95_gang = 0;
  // SimConfig::queue_gangs: ProvisioningRequests made for held gang jobs, those that failed, and
  // jobs Kueue's stand-in rejected after its retries (never started).
  int64_t provisioning_requests = 0;
  int64_t provisioning_requests_failed = 0;
  int64_t jobs_rejected = 0;
  int64_t scale_ups = 0;    // nodes requested by the loop
  int64_t scale_downs = 0;  // nodes deleted by the loop
  int64_t loop_events = 0;  // Kubernetes Events the loop emitted (ignored by the sim)
  int64_t steps = 0;        // Autoscaler::Step calls
  int64_t sim_events = 0;   // discrete events processed
  double simulated_hours = 0;
  bool hit_horizon = false;
  std::map<std::string, int> peak_nodes;  // most alive instances per pool at any moment
  std::vector<double> waits;              // seconds per job that got all pods running, sorted
  // A digest of every action the loop asked for, with its time: two runs with equal digests
  // made the same decisions at the same moments (tests compare runs with it).
  uint64_t action_digest = 0;
  Timeline timeline;  // with SimInput::record_timeline
};

// The clairvoyant fluid lower bound on cost: every job's replicas × duration, each replica
// priced at the cheapest pool whose template could host it, as the largest fraction of the
// pool's node shape it needs (cpu, memory, GPUs), with no boot delay and no idle time.
// `excluded` receives the number of jobs no pool can host (left out of the bound).
double LowerBoundCost(const model::AutoscalerConfig& config, const std::vector<JobSpec>& jobs,
                      int64_t* excluded);

// Runs the simulation to the end (all jobs done and the cluster back at its minimum) or to the
// horizon. Errors: a sim config naming unknown pools; with SimConfig::check_invariants, the first
// invariant violated (pool above max, a pod on a node that is not ready, a gang partly running,
// cost going down), naming the time and the object. `run_name` names the run in Progress.
Result<Summary> RunSimulation(const SimInput& input, std::string_view run_name = {});

}  // namespace tidepool::sim
