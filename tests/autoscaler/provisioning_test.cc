// The loop serving ProvisioningRequests (docs/kueue.md): atomic scale-ups as one gang, failures
// that name the pool, check-capacity never scaling, bookings held against scale-up and
// scale-down until they expire, missing templates, other classes, and a restart mid-way.
#include "autoscaler/provisioning.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "autoscaler/loop.h"
#include "tests/autoscaler/verifying_model.h"
#include "tests/testing/observation_versions.h"
#include "tests/testing/values.h"

namespace tidepool::autoscaler {
namespace {

using model::ConditionStatus;
using model::ProvisioningCondition;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using tidepool::testing::At;
using tidepool::testing::Res;

// One GPU pool ("gpu", one GPU per node), a namespace "team" with PodTemplates and
// ProvisioningRequests, and a loop. Condition writes are applied to the requests as the API
// server would (the next observation shows them).
class ProvWorld {
 public:
  explicit ProvWorld(int max = 10) : now(At("2026-11-25T10:00:00Z")) {
    AddPool("gpu", max);
    config.scale_down.unneeded_time = minutes(1);
    loop.emplace(config);
  }

  // A pool of 1-GPU nodes; call Restart() after adding one to a running world.
  void AddPool(const std::string& name, int max) {
    model::Pool& p = config.pools.emplace_back();
    p.name = name;
    p.max = max;
    p.template_node.meta.name = "template-" + name;
    p.template_node.meta.labels[std::string(model::kLabelPool)] = name;
    p.template_node.capacity =
        Res({{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}});
    p.template_node.allocatable = p.template_node.capacity;
    p.template_node.ready = true;
  }

  // A template of a 1-CPU pod with `gpus`; only for `pool` when given (a node selector).
  model::PodTemplate& AddTemplate(const std::string& name, std::string_view gpus = "1",
                                  const std::string& pool = "") {
    model::PodTemplate& t = templates[name];
    t.meta.name = name;
    t.meta.namespace_ = "team";
    t.pod.meta = t.meta;
    t.pod.containers.push_back(
        {.name = "main", .requests = Res({{"cpu", "1"}, {"nvidia.com/gpu", gpus}})});
    if (!pool.empty()) t.pod.node_selector[std::string(model::kLabelPool)] = pool;
    t.pod.Finalize();
    return t;
  }

  model::ProvisioningRequest& AddRequest(const std::string& name, std::string_view cls,
                                         const std::string& tmpl, int count) {
    model::ProvisioningRequest& r = requests[name];
    r.meta.name = name;
    r.meta.namespace_ = "team";
    r.meta.creation_timestamp = now;
    r.class_name = std::string(cls);
    r.provisioning_class = model::ProvisioningClassOf(cls);
    r.pod_sets.push_back({tmpl, count});
    return r;
  }

  model::Node& AddNode(const std::string& name, const std::string& pool = "gpu") {
    model::Node& n = nodes[name] = config.FindPool(pool)->template_node;
    n.meta.name = name;
    n.meta.labels[std::string(model::kLabelHostname)] = name;
    n.meta.creation_timestamp = now - std::chrono::hours(1);
    return n;
  }

  // A pod of the request's shape; consuming `request` when given.
  model::Pod& AddPod(const std::string& name, const std::string& request = "",
                     const std::string& node = "") {
    model::Pod& p = pods[name];
    p.meta.name = name;
    p.meta.namespace_ = "team";
    p.meta.creation_timestamp = now;
    p.meta.owner_references.push_back({"batch/v1", "Job", "job", "uid-job", true});
    if (!request.empty()) {
      p.meta.annotations[std::string(model::kConsumeProvisioningRequestAnnotation)] = request;
    }
    p.containers.push_back(
        {.name = "main", .requests = Res({{"cpu", "1"}, {"nvidia.com/gpu", "1"}})});
    p.node_name = node;
    p.phase = node.empty() ? model::PodPhase::kPending : model::PodPhase::kRunning;
    p.Finalize();
    return p;
  }

  std::vector<Action> Step() {
    Observation obs;
    for (auto& [n, node] : nodes) obs.nodes.push_back(&node);
    for (auto& [n, pod] : pods) obs.pods.push_back(&pod);
    std::unique_ptr<sched::ClusterModel> model;
    if (with_model) {
      model = testing::VerifyingModel(obs);
      obs.model = model.get();
    }
    for (auto& [n, r] : requests) obs.provisioning_requests.push_back(&r);
    for (auto& [n, t] : templates) obs.pod_templates.push_back(&t);
    for (const model::Pool& pool : config.pools) {
      PoolObservation& po = obs.pools.emplace_back();
      po.pool = pool.name;
      po.target = targets[pool.name];
      po.registered = static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [&](auto& n) {
        return n.second.meta.labels[std::string(model::kLabelPool)] == pool.name;
      }));
      if (auto it = instances.find(pool.name); it != instances.end()) po.registered = it->second;
      if (auto it = stockouts.find(pool.name); it != stockouts.end()) {
        po.stockout = true;
        po.stockout_reason = it->second;
      }
    }
    obs.version = versions.Of(obs);
    std::vector<Action> actions = testing::CheckedStep(*loop, obs, now);
    for (const Action& a : actions) Carry(a);
    all.insert(all.end(), actions.begin(), actions.end());
    return actions;
  }

  // Steps every `every` for `total`.
  void Run(Duration total, Duration every = seconds(5)) {
    for (Time end = now + total; now < end; now += every) Step();
  }

  void Restart() { loop.emplace(config); }

  // Two empty GPU nodes and a check-capacity request "fits" for both, run for `time`.
  void BookTwoNodes(Duration time) {
    AddNode("gpu-0");
    AddNode("gpu-1");
    targets["gpu"] = 2;
    AddTemplate("ppt");
    AddRequest("fits", model::kCheckCapacityClass, "ppt", 2);
    Run(time);
  }

  template <typename Kind>
  std::vector<Kind> All() const {
    std::vector<Kind> out;
    for (const Action& a : all)
      if (const auto* k = std::get_if<Kind>(&a)) out.push_back(*k);
    return out;
  }

  const model::Condition* Cond(const std::string& request, ProvisioningCondition type) const {
    return requests.at(request).Find(type);
  }

  model::AutoscalerConfig config;
  Time now;
  bool with_model = false;             // hand the loop a cluster model (in its debug mode)
  std::map<std::string, int> targets;  // the provider's target per pool
  // The provider's faults: instances it has (joined or not) when not the nodes of the pool; a
  // stockout with its reason; an increase it refuses with this error.
  std::map<std::string, int> instances;
  std::map<std::string, std::string> stockouts;
  std::map<std::string, Error> refuse;
  std::map<std::string, model::Node> nodes;
  std::map<std::string, model::Pod> pods;
  // Each observation versioned by what it holds when on (observation_versions.h).
  testing::ContentVersions versions;
  std::map<std::string, model::ProvisioningRequest> requests;
  std::map<std::string, model::PodTemplate> templates;
  std::optional<Autoscaler> loop;
  std::vector<Action> all;

 private:
  void Carry(const Action& a) {
    if (const auto* up = std::get_if<IncreasePool>(&a)) {
      if (auto it = refuse.find(up->pool); it != refuse.end()) {
        loop->OnIncreaseResult(up->pool, up->count, std::unexpected(it->second), now);
        return;
      }
      targets[up->pool] += up->count;
      loop->OnIncreaseResult(up->pool, up->count, {}, now);
    } else if (const auto* down = std::get_if<DecreaseTarget>(&a)) {
      targets[down->pool] -= down->count;
      loop->OnDecreaseResult(down->pool, down->count, {}, now);
    } else if (const auto* u = std::get_if<UpdateProvisioningRequest>(&a)) {
      model::ProvisioningRequest& r = requests.at(u->name);
      for (const model::Condition& c : u->conditions) r.SetCondition(c, now);
    }
  }
};

constexpr std::string_view kAtomic = model::kBestEffortAtomicClass;
constexpr std::string_view kCheck = model::kCheckCapacityClass;

bool AnyPodEvent(const std::vector<Action>& actions) {
  for (const Action& a : actions)
    if (const auto* e = std::get_if<Event>(&a); e != nullptr && e->object_kind == EventObject::kPod)
      return true;
  return false;
}

TEST(ProvisioningTest, AtomicRequestGrowsThePoolOnceForAllPodsAndIsProvisionedOnceTheyRegister) {
  ProvWorld w;
  w.AddTemplate("ppt-main");
  w.AddRequest("train", kAtomic, "ppt-main", 4);
  w.Run(seconds(30));

  // One increase of the pool by 4, for the whole request, and no second one.
  auto ups = w.All<IncreasePool>();
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].pool, "gpu");
  EXPECT_EQ(ups[0].count, 4);
  EXPECT_EQ(ups[0].pods.size(), 4u);
  EXPECT_FALSE(AnyPodEvent(w.all)) << "the request's pods are not real pods";
  ASSERT_NE(w.Cond("train", ProvisioningCondition::kAccepted), nullptr);
  EXPECT_EQ(w.Cond("train", ProvisioningCondition::kAccepted)->status, ConditionStatus::kTrue);
  const model::Condition* prov = w.Cond("train", ProvisioningCondition::kProvisioned);
  ASSERT_NE(prov, nullptr);
  EXPECT_EQ(prov->status, ConditionStatus::kFalse);
  EXPECT_EQ(prov->reason, "ScaleUpRequested");
  EXPECT_THAT(prov->message, HasSubstr("gpu +4"));
  // The status names the request, not its four stand-in pods.
  Status status = w.loop->GetStatus();
  ASSERT_TRUE(status.last_scale_up.has_value());
  EXPECT_THAT(status.last_scale_up->pods, ::testing::ElementsAre("provreq/team/train"));
  EXPECT_THAT(status.waiting_for_capacity, ::testing::ElementsAre("provreq/team/train"));

  // Three of four registered: not yet.
  for (int i = 0; i < 3; ++i) w.AddNode(fmt::format("gpu-{}", i));
  w.Run(seconds(10));
  EXPECT_EQ(w.Cond("train", ProvisioningCondition::kProvisioned)->status, ConditionStatus::kFalse);
  w.AddNode("gpu-3");
  w.Step();
  prov = w.Cond("train", ProvisioningCondition::kProvisioned);
  EXPECT_EQ(prov->status, ConditionStatus::kTrue);
  EXPECT_EQ(prov->reason, "CapacityIsProvisioned");

  // Kueue admits: the Job's pods consume the booking and trigger nothing.
  for (int i = 0; i < 4; ++i) w.AddPod(fmt::format("job-{}", i), "train");
  w.Run(minutes(1));
  EXPECT_EQ(w.All<IncreasePool>().size(), 1u);
  EXPECT_EQ(w.All<UpdateProvisioningRequest>().size(), 3u)
      << "Accepted, ScaleUpRequested, Provisioned; each written once";
}

TEST(ProvisioningTest, RequestBeyondThePoolMaxFailsNamingThePoolAndAddsNothing) {
  ProvWorld w(/*max=*/3);
  w.AddTemplate("ppt-main");
  w.AddRequest("train", kAtomic, "ppt-main", 4);
  for (int i = 0; i < 6 && w.Cond("train", ProvisioningCondition::kFailed) == nullptr; ++i) {
    w.Step();
    w.now += seconds(5);
  }
  // The pass that failed it lists the request once, by its name, among the unschedulable.
  Status status = w.loop->GetStatus();
  ASSERT_EQ(status.unschedulable->size(), 1u);
  EXPECT_EQ((*status.unschedulable)[0].pod, "provreq/team/train");
  EXPECT_THAT((*status.unschedulable)[0].reasons.at("gpu").text, HasSubstr("at max 3"));
  w.Run(seconds(30));
  EXPECT_TRUE(w.All<IncreasePool>().empty());
  const model::Condition* failed = w.Cond("train", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->status, ConditionStatus::kTrue);
  EXPECT_EQ(failed->reason, "CapacityIsNotFound");
  EXPECT_EQ(failed->message,
            "no pool can provision all 4 pods at once: pool gpu: pool gpu at max 3");
  EXPECT_FALSE(AnyPodEvent(w.all));
  // A failed request is done with: nothing more is written.
  size_t writes = w.All<UpdateProvisioningRequest>().size();
  w.Run(minutes(1));
  EXPECT_EQ(w.All<UpdateProvisioningRequest>().size(), writes);
}

void CheckCapacityAnswersFromWhatIsThere(bool with_model) {
  ProvWorld w;
  w.with_model = with_model;
  w.BookTwoNodes(seconds(20));
  const model::Condition* prov = w.Cond("fits", ProvisioningCondition::kProvisioned);
  ASSERT_NE(prov, nullptr);
  EXPECT_EQ(prov->status, ConditionStatus::kTrue);
  EXPECT_EQ(prov->reason, "CapacityIsFound");

  // The room is booked for "fits": a second request finds none, and nothing is added for it.
  w.AddRequest("late", kCheck, "ppt", 1);
  w.Run(minutes(2));
  prov = w.Cond("late", ProvisioningCondition::kProvisioned);
  ASSERT_NE(prov, nullptr);
  EXPECT_EQ(prov->status, ConditionStatus::kFalse);
  EXPECT_EQ(prov->reason, "CapacityIsNotFound");
  EXPECT_EQ(w.Cond("late", ProvisioningCondition::kFailed), nullptr);
  EXPECT_TRUE(w.All<IncreasePool>().empty());
}

// Also on a cluster model: the room booked on the two nodes (pods held there, which only the
// loop knows) is seen by the second request's check in the same Step.
TEST(ProvisioningTest, CheckCapacityAnswersFromWhatIsThereAndNeverScales) {
  for (bool with_model : {false, true}) {
    SCOPED_TRACE(with_model ? "on a cluster model" : "without one");
    CheckCapacityAnswersFromWhatIsThere(with_model);
  }
}

TEST(ProvisioningTest, CheckCapacityDoesNotCountOnNodesAnAtomicRequestWaitsFor) {
  ProvWorld w;
  w.AddTemplate("ppt");
  w.AddRequest("first", kAtomic, "ppt", 1);
  w.Run(seconds(20));
  ASSERT_EQ(w.All<IncreasePool>().size(), 1u);  // one node upcoming, for "first"
  w.AddRequest("second", kCheck, "ppt", 1);
  w.Run(seconds(20));
  const model::Condition* prov = w.Cond("second", ProvisioningCondition::kProvisioned);
  ASSERT_NE(prov, nullptr);
  EXPECT_EQ(prov->status, ConditionStatus::kFalse);
  // Once the node has registered it is "first"'s: still no room for "second".
  w.AddNode("gpu-0");
  w.Run(seconds(20));
  EXPECT_EQ(w.Cond("first", ProvisioningCondition::kProvisioned)->status, ConditionStatus::kTrue);
  EXPECT_EQ(w.Cond("second", ProvisioningCondition::kProvisioned)->status, ConditionStatus::kFalse);
  EXPECT_EQ(w.All<IncreasePool>().size(), 1u);
}

TEST(ProvisioningTest, NoRetryTurnsCapacityNotFoundIntoFailed) {
  ProvWorld w;
  w.AddTemplate("ppt");
  w.AddRequest("once", kCheck, "ppt", 1).parameters["noRetry"] = "true";
  w.Run(seconds(10));
  const model::Condition* failed = w.Cond("once", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->status, ConditionStatus::kTrue);
  EXPECT_TRUE(w.All<IncreasePool>().empty());
}

TEST(ProvisioningTest, BookedRoomIsNotTakenByOtherPodsNorScaledDownUntilTheBookingExpires) {
  ProvWorld w;
  w.BookTwoNodes(minutes(5));
  ASSERT_EQ(w.Cond("fits", ProvisioningCondition::kProvisioned)->status, ConditionStatus::kTrue);
  // Both nodes are empty and unneeded after a minute, but booked: neither is removed.
  EXPECT_TRUE(w.All<TaintNode>().empty());
  EXPECT_TRUE(w.All<DeleteNode>().empty());

  // Another GPU pod does not count on the booked room: it gets a node of its own.
  w.AddPod("other");
  w.Run(seconds(20));
  auto ups = w.All<IncreasePool>();
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].count, 1);
  EXPECT_THAT(ups[0].pods, ::testing::ElementsAre("team/other"));

  // Ten minutes after Provisioned the booking expires, and the idle nodes may go.
  w.AddNode("gpu-2");
  w.pods.clear();
  w.Run(minutes(7));
  const model::Condition* expired = w.Cond("fits", ProvisioningCondition::kBookingExpired);
  ASSERT_NE(expired, nullptr);
  EXPECT_EQ(expired->status, ConditionStatus::kTrue);
  EXPECT_FALSE(w.All<TaintNode>().empty());
}

TEST(ProvisioningTest, BookingTimeComesFromTheConfig) {
  ProvWorld w;
  w.config.scale_up.booking_time = minutes(3);
  w.Restart();
  w.BookTwoNodes(minutes(2));
  ASSERT_EQ(w.Cond("fits", ProvisioningCondition::kProvisioned)->status, ConditionStatus::kTrue);
  EXPECT_EQ(w.Cond("fits", ProvisioningCondition::kBookingExpired), nullptr);
  w.Run(minutes(2));
  const model::Condition* expired = w.Cond("fits", ProvisioningCondition::kBookingExpired);
  ASSERT_NE(expired, nullptr);
  EXPECT_EQ(expired->status, ConditionStatus::kTrue);
  EXPECT_THAT(expired->message, HasSubstr("booked for 3m"));
}

TEST(ProvisioningTest, ConsumedBookingIsReleasedPodByPod) {
  ProvWorld w;
  w.BookTwoNodes(seconds(20));
  ASSERT_EQ(w.Cond("fits", ProvisioningCondition::kProvisioned)->status, ConditionStatus::kTrue);
  // One consumer runs on gpu-0: one placeholder is left, so one node stays booked and the other
  // pod of a foreign job fits nowhere without a scale-up.
  w.AddPod("job-0", "fits", "gpu-0");
  w.AddPod("other");
  w.Run(seconds(20));
  ASSERT_EQ(w.All<IncreasePool>().size(), 1u);
  // The second consumer is pending: it does not trigger a scale-up (its booking holds gpu-1).
  w.AddPod("job-1", "fits");
  w.Run(seconds(20));
  EXPECT_EQ(w.All<IncreasePool>().size(), 1u);
}

TEST(ProvisioningTest, MissingTemplateFailsAfterTheGraceAndMalformedAtOnce) {
  ProvWorld w;
  w.AddRequest("lost", kAtomic, "ppt-missing", 2);
  w.Step();
  EXPECT_EQ(w.Cond("lost", ProvisioningCondition::kFailed), nullptr) << "may still be created";
  w.Run(seconds(15));
  const model::Condition* failed = w.Cond("lost", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "PodTemplateNotFound");
  EXPECT_THAT(failed->message, HasSubstr("PodTemplate team/ppt-missing not found"));

  w.AddTemplate("ppt-bad").error = "template.spec.containers[0].resources.requests.cpu: bad";
  w.AddRequest("bad", kAtomic, "ppt-bad", 1);
  w.Step();
  failed = w.Cond("bad", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "InvalidPodTemplate");
  EXPECT_THAT(failed->message, HasSubstr("team/ppt-bad is malformed: template.spec"));
  EXPECT_TRUE(w.All<IncreasePool>().empty());
}

TEST(ProvisioningTest, OtherClassesAreLeftAlone) {
  ProvWorld w;
  w.AddTemplate("ppt");
  w.AddRequest("gke", "queued-provisioning.gke.io", "ppt", 4);
  w.Run(seconds(30));
  EXPECT_TRUE(w.all.empty());
  EXPECT_TRUE(w.requests.at("gke").conditions.empty());
}

TEST(ProvisioningTest, ARestartMidProvisioningAddsNoSecondNodes) {
  ProvWorld w;
  w.AddTemplate("ppt");
  w.AddRequest("train", kAtomic, "ppt", 4);
  w.Run(seconds(20));
  ASSERT_EQ(w.All<IncreasePool>().size(), 1u);
  w.Restart();
  w.Run(seconds(30));
  EXPECT_EQ(w.All<IncreasePool>().size(), 1u);
  for (int i = 0; i < 4; ++i) w.AddNode(fmt::format("gpu-{}", i));
  w.Step();
  EXPECT_EQ(w.Cond("train", ProvisioningCondition::kProvisioned)->status, ConditionStatus::kTrue);
}

// Two pools grown for one request; the provider refuses the second increase. The first pool
// gives back what it grew for the request, the request fails naming the pool and the provider's
// words, and nothing of it is asked for again, not even after the backoff.
TEST(ProvisioningTest, AtomicScaleUpThatFailsInOnePoolIsRolledBackInTheOthers) {
  ProvWorld w;
  w.AddPool("big", 10);
  w.Restart();
  w.AddTemplate("ppt-small", "1", "gpu");
  w.AddTemplate("ppt-big", "1", "big");
  w.AddRequest("train", kAtomic, "ppt-small", 2).pod_sets.push_back({"ppt-big", 1});
  w.refuse.emplace("big", Error(Error::Code::kUnavailable,
                                "AllocationFailed: no capacity for Standard_NC24s_v3"));
  w.Run(seconds(30));

  auto ups = w.All<IncreasePool>();
  ASSERT_EQ(ups.size(), 2u);
  EXPECT_EQ(ups[0].pool, "big");
  EXPECT_EQ(ups[1].pool, "gpu");
  EXPECT_EQ(ups[1].count, 2);
  auto downs = w.All<DecreaseTarget>();
  ASSERT_EQ(downs.size(), 1u);
  EXPECT_EQ(downs[0].pool, "gpu");
  EXPECT_EQ(downs[0].count, 2);
  EXPECT_THAT(downs[0].reason, HasSubstr("ProvisioningRequest team/train: pool big failed"));
  EXPECT_EQ(w.targets["gpu"], 0);

  const model::Condition* failed = w.Cond("train", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->status, ConditionStatus::kTrue);
  EXPECT_EQ(failed->reason, "ScaleUpFailed");
  EXPECT_EQ(failed->message,
            "the scale-up for all pods at once failed in pool big: increasing the pool by 1 "
            "failed: AllocationFailed: no capacity for Standard_NC24s_v3; cancelled the nodes "
            "not registered yet: gpu -2");
  EXPECT_THAT(w.All<Event>(), ::testing::Contains(::testing::Field(
                                  &Event::reason, EventReason::kProvisioningFailed)));

  // Past the backoff: the request is done with, nothing is retried for it.
  w.refuse.clear();
  w.Run(minutes(10));
  EXPECT_EQ(w.All<IncreasePool>().size(), 2u);
  EXPECT_EQ(w.All<DecreaseTarget>().size(), 1u);
}

// One pool, and the provider creates two of the four machines before it runs out: it cancels the
// two it could not create itself, the request gives back the two created ones that have not
// joined, and fails naming the stockout.
TEST(ProvisioningTest, PartOfAnAtomicScaleUpCreatedIsGivenBackWhenThePoolStocksOut) {
  ProvWorld w;
  w.AddTemplate("ppt");
  w.AddRequest("train", kAtomic, "ppt", 4);
  w.Run(seconds(20));
  ASSERT_EQ(w.All<IncreasePool>().size(), 1u);
  ASSERT_EQ(w.targets["gpu"], 4);
  w.instances["gpu"] = 2;
  w.stockouts["gpu"] = "SkuNotAvailable: Standard_NC6s_v3 in westeurope";
  w.Run(seconds(10));

  auto downs = w.All<DecreaseTarget>();
  ASSERT_EQ(downs.size(), 2u);
  EXPECT_EQ(downs[0].count, 2);  // the pool's own: the machines the provider never created
  EXPECT_EQ(downs[1].count, 2);  // the request's: created, not joined
  EXPECT_THAT(downs[1].reason, HasSubstr("ProvisioningRequest team/train"));
  EXPECT_EQ(w.targets["gpu"], 0);
  const model::Condition* failed = w.Cond("train", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "ScaleUpFailed");
  EXPECT_THAT(failed->message,
              HasSubstr("failed in pool gpu: the provider reports no capacity: SkuNotAvailable"));
  EXPECT_THAT(failed->message, HasSubstr("gpu -2"));
}

// Nodes that registered are not the loop's to take back: they are left to scale-down.
TEST(ProvisioningTest, RegisteredNodesOfAFailedAtomicScaleUpAreLeftToScaleDown) {
  ProvWorld w;
  w.config.scale_up.provision_timeout = minutes(5);
  w.Restart();
  w.AddTemplate("ppt");
  w.AddRequest("train", kAtomic, "ppt", 3);
  w.Run(seconds(20));
  w.AddNode("gpu-0").meta.creation_timestamp = w.now;
  w.Run(minutes(6));
  const model::Condition* failed = w.Cond("train", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_THAT(failed->message, HasSubstr("did not register within 5m"));
  EXPECT_THAT(failed->message, HasSubstr("no requested node was left to cancel"));
  auto downs = w.All<DecreaseTarget>();
  ASSERT_EQ(downs.size(), 1u) << "the timeout cancels the two missing nodes, once";
  EXPECT_EQ(downs[0].count, 2);
  EXPECT_EQ(w.All<IncreasePool>().size(), 1u);
}

// ValidUntilSeconds bounds how long a request that found no capacity is retried; the first
// pass is always made. Nodes on their way are not a retry.
TEST(ProvisioningTest, ValidUntilSecondsEndsTheRetriesOfAnAtomicRequest) {
  ProvWorld w;
  // A pool in backoff: the request waits for it rather than failing.
  w.AddPool("spare", 4);
  w.Restart();
  w.refuse.emplace("spare", Error(Error::Code::kUnavailable, "QuotaExceeded"));
  w.AddTemplate("ppt-spare", "1", "spare");
  w.AddRequest("spare-first", kAtomic, "ppt-spare", 1);
  w.Run(seconds(20));  // the refused increase puts "spare" in backoff
  w.AddRequest("train", kAtomic, "ppt-spare", 1).parameters["ValidUntilSeconds"] = "120";
  w.Run(seconds(60));
  const model::Condition* prov = w.Cond("train", ProvisioningCondition::kProvisioned);
  ASSERT_NE(prov, nullptr);
  EXPECT_EQ(prov->reason, "CapacityIsNotFound");
  EXPECT_EQ(w.Cond("train", ProvisioningCondition::kFailed), nullptr);
  w.Run(seconds(65));
  const model::Condition* failed = w.Cond("train", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "Expired");
  EXPECT_EQ(failed->message,
            "not provisioned within 2m of its creation (spec.parameters.ValidUntilSeconds); not "
            "retried any more");
}

TEST(ProvisioningTest, MalformedValidUntilSecondsFailsAtOnceAndScalesNothing) {
  ProvWorld w;
  w.AddTemplate("ppt");
  w.AddRequest("train", kAtomic, "ppt", 2).parameters["ValidUntilSeconds"] = "1h";
  w.Run(seconds(20));
  const model::Condition* failed = w.Cond("train", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "InvalidParameters");
  EXPECT_THAT(failed->message,
              HasSubstr("spec.parameters.ValidUntilSeconds: expected a whole number of seconds"));
  EXPECT_THAT(failed->message, HasSubstr("got \"1h\""));
  EXPECT_TRUE(w.All<IncreasePool>().empty());
}

// As the Cluster Autoscaler: a request of either class still not Provisioned a week after its
// creation fails (Expired); check-capacity ignores ValidUntilSeconds.
TEST(ProvisioningTest, ARequestNotProvisionedWithinAWeekExpires) {
  ProvWorld w(/*max=*/0);
  w.AddTemplate("ppt");
  w.AddRequest("check", kCheck, "ppt", 1).parameters["ValidUntilSeconds"] = "60";
  w.Run(minutes(5), minutes(1));
  EXPECT_EQ(w.Cond("check", ProvisioningCondition::kFailed), nullptr);
  w.now = w.requests.at("check").meta.creation_timestamp.value() + kRequestExpiry;
  w.Step();
  const model::Condition* failed = w.Cond("check", ProvisioningCondition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "Expired");
  EXPECT_THAT(failed->message, HasSubstr("within 168h"));
}

TEST(ProvisioningStageTest, StagesFollowTheConditions) {
  model::ProvisioningRequest r;
  const Time t = At("2026-11-25T10:00:00Z");
  EXPECT_EQ(StageOf(r, t, minutes(10)), ProvisioningStage::kNew);
  r.conditions.push_back({ProvisioningCondition::kAccepted, ConditionStatus::kTrue, "A", "", t});
  EXPECT_EQ(StageOf(r, t, minutes(10)), ProvisioningStage::kPending);
  r.conditions.push_back({ProvisioningCondition::kProvisioned, ConditionStatus::kTrue, "P", "", t});
  EXPECT_EQ(StageOf(r, t + minutes(9), minutes(10)), ProvisioningStage::kBooked);
  EXPECT_EQ(StageOf(r, t + minutes(10), minutes(10)), ProvisioningStage::kBookingOver);
  EXPECT_EQ(BookingEnd(r, minutes(10)), t + minutes(10));
  r.conditions.push_back({ProvisioningCondition::kFailed, ConditionStatus::kTrue, "F", "", t});
  EXPECT_EQ(StageOf(r, t, minutes(10)), ProvisioningStage::kDone);
}

TEST(ProvisioningExpandTest, CopiesPerPodSetAsOneGang) {
  model::PodTemplate a, b;
  a.meta.name = "a";
  b.meta.name = "b";
  a.meta.namespace_ = b.meta.namespace_ = "team";
  a.pod.meta.annotations["tidepool.dev/gang-size"] = "9";
  // Kueue's pods wait behind its admission gate; the room the request asks is for them ungated.
  a.pod.mutable_scheduling_gates().push_back("kueue.x-k8s.io/admission");
  a.pod.Finalize();
  ASSERT_TRUE(a.pod.SchedulingGated());
  model::ProvisioningRequest r;
  r.meta.name = "req";
  r.meta.namespace_ = "team";
  r.pod_sets = {{"a", 2}, {"b", 1}};
  auto pods = ExpandPods(r, IndexTemplates({&a, &b}));
  ASSERT_TRUE(pods.has_value()) << pods.error().message();
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[0].Key(), "team/req:0-0");
  EXPECT_EQ((*pods)[2].Key(), "team/req:1-0");
  for (const model::Pod& p : *pods) {
    EXPECT_EQ(planner::GangOf(p), "team/pod-group:provisioning-request:req");
    EXPECT_EQ(p.meta.Annotation("tidepool.dev/gang-size"), nullptr);
    EXPECT_TRUE(p.node_name.empty());
    EXPECT_FALSE(p.SchedulingGated());
  }
  // A real pod-group of the namespace named like the request's gang is another gang: a label
  // value cannot hold the ':' that the request's gang name does.
  model::Pod real;
  real.meta.namespace_ = "team";
  real.meta.labels["scheduling.x-k8s.io/pod-group"] = "provisioning-request-req";
  EXPECT_NE(planner::GangOf(real), planner::GangOf((*pods)[0]));
  EXPECT_TRUE(IsPodOf("team/req:1-0", r));
  EXPECT_FALSE(IsPodOf("team/req:1-1", r)) << "pod set 1 has one pod";
  EXPECT_FALSE(IsPodOf("other/req:0-0", r));
  r.pod_sets.push_back({"c", 1});
  auto missing = ExpandPods(r, IndexTemplates({&a, &b}));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), Error::Code::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("podSets[2]: PodTemplate team/c not found"));
}

}  // namespace
}  // namespace tidepool::autoscaler
