// Consolidation of nodes that run training: hand-computed cases of the disruption cost and the
// verdict (planner/disruption.h), and the scale-down plan acting on it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "base/time.h"
#include "planner/disruption.h"
#include "planner/scale_down.h"
#include "tests/planner/scale_down_cluster.h"
#include "tests/testing/values.h"

namespace tidepool::planner {
namespace {

using ::testing::HasSubstr;
using namespace scale_down_testing;  // NOLINT: the builder and plan readers
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using tidepool::testing::At;

// n1: an 8-GPU node at $16/h running one 1-GPU training pod (12.5% < 0.5: a candidate);
// n2: the same shape with 6 GPUs used, so the pod fits there and n2 stays. The pod holds
// 1/8 of n1: $2/h.
struct TrainingCase {
  Cluster c;
  model::Pod* pod;
  explicit TrainingCase(Duration running) {
    model::Pool& gpu = c.AddPool("gpu", 0);
    gpu.price_per_hour = 16;
    ResourceList shape = {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "8"}};
    c.AddNode("n1", "gpu", shape);
    pod = &Training("train-0", "n1", running);
    c.AddNode("n2", "gpu", shape);
    busy = &c.AddPod("busy", "n2", {{"cpu", "4"}, {"nvidia.com/gpu", "6"}});
  }
  model::Pod* busy;
  model::Pod& Training(std::string name, std::string node, Duration running) {
    model::Pod& p =
        c.AddPod(std::move(name), std::move(node), {{"cpu", "2"}, {"nvidia.com/gpu", "1"}}, "ml");
    p.meta.owner_references = {{"batch/v1", "Job", "train", "job-uid", true}};
    p.start_time = c.now() - running;
    return p;
  }
  void Annotate(std::string_view key, std::string value) {
    pod->meta.annotations[std::string(key)] = std::move(value);
  }
};

std::optional<ConsolidationVerdict> KeptVerdict(const ScaleDownPlan& plan, std::string_view node) {
  for (const Keep& k : plan.keep)
    if (k.node == node && k.consolidation) return *k.consolidation;
  return std::nullopt;
}

// A checkpoint every hour, 55 minutes in: evicting now loses 55 minutes of 1 GPU; waiting 5
// minutes for the checkpoint costs $16 x 5m = $1.33 of node time and saves
// 2 x $2/h x 55m = $3.67 of weighted work. So it waits, and goes right after the checkpoint.
TEST(Consolidation, WaitsForANearCheckpointThenConsolidates) {
  TrainingCase t(minutes(55));
  t.Annotate(kCheckpointIntervalAnnotation, "1h");
  ScaleDownPlan plan = t.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"),
              HasSubstr("consolidation waits 5m for the checkpoint of pod ml/train-0"));
  std::optional<ConsolidationVerdict> v = KeptVerdict(plan, "n1");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->decision, ConsolidationDecision::kWaitForCheckpoint);
  EXPECT_EQ(v->wait, minutes(5));
  EXPECT_NEAR(v->savings, 16.0 * 55 / 60, 1e-9);           // horizon: as long again (55m)
  EXPECT_NEAR(v->work_lost, 2.0 * (55 + 2) / 60.0, 1e-9);  // unsaved + restart delay
  EXPECT_NEAR(v->gpu_hours_lost, 55 / 60.0, 1e-9);

  // Ten seconds after the checkpoint: 10s unsaved, the next checkpoint an hour away.
  t.pod->start_time = t.c.now() - (hours(1) + seconds(10));
  plan = t.c.Plan(NoRateLimit());
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  ASSERT_TRUE(plan.scale_downs[0].consolidation.has_value());
  EXPECT_EQ(plan.scale_downs[0].consolidation->decision, ConsolidationDecision::kPays);
  EXPECT_NEAR(plan.scale_downs[0].consolidation->gpu_hours_lost, 10 / 3600.0, 1e-9);
  EXPECT_THAT(plan.scale_downs[0].Detail(), HasSubstr("consolidation pays: saves $16.04"));
}

// The unneeded-node pass takes a node that waits for a checkpoint as removable (its
// unneededTime runs meanwhile), carrying the wait verdict. Evicting right after the checkpoint
// pays while the savings ($16 x 55m = $14.67), less the node's price until then ($16 x 5m =
// $1.33) and the extension, exceed 2 x the restart's $2/h x 2m ($0.13): extensions up to $13.20.
TEST(Consolidation, AWaitingNodeIsUnneededWhenTheUnneededPassSaysSo) {
  TrainingCase t(minutes(55));
  t.Annotate(kCheckpointIntervalAnnotation, "1h");
  ScaleDownOptions options = NoRateLimit();
  options.waiting_is_removable = true;
  ScaleDownPlan plan = t.c.Plan(options);
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  const std::optional<ConsolidationVerdict>& v = plan.scale_downs[0].consolidation;
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->decision, ConsolidationDecision::kWaitForCheckpoint);
  EXPECT_EQ(v->wait, minutes(5));
  EXPECT_NEAR(v->work_lost_after_wait, 2.0 * 2 / 60, 1e-9);

  ConsolidationVerdict extended = *v;
  extended.extension = 13.1;
  EXPECT_TRUE(Pays(extended));
  extended.extension = 13.3;
  EXPECT_FALSE(Pays(extended));
}

// Two hours without a checkpoint, expected to end in 20 minutes: removing n1 saves
// $16 x 20m = $5.33; evicting loses $2/h x 2h02m = $4.07, x safety 2 = $8.13. Kept.
TEST(Consolidation, KeepsTwoHoursOfUnsavedWorkNearItsEnd) {
  TrainingCase t(hours(2));
  t.Annotate(kExpectedRuntimeAnnotation, "2h20m");
  ScaleDownPlan plan = t.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"),
              HasSubstr("consolidation does not pay: saves $5.33 over 20m against $4.07 of work "
                        "lost (2.00 GPU-h unsaved, 1 training pod(s), restarts included) x "
                        "safety 2"));

  // The same pod expected to run 10 more hours: the horizon is capped at maxHorizon (6h),
  // $96 of savings against $8.13: it moves.
  t.Annotate(kExpectedRuntimeAnnotation, "12h");
  plan = t.c.Plan(NoRateLimit());
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  ASSERT_TRUE(plan.scale_downs[0].consolidation.has_value());
  EXPECT_NEAR(plan.scale_downs[0].consolidation->savings, 96.0, 1e-9);
}

// Without checkpoint information the whole runtime is lost: the savings must exceed
// runtime x the price of what the pod holds, times the safety factor.
TEST(Consolidation, NoCheckpointInformationChargesTheWholeRuntime) {
  TrainingCase t(hours(3));
  t.Annotate(kExpectedRuntimeAnnotation, "3h30m");  // 30m left: $8 against 2 x $6.07
  ScaleDownPlan plan = t.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  std::optional<ConsolidationVerdict> v = KeptVerdict(plan, "n1");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->decision, ConsolidationDecision::kDoesNotPay);
  EXPECT_NEAR(v->work_lost, 2.0 * (3 + 2 / 60.0), 1e-9);

  t.c.config().scale_down.consolidation.safety_factor = 1;  // $8 > $6.07
  EXPECT_EQ(Removed(t.c.Plan(NoRateLimit())), Names{"n1"});
}

// A gang member's eviction restarts every member: the work lost counts the whole gang.
TEST(Consolidation, GangCountsEveryMember) {
  TrainingCase t(hours(1));
  t.Annotate(kExpectedRuntimeAnnotation, "1h45m");  // 45m left: $12
  ScaleDownPlan plan = t.c.Plan(NoRateLimit());
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);  // 2 x $2.07 = $4.13 < $12

  t.pod->meta.labels["scheduling.x-k8s.io/pod-group"] = "llm";
  t.Annotate(kGangSizeAnnotation, "4");  // 4 x $2.07 x 2 = $16.53 > $12
  plan = t.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  std::optional<ConsolidationVerdict> v = KeptVerdict(plan, "n1");
  ASSERT_TRUE(v.has_value());
  EXPECT_NEAR(v->gpu_hours_lost, 4.0, 1e-9);
}

// Moving a long run onto a node that would soon be empty keeps that node running: its price for
// the extra time is charged against the savings.
TEST(Consolidation, ChargesTheDestinationForRunningLonger) {
  TrainingCase t(hours(1));
  t.Annotate(kExpectedRuntimeAnnotation, "7h");  // 6h left (maxHorizon): saves $96
  // busy is a ReplicaSet's pod: n2 runs anyway, nothing to charge. 2 x $2.07 < $96.
  EXPECT_EQ(Removed(t.c.Plan(NoRateLimit())), Names{"n1"});

  // busy is training too and ends in 5 minutes: n2 would run 5h55m longer, $94.67.
  t.busy->meta.owner_references = {{"batch/v1", "Job", "other", "other-uid", true}};
  t.busy->start_time = t.c.now() - hours(1);
  t.busy->meta.annotations[std::string(kExpectedRuntimeAnnotation)] = "1h5m";
  ScaleDownPlan plan = t.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"),
              HasSubstr("consolidation does not pay: saves $96.00 over 6h against $2.07 of work "
                        "lost"));
  EXPECT_THAT(KeepReason(plan, "n1"),
              HasSubstr("less $94.67 for the nodes its pods move to running longer"));
  // The kept verdict is the one applied: with the extension, and not paying because of it.
  std::optional<ConsolidationVerdict> v = KeptVerdict(plan, "n1");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->decision, ConsolidationDecision::kDoesNotPay);
  EXPECT_NEAR(v->extension, 94.67, 0.01);
}

// The plan when `owner`'s pods were learned to run `runtime`.
ScaleDownPlan PlanWithLearned(TrainingCase& t, const std::string& owner, Duration runtime) {
  RuntimeHints hints;
  hints.Set(owner, runtime);
  PlannerInput in = t.c.Input();
  in.runtime_hints = &hints;
  return ScaleDownPlanner().Plan(in, NoRateLimit());
}

// A runtime learned for the pod's owner sets the horizon when nothing is annotated.
TEST(Consolidation, LearnedRuntimeSetsTheHorizon) {
  TrainingCase t(hours(2));
  ScaleDownPlan plan = PlanWithLearned(t, "ml/Job/train", hours(2) + minutes(20));
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("saves $5.33 over 20m against"));
  // Without it: as long again as it ran, 2h: $32 against $8.13.
  EXPECT_EQ(Removed(t.c.Plan(NoRateLimit())), Names{"n1"});
}

// A CronJob's runs are one owner: the Job of tonight's run, "nightly-<its minute>", finds what
// the runs before it taught under the CronJob's name.
TEST(Consolidation, ARunOfACronJobLearnsFromTheRunsBefore) {
  TrainingCase t(hours(2));
  const Time created = t.c.now() - hours(2);
  t.pod->meta.creation_timestamp = created;
  const auto minute = std::chrono::floor<minutes>(created.time_since_epoch()).count();
  t.pod->meta.owner_references = {
      {"batch/v1", "Job", "nightly-" + std::to_string(minute), "job-uid", true}};
  EXPECT_EQ(RuntimeOwnerKey(*t.pod), "ml/CronJob/nightly");
  ScaleDownPlan plan = PlanWithLearned(t, "ml/CronJob/nightly", hours(2) + minutes(20));
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("saves $5.33 over 20m against"));
}

// Only a name the CronJob controller would give, for a pod created in its run's minute or after
// it (within kCronJobRunSpread), names a CronJob.
TEST(Consolidation, CronJobOfReadsOnlyTheCronJobControllersNames) {
  model::Pod pod;
  pod.meta.namespace_ = "ml";
  const Time created = At("2026-12-02T03:00:30Z");
  pod.meta.creation_timestamp = created;
  const int64_t minute = std::chrono::floor<minutes>(created.time_since_epoch()).count();
  auto job = [](std::string name, std::string kind = "Job") {
    return model::OwnerReference{"batch/v1", std::move(kind), std::move(name), "uid", true};
  };
  EXPECT_EQ(CronJobOf(pod, job("nightly-" + std::to_string(minute))), "nightly");
  EXPECT_EQ(CronJobOf(pod, job("re-train-" + std::to_string(minute - 60 * 24 * 29))), "re-train");
  // A month and more before the pod, after it, a short number, another kind: not a CronJob's.
  EXPECT_EQ(CronJobOf(pod, job("nightly-" + std::to_string(minute - 60 * 24 * 31))), "");
  EXPECT_EQ(CronJobOf(pod, job("nightly-" + std::to_string(minute + 1))), "");
  EXPECT_EQ(CronJobOf(pod, job("train-12345678")), "");
  EXPECT_EQ(CronJobOf(pod, job("train-7")), "");
  EXPECT_EQ(CronJobOf(pod, job("train-" + std::to_string(minute) + "x")), "");
  EXPECT_EQ(CronJobOf(pod, job("-" + std::to_string(minute))), "");
  EXPECT_EQ(CronJobOf(pod, job("nightly-" + std::to_string(minute), "TFJob")), "");
  pod.meta.creation_timestamp.reset();
  EXPECT_EQ(CronJobOf(pod, job("nightly-" + std::to_string(minute))), "");
}

TEST(Consolidation, RestartablePodsAndServicesAreNotWeighed) {
  TrainingCase t(hours(5));
  t.Annotate(kExpectedRuntimeAnnotation, "5h10m");  // would not pay: 10m left
  EXPECT_TRUE(t.c.Plan(NoRateLimit()).scale_downs.empty());
  t.Annotate(kRestartableAnnotation, "true");
  ScaleDownPlan plan = t.c.Plan(NoRateLimit());
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_FALSE(plan.scale_downs[0].consolidation.has_value());
}

TEST(Consolidation, BadAnnotationsKeepTheNodeAndSayWhy) {
  TrainingCase t(hours(1));
  t.Annotate(kCheckpointIntervalAnnotation, "hourly");
  EXPECT_EQ(KeepReason(t.c.Plan(NoRateLimit()), "n1"),
            "pod ml/train-0 is not evictable: annotation "
            "tidepool.dev/checkpoint-interval=\"hourly\" is not a positive duration (e.g. 30m)");
  t.pod->meta.annotations.clear();
  t.Annotate(kLastCheckpointAnnotation, "yesterday");
  EXPECT_THAT(KeepReason(t.c.Plan(NoRateLimit()), "n1"),
              HasSubstr("tidepool.dev/last-checkpoint=\"yesterday\" is not an RFC 3339 time"));
  t.pod->meta.annotations.clear();
  t.pod->start_time.reset();
  EXPECT_THAT(KeepReason(t.c.Plan(NoRateLimit()), "n1"),
              HasSubstr("running without status.startTime"));
}

// The last-checkpoint timestamp, when the job writes one, wins over the interval; one older
// than the pod's start belongs to an earlier run and is ignored.
TEST(Consolidation, LastCheckpointTimestamp) {
  TrainingCase t(hours(3));
  t.Annotate(kLastCheckpointAnnotation, FormatRfc3339(t.c.now() - minutes(3)));
  t.Annotate(kCheckpointIntervalAnnotation, "30m");
  model::ConsolidationConfig config;
  model::Node node;
  node.allocatable = Res({{"nvidia.com/gpu", "8"}});
  t.pod->Finalize();
  Result<PodDisruption> d = DisruptionOf(*t.pod, node, 16, config, nullptr, t.c.now());
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->progress, ProgressBasis::kLastCheckpoint);
  EXPECT_EQ(d->unsaved, minutes(3));
  EXPECT_EQ(d->next_checkpoint, minutes(27));

  t.Annotate(kLastCheckpointAnnotation, FormatRfc3339(t.c.now() - hours(4)));
  d = DisruptionOf(*t.pod, node, 16, config, nullptr, t.c.now());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->progress, ProgressBasis::kCheckpointInterval);
  EXPECT_EQ(d->unsaved, Duration::zero());  // 3h is a multiple of 30m
}

}  // namespace
}  // namespace tidepool::planner
