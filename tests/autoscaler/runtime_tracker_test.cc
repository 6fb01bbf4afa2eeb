// RuntimeTracker: mean runtimes per owner, learned once per finished training pod.
#include "autoscaler/runtime_tracker.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace tidepool::autoscaler
