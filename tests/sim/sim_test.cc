// Tests of the simulator: determinism, a hand-computed run, invariants under spot evictions and
// stockouts, the loop's skip of unchanged passes, the policy comparison, the HTML report, GPU
// sharing, and the trace and sim-config readers' errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kube/config/autoscaler_config.h"
#include "sim/compare.h"
#include "sim/kueue_queue.h"
#include "sim/losses.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/sim_config.h"
#include "sim/simulator.h"
#include "sim/summary.h"
#include "sim/trace.h"
#include "sim/workload.h"

namespace tidepool::sim {
namespace {

using ::testing::HasSubstr;

model::AutoscalerConfig LoadSeedConfig() {
  auto c = kube::config::LoadAutoscalerConfig(std::string(TIDEPOOL_SOURCE_DIR) +
                                              "/examples/seed/config.yaml");
  EXPECT_TRUE(c.has_value()) << c.error().message();
  return *c;
}

std::string RunBuiltin(uint64_t seed, const SimConfig* extra = nullptr) {
  SimInput in;
  in.config = LoadSeedConfig();
  if (extra) in.sim = *extra;
  in.sim.seed = seed;
  in.sim.check_invariants = true;
  in.jobs = BuiltinScenario(seed);
  auto s = RunSimulation(in);
  EXPECT_TRUE(s.has_value()) << s.error().message();
  if (!s) return "";
  return SummaryToJson(*s).dump();
}

TEST(SimulatorTest, SameSeedSameJson) {
  std::string a = RunBuiltin(1);
  std::string b = RunBuiltin(1);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, RunBuiltin(2));
}

// The decision loop skips a Step whose observation version is that of an earlier Step that
// decided nothing (LoopOptions::skip_unchanged). The runs with and without the shortcut must make
// the same decisions at the same moments (action digest) and end with the same summary.
void ExpectSameWithAndWithoutSkip(SimInput in, const std::string& what) {
  in.loop_options.skip_unchanged = true;
  auto fast = RunSimulation(in);
  ASSERT_TRUE(fast.has_value()) << what << ": " << fast.error().message();
  in.loop_options.skip_unchanged = false;
  auto slow = RunSimulation(in);
  ASSERT_TRUE(slow.has_value()) << what << ": " << slow.error().message();
  EXPECT_NE(fast->action_digest, 0u) << what;
  EXPECT_EQ(fast->action_digest, slow->action_digest) << what;
  EXPECT_EQ(SummaryToJson(*fast).dump(2), SummaryToJson(*slow).dump(2)) << what;
  EXPECT_EQ(fast->waits, slow->waits) << what;
}

TEST(SimulatorTest, SkippingUnchangedPassesChangesNoDecision) {
  for (uint64_t seed : {1, 2, 5}) {
    SimInput in;
    in.config = LoadSeedConfig();
    in.sim.seed = seed;
    in.sim.check_invariants = true;
    in.jobs = BuiltinScenario(seed);
    ExpectSameWithAndWithoutSkip(in, "builtin seed " + std::to_string(seed));
    ExpectSameWithAndWithoutSkip(CaLikePolicy(in), "ca-like seed " + std::to_string(seed));
    // A pass that weighs one candidate and moves the turn on is not a quiet one.
    in.config.scale_down.candidates_per_pass = 1;
    ExpectSameWithAndWithoutSkip(in, "one candidate per pass, seed " + std::to_string(seed));
  }
  // Stockout windows (which open without an event), spot evictions and checkpoints.
  auto sc = ParseSimConfig(R"(
seed: 7
checkpointEvery: 30m
pools:
  gpuheavy-spot: {evictionsPerNodeHour: 0.3, stockouts: [[2h, 10h], [20h, 30h]]}
  gpupool-spot: {evictionsPerNodeHour: 0.5, stockouts: [[0s, 6h]]}
)",
                           "stress.yaml");
  ASSERT_TRUE(sc.has_value()) << sc.error().message();
  SimInput in;
  in.config = LoadSeedConfig();
  in.sim = *sc;
  in.jobs = BuiltinScenario(3);
  ExpectSameWithAndWithoutSkip(in, "stress");
}

// The simulator steps the loop when the live controller would: at once for an urgent change (a
// pod waiting for a node, a node added or gone), else at the loop's wakeups and scans. A pod that
// finishes is not urgent (controller::InformerClusterReader): ten pods ending a second apart
// within one scan interval take no more Steps than ten ending together.
TEST(SimulatorTest, APodFinishingWaitsForTheNextScan) {
  auto steps = [](int64_t apart) -> int64_t {
    std::string csv =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time\n";
    for (int k = 0; k < 10; ++k)
      csv += "pod-" + std::to_string(k) + ",1000,1024,0,0,,LS,Running,0," +
             std::to_string(1800 + apart * k) + ",0\n";
    auto jobs = ParseTrace(csv, "finishes.csv");
    EXPECT_TRUE(jobs.has_value()) << jobs.error().message();
    if (!jobs) return -1;
    SimInput in;
    in.config = LoadSeedConfig();
    in.jobs = *jobs;
    auto s = RunSimulation(in);
    EXPECT_TRUE(s.has_value()) << s.error().message();
    if (!s) return -1;
    EXPECT_EQ(s->jobs_completed, 10);
    return s->steps;
  };
  const int64_t together = steps(0);
  const int64_t a_second_apart = steps(1);
  ASSERT_GT(together, 0);
  EXPECT_LE(a_second_apart, together + 1) << "together: " << together << " Steps";
}

// The first 600 pods of the Alibaba trace (weeks of long-running pods on many pools).
TEST(SimulatorTest, SkippingUnchangedPassesOnTheAlibabaTrace) {
  std::string path =
      std::string(TIDEPOOL_SHARED_DIR) + "/traces/alibaba-gpu-v2023/openb_pod_list_default.csv";
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  std::string text, line;
  for (int i = 0; i < 601 && std::getline(f, line); ++i) text += line + "\n";
  auto jobs = ParseTrace(text, "alibaba-head.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  auto config = kube::config::LoadAutoscalerConfig(std::string(TIDEPOOL_SOURCE_DIR) +
                                                   "/examples/alibaba/config.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  SimInput in;
  in.config = *config;
  in.jobs = *jobs;
  // Keep the run (and the reference run without the shortcut) short: pods of at most 4 days.
  for (JobSpec& j : in.jobs) j.duration = std::min<Duration>(j.duration, std::chrono::hours(96));
  ExpectSameWithAndWithoutSkip(in, "alibaba head");
}

// SimInput::on_progress sees the run without changing it: the calls count jobs up to all of
// them, simulated time only grows, the last call says finished, and the decisions are the same.
TEST(SimulatorTest, ProgressIsReportedWithoutChangingTheRun) {
  SimInput in;
  in.config = LoadSeedConfig();
  in.jobs = BuiltinScenario(1);
  auto quiet = RunSimulation(in);
  ASSERT_TRUE(quiet.has_value()) << quiet.error().message();
  std::vector<Progress> seen;
  in.on_progress = [&](const Progress& p) { seen.push_back(p); };
  auto watched = RunSimulation(in, "tidepool");
  ASSERT_TRUE(watched.has_value()) << watched.error().message();
  EXPECT_EQ(watched->action_digest, quiet->action_digest);
  ASSERT_GE(seen.size(), 2u);  // the built-in scenario runs for more than 4096 rounds
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].run, "tidepool");
    EXPECT_EQ(seen[i].jobs, static_cast<int64_t>(in.jobs.size()));
    EXPECT_EQ(seen[i].finished, i + 1 == seen.size());
    if (i == 0) continue;
    EXPECT_GE(seen[i].jobs_done, seen[i - 1].jobs_done);
    EXPECT_GE(seen[i].simulated, seen[i - 1].simulated);
  }
  EXPECT_EQ(seen.back().jobs_done, seen.back().jobs);
  EXPECT_GT(seen.back().trace_span, Duration{0});
}

TEST(SimulatorTest, BuiltinScenarioFinishesEveryJob) {
  SimInput in;
  in.config = LoadSeedConfig();
  in.sim.check_invariants = true;
  in.jobs = BuiltinScenario(1);
  auto s = RunSimulation(in);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->jobs_completed, s->jobs);
  EXPECT_EQ(s->jobs_unfinished, 0);
  EXPECT_FALSE(s->hit_horizon);
  EXPECT_GE(s->cost, s->lower_bound_cost);
  EXPECT_GT(s->gpu_hours_used, 0);
  EXPECT_LE(s->gpu_hours_used, s->gpu_hours_paid);
  EXPECT_EQ(s->scale_ups, s->scale_downs);  // back at the minimum at the end
}

// Spot evictions, stockouts and checkpoints with the invariant checks on after every event.
TEST(SimulatorTest, InvariantsHoldUnderSpotEvictionsAndStockouts) {
  auto sc = ParseSimConfig(R"(
seed: 7
checkpointEvery: 30m
pools:
  gpuheavy-spot: {evictionsPerNodeHour: 0.3, stockouts: [[2h, 10h], [20h, 30h]]}
  gpupool-spot: {evictionsPerNodeHour: 0.5, stockouts: [[0s, 6h]]}
)",
                           "stress.yaml");
  ASSERT_TRUE(sc.has_value()) << sc.error().message();
  for (uint64_t seed : {1, 2, 3}) {
    SimInput in;
    in.config = LoadSeedConfig();
    in.sim = *sc;
    in.sim.seed = seed;
    in.sim.check_invariants = true;
    in.jobs = BuiltinScenario(seed);
    auto s = RunSimulation(in);
    ASSERT_TRUE(s.has_value()) << s.error().message();
    EXPECT_EQ(s->jobs_completed, s->jobs) << "seed " << seed;
    EXPECT_GT(s->spot_evictions, 0) << "seed " << seed;
  }
}

model::AutoscalerConfig OneCpuPool() {
  auto c = kube::config::ParseAutoscalerConfig(R"(
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
pools:
  - name: cpu
    min: 0
    max: 3
    pricePerHour: 0.6
    template:
      capacity: {cpu: "2", memory: 8Gi, pods: "110"}
)",
                                               "one-pool.yaml");
  EXPECT_TRUE(c.has_value()) << c.error().message();
  return *c;
}

// One job of one replica (1 CPU, 2Gi, 10 min) submitted at t=0 on an empty pool with a fixed
// 3-minute boot delay, default loop settings (batchIdle 1s, scanInterval 10s, delayAfterAdd 10m,
// unneededTime 10m):
//   t=1s     the batch closes (1s without new pending pods): IncreasePool cpu +1
//   t=181s   the node joins Ready, the pod binds: wait = 181 s
//   t=781s   the pod finishes (600 s); the node is empty, and delayAfterAdd (10m after it joined
//            at 181 s) has just passed
//   t=790s   the first periodic pass after that marks it unneeded
//   t=1390s  unneeded for 10m: taint, and (empty) delete in the same instant
// Billed from the request (1 s) to the deletion (1390 s): 1389 s × $0.6/h = $0.2315.
// Lower bound: max(1/2 cpu, 2/8 memory) = 0.5 node × $0.6/h × 1/6 h = $0.05.
TEST(SimulatorTest, HandComputedSingleJob) {
  SimInput in;
  in.config = OneCpuPool();
  auto sc = ParseSimConfig("bootDelay: {cpu: [3m, 3m]}\n", "fixed.yaml");
  ASSERT_TRUE(sc.has_value()) << sc.error().message();
  in.sim = *sc;
  in.sim.check_invariants = true;
  auto jobs = ParseTrace("id,submit_s,duration_s,replicas,cpu,memory,gpu\njob-a,0,600,1,1,2Gi,0\n",
                         "one.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  in.jobs = *jobs;
  auto s = RunSimulation(in);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_DOUBLE_EQ(s->wait_p50, 181);
  EXPECT_DOUBLE_EQ(s->wait_p95, 181);
  EXPECT_DOUBLE_EQ(s->wait_max, 181);
  EXPECT_NEAR(s->cost, 1389.0 / 3600 * 0.6, 1e-12);
  EXPECT_NEAR(s->node_hours.at("cpu"), 1389.0 / 3600, 1e-12);
  EXPECT_NEAR(s->lower_bound_cost, 0.05, 1e-12);
  EXPECT_NEAR(s->simulated_hours, 1390.0 / 3600, 1e-12);
  EXPECT_EQ(s->jobs_completed, 1);
  EXPECT_EQ(s->scale_ups, 1);
  EXPECT_EQ(s->scale_downs, 1);
  EXPECT_EQ(s->evictions, 0);
}

// A gang of two 1-CPU replicas on 2-CPU nodes... that each fit one node: both start together.
TEST(SimulatorTest, GangStartsTogether) {
  SimInput in;
  in.config = OneCpuPool();
  auto sc = ParseSimConfig("bootDelay: {cpu: [3m, 4m]}\nseed: 3\n", "range.yaml");
  ASSERT_TRUE(sc.has_value());
  in.sim = *sc;
  in.sim.check_invariants = true;
  auto jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang\n"
      "g,0,600,3,1500m,1Gi,0,,true\n",
      "gang.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  in.jobs = *jobs;
  auto s = RunSimulation(in);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->jobs_completed, 1);
  EXPECT_EQ(s->scale_ups, 3);
  // The gang waits for the slowest of three nodes: at least 1 s + 3 min.
  EXPECT_GE(s->wait_max, 181);
  EXPECT_LE(s->wait_max, 241);
}

// Gang jobs queued as Kueue queues them (simulation.queueGangs): a gang of three is held at its
// submit, a ProvisioningRequest asks for all three nodes at once, and its pods are made only once
// the nodes are up; then they bind at once. With the gang pending instead, its pods wait from
// the submit. Both finish; both add the same three nodes.
TEST(QueueGangsTest, AGangIsAdmittedOnlyOnceAllItsCapacityIsUp) {
  auto run = [](bool queue) {
    SimInput in;
    in.config = OneCpuPool();
    auto sc = ParseSimConfig("bootDelay: {cpu: [3m, 3m]}\n", "fixed.yaml");
    EXPECT_TRUE(sc.has_value()) << sc.error().message();
    in.sim = *sc;
    in.sim.queue_gangs = queue;
    in.sim.check_invariants = true;
    in.record_timeline = true;
    auto jobs = ParseTrace(
        "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang\n"
        "g,0,600,3,1500m,1Gi,0,,true\n",
        "gang.csv");
    EXPECT_TRUE(jobs.has_value()) << jobs.error().message();
    in.jobs = *jobs;
    auto s = RunSimulation(in);
    EXPECT_TRUE(s.has_value()) << s.error().message();
    return s ? *s : Summary{};
  };
  // The most pods pending before the nodes joined (3 minutes after the first request).
  auto pending_before_boot = [](const Summary& s) {
    int64_t most = 0;
    for (const TimelinePoint& p : s.timeline.points)
      if (p.hours < 3.0 / 60) most = std::max(most, p.pending);
    return most;
  };
  Summary pending = run(false);
  Summary queued = run(true);
  EXPECT_EQ(pending_before_boot(pending), 3);
  EXPECT_EQ(pending_before_boot(queued), 0) << "the queued gang's pods exist before its nodes";
  for (const Summary* s : {&pending, &queued}) {
    EXPECT_EQ(s->jobs_completed, 1);
    EXPECT_EQ(s->gang_jobs, 1);
    EXPECT_EQ(s->gang_jobs_started, 1);
    EXPECT_EQ(s->scale_ups, 3);
  }
  EXPECT_EQ(pending.provisioning_requests, 0);
  EXPECT_EQ(queued.provisioning_requests, 1);
  EXPECT_EQ(queued.provisioning_requests_failed, 0);
  // Admitted at the first pass after the nodes joined (scanInterval 10 s at the latest).
  EXPECT_GE(queued.wait_p50_gang, 181);
  EXPECT_LE(queued.wait_p50_gang, 181 + 11);
  EXPECT_DOUBLE_EQ(pending.wait_p50_gang, 181);
}

// A gang larger than its pool: each request fails (the pool's max), Kueue's stand-in retries with
// a new one three times, then rejects the job; nothing is ever added.
TEST(QueueGangsTest, AGangNoPoolCanHoldIsRetriedThenRejected) {
  SimInput in;
  in.config = OneCpuPool();
  in.sim.queue_gangs = true;
  in.sim.check_invariants = true;
  in.horizon_after_last_submit = std::chrono::hours(2);
  auto jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang\n"
      "big,0,600,4,1500m,1Gi,0,,true\n",
      "big.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  in.jobs = *jobs;
  auto s = RunSimulation(in);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->provisioning_requests, 1 + kKueueRetryLimit);
  EXPECT_EQ(s->provisioning_requests_failed, 1 + kKueueRetryLimit);
  EXPECT_EQ(s->jobs_rejected, 1);
  EXPECT_EQ(s->jobs_never_started, 1);
  EXPECT_EQ(s->scale_ups, 0);
}

// `simulate --queue-eval`: the two modes on one trace, one table.
TEST(QueueGangsTest, EvaluationRunsBothModes) {
  SimInput in;
  in.config = OneCpuPool();
  auto jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang\n"
      "g1,0,600,2,1500m,1Gi,0,,true\n"
      "solo,30,300,1,500m,1Gi,0,,false\n"
      "g2,900,600,3,1500m,1Gi,0,,true\n",
      "mix.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  in.jobs = *jobs;
  auto runs = RunQueueEvaluation(in);
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].name, "pending");
  EXPECT_EQ((*runs)[1].name, "queued");
  EXPECT_EQ((*runs)[1].summary.provisioning_requests, 2) << "one per gang, none for the solo job";
  for (const PolicyRun& r : *runs) EXPECT_EQ(r.summary.jobs_completed, 3) << r.name;
  std::string table = QueueEvaluationToText(*runs);
  EXPECT_THAT(table, HasSubstr("gang wait p95"));
  EXPECT_THAT(table, HasSubstr("queued"));
  EXPECT_THAT(table, HasSubstr("2/0"));  // requests made / failed
}

// Work lost to evictions, by hand, with checkpoints every 10 minutes: a 1-GPU pod evicted 25
// minutes into its run loses the 5 minutes since its last checkpoint (5/60 GPU-hours); a gang of
// two 1-GPU pods evicted 25 minutes in loses 5 minutes on both (10/60); each is one restart.
// Without checkpoints the pod loses all 25 minutes.
TEST(WorkloadTest, EvictionsCountTheWorkSinceTheLastCheckpoint) {
  for (bool checkpoints : {true, false}) {
    SimInput in;
    in.config = OneCpuPool();
    if (checkpoints) in.sim.checkpoint_every = std::chrono::minutes(10);
    auto jobs = ParseTrace(
        "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang\n"
        "solo,0,7200,1,1,1Gi,1,,false\n"
        "pair,0,7200,2,1,1Gi,1,,true\n",
        "evict.csv");
    ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
    in.jobs = *jobs;
    ManualClock clock(*ParseRfc3339("2026-01-01T00:00:00Z"));
    EventQueue queue;
    WorldChanges changes;
    Workload w(in, clock, queue, changes);
    w.Load();
    w.Submit(0);
    w.Submit(1);
    w.StartPod(w.job(0).pods[0], 0, "n0");
    for (int p : w.job(1).pods) w.StartPod(p, 1, "n1");
    w.StartGang(1);
    clock.Advance(std::chrono::minutes(25));
    ASSERT_TRUE(w.Evict("default/solo-0").has_value());
    double solo = checkpoints ? 5.0 / 60 : 25.0 / 60;
    EXPECT_NEAR(w.gpu_ms_lost() / 3600e3, solo, 1e-9) << checkpoints;
    EXPECT_EQ(w.restarts(), 1);
    ASSERT_TRUE(w.Evict("default/pair-1").has_value());  // the whole gang restarts
    double pair = checkpoints ? 2 * 5.0 / 60 : 2 * 25.0 / 60;
    EXPECT_NEAR(w.gpu_ms_lost() / 3600e3, solo + pair, 1e-9) << checkpoints;
    EXPECT_EQ(w.restarts(), 2);
    EXPECT_EQ(w.evictions(), 2);
    // One loss per restart, adding up to the total: the solo pod's, then the gang's on both.
    ASSERT_EQ(w.losses().size(), 2u);
    const Loss& a = w.losses()[0];
    const Loss& b = w.losses()[1];
    EXPECT_EQ(a.pod, "default/solo-0");
    EXPECT_EQ(b.pod, "default/pair-1");
    EXPECT_EQ(a.ran, std::chrono::minutes(25));
    EXPECT_EQ(b.ran, std::chrono::minutes(25));
    EXPECT_EQ(a.lost, checkpoints ? std::chrono::minutes(5) : std::chrono::minutes(25));
    EXPECT_DOUBLE_EQ(a.gpus, 1);
    EXPECT_DOUBLE_EQ(b.gpus, 2);
    EXPECT_FALSE(a.spot);
    EXPECT_NEAR(a.GpuHours(), solo, 1e-9);
    EXPECT_NEAR(a.GpuHours() + b.GpuHours(), w.gpu_ms_lost() / 3600e3, 1e-9);
  }
}

// The same world and trace run with consolidation's replace move on, then off (invariants
// checked): the two summaries, in that order.
std::vector<Summary> WithAndWithoutReplace(const model::AutoscalerConfig& config,
                                           const SimConfig& sim, const std::vector<JobSpec>& jobs) {
  std::vector<Summary> out;
  for (bool replace : {true, false}) {
    SimInput in;
    in.config = config;
    in.config.scale_down.consolidation.replace = replace;
    in.sim = sim;
    in.sim.check_invariants = true;
    in.jobs = jobs;
    auto s = RunSimulation(in);
    EXPECT_TRUE(s.has_value()) << s.error().message();
    out.push_back(s.value_or(Summary{}));
  }
  return out;
}

// Back to spot through the replace move: a spot-tolerant job starts on on-demand while the spot
// pool is out of stock (the first hour), and moves to a spot node once the stock is back and the
// move pays ($0.90/h against $0.18/h, checkpoints every 30m: right after one, the default
// unneededTime running while the node waits for it). Nothing is evicted before the spot node is
// Ready: the evicted pod waits only for rescheduling, far less than the 5-minute boot.
TEST(SimulatorTest, AReplaceNeverLeavesAPodPendingLongerThanTheBoot) {
  auto config = kube::config::ParseAutoscalerConfig(R"(
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
scaleUp: {expanders: [priority]}
pools:
  - name: gpu-spot
    min: 0
    max: 3
    capacityType: spot
    pricePerHour: 0.18
    priority: 100
    template:
      taints: [{key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}]
      capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
  - name: gpu
    min: 0
    max: 3
    pricePerHour: 0.9
    priority: 10
    template:
      capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
)",
                                                    "replace.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  auto sc = ParseSimConfig(R"(
checkpointEvery: 30m
bootDelay: {gpu: [5m, 5m]}
pools:
  gpu-spot: {stockouts: [[0s, 1h]]}
)",
                           "replace-sim.yaml");
  ASSERT_TRUE(sc.has_value()) << sc.error().message();
  auto jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang,namespace,priority,spot\n"
      "train,0,28800,1,2,8Gi,1,,false,default,0,true\n",
      "replace.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  std::vector<Summary> runs = WithAndWithoutReplace(*config, *sc, *jobs);
  const Summary& on = runs[0];
  EXPECT_EQ(on.jobs_completed, 1);
  ASSERT_EQ(on.evictions, 1);
  EXPECT_EQ(on.spot_evictions, 0);
  EXPECT_GT(on.node_hours.at("gpu-spot"), 5.0);  // most of the run on spot
  EXPECT_LT(on.node_hours.at("gpu"), 3.0);
  EXPECT_LT(on.drain_wait_max, 60.0) << "pending " << on.drain_wait_max << "s after eviction";
  EXPECT_EQ(runs[1].jobs_completed, 1);
  EXPECT_EQ(runs[1].evictions, 0);  // it stays on on-demand for its 8 hours
}

// One new node for two: two 8-hour jobs of one GPU and 6 cpus each start on two nodes of the
// preferred 4-GPU, 8-cpu pool ($4/h); neither fits beside the other, and no pool is cheaper than
// one node. Pool "pair" (2 GPUs, 16 cpus, $5/h) holds both: once it pays (checkpoints every 30m),
// one pair node replaces the two, and the evicted pods wait only for rescheduling.
TEST(SimulatorTest, OneNewNodeReplacesTwoWithoutAPodPendingForItsBoot) {
  auto config = kube::config::ParseAutoscalerConfig(R"(
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
scaleUp: {expanders: [priority]}
pools:
  - name: gpu4
    min: 0
    max: 3
    pricePerHour: 4
    priority: 100
    template:
      capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "4", pods: "110"}
  - name: pair
    min: 0
    max: 3
    pricePerHour: 5
    priority: 10
    template:
      capacity: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "2", pods: "110"}
)",
                                                    "group.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  auto sc = ParseSimConfig("checkpointEvery: 30m\nbootDelay: {gpu: [5m, 5m]}\n", "group-sim.yaml");
  ASSERT_TRUE(sc.has_value()) << sc.error().message();
  auto jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang,namespace,priority,spot\n"
      "a,0,28800,1,6,8Gi,1,,false,default,0,false\n"
      "b,0,28800,1,6,8Gi,1,,false,default,0,false\n",
      "group.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  std::vector<Summary> runs = WithAndWithoutReplace(*config, *sc, *jobs);
  const Summary& on = runs[0];
  EXPECT_EQ(on.jobs_completed, 2);
  EXPECT_EQ(on.evictions, 2);
  EXPECT_GT(on.node_hours.at("pair"), 5.0);  // most of the run on one node
  EXPECT_LT(on.node_hours.at("gpu4"), 2 * 3.0);
  EXPECT_LT(on.drain_wait_max, 60.0) << "pending " << on.drain_wait_max << "s after eviction";
  EXPECT_EQ(runs[1].jobs_completed, 2);
  EXPECT_EQ(runs[1].evictions, 0);
  EXPECT_LT(on.cost, runs[1].cost * 0.85);
}

// The checks do catch a broken world: a pool whose minimum (started at t=0) exceeds its max.
TEST(SimulatorTest, InvariantViolationFailsTheRun) {
  SimInput in;
  in.config = OneCpuPool();
  in.config.pools[0].min = 4;  // max 3; the config loader would refuse this
  in.sim.check_invariants = true;
  auto s = RunSimulation(in);
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message(), HasSubstr("invariant violated"));
  EXPECT_THAT(s.error().message(), HasSubstr("above its max 3"));
  in.sim.check_invariants = false;
  EXPECT_TRUE(RunSimulation(in).has_value());
}

TEST(SimulatorTest, UnknownPoolInSimConfigIsAnError) {
  SimInput in;
  in.config = OneCpuPool();
  in.sim.pools["nope"] = {};
  auto s = RunSimulation(in);
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message(), HasSubstr("pools.nope"));
}

std::string ReadHead(const std::string& path, int lines) {
  std::ifstream f(path);
  std::string out, line;
  for (int i = 0; i < lines && std::getline(f, line); ++i) out += line + "\n";
  return out;
}

TEST(TraceTest, AlibabaRealLines) {
  std::string path =
      std::string(TIDEPOOL_SHARED_DIR) + "/traces/alibaba-gpu-v2023/openb_pod_list_default.csv";
  std::string head = ReadHead(path, 4);
  ASSERT_THAT(head, HasSubstr("name,cpu_milli,memory_mib,num_gpu"));
  // openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
  // openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
  auto jobs = ParseTrace(head, "head.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  ASSERT_EQ(jobs->size(), 3u);
  const JobSpec& a = (*jobs)[0];
  EXPECT_EQ(a.id, "openb-pod-0000");
  EXPECT_EQ(a.submit, std::chrono::seconds(0));
  EXPECT_EQ(a.duration, std::chrono::seconds(12537496));
  EXPECT_EQ(a.requests.cpu_milli(), 12000);
  EXPECT_EQ(a.requests.memory(), int64_t{16384} * 1024 * 1024);
  EXPECT_EQ(a.requests.gpus(), 1);
  EXPECT_FALSE(a.gang);
  EXPECT_FALSE(a.spot);  // LS
  const JobSpec& b = (*jobs)[1];
  EXPECT_EQ(b.requests.gpus(), 1);  // gpu_milli 460 counts as one whole GPU
  EXPECT_EQ(b.submit, std::chrono::seconds(427061));
  EXPECT_EQ(b.duration, std::chrono::seconds(12902960 - 427061));

  auto all = LoadTrace(path);
  ASSERT_TRUE(all.has_value()) << all.error().message();
  EXPECT_EQ(all->size(), 8152u);
}

TEST(TraceTest, AlibabaMappings) {
  auto jobs = ParseTrace(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,1000,1024,0,0,,BE,Pending,100,160,\n"
      "p1,2000,2048,8,1000,V100M16|V100M32,LS,Running,50,,70\n"
      "p2,2000,2048,2,1000,T4,LS,Running,10,500,20\n",
      "mini.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  ASSERT_EQ(jobs->size(), 3u);
  // Sorted by submit: p2 (10), p1 (50), p0 (100).
  EXPECT_EQ((*jobs)[0].id, "p2");
  EXPECT_EQ((*jobs)[0].gpu_models, std::vector<std::string>{"T4"});
  EXPECT_EQ((*jobs)[0].duration, std::chrono::seconds(480));
  EXPECT_EQ((*jobs)[1].id, "p1");
  EXPECT_EQ((*jobs)[1].requests.gpus(), 8);
  EXPECT_EQ((*jobs)[1].gpu_models, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ((*jobs)[1].duration, std::chrono::seconds(500 - 70));  // ran past the end (500)
  EXPECT_EQ((*jobs)[2].id, "p0");
  EXPECT_TRUE((*jobs)[2].never_ran);
  EXPECT_TRUE((*jobs)[2].spot);                              // BE
  EXPECT_EQ((*jobs)[2].duration, std::chrono::seconds(60));  // never scheduled: from creation
  EXPECT_EQ((*jobs)[2].requests.gpus(), 0);
}

TEST(TraceTest, AlibabaBadRows) {
  const std::string header =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n";
  auto bad = ParseTrace(header + "p0,1000,1024,0,0,,BE,Pending,100,160,\np1,x,1,0,0,,LS,R,1,2,1\n",
                        "bad.csv");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("bad.csv:3: column cpu_milli"));
  bad = ParseTrace(header + "p1,1,1,0,0,,LS,R,100,50,100\n", "bad.csv");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("bad.csv:2: column deletion_time"));
  bad = ParseTrace(header + "p1,1,1,0,0\n", "bad.csv");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("bad.csv:2: expected 11 columns"));
  bad = ParseTrace(header + "p1,1,1,0,1500,,LS,R,1,2,1\n", "bad.csv");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("column gpu_milli"));
}

TEST(TraceTest, NativeFullRow) {
  auto jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang,namespace,priority,spot\n"
      "train-1,30,7200,4,8,64Gi,2,A100|H100,true,team-a,100,true\n"
      "spark,0,600,8,500m,1Gi,0\n",
      "n.csv");
  ASSERT_FALSE(jobs.has_value());  // column count differs from the header
  EXPECT_THAT(jobs.error().message(), HasSubstr("n.csv:3: expected 12 columns"));
  jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang,namespace,priority,spot\n"
      "train-1,30,7200,4,8,64Gi,2,A100|H100,true,team-a,100,true\n"
      "spark,0,600.5,8,500m,1Gi,0,,false,,,\n",
      "n.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  ASSERT_EQ(jobs->size(), 2u);
  const JobSpec& s = (*jobs)[0];
  EXPECT_EQ(s.id, "spark");
  EXPECT_EQ(s.duration, std::chrono::milliseconds(600500));
  EXPECT_EQ(s.requests.cpu_milli(), 500);
  EXPECT_EQ(s.namespace_, "default");
  const JobSpec& t = (*jobs)[1];
  EXPECT_EQ(t.replicas, 4);
  EXPECT_EQ(t.requests.cpu_milli(), 8000);
  EXPECT_EQ(t.requests.memory(), int64_t{64} << 30);
  EXPECT_EQ(t.requests.gpus(), 2);
  EXPECT_EQ(t.gpu_models, (std::vector<std::string>{"A100", "H100"}));
  EXPECT_TRUE(t.gang);
  EXPECT_TRUE(t.spot);
  EXPECT_EQ(t.namespace_, "team-a");
  EXPECT_EQ(t.priority, 100);
}

TEST(TraceTest, NativeBadRows) {
  const std::string header = "id,submit_s,duration_s,replicas,cpu,memory,gpu\n";
  struct Case {
    std::string row, want;
  } cases[] = {
      {"a,0,60,1,lots,1Gi,0", "t.csv:2: column cpu: expected a non-negative Kubernetes quantity"},
      {"a,0,60,1,1,1Gi,-1", "t.csv:2: column gpu"},
      {"a,-5,60,1,1,1Gi,0", "t.csv:2: column submit_s"},
      {"a,0,60,0,1,1Gi,0", "t.csv:2: column replicas"},
      {",0,60,1,1,1Gi,0", "t.csv:2: column id"},
      {"a,0,sixty,1,1,1Gi,0", "t.csv:2: column duration_s"},
  };
  for (const Case& c : cases) {
    auto r = ParseTrace(header + c.row + "\n", "t.csv");
    ASSERT_FALSE(r.has_value()) << c.row;
    EXPECT_THAT(r.error().message(), HasSubstr(c.want)) << c.row;
  }
  auto r = ParseTrace(header + "a,0,60,1,1,1Gi,0,,maybe\n", "t.csv");
  ASSERT_FALSE(r.has_value());
  r = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang\na,0,60,1,1,1Gi,0,,maybe\n",
      "t.csv");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("t.csv:2: column gang: expected true or false"));
  r = ParseTrace("foo,bar\n1,2\n", "t.csv");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("t.csv:1: unknown trace header"));
  r = ParseTrace("", "t.csv");
  ASSERT_FALSE(r.has_value());
}

TEST(SimConfigTest, ParsesAndDefaults) {
  auto d = ParseSimConfig("seed: 5\n", "s.yaml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->seed, 5u);
  EXPECT_EQ(d->cpu_boot_delay.lo, std::chrono::minutes(3));
  EXPECT_EQ(d->gpu_boot_delay.hi, std::chrono::minutes(15));
  EXPECT_EQ(d->scheduler, ScoringPolicy::kLeastAllocated);
  auto c = ParseSimConfig(R"(
bootDelay: {gpu: [10m, 12m]}
scheduler: most-allocated
checkpointEvery: 1h
queueGangs: true
pools:
  gpu-spot: {bootDelay: [1m, 2m], stockouts: [[1h, 2h]], evictionsPerNodeHour: 0.05}
)",
                          "s.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->gpu_boot_delay.lo, std::chrono::minutes(10));
  EXPECT_EQ(c->scheduler, ScoringPolicy::kMostAllocated);
  EXPECT_EQ(c->checkpoint_every, std::chrono::hours(1));
  EXPECT_FALSE(d->queue_gangs);
  EXPECT_TRUE(c->queue_gangs);
  const PoolSimConfig& p = c->pools.at("gpu-spot");
  EXPECT_EQ(p.boot_delay->hi, std::chrono::minutes(2));
  ASSERT_EQ(p.stockouts.size(), 1u);
  EXPECT_EQ(p.stockouts[0].second, std::chrono::hours(2));
  EXPECT_DOUBLE_EQ(p.evictions_per_node_hour, 0.05);
}

TEST(SimConfigTest, Errors) {
  auto e = ParseSimConfig("seed: 1\nbootDelays: {}\n", "s.yaml");
  ASSERT_FALSE(e.has_value());
  EXPECT_THAT(e.error().message(), HasSubstr("s.yaml:2"));
  e = ParseSimConfig("bootDelay: {cpu: [4m, 3m]}\n", "s.yaml");
  ASSERT_FALSE(e.has_value());
  EXPECT_THAT(e.error().message(), HasSubstr("bootDelay.cpu"));
  e = ParseSimConfig("scheduler: best\n", "s.yaml");
  ASSERT_FALSE(e.has_value());
  EXPECT_THAT(e.error().message(), HasSubstr("s.yaml:1: scheduler"));
  e = ParseSimConfig("pools:\n  a: {evictionsPerNodeHour: -1}\n", "s.yaml");
  ASSERT_FALSE(e.has_value());
  EXPECT_THAT(e.error().message(), HasSubstr("s.yaml:2"));
  e = ParseSimConfig("pools:\n  a: {stockouts: [[1h]]}\n", "s.yaml");
  ASSERT_FALSE(e.has_value());
}

// --- The policy comparison --------------------------------------------------------------------

TEST(CompareTest, ThreePoliciesOnTheBuiltinScenario) {
  SimInput in;
  in.config = LoadSeedConfig();
  in.sim.check_invariants = true;  // every policy keeps the invariants
  in.jobs = BuiltinScenario(1);
  auto runs = RunComparison(in);
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  ASSERT_EQ(runs->size(), 3u);
  const Summary& tp = (*runs)[0].summary;
  const Summary& ca = (*runs)[1].summary;
  const Summary& st = (*runs)[2].summary;
  EXPECT_EQ((*runs)[0].name, "tidepool");
  EXPECT_EQ((*runs)[1].name, "ca-like");
  EXPECT_EQ((*runs)[2].name, "static");
  for (const PolicyRun& r : *runs) {
    EXPECT_EQ(r.summary.jobs_completed, r.summary.jobs) << r.name;
    EXPECT_DOUBLE_EQ(r.summary.lower_bound_cost, tp.lower_bound_cost) << r.name;
    EXPECT_GE(r.summary.cost, r.summary.lower_bound_cost) << r.name;
  }
  // The default run is the plain run.
  auto plain = RunSimulation(in);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(SummaryToJson(*plain).dump(), SummaryToJson(tp).dump());
  // Static: the peak of every pool from the start, nothing added or removed.
  EXPECT_EQ(st.scale_ups, 0);
  EXPECT_EQ(st.scale_downs, 0);
  EXPECT_EQ(st.peak_nodes, tp.peak_nodes);
  EXPECT_GT(st.cost, tp.cost);
  // ca-like evicts running training pods whenever they fit elsewhere; tidepool only when the
  // savings pay for the work lost, so it loses less work and still costs less.
  EXPECT_GT(ca.evictions, 0);
  EXPECT_LE(tp.work_lost_gpu_hours, ca.work_lost_gpu_hours);
  EXPECT_LT(tp.cost, ca.cost);
  // Every restart is listed, with the work it lost; `--losses` writes them a row each.
  size_t rows = 0;
  for (const PolicyRun& r : *runs) {
    EXPECT_EQ(static_cast<int64_t>(r.summary.losses.size()), r.summary.restarts) << r.name;
    double lost = 0;
    for (const Loss& l : r.summary.losses) lost += l.GpuHours();
    EXPECT_NEAR(lost, r.summary.work_lost_gpu_hours, 1e-6) << r.name;
    rows += r.summary.losses.size();
  }
  std::string csv = LossesCsv(*runs);
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), rows + 1);
  EXPECT_THAT(csv, ::testing::StartsWith("policy,pod,at,ran_hours,lost_hours,gpus,"));
  EXPECT_THAT(csv, HasSubstr("\nca-like,"));

  nlohmann::ordered_json j = ComparisonToJson(*runs);
  ASSERT_EQ(j["policies"].size(), 3u);
  EXPECT_EQ(j["policies"][1]["policy"], "ca-like");
  EXPECT_TRUE(j["policies"][2].contains("lowerBoundCost"));
  std::string text = ComparisonToText(*runs);
  EXPECT_THAT(text, HasSubstr("ca-like"));
  EXPECT_THAT(text, HasSubstr("static"));
}

TEST(CompareTest, PoliciesAreConfigurationsOfTheSameLoop) {
  SimInput in;
  in.config = LoadSeedConfig();
  SimInput ca = CaLikePolicy(in);
  EXPECT_EQ(ca.config.scale_up.expanders, std::vector<std::string>{"least-waste"});
  EXPECT_EQ(ca.config.scan_interval, std::chrono::seconds(10));
  EXPECT_EQ(ca.config.scale_up.provision_timeout, std::chrono::minutes(15));
  EXPECT_EQ(ca.config.scale_down.unneeded_time, std::chrono::minutes(10));
  EXPECT_DOUBLE_EQ(ca.config.scale_down.utilization_threshold, 0.5);
  EXPECT_FALSE(ca.loop_options.scale_up.gang_aware);
  EXPECT_TRUE(ca.loop_options.evict_training_pods);
  SimInput st = StaticPolicy(in, {{"cpupool", 3}, {"gpuheavy", 2}});
  EXPECT_FALSE(st.config.scale_down.enabled);
  EXPECT_EQ(st.config.FindPool("cpupool")->min, 3);
  EXPECT_EQ(st.config.FindPool("cpupool")->max, 3);
  EXPECT_EQ(st.config.FindPool("gpuheavy")->max, 2);
  EXPECT_EQ(st.config.FindPool("gpupool")->max, 0);
}

// --- The HTML report ----------------------------------------------------------------------------

// Checks that `html` is well-formed markup: every element closed in order (void elements written
// as <x/>), attributes quoted, no stray '<' or '&'. Returns "" or what is wrong.
std::string CheckWellFormed(const std::string& html) {
  std::vector<std::string> open;
  size_t i = 0;
  while (i < html.size()) {
    char c = html[i];
    if (c == '&') {
      size_t semi = html.find(';', i);
      if (semi == std::string::npos || semi - i > 8) return "stray & at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (c != '<') {
      if (c == '>') return "stray > at " + std::to_string(i);
      ++i;
      continue;
    }
    if (html.compare(i, 9, "<!DOCTYPE") == 0) {
      i = html.find('>', i) + 1;
      continue;
    }
    // A tag: read to its '>' outside quotes.
    size_t j = i + 1;
    char quote = 0;
    for (; j < html.size(); ++j) {
      if (quote) {
        if (html[j] == quote) quote = 0;
      } else if (html[j] == '"' || html[j] == '\'') {
        quote = html[j];
      } else if (html[j] == '<') {
        return "'<' inside a tag at " + std::to_string(j);
      } else if (html[j] == '>') {
        break;
      }
    }
    if (j >= html.size()) return "unterminated tag at " + std::to_string(i);
    std::string tag = html.substr(i + 1, j - i - 1);
    bool closing = !tag.empty() && tag[0] == '/';
    bool self = !tag.empty() && tag.back() == '/';
    std::string name = tag.substr(closing ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \t\n/"));
    if (name.empty()) return "empty tag at " + std::to_string(i);
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? "nothing" : open.back()) + "> at " +
               std::to_string(i);
      }
      open.pop_back();
    } else if (!self) {
      open.push_back(name);
    }
    i = j + 1;
    // Raw text elements: skip their content to the closing tag.
    if (!closing && !self && (name == "style" || name == "title")) {
      size_t end = html.find("</" + name + ">", i);
      if (end == std::string::npos) return "unclosed <" + name + ">";
      if (html.substr(i, end - i).find('<') != std::string::npos) return "'<' in <" + name + ">";
      i = end;
    }
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(ReportTest, WellFormedSelfContainedHtml) {
  SimInput in;
  in.config = LoadSeedConfig();
  in.jobs = BuiltinScenario(1);
  in.record_timeline = true;
  auto runs = RunComparison(in);
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  for (const PolicyRun& r : *runs) {
    const Timeline& tl = r.summary.timeline;
    ASSERT_FALSE(tl.points.empty()) << r.name;
    EXPECT_EQ(tl.pools.size(), in.config.pools.size());
    // The timeline's cost integrates to the billed cost.
    EXPECT_NEAR(tl.points.back().cost, r.summary.cost, 1e-6 * r.summary.cost) << r.name;
    for (size_t k = 1; k < tl.points.size(); ++k) {
      EXPECT_GE(tl.points[k].hours, tl.points[k - 1].hours);
      EXPECT_GE(tl.points[k].cost, tl.points[k - 1].cost);
    }
  }
  ReportInput report{"built-in scenario <seed 1>", "examples/seed/config.yaml", *runs};
  std::string path =
      (std::filesystem::path(::testing::TempDir()) / "tidepool-report.html").string();
  auto ok = WriteHtmlReport(report, path);
  ASSERT_TRUE(ok.has_value()) << ok.error().message();
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string html = ss.str();
  std::remove(path.c_str());
  ASSERT_GT(html.size(), 1000u);
  EXPECT_EQ(CheckWellFormed(html), "");
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  // Nodes per pool for each of the 3 policies, pending pods, cumulative cost, wait CDF, and the
  // cost-wait frontier (several runs).
  EXPECT_EQ(Count(html, "<svg "), 7u);
  EXPECT_THAT(html, HasSubstr("Cost–wait frontier"));
  EXPECT_EQ(Count(html, "<circle "), 3u);
  EXPECT_GE(Count(html, "<polygon "), 3u);   // stacked node areas
  EXPECT_GE(Count(html, "<polyline "), 9u);  // pending, cost and CDF lines per policy
  EXPECT_THAT(html, HasSubstr("Nodes per pool, stacked: ca-like"));
  EXPECT_THAT(html, HasSubstr("Cumulative cost"));
  EXPECT_THAT(html, HasSubstr("Wait time until all of a job"));
  EXPECT_THAT(html, HasSubstr("<table>"));
  EXPECT_THAT(html, HasSubstr("built-in scenario &lt;seed 1&gt;"));  // escaped
  // Self-contained: no network references, no scripts.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);

  EXPECT_THAT(CheckWellFormed("<p><b>x</p></b>"), HasSubstr("closes"));  // the checker checks
  EXPECT_THAT(CheckWellFormed("<p>a < b</p>"), HasSubstr("'<'"));
  EXPECT_FALSE(WriteHtmlReport(report, "/nonexistent-dir/x.html").has_value());
}

// --- GPU sharing
// ----------------------------------------------------------------------------------

const char* kSharingTrace =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "half-a,1000,1024,1,500,,LS,Running,0,3600,0\n"
    "half-b,1000,1024,1,500,,LS,Running,0,3600,0\n";

TEST(GpuSharingTest, TraceReadsSharesOnlyWhenEnabled) {
  auto whole = ParseTrace(kSharingTrace, "s.csv");
  ASSERT_TRUE(whole.has_value()) << whole.error().message();
  const model::ResourceId milli = model::InternResource(kGpuMilliResource);
  EXPECT_EQ((*whole)[0].requests.gpus(), 1);
  EXPECT_EQ((*whole)[0].requests.Get(milli), 0);
  auto shared = ParseTrace(kSharingTrace, "s.csv", TraceOptions{.gpu_sharing = true});
  ASSERT_TRUE(shared.has_value()) << shared.error().message();
  EXPECT_EQ((*shared)[0].requests.gpus(), 0);
  EXPECT_EQ((*shared)[0].requests.Get(milli), 500);
  // A whole GPU under sharing takes 1000 thousandths per GPU as well.
  auto full =
      ParseTrace(std::string(kSharingTrace).substr(0, std::string(kSharingTrace).find('\n') + 1) +
                     "w,1000,1024,2,1000,,LS,Running,0,60,0\n",
                 "w.csv", TraceOptions{.gpu_sharing = true});
  ASSERT_TRUE(full.has_value()) << full.error().message();
  EXPECT_EQ((*full)[0].requests.gpus(), 2);
  EXPECT_EQ((*full)[0].requests.Get(milli), 2000);
}

// Two half-GPU pods for an hour on a pool of 1-GPU nodes: without sharing they need a node each,
// with sharing they share one node.
TEST(GpuSharingTest, SharesPackOntoOneGpu) {
  auto config = kube::config::ParseAutoscalerConfig(R"(
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
pools:
  - name: gpu
    min: 0
    max: 4
    pricePerHour: 1.0
    template:
      capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1", pods: "110"}
)",
                                                    "gpu.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  for (bool sharing : {false, true}) {
    SimInput in;
    in.config = *config;
    in.sim.gpu_sharing = sharing;
    in.sim.check_invariants = true;
    in.sim.gpu_boot_delay = {std::chrono::minutes(10), std::chrono::minutes(10)};
    auto jobs = ParseTrace(kSharingTrace, "s.csv", TraceOptions{.gpu_sharing = sharing});
    ASSERT_TRUE(jobs.has_value());
    in.jobs = *jobs;
    auto s = RunSimulation(in);
    ASSERT_TRUE(s.has_value()) << s.error().message();
    EXPECT_EQ(s->jobs_completed, 2);
    EXPECT_EQ(s->scale_ups, sharing ? 1 : 2) << "sharing " << sharing;
    EXPECT_EQ(s->peak_nodes.at("gpu"), sharing ? 1 : 2);
    EXPECT_NEAR(s->gpu_hours_used, sharing ? 1.0 : 2.0, 1e-9);
    // Lower bound: two replica-hours at half (sharing) or all of a $1/h node.
    EXPECT_NEAR(s->lower_bound_cost, sharing ? 1.0 : 2.0, 1e-9);
  }
}

// --- The `simulation:` section of the config file
// -------------------------------------------------

constexpr std::string_view kConfigWithSection = R"(apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
pools:
  - name: cpu
    min: 0
    max: 3
    pricePerHour: 0.6
    template:
      capacity: {cpu: "2", memory: 8Gi, pods: "110"}
simulation:
  seed: 9
  gpuSharing: true
  bootDelay: {cpu: [1m, 2m]}
  pools:
    cpu: {evictionsPerNodeHour: 0.1}
)";

TEST(SimConfigTest, SectionOfTheMainConfig) {
  auto file = kube::config::ParseConfigFile(kConfigWithSection, "c.yaml");
  ASSERT_TRUE(file.has_value()) << file.error().message();
  ASSERT_TRUE(file->simulation.has_value());
  auto sc = ParseSimSection(file->simulation->value());
  ASSERT_TRUE(sc.has_value()) << sc.error().message();
  EXPECT_EQ(sc->seed, 9u);
  EXPECT_TRUE(sc->gpu_sharing);
  EXPECT_EQ(sc->cpu_boot_delay.hi, std::chrono::minutes(2));
  EXPECT_DOUBLE_EQ(sc->pools.at("cpu").evictions_per_node_hour, 0.1);
  // plan/run read the same file and ignore the section.
  EXPECT_TRUE(kube::config::ParseAutoscalerConfig(kConfigWithSection, "c.yaml").has_value());
  // No section: none kept.
  auto plain = kube::config::ParseConfigFile(
      std::string(kConfigWithSection.substr(0, kConfigWithSection.find("simulation:"))), "c.yaml");
  ASSERT_TRUE(plain.has_value()) << plain.error().message();
  EXPECT_FALSE(plain->simulation.has_value());
}

TEST(SimConfigTest, SectionErrorsNameTheFileLineAndKeyPath) {
  auto parse = [](std::string_view section) -> std::string {
    std::string text(kConfigWithSection.substr(0, kConfigWithSection.find("simulation:")));
    text += section;
    auto file = kube::config::ParseConfigFile(text, "c.yaml");
    if (!file) return file.error().message();
    if (!file->simulation) return "<no section>";
    auto sc = ParseSimSection(file->simulation->value());
    return sc ? "<ok>" : sc.error().message();
  };
  EXPECT_THAT(parse("simulation:\n  bootDelay: {cpu: [4m, 3m]}\n"),
              HasSubstr("c.yaml:11: simulation.bootDelay.cpu: expected min <= max"));
  EXPECT_THAT(parse("simulation:\n  seed: 1\n  gpuSharing: yes\n"),
              HasSubstr("c.yaml:12: simulation.gpuSharing: expected"));
  EXPECT_THAT(parse("simulation:\n  bootDelays: {}\n"), HasSubstr("c.yaml:11: simulation"));
  EXPECT_THAT(parse("simulation:\n  scheduler: best\n"),
              HasSubstr("c.yaml:11: simulation.scheduler: expected"));
  EXPECT_THAT(parse("simulation: 5\n"),
              HasSubstr("c.yaml:10: simulation: expected a map of simulation settings, got 5"));
  EXPECT_EQ(parse("simulation:\n"), "<ok>");  // empty: all defaults
  auto sc = ParseSimConfig("gpuSharing: true\n", "s.yaml");
  ASSERT_TRUE(sc.has_value()) << sc.error().message();
  EXPECT_TRUE(sc->gpu_sharing);
}

// Warm placeholders sit on nodes the cluster model does not know of: every scale-down pass of
// every warm policy, checked against one on a built snapshot (--check-invariants), agrees. (A
// pass that forked the model with placeholders bound found their nodes empty.)
TEST(WarmEvaluationTest, PassesWithPlaceholdersOnNodesAgreeWithABuiltSnapshot) {
  auto config =
      kube::config::LoadAutoscalerConfig(TIDEPOOL_SOURCE_DIR "/examples/seed/config.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  SimInput in;
  in.config = *config;
  in.jobs = BuiltinScenario(1);
  in.sim.check_invariants = true;
  auto runs = RunWarmEvaluation(in);
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  ASSERT_EQ(runs->size(), 8u);
  EXPECT_GT((*runs)[1].summary.cost, (*runs)[0].summary.cost) << "spare nodes were kept";
}

// `simulate --warm-eval` on the periodic scenario: the four policies run, spare and headroom
// buy shorter GPU waits, and predictive lowers the GPU p95 wait within its budget.
TEST(WarmEvaluationTest, PoliciesRunAndPredictiveHelpsWithinBudget) {
  auto config =
      kube::config::LoadAutoscalerConfig(TIDEPOOL_SOURCE_DIR "/examples/seed/config.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  SimInput in;
  in.config = *config;
  in.jobs = PeriodicGpuScenario(1);
  auto runs = RunWarmEvaluation(in);
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  EXPECT_EQ((*runs)[0].name, "off");
  EXPECT_EQ((*runs)[3].name, "predictive");
  EXPECT_EQ((*runs)[5].name, "deallocate");
  const Summary& off = (*runs)[0].summary;
  const Summary& stopped = (*runs)[5].summary;
  EXPECT_EQ(stopped.jobs_completed, stopped.jobs);
  EXPECT_LT(stopped.wait_p95_gpu, off.wait_p95_gpu) << "restarts are faster than boots";
  ASSERT_EQ(runs->size(), 8u);
  EXPECT_EQ((*runs)[6].name, "dealloc+pred");
  EXPECT_EQ((*runs)[7].name, "stocked");
  const Summary& stocked = (*runs)[7].summary;
  EXPECT_EQ(stocked.jobs_completed, stocked.jobs);
  EXPECT_LT(stocked.wait_p95_gpu, off.wait_p95_gpu);
  const Summary& spare = (*runs)[1].summary;
  const Summary& predictive = (*runs)[3].summary;
  EXPECT_EQ(off.gpu_jobs, 417);  // 28 days
  EXPECT_EQ(predictive.jobs_completed, predictive.jobs);
  EXPECT_LT(spare.wait_p95_gpu, off.wait_p95_gpu);
  EXPECT_LT(predictive.wait_p95_gpu, off.wait_p95_gpu);
  // maxCostPerDay is 10% of each warm pool's daily cost in `off`.
  EXPECT_LE(predictive.cost, off.cost * 1.10 + 1e-6);
  EXPECT_THAT(WarmEvaluationToText(*runs), HasSubstr("GPU wait p95"));
}

}  // namespace
}  // namespace tidepool::sim

// --- Stopped machines (pools[].scaleDown.mode deallocate) -------------------------------------

namespace tidepool::sim {
namespace {

// Two one-replica jobs an hour apart on an empty pool (boot 3 min, restart 1 min): with mode
// delete the second waits for a new node (181 s); with mode deallocate the first node was
// stopped and restarts for it (61 s), and its stopped hours are billed at the stopped price.
Result<Summary> TwoJobsAnHourApart(bool deallocate) {
  SimInput in;
  in.config = OneCpuPool();
  if (deallocate) {
    in.config.pools[0].scale_down.mode = model::ScaleDownMode::kDeallocate;
    in.config.pools[0].scale_down.max_stopped = 1;
  }
  auto sc = ParseSimConfig(
      "bootDelay: {cpu: [3m, 3m]}\n"
      "pools: {cpu: {restartDelay: [1m, 1m], stoppedPricePerHour: 0.06}}\n",
      "fixed.yaml");
  if (!sc) return std::unexpected(sc.error());
  in.sim = *sc;
  in.sim.check_invariants = true;
  auto jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu\n"
      "job-a,0,600,1,1,2Gi,0\n"
      "job-b,3600,600,1,1,2Gi,0\n",
      "two.csv");
  if (!jobs) return std::unexpected(jobs.error());
  in.jobs = *jobs;
  return RunSimulation(in);
}

TEST(StoppedPoolSimTest, ARestartIsFasterAndTheStoppedHoursCostTheDiskPrice) {
  auto del = TwoJobsAnHourApart(false);
  ASSERT_TRUE(del.has_value()) << del.error().message();
  EXPECT_DOUBLE_EQ(del->wait_max, 181);
  EXPECT_DOUBLE_EQ(del->wait_p50, 181);
  EXPECT_NEAR(del->cost, del->node_hours.at("cpu") * 0.6, 1e-9);

  auto dealloc = TwoJobsAnHourApart(true);
  ASSERT_TRUE(dealloc.has_value()) << dealloc.error().message();
  EXPECT_DOUBLE_EQ(dealloc->wait_max, 181);  // job-a: nothing stopped yet
  EXPECT_DOUBLE_EQ(dealloc->wait_p50, 61);   // job-b: the stopped node restarted
  EXPECT_EQ(dealloc->scale_ups, 2);
  EXPECT_EQ(dealloc->scale_downs, 2);
  const double stopped_cost = dealloc->cost - dealloc->node_hours.at("cpu") * 0.6;
  // Stopped from the first removal (~1390 s) to the restart (3601 s), and again from the second
  // removal to the end of the run.
  EXPECT_GT(stopped_cost, 0.06 * (3601 - 1400) / 3600.0);
  EXPECT_LT(stopped_cost, 0.06 * dealloc->simulated_hours);
  EXPECT_LT(dealloc->node_hours.at("cpu"), del->node_hours.at("cpu"))
      << "the restart saves two minutes of boot";
}

// warm.stoppedNodes 1 on an empty pool (boot 3 min, restart 1 min): a node is created at the
// first pass, stopped once idle, and the job submitted an hour later restarts it (61 s, not
// 181 s). The loop sees the stopped machine in every observation, so the stock is made once.
TEST(StoppedPoolSimTest, AStockedMachineIsCreatedAheadAndRestartedForTheFirstJob) {
  SimInput in;
  in.config = OneCpuPool();
  in.config.pools[0].scale_down.mode = model::ScaleDownMode::kDeallocate;
  in.config.pools[0].scale_down.max_stopped = 1;
  in.config.pools[0].warm.stopped_nodes = 1;
  auto sc = ParseSimConfig("bootDelay: {cpu: [3m, 3m]}\npools: {cpu: {restartDelay: [1m, 1m]}}\n",
                           "fixed.yaml");
  ASSERT_TRUE(sc.has_value()) << sc.error().message();
  in.sim = *sc;
  in.sim.check_invariants = true;
  auto jobs = ParseTrace(
      "id,submit_s,duration_s,replicas,cpu,memory,gpu\njob-a,3600,600,1,1,2Gi,0\n", "late.csv");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  in.jobs = *jobs;
  auto r = RunSimulation(in);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_DOUBLE_EQ(r->wait_max, 61);
  EXPECT_EQ(r->scale_ups, 2) << "the stock once, the restart for the job";
}

TEST(StoppedPoolSimTest, MaxStoppedZeroBehavesAsDelete) {
  SimInput in;
  in.sim.check_invariants = true;
  in.jobs = BuiltinScenario(1);
  in.config = LoadSeedConfig();
  for (model::Pool& p : in.config.pools) {
    p.scale_down.mode = model::ScaleDownMode::kDeallocate;
    p.scale_down.max_stopped = 0;
  }
  auto zero = RunSimulation(in);
  ASSERT_TRUE(zero.has_value()) << zero.error().message();
  in.config = LoadSeedConfig();
  auto plain = RunSimulation(in);
  ASSERT_TRUE(plain.has_value()) << plain.error().message();
  EXPECT_DOUBLE_EQ(zero->cost, plain->cost);
  EXPECT_DOUBLE_EQ(zero->wait_p95, plain->wait_p95);
}

TEST(SimConfigTest, RestartDelayAndStoppedPrice) {
  auto c = ParseSimConfig("pools: {gpu: {restartDelay: [1m, 2m], stoppedPricePerHour: 0.1}}\n",
                          "s.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->pools.at("gpu").restart_delay->hi, std::chrono::minutes(2));
  EXPECT_DOUBLE_EQ(*c->pools.at("gpu").stopped_price_per_hour, 0.1);
  auto bad = ParseSimConfig("pools: {gpu: {stoppedPricePerHour: -1}}\n", "s.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("pools.gpu.stoppedPricePerHour"));
}

}  // namespace
}  // namespace tidepool::sim
