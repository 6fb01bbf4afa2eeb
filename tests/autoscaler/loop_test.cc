// The decision loop driven with hand-built observations and a time variable: batching, upcoming
// nodes, provision timeouts and fallback, backoff, the scale-down sequence, restarts, GPU nodes.
#include "autoscaler/loop.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actuator/actuator.h"
#include "autoscaler/demand_profile.h"
#include "base/check.h"
#include "kube/codec/objects.h"
#include "model/quantity.h"
#include "planner/cluster.h"
#include "planner/disruption.h"
#include "tests/autoscaler/verifying_model.h"
#include "tests/testing/observation_versions.h"
#include "tests/testing/values.h"

namespace tidepool::autoscaler {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

using tidepool::testing::At;
using tidepool::testing::Res;
using tidepool::testing::ResourceList;

const model::Taint kSpotTaint{"kubernetes.azure.com/scalesetpriority", "spot",
                              model::TaintEffect::kNoSchedule};

template <typename A>
std::vector<std::string> Describe(const std::vector<A>& actions) {
  std::vector<std::string> out;
  for (const A& a : actions) out.push_back(DescribeAction(a));
  return out;
}

// Copies (callers often pass a temporary).
template <typename Kind>
std::vector<Kind> OfKind(const std::vector<Action>& actions) {
  std::vector<Kind> out;
  for (const Action& a : actions)
    if (const auto* k = std::get_if<Kind>(&a)) out.push_back(*k);
  return out;
}

// Position of the first action of `Kind` (actions.size() when there is none).
template <typename Kind>
size_t IndexOf(const std::vector<Action>& actions) {
  for (size_t i = 0; i < actions.size(); ++i)
    if (std::holds_alternative<Kind>(actions[i])) return i;
  return actions.size();
}

const Event* FindEvent(const std::vector<Action>& actions, std::string_view reason,
                       std::string_view object) {
  for (const Action& a : actions) {
    const auto* e = std::get_if<Event>(&a);
    if (e != nullptr && EventReasonName(e->reason) == reason && e->object == object) return e;
  }
  return nullptr;
}

// A small cluster plus a fake provider and driver around one Autoscaler. Nodes and pods live in
// maps (stable addresses); `now` is the only clock.
class World {
 public:
  World() : now(At("2026-01-01T12:00:00Z")) {}

  model::Pool& AddPool(std::string name, int32_t priority, ResourceList capacity, bool spot = false,
                       int32_t min = 0, int32_t max = 10) {
    model::Pool& p = config.pools.emplace_back();
    p.name = name;
    p.min = min;
    p.max = max;
    p.priority = priority;
    p.capacity_type = spot ? model::CapacityType::kSpot : model::CapacityType::kOnDemand;
    p.template_node.meta.name = "template-" + name;
    p.template_node.meta.labels[std::string(model::kLabelPool)] = name;
    if (spot) p.template_node.taints.push_back(kSpotTaint);
    p.template_node.capacity = Res(capacity);
    p.template_node.allocatable = p.template_node.capacity;
    p.template_node.ready = true;
    target[name] = 0;
    return p;
  }

  // The usual GPU setup: gpu-spot (priority 100, spot taint) falls back to gpu (on-demand).
  void AddGpuPools() {
    config.scale_up.expanders = {"priority", "least-waste"};
    AddPool("gpu-spot", 100,
            {{"cpu", "6"}, {"memory", "112Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}},
            /*spot=*/true);
    AddPool("gpu", 10,
            {{"cpu", "6"}, {"memory", "112Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}});
  }

  void Start(LoopOptions options = {}) { loop.emplace(config, options); }

  // A node of `pool` built from its template, created an hour ago unless told otherwise.
  model::Node& AddNode(const std::string& name, const std::string& pool,
                       bool count_in_target = true, std::optional<Time> created = std::nullopt) {
    const model::Pool* p = config.FindPool(pool);
    TIDEPOOL_CHECK(p != nullptr);
    model::Node& n = nodes[name] = p->template_node;
    n.meta.name = name;
    n.meta.labels[std::string(model::kLabelHostname)] = name;
    n.meta.creation_timestamp = created.value_or(now - std::chrono::hours(1));
    if (count_in_target) ++target[pool];
    return n;
  }

  model::Pod& AddPod(const std::string& name, ResourceList requests, std::string node = "",
                     bool tolerate_spot = false) {
    model::Pod& p = pods[name];
    p.meta.name = name;
    p.meta.namespace_ = "default";
    p.meta.creation_timestamp = now;
    p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", "rs-" + name, "uid-" + name, true});
    p.containers.push_back({.name = "main", .requests = Res(requests)});
    p.node_name = std::move(node);
    p.phase = p.node_name.empty() ? model::PodPhase::kPending : model::PodPhase::kRunning;
    if (tolerate_spot) {
      p.tolerations.push_back({kSpotTaint.key, model::TolerationOp::kEqual, kSpotTaint.value,
                               model::TaintEffect::kNoSchedule, std::nullopt});
    }
    p.Finalize();
    return p;
  }

  model::Pod& AddGpuPod(const std::string& name, bool tolerate_spot = true) {
    return AddPod(name, {{"cpu", "1"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "1"}}, "",
                  tolerate_spot);
  }

  Observation Observe() const {
    Observation obs;
    obs.version = version;
    if (!dra.empty()) obs.dra = &dra;
    for (const auto& [name, n] : nodes) obs.nodes.push_back(&n);
    for (const auto& [name, p] : pods) obs.pods.push_back(&p);
    for (const auto& [name, t] : target) {
      PoolObservation po;
      po.pool = name;
      po.target = t;
      po.registered = 0;  // instances: as many as there are Nodes of the pool, unless told
      for (const auto& [n, node] : nodes) {
        const std::string* pool = node.meta.Label(model::kLabelPool);
        if (pool != nullptr && *pool == name) ++po.registered;
      }
      if (auto it = instances.find(name); it != instances.end()) po.registered = it->second;
      if (auto it = stopped.find(name); it != stopped.end()) po.stopped = it->second;
      po.stockout = stockout.contains(name);
      po.stockout_reason = po.stockout ? "SkuNotAvailable" : "";
      obs.pools.push_back(po);
    }
    if (version == 0) obs.version = versions.Of(obs);
    return obs;
  }

  std::vector<Action> Step() {
    for (const std::string& name : deleted) nodes.erase(name);
    deleted.clear();
    last_view = Observe();
    if (!keep_model) {
      model = testing::VerifyingModel(last_view);  // every pass checked against a built snapshot
    } else {
      if (model == nullptr) {
        model = std::make_unique<sched::ClusterModel>();
        model->SetVerify(true);
      }
      testing::Resync(*model, last_view, model_pods);
    }
    last_view.model = model.get();
    std::vector<Action> actions = testing::CheckedStep(*loop, last_view, now);
    all.insert(all.end(), actions.begin(), actions.end());
    all_at.insert(all_at.end(), actions.size(), now);
    return actions;
  }

  // The world's cloud as an obliging provider: increases raise the target (or fail with
  // `increase_error`), deletions take the Node (or fail with `delete_error`).
  // Stopping (MachineStopper) moves a node's machine to `stopped`; an increase of a deallocate
  // pool takes stopped machines first.
  struct Cloud : cloud::CloudProvider, cloud::MachineStopper {
    explicit Cloud(World& w) : w(w) {}
    std::string_view Name() const override { return "world"; }
    Result<std::vector<cloud::PoolSize>> Refresh(Time) override { return {}; }
    Result<void> IncreaseSize(const std::string& pool, int delta, Time) override {
      if (w.increase_error) return std::unexpected(*w.increase_error);
      w.target[pool] += delta;
      int& stopped = w.stopped[pool];
      stopped -= std::min(stopped, delta);
      return {};
    }
    Result<void> DecreaseTargetSize(const std::string& pool, int delta, Time) override {
      w.target[pool] -= delta;
      return {};
    }
    Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time) override {
      if (w.delete_error) return std::unexpected(*w.delete_error);
      w.deleted.push_back(node.name());  // gone at the next Step: the view still points at it
      --w.target[pool];
      return {};
    }
    Result<void> StopNode(const std::string& pool, const model::Node& node, Time now) override {
      TIDEPOOL_RETURN_IF_ERROR(DeleteNode(pool, node, now));
      ++w.stopped[pool];
      return {};
    }
    Result<void> DeleteStopped(const std::string& pool, int count, Time) override {
      w.stopped[pool] = std::max(0, w.stopped[pool] - count);
      return {};
    }
    std::string PoolOf(const model::Node&) const override { return ""; }
    World& w;
  };

  // The world's cluster: taints on its nodes; evictions answer `evict_result` (ok removes the
  // pod at once unless `keep_evicted_pods`).
  struct Writer : actuator::ClusterWriter {
    explicit Writer(World& w) : w(w) {}
    Result<void> AddTaint(const std::string& node, const model::Taint& taint) override {
      auto it = w.nodes.find(node);
      if (it == w.nodes.end()) return Fail(Error::Code::kNotFound, "node {}", node);
      it->second.taints.push_back(taint);
      return {};
    }
    Result<void> RemoveTaint(const std::string& node, const std::string& key) override {
      auto it = w.nodes.find(node);
      if (it == w.nodes.end()) return Fail(Error::Code::kNotFound, "node {}", node);
      std::erase_if(it->second.taints, [&](const model::Taint& t) { return t.key == key; });
      return {};
    }
    Result<void> Evict(const std::string&, const std::string& name) override {
      if (!w.evict_result) return std::unexpected(w.evict_result.error());
      if (!w.keep_evicted_pods) w.pods.erase(name);
      return {};
    }
    Result<void> DeleteNode(const std::string&, const std::string&) override { return {}; }
    Result<void> RecordEvent(const actuator::EventSpec&) override { return {}; }
    Result<void> SetProvisioningConditions(const std::string&, const std::string&,
                                           const std::vector<model::Condition>&) override {
      return {};
    }
    Result<void> SetCapacityBufferStatus(const std::string&, const std::string&,
                                         const model::BufferStatus&) override {
      return {};
    }
    Result<std::vector<std::string>> PodsOnNode(const std::string& node) override {
      std::vector<std::string> keys;
      for (const auto& [name, p] : w.pods) {
        if (p.node_name == node && !p.IsTerminal() && !p.IsDaemonSetPod()) keys.push_back(p.Key());
      }
      return keys;
    }
    World& w;
  };

  struct WorldClock : Clock {
    explicit WorldClock(const World& w) : w(w) {}
    Time Now() const override { return w.now; }
    const World& w;
  };

  // Carries out actions through the shipped actuator against the world's cloud and cluster.
  void Carry(const std::vector<Action>& actions) {
    Cloud cloud(*this);
    Writer writer(*this);
    WorldClock clock(*this);
    actuator::Actuator(cloud, writer, clock).Carry(actions, last_view, *loop);
  }

  std::vector<Action> StepAndCarry() {
    std::vector<Action> actions = Step();
    Carry(actions);
    if (version != 0 && !actions.empty()) ++version;  // what they did shows at the next Step
    return actions;
  }

  // Steps (carrying out everything) now, as a driver does when the observation changed, then
  // at every wakeup up to and including `until`; returns all actions of those steps.
  std::vector<Action> RunUntil(Time until) {
    std::vector<Action> out = StepAndCarry();
    while (loop->NextWakeup() <= until) {
      now = std::max(now, loop->NextWakeup());
      std::vector<Action> actions = StepAndCarry();
      out.insert(out.end(), actions.begin(), actions.end());
    }
    now = until;
    return out;
  }

  const PoolStatus& PoolStat(const std::string& name) {
    status = loop->GetStatus();
    for (const PoolStatus& p : status.pools)
      if (p.name == name) return p;
    TIDEPOOL_CHECK_MSG(false, "no such pool");
    return status.pools.front();
  }

  model::AutoscalerConfig config;
  Time now;
  // Observation::version. A test that sets it bumps it whenever it changes the world (carried
  // actions bump it), so the loop may skip unchanged Steps. 0: versioned by what it holds when
  // `versions.on`, else unversioned (every Step planned in full).
  uint64_t version = 0;
  std::map<std::string, model::Node> nodes;
  model::DraObjects dra;  // observed when not empty
  std::map<std::string, model::Pod> pods;
  std::map<std::string, int> target;
  std::set<std::string> stockout;
  std::map<std::string, int> instances;  // PoolObservation::registered overrides
  std::map<std::string, int> stopped;    // PoolObservation::stopped
  std::optional<Error> increase_error;
  std::optional<Error> delete_error;
  Result<void> evict_result;
  bool keep_evicted_pods = false;
  std::optional<Autoscaler> loop;
  std::vector<Action> all;                     // every action of every Step
  std::vector<Time> all_at;                    // the time of each one's Step
  Observation last_view;                       // what the last Step saw
  std::unique_ptr<sched::ClusterModel> model;  // of last_view
  // Keep one model from Step to Step, as drivers do (Resync), instead of building one per Step.
  bool keep_model = false;
  std::set<std::string> model_pods;  // the pod keys the kept model holds (Resync)
  std::vector<std::string> deleted;  // Nodes deleted since, erased before the next Step
  Status status;
  // Without a `version` of the test's own: each observation versioned by what it holds when on.
  mutable testing::ContentVersions versions;
};

// --- Batching ------------------------------------------------------------------------------

TEST(LoopBatchTest, PlansOnlyAfterBatchIdle) {
  World w;
  w.AddGpuPools();
  w.Start();
  EXPECT_TRUE(w.Step().empty());  // empty cluster, first periodic pass

  w.now += seconds(3);
  w.AddGpuPod("p1");
  EXPECT_TRUE(OfKind<IncreasePool>(w.Step()).empty());
  EXPECT_EQ(w.loop->NextWakeup(), w.now + seconds(1));  // the batch closes after batchIdle

  w.now += milliseconds(500);
  EXPECT_TRUE(OfKind<IncreasePool>(w.Step()).empty());
  w.now += milliseconds(499);
  EXPECT_TRUE(OfKind<IncreasePool>(w.Step()).empty());
  w.now += milliseconds(1);
  auto ups = OfKind<IncreasePool>(w.Step());
  ASSERT_EQ(ups.size(), 1u) << ::testing::PrintToString(Describe(w.all));
  EXPECT_EQ(ups[0].pool, "gpu-spot");
}

TEST(LoopBatchTest, PlansAtBatchMaxWhilePodsKeepArriving) {
  World w;
  w.AddGpuPools();
  w.config.pools[0].max = 100;
  w.Start();
  w.Step();
  w.now += seconds(1);
  Time opened = w.now;
  for (int i = 0; i < 20; ++i) {  // a new pod every 500 ms, never idle for batchIdle
    w.AddGpuPod("p" + std::to_string(i));
    auto ups = OfKind<IncreasePool>(w.Step());
    ASSERT_TRUE(ups.empty()) << "planned at +" << FormatDuration(w.now - opened);
    w.now += milliseconds(500);
  }
  ASSERT_EQ(w.now, opened + seconds(10));
  w.AddGpuPod("p20");
  auto ups = OfKind<IncreasePool>(w.Step());
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu-spot");
  EXPECT_EQ(ups[0].count, 21);  // one batch for all of them
}

// --- Scale-up and upcoming nodes -------------------------------------------------------------

TEST(LoopScaleUpTest, IncreaseAndTriggeredScaleUpEvent) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.Step();
  w.now += seconds(1);
  std::vector<Action> actions = w.Step();
  auto ups = OfKind<IncreasePool>(actions);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu-spot");
  EXPECT_EQ(ups[0].count, 1);
  EXPECT_THAT(ups[0].pods, ::testing::ElementsAre("default/p1"));
  const Event* ev = FindEvent(actions, "TriggeredScaleUp", "default/p1");
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->object_kind, EventObject::kPod);
  EXPECT_EQ(ev->message, "pod triggered scale-up: [{gpu-spot 0->1 (max: 10)}]");
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 1);
  ASSERT_TRUE(w.loop->GetStatus().last_scale_up);
  EXPECT_EQ(w.loop->GetStatus().last_scale_up->to, 1);
}

TEST(LoopScaleUpTest, SamePendingPodsDoNotScaleUpTwice) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.AddGpuPod("p2");
  w.RunUntil(w.now + seconds(2));
  ASSERT_EQ(w.target["gpu-spot"], 2);
  // Minutes of periodic passes with the pods still pending and the nodes not there yet.
  std::vector<Action> later = w.RunUntil(w.now + minutes(5));
  EXPECT_TRUE(OfKind<IncreasePool>(later).empty()) << ::testing::PrintToString(Describe(later));
  EXPECT_EQ(w.target["gpu-spot"], 2);
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 2);
}

TEST(LoopScaleUpTest, PodsHeldByGatesAreCountedApartAndScaleUpOnceReleased) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("queued").mutable_scheduling_gates().push_back("kueue.x-k8s.io/admission");
  w.pods["queued"].Finalize();
  w.AddGpuPod("p1");
  std::vector<Action> first = w.RunUntil(w.now + seconds(2));
  auto ups = OfKind<IncreasePool>(first);
  ASSERT_EQ(ups.size(), 1u) << ::testing::PrintToString(Describe(first));
  EXPECT_THAT(ups[0].pods, ::testing::ElementsAre("default/p1"));
  Status s = w.loop->GetStatus();
  EXPECT_EQ(s.pending_pods, 1);
  EXPECT_EQ(s.gated_pods, 1);
  EXPECT_THAT(FormatStatus(s), HasSubstr("held by scheduling gates: 1"));
  EXPECT_EQ(FindEvent(w.all, "NotTriggerScaleUp", "default/queued"), nullptr);

  // Kueue admits it: the gate goes, and the pod asks for its own node.
  w.pods["queued"].ClearSchedulingGates();
  std::vector<Action> later = w.RunUntil(w.now + seconds(2));
  ups = OfKind<IncreasePool>(later);
  ASSERT_EQ(ups.size(), 1u) << ::testing::PrintToString(Describe(later));
  EXPECT_THAT(ups[0].pods, ::testing::ElementsAre("default/queued"));
  EXPECT_EQ(w.loop->GetStatus().gated_pods, 0);
}

TEST(LoopScaleUpTest, TargetNotShownYetStillCountsAsUpcoming) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.Step();
  w.now += seconds(1);
  ASSERT_EQ(OfKind<IncreasePool>(w.Step()).size(), 1u);
  // The driver has not reported and the provider's target still says 0.
  for (int i = 0; i < 6; ++i) {
    w.now += seconds(10);
    EXPECT_TRUE(OfKind<IncreasePool>(w.Step()).empty()) << "at step " << i;
  }
  EXPECT_EQ(w.PoolStat("gpu-spot").target, 1);
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 1);
}

TEST(LoopScaleUpTest, ProvisionTimeoutBacksOffAndFallsBackInTheSameStep) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.RunUntil(w.now + seconds(1));
  ASSERT_EQ(w.target["gpu-spot"], 1);
  Time requested = w.now;

  std::vector<Action> before = w.RunUntil(requested + minutes(15) - milliseconds(1));
  EXPECT_TRUE(OfKind<DecreaseTarget>(before).empty());
  EXPECT_TRUE(OfKind<IncreasePool>(before).empty());

  w.now = requested + minutes(15);
  std::vector<Action> actions = w.StepAndCarry();
  auto decreases = OfKind<DecreaseTarget>(actions);
  ASSERT_EQ(decreases.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(decreases[0].pool, "gpu-spot");
  EXPECT_EQ(decreases[0].count, 1);
  auto ups = OfKind<IncreasePool>(actions);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu");
  EXPECT_THAT(ups[0].pods, ::testing::ElementsAre("default/p1"));
  // The cancellation comes before the fallback.
  EXPECT_LT(IndexOf<DecreaseTarget>(actions), IndexOf<IncreasePool>(actions));

  const PoolStatus& spot = w.PoolStat("gpu-spot");
  ASSERT_TRUE(spot.backoff_until);
  EXPECT_EQ(*spot.backoff_until, w.now + minutes(5));
  EXPECT_THAT(spot.backoff_reason, HasSubstr("did not register within 15m"));
  EXPECT_EQ(spot.upcoming, 0);
  EXPECT_EQ(w.target["gpu-spot"], 0);
  EXPECT_EQ(w.target["gpu"], 1);
}

TEST(LoopScaleUpTest, PerPoolProvisionTimeoutOverride) {
  World w;
  w.AddGpuPools();
  w.config.pools[0].provision_timeout = minutes(3);
  w.Start();
  w.AddGpuPod("p1");
  w.RunUntil(w.now + seconds(1));
  Time requested = w.now;
  std::vector<Action> actions = w.RunUntil(requested + minutes(3));
  auto ups = OfKind<IncreasePool>(actions);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu");
}

TEST(LoopScaleUpTest, StockoutFallsBackWithoutWaiting) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.RunUntil(w.now + seconds(1));
  ASSERT_EQ(w.target["gpu-spot"], 1);

  w.now += seconds(2);
  w.stockout.insert("gpu-spot");
  std::vector<Action> actions = w.StepAndCarry();
  auto decreases = OfKind<DecreaseTarget>(actions);
  ASSERT_EQ(decreases.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(decreases[0].pool, "gpu-spot");
  auto ups = OfKind<IncreasePool>(actions);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu");
  const PoolStatus& spot = w.PoolStat("gpu-spot");
  EXPECT_TRUE(spot.stockout);
  ASSERT_TRUE(spot.backoff_until);
  EXPECT_THAT(spot.backoff_reason, HasSubstr("SkuNotAvailable"));

  // While the stockout is remembered, new spot-tolerant pods go on-demand straight away.
  w.stockout.clear();
  w.now += seconds(30);
  w.AddGpuPod("p2");
  std::vector<Action> more = w.RunUntil(w.now + seconds(2));
  ups = OfKind<IncreasePool>(more);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu");
}

TEST(LoopScaleUpTest, StockoutKeepsInstancesTheProviderAlreadyHas) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.AddGpuPod("p2");
  w.AddGpuPod("p3");
  w.RunUntil(w.now + seconds(1));
  ASSERT_EQ(w.target["gpu-spot"], 3);
  w.now += seconds(20);
  w.instances["gpu-spot"] = 1;  // one VM was created before capacity ran out; it may still join
  w.stockout.insert("gpu-spot");
  std::vector<Action> actions = w.StepAndCarry();
  auto decreases = OfKind<DecreaseTarget>(actions);
  ASSERT_EQ(decreases.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(decreases[0].count, 2);
  auto ups = OfKind<IncreasePool>(actions);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu");
  EXPECT_EQ(ups[0].count, 2);
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 1);
}

// Half of a scale-up failed and the provider removed the failed machine itself: its target
// drops below what the loop asked for before the loop ever saw the higher one. The machine that
// is still coming must not be cancelled; only the pod without a machine falls back.
TEST(LoopScaleUpTest, StockoutAfterTheProviderRemovedTheFailedHalfCancelsNothing) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.AddGpuPod("p2");
  std::vector<Action> first;
  for (int i = 0; i < 100 && OfKind<IncreasePool>(first).empty(); ++i) {
    w.now += milliseconds(100);
    first = w.StepAndCarry();
  }
  auto ups = OfKind<IncreasePool>(first);
  ASSERT_EQ(ups.size(), 1u);
  ASSERT_EQ(ups[0].pool, "gpu-spot");
  ASSERT_EQ(ups[0].count, 2);
  // The provider: one of the two VMs failed with AllocationFailed and was deleted; the other is
  // being created.
  w.now += seconds(1);
  w.target["gpu-spot"] = 1;
  w.instances["gpu-spot"] = 1;
  w.stockout.insert("gpu-spot");
  std::vector<Action> actions = w.StepAndCarry();
  EXPECT_TRUE(OfKind<DecreaseTarget>(actions).empty())
      << ::testing::PrintToString(Describe(actions));
  ups = OfKind<IncreasePool>(actions);
  ASSERT_EQ(ups.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(ups[0].pool, "gpu");
  EXPECT_EQ(ups[0].count, 1);
  EXPECT_EQ(w.PoolStat("gpu-spot").target, 1);
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 1);
  EXPECT_TRUE(w.PoolStat("gpu-spot").backoff_until);
}

TEST(LoopScaleUpTest, BackoffDoublesExpiresAndResetsOnRegistration) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.increase_error = Error(Error::Code::kUnavailable, "quota exceeded");
  w.AddGpuPod("p1");
  w.Step();
  w.now += seconds(1);
  std::vector<Action> first = w.StepAndCarry();  // gpu-spot, fails
  ASSERT_EQ(OfKind<IncreasePool>(first).size(), 1u);
  EXPECT_EQ(OfKind<IncreasePool>(first)[0].pool, "gpu-spot");
  Time failed1 = w.now;
  ASSERT_TRUE(w.PoolStat("gpu-spot").backoff_until);
  EXPECT_EQ(*w.PoolStat("gpu-spot").backoff_until, failed1 + minutes(5));
  EXPECT_EQ(w.loop->NextWakeup(), w.now);  // re-plan at once

  w.increase_error.reset();
  std::vector<Action> fallback = w.StepAndCarry();
  auto ups = OfKind<IncreasePool>(fallback);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu");

  // Backoff expired: the next spot-tolerant pod tries gpu-spot again; it fails again and the
  // backoff doubles.
  w.RunUntil(failed1 + minutes(5) + seconds(1));
  EXPECT_FALSE(w.PoolStat("gpu-spot").backoff_until);
  w.increase_error = Error(Error::Code::kUnavailable, "quota exceeded");
  w.AddGpuPod("p2");
  std::vector<Action> second = w.RunUntil(w.now + seconds(1));
  ASSERT_FALSE(OfKind<IncreasePool>(second).empty());
  EXPECT_EQ(OfKind<IncreasePool>(second)[0].pool, "gpu-spot");
  Time failed2 = w.now;
  ASSERT_TRUE(w.PoolStat("gpu-spot").backoff_until);
  EXPECT_EQ(*w.PoolStat("gpu-spot").backoff_until, failed2 + minutes(10));

  // A node of the pool registers: the next failure starts from backoff.initial again.
  w.increase_error.reset();
  w.RunUntil(failed2 + minutes(10) + seconds(1));
  w.AddNode("gpu-spot-a", "gpu-spot");
  w.RunUntil(w.now + seconds(10));
  w.increase_error = Error(Error::Code::kUnavailable, "quota exceeded");
  w.AddGpuPod("p3");
  w.AddGpuPod("p4");
  w.RunUntil(w.now + seconds(2));
  Time failed3 = w.now;
  ASSERT_TRUE(w.PoolStat("gpu-spot").backoff_until);
  EXPECT_LE(*w.PoolStat("gpu-spot").backoff_until, failed3 + minutes(5));
  EXPECT_GT(*w.PoolStat("gpu-spot").backoff_until, failed3 + minutes(4));
}

TEST(LoopScaleUpTest, ThrottledIncreaseIsRetriedWithoutBackoff) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.increase_error = Error(Error::Code::kThrottled, "429 Too Many Requests (Retry-After: 1s)");
  w.AddGpuPod("p1");
  w.Step();
  w.now += seconds(1);
  std::vector<Action> first = w.StepAndCarry();
  ASSERT_EQ(OfKind<IncreasePool>(first).size(), 1u);
  EXPECT_EQ(OfKind<IncreasePool>(first)[0].pool, "gpu-spot");
  // The API was busy, the pool is fine: no backoff, no fallback to on-demand, a retry soon.
  EXPECT_FALSE(w.PoolStat("gpu-spot").backoff_until);
  EXPECT_EQ(w.loop->NextWakeup(), w.now + seconds(5));
  w.increase_error.reset();
  // A Step before then (another pod event, say) does not try again yet.
  Time throttled_at = w.now;
  w.now += seconds(1);
  EXPECT_TRUE(OfKind<IncreasePool>(w.StepAndCarry()).empty());
  std::vector<Action> retry = w.RunUntil(throttled_at + seconds(6));
  auto ups = OfKind<IncreasePool>(retry);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu-spot");
  EXPECT_EQ(w.target["gpu-spot"], 1);
  EXPECT_EQ(w.target["gpu"], 0);
}

// A conflict (the provider's state changed under the request: here another writer of the kwok
// state booked one machine, which the provider adopted) is not the pool's fault either: no
// backoff, the pods planned again 5 s later on the provider's new target, not on what the loop
// expected before, so 2 pods get 2 machines in all.
TEST(LoopScaleUpTest, ConflictingIncreaseIsRetriedOnTheProvidersTarget) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.increase_error = Error(Error::Code::kConflict, "saving its state: 409 Conflict");
  w.AddGpuPod("p1");
  w.AddGpuPod("p2");
  w.Step();
  w.now += seconds(1);
  auto failed = OfKind<IncreasePool>(w.StepAndCarry());
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].count, 2);
  w.target["gpu-spot"] = 1;  // the adopted machine
  EXPECT_FALSE(w.PoolStat("gpu-spot").backoff_until);
  EXPECT_EQ(w.loop->NextWakeup(), w.now + seconds(5));
  w.increase_error.reset();
  auto ups = OfKind<IncreasePool>(w.RunUntil(w.now + seconds(6)));
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu-spot");
  EXPECT_EQ(ups[0].count, 1);
  EXPECT_EQ(w.target["gpu-spot"], 2);
  EXPECT_EQ(w.target["gpu"], 0);
}

TEST(LoopScaleUpTest, WaitingPodsArePlannedWhenTheBackoffRunsOut) {
  World w;
  w.AddPool("gpu-spot", 100,
            {{"cpu", "6"}, {"memory", "112Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}},
            /*spot=*/true);
  w.config.scan_interval = minutes(1);  // so the expiry is not a periodic pass by chance
  w.Start();
  w.increase_error = Error(Error::Code::kUnavailable, "quota exceeded");
  w.AddGpuPod("p1");
  w.RunUntil(w.now + seconds(1));
  Time failed = w.now;
  ASSERT_TRUE(w.PoolStat("gpu-spot").backoff_until);
  w.increase_error.reset();
  // Re-planned at once after the failure: nowhere to go, and the pod is told why.
  const Event* told = FindEvent(w.all, "NotTriggerScaleUp", "default/p1");
  ASSERT_NE(told, nullptr) << ::testing::PrintToString(Describe(w.all));
  EXPECT_THAT(told->message, HasSubstr("backoff"));

  std::vector<Action> actions = w.RunUntil(failed + minutes(5) - milliseconds(1));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty());
  actions = w.RunUntil(failed + minutes(5));
  ASSERT_EQ(OfKind<IncreasePool>(actions).size(), 1u);
  EXPECT_EQ(w.loop->GetStatus().last_scale_up->time, failed + minutes(5));
  EXPECT_EQ(w.target["gpu-spot"], 1);
}

TEST(LoopScaleUpTest, BackoffCapsAtMax) {
  World w;
  w.AddGpuPools();
  w.config.pools[1].max = 100;
  w.Start();
  w.increase_error = Error(Error::Code::kUnavailable, "quota exceeded");
  std::vector<Duration> seen;
  for (int i = 0; i < 5; ++i) {
    w.AddGpuPod("p" + std::to_string(i));
    w.RunUntil(w.now + seconds(2));
    ASSERT_TRUE(w.PoolStat("gpu-spot").backoff_until) << i;
    Duration d = *w.PoolStat("gpu-spot").backoff_until - w.now;
    seen.push_back(d);
    w.increase_error.reset();
    w.RunUntil(*w.PoolStat("gpu-spot").backoff_until + seconds(1));
    w.increase_error = Error(Error::Code::kUnavailable, "quota exceeded");
  }
  // 5m, 10m, 20m, 30m, 30m (each measured from a failure up to two seconds before now).
  EXPECT_GT(seen[0], minutes(4));
  EXPECT_LE(seen[0], minutes(5));
  EXPECT_GT(seen[1], minutes(9));
  EXPECT_GT(seen[2], minutes(19));
  EXPECT_LE(seen[3], minutes(30));
  EXPECT_GT(seen[3], minutes(29));
  EXPECT_LE(seen[4], minutes(30));
}

TEST(LoopScaleUpTest, GpuNodeWithoutAllocatableGpusIsUpcoming) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.RunUntil(w.now + seconds(1));
  ASSERT_EQ(w.target["gpu-spot"], 1);

  // The node joins Ready, but the GPU driver is still installing: no GPUs allocatable.
  w.now += minutes(4);
  model::Node& n = w.AddNode("gpu-spot-a", "gpu-spot", /*count_in_target=*/false, w.now);
  n.allocatable.Set(model::InternResource("nvidia.com/gpu"), 0);
  std::vector<Action> actions = w.RunUntil(w.now + minutes(8));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty()) << ::testing::PrintToString(Describe(actions));
  EXPECT_TRUE(OfKind<DecreaseTarget>(actions).empty());
  const PoolStatus& spot = w.PoolStat("gpu-spot");
  EXPECT_EQ(spot.registered, 1);
  EXPECT_EQ(spot.ready, 0);
  EXPECT_EQ(spot.upcoming, 1);
  EXPECT_FALSE(spot.backoff_until);

  // The driver finishes: the node is capacity now.
  n.allocatable.Set(model::InternResource("nvidia.com/gpu"), 1);
  actions = w.RunUntil(w.now + minutes(1));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty());
  EXPECT_EQ(w.PoolStat("gpu-spot").ready, 1);
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 0);
}

// A node of a pool with template.devices is not capacity until its DRA driver publishes its
// ResourceSlice: until then it is upcoming, as a GPU node without allocatable GPUs is.
TEST(LoopScaleUpTest, DeviceNodeWithoutItsSlicesIsUpcoming) {
  World w;
  auto state = kube::codec::DecodeState(R"yaml(
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: device.driver == 'gpu.example.com'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
)yaml",
                                        "dra.yaml");
  ASSERT_TRUE(state.has_value()) << state.error().message();
  w.dra = state->dra;
  model::Pool& pool = w.AddPool("dra", 10, {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}});
  pool.devices = {{.driver = "gpu.example.com", .count = 1}};
  pool.device_slices = model::TemplateSlices(pool.name, pool.template_node.meta.name, pool.devices);
  w.Start();
  model::Pod& p = w.AddPod("p1", {{"cpu", "1"}});
  p.mutable_resource_claims().push_back({.name = "gpu", .template_name = "one-gpu"});
  p.Finalize();
  w.RunUntil(w.now + seconds(1));
  ASSERT_EQ(w.target["dra"], 1);

  w.now += minutes(1);
  w.AddNode("dra-a", "dra", /*count_in_target=*/false, w.now);
  std::vector<Action> actions = w.RunUntil(w.now + minutes(2));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty()) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(w.PoolStat("dra").ready, 0);
  EXPECT_EQ(w.PoolStat("dra").upcoming, 1);

  // The driver publishes the node's devices: it is capacity now.
  std::vector<model::ResourceSlice> slices = model::TemplateSlices("dra-a", "dra-a", pool.devices);
  w.dra.slices.insert(w.dra.slices.end(), slices.begin(), slices.end());
  actions = w.RunUntil(w.now + seconds(30));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty());
  EXPECT_EQ(w.PoolStat("dra").ready, 1);
  EXPECT_EQ(w.PoolStat("dra").upcoming, 0);
}

// A node reports Ready before the node lifecycle controller lifts its not-ready taint: pods
// cannot land on it yet, so it is upcoming, not a reason for a second node (seen live on testenv:
// two pods, two nodes joined, and a second scale-up of two in the gap).
TEST(LoopScaleUpTest, ReadyNodeStillCarryingNotReadyTaintIsUpcoming) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.RunUntil(w.now + seconds(1));
  ASSERT_EQ(w.target["gpu-spot"], 1);

  w.now += minutes(4);
  model::Node& n = w.AddNode("gpu-spot-a", "gpu-spot", /*count_in_target=*/false, w.now);
  n.taints.push_back({"node.kubernetes.io/not-ready", "", model::TaintEffect::kNoSchedule});
  std::vector<Action> actions = w.RunUntil(w.now + seconds(30));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty()) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(w.PoolStat("gpu-spot").ready, 0);
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 1);

  n.taints.clear();
  actions = w.RunUntil(w.now + seconds(30));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty());
  EXPECT_EQ(w.PoolStat("gpu-spot").ready, 1);
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 0);
}

TEST(LoopScaleUpTest, NodeNeverReadyWithinTimeoutBacksOffItsPool) {
  World w;
  w.AddGpuPools();
  w.config.scan_interval = minutes(1);  // so the deadline is not a periodic pass by chance
  w.Start();
  w.AddGpuPod("p1");
  w.RunUntil(w.now + seconds(1));
  w.now += minutes(2) + seconds(17);
  model::Node& n = w.AddNode("gpu-spot-a", "gpu-spot", /*count_in_target=*/false, w.now);
  n.ready = false;
  Time created = w.now;
  w.now += seconds(7);  // seen a little after its creation: periodic passes fall off the deadline
  std::vector<Action> waiting = w.RunUntil(created + minutes(15) - seconds(1));
  EXPECT_TRUE(OfKind<IncreasePool>(waiting).empty());
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 1);
  EXPECT_EQ(w.PoolStat("gpu-spot").ready, 0);

  // Not usable 15m after its creation: no longer upcoming, its pool backs off and the pod is
  // re-planned in that very step.
  EXPECT_EQ(w.loop->NextWakeup(), created + minutes(15));
  w.now = created + minutes(15);
  std::vector<Action> actions = w.StepAndCarry();
  auto ups = OfKind<IncreasePool>(actions);
  ASSERT_EQ(ups.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(ups[0].pool, "gpu");
  EXPECT_TRUE(w.PoolStat("gpu-spot").backoff_until);
  EXPECT_THAT(w.PoolStat("gpu-spot").backoff_reason, HasSubstr("gpu-spot-a"));
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 0);
}

// A node deleted and created again under its name, not Ready and without a creation time, counts
// from when it came back: its provision timeout runs from there, not from when the name was first
// seen. The same with the model kept from Step to Step (as drivers keep it), where the pools'
// memory of nodes is walked only when a node name comes or goes.
TEST(LoopScaleUpTest, ANodeBackUnderItsNameCountsFromItsReturn) {
  for (bool keep_model : {false, true}) {
    SCOPED_TRACE(keep_model ? "model kept" : "model per Step");
    World w;
    w.keep_model = keep_model;
    w.AddGpuPools();
    w.config.scan_interval = minutes(1);
    w.Start();
    auto add = [&w] {
      model::Node& n = w.AddNode("gpu-spot-a", "gpu-spot", /*count_in_target=*/false);
      n.ready = false;
      n.meta.creation_timestamp.reset();
    };
    add();
    const Time first = w.now;
    w.RunUntil(first + minutes(2));
    w.nodes.erase("gpu-spot-a");
    w.RunUntil(first + minutes(10));
    add();
    const Time back = w.now;
    w.RunUntil(first + minutes(16));
    EXPECT_FALSE(w.PoolStat("gpu-spot").backoff_until) << w.PoolStat("gpu-spot").backoff_reason;
    w.RunUntil(back + minutes(16));
    EXPECT_TRUE(w.PoolStat("gpu-spot").backoff_until);
    EXPECT_THAT(w.PoolStat("gpu-spot").backoff_reason, HasSubstr("gpu-spot-a"));
  }
}

TEST(LoopScaleUpTest, NotTriggerScaleUpOncePerReason) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddPod("huge", {{"cpu", "1"}, {"nvidia.com/gpu", "8"}});
  std::vector<Action> actions = w.RunUntil(w.now + minutes(2));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty());
  int events = 0;
  for (const Event& e : OfKind<Event>(actions))
    if (e.reason == EventReason::kNotTriggerScaleUp) ++events;
  EXPECT_EQ(events, 1) << ::testing::PrintToString(Describe(actions));
  const Event* ev = FindEvent(actions, "NotTriggerScaleUp", "default/huge");
  ASSERT_NE(ev, nullptr);
  EXPECT_THAT(ev->message, HasSubstr("pod didn't trigger scale-up: gpu: "));
  EXPECT_THAT(ev->message, HasSubstr("; gpu-spot: "));
  EXPECT_THAT(ev->message, HasSubstr("nvidia.com/gpu"));
}

// Each plan weighs the pod again; a change in its reasons is told again, an unchanged one is not.
TEST(LoopScaleUpTest, NotTriggerScaleUpToldAgainWhenItsReasonsChange) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddPod("huge", {{"cpu", "1"}, {"nvidia.com/gpu", "8"}});
  w.AddPod("small", {{"cpu", "200"}});
  w.RunUntil(w.now + minutes(2));
  auto told = [&](const std::string& pod) {
    std::vector<std::string> messages;
    for (const Event& e : OfKind<Event>(w.all))
      if (e.reason == EventReason::kNotTriggerScaleUp && e.object == pod)
        messages.push_back(e.message);
    return messages;
  };
  ASSERT_EQ(told("default/huge").size(), 1u);
  ASSERT_EQ(told("default/small").size(), 1u);
  // A stockout of the spot pool: both pods' reasons for it change.
  w.stockout.insert("gpu-spot");
  w.RunUntil(w.now + minutes(2));
  std::vector<std::string> huge = told("default/huge");
  ASSERT_EQ(huge.size(), 2u) << ::testing::PrintToString(huge);
  EXPECT_NE(huge[0], huge[1]);
  EXPECT_THAT(huge[1], HasSubstr("gpu: "));
  EXPECT_EQ(told("default/small").size(), 2u);
  Status s = w.loop->GetStatus();
  ASSERT_EQ(s.unschedulable->size(), 2u);
  EXPECT_NE((*s.unschedulable)[0].reasons.at("gpu-spot").text,
            (*s.unschedulable)[0].reasons.at("gpu").text);
  // More passes within the same backoff (it ends at 12:07, and a renewed one is told again):
  // nothing new to tell.
  w.RunUntil(w.now + minutes(2));
  EXPECT_EQ(told("default/huge").size(), 2u) << ::testing::PrintToString(told("default/huge"));
  EXPECT_EQ(told("default/small").size(), 2u);
}

// The status carries the last plan's verdict for pods still pending, and drops a pod once it is
// no longer pending.
TEST(LoopScaleUpTest, StatusListsUnschedulableAndWaitingPodsWhilePending) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddPod("huge", {{"cpu", "1"}, {"nvidia.com/gpu", "8"}});
  w.AddPod("small", {{"cpu", "1"}, {"nvidia.com/gpu", "1"}});
  w.RunUntil(w.now + seconds(30));
  Status s = w.loop->GetStatus();
  ASSERT_EQ(s.unschedulable->size(), 1u);
  EXPECT_EQ((*s.unschedulable)[0].pod, "default/huge");
  EXPECT_EQ((*s.unschedulable)[0].reasons.size(), 2u);  // gpu and gpu-spot
  EXPECT_THAT((*s.unschedulable)[0].reasons.begin()->second.text, HasSubstr("nvidia.com/gpu"));
  EXPECT_THAT(s.waiting_for_capacity, ::testing::ElementsAre("default/small"));
  // Taken at every pass, the list is shared until a plan or a pod's leaving changes it.
  EXPECT_EQ(w.loop->GetStatus().unschedulable.get(), s.unschedulable.get());
  w.pods.erase("huge");
  w.pods.erase("small");
  w.RunUntil(w.now + seconds(30));
  s = w.loop->GetStatus();
  EXPECT_TRUE(s.unschedulable->empty());
  EXPECT_TRUE(s.waiting_for_capacity.empty());
}

// --- Scale-down ------------------------------------------------------------------------------

// cpu pool: n1 with a small movable pod, n2 busy (75% cpu) with room for it.
void TwoCpuNodes(World& w) {
  w.AddPool("cpu", 0, {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}});
  w.AddNode("n1", "cpu");
  w.AddNode("n2", "cpu");
  w.AddPod("small", {{"cpu", "100m"}, {"memory", "100Mi"}}, "n1");
  w.AddPod("big", {{"cpu", "3"}, {"memory", "1Gi"}}, "n2");
}

TEST(LoopScaleDownTest, UnneededTaintEvictDelete) {
  World w;
  TwoCpuNodes(w);
  w.Start();
  Time t0 = w.now;
  std::vector<Action> early = w.RunUntil(t0 + minutes(10) - seconds(1));
  EXPECT_TRUE(OfKind<TaintNode>(early).empty()) << ::testing::PrintToString(Describe(early));
  Status s = w.loop->GetStatus();
  ASSERT_EQ(s.unneeded.size(), 1u);
  EXPECT_EQ(s.unneeded[0].node, "n1");
  EXPECT_EQ(s.unneeded[0].since, t0);

  w.now = t0 + minutes(10);
  std::vector<Action> a1 = w.Step();
  auto taints = OfKind<TaintNode>(a1);
  ASSERT_EQ(taints.size(), 1u) << ::testing::PrintToString(Describe(a1));
  EXPECT_EQ(taints[0].node, "n1");
  EXPECT_NE(FindEvent(a1, "ScaleDown", "n1"), nullptr);
  EXPECT_TRUE(OfKind<EvictPods>(a1).empty());  // not before the taint is confirmed
  w.Carry(a1);
  EXPECT_EQ(w.loop->NextWakeup(), w.now);

  w.keep_evicted_pods = true;  // the pod takes a while to terminate
  std::vector<Action> a2 = w.StepAndCarry();
  auto evicts = OfKind<EvictPods>(a2);
  ASSERT_EQ(evicts.size(), 1u) << ::testing::PrintToString(Describe(a2));
  EXPECT_EQ(evicts[0].node, "n1");
  EXPECT_THAT(evicts[0].pods, ::testing::ElementsAre("default/small"));
  EXPECT_NE(FindEvent(a2, "ScaleDown", "default/small"), nullptr);

  // Evicted, but still on the node: no deletion yet.
  w.now += seconds(5);
  std::vector<Action> a3 = w.StepAndCarry();
  EXPECT_TRUE(OfKind<DeleteNode>(a3).empty());
  EXPECT_TRUE(OfKind<EvictPods>(a3).empty());

  w.pods.erase("small");
  w.now += seconds(5);
  std::vector<Action> a4 = w.Step();
  auto deletes = OfKind<DeleteNode>(a4);
  ASSERT_EQ(deletes.size(), 1u) << ::testing::PrintToString(Describe(a4));
  EXPECT_EQ(deletes[0].node, "n1");
  EXPECT_EQ(deletes[0].pool, "cpu");
  w.Carry(a4);

  std::vector<Action> a5 = w.Step();
  const Event* removed = FindEvent(a5, "ScaleDown", "n1");
  ASSERT_NE(removed, nullptr);
  EXPECT_THAT(removed->message, HasSubstr("node removed"));
  s = w.loop->GetStatus();
  ASSERT_TRUE(s.last_scale_down);
  EXPECT_EQ(s.last_scale_down->outcome, "deleted");
  EXPECT_EQ(s.last_scale_down->node, "n1");
  EXPECT_TRUE(s.removals.empty());
  EXPECT_EQ(w.PoolStat("cpu").target, 1);
  EXPECT_EQ(w.PoolStat("cpu").upcoming, 0);
}

// Pool gpu ($16/h, 8 GPUs) with nodes n1 and n2; 6 of n2's GPUs busy, so n2 has room for two more.
void TwoGpuNodes(World& w) {
  model::Pool& gpu = w.AddPool(
      "gpu", 0, {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "8"}, {"pods", "110"}});
  gpu.price_per_hour = 16;
  w.AddNode("n1", "gpu");
  w.AddNode("n2", "gpu");
  w.AddPod("busy", {{"cpu", "4"}, {"nvidia.com/gpu", "6"}}, "n2");
}

// Consolidation with checkpoints every 10 minutes and the default unneededTime (10m). n1 ($16/h,
// 8 GPUs) runs one 1-GPU training pod 69 minutes in (9 unsaved, the next checkpoint in 1); n2
// has room for it. Evicting pays while less than 8 minutes are unsaved and waiting for the
// checkpoint pays more after that (2 x $2/h x unsaved against $16/h x the wait), so the verdict
// flips every 10 minutes. The node is unneeded throughout, waiting included: it ripens at +10m,
// waits for the checkpoint at +11m and goes right after it. Were the clock reset while waiting,
// it would never reach 10 minutes.
TEST(LoopScaleDownTest, ConsolidatesRightAfterACheckpointWithTheDefaultUnneededTime) {
  World w;
  TwoGpuNodes(w);
  model::Pod& train = w.AddPod("train", {{"cpu", "2"}, {"nvidia.com/gpu", "1"}}, "n1");
  train.meta.owner_references = {{"batch/v1", "Job", "train", "job-uid", true}};
  train.meta.annotations[std::string(planner::kCheckpointIntervalAnnotation)] = "10m";
  train.start_time = w.now - minutes(69);
  w.Start();
  Time t0 = w.now;

  std::vector<Action> early = w.RunUntil(t0 + minutes(10) + seconds(30));
  EXPECT_TRUE(OfKind<TaintNode>(early).empty()) << ::testing::PrintToString(Describe(early));
  Status s = w.loop->GetStatus();
  ASSERT_EQ(s.unneeded.size(), 1u) << FormatStatus(s);
  EXPECT_EQ(s.unneeded[0].node, "n1");
  EXPECT_EQ(s.unneeded[0].since, t0);
  ASSERT_TRUE(s.unneeded[0].waiting.has_value());
  EXPECT_EQ(s.unneeded[0].waiting->pod, "default/train");
  EXPECT_EQ(s.unneeded[0].waiting->at, t0 + minutes(11));
  EXPECT_THAT(FormatStatus(s), HasSubstr("waits for the checkpoint of pod default/train"));

  std::vector<Action> after = w.RunUntil(t0 + minutes(12));
  auto taints = OfKind<TaintNode>(after);
  ASSERT_EQ(taints.size(), 1u) << ::testing::PrintToString(Describe(after));
  EXPECT_EQ(taints[0].node, "n1");
  const Event* event = FindEvent(after, "ScaleDown", "n1");
  ASSERT_NE(event, nullptr);
  EXPECT_THAT(event->message, HasSubstr("consolidation pays"));
}

// The loop learns how long a Job's pods run from those it sees Succeeded (the model lists them),
// and consolidation's horizon follows. n1 ($16/h, 8 GPUs) runs a 1-GPU training pod 2 hours in,
// with no checkpoint information; n2 has room for it. As long again as it ran, evicting pays
// ($32 saved against $4 of work). A finished pod of the same Job ran 2h20m: a minute later, 19
// minutes are left, $5.07 saved against $4.10 x 2, which does not pay.
TEST(LoopScaleDownTest, ARuntimeLearnedFromFinishedPodsSetsTheHorizon) {
  for (bool finished : {false, true}) {
    SCOPED_TRACE(finished ? "a finished pod of the Job" : "nothing learned");
    World w;
    TwoGpuNodes(w);
    const model::OwnerReference job{"batch/v1", "Job", "train", "job-uid", true};
    model::Pod& train = w.AddPod("train-0", {{"cpu", "2"}, {"nvidia.com/gpu", "1"}}, "n1");
    train.meta.owner_references = {job};
    train.start_time = w.now - std::chrono::hours(2);
    if (finished) {
      model::Pod& done = w.AddPod("train-1", {{"cpu", "2"}, {"nvidia.com/gpu", "1"}}, "n2");
      done.meta.owner_references = {job};
      done.phase = model::PodPhase::kSucceeded;
      done.start_time = w.now - std::chrono::hours(2) - minutes(20);
    }
    w.Start();
    w.RunUntil(w.now + minutes(1));
    Status s = w.loop->GetStatus();
    if (!finished) {
      ASSERT_EQ(s.unneeded.size(), 1u) << FormatStatus(s);
      EXPECT_EQ(s.unneeded[0].node, "n1");
      continue;
    }
    EXPECT_TRUE(s.unneeded.empty()) << FormatStatus(s);
    auto kept = std::find_if(s.kept->begin(), s.kept->end(),
                             [](const planner::Keep& k) { return k.node == "n1"; });
    ASSERT_NE(kept, s.kept->end()) << FormatStatus(s);
    EXPECT_THAT(kept->Reason(), HasSubstr("does not pay: saves $5.07 over 19m against $4.10"));
  }
}

TEST(LoopScaleDownTest, EmptyNodeSkipsEviction) {
  World w;
  TwoCpuNodes(w);
  w.pods.erase("small");
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(10));
  EXPECT_TRUE(OfKind<EvictPods>(actions).empty());
  auto deletes = OfKind<DeleteNode>(actions);
  ASSERT_EQ(deletes.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(deletes[0].node, "n1");
  EXPECT_FALSE(w.nodes.contains("n1"));
}

TEST(LoopScaleDownTest, EvictionThrottledUntilMaxPodEvictionTimeRollsBack) {
  World w;
  TwoCpuNodes(w);
  LoopOptions options;
  options.removal_cooldown = minutes(30);
  w.Start(options);
  w.evict_result = std::unexpected(Error(Error::Code::kThrottled,
                                         "Cannot evict pod as it would violate the pod's "
                                         "disruption budget."));
  std::vector<Action> actions = w.RunUntil(w.now + minutes(10));
  ASSERT_EQ(OfKind<EvictPods>(actions).size(), 1u) << ::testing::PrintToString(Describe(actions));
  Time drain_started = w.now;

  actions = w.RunUntil(drain_started + minutes(2) - milliseconds(1));
  EXPECT_GE(OfKind<EvictPods>(actions).size(), 3u);  // retried with backoff
  EXPECT_LE(OfKind<EvictPods>(actions).size(), 10u);
  EXPECT_TRUE(OfKind<UntaintNode>(actions).empty());
  EXPECT_TRUE(OfKind<DeleteNode>(actions).empty());

  actions = w.RunUntil(drain_started + minutes(2));
  auto untaints = OfKind<UntaintNode>(actions);
  ASSERT_EQ(untaints.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(untaints[0].node, "n1");
  const Event* failed = FindEvent(actions, "ScaleDownFailed", "n1");
  ASSERT_NE(failed, nullptr);
  EXPECT_TRUE(failed->warning);
  EXPECT_THAT(failed->message, HasSubstr("default/small"));
  EXPECT_THAT(failed->message, HasSubstr("disruption budget"));
  EXPECT_TRUE(w.nodes.at("n1").taints.empty());
  ASSERT_TRUE(w.loop->GetStatus().last_scale_down);
  EXPECT_EQ(w.loop->GetStatus().last_scale_down->outcome, "failed");

  // It rests for the cooldown: no new attempt, even though it is unneeded all along.
  Time rolled_back = w.now;
  actions = w.RunUntil(rolled_back + minutes(30) - seconds(1));
  EXPECT_TRUE(OfKind<TaintNode>(actions).empty()) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(w.loop->GetStatus().unneeded.size(), 1u);
  w.evict_result = {};
  actions = w.RunUntil(rolled_back + minutes(30) + seconds(10));
  EXPECT_EQ(OfKind<TaintNode>(actions).size(), 1u);
  EXPECT_EQ(OfKind<DeleteNode>(actions).size(), 1u);
}

// n1 empty and unneeded; its deletion fails with a 503. Returns the actions of its first 10
// minutes.
std::vector<Action> FailTheDeletion(World& w) {
  TwoCpuNodes(w);
  w.pods.erase("small");
  w.delete_error = Error(Error::Code::kUnavailable, "ARM said 503");
  w.Start();
  return w.RunUntil(w.now + minutes(10));
}

TEST(LoopScaleDownTest, FailedDeletionRollsBack) {
  World w;
  std::vector<Action> actions = FailTheDeletion(w);
  ASSERT_EQ(OfKind<DeleteNode>(actions).size(), 1u) << ::testing::PrintToString(Describe(actions));
  auto untaints = OfKind<UntaintNode>(actions);
  ASSERT_EQ(untaints.size(), 1u);
  EXPECT_EQ(untaints[0].node, "n1");
  const Event* failed = FindEvent(actions, "ScaleDownFailed", "n1");
  ASSERT_NE(failed, nullptr);
  EXPECT_THAT(failed->message, HasSubstr("503"));
  EXPECT_TRUE(w.nodes.at("n1").taints.empty());
  // The target the loop expected to drop is back: nothing looks upcoming.
  EXPECT_EQ(w.PoolStat("cpu").target, 2);
  EXPECT_EQ(w.PoolStat("cpu").upcoming, 0);
}

// A node found tainted again while its failed removal cools down (its untaint lost, or the taint
// put back by hand) is untainted once more, and the reason says so, not that it has not been
// unneeded long enough.
TEST(LoopScaleDownTest, ANodeTaintedAgainDuringItsCooldownIsUntaintedForThat) {
  World w;
  FailTheDeletion(w);
  ASSERT_TRUE(w.nodes.at("n1").taints.empty());
  w.delete_error.reset();
  w.nodes.at("n1").taints.push_back(
      {std::string(planner::kToBeDeletedTaint), "1", model::TaintEffect::kNoSchedule});
  std::vector<Action> actions = w.RunUntil(w.now + minutes(2));
  auto untaints = OfKind<UntaintNode>(actions);
  ASSERT_EQ(untaints.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(untaints[0].node, "n1");
  EXPECT_THAT(
      untaints[0].reason,
      HasSubstr("no longer removable: its removal failed recently; not tried again before"));
  EXPECT_TRUE(OfKind<DeleteNode>(actions).empty());
}

TEST(LoopScaleDownTest, TaintNeverConfirmedRollsBackWithoutEvicting) {
  World w;
  TwoCpuNodes(w);
  w.Start();
  w.RunUntil(w.now + minutes(10) - seconds(1));
  w.now += seconds(1);
  std::vector<Action> actions = w.Step();  // the driver loses the taint request
  ASSERT_EQ(OfKind<TaintNode>(actions).size(), 1u);
  Time tainted = w.now;
  std::vector<Action> later;
  while (w.loop->NextWakeup() < tainted + minutes(2)) {
    w.now = w.loop->NextWakeup();
    std::vector<Action> a = w.Step();
    later.insert(later.end(), a.begin(), a.end());
  }
  EXPECT_TRUE(OfKind<EvictPods>(later).empty()) << ::testing::PrintToString(Describe(later));
  EXPECT_TRUE(OfKind<UntaintNode>(later).empty());
  w.now = tainted + minutes(2);
  actions = w.Step();
  EXPECT_EQ(OfKind<UntaintNode>(actions).size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_NE(FindEvent(actions, "ScaleDownFailed", "n1"), nullptr);
  EXPECT_TRUE(OfKind<EvictPods>(actions).empty());
}

TEST(LoopScaleDownTest, NodeNeededAgainBeforeUnneededTimeIsKept) {
  World w;
  TwoCpuNodes(w);
  w.Start();
  Time t0 = w.now;
  w.RunUntil(t0 + minutes(5));
  ASSERT_EQ(w.loop->GetStatus().unneeded.size(), 1u);

  w.AddPod("burst", {{"cpu", "2500m"}, {"memory", "1Gi"}}, "n1");  // n1 at 65%
  w.RunUntil(t0 + minutes(6));
  EXPECT_TRUE(w.loop->GetStatus().unneeded.empty());
  w.pods.erase("burst");

  std::vector<Action> actions = w.RunUntil(t0 + minutes(16) - seconds(1));
  EXPECT_TRUE(OfKind<TaintNode>(actions).empty()) << ::testing::PrintToString(Describe(actions));
  Status s = w.loop->GetStatus();
  ASSERT_EQ(s.unneeded.size(), 1u);
  EXPECT_GT(s.unneeded[0].since, t0 + minutes(6));

  actions = w.RunUntil(t0 + minutes(16) + seconds(10));
  EXPECT_EQ(OfKind<TaintNode>(actions).size(), 1u);
}

// scaleDown.candidatesPerPass 1, three nodes that could each go: a pass weighs one. The node
// found unneeded keeps its clock while the others wait, saying why; each has its turn once the
// one before it is gone, and all three go.
TEST(LoopScaleDownTest, CandidatesBeyondTheBoundWaitTheirTurn) {
  World w;
  w.AddPool("cpu", 0, {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}});
  w.config.scale_down.candidates_per_pass = 1;
  for (std::string n : {"a", "b", "c"}) {
    w.AddNode(n, "cpu");
    w.AddPod("small-" + n, {{"cpu", "100m"}, {"memory", "100Mi"}}, n);
  }
  w.AddNode("big", "cpu");
  w.AddPod("busy", {{"cpu", "3"}, {"memory", "1Gi"}}, "big");  // 75 %: stays, with room
  w.Start();
  Time t0 = w.now;
  w.RunUntil(t0 + minutes(5));
  Status s = w.loop->GetStatus();
  ASSERT_EQ(s.unneeded.size(), 1u) << FormatStatus(s);
  EXPECT_EQ(s.unneeded[0].node, "a");
  EXPECT_EQ(s.unneeded[0].since, t0);
  for (const planner::Keep& k : *s.kept) {
    if (k.node != "b" && k.node != "c") continue;
    EXPECT_THAT(k.Reason(), HasSubstr("scaleDown.candidatesPerPass 1 reached")) << k.node;
  }

  std::vector<Action> actions = w.RunUntil(t0 + minutes(60));
  std::vector<std::string> deleted;
  for (const DeleteNode& d : OfKind<DeleteNode>(actions)) deleted.push_back(d.node);
  EXPECT_THAT(deleted, ::testing::ElementsAre("a", "b", "c"));
  EXPECT_TRUE(w.nodes.contains("big"));
}

// The node a bounded pass found unneeded before is weighed first; when it is needed after all,
// the next scan weighs the next node in turn although nothing changed in between: the scan that
// dropped the first node changed what the second reads, so it was no quiet Step
// (LoopOptions::skip_unchanged), and the second node's unneededTime starts then.
TEST(LoopScaleDownTest, TheNextInTurnIsWeighedWhenTheNodeBeforeIsNeededAgain) {
  World w;
  w.AddPool("cpu", 0, {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}});
  w.config.scale_down.candidates_per_pass = 1;
  for (std::string n : {"a", "b"}) {
    w.AddNode(n, "cpu");
    w.AddPod("small-" + n, {{"cpu", "100m"}, {"memory", "100Mi"}}, n);
  }
  w.AddNode("big", "cpu");
  w.AddPod("busy", {{"cpu", "3"}, {"memory", "1Gi"}}, "big");  // 75 %: stays, with room
  w.version = 1;
  w.Start();
  const Time t0 = w.now;
  w.RunUntil(t0 + minutes(2));
  Status s = w.loop->GetStatus();
  ASSERT_EQ(s.unneeded.size(), 1u) << FormatStatus(s);
  ASSERT_EQ(s.unneeded[0].node, "a");

  // A pod without a controller pins "a".
  model::Pod& pinned = w.AddPod("pinned", {{"cpu", "100m"}, {"memory", "100Mi"}}, "a");
  pinned.meta.owner_references.clear();
  pinned.Finalize();
  ++w.version;
  w.RunUntil(t0 + minutes(2) + seconds(30));
  s = w.loop->GetStatus();
  ASSERT_EQ(s.unneeded.size(), 1u) << FormatStatus(s);
  EXPECT_EQ(s.unneeded[0].node, "b");

  std::vector<Action> actions = w.RunUntil(t0 + minutes(30));
  std::vector<std::string> deleted;
  for (const DeleteNode& d : OfKind<DeleteNode>(actions)) deleted.push_back(d.node);
  EXPECT_THAT(deleted, ::testing::ElementsAre("b"));
}

TEST(LoopScaleDownTest, NoRemovalInAPoolThatIsScalingUp) {
  World w;
  TwoCpuNodes(w);
  w.pods.erase("small");
  w.target["cpu"] = 3;  // one node requested and not registered
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(12));
  EXPECT_TRUE(OfKind<TaintNode>(actions).empty()) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(w.PoolStat("cpu").upcoming, 1);
}

TEST(LoopScaleDownTest, MarksAndUnmarksDeletionCandidatesWhenEnabled) {
  World w;
  TwoCpuNodes(w);
  w.config.scale_down.mark_candidates = true;
  w.Start();
  std::vector<Action> actions = w.StepAndCarry();
  auto marks = OfKind<MarkCandidate>(actions);
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0].node, "n1");
  actions = w.RunUntil(w.now + seconds(30));
  EXPECT_TRUE(OfKind<MarkCandidate>(actions).empty());  // once

  w.AddPod("burst", {{"cpu", "2500m"}, {"memory", "1Gi"}}, "n1");
  actions = w.RunUntil(w.now + seconds(10));
  auto unmarks = OfKind<UnmarkCandidate>(actions);
  ASSERT_EQ(unmarks.size(), 1u);
  EXPECT_EQ(unmarks[0].node, "n1");
}

TEST(LoopScaleDownTest, NoDeletionCandidateMarksUnlessEnabled) {
  World w;
  TwoCpuNodes(w);
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(1));
  EXPECT_TRUE(OfKind<MarkCandidate>(actions).empty())
      << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(w.loop->GetStatus().unneeded.size(), 1u);  // n1 is unneeded all the same
}

TEST(LoopScaleDownTest, MarksAtMostTenDeletionCandidatesAScan) {
  World w;
  w.AddPool("cpu", 0, {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}});
  for (int i = 0; i < 12; ++i) w.AddNode(fmt::format("n{:02}", i), "cpu");
  w.config.scale_down.mark_candidates = true;
  w.Start();
  std::vector<Action> first = w.StepAndCarry();
  ASSERT_EQ(w.loop->GetStatus().unneeded.size(), 12u);
  std::vector<std::string> marked;
  for (const MarkCandidate& m : OfKind<MarkCandidate>(first)) marked.push_back(m.node);
  ASSERT_EQ(marked.size(), kMaxCandidateMarksPerScan);
  EXPECT_EQ(marked.front(), "n00");  // in name order
  EXPECT_EQ(marked.back(), "n09");
  // The next scan marks the other two, and none again.
  std::vector<Action> later = w.RunUntil(w.now + w.config.scan_interval);
  std::vector<std::string> rest;
  for (const MarkCandidate& m : OfKind<MarkCandidate>(later)) rest.push_back(m.node);
  EXPECT_THAT(rest, ::testing::ElementsAre("n10", "n11"));
  EXPECT_TRUE(OfKind<UnmarkCandidate>(later).empty());
}

// --- Restart ---------------------------------------------------------------------------------

TEST(LoopRestartTest, TaintedNodeThatIsNoLongerRemovableIsUntainted) {
  World w;
  TwoCpuNodes(w);
  // The pod on n1 has grown: it no longer fits on n2, so n1 cannot be drained.
  w.pods.erase("small");
  w.AddPod("small", {{"cpu", "1500m"}, {"memory", "100Mi"}}, "n1");
  w.nodes.at("n1").taints.push_back(
      {std::string(planner::kToBeDeletedTaint), "1", model::TaintEffect::kNoSchedule});
  w.Start();
  std::vector<Action> actions = w.Step();
  auto untaints = OfKind<UntaintNode>(actions);
  ASSERT_EQ(untaints.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(untaints[0].node, "n1");
  EXPECT_THAT(untaints[0].reason, HasSubstr("default/small"));
  EXPECT_TRUE(OfKind<EvictPods>(actions).empty());
  EXPECT_TRUE(OfKind<DeleteNode>(actions).empty());
}

TEST(LoopRestartTest, TaintedRemovableNodeResumesItsDrain) {
  World w;
  TwoCpuNodes(w);
  w.nodes.at("n1").taints.push_back(
      {std::string(planner::kToBeDeletedTaint), "1", model::TaintEffect::kNoSchedule});
  w.Start();
  std::vector<Action> actions = w.StepAndCarry();
  EXPECT_TRUE(OfKind<UntaintNode>(actions).empty());
  auto evicts = OfKind<EvictPods>(actions);
  ASSERT_EQ(evicts.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_THAT(evicts[0].pods, ::testing::ElementsAre("default/small"));
  actions = w.StepAndCarry();
  EXPECT_EQ(OfKind<DeleteNode>(actions).size(), 1u);
}

TEST(LoopRestartTest, TaintedEmptyNodeIsDeleted) {
  World w;
  TwoCpuNodes(w);
  w.pods.erase("small");
  w.nodes.at("n1").taints.push_back(
      {std::string(planner::kToBeDeletedTaint), "1", model::TaintEffect::kNoSchedule});
  w.Start();
  std::vector<Action> actions = w.Step();
  auto deletes = OfKind<DeleteNode>(actions);
  ASSERT_EQ(deletes.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(deletes[0].node, "n1");
  EXPECT_TRUE(OfKind<UntaintNode>(actions).empty());
}

TEST(LoopRestartTest, UpcomingRebuiltFromTargetNoDuplicateScaleUp) {
  World w;
  w.AddGpuPools();
  w.target["gpu-spot"] = 2;  // asked for before the restart, not registered yet
  w.AddGpuPod("p1");
  w.AddGpuPod("p2");
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(3));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty()) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(w.PoolStat("gpu-spot").upcoming, 2);
  // Requested "now" at the restart: they still time out eventually.
  actions = w.RunUntil(w.now + minutes(13));
  EXPECT_EQ(OfKind<DecreaseTarget>(actions).size(), 1u);
  EXPECT_EQ(OfKind<IncreasePool>(actions).size(), 1u);
}

// The planner places pending pods on existing and upcoming nodes first-fit in its own pod order
// (priority, age, name), so a spot-tolerant pod can take the upcoming on-demand node that was
// requested for a pod that does not tolerate spot; that pod then asks for another node at every
// periodic pass until there is an upcoming node per pod. A planner matter (scale_up.cc, step 1);
// enable this test when the planner places the least flexible pods first.
TEST(LoopScaleUpTest, MixedTolerationPodsDoNotScaleUpTwice) {
  World w;
  w.AddGpuPools();
  w.AddGpuPod("a-tolerates-spot", /*tolerate_spot=*/true);
  w.AddGpuPod("b-on-demand-only", /*tolerate_spot=*/false);
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(2));
  EXPECT_EQ(w.target["gpu-spot"], 1);
  EXPECT_EQ(w.target["gpu"], 1) << ::testing::PrintToString(Describe(actions));
}

// --- Determinism -----------------------------------------------------------------------------

// What one run of the scenario did: each action with the time of its Step, and the Steps skipped.
struct ScenarioRun {
  std::vector<std::string> actions;
  uint64_t skipped = 0;
};

ScenarioRun RunScenario(bool versioned_by_contents = false) {
  World w;
  w.versions.on = versioned_by_contents;
  const Time t0 = w.now;
  w.AddGpuPools();
  w.AddPool("cpu", 0, {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}});
  w.AddNode("c1", "cpu");
  w.AddNode("c2", "cpu");
  w.AddPod("web", {{"cpu", "3"}}, "c2");
  w.Start();
  for (int i = 0; i < 4; ++i) w.AddGpuPod("g" + std::to_string(i), i % 2 == 0);
  w.RunUntil(w.now + seconds(5));
  w.stockout.insert("gpu-spot");
  w.RunUntil(w.now + minutes(1));
  w.stockout.clear();
  w.AddPod("cpu-job", {{"cpu", "2"}});
  w.RunUntil(w.now + minutes(30));
  // A pod between two wakeups, after Steps that decided nothing: seen at once all the same.
  w.now += seconds(7);
  w.AddGpuPod("late");
  w.RunUntil(w.now + minutes(2));
  ScenarioRun run;
  for (size_t i = 0; i < w.all.size(); ++i) {
    run.actions.push_back(
        fmt::format("+{}ms {}", std::chrono::duration_cast<milliseconds>(w.all_at[i] - t0).count(),
                    DescribeAction(w.all[i])));
  }
  run.skipped = w.loop->skipped_steps();
  return run;
}

TEST(LoopDeterminismTest, SameInputsSameActions) {
  std::vector<std::string> a = RunScenario().actions;
  std::vector<std::string> b = RunScenario().actions;
  EXPECT_GT(a.size(), 5u);
  EXPECT_EQ(a, b);
}

// The same scenario with every observation versioned by what it holds: the Steps that see nothing
// new return at once (LoopOptions::skip_unchanged), and every action is the same, at the same
// time. ctest's `autoscaler.versioned.` entries run every loop test so.
TEST(LoopDeterminismTest, SkippingUnchangedStepsDecidesTheSame) {
  ScenarioRun full = RunScenario(/*versioned_by_contents=*/false);
  ScenarioRun skipping = RunScenario(/*versioned_by_contents=*/true);
  EXPECT_EQ(full.skipped, 0u);
  EXPECT_GT(skipping.skipped, 10u);
  EXPECT_EQ(skipping.actions, full.actions);
}

// A status is taken at every pass; the Keeps (one per managed node) are shared with the loop, not
// copied, and there is a list, empty, before the first pass.
TEST(LoopStatusTest, TheKeptNodesAreSharedNotCopied) {
  World w;
  TwoCpuNodes(w);
  w.Start();
  ASSERT_NE(w.loop->GetStatus().kept, nullptr);
  EXPECT_TRUE(w.loop->GetStatus().kept->empty());
  w.RunUntil(w.now + minutes(1));
  Status a = w.loop->GetStatus();
  Status b = w.loop->GetStatus();
  ASSERT_FALSE(a.kept->empty()) << FormatStatus(a);
  EXPECT_EQ(a.kept.get(), b.kept.get());
}

TEST(LoopStatusTest, FormatStatusNamesPoolsAndBackoff) {
  World w;
  w.AddGpuPools();
  w.Start();
  w.AddGpuPod("p1");
  w.RunUntil(w.now + seconds(1));
  w.stockout.insert("gpu-spot");
  w.RunUntil(w.now + seconds(2));
  std::string text = FormatStatus(w.loop->GetStatus());
  EXPECT_THAT(text, HasSubstr("gpu-spot: min 0 max 10"));
  EXPECT_THAT(text, HasSubstr("backoff until"));
  EXPECT_THAT(text, HasSubstr("last scale-up:"));
}

// --- Warm capacity ---------------------------------------------------------------------------

// Placeholders live only inside the loop: no action ever names one.
void ExpectNoPlaceholderLeaks(const std::vector<Action>& actions) {
  for (const Action& a : actions) {
    std::vector<std::string> pods;
    if (const auto* up = std::get_if<IncreasePool>(&a)) pods = up->pods;
    if (const auto* evict = std::get_if<EvictPods>(&a)) pods = evict->pods;
    for (const std::string& pod : pods) {
      EXPECT_THAT(pod, ::testing::Not(HasSubstr("tidepool-warm/"))) << DescribeAction(a);
    }
    if (const auto* e = std::get_if<Event>(&a)) {
      EXPECT_THAT(e->object, ::testing::Not(HasSubstr("warm-"))) << DescribeAction(a);
    }
  }
}

// A 1-GPU on-demand pool; nodes the loop asks for come `boot` later (Deliver).
struct WarmWorld : World {
  model::Pool& AddGpuPool(Duration boot = minutes(10)) {
    model::Pool& p = AddPool(
        "gpu", 10, {{"cpu", "6"}, {"memory", "112Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}});
    p.price_per_hour = 3;
    p.boot_delay = boot;
    boot_delay = boot;
    return p;
  }
  // Steps and carries out the actions, remembering when requested nodes will join.
  std::vector<Action> Tick() {
    Deliver();
    std::vector<Action> actions = StepAndCarry();
    for (const IncreasePool& a : OfKind<IncreasePool>(actions)) {
      for (int i = 0; i < a.count; ++i) arrivals.push_back({now + boot_delay, a.pool});
    }
    Bind();
    return actions;
  }
  // Runs Tick at every wakeup until `until`.
  std::vector<Action> TickUntil(Time until) {
    std::vector<Action> out;
    while (true) {
      std::vector<Action> a = Tick();
      out.insert(out.end(), a.begin(), a.end());
      Time next =
          std::min(loop->NextWakeup(), arrivals.empty() ? Time::max() : arrivals.front().first);
      if (next > until) break;
      now = std::max(now, next);
    }
    now = until;
    return out;
  }
  void Deliver() {
    while (!arrivals.empty() && arrivals.front().first <= now) {
      AddNode(fmt::format("{}-{}", arrivals.front().second, next_node++), arrivals.front().second,
              /*count_in_target=*/false, now);
      arrivals.pop_front();
    }
  }
  // A kube-scheduler stand-in: pending pods go to the first node with a free GPU.
  void Bind() {
    std::map<std::string, int64_t> used;
    for (const auto& [name, p] : pods)
      if (!p.node_name.empty()) used[p.node_name] += p.requests.gpus();
    for (auto& [name, p] : pods) {
      if (!p.node_name.empty()) continue;
      for (auto& [node_name, n] : nodes) {
        bool deleting = std::any_of(n.taints.begin(), n.taints.end(), [](const model::Taint& t) {
          return t.key == planner::kToBeDeletedTaint;
        });
        if (deleting || used[node_name] + p.requests.gpus() > n.allocatable.gpus()) continue;
        p.node_name = node_name;
        p.phase = model::PodPhase::kRunning;
        used[node_name] += p.requests.gpus();
        break;
      }
    }
  }
  int NodesOf(const std::string& pool) const {
    int n = 0;
    for (const auto& [name, node] : nodes) {
      const std::string* p = node.meta.Label(model::kLabelPool);
      if (p != nullptr && *p == pool) ++n;
    }
    return n;
  }

  Duration boot_delay = minutes(10);
  std::deque<std::pair<Time, std::string>> arrivals;
  int next_node = 0;
};

TEST(LoopWarmTest, SpareNodesComeFromZeroAndAreNeverScaledDown) {
  WarmWorld w;
  w.AddGpuPool().warm.spare_nodes = 2;
  w.Start();
  std::vector<Action> first = w.Tick();
  auto ups = OfKind<IncreasePool>(first);
  ASSERT_EQ(ups.size(), 1u) << ::testing::PrintToString(Describe(first));
  EXPECT_EQ(ups[0].pool, "gpu");
  EXPECT_EQ(ups[0].count, 2);
  EXPECT_TRUE(ups[0].pods.empty());
  EXPECT_EQ(ups[0].reason, "warm: spareNodes 2");
  const Event* ev = FindEvent(first, "WarmScaleUp", "");
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->object_kind, EventObject::kStatus);
  EXPECT_THAT(ev->message, HasSubstr("warm: spareNodes 2"));
  EXPECT_EQ(w.loop->GetStatus().pending_pods, 0);

  // Hours idle: never unneeded, never more nodes.
  std::vector<Action> later = w.TickUntil(w.now + std::chrono::hours(3));
  EXPECT_EQ(w.NodesOf("gpu"), 2);
  EXPECT_TRUE(OfKind<IncreasePool>(later).empty()) << ::testing::PrintToString(Describe(later));
  EXPECT_TRUE(OfKind<TaintNode>(later).empty());
  Status s = w.loop->GetStatus();
  EXPECT_TRUE(s.unneeded.empty());
  ASSERT_EQ(s.kept->size(), 2u);
  EXPECT_THAT((*s.kept)[0].Reason(), HasSubstr("warm: a spare node of pool gpu"));
  EXPECT_THAT(FormatStatus(s), HasSubstr("warm: spareNodes 2"));

  // A third idle node is beyond the spare: it goes, the two spare stay.
  w.AddNode("extra", "gpu", true, w.now - std::chrono::hours(1));
  std::vector<Action> after = w.TickUntil(w.now + minutes(30));
  auto taints = OfKind<TaintNode>(after);
  ASSERT_EQ(taints.size(), 1u) << ::testing::PrintToString(Describe(after));
  EXPECT_EQ(w.NodesOf("gpu"), 2);
  ExpectNoPlaceholderLeaks(w.all);
}

TEST(LoopWarmTest, HeadroomIsRestoredAfterAPodConsumesIt) {
  WarmWorld w;
  model::Pool& pool = w.AddGpuPool();
  pool.warm.headroom.Set(model::InternResource(model::kNvidiaGpu), 2);
  pool.warm.headroom_set.push_back(model::InternResource(model::kNvidiaGpu));
  w.Start();
  w.TickUntil(w.now + minutes(15));
  ASSERT_EQ(w.NodesOf("gpu"), 2);
  ASSERT_EQ(OfKind<IncreasePool>(w.all).size(), 1u);
  EXPECT_EQ(OfKind<IncreasePool>(w.all)[0].reason, "warm: headroom nvidia.com/gpu 2");

  // A pod lands in the headroom at once; the loop adds a node to restore it.
  w.AddGpuPod("p1", /*tolerate_spot=*/false);
  w.Bind();
  ASSERT_FALSE(w.pods.at("p1").node_name.empty());
  std::vector<Action> actions = w.TickUntil(w.now + minutes(15));
  auto ups = OfKind<IncreasePool>(actions);
  ASSERT_EQ(ups.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(ups[0].count, 1);
  EXPECT_EQ(ups[0].reason, "warm: headroom nvidia.com/gpu 2");
  EXPECT_EQ(w.NodesOf("gpu"), 3);
  // Stable afterwards: no more nodes, none removed.
  std::vector<Action> later = w.TickUntil(w.now + std::chrono::hours(1));
  EXPECT_TRUE(OfKind<IncreasePool>(later).empty());
  EXPECT_TRUE(OfKind<TaintNode>(later).empty());
  EXPECT_EQ(w.NodesOf("gpu"), 3);

  // The pod is pending before the binder sees it: its own scale-up is not doubled.
  w.AddGpuPod("p2", /*tolerate_spot=*/false);
  std::vector<Action> a2 = w.TickUntil(w.now + minutes(15));
  EXPECT_EQ(w.NodesOf("gpu"), 4) << ::testing::PrintToString(Describe(a2));
  EXPECT_EQ(FindEvent(a2, "NotTriggerScaleUp", "default/p2"), nullptr);
  ExpectNoPlaceholderLeaks(w.all);
}

TEST(LoopWarmTest, PlaceholdersAreNeverEvictedNorPending) {
  WarmWorld w;
  model::Pool& pool = w.AddPool("cpu", 0, {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}});
  pool.warm.headroom.Set(model::kCpu, 2000);
  pool.warm.headroom_set.push_back(model::kCpu);
  // n1 has the headroom's room; n2's pod could move to n1 but that would eat the headroom.
  w.AddNode("n1", "cpu");
  w.AddNode("n2", "cpu");
  w.AddPod("small", {{"cpu", "1"}, {"memory", "100Mi"}}, "n2");
  w.Start();
  std::vector<Action> actions = w.TickUntil(w.now + std::chrono::hours(1));
  EXPECT_TRUE(OfKind<EvictPods>(actions).empty()) << ::testing::PrintToString(Describe(actions));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty());
  EXPECT_EQ(w.loop->GetStatus().pending_pods, 0);
  EXPECT_TRUE(w.loop->GetStatus().unschedulable->empty());
  ExpectNoPlaceholderLeaks(w.all);
}

// A burst of 4 one-GPU pods from 09:00 to 11:00 every day.
struct PeriodicBurst {
  WarmWorld w;
  std::vector<Time> prewarm_at;  // IncreasePool actions made for a predicted burst
  double max_spend = 0;

  explicit PeriodicBurst(double max_cost_per_day) {
    model::Pool& p = w.AddGpuPool();
    p.warm.predictive.enabled = true;
    p.warm.predictive.horizon = std::chrono::hours(1);
    p.warm.predictive.max_cost_per_day = max_cost_per_day;
    p.warm.predictive.wait_value_per_gpu_hour = 100;
    w.config.scan_interval = minutes(1);
    w.now = At("2026-01-05T00:00:00Z");
    w.Start();
  }
  void RunDay(int day) {
    Time midnight = At("2026-01-05T00:00:00Z") + std::chrono::hours(24 * day);
    Run(midnight + std::chrono::hours(9));
    for (int i = 0; i < 4; ++i) w.AddGpuPod(fmt::format("d{}-{}", day, i), false);
    Run(midnight + std::chrono::hours(11));
    w.pods.clear();
    Run(midnight + std::chrono::hours(24));
  }
  void Run(Time until) {
    while (w.now < until) {
      for (const IncreasePool& a : OfKind<IncreasePool>(w.Tick())) {
        if (a.reason.find("predicted burst") != std::string::npos) prewarm_at.push_back(w.now);
      }
      for (const PoolStatus& p : w.loop->GetStatus().pools) {
        max_spend = std::max(max_spend, p.warm_spend_24h);
      }
      Time next = std::min(w.loop->NextWakeup(),
                           w.arrivals.empty() ? Time::max() : w.arrivals.front().first);
      w.now = std::min(until, std::max(w.now + seconds(1), next));
    }
  }
};

TEST(LoopWarmTest, PredictivePrewarmsBeforeTheDailyBurstWithinBudget) {
  PeriodicBurst b(/*max_cost_per_day=*/10);
  b.RunDay(0);
  EXPECT_TRUE(b.prewarm_at.empty()) << "nothing learned yet";
  b.RunDay(1);
  b.RunDay(2);
  ASSERT_FALSE(b.prewarm_at.empty());
  Time nine = At("2026-01-07T09:00:00Z");
  EXPECT_LT(b.prewarm_at.back(), nine);
  EXPECT_GT(b.prewarm_at.back(), nine - std::chrono::hours(1));
  // The budget: each pre-warm node is committed at 3/h for (burst slot end - now + 10m) >= 35m,
  // so $10 a day buys at most 5 of them; the spend never goes over.
  EXPECT_LE(b.max_spend, 10.0 + 1e-9);
  EXPECT_GT(b.max_spend, 0);
  const PoolStatus& p = b.w.PoolStat("gpu");
  EXPECT_TRUE(p.warm_predictive);
  EXPECT_NEAR(p.warm_predicted, 0, 1e-9);  // at midnight nothing is due within the hour
  ExpectNoPlaceholderLeaks(b.w.all);
}

TEST(LoopWarmTest, ARestartKeepsTheLearnedProfileAndDecidesTheSame) {
  PeriodicBurst b(/*max_cost_per_day=*/50);
  for (int day = 0; day < 3; ++day) b.RunDay(day);
  // 08:50 on day 3 (pre-warming starts 1.25 x the 10 min boot before 09:00), the cluster empty:
  // both loops see the same observation.
  b.Run(At("2026-01-08T08:40:00Z"));
  std::string state = b.w.loop->ExportWarmState();
  Autoscaler fresh(b.w.config);
  ASSERT_TRUE(fresh.ImportWarmState(state).has_value());
  EXPECT_EQ(fresh.ExportWarmState(), state);

  Time t = At("2026-01-08T08:50:00Z");
  std::vector<Action> old_actions = b.w.loop->Step(b.w.Observe(), t);
  std::vector<Action> new_actions = fresh.Step(b.w.Observe(), t);
  auto ups = OfKind<IncreasePool>(new_actions);
  ASSERT_EQ(ups.size(), 1u) << ::testing::PrintToString(Describe(new_actions));
  EXPECT_THAT(ups[0].reason, HasSubstr("predicted burst"));
  EXPECT_EQ(Describe(OfKind<IncreasePool>(old_actions)), Describe(ups));

  // Without the state a fresh loop knows nothing.
  Autoscaler blank(b.w.config);
  EXPECT_TRUE(OfKind<IncreasePool>(blank.Step(b.w.Observe(), t)).empty());
}

TEST(LoopWarmTest, BadWarmStateIsAnErrorAndChangesNothing) {
  PeriodicBurst b(/*max_cost_per_day=*/50);
  b.RunDay(0);
  std::string before = b.w.loop->ExportWarmState();
  for (
      std::string_view bad :
      {std::string_view("{"), std::string_view("[]"),
       std::string_view(R"({"version": 2, "pools": {}})"), std::string_view(R"({"version": 1})"),
       std::string_view(
           R"({"version": 1, "pools": {"gpu": {"profile": {"slot": 1, "peak": 0, "folded": 1, "daily": [[500, 1, 0.5, 1]], "weekly": []}}}})"),
       std::string_view(
           R"({"version": 1, "pools": {"gpu": {"profile": {"slot": 1, "peak": 0, "folded": 1, "daily": [[5, 1, 7, 1]], "weekly": []}}}})"),
       std::string_view(
           R"({"version": 1, "pools": {"gpu": {"profile": {"slot": 1, "peak": -1, "folded": 1, "daily": [], "weekly": []}}}})"),
       std::string_view(
           R"({"version": 1, "pools": {"gpu": {"profile": {"slot": 1, "peak": 0, "folded": 1, "daily": [], "weekly": []}, "ledger": [[1, 1, "x"]]}}})")}) {
    auto r = b.w.loop->ImportWarmState(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r) {
      EXPECT_THAT(r.error().message(), HasSubstr("warm state")) << bad;
    }
    EXPECT_EQ(b.w.loop->ExportWarmState(), before);
  }
  // Unknown pools are ignored (the config changed).
  EXPECT_TRUE(b.w.loop->ImportWarmState(R"({"version": 1, "pools": {"gone": 3}})").has_value());
}

TEST(DemandProfileTest, LearnsTheDailyPeakWithDecay) {
  DemandProfile p;
  Time day0 = At("2026-01-05T00:00:00Z");
  for (int day = 0; day < 3; ++day) {
    Time base = day0 + std::chrono::hours(24 * day);
    p.Observe(base + std::chrono::hours(9), 0);
    p.Observe(base + std::chrono::hours(9) + minutes(5), day == 2 ? 8 : 4);
    p.Observe(base + std::chrono::hours(10), 0);
  }
  auto pred = p.Predict(At("2026-01-08T08:30:00Z"), std::chrono::hours(1));
  const double mean = (0.5 * 8 + 0.25 * 4 + 0.125 * 4) / 0.875;
  const double square = (0.5 * 64 + 0.25 * 16 + 0.125 * 16) / 0.875;
  EXPECT_NEAR(pred.demand, mean + std::sqrt(square - mean * mean), 1e-9);
  EXPECT_NEAR(pred.confidence, 0.875, 1e-9);
  EXPECT_EQ(pred.at, At("2026-01-08T09:00:00Z"));
  EXPECT_FALSE(pred.weekly);  // a Thursday: this weekday's slot was never seen
  EXPECT_EQ(p.Predict(At("2026-01-08T12:00:00Z"), std::chrono::hours(1)).demand, 0);
  auto back = DemandProfile::FromJson(p.ToJson(), "p");
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(*back == p);
}

}  // namespace
}  // namespace tidepool::autoscaler

// --- Stopped machines (pools[].scaleDown.mode deallocate) -------------------------------------

namespace tidepool::autoscaler {
namespace {

// TwoCpuNodes with n1 empty, the pool scaling down as `scale_down` says.
void EmptyCpuNode(World& w, model::PoolScaleDown scale_down = {}) {
  TwoCpuNodes(w);
  w.pods.erase("small");
  w.config.pools.back().scale_down = scale_down;
}

void DeallocatingCpuPool(World& w, int max_stopped) {
  EmptyCpuNode(w, {model::ScaleDownMode::kDeallocate, max_stopped});
}

TEST(LoopStoppedTest, ARemovedNodeIsStoppedWhileBelowMaxStopped) {
  World w;
  DeallocatingCpuPool(w, 1);
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(10) + seconds(30));
  auto deletes = OfKind<DeleteNode>(actions);
  ASSERT_EQ(deletes.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(deletes[0].method, RemovalMethod::kStop);
  EXPECT_THAT(deletes[0].reason, HasSubstr("stopped for a fast restart (1 of maxStopped 1"));
  EXPECT_EQ(w.stopped["cpu"], 1);
  bool evented = false;
  for (const Event& e : OfKind<Event>(actions)) {
    evented |= e.object == "n1" && e.message.find("node stopped by tidepool") != std::string::npos;
  }
  EXPECT_TRUE(evented) << ::testing::PrintToString(Describe(actions));
  w.Step();
  const PoolStatus& p = w.PoolStat("cpu");
  EXPECT_TRUE(p.deallocate);
  EXPECT_EQ(p.stopped, 1);
  EXPECT_EQ(p.max_stopped, 1);
  ASSERT_TRUE(w.loop->GetStatus().last_scale_down);
  EXPECT_EQ(w.loop->GetStatus().last_scale_down->outcome, "stopped");
}

TEST(LoopStoppedTest, AtMaxStoppedTheNodeIsDeletedAndTheStatusSaysWhy) {
  World w;
  DeallocatingCpuPool(w, 1);
  w.stopped["cpu"] = 1;
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(10) + seconds(30));
  auto deletes = OfKind<DeleteNode>(actions);
  ASSERT_EQ(deletes.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(deletes[0].method, RemovalMethod::kDelete);
  EXPECT_THAT(deletes[0].reason,
              HasSubstr("deleted, not stopped: 1 stopped already (maxStopped 1)"));
  EXPECT_EQ(w.stopped["cpu"], 1);
  EXPECT_THAT(w.PoolStat("cpu").stopped_reason, HasSubstr("maxStopped 1"));
}

TEST(LoopStoppedTest, StoppedMachinesBeyondMaxStoppedAreDeletedOnce) {
  World w;
  DeallocatingCpuPool(w, 1);
  w.stopped["cpu"] = 3;
  w.Start();
  std::vector<Action> actions = w.StepAndCarry();
  auto trims = OfKind<DeleteStopped>(actions);
  ASSERT_EQ(trims.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(trims[0].count, 2);
  EXPECT_EQ(w.stopped["cpu"], 1);
  w.now += w.config.scan_interval;
  EXPECT_TRUE(OfKind<DeleteStopped>(w.StepAndCarry()).empty());
}

TEST(LoopStoppedTest, AFailedStopIsTakenBackFromTheCount) {
  World w;
  DeallocatingCpuPool(w, 2);
  w.delete_error = Error(Error::Code::kUnavailable, "ARM said 503");
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(10) + seconds(30));
  auto deletes = OfKind<DeleteNode>(actions);
  ASSERT_EQ(deletes.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(deletes[0].method, RemovalMethod::kStop);
  EXPECT_EQ(w.PoolStat("cpu").stopped, 0);
}

TEST(LoopStoppedTest, ADeletePoolNeverStops) {
  World w;
  EmptyCpuNode(w);
  w.Start();
  auto deletes = OfKind<DeleteNode>(w.RunUntil(w.now + minutes(10) + seconds(30)));
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].method, RemovalMethod::kDelete);
  EXPECT_THAT(deletes[0].reason, ::testing::Not(HasSubstr("stopped")));
  EXPECT_FALSE(w.PoolStat("cpu").deallocate);
}

}  // namespace
}  // namespace tidepool::autoscaler

// --- Stopped machines worth their disks (deallocate + warm.predictive) ------------------------

namespace tidepool::autoscaler {
namespace {

// A deallocate pool with predictive warm capacity that saw no demand for a day: its profile
// expects nothing, so stopped machines are not worth their disks and are deleted, saying why.
// Without a day learned, only maxStopped applies.
// A deallocate pool with predictive warm capacity and 3 stopped machines, `stock` of them kept
// by warm.stoppedNodes, run for 25 hours without demand; returns the DeleteStopped actions.
std::vector<DeleteStopped> TrimUnexpected(WarmWorld& w, int stock) {
  model::Pool& p = w.AddGpuPool();
  p.scale_down.mode = model::ScaleDownMode::kDeallocate;
  p.scale_down.max_stopped = 4;
  p.warm.predictive.enabled = true;
  p.warm.predictive.max_cost_per_day = 10;
  p.warm.predictive.wait_value_per_gpu_hour = 6;
  p.warm.stopped_nodes = stock;
  w.stopped["gpu"] = 3;
  w.Start();
  EXPECT_TRUE(OfKind<DeleteStopped>(w.Tick()).empty()) << "nothing learned yet";
  std::vector<Action> all;
  for (int i = 0; i < 4 * 25; ++i) {
    w.now += minutes(15);
    for (Action& a : w.Tick()) all.push_back(std::move(a));
  }
  EXPECT_TRUE(OfKind<IncreasePool>(all).empty()) << ::testing::PrintToString(Describe(all));
  return OfKind<DeleteStopped>(all);
}

TEST(LoopStoppedTest, StoppedMachinesTheProfileDoesNotExpectAreDeleted) {
  WarmWorld w;
  auto trims = TrimUnexpected(w, /*stock=*/0);
  ASSERT_EQ(trims.size(), 1u);
  EXPECT_EQ(trims[0].count, 3);
  EXPECT_THAT(trims[0].reason, HasSubstr("the demand profile expects at most 0 more node(s)"));
  EXPECT_EQ(w.stopped["gpu"], 0);
  EXPECT_THAT(w.PoolStat("gpu").stopped_reason, HasSubstr("deleted 3 of 3 stopped machine(s)"));
}

// warm.stoppedNodes is kept whatever the profile says.
TEST(LoopStoppedTest, TheStoppedStockIsKeptAgainstTheProfile) {
  WarmWorld w;
  auto trims = TrimUnexpected(w, /*stock=*/2);
  ASSERT_EQ(trims.size(), 1u);
  EXPECT_EQ(trims[0].count, 1);
  EXPECT_THAT(trims[0].reason, HasSubstr("warm.stoppedNodes 2"));
  EXPECT_EQ(w.stopped["gpu"], 2);
}

// --- A stock of stopped machines (warm.stoppedNodes) ------------------------------------------

model::Pool& StockedGpuPool(WarmWorld& w, int stock) {
  model::Pool& p = w.AddGpuPool();
  p.scale_down.mode = model::ScaleDownMode::kDeallocate;
  p.scale_down.max_stopped = 4;
  p.warm.stopped_nodes = stock;
  return p;
}

// An empty pool creates its stock once; the nodes come up idle and scale-down stops them; a pod
// then restarts one of them, and the pool is not topped up while it runs.
TEST(LoopStoppedStockTest, TheStockIsCreatedOnceThenStoppedWhenIdle) {
  WarmWorld w;
  StockedGpuPool(w, 2);
  w.Start();
  std::vector<Action> first = w.Tick();
  auto adds = OfKind<IncreasePool>(first);
  ASSERT_EQ(adds.size(), 1u) << ::testing::PrintToString(Describe(first));
  EXPECT_EQ(adds[0].count, 2);
  EXPECT_EQ(adds[0].warm, 2);
  EXPECT_THAT(adds[0].reason, HasSubstr("warm: stoppedNodes 2 (0 stopped, 0 up, 0 coming)"));
  bool evented = false;
  for (const Event& e : OfKind<Event>(first))
    evented |= e.reason == EventReason::kWarmScaleUp && e.message.find("to stop") != e.message.npos;
  EXPECT_TRUE(evented) << ::testing::PrintToString(Describe(first));

  std::vector<Action> later = w.TickUntil(w.now + minutes(45));
  EXPECT_TRUE(OfKind<IncreasePool>(later).empty()) << ::testing::PrintToString(Describe(later));
  auto removals = OfKind<DeleteNode>(later);
  ASSERT_EQ(removals.size(), 2u) << ::testing::PrintToString(Describe(later));
  for (const DeleteNode& d : removals) EXPECT_EQ(d.method, RemovalMethod::kStop);
  EXPECT_EQ(w.stopped["gpu"], 2);
  EXPECT_THAT(w.PoolStat("gpu").warm_reason, HasSubstr("stoppedNodes 2 (2 stopped, 0 up"));

  w.AddGpuPod("p1");
  std::vector<Action> burst = w.TickUntil(w.now + minutes(30));
  adds = OfKind<IncreasePool>(burst);
  ASSERT_EQ(adds.size(), 1u) << ::testing::PrintToString(Describe(burst));
  EXPECT_EQ(adds[0].warm, 0) << "for the pod, restarting a stopped machine";
  EXPECT_EQ(w.stopped["gpu"], 1);
}

// A restart of a stopped machine says nothing of how long a new node boots: the boot time
// learned (and so the horizon the stopped machines are kept for) comes from new nodes only.
TEST(LoopStoppedStockTest, RestartsAreNotLearnedAsBootTimes) {
  WarmWorld w;
  model::Pool& p = StockedGpuPool(w, 0);
  p.warm.predictive.enabled = true;
  p.warm.predictive.max_cost_per_day = 10;
  p.warm.predictive.wait_value_per_gpu_hour = 6;
  w.stopped["gpu"] = 1;
  w.boot_delay = minutes(1);  // the restart
  w.Start();
  w.Tick();
  w.AddGpuPod("p1");
  w.TickUntil(w.now + minutes(5));
  ASSERT_EQ(w.stopped["gpu"], 0) << "the pod restarted the stopped machine";
  EXPECT_EQ(w.loop->ExportWarmState().find("bootMs"), std::string::npos);
  w.boot_delay = minutes(12);  // a new node
  w.AddGpuPod("p2");
  w.TickUntil(w.now + minutes(15));
  EXPECT_NE(w.loop->ExportWarmState().find("\"bootMs\":720000"), std::string::npos)
      << w.loop->ExportWarmState();
}

// With a machine stopped, a short stock waits: an increase would restart it.
TEST(LoopStoppedStockTest, AShortStockWaitsWhileAMachineIsStopped) {
  WarmWorld w;
  StockedGpuPool(w, 3);
  w.stopped["gpu"] = 1;
  w.Start();
  EXPECT_TRUE(OfKind<IncreasePool>(w.Tick()).empty());
  EXPECT_THAT(w.PoolStat("gpu").warm_reason,
              HasSubstr("2 short; adding waits until no machine is stopped"));
}

// The stock never takes the pool past its max.
TEST(LoopStoppedStockTest, TheStockStopsAtThePoolsMax) {
  WarmWorld w;
  model::Pool& p = StockedGpuPool(w, 3);
  p.max = 2;
  w.Start();
  auto adds = OfKind<IncreasePool>(w.Tick());
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].count, 2);
  w.now += w.config.scan_interval;
  EXPECT_TRUE(OfKind<IncreasePool>(w.Tick()).empty());
  EXPECT_THAT(w.PoolStat("gpu").warm_reason, HasSubstr("the pool is at its max 2"));
}

// --- Consolidation's replace move ----------------------------------------------------------

// n1, an on-demand 2-GPU node at $8/h, runs one 1-GPU pod that tolerates spot; a spot pool of
// the same shape costs $2.40/h. Both at 50 % GPU: n1 is replaced by a spot node.
void OnDemandNodeAndSpotPool(World& w) {
  w.config.scale_down.consolidation.replace = true;
  ResourceList shape = {
      {"cpu", "6"}, {"memory", "112Gi"}, {"nvidia.com/gpu", "2"}, {"pods", "110"}};
  w.AddPool("gpu-spot", 100, shape, /*spot=*/true).price_per_hour = 2.4;
  w.AddPool("gpu", 10, shape).price_per_hour = 8;
  w.AddNode("n1", "gpu");
  w.AddPod("serve", {{"cpu", "1"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "1"}}, "n1",
           /*tolerate_spot=*/true);
}

// What the actions did to n1: taints, evictions.
bool Disrupted(const std::vector<Action>& actions, std::string_view node) {
  for (const auto& t : OfKind<TaintNode>(actions))
    if (t.node == node) return true;
  for (const auto& e : OfKind<EvictPods>(actions))
    if (e.node == node) return true;
  return false;
}

// Runs the world of OnDemandNodeAndSpotPool until n1 has been unneeded for unneededTime (10m):
// the replace move starts.
std::vector<Action> RunUntilTheReplaceStarts(World& w) {
  OnDemandNodeAndSpotPool(w);
  w.Start();
  return w.RunUntil(w.now + minutes(10));
}

TEST(LoopReplaceTest, NothingIsEvictedBeforeTheReplacementIsReady) {
  World w;
  std::vector<Action> actions = RunUntilTheReplaceStarts(w);
  auto adds = OfKind<IncreasePool>(actions);
  ASSERT_EQ(adds.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(adds[0].pool, "gpu-spot");
  EXPECT_EQ(adds[0].count, 1);
  EXPECT_EQ(adds[0].replaces, "n1");
  const Event* started = FindEvent(actions, "ConsolidationReplace", "n1");
  ASSERT_NE(started, nullptr);
  EXPECT_FALSE(started->warning);
  EXPECT_THAT(started->message, HasSubstr("replacing the node with one of pool gpu-spot"));
  EXPECT_THAT(started->message, HasSubstr("saves $33.60 over 6h"));  // ($8 - $2.40) x 6h
  EXPECT_FALSE(Disrupted(actions, "n1")) << ::testing::PrintToString(Describe(actions));

  // The new node is registered but not Ready: still nothing, and the status says why.
  model::Node& spot = w.AddNode("spot-1", "gpu-spot", /*count_in_target=*/false, w.now);
  spot.ready = false;
  actions = w.RunUntil(w.now + minutes(5));
  EXPECT_FALSE(Disrupted(actions, "n1")) << ::testing::PrintToString(Describe(actions));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty());
  Status s = w.loop->GetStatus();
  bool kept = false;
  for (const planner::Keep& k : *s.kept) {
    if (k.node != "n1") continue;
    kept = true;
    EXPECT_THAT(k.Reason(), HasSubstr("replacement of pool gpu-spot coming up"));
  }
  EXPECT_TRUE(kept);

  // Ready: the removal is planned again and goes the normal way (taint, evict, delete).
  w.nodes["spot-1"].ready = true;
  actions = w.RunUntil(w.now + w.config.scan_interval + minutes(1));
  auto taints = OfKind<TaintNode>(actions);
  auto evicts = OfKind<EvictPods>(actions);
  ASSERT_EQ(taints.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(taints[0].node, "n1");
  ASSERT_EQ(evicts.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_THAT(evicts[0].pods, ::testing::ElementsAre("default/serve"));
  EXPECT_LT(IndexOf<TaintNode>(actions), IndexOf<EvictPods>(actions));
  ASSERT_EQ(OfKind<DeleteNode>(actions).size(), 1u);
  // Busy (its GPU in use), it goes as replaced, not as underutilized.
  EXPECT_EQ(OfKind<DeleteNode>(actions)[0].kind, planner::RemovalKind::kReplaced);
  EXPECT_THAT(OfKind<DeleteNode>(actions)[0].reason, HasSubstr("scale-down: replaced"));
  EXPECT_FALSE(w.nodes.contains("n1"));
  EXPECT_TRUE(w.nodes.contains("spot-1"));
  EXPECT_EQ(OfKind<IncreasePool>(w.all).size(), 1u);  // one replacement, asked for once
}

TEST(LoopReplaceTest, AReplacementThatTimesOutLeavesTheNodeRunningAndUncordoned) {
  World w;
  std::vector<Action> actions = RunUntilTheReplaceStarts(w);
  ASSERT_EQ(OfKind<IncreasePool>(actions).size(), 1u);
  Time asked = w.now;
  // No node comes: after the provision timeout (15m) the tie is dropped.
  actions = w.RunUntil(asked + minutes(15) + seconds(1));
  const Event* gave_up = FindEvent(actions, "ConsolidationReplace", "n1");
  ASSERT_NE(gave_up, nullptr) << ::testing::PrintToString(Describe(actions));
  EXPECT_TRUE(gave_up->warning);
  EXPECT_THAT(gave_up->message, HasSubstr("replacement given up, the node stays"));
  EXPECT_FALSE(Disrupted(w.all, "n1"));
  EXPECT_TRUE(OfKind<UntaintNode>(w.all).empty());  // never tainted, nothing to undo
  EXPECT_TRUE(w.nodes.contains("n1"));
  for (const model::Taint& t : w.nodes["n1"].taints) EXPECT_NE(t.key, planner::kToBeDeletedTaint);
  EXPECT_TRUE(w.PoolStat("gpu-spot").backoff_until.has_value());

  // A node of the pool that comes late is not tied to anything: n1 stays while the pool is in
  // backoff, and the stray node, empty, goes by the normal scale-down.
  w.AddNode("spot-late", "gpu-spot", /*count_in_target=*/true, w.now);
  actions = w.RunUntil(w.now + minutes(2));
  EXPECT_FALSE(Disrupted(actions, "n1")) << ::testing::PrintToString(Describe(actions));
}

// Two full on-demand 1-GPU nodes at $8/h, each replaced by a spot node at $2.40/h. Both new
// nodes come Ready in the same pass, but one is already full: the two removals are planned again
// together, so only one node's pod takes the free spot node and the other node stays.
TEST(LoopReplaceTest, TiesReadyTogetherArePlannedTogether) {
  World w;
  w.config.scale_down.consolidation.replace = true;
  ResourceList shape = {
      {"cpu", "6"}, {"memory", "112Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}};
  w.AddPool("gpu-spot", 100, shape, /*spot=*/true).price_per_hour = 2.4;
  w.AddPool("gpu", 10, shape).price_per_hour = 8;
  ResourceList one_gpu = {{"cpu", "1"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "1"}};
  for (const char* n : {"n1", "n2"}) {
    w.AddNode(n, "gpu");
    w.AddPod(std::string("serve-") + n, one_gpu, n, /*tolerate_spot=*/true);
  }
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(12));
  auto adds = OfKind<IncreasePool>(actions);
  ASSERT_EQ(adds.size(), 2u) << ::testing::PrintToString(Describe(actions));
  EXPECT_FALSE(Disrupted(actions, "n1") || Disrupted(actions, "n2"));

  // Both replacements register Ready at once; another pod already took spot-2's GPU.
  w.AddNode("spot-1", "gpu-spot", /*count_in_target=*/false, w.now);
  w.AddNode("spot-2", "gpu-spot", /*count_in_target=*/false, w.now);
  w.AddPod("other", one_gpu, "spot-2", /*tolerate_spot=*/true);
  actions = w.RunUntil(w.now + w.config.scan_interval + minutes(1));
  bool n1 = Disrupted(actions, "n1"), n2 = Disrupted(actions, "n2");
  EXPECT_TRUE(n1 != n2) << "exactly one node goes, the free spot node takes its pod: "
                        << ::testing::PrintToString(Describe(actions));
  const char* stays = n1 ? "n2" : "n1";
  const Event* gave_up = FindEvent(actions, "ConsolidationReplace", stays);
  ASSERT_NE(gave_up, nullptr) << ::testing::PrintToString(Describe(actions));
  EXPECT_TRUE(gave_up->warning);
  EXPECT_THAT(gave_up->message, HasSubstr("replacement given up, the node stays"));
  EXPECT_TRUE(w.nodes.contains(stays));
  EXPECT_TRUE(w.pods.contains(std::string("serve-") + stays));
}

// n1 and n2: on-demand 4-GPU nodes at $8/h whose one pod each asks for 6 of the node's 8 cpus,
// so neither fits on the other. Pool "pair" (2 GPUs, 16 cpus) at $10/h holds both pods and is
// cheaper than the two nodes: one new node replaces both, asked for once.
TEST(LoopReplaceTest, OneNewNodeReplacesTwoNodesThatGoTogetherOnceItIsReady) {
  World w;
  w.config.scale_down.consolidation.replace = true;
  w.AddPool("gpu", 10, {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "4"}, {"pods", "110"}})
      .price_per_hour = 8;
  w.AddPool("pair", 10,
            {{"cpu", "16"}, {"memory", "128Gi"}, {"nvidia.com/gpu", "2"}, {"pods", "110"}})
      .price_per_hour = 10;
  for (const char* n : {"n1", "n2"}) {
    w.AddNode(n, "gpu");
    w.AddPod(std::string("serve-") + n, {{"cpu", "6"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "1"}},
             n);
  }
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(12));
  auto adds = OfKind<IncreasePool>(actions);
  ASSERT_EQ(adds.size(), 1u) << ::testing::PrintToString(Describe(actions));
  EXPECT_EQ(adds[0].pool, "pair");
  EXPECT_EQ(adds[0].count, 1);
  EXPECT_THAT(adds[0].reason, HasSubstr("replaces nodes n1, n2"));
  for (const char* n : {"n1", "n2"}) {
    const Event* started = FindEvent(actions, "ConsolidationReplace", n);
    ASSERT_NE(started, nullptr) << n;
    EXPECT_THAT(started->message, HasSubstr("replacing the node with one of pool pair, together "
                                            "with node(s) " +
                                            std::string(n == std::string("n1") ? "n2" : "n1")));
  }
  EXPECT_FALSE(Disrupted(actions, "n1") || Disrupted(actions, "n2"));

  // The new node is Ready: both nodes are planned again together, and both go.
  w.AddNode("pair-1", "pair", /*count_in_target=*/false, w.now);
  actions = w.RunUntil(w.now + w.config.scan_interval + minutes(1));
  auto deleted = OfKind<DeleteNode>(actions);
  ASSERT_EQ(deleted.size(), 2u) << ::testing::PrintToString(Describe(actions));
  EXPECT_FALSE(w.nodes.contains("n1"));
  EXPECT_FALSE(w.nodes.contains("n2"));
  EXPECT_EQ(OfKind<IncreasePool>(w.all).size(), 1u);
}

TEST(LoopReplaceTest, TheSwitchTurnsTheMoveOff) {
  World w;
  OnDemandNodeAndSpotPool(w);
  w.config.scale_down.consolidation.replace = false;
  w.Start();
  std::vector<Action> actions = w.RunUntil(w.now + minutes(30));
  EXPECT_TRUE(OfKind<IncreasePool>(actions).empty());
  EXPECT_FALSE(Disrupted(actions, "n1"));
}

}  // namespace
}  // namespace tidepool::autoscaler
