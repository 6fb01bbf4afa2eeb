// The loop serving CapacityBuffers (docs/capacity-buffers.md): a buffer's copies grow a pool once
// and keep its nodes from scale-down; a deleted buffer lets them go; the number of copies from
// replicas, percentage and limits; buffers that do not resolve say why, once.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "autoscaler/buffers.h"
#include "autoscaler/loop.h"
#include "model/capacity_buffer.h"
#include "tests/autoscaler/verifying_model.h"
#include "tests/testing/observation_versions.h"
#include "tests/testing/values.h"

namespace tidepool::autoscaler {
namespace {

using model::BufferConditionType;
using model::ConditionStatus;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using tidepool::testing::At;
using tidepool::testing::Res;

// One pool "gpu" of 1-GPU nodes, a namespace "team" with PodTemplates, Deployments and
// CapacityBuffers, and a loop. Status writes are applied to the buffers as the API server would.
class BufferWorld {
 public:
  BufferWorld() : now(At("2026-11-25T10:00:00Z")) {
    model::Pool& p = config.pools.emplace_back();
    p.name = "gpu";
    p.max = 4;
    p.template_node.meta.name = "template-gpu";
    p.template_node.meta.labels[std::string(model::kLabelPool)] = "gpu";
    p.template_node.capacity =
        Res({{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}});
    p.template_node.allocatable = p.template_node.capacity;
    p.template_node.ready = true;
    config.scale_down.unneeded_time = minutes(1);
    config.scale_down.delay_after_add = minutes(1);
    loop.emplace(config);
  }

  static void OneGpuPod(model::Pod& pod) {
    pod.containers.push_back(
        {.name = "main", .requests = Res({{"cpu", "1"}, {"nvidia.com/gpu", "1"}})});
    pod.Finalize();
  }

  model::PodTemplate& AddTemplate(const std::string& name) {
    model::PodTemplate& t = templates[name];
    t.meta.name = name;
    t.meta.namespace_ = "team";
    t.meta.generation = 3;
    t.pod.meta = t.meta;
    OneGpuPod(t.pod);
    return t;
  }

  model::Deployment& AddDeployment(const std::string& name, int replicas) {
    model::Deployment& d = deployments[name];
    d.meta.name = name;
    d.meta.namespace_ = "team";
    d.replicas = replicas;
    d.pod.meta = d.meta;
    OneGpuPod(d.pod);
    return d;
  }

  model::CapacityBuffer& AddBuffer(const std::string& name) {
    model::CapacityBuffer& b = buffers[name];
    b.meta.name = name;
    b.meta.namespace_ = "team";
    b.meta.creation_timestamp = now;
    return b;
  }

  // A buffer of `replicas` copies of the PodTemplate "gpu-pod" (one GPU), added too.
  model::CapacityBuffer& AddGpuBuffer(const std::string& name, int replicas) {
    if (!templates.contains("gpu-pod")) AddTemplate("gpu-pod");
    model::CapacityBuffer& b = AddBuffer(name);
    b.pod_template = "gpu-pod";
    b.replicas = replicas;
    return b;
  }

  model::Node& AddNode(const std::string& name) {
    model::Node& n = nodes[name] = config.FindPool("gpu")->template_node;
    n.meta.name = name;
    n.meta.labels[std::string(model::kLabelHostname)] = name;
    n.meta.creation_timestamp = now;
    return n;
  }

  std::vector<Action> Step() {
    Observation obs;
    for (auto& [n, node] : nodes) obs.nodes.push_back(&node);
    for (auto& [n, p] : pods) obs.pods.push_back(&p);
    for (auto& [n, t] : templates) obs.pod_templates.push_back(&t);
    for (auto& [n, d] : deployments) obs.deployments.push_back(&d);
    for (auto& [n, b] : buffers) obs.capacity_buffers.push_back(&b);
    obs.pools.push_back(
        {.pool = "gpu", .target = target, .registered = static_cast<int>(nodes.size())});
    std::unique_ptr<sched::ClusterModel> model = testing::VerifyingModel(obs);
    obs.model = model.get();
    obs.version = versions.Of(obs);
    std::vector<Action> actions = testing::CheckedStep(*loop, obs, now);
    for (const Action& a : actions) Carry(a);
    all.insert(all.end(), actions.begin(), actions.end());
    return actions;
  }

  void Run(Duration total, Duration every = seconds(5)) {
    for (Time end = now + total; now < end; now += every) Step();
  }

  template <typename Kind>
  std::vector<Kind> All() const {
    std::vector<Kind> out;
    for (const Action& a : all)
      if (const auto* k = std::get_if<Kind>(&a)) out.push_back(*k);
    return out;
  }

  std::vector<Event> EventsOf(EventObject kind) const {
    std::vector<Event> out;
    for (const Event& e : All<Event>())
      if (e.object_kind == kind) out.push_back(e);
    return out;
  }

  const model::BufferCondition* Cond(const std::string& buffer, BufferConditionType type) const {
    return buffers.at(buffer).status.Find(type);
  }

  model::AutoscalerConfig config;
  Time now;
  int target = 0;
  std::map<std::string, model::Node> nodes;
  std::map<std::string, model::Pod> pods;
  // Each observation versioned by what it holds when on (observation_versions.h).
  testing::ContentVersions versions;
  std::map<std::string, model::PodTemplate> templates;
  std::map<std::string, model::Deployment> deployments;
  std::map<std::string, model::CapacityBuffer> buffers;
  std::optional<Autoscaler> loop;
  std::vector<Action> all;

 private:
  void Carry(const Action& a) {
    if (const auto* up = std::get_if<IncreasePool>(&a)) {
      target += up->count;
      loop->OnIncreaseResult(up->pool, up->count, {}, now);
    } else if (const auto* u = std::get_if<UpdateCapacityBuffer>(&a)) {
      if (auto it = buffers.find(u->name); it != buffers.end()) it->second.status = u->status;
    } else if (const auto* t = std::get_if<TaintNode>(&a)) {
      loop->OnTaintResult(t->node, {}, now);
    } else if (const auto* d = std::get_if<DeleteNode>(&a)) {
      nodes.erase(d->node);
      --target;
      loop->OnDeleteResult(d->node, {}, now);
    }
  }
};

TEST(BufferTest, BufferOfTwoGpuPodsKeepsTwoNodesOfRoomUntilItIsDeleted) {
  BufferWorld w;
  w.AddGpuBuffer("room", 2);
  w.Run(seconds(20));

  // One increase by 2 for the buffer's two copies; no pod Events, one Event on the buffer.
  auto ups = w.All<IncreasePool>();
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu");
  EXPECT_EQ(ups[0].count, 2);
  EXPECT_TRUE(w.EventsOf(EventObject::kPod).empty()) << "the copies are not real pods";
  auto events = w.EventsOf(EventObject::kCapacityBuffer);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].object, "team/room");
  EXPECT_EQ(events[0].reason, EventReason::kTriggeredScaleUp);
  EXPECT_THAT(events[0].message, HasSubstr("pool gpu for 2 of its 2 pod(s)"));
  // The status: replicas, the template and its generation, both conditions.
  const model::BufferStatus& s = w.buffers.at("room").status;
  EXPECT_EQ(s.replicas, 2);
  EXPECT_EQ(s.pod_template, "gpu-pod");
  EXPECT_EQ(s.pod_template_generation, 3);
  const auto* ready = w.Cond("room", BufferConditionType::kReadyForProvisioning);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, ConditionStatus::kTrue);
  EXPECT_EQ(ready->reason, "Resolved");
  EXPECT_THAT(ready->message, HasSubstr("2 pod(s) of PodTemplate team/gpu-pod: replicas 2"));
  const auto* prov = w.Cond("room", BufferConditionType::kProvisioning);
  ASSERT_NE(prov, nullptr);
  EXPECT_EQ(prov->status, ConditionStatus::kTrue);
  // Planned on the two coming nodes by now.
  EXPECT_EQ(prov->reason, "FitsExistingCapacity");
  Status status = w.loop->GetStatus();
  EXPECT_EQ(status.pending_pods, 2);
  ASSERT_EQ(status.buffers.size(), 1u);
  EXPECT_EQ(status.buffers[0].buffer, "team/room");
  EXPECT_EQ(status.buffers[0].replicas, 2);

  // The nodes join and stay empty of real pods: the buffer keeps them.
  w.AddNode("gpu-0");
  w.AddNode("gpu-1");
  w.Run(minutes(5));
  EXPECT_EQ(w.All<IncreasePool>().size(), 1u) << "no second scale-up for the same room";
  EXPECT_TRUE(w.All<TaintNode>().empty()) << "the buffer's room is not unneeded";
  EXPECT_EQ(w.Cond("room", BufferConditionType::kProvisioning)->reason, "FitsExistingCapacity");
  size_t writes = w.All<UpdateCapacityBuffer>().size();
  EXPECT_LE(writes, 3u) << "each status written once, not at every Step";

  // Deleted: both nodes are unneeded and go.
  w.buffers.clear();
  w.Run(minutes(5));
  std::vector<std::string> deleted;
  for (const DeleteNode& d : w.All<DeleteNode>()) deleted.push_back(d.node);
  EXPECT_THAT(deleted, ::testing::UnorderedElementsAre("gpu-0", "gpu-1"));
  EXPECT_TRUE(w.loop->GetStatus().buffers.empty());
}

TEST(BufferTest, RealPodsTakingTheRoomMakeTheBufferGrowThePoolAgain) {
  BufferWorld w;
  w.AddGpuBuffer("room", 1);
  w.Run(seconds(20));
  ASSERT_EQ(w.All<IncreasePool>().size(), 1u);
  w.AddNode("gpu-0");
  w.Run(seconds(20));
  ASSERT_EQ(w.All<IncreasePool>().size(), 1u);
  // A training pod lands on gpu-0 and takes the room: the copy needs a new node.
  model::Pod& job = w.pods["job"];
  job.meta.name = "job";
  job.meta.namespace_ = "team";
  job.node_name = "gpu-0";
  job.phase = model::PodPhase::kRunning;
  BufferWorld::OneGpuPod(job);
  w.Run(seconds(30));
  auto ups = w.All<IncreasePool>();
  ASSERT_EQ(ups.size(), 2u);
  EXPECT_EQ(ups[1].count, 1);
}

TEST(BufferTest, APendingPodGetsTheRoomAndTheCopyTheNewNode) {
  BufferWorld w;
  w.AddNode("gpu-0");
  w.target = 1;
  w.AddGpuBuffer("room", 1);
  w.Run(seconds(20));
  ASSERT_TRUE(w.All<IncreasePool>().empty()) << "the copy fits gpu-0";
  // A pending pod of the same priority, younger than the buffer: the scheduler gives it the
  // room on gpu-0, so it is planned first there, and the copy gets the new node.
  model::Pod& job = w.pods["job"];
  job.meta.name = "job";
  job.meta.namespace_ = "team";
  job.meta.creation_timestamp = w.now - seconds(1);
  ASSERT_LT(*w.buffers.at("room").meta.creation_timestamp, *job.meta.creation_timestamp);
  BufferWorld::OneGpuPod(job);
  w.Run(seconds(20));
  auto ups = w.All<IncreasePool>();
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_THAT(ups[0].pods, ::testing::ElementsAre("team/room:buffer-0"));
  for (const Event& e : w.EventsOf(EventObject::kPod)) {
    EXPECT_NE(e.reason, EventReason::kTriggeredScaleUp) << "job fits gpu-0: " << e.message;
  }
}

TEST(BufferTest, ScalableRefTakesAPercentageOfTheDeploymentsReplicas) {
  BufferWorld w;
  w.AddDeployment("trainer", 5);
  model::CapacityBuffer& b = w.AddBuffer("twenty-percent");
  b.scalable_ref = model::ScalableRef{"apps", "Deployment", "trainer"};
  b.percentage = 20;
  w.Run(seconds(20));
  ASSERT_EQ(w.All<IncreasePool>().size(), 1u);
  EXPECT_EQ(w.All<IncreasePool>()[0].count, 1);
  const model::BufferStatus& s = w.buffers.at("twenty-percent").status;
  EXPECT_EQ(s.replicas, 1);
  EXPECT_EQ(s.pod_template, "") << "no PodTemplate behind a scalableRef";
  EXPECT_THAT(w.Cond("twenty-percent", BufferConditionType::kReadyForProvisioning)->message,
              HasSubstr("Deployment team/trainer: percentage 20% of Deployment 5 replicas = 1"));
}

TEST(BufferTest, BuffersThatDoNotResolveSayWhyOnceAndScaleNothing) {
  BufferWorld w;
  model::CapacityBuffer& missing = w.AddBuffer("missing");
  missing.pod_template = "nowhere";
  missing.replicas = 2;
  model::CapacityBuffer& sts = w.AddBuffer("sts");
  sts.scalable_ref = model::ScalableRef{"apps", "StatefulSet", "db"};
  sts.replicas = 1;
  w.Run(minutes(1));
  EXPECT_TRUE(w.All<IncreasePool>().empty());
  const auto* m = w.Cond("missing", BufferConditionType::kReadyForProvisioning);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->status, ConditionStatus::kFalse);
  EXPECT_EQ(m->reason, "PodTemplateNotFound");
  EXPECT_EQ(m->message, "PodTemplate team/nowhere not found");
  EXPECT_EQ(w.Cond("missing", BufferConditionType::kProvisioning)->reason,
            "NotReadyForProvisioning");
  const auto* s = w.Cond("sts", BufferConditionType::kReadyForProvisioning);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason, "UnsupportedScalableRef");
  EXPECT_THAT(s->message, HasSubstr("apps/StatefulSet db"));
  EXPECT_THAT(s->message, HasSubstr("an apps Deployment only"));
  EXPECT_FALSE(w.buffers.at("sts").status.replicas.has_value());
  // One Warning per buffer, not one per Step.
  auto events = w.EventsOf(EventObject::kCapacityBuffer);
  ASSERT_EQ(events.size(), 2u);
  for (const Event& e : events) {
    EXPECT_EQ(e.reason, EventReason::kBufferNotReady);
    EXPECT_TRUE(e.warning);
  }
}

TEST(BufferTest, BufferBeyondThePoolsMaxSaysWhatStopsIt) {
  BufferWorld w;
  w.AddGpuBuffer("big", 6);
  w.Run(seconds(30));
  auto ups = w.All<IncreasePool>();
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].count, 4) << "up to the pool's max";
  const auto* prov = w.Cond("big", BufferConditionType::kProvisioning);
  ASSERT_NE(prov, nullptr);
  EXPECT_EQ(prov->status, ConditionStatus::kFalse);
  EXPECT_EQ(prov->reason, "CapacityNotAvailable");
  EXPECT_THAT(prov->message, HasSubstr("2 of 6 pod(s) fit no pool: gpu:"));
}

TEST(BufferTest, OtherStrategiesAreLeftAlone) {
  BufferWorld w;
  model::CapacityBuffer& b = w.AddGpuBuffer("theirs", 2);
  b.strategy = "example.com/passive";
  w.Run(minutes(1));
  EXPECT_TRUE(w.all.empty());
}

model::CapacityBuffer Buffer() {
  model::CapacityBuffer b;
  b.meta.name = "b";
  b.meta.namespace_ = "team";
  return b;
}

void Limit(model::CapacityBuffer& b, std::string_view resource, std::string_view amount) {
  if (!b.limits) b.limits.emplace();
  model::ResourceId id = model::InternResource(resource);
  b.limits->SetQuantity(id, *model::Quantity::Parse(amount));
  b.limited.push_back(id);
}

TEST(BufferReplicasTest, FromReplicasPercentageAndLimits) {
  const model::Resources pod = Res({{"cpu", "2"}, {"nvidia.com/gpu", "1"}});
  auto n = [&](const model::CapacityBuffer& b, std::optional<int32_t> scalable = std::nullopt) {
    auto r = model::ResolveBufferReplicas(b, pod, scalable);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
    return r ? r->replicas : -1;
  };
  model::CapacityBuffer b = Buffer();
  b.replicas = 3;
  EXPECT_EQ(n(b), 3);

  model::CapacityBuffer pct = Buffer();
  pct.scalable_ref = model::ScalableRef{"apps", "Deployment", "web"};
  pct.percentage = 20;
  EXPECT_EQ(n(pct, 10), 2);
  EXPECT_EQ(n(pct, 11), 3) << "rounded up";
  EXPECT_EQ(n(pct, 1), 1) << "at least 1 of a running scalable";
  EXPECT_EQ(n(pct, 0), 0);
  pct.replicas = 1;
  EXPECT_EQ(n(pct, 10), 1) << "replicas and percentage: the smaller";

  model::CapacityBuffer limited = Buffer();
  limited.replicas = 5;
  Limit(limited, "nvidia.com/gpu", "3");
  EXPECT_EQ(n(limited), 3) << "3 GPUs hold 3 copies of a 1-GPU pod";
  auto words = model::ResolveBufferReplicas(limited, pod, std::nullopt);
  ASSERT_TRUE(words.has_value());
  EXPECT_TRUE(words->capped_by_limits);
  EXPECT_EQ(words->words, "replicas 5; capped to 3 by limits");
  Limit(limited, "cpu", "5");
  EXPECT_EQ(n(limited), 2) << "the tightest limit: 5 cores hold 2 copies of 2";

  model::CapacityBuffer alone = Buffer();
  Limit(alone, "cpu", "9");
  EXPECT_EQ(n(alone), 4) << "limits alone: as many copies as fit";
  model::CapacityBuffer other = Buffer();
  other.replicas = 2;
  Limit(other, "example.com/fpga", "0");
  EXPECT_EQ(n(other), 2) << "a limit on a resource the pod does not request caps nothing";
  model::CapacityBuffer zero = Buffer();
  zero.replicas = 2;
  Limit(zero, "nvidia.com/gpu", "0");
  EXPECT_EQ(n(zero), 0);
  EXPECT_EQ(n(Buffer()), 0) << "nothing asked";
}

TEST(BufferReplicasTest, PercentageWithoutAScalableIsAnError) {
  model::CapacityBuffer b = Buffer();
  b.percentage = 10;
  auto r = model::ResolveBufferReplicas(b, Res({{"cpu", "1"}}), std::nullopt);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("spec.percentage applies only to a buffer with a "
                                             "spec.scalableRef"));
}

}  // namespace
}  // namespace tidepool::autoscaler
