// RuntimeTracker: mean runtimes per owner, learned once per finished training pod.
#include "autoscaler/runtime_tracker.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sched/cluster_model.h"
#include "tests/testing/values.h"

namespace tidepool::autoscaler {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using tidepool::testing::At;

class Pods {
 public:
  model::Pod& Add(std::string name, std::string job, Time start, model::PodPhase phase) {
    model::Pod& p = pods_.emplace_back();
    p.meta.name = name;
    p.meta.namespace_ = "ml";
    p.meta.uid = "uid-" + name;
    p.meta.owner_references = {{"batch/v1", "Job", std::move(job), "job-uid", true}};
    p.start_time = start;
    p.phase = phase;
    return p;
  }
  std::vector<const model::Pod*> All() const {
    std::vector<const model::Pod*> out;
    for (const model::Pod& p : pods_) out.push_back(&p);
    return out;
  }
  void Clear() { pods_.clear(); }

 private:
  std::deque<model::Pod> pods_;
};

TEST(RuntimeTracker, LearnsTheMeanRuntimeOfFinishedTrainingPodsPerOwner) {
  const Time t0 = At("2026-11-26T00:00:00Z");
  Pods pods;
  pods.Add("a", "train", t0, model::PodPhase::kSucceeded);
  pods.Add("b", "train", t0 + hours(1), model::PodPhase::kRunning);
  pods.Add("c", "other", t0, model::PodPhase::kFailed);  // failed runs teach nothing
  RuntimeTracker tracker;
  tracker.Observe(pods.All(), t0 + hours(2));
  ASSERT_EQ(tracker.hints().size(), 1u);
  ASSERT_NE(tracker.hints().Find("ml/Job/train"), nullptr);
  EXPECT_EQ(*tracker.hints().Find("ml/Job/train"), hours(2));

  // Seen again later: counted once, not with a longer runtime.
  tracker.Observe(pods.All(), t0 + hours(5));
  ASSERT_NE(tracker.hints().Find("ml/Job/train"), nullptr);
  EXPECT_EQ(*tracker.hints().Find("ml/Job/train"), hours(2));

  // b finishes after 1h: the mean of 2h and 1h.
  pods.Clear();
  pods.Add("a", "train", t0, model::PodPhase::kSucceeded);
  pods.Add("b", "train", t0 + hours(1), model::PodPhase::kSucceeded);
  tracker.Observe(pods.All(), t0 + hours(2));
  ASSERT_NE(tracker.hints().Find("ml/Job/train"), nullptr);
  EXPECT_EQ(*tracker.hints().Find("ml/Job/train"), minutes(90));
}

// What a planning pass derives from the hints is kept by their version: it must change with
// what they say, and only then, and never to another hints object's.
TEST(RuntimeTracker, HintsChangeVersionExactlyWhenTheyLearn) {
  const Time t0 = At("2026-11-26T00:00:00Z");
  Pods pods;
  pods.Add("a", "train", t0, model::PodPhase::kSucceeded);
  RuntimeTracker tracker;
  EXPECT_EQ(tracker.hints().version(), 0u);
  tracker.Observe(pods.All(), t0 + hours(2));
  const uint64_t learned = tracker.hints().version();
  EXPECT_NE(learned, 0u);
  tracker.Observe(pods.All(), t0 + hours(3));  // nothing new
  EXPECT_EQ(tracker.hints().version(), learned);
  pods.Add("b", "train", t0 + hours(1), model::PodPhase::kSucceeded);
  tracker.Observe(pods.All(), t0 + hours(3));
  EXPECT_NE(tracker.hints().version(), learned);
  planner::RuntimeHints other;  // the same owner and runtime, another object
  other.Set("ml/Job/train", hours(2));
  EXPECT_NE(other.version(), learned);
  EXPECT_NE(other.version(), tracker.hints().version());
}

TEST(RuntimeTracker, IgnoresPodsThatAreNotTrainingOrHaveNoStartTime) {
  const Time t0 = At("2026-11-26T00:00:00Z");
  Pods pods;
  model::Pod& rs = pods.Add("web", "x", t0, model::PodPhase::kSucceeded);
  rs.meta.owner_references = {{"apps/v1", "ReplicaSet", "web", "rs-uid", true}};
  pods.Add("nostart", "train", t0, model::PodPhase::kSucceeded).start_time.reset();
  RuntimeTracker tracker;
  tracker.Observe(pods.All(), t0 + hours(1));
  EXPECT_TRUE(tracker.hints().empty());
}

// Each run of a CronJob is a new Job ("nightly-<its minute>"): what a run teaches is learned for
// the CronJob, so the next night's run finds it.
TEST(RuntimeTracker, TheRunsOfACronJobLearnTogether) {
  const Time night1 = At("2026-11-26T02:00:00Z");
  const Time night2 = night1 + hours(24);
  auto run = [](Time t) {
    return fmt::format("nightly-{}", std::chrono::floor<minutes>(t.time_since_epoch()).count());
  };
  Pods pods;
  pods.Add("a", run(night1), night1, model::PodPhase::kSucceeded).meta.creation_timestamp = night1;
  RuntimeTracker tracker;
  tracker.Observe(pods.All(), night1 + minutes(40));
  ASSERT_NE(tracker.hints().Find("ml/CronJob/nightly"), nullptr);
  EXPECT_EQ(*tracker.hints().Find("ml/CronJob/nightly"), minutes(40));
  model::Pod& b = pods.Add("b", run(night2), night2, model::PodPhase::kSucceeded);
  b.meta.creation_timestamp = night2;
  EXPECT_EQ(planner::RuntimeOwnerKey(b), "ml/CronJob/nightly");
  tracker.Observe(pods.All(), night2 + minutes(20));
  EXPECT_EQ(tracker.hints().size(), 1u);
  EXPECT_EQ(*tracker.hints().Find("ml/CronJob/nightly"), minutes(30));
}

// Reading only the pods the model saw become Succeeded learns what a read of every pod learns,
// scan after scan: pods finish, finished pods are replaced (a label) or deleted and their names
// come back with new uids, and now and then the model is built again (a relist). The run deletes
// enough finished pods that the model reader prunes what it learned from (at most twice the
// present ones, and 1,024, over).
TEST(RuntimeTracker, TheModelsNewlySucceededPodsTeachWhatEveryPodTeaches) {
  const Time t0 = At("2026-11-26T00:00:00Z");
  std::mt19937 rng(7);
  auto pick = [&rng](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  constexpr int kNames = 60, kJobs = 10;
  std::map<int, std::shared_ptr<model::Pod>> present;
  std::vector<int> generation(kNames, 0);
  auto model = std::make_unique<sched::ClusterModel>();
  RuntimeTracker by_list, by_model;
  Time now = t0;
  int finished_deleted = 0, scans = 0;
  for (int step = 0; step < 20000; ++step) {
    const int k = pick(kNames);
    const int op = pick(10);
    if (op < 3) {
      if (auto it = present.find(k); it != present.end()) {
        finished_deleted += it->second->phase == model::PodPhase::kSucceeded;
        ASSERT_TRUE(model->DeletePod("ml", it->second->meta.name).has_value());
        present.erase(it);
        ++generation[k];
      }
    } else {
      // A new pod, or the same one again: finished (Succeeded is for good), or relabelled.
      auto pod = std::make_shared<model::Pod>();
      if (auto it = present.find(k); it != present.end()) {
        *pod = *it->second;
      } else {
        pod->meta.name = fmt::format("p{}", k);
        pod->meta.namespace_ = "ml";
        pod->meta.uid = fmt::format("uid-{}-{}", k, generation[k]);
        pod->meta.owner_references = {
            {"batch/v1", "Job", fmt::format("job{}", k % kJobs), "job-uid", true}};
        pod->start_time = now - std::chrono::minutes(pick(300));
        pod->phase = model::PodPhase::kRunning;
      }
      pod->meta.labels["round"] = std::to_string(pick(3));
      if (pick(2) == 0) pod->phase = model::PodPhase::kSucceeded;
      pod->Finalize();
      present[k] = pod;
      ASSERT_TRUE(model->SetPod(pod).has_value());
    }
    if (pick(3) != 0) continue;
    now += std::chrono::seconds(10);
    if (pick(50) == 0) {  // a relist: a new model of the same pods
      model = std::make_unique<sched::ClusterModel>();
      for (const auto& [n, pod] : present) ASSERT_TRUE(model->SetPod(pod).has_value());
    }
    std::vector<const model::Pod*> all;
    for (const auto& [n, pod] : present) all.push_back(pod.get());
    by_list.Observe(all, now);
    by_model.Observe(*model, now);
    ++scans;
    ASSERT_EQ(by_model.hints().size(), by_list.hints().size()) << "scan " << scans;
    for (int j = 0; j < kJobs; ++j) {
      const std::string owner = fmt::format("ml/Job/job{}", j);
      const Duration* a = by_list.hints().Find(owner);
      const Duration* b = by_model.hints().Find(owner);
      ASSERT_EQ(a == nullptr, b == nullptr) << owner << " at scan " << scans;
      if (a != nullptr) {
        ASSERT_EQ(*a, *b) << owner << " at scan " << scans;
      }
    }
  }
  EXPECT_GT(finished_deleted, 1024 + 2 * kNames);  // the prune ran
}

}  // namespace
}  // namespace tidepool::autoscaler
