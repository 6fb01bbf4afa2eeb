// The actuator against recording fakes of the provider and the cluster: the order of its calls,
// the fresh read of a node's pods after the taint, what it reports back, and where it stops.
#include "actuator/actuator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sched/cluster_model.h"
#include "tests/testing/values.h"

namespace tidepool::actuator {
namespace {

using autoscaler::Action;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tidepool::testing::At;

struct Calls {
  std::vector<std::string> log;
};

class FakeProvider : public cloud::CloudProvider {
 public:
  explicit FakeProvider(Calls& c) : c_(c) {}
  std::string_view Name() const override { return "fake"; }
  Result<std::vector<cloud::PoolSize>> Refresh(Time) override { return {}; }
  Result<void> IncreaseSize(const std::string& pool, int delta, Time) override {
    c_.log.push_back(fmt::format("increase {} {}", pool, delta));
    if (increase_fails) return Fail(Error::Code::kUnavailable, "quota");
    return {};
  }
  Result<void> DecreaseTargetSize(const std::string& pool, int delta, Time) override {
    c_.log.push_back(fmt::format("decrease {} {}", pool, delta));
    return {};
  }
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time) override {
    c_.log.push_back(fmt::format("delete machine {} {}", pool, node.name()));
    return {};
  }
  std::string PoolOf(const model::Node&) const override { return ""; }
  bool increase_fails = false;

 private:
  Calls& c_;
};

class FakeWriter : public ClusterWriter {
 public:
  explicit FakeWriter(Calls& c) : c_(c) {}
  Result<void> AddTaint(const std::string& node, const model::Taint& t) override {
    c_.log.push_back("taint " + node + " " + t.key + "=" + t.value);
    return {};
  }
  Result<void> RemoveTaint(const std::string& node, const std::string& key) override {
    c_.log.push_back("untaint " + node + " " + key);
    return {};
  }
  Result<void> Evict(const std::string& ns, const std::string& name) override {
    c_.log.push_back("evict " + ns + "/" + name);
    if (name == "refused") return Fail(Error::Code::kThrottled, "PDB");
    return {};
  }
  Result<void> DeleteNode(const std::string& name, const std::string& uid) override {
    c_.log.push_back("delete node " + name + " uid " + uid);
    return {};
  }
  Result<void> RecordEvent(const EventSpec& e) override {
    c_.log.push_back("event " + e.reason + " " + e.object_kind + " " + e.ns + "/" + e.name +
                     " uid " + e.uid);
    return {};
  }
  Result<std::vector<std::string>> PodsOnNode(const std::string& node) override {
    c_.log.push_back("list pods " + node);
    return fresh[node];
  }
  Result<void> SetProvisioningConditions(const std::string& ns, const std::string& name,
                                         const std::vector<model::Condition>& cs) override {
    c_.log.push_back(fmt::format("conditions {}/{} {}", ns, name, cs.size()));
    return {};
  }
  Result<void> SetCapacityBufferStatus(const std::string& ns, const std::string& name,
                                       const model::BufferStatus& s) override {
    c_.log.push_back(fmt::format("buffer status {}/{} {}", ns, name, s.conditions.size()));
    return {};
  }
  std::map<std::string, std::vector<std::string>> fresh;

 private:
  Calls& c_;
};

// Records every outcome it is told of.
struct Outcomes : Listener {
  void Carried(const Action& a, const std::string* pod, const Result<void>& r) override {
    seen.push_back(fmt::format("{}{}{}", autoscaler::ActionName(a), pod ? " " + *pod : "",
                               r ? "" : " failed: " + r.error().message()));
  }
  void SideFailure(const Error& e) override { seen.push_back("side: " + e.message()); }
  std::vector<std::string> seen;
};

class ActuatorTest : public ::testing::Test {
 protected:
  ActuatorTest() : clock_(At("2026-01-01T12:00:00Z")), provider_(calls_), writer_(calls_) {
    config_.pools.emplace_back().name = "cpu";
    config_.pools.back().max = 10;
    loop_.emplace(config_);
    node_.meta.name = "n1";
    node_.meta.uid = "uid-n1";
    pod_.meta.namespace_ = "default";
    pod_.meta.name = "p1";
    pod_.meta.uid = "uid-p1";
    pod_.node_name = "n1";
    pod_.phase = model::PodPhase::kRunning;
    pod_.Finalize();
    view_.nodes = {&node_};
    view_.pods = {&pod_};
  }

  size_t Carry(std::vector<Action> actions, Actuator::Proceed proceed = {}) {
    Actuator a(provider_, writer_, clock_, &outcomes_);
    return a.Carry(actions, view_, *loop_, proceed);
  }

  Calls calls_;
  ManualClock clock_;
  FakeProvider provider_;
  FakeWriter writer_;
  Outcomes outcomes_;
  model::AutoscalerConfig config_;
  std::optional<autoscaler::Autoscaler> loop_;
  model::Node node_;
  model::Pod pod_;
  autoscaler::Observation view_;
};

TEST_F(ActuatorTest, DeletesTheMachineBeforeTheNodeObject) {
  Carry({autoscaler::DeleteNode{"n1", "cpu", planner::RemovalKind::kEmpty, "empty"}});
  EXPECT_THAT(calls_.log, ElementsAre("delete machine cpu n1", "delete node n1 uid uid-n1"));
  EXPECT_THAT(outcomes_.seen, ElementsAre("DeleteNode"));
}

TEST_F(ActuatorTest, ANodeGoneFromTheViewIsDeletedAlready) {
  Carry({autoscaler::DeleteNode{"gone", "cpu", planner::RemovalKind::kEmpty, "empty"}});
  EXPECT_TRUE(calls_.log.empty());
  EXPECT_THAT(outcomes_.seen, ElementsAre("DeleteNode"));
}

TEST_F(ActuatorTest, TaintIsFollowedByAFreshReadOfTheNodesPods) {
  writer_.fresh["n1"] = {"default/p1"};
  Carry({autoscaler::TaintNode{"n1", "cpu", "empty"}});
  ASSERT_EQ(calls_.log.size(), 2u);
  EXPECT_EQ(calls_.log[0], "taint n1 ToBeDeletedByClusterAutoscaler=1767268800");
  EXPECT_EQ(calls_.log[1], "list pods n1");
  EXPECT_THAT(outcomes_.seen, ElementsAre("TaintNode"));
}

TEST_F(ActuatorTest, APodThePlanDidNotSeeUndoesTheTaintAndFailsTheRemoval) {
  writer_.fresh["n1"] = {"default/p1", "default/newcomer"};
  Carry({autoscaler::TaintNode{"n1", "cpu", "empty"}});
  EXPECT_THAT(calls_.log, ElementsAre(HasSubstr("taint n1"), "list pods n1",
                                      "untaint n1 ToBeDeletedByClusterAutoscaler"));
  ASSERT_EQ(outcomes_.seen.size(), 1u);
  EXPECT_THAT(outcomes_.seen[0], HasSubstr("default/newcomer"));
  EXPECT_THAT(outcomes_.seen[0], HasSubstr("stale data"));
}

TEST_F(ActuatorTest, EachEvictionIsReportedOnItsOwn) {
  Carry({autoscaler::EvictPods{"n1",
                               "cpu",
                               planner::RemovalKind::kUnderutilized,
                               {"default/p1", "default/refused"},
                               "drain"}});
  EXPECT_THAT(calls_.log, ElementsAre("evict default/p1", "evict default/refused"));
  EXPECT_THAT(outcomes_.seen,
              ElementsAre("EvictPods default/p1", "EvictPods default/refused failed: PDB"));
}

TEST_F(ActuatorTest, EventsCarryTheUidOfTheirObjectFromTheView) {
  Carry({autoscaler::Event{autoscaler::EventObject::kPod, "default/p1",
                           autoscaler::EventReason::kTriggeredScaleUp, "up"},
         autoscaler::Event{autoscaler::EventObject::kNode, "n1",
                           autoscaler::EventReason::kScaleDown, "down"},
         autoscaler::Event{autoscaler::EventObject::kStatus, "",
                           autoscaler::EventReason::kWarmScaleUp, "warm"}});
  EXPECT_THAT(calls_.log, ElementsAre("event TriggeredScaleUp Pod default/p1 uid uid-p1",
                                      "event ScaleDown Node /n1 uid uid-n1",
                                      "event WarmScaleUp ConfigMap / uid "));
}

// With the driver's model (which holds the view's pods by key) a pod's uid is looked up there,
// without indexing every pod of the view; a pod the model does not hold is still found in the
// view. The model here holds a pod of the same key as the view's with another uid, to tell
// where each answer came from.
TEST_F(ActuatorTest, EventsFindTheirPodOnTheModelFirst) {
  model::Pod on_model = pod_;
  on_model.meta.uid = "uid-on-model";
  model::Pod pending;
  pending.meta.namespace_ = "default";
  pending.meta.name = "p2";
  pending.meta.uid = "uid-p2";
  pending.Finalize();
  view_.pods.push_back(&pending);
  sched::ClusterModel model;
  ASSERT_TRUE(model.SetNode(sched::ClusterModel::Borrow(&node_)));
  ASSERT_TRUE(model.SetPod(sched::ClusterModel::Borrow(&on_model)));
  view_.model = &model;
  Carry({autoscaler::Event{autoscaler::EventObject::kPod, "default/p1",
                           autoscaler::EventReason::kTriggeredScaleUp, "up"},
         autoscaler::Event{autoscaler::EventObject::kPod, "default/p2",
                           autoscaler::EventReason::kTriggeredScaleUp, "up"},
         autoscaler::Event{autoscaler::EventObject::kPod, "default/absent",
                           autoscaler::EventReason::kTriggeredScaleUp, "up"}});
  EXPECT_THAT(calls_.log, ElementsAre("event TriggeredScaleUp Pod default/p1 uid uid-on-model",
                                      "event TriggeredScaleUp Pod default/p2 uid uid-p2",
                                      "event TriggeredScaleUp Pod default/absent uid "));
}

TEST_F(ActuatorTest, StopsWhereProceedSaysNo) {
  int asked = 0;
  size_t done = Carry({autoscaler::IncreasePool{"cpu", 1, {}, 0, "up"},
                       autoscaler::DecreaseTarget{"cpu", 1, "down"}},
                      [&](const Action&) { return ++asked == 1; });
  EXPECT_EQ(done, 1u);
  EXPECT_THAT(calls_.log, ElementsAre("increase cpu 1"));
}

TEST_F(ActuatorTest, AFailedIncreaseIsReportedToTheLoop) {
  provider_.increase_fails = true;
  Carry({autoscaler::IncreasePool{"cpu", 2, {}, 0, "up"}});
  EXPECT_THAT(outcomes_.seen, ElementsAre("IncreasePool failed: quota"));
  autoscaler::Status s = loop_->GetStatus();
  ASSERT_EQ(s.pools.size(), 1u);
  EXPECT_THAT(s.pools[0].backoff_reason, HasSubstr("increasing the pool by 2 failed: quota"));
}

}  // namespace
}  // namespace tidepool::actuator

// --- Stopped machines (pools[].scaleDown.mode deallocate) -----------------------------------

namespace tidepool::actuator {
namespace {

class FakeStoppingProvider : public FakeProvider, public cloud::MachineStopper {
 public:
  explicit FakeStoppingProvider(Calls& c) : FakeProvider(c), c_(c) {}
  Result<void> StopNode(const std::string& pool, const model::Node& node, Time) override {
    c_.log.push_back(fmt::format("stop machine {} {}", pool, node.name()));
    return {};
  }
  Result<void> DeleteStopped(const std::string& pool, int count, Time) override {
    c_.log.push_back(fmt::format("delete stopped {} {}", pool, count));
    return {};
  }

 private:
  Calls& c_;
};

TEST_F(ActuatorTest, AStopGoesToTheProvidersStopperThenTheNodeObjectGoes) {
  FakeStoppingProvider stopping(calls_);
  Actuator a(stopping, writer_, clock_, &outcomes_);
  std::vector<Action> actions = {
      autoscaler::DeleteNode{"n1", "cpu", planner::RemovalKind::kEmpty, "empty", std::nullopt,
                             autoscaler::RemovalMethod::kStop},
      autoscaler::DeleteStopped{"cpu", 2, "over maxStopped"}};
  a.Carry(actions, view_, *loop_);
  EXPECT_THAT(calls_.log, ElementsAre("stop machine cpu n1", "delete node n1 uid uid-n1",
                                      "delete stopped cpu 2"));
  EXPECT_THAT(outcomes_.seen, ElementsAre("DeleteNode", "DeleteStopped"));
}

TEST_F(ActuatorTest, AStopOnAProviderThatCannotStopFailsAndDeletesNothing) {
  Carry({autoscaler::DeleteNode{"n1", "cpu", planner::RemovalKind::kEmpty, "empty", std::nullopt,
                                autoscaler::RemovalMethod::kStop}});
  EXPECT_TRUE(calls_.log.empty()) << calls_.log.front();
  ASSERT_EQ(outcomes_.seen.size(), 1u);
  EXPECT_THAT(outcomes_.seen[0], HasSubstr("DeleteNode failed: pool cpu: provider fake cannot "
                                           "stop machines"));
}

}  // namespace
}  // namespace tidepool::actuator
