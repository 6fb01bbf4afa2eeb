// Tests of the scheduler scoring evaluation: a cluster state's pods as simulator jobs (arrival,
// runtime, skipped pods, errors), and hand-computed replays in which most-allocated saves a node
// and in which both scorings cost the same.
#include "sim/scheduler_eval.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "kube/codec/objects.h"
#include "kube/config/autoscaler_config.h"
#include "sim/observed_workload.h"
#include "sim/sim_config.h"
#include "sim/workload.h"
#include "tests/testing/values.h"

namespace tidepool::sim {
namespace {

using testing::At;
using ::testing::HasSubstr;

const std::string kData = std::string(TIDEPOOL_SOURCE_DIR) + "/tests/cli/testdata/";
const Time kNow = At("2026-11-26T12:00:00Z");

kube::codec::ClusterState LoadState(const std::string& name) {
  auto s = kube::codec::LoadStatePath(kData + name);
  EXPECT_TRUE(s.has_value()) << s.error().message();
  return s ? *s : kube::codec::ClusterState{};
}

SimInput Settings() {
  auto file = kube::config::LoadConfigFile(kData + "scheduler-config.yaml");
  EXPECT_TRUE(file.has_value()) << file.error().message();
  SimInput in;
  in.config = file->config;
  auto sc = ParseSimSection(file->simulation->value());
  EXPECT_TRUE(sc.has_value()) << sc.error().message();
  in.sim = *sc;
  in.sim.check_invariants = true;
  return in;
}

const JobSpec& Job(const ObservedWorkload& w, const std::string& name) {
  for (const JobSpec& j : w.jobs)
    if (j.id == name) return j;
  ADD_FAILURE() << "no job " << name;
  return w.jobs.front();
}

TEST(ObservedWorkloadTest, RunningPodsRunTheirRuntimeAndTheRestIsSkipped) {
  auto w = ObservedWorkloadOf(LoadState("scheduler-saves.yaml").pods, kNow);
  ASSERT_TRUE(w.has_value()) << w.error().message();
  EXPECT_EQ(w->start, At("2026-11-26T11:50:00Z"));  // the first creationTimestamp
  EXPECT_EQ(w->running, 4);
  EXPECT_EQ(w->pending, 0);
  ASSERT_EQ(w->jobs.size(), 4u);
  // Annotated 30m: it ran 7m (since 11:53), 23m remain.
  EXPECT_EQ(Job(*w, "big-a").duration, std::chrono::minutes(30));
  EXPECT_EQ(Job(*w, "big-a").submit, Duration::zero());
  EXPECT_EQ(Job(*w, "small-2").submit, std::chrono::minutes(5));
  EXPECT_EQ(Job(*w, "small-2").duration, std::chrono::hours(10));
  EXPECT_EQ(Job(*w, "small-2").requests.cpu_milli(), 250);
  ASSERT_TRUE(Job(*w, "small-2").observed);
  // The replayed pod is the observed one, unbound, with its annotations.
  model::Pod replay = MakePod(Job(*w, "small-2"), 0, kNow);
  EXPECT_TRUE(replay.node_name.empty());
  EXPECT_EQ(replay.phase, model::PodPhase::kPending);
  EXPECT_FALSE(replay.start_time);
  EXPECT_NE(replay.meta.Annotation("karpenter.sh/do-not-disrupt"), nullptr);

  std::map<std::string, SkipReason> skipped;
  for (const SkippedPod& s : w->skipped) skipped[s.pod] = s.reason;
  EXPECT_EQ(skipped, (std::map<std::string, SkipReason>{
                         {"monitoring/agent-x7", SkipReason::kDaemonSetOrStatic},
                         {"ml/sleeper", SkipReason::kNoRequests},
                         {"kube-system/coredns-pending", SkipReason::kUnboundSystem},
                         {"ml/done", SkipReason::kFinished},
                         {"ml/waiting", SkipReason::kNoRuntimeKnown},
                     }));
}

TEST(ObservedWorkloadTest, PendingPodsArriveNowAndUnannotatedRunningOnesRunTwiceTheirAge) {
  kube::codec::ClusterState state = LoadState("scheduler-same.yaml");
  for (model::Pod& p : state.pods) {
    if (p.meta.name == "one") p.meta.annotations.clear();  // ran 7m: as long again
  }
  auto w = ObservedWorkloadOf(state.pods, kNow);
  ASSERT_TRUE(w.has_value()) << w.error().message();
  EXPECT_EQ(w->running, 3);
  EXPECT_EQ(w->pending, 1);
  EXPECT_EQ(Job(*w, "one").duration, std::chrono::minutes(14));
  EXPECT_EQ(Job(*w, "four").submit, kNow - w->start);
  EXPECT_EQ(Job(*w, "four").duration, std::chrono::hours(1));
  EXPECT_EQ(w->jobs.back().id, "four");  // ordered by arrival
}

TEST(ObservedWorkloadTest, ErrorsNameThePodAndTheField) {
  kube::codec::ClusterState state = LoadState("scheduler-same.yaml");
  state.pods[1].meta.annotations["tidepool.dev/expected-runtime"] = "soon";
  auto w = ObservedWorkloadOf(state.pods, kNow);
  ASSERT_FALSE(w.has_value());
  EXPECT_THAT(w.error().message(), HasSubstr("pod ml/two: annotation "
                                             "tidepool.dev/expected-runtime=\"soon\" is not a "
                                             "positive duration"));
  state = LoadState("scheduler-same.yaml");
  state.pods[0].start_time.reset();
  w = ObservedWorkloadOf(state.pods, kNow);
  ASSERT_FALSE(w.has_value());
  EXPECT_THAT(w.error().message(), HasSubstr("pod ml/one: status.startTime: missing"));
}

// Fixed 3-minute boot, default loop settings, $0.6/h 2-CPU nodes (scheduler-saves.yaml):
//   t=1s      the batch of big-a and big-b (1500m each) closes: two nodes requested
//   t=181s    both join; one big pod on each (31 min left of 30m: they end at t=1981s)
//   t=300s    small-1 and small-2 (250m, 10h, do-not-disrupt) arrive. Both nodes are at 1500m:
//             small-1 takes the first. least-allocated puts small-2 on the second (1500m < 1750m
//             used), most-allocated on the first (2000m of 2000m still fits)
//   t=1981s   the big pods end
//   least:    each node keeps a small pod nobody may move until t=36300s, when the last job ends
//             and the run stops: 2 x 36299 s
//   most:     the second node is empty; the first periodic pass (t=1990s) marks it unneeded, and
//             10 min later (t=2590s) it is deleted: 36299 s + 2589 s
TEST(SchedulerEvaluationTest, MostAllocatedPacksTheSmallPodsAndSavesTheSecondNode) {
  auto w = ObservedWorkloadOf(LoadState("scheduler-saves.yaml").pods, kNow);
  ASSERT_TRUE(w.has_value()) << w.error().message();
  auto runs = RunSchedulerEvaluation(ReplayInput(Settings(), *w));
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].name, "least-allocated");
  EXPECT_EQ((*runs)[1].name, "most-allocated");
  for (const PolicyRun& r : *runs) {
    EXPECT_EQ(r.summary.jobs_completed, 4) << r.name;
    EXPECT_EQ(r.summary.evictions, 0) << r.name;
    EXPECT_EQ(r.summary.scale_ups, 2) << r.name;
  }
  EXPECT_NEAR((*runs)[0].summary.cost, 2 * 36299.0 / 3600 * 0.6, 1e-9);
  EXPECT_NEAR((*runs)[1].summary.cost, (36299.0 + 2589.0) / 3600 * 0.6, 1e-9);
  EXPECT_NEAR(TotalNodeHours((*runs)[0].summary), 2 * 36299.0 / 3600, 1e-9);

  SchedulerSaving s = SchedulerSavingOf(*runs);
  EXPECT_TRUE(s.saves);
  EXPECT_NEAR(s.saving, (36299.0 - 2589.0) / 3600 * 0.6, 1e-9);
  EXPECT_NEAR(s.percent, 100 * (36299.0 - 2589.0) / (2 * 36299.0), 1e-9);
  EXPECT_THAT(SchedulerEvaluationToText(*runs),
              HasSubstr("most-allocated saves $5.62 (46.4%) against least-allocated\n"));
}

// Every pod needs a node of its own (1500m of 2000m): both scorings place them alike, to the
// second, and cost the same.
TEST(SchedulerEvaluationTest, PodsThatEachNeedANodeCostTheSameEitherWay) {
  auto w = ObservedWorkloadOf(LoadState("scheduler-same.yaml").pods, kNow);
  ASSERT_TRUE(w.has_value()) << w.error().message();
  auto runs = RunSchedulerEvaluation(ReplayInput(Settings(), *w));
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  EXPECT_EQ((*runs)[0].summary.action_digest, (*runs)[1].summary.action_digest);
  SchedulerSaving s = SchedulerSavingOf(*runs);
  EXPECT_DOUBLE_EQ(s.least_allocated_cost, s.most_allocated_cost);
  EXPECT_GT(s.least_allocated_cost, 0);
  EXPECT_EQ(s.saving, 0);
  EXPECT_FALSE(s.saves);
}

TEST(SchedulerEvaluationTest, JsonHasTypedSavingAndBothRuns) {
  auto w = ObservedWorkloadOf(LoadState("scheduler-saves.yaml").pods, kNow);
  ASSERT_TRUE(w.has_value()) << w.error().message();
  auto runs = RunSchedulerEvaluation(ReplayInput(Settings(), *w));
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  nlohmann::ordered_json j = SchedulerEvaluationToJson(*runs);
  ASSERT_EQ(j["policies"].size(), 2u);
  EXPECT_EQ(j["policies"][0]["policy"], "least-allocated");
  EXPECT_TRUE(j["policies"][1]["cost"].is_number());
  EXPECT_TRUE(j["policies"][1]["workLostGpuHours"].is_number());
  EXPECT_TRUE(j["saving"]["mostAllocatedSaves"].is_boolean());
  EXPECT_TRUE(j["saving"]["mostAllocatedSaves"].get<bool>());
  EXPECT_NEAR(j["saving"]["saving"].get<double>(), (36299.0 - 2589.0) / 3600 * 0.6, 1e-9);
  EXPECT_TRUE(j["saving"]["savingPercent"].is_number());
}

// The configuration names the fields of kubescheduler.config.k8s.io/v1 (NodeResourcesFitArgs).
TEST(SchedulerEvaluationTest, MostAllocatedProfileIsAKubeSchedulerConfiguration) {
  std::string c = MostAllocatedSchedulerConfig();
  EXPECT_THAT(c, HasSubstr("apiVersion: kubescheduler.config.k8s.io/v1\n"
                           "kind: KubeSchedulerConfiguration\n"));
  EXPECT_THAT(c, HasSubstr("      - name: NodeResourcesFit\n        args:\n"
                           "          scoringStrategy:\n            type: MostAllocated\n"));
  for (const char* r : {"cpu", "memory", "nvidia.com/gpu"}) {
    EXPECT_THAT(c, HasSubstr(std::string("{name: ") + r + ", weight: 1}"));
  }
}

}  // namespace
}  // namespace tidepool::sim
