// The controller around the decision loop, with recording fakes for the cluster, the writer and
// the provider: passes, provider failures, leadership, dry runs, the scale-down writes.
#include "controller/controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "controller/model_feed.h"
#include "kube/codec/objects.h"
#include "kube/config/autoscaler_config.h"
#include "planner/cluster.h"
#include "tests/testing/observation_versions.h"

namespace tidepool::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class FakeReader : public ClusterReader {
 public:
  bool HasSynced() const override { return synced; }
  ClusterView Snapshot() const override {
    reads.push_back("snapshot");
    ClusterView v;
    std::vector<std::shared_ptr<const model::Node>> node_list;
    for (const auto& [_, n] : nodes) node_list.push_back(std::make_shared<model::Node>(n));
    v.nodes = SharedList<model::Node>::Of(node_list);
    std::vector<std::shared_ptr<const model::Pod>> pod_list;
    for (const auto& [_, p] : pods) pod_list.push_back(std::make_shared<model::Pod>(p));
    v.pods = SharedList<model::Pod>::Of(pod_list);
    for (const auto& [_, r] : requests) {
      v.provisioning_requests.push_back(std::make_shared<model::ProvisioningRequest>(r));
    }
    for (const auto& [_, t] : templates) {
      v.pod_templates.push_back(std::make_shared<model::PodTemplate>(t));
    }
    v.version = Version(v);
    return v;
  }
  // The view's version by what it holds when `versions.on` (observation_versions.h), else 0.
  uint64_t Version(const ClusterView& v) const { return versions.Of(ObservationOf(v)); }
  void SetOnChange(std::function<void(bool)> f) override { on_change = std::move(f); }
  sched::ClusterModel* SyncModel(const ClusterView& view) override {
    reads.push_back("model");
    return feed ? feed->Sync({view.pods, view.nodes}) : nullptr;
  }

  // Keeps a model of `nodes` and `pods` (fed every key now; a later change is marked with
  // feed->NodeChanged or PodChanged), in the debug mode that checks every scale-down pass on it
  // against a built snapshot when `verify`. Snapshot copies every object, so the caches always
  // look newer than the view and every key is applied again at each Sync.
  void KeepModel(bool verify) {
    feed = std::make_unique<ModelFeed>(
        [this](const std::string& key) -> std::shared_ptr<const model::Pod> {
          auto it = pods.find(key);
          return it == pods.end() ? nullptr : std::make_shared<model::Pod>(it->second);
        },
        [this](const std::string& name) -> std::shared_ptr<const model::Node> {
          auto it = nodes.find(name);
          return it == nodes.end() ? nullptr : std::make_shared<model::Node>(it->second);
        });
    feed->model().SetVerify(verify);
    for (const auto& [name, _] : nodes) feed->NodeChanged(name);
    for (const auto& [key, _] : pods) feed->PodChanged(key);
  }

  bool synced = true;
  std::map<std::string, model::Node> nodes;
  std::map<std::string, model::Pod> pods;
  std::map<std::string, model::ProvisioningRequest> requests;
  std::map<std::string, model::PodTemplate> templates;
  std::function<void(bool)> on_change;
  std::unique_ptr<ModelFeed> feed;
  mutable std::vector<std::string> reads;  // "snapshot" and "model", in call order
  mutable autoscaler::testing::ContentVersions versions;
};

class FakeWriter : public ClusterWriter {
 public:
  Result<void> AddTaint(const std::string& node, const model::Taint& t) override {
    calls.push_back("taint " + node + " " + t.key);
    return {};
  }
  Result<void> RemoveTaint(const std::string& node, const std::string& key) override {
    calls.push_back("untaint " + node + " " + key);
    return {};
  }
  Result<void> Evict(const std::string& ns, const std::string& name) override {
    calls.push_back("evict " + ns + "/" + name);
    return {};
  }
  Result<void> DeleteNode(const std::string& name, const std::string&) override {
    calls.push_back("delete node " + name);
    return {};
  }
  Result<void> RecordEvent(const EventSpec& e) override {
    events.push_back(e.reason + " " + e.object_kind + " " +
                     (e.ns.empty() ? e.name : e.ns + "/" + e.name));
    return {};
  }
  Result<std::vector<std::string>> PodsOnNode(const std::string& node) override {
    calls.push_back("list pods " + node);
    auto it = fresh_pods.find(node);
    if (it == fresh_pods.end()) return std::vector<std::string>{};
    return it->second;
  }
  Result<void> SetProvisioningConditions(const std::string& ns, const std::string& name,
                                         const std::vector<model::Condition>& c) override {
    calls.push_back("conditions " + ns + "/" + name);
    for (const model::Condition& x : c) conditions[ns + "/" + name].push_back(x);
    return {};
  }
  Result<void> SetCapacityBufferStatus(const std::string& ns, const std::string& name,
                                       const model::BufferStatus& s) override {
    calls.push_back("buffer status " + ns + "/" + name);
    buffer_status[ns + "/" + name] = s;
    return {};
  }
  std::map<std::string, model::BufferStatus> buffer_status;
  Result<void> WriteStatus(const std::string& text) override {
    status = text;
    return {};
  }
  Result<std::optional<std::string>> ReadWarmState() override {
    ++warm_reads;
    return warm_state;
  }
  Result<void> WriteWarmState(const std::string& text) override {
    ++warm_writes;
    warm_state = text;
    return {};
  }
  std::optional<std::string> warm_state;
  int warm_reads = 0;
  int warm_writes = 0;
  std::vector<std::string> calls;
  std::vector<std::string> events;
  std::map<std::string, std::vector<model::Condition>> conditions;  // written, per request
  std::string status;
  // What the API server "really" has on a node, when it differs from the reader's cache.
  std::map<std::string, std::vector<std::string>> fresh_pods;
};

class FakeProvider : public cloud::CloudProvider {
 public:
  std::string_view Name() const override { return "fake"; }
  Result<std::vector<cloud::PoolSize>> Refresh(Time) override {
    ++refreshes;
    if (refresh_error) return std::unexpected(*refresh_error);
    std::vector<cloud::PoolSize> out;
    for (const auto& [pool, n] : targets) out.push_back({pool, n, n, false, ""});
    return out;
  }
  Result<void> IncreaseSize(const std::string& pool, int delta, Time) override {
    calls.push_back("increase " + pool + " +" + std::to_string(delta));
    if (auto it = increase_errors.find(pool); it != increase_errors.end()) {
      return std::unexpected(it->second);
    }
    targets[pool] += delta;
    return {};
  }
  Result<void> DecreaseTargetSize(const std::string& pool, int delta, Time) override {
    calls.push_back("decrease " + pool + " -" + std::to_string(delta));
    targets[pool] -= delta;
    return {};
  }
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time) override {
    calls.push_back("delete " + pool + " " + node.name());
    targets[pool] -= 1;
    return {};
  }
  std::string PoolOf(const model::Node& node) const override {
    auto it = pool_of.find(node.name());
    return it == pool_of.end() ? "" : it->second;
  }

  std::map<std::string, int> targets;
  std::optional<Error> refresh_error;
  std::map<std::string, Error> increase_errors;  // pools whose increases fail so
  std::map<std::string, std::string> pool_of;    // PoolOf by node name ("" for the others)
  std::atomic<int> refreshes = 0;
  std::vector<std::string> calls;
};

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config =
        kube::config::LoadAutoscalerConfig(TIDEPOOL_SOURCE_DIR "/examples/seed/config.yaml");
    ASSERT_TRUE(config) << config.error().message();
    config_ = *config;
    auto state = kube::codec::LoadStateFile(TIDEPOOL_SOURCE_DIR "/examples/seed/state.yaml");
    ASSERT_TRUE(state) << state.error().message();
    for (const auto& n : state->nodes) reader_.nodes[n.name()] = n;
    for (const auto& p : state->pods) reader_.pods[p.meta.Key()] = p;
    for (const auto& p : config_.pools) provider_.targets[p.name] = 0;
    provider_.targets["cpupool"] = 1;
    provider_.targets["gpupool"] = 1;
  }

  // A PodTemplate "default/NAME" of a one-GPU pod, for `pool` when given.
  void AddGpuTemplate(const std::string& name, const std::string& pool = "") {
    model::PodTemplate& t = reader_.templates[name];
    t.meta.name = name;
    t.meta.namespace_ = "default";
    t.pod.meta = t.meta;
    model::Container c{.name = "train"};
    c.requests.Set(model::InternResource(model::kNvidiaGpu), 1);
    t.pod.containers.push_back(c);
    if (!pool.empty()) t.pod.node_selector[std::string(model::kLabelPool)] = pool;
    t.pod.Finalize();
  }
  // A best-effort-atomic ProvisioningRequest "default/train" created now.
  void AddAtomicRequest(std::vector<model::PodSet> pod_sets) {
    model::ProvisioningRequest& r = reader_.requests["train"];
    r.meta.name = "train";
    r.meta.namespace_ = "default";
    r.meta.creation_timestamp = clock_.Now();
    r.class_name = std::string(model::kBestEffortAtomicClass);
    r.provisioning_class = model::ProvisioningClass::kBestEffortAtomic;
    r.pod_sets = std::move(pod_sets);
  }

  // Passes 10 s apart until the provider is called (at most 80); a taint the controller writes
  // shows up in the cluster, as the API server would show it.
  void RunUntilTheProviderIsCalled(Controller& c) {
    for (int i = 0; i < 80 && provider_.calls.empty(); ++i) {
      c.RunOnce(clock_.Now());
      clock_.Advance(std::chrono::seconds(10));
      for (const auto& call : writer_.calls) {
        if (!call.starts_with("taint ")) continue;
        std::string node = call.substr(6, call.find(' ', 6) - 6);
        auto& n = reader_.nodes[node];
        if (!n.taints.empty()) continue;
        n.taints.push_back(
            {std::string(planner::kToBeDeletedTaint), "1", model::TaintEffect::kNoSchedule});
        if (reader_.feed) reader_.feed->NodeChanged(node);
      }
    }
  }
  // The seed cluster's idle GPU node went; the CPU pool, at its min of 1, kept its node.
  void ExpectTheIdleGpuNodeDeleted() {
    ASSERT_THAT(provider_.calls, ElementsAre("delete gpupool k8s-gpupool-29744472-0"));
    EXPECT_THAT(writer_.calls, ::testing::Contains("taint k8s-gpupool-29744472-0 "
                                                   "ToBeDeletedByClusterAutoscaler"));
    EXPECT_THAT(writer_.calls, ::testing::Contains("delete node k8s-gpupool-29744472-0"));
    EXPECT_THAT(writer_.events, ::testing::Contains("ScaleDown Node k8s-gpupool-29744472-0"));
    for (const auto& call : writer_.calls) {
      EXPECT_THAT(call, ::testing::Not(HasSubstr("cpupool")));
    }
  }

  std::unique_ptr<Controller> Make(ControllerOptions options = {}) {
    return std::make_unique<Controller>(config_, reader_, writer_, provider_, clock_, options);
  }

  model::AutoscalerConfig config_;
  FakeReader reader_;
  FakeWriter writer_;
  FakeProvider provider_;
  ManualClock clock_{*ParseRfc3339("2026-11-22T10:00:00Z")};
};

// The seed cluster's pending 1-GPU pod: the first pass opens the batch, a pass after the batch
// window asks the provider for one node and tells the pod.
TEST_F(ControllerTest, PendingGpuPodScalesUpAfterTheBatchWindow) {
  auto c = Make();
  PassReport first = c->RunOnce(clock_.Now());
  EXPECT_TRUE(first.acted);
  EXPECT_THAT(provider_.calls, IsEmpty());
  clock_.Advance(std::chrono::seconds(2));
  c->RunOnce(clock_.Now());
  ASSERT_EQ(provider_.calls.size(), 1u);
  EXPECT_THAT(provider_.calls[0], HasSubstr("increase gpupool"));
  EXPECT_THAT(writer_.events,
              ::testing::Contains(HasSubstr("TriggeredScaleUp Pod default/tensorflow")));
  // The same pod does not cause a second scale-up: the node is upcoming.
  clock_.Advance(std::chrono::seconds(30));
  c->RunOnce(clock_.Now());
  EXPECT_EQ(provider_.calls.size(), 1u);
  ASSERT_TRUE(c->Status().has_value());
  EXPECT_THAT(writer_.status, HasSubstr("gpupool"));
}

// The provider is read on the scan interval and after tidepool's own actions: passes woken by
// pod events in between (the batch window opening) reuse the last answer and call no cloud API.
TEST_F(ControllerTest, ProviderIsReadOnTheScanIntervalAndAfterActionsOnly) {
  auto c = Make();
  c->RunOnce(clock_.Now());  // opens the batch for the pending GPU pod
  EXPECT_EQ(provider_.refreshes, 1);
  clock_.Advance(std::chrono::milliseconds(300));
  PassReport window = c->RunOnce(clock_.Now());  // a pod event's pass: the window still open
  EXPECT_TRUE(window.acted);
  EXPECT_TRUE(window.actions.empty());
  EXPECT_EQ(provider_.refreshes, 1) << "a pass that decided nothing read the provider";
  clock_.Advance(std::chrono::seconds(2));
  c->RunOnce(clock_.Now());  // the batch closes: IncreasePool
  ASSERT_EQ(provider_.calls.size(), 1u);
  int before = provider_.refreshes;
  clock_.Advance(std::chrono::milliseconds(300));
  c->RunOnce(clock_.Now());
  EXPECT_EQ(provider_.refreshes, before + 1) << "the increase was not read back";
  EXPECT_EQ(provider_.calls.size(), 1u);
  // Without actions, the next read is a scan interval after the last.
  before = provider_.refreshes;
  clock_.Advance(config_.scan_interval);
  c->RunOnce(clock_.Now());
  EXPECT_EQ(provider_.refreshes, before + 1);
}

// With versioned views, a pass that sees the view and the provider's answers of a pass that decided
// nothing skips the loop's Step (PassReport::unchanged); any change in either ends that.
class ControllerQuietTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    reader_.versions.on = true;
    c_ = Make();
    // The pending GPU pod: the batch opens, then the pool grows and is read back.
    c_->RunOnce(clock_.Now());
    clock_.Advance(std::chrono::seconds(2));
    c_->RunOnce(clock_.Now());
    ASSERT_EQ(provider_.calls.size(), 1u);
  }
  // Passes a scan interval apart (each reads the provider) until one is skipped; how many ran.
  int PassesUntilQuiet(int at_most = 10) {
    for (int i = 1; i <= at_most; ++i) {
      PassReport r = Pass();
      EXPECT_TRUE(r.acted);
      if (r.unchanged) return i;
    }
    return at_most + 1;
  }
  PassReport Pass() {
    clock_.Advance(config_.scan_interval);
    return c_->RunOnce(clock_.Now());
  }

  std::unique_ptr<Controller> c_;
};

TEST_F(ControllerQuietTest, AnUnchangedClusterSkipsTheStepAndDecidesNothingNew) {
  ASSERT_LE(PassesUntilQuiet(), 3);
  int refreshes = provider_.refreshes;
  for (int i = 0; i < 5; ++i) {
    PassReport r = Pass();
    EXPECT_TRUE(r.unchanged) << "pass " << i;
    EXPECT_THAT(r.actions, IsEmpty());
  }
  EXPECT_EQ(provider_.refreshes, refreshes + 5) << "skipped passes still read the provider";
  EXPECT_EQ(provider_.calls.size(), 1u);
}

TEST_F(ControllerQuietTest, WithoutVersionsNoPassIsSkipped) {
  reader_.versions.on = false;
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(Pass().unchanged) << "pass " << i;
}

TEST_F(ControllerQuietTest, ANewPendingPodEndsTheQuiet) {
  ASSERT_LE(PassesUntilQuiet(), 3);
  model::Pod pod = reader_.pods.at("default/tensorflow-5d9f8b7c6d-k4lmn");
  pod.meta.name = "tensorflow-2";
  pod.meta.uid = "uid-tensorflow-2";
  reader_.pods[pod.meta.Key()] = pod;
  PassReport r = Pass();
  EXPECT_FALSE(r.unchanged);
  clock_.Advance(std::chrono::seconds(2));
  c_->RunOnce(clock_.Now());
  ASSERT_EQ(provider_.calls.size(), 2u);
  EXPECT_THAT(provider_.calls[1], HasSubstr("increase gpupool"));
}

TEST_F(ControllerQuietTest, APoolResizedOutsideTidepoolEndsTheQuiet) {
  ASSERT_LE(PassesUntilQuiet(), 3);
  provider_.targets["cpupool"] += 1;  // someone else asked the cloud for a node
  EXPECT_FALSE(Pass().unchanged);
  EXPECT_LE(PassesUntilQuiet(), 3) << "the same new sizes again are quiet again";
}

// A node its labels do not place (the planners ask the provider's mapping for it).
TEST_F(ControllerQuietTest, ANodeTheProviderMapsElsewhereEndsTheQuiet) {
  model::Node& node = reader_.nodes.begin()->second;
  node.meta.labels.clear();
  ASSERT_LE(PassesUntilQuiet(), 3);
  provider_.pool_of[node.name()] = "cpupool";
  EXPECT_FALSE(Pass().unchanged);
  EXPECT_LE(PassesUntilQuiet(), 3);
}

// A ProvisioningRequest read by the cluster reader reaches the loop: it is accepted, its pods
// are planned (the GPU pool grows) and the request, not a pod, is told.
TEST_F(ControllerTest, ProvisioningRequestsReachTheLoopAndTheirConditionsAreWritten) {
  AddGpuTemplate("ppt");
  AddAtomicRequest({{"ppt", 2}});
  auto ctl = Make();
  ctl->RunOnce(clock_.Now());
  EXPECT_THAT(writer_.calls, ::testing::Contains("conditions default/train"));
  clock_.Advance(std::chrono::seconds(2));
  ctl->RunOnce(clock_.Now());
  ASSERT_FALSE(provider_.calls.empty());
  EXPECT_THAT(provider_.calls[0], HasSubstr("increase gpupool"));
  EXPECT_THAT(writer_.events,
              ::testing::Contains("TriggeredScaleUp ProvisioningRequest default/train"));
  EXPECT_THAT(writer_.events, ::testing::Not(::testing::Contains(HasSubstr("train:0-"))));
}

// A best-effort-atomic request over two pools, and a provider that refuses the second pool's
// increase: the pool that grew gives its nodes back and the request is Failed naming the pool
// and the provider's error.
TEST_F(ControllerTest, AtomicRequestRollsBackWhenTheProviderRefusesOnePool) {
  AddGpuTemplate("ppt-light", "gpupool");
  AddGpuTemplate("ppt-heavy", "gpuheavy");
  AddAtomicRequest({{"ppt-light", 2}, {"ppt-heavy", 1}});
  provider_.increase_errors.emplace(
      "gpuheavy", Error(Error::Code::kUnavailable, "ARM 409 OperationNotAllowed: quota exceeded"));
  auto ctl = Make();
  for (int i = 0; i < 4; ++i) {
    ctl->RunOnce(clock_.Now());
    clock_.Advance(std::chrono::seconds(2));
  }
  EXPECT_THAT(provider_.calls, ::testing::Contains("increase gpuheavy +1"));
  // The seed's pending GPU pod shares the increase: +3, of which the request gives back its 2.
  EXPECT_THAT(provider_.calls, ::testing::Contains("increase gpupool +3"));
  EXPECT_THAT(provider_.calls, ::testing::Contains("decrease gpupool -2"));
  EXPECT_EQ(provider_.targets["gpupool"], 2) << "the seed's node and its pending pod's";
  const auto& written = writer_.conditions["default/train"];
  auto failed = std::find_if(written.begin(), written.end(), [](const model::Condition& c) {
    return c.type == model::ProvisioningCondition::kFailed;
  });
  ASSERT_NE(failed, written.end());
  EXPECT_EQ(failed->reason, "ScaleUpFailed");
  EXPECT_THAT(failed->message, HasSubstr("failed in pool gpuheavy: increasing the pool by 1 "
                                         "failed: ARM 409 OperationNotAllowed: quota exceeded"));
  EXPECT_THAT(writer_.events,
              ::testing::Contains("ProvisioningFailed ProvisioningRequest default/train"));
}

// A provider that cannot be read: no decision at all (never plan on half a view), and the
// next try waits.
TEST_F(ControllerTest, ProviderRefreshFailureSkipsThePass) {
  provider_.refresh_error = Error(Error::Code::kUnavailable, "ARM said 503");
  auto c = Make();
  PassReport r = c->RunOnce(clock_.Now());
  EXPECT_FALSE(r.acted);
  EXPECT_THAT(r.skipped_because, HasSubstr("ARM said 503"));
  clock_.Advance(std::chrono::milliseconds(500));
  r = c->RunOnce(clock_.Now());
  EXPECT_FALSE(r.acted);
  EXPECT_EQ(provider_.refreshes, 1) << "retried before the backoff ran out";
  provider_.refresh_error.reset();
  clock_.Advance(std::chrono::seconds(1));
  r = c->RunOnce(clock_.Now());
  EXPECT_TRUE(r.acted);
}

TEST_F(ControllerTest, NotLeaderDoesNothing) {
  bool leader = false;
  ControllerOptions o;
  o.is_leader = [&] { return leader; };
  auto c = Make(o);
  for (int i = 0; i < 3; ++i) {
    PassReport r = c->RunOnce(clock_.Now());
    EXPECT_FALSE(r.acted);
    EXPECT_EQ(r.skipped_because, "not the leader");
    clock_.Advance(std::chrono::seconds(5));
  }
  EXPECT_EQ(provider_.refreshes, 0);
  EXPECT_THAT(provider_.calls, IsEmpty());
  leader = true;
  c->RunOnce(clock_.Now());
  clock_.Advance(std::chrono::seconds(2));
  c->RunOnce(clock_.Now());
  EXPECT_EQ(provider_.calls.size(), 1u);
}

// Leadership lost between two actions of one pass: the rest is dropped at once.
TEST_F(ControllerTest, LosingLeadershipMidPassDropsTheRemainingActions) {
  int checks = 0;
  ControllerOptions o;
  // Leader for the pass check and the first action, then not.
  o.is_leader = [&] { return ++checks <= 2; };
  auto c = Make(o);
  c->RunOnce(clock_.Now());  // opens the batch (no actions), uses 1 check
  checks = 0;
  clock_.Advance(std::chrono::seconds(2));
  PassReport r = c->RunOnce(clock_.Now());
  ASSERT_GE(r.actions.size(), 2u) << "expected an increase plus events";
  EXPECT_EQ(r.skipped_because, "lost leadership");
  size_t carried = provider_.calls.size() + writer_.events.size();
  EXPECT_EQ(carried, 1u);
}

TEST_F(ControllerTest, DryRunCallsNothing) {
  ControllerOptions o;
  o.dry_run = true;
  auto c = Make(o);
  c->RunOnce(clock_.Now());
  clock_.Advance(std::chrono::seconds(2));
  PassReport r = c->RunOnce(clock_.Now());
  EXPECT_FALSE(r.actions.empty());
  EXPECT_THAT(provider_.calls, IsEmpty());
  EXPECT_THAT(writer_.calls, IsEmpty());
  EXPECT_THAT(writer_.events, IsEmpty());
  EXPECT_TRUE(writer_.status.empty());
}

// An idle GPU node: after unneededTime it is tainted, then (empty: no evictions) its machine
// and its Node object are deleted, and a ScaleDown event is recorded.
TEST_F(ControllerTest, IdleNodeIsTaintedThenDeleted) {
  reader_.pods.clear();  // nothing runs; the GPU node is idle
  auto c = Make();
  RunUntilTheProviderIsCalled(*c);
  ExpectTheIdleGpuNodeDeleted();
}

// The same on the reader's cluster model, in its debug mode: every scale-down pass also plans on
// a snapshot built from the view and stops the test on any difference. The model is brought up
// to date to the pass's view (ClusterReader::SyncModel).
TEST_F(ControllerTest, IdleNodeIsTaintedThenDeletedOnTheReadersModel) {
  reader_.pods.clear();
  reader_.KeepModel(/*verify=*/true);
  auto c = Make();
  RunUntilTheProviderIsCalled(*c);
  ExpectTheIdleGpuNodeDeleted();
  EXPECT_GE(reader_.feed->stats().applied, reader_.nodes.size() + 1) << "nodes and the taint";
  ASSERT_GE(reader_.reads.size(), 2u);
  for (size_t i = 0; i + 1 < reader_.reads.size(); i += 2) {
    EXPECT_EQ(reader_.reads[i], "snapshot") << "read " << i;
    EXPECT_EQ(reader_.reads[i + 1], "model") << "read " << i + 1;
  }
}

// The cache says the GPU node is empty, the API server says a pod runs there (a lagging
// watch): the node is untainted again and never deleted.
TEST_F(ControllerTest, StaleCacheNeverRemovesANodeWithAnUnseenPod) {
  reader_.pods.clear();
  writer_.fresh_pods["k8s-gpupool-29744472-0"] = {"default/late-pod"};
  auto c = Make();
  for (int i = 0; i < 80; ++i) {
    c->RunOnce(clock_.Now());
    clock_.Advance(std::chrono::seconds(10));
  }
  EXPECT_THAT(writer_.calls, ::testing::Contains("taint k8s-gpupool-29744472-0 "
                                                 "ToBeDeletedByClusterAutoscaler"));
  EXPECT_THAT(writer_.calls, ::testing::Contains("list pods k8s-gpupool-29744472-0"));
  EXPECT_THAT(writer_.calls, ::testing::Contains("untaint k8s-gpupool-29744472-0 "
                                                 "ToBeDeletedByClusterAutoscaler"));
  EXPECT_THAT(provider_.calls, IsEmpty()) << "a node with an unseen pod was deleted";
  EXPECT_THAT(writer_.calls, ::testing::Not(::testing::Contains("delete node "
                                                                "k8s-gpupool-29744472-0")));
}

// Nothing pending, so the loop's next wakeup is the 10 s scan: a pass within 2 s of an urgent
// change is the change's doing.
TEST_F(ControllerTest, UrgentChangeWakesRun) {
  reader_.pods.clear();
  std::atomic<bool> stop{false};
  RealClock real;
  Controller live(config_, reader_, writer_, provider_, real, {});
  std::thread t([&] { (void)live.Run(stop); });
  // Wait for the first pass.
  for (int i = 0; i < 200 && provider_.refreshes == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(reader_.on_change);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Passes are counted by their time (a pass need not read the provider).
  Time before = live.LastPass().time;
  reader_.on_change(false);  // not urgent: no pass
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(live.LastPass().time, before);
  reader_.on_change(true);
  for (int i = 0; i < 200 && live.LastPass().time == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(live.LastPass().time, before) << "an urgent change did not cause a pass";
  stop = true;
  t.join();
}

TEST_F(ControllerTest, RunGivesUpWhenCachesNeverSync) {
  reader_.synced = false;
  ManualClock clock(*ParseRfc3339("2026-11-22T10:00:00Z"));
  ControllerOptions o;
  o.sync_timeout = std::chrono::milliseconds(0);
  Controller c(config_, reader_, writer_, provider_, clock, o);
  clock.Advance(std::chrono::seconds(1));
  std::atomic<bool> stop{false};
  auto r = c.Run(stop);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("did not finish listing"));
}

// A predictive warm pool: the learned state is loaded when the loop starts (also after a new
// leadership), saved every warm_state_interval when it changed; a bad state starts afresh.
TEST_F(ControllerTest, WarmStateIsLoadedAtStartAndSavedPeriodically) {
  for (model::Pool& p : config_.pools) {
    if (p.name != "gpupool") continue;
    p.price_per_hour = std::max(p.price_per_hour, 1.0);
    p.warm.predictive.enabled = true;
    p.warm.predictive.max_cost_per_day = 10;
  }
  {
    autoscaler::Autoscaler learned(config_);
    writer_.warm_state = learned.ExportWarmState();
  }
  std::string saved = *writer_.warm_state;
  ControllerOptions o;
  o.warm_state_interval = std::chrono::minutes(5);
  auto c = Make(o);
  c->RunOnce(clock_.Now());
  EXPECT_EQ(writer_.warm_reads, 1);
  EXPECT_LE(writer_.warm_writes, 1);
  // Quarter-hours go by: the profile folds them, and the state is saved at most every 5 min.
  for (int i = 0; i < 40; ++i) {
    clock_.Advance(std::chrono::minutes(1));
    c->RunOnce(clock_.Now());
  }
  EXPECT_GE(writer_.warm_writes, 1);
  EXPECT_LE(writer_.warm_writes, 9);
  EXPECT_NE(*writer_.warm_state, saved);
  EXPECT_THAT(*writer_.warm_state, HasSubstr("\"version\":1"));

  // A replica that cannot read the state starts afresh and keeps working.
  writer_.warm_state = "not json";
  auto other = Make(o);
  PassReport r = other->RunOnce(clock_.Now());
  EXPECT_TRUE(r.acted);
  EXPECT_EQ(writer_.warm_reads, 2);
}

}  // namespace
}  // namespace tidepool::controller
