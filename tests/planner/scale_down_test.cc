// ScaleDownPlanner: eligibility, the drain simulation, PDB budgets across a pass, rate limits,
// GPU utilization, reasons and determinism. Clusters are built in code (scale_down_cluster.h).
#include "planner/scale_down.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "model/quantity.h"
#include "planner/scale_down_rules.h"
#include "sched/cluster_model.h"
#include "tests/planner/scale_down_cluster.h"
#include "tests/testing/values.h"

namespace tidepool::planner {
namespace {

using ::testing::HasSubstr;

using namespace scale_down_testing;  // NOLINT: the builder and plan readers

// --- Empty and underutilized nodes -----------------------------------------------------------

// A node kept for its utilization carries the numbers; they are worded when asked, before any
// words of their own.
TEST(ScaleDown, KeepReasonWordsTheUtilizationFirst) {
  Keep k{"n1", "replace: no pool takes its pods",
         BusyNode{{.value = 0.75, .resource = "cpu"}, 0.5}};
  EXPECT_EQ(k.Reason(), "utilization 0.75 >= threshold 0.5 (cpu); replace: no pool takes its pods");
  k.text.clear();
  EXPECT_EQ(k.Reason(), "utilization 0.75 >= threshold 0.5 (cpu)");
  k.busy.reset();
  k.text = "annotated scale-down-disabled";
  EXPECT_EQ(k.Reason(), "annotated scale-down-disabled");
}

TEST(ScaleDown, EmptyNodeRemoved) {
  Cluster c;
  c.AddNode("n1");
  c.AddDaemonSetPod("ds-n1", "n1");
  c.AddPod("done", "n1").phase = model::PodPhase::kSucceeded;  // terminal pods are ignored
  c.AddNode("n2");
  c.AddPod("busy", "n2", {{"cpu", "3"}});
  ScaleDownPlan plan = c.Plan();
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  const ScaleDown* sd = Removal(plan, "n1");
  EXPECT_EQ(sd->kind, RemovalKind::kEmpty);
  EXPECT_EQ(sd->pool, "cpupool");
  EXPECT_TRUE(sd->evict.empty());
  EXPECT_EQ(sd->Detail(), "utilization 0.00 < 0.5 (cpu)");
  EXPECT_EQ(KeepReason(plan, "n2"), "utilization 0.75 >= threshold 0.5 (cpu)");
}

TEST(ScaleDown, UnderutilizedNodeRemovedWithItsPodsListed) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("b", "n1", {{"cpu", "500m"}});
  c.AddPod("a", "n1", {{"cpu", "500m"}, {"memory", "1Gi"}});
  c.AddDaemonSetPod("ds-n1", "n1");  // does not count, is not evicted
  c.AddNode("n2");
  c.AddPod("big", "n2", {{"cpu", "2600m"}});
  ScaleDownPlan plan = c.Plan();
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  const ScaleDown* sd = Removal(plan, "n1");
  EXPECT_EQ(sd->kind, RemovalKind::kUnderutilized);
  EXPECT_EQ(sd->evict, (Names{"default/a", "default/b"}));
  EXPECT_EQ(sd->Detail(), "utilization 0.25 < 0.5 (cpu)");
  EXPECT_THAT(KeepReason(plan, "n2"), HasSubstr("utilization 0.65 >= threshold 0.5"));

  std::string explain = ScaleDownPlanner().Explain(c.Input(), "n1");
  EXPECT_THAT(explain, HasSubstr("pool cpupool"));
  EXPECT_THAT(explain, HasSubstr("Removable now (underutilized)"));
  EXPECT_THAT(explain, HasSubstr("default/a -> n2"));
  EXPECT_THAT(explain, HasSubstr("default/b -> n2"));
}

TEST(ScaleDown, MemoryUtilizationCountsWhenHigher) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "100m"}, {"memory", "12Gi"}});
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(KeepReason(plan, "n1"), "utilization 0.75 >= threshold 0.5 (memory)");
}

TEST(ScaleDown, KeptWhenPodsDoNotFitElsewhere) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "1500m"}});
  c.AddNode("n2");
  c.AddPod("b", "n2", {{"cpu", "3"}});
  ScaleDownPlan plan = c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("default/a cannot be moved"));
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("1 free"));
}

// A pending pod that fits a node is about to be bound there: the node is not removed from under
// it unless the pod fits elsewhere (the race a short unneededTime loses to kube-scheduler).
TEST(ScaleDown, APendingPodKeepsTheNodeItWillLandOn) {
  Cluster c;
  c.AddNode("n1");
  c.AddNode("n2");
  c.AddPod("busy", "n2", {{"cpu", "3"}});
  c.AddPod("pending", "", {{"cpu", "2"}}).phase = model::PodPhase::kPending;
  ScaleDownPlan plan = c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("default/pending cannot be moved"));

  // With a second empty node, one of the two stays for the pod and the other goes.
  c.AddNode("n3");
  plan = c.Plan(NoRateLimit());
  ASSERT_EQ(plan.scale_downs.size(), 1u) << Render(plan);
  EXPECT_THAT(Removed(plan), ::testing::AnyOf(Names{"n1"}, Names{"n3"}));
}

TEST(ScaleDown, PendingPodsThatFitNowhereChangeNothing) {
  Cluster c;
  c.AddNode("n1");
  for (int i = 0; i < 50; ++i) {
    c.AddPod("huge-" + std::to_string(i), "", {{"cpu", "64"}}).phase = model::PodPhase::kPending;
  }
  ScaleDownPlan plan = c.Plan(NoRateLimit());
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
}

// Pending pods, each of its own Job, for pool b: two empty nodes there, 40 busy ones of another
// pool with room the pods' selector keeps them from. 40 of the 60 pods fill b's nodes, so neither
// goes; the 20 that fit nowhere each search every node until the searches have tried as many as
// there are, then only b's.
TEST(ScaleDown, PendingPodsForAFewNodesHoldRoomOnThem) {
  Cluster c;
  c.AddPool("b", 0);
  for (int n = 0; n < 40; ++n) {
    const std::string name = fmt::format("a{:02}", n);
    c.AddNode(name);
    c.AddPod("load-" + name, name, {{"cpu", "3500m"}});
  }
  c.AddNode("b0", "b");
  c.AddNode("b1", "b");
  for (int i = 0; i < 60; ++i) {
    model::Pod& p = c.AddPod(fmt::format("w{:02}", i), "", {{"cpu", "200m"}});
    p.phase = model::PodPhase::kPending;
    p.meta.owner_references = {{"batch/v1", "Job", p.meta.name, "uid-job-" + p.meta.name, true}};
    p.node_selector[std::string(model::kLabelPool)] = "b";
  }
  for (const ScaleDownPlan& plan : {c.Plan(NoRateLimit()), c.PlanOnModel(NoRateLimit())}) {
    EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
    EXPECT_THAT(KeepReason(plan, "b0"), HasSubstr("cannot be moved"));
    EXPECT_THAT(KeepReason(plan, "b1"), HasSubstr("cannot be moved"));
  }
}

// A pending pod held by a scheduling gate holds no room: it may wait behind its queue for days.
TEST(ScaleDown, AGatedPendingPodHoldsNoRoom) {
  Cluster c;
  c.AddNode("n1");
  model::Pod& gated = c.AddPod("gated", "", {{"cpu", "2"}});
  gated.phase = model::PodPhase::kPending;
  gated.mutable_scheduling_gates().push_back("kueue.x-k8s.io/admission");
  EXPECT_EQ(Removed(c.Plan(NoRateLimit())), Names{"n1"});
  gated.ClearSchedulingGates();
  EXPECT_TRUE(c.Plan(NoRateLimit()).scale_downs.empty());
}

TEST(ScaleDown, KeptWhenNoSingleNodeHasRoom) {
  // 3 cpu are free in total, but 1 on each node: the 1500m pod fits on none.
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "1500m"}});
  for (const char* n : {"n2", "n3", "n4"}) {
    c.AddNode(n);
    c.AddPod(std::string("busy-") + n, n, {{"cpu", "3"}});
  }
  ScaleDownPlan plan = c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n1"),
            "pod default/a cannot be moved: 0/3 nodes are available: 3 Insufficient cpu");

  Cluster m;
  m.AddNode("n1");
  m.AddPod("a", "n1", {{"cpu", "100m"}, {"memory", "4Gi"}});
  for (const char* n : {"n2", "n3"}) {
    m.AddNode(n);
    m.AddPod(std::string("busy-") + n, n, {{"cpu", "100m"}, {"memory", "13Gi"}});
  }
  EXPECT_EQ(KeepReason(m.Plan(), "n1"),
            "pod default/a cannot be moved: 0/2 nodes are available: 2 Insufficient memory");
}

TEST(ScaleDown, KeptWhenOnlyTaintedNodesHaveRoom) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "1"}});
  model::Node& n2 = c.AddNode("n2");
  n2.taints.push_back({"dedicated", "gpu", model::TaintEffect::kNoSchedule});
  c.AddPod("b", "n2", {{"cpu", "3"}});  // keep n2 above the threshold
  c.config().pools[0].min = 1;
  ScaleDownPlan plan = c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n1"),
            "pod default/a cannot be moved: 0/1 nodes are available: 1 node(s) had untolerated "
            "taint {dedicated: gpu}");
}

TEST(ScaleDown, PodsMovedOntoANodeMoveAgainWhenItGoes) {
  // n3 (staying) has room for half a pod, so n1's pod lands on n2, the other candidate. When n2's
  // turn comes it has to place both its own pod and the one it received, and cannot.
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "1"}});
  c.AddNode("n2");
  c.AddPod("b", "n2", {{"cpu", "1"}});
  c.AddNode("n3");
  c.AddPod("c", "n3", {{"cpu", "3500m"}});
  ScaleDownPlan plan = c.Plan(NoRateLimit());
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n2"),
            "pods default/b, default/a cannot be moved: they request cpu 2 in total and the "
            "other ready, schedulable nodes have 500m free");
}

TEST(ScaleDown, MovedPodsPreferNodesThatStay) {
  // n1's pod could go to n2 (a candidate) or n3 (staying); it goes to n3, so n2 can go too.
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "1"}});
  c.AddNode("n2");
  c.AddPod("b", "n2", {{"cpu", "1"}});
  c.AddNode("n3", "cpupool", {{"cpu", "8"}, {"memory", "32Gi"}});
  c.AddPod("c", "n3", {{"cpu", "4500m"}});
  ScaleDownPlan plan = c.Plan(NoRateLimit());
  EXPECT_EQ(Removed(plan), (Names{"n1", "n2"})) << Render(plan);
  std::string explain = ScaleDownPlanner().Explain(c.Input(), "n1");
  EXPECT_THAT(explain, HasSubstr("default/a -> n3")) << explain;
}

TEST(ScaleDown, InterPodRulesAreCheckedForMovedPods) {
  // Host ports take the full FitChecker path (with the pod's spec.nodeName set, as bound pods
  // have it): the pod cannot go where its port is taken.
  Cluster c;
  c.AddNode("n1");
  model::Pod& a = c.AddPod("a", "n1", {{"cpu", "500m"}});
  a.containers[0].ports.push_back({.container_port = 80, .host_port = 8080});
  c.AddNode("n2");
  model::Pod& b = c.AddPod("b", "n2", {{"cpu", "3"}});
  b.containers[0].ports.push_back({.container_port = 80, .host_port = 8080});
  ScaleDownPlan plan = c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n1"),
            "pod default/a cannot be moved: 0/1 nodes are available: 1 node(s) didn't have free "
            "ports for the requested pod ports");

  c.AddNode("n3");
  c.AddPod("busy", "n3", {{"cpu", "3"}});
  plan = c.Plan();
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_THAT(ScaleDownPlanner().Explain(c.Input(), "n1"), HasSubstr("default/a -> n3"));
}

// --- Pods that may not be evicted ------------------------------------------------------------

// n1 holds the pod under test; n2 is a roomy node that stays (above the threshold).
struct DrainCase {
  Cluster c;
  model::Pod* pod;
  explicit DrainCase(std::string name = "x", std::string ns = "default") {
    c.AddNode("n1");
    pod = &c.AddPod(std::move(name), "n1", {{"cpu", "500m"}}, std::move(ns));
    c.AddNode("n2", "cpupool", {{"cpu", "16"}, {"memory", "64Gi"}});
    c.AddPod("big", "n2", {{"cpu", "9"}});
  }
};

// With consolidation off (scaleDown.consolidation.enabled: false), a running training pod never
// moves; with it on, consolidation_test.cc.
TEST(ScaleDown, KeptForRunningJobPodUnlessSafeToEvict) {
  DrainCase d("train-0", "ml");
  d.c.config().scale_down.consolidation.enabled = false;
  d.pod->meta.owner_references = {{"batch/v1", "Job", "train", "job-uid", true}};
  ScaleDownPlan plan = d.c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n1"),
            "pod ml/train-0 is not evictable: running training pod (owned by Job train); "
            "annotate cluster-autoscaler.kubernetes.io/safe-to-evict=true to allow");

  d.pod->meta.annotations[std::string(kSafeToEvictAnnotation)] = "true";
  plan = d.c.Plan();
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_EQ(plan.scale_downs[0].evict, Names{"ml/train-0"});
}

TEST(ScaleDown, KeptForGangMemberOfKubeflowJob) {
  DrainCase d("worker-1", "ml");
  d.c.config().scale_down.consolidation.enabled = false;
  d.pod->meta.owner_references = {{"kubeflow.org/v1", "PyTorchJob", "llm", "pj-uid", true}};
  d.pod->meta.labels["training.kubeflow.org/job-name"] = "llm";
  EXPECT_THAT(KeepReason(d.c.Plan(), "n1"),
              HasSubstr("running training pod (owned by PyTorchJob llm, gang ml/kubeflow:llm)"));
}

// ScaleDownOptions::evict_training_pods (the Cluster Autoscaler's behaviour, used by the
// simulator's ca-like policy): running Job and gang pods drain like any controlled pod, while
// the other rules still hold.
TEST(ScaleDown, TrainingPodsEvictableWhenTheOptionSaysSo) {
  DrainCase d("worker-1", "ml");
  d.c.config().scale_down.consolidation.enabled = false;
  d.pod->meta.owner_references = {{"kubeflow.org/v1", "PyTorchJob", "llm", "pj-uid", true}};
  d.pod->meta.labels["training.kubeflow.org/job-name"] = "llm";
  ScaleDownOptions options;
  options.evict_training_pods = true;
  ScaleDownPlan plan = d.c.Plan(options);
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_EQ(plan.scale_downs[0].evict, Names{"ml/worker-1"});
  EXPECT_THAT(KeepReason(d.c.Plan(), "n1"), HasSubstr("running training pod"));

  d.pod->meta.annotations[std::string(kDoNotDisruptAnnotation)] = "true";
  EXPECT_THAT(KeepReason(d.c.Plan(options), "n1"), HasSubstr("karpenter.sh/do-not-disrupt"));
  d.pod->meta.annotations.clear();
  d.pod->meta.owner_references.clear();  // a bare pod stays a bare pod
  EXPECT_THAT(KeepReason(d.c.Plan(options), "n1"), HasSubstr("has no controller"));
}

TEST(ScaleDown, KeptForBarePod) {
  DrainCase d("bare");
  d.pod->meta.owner_references.clear();
  ScaleDownPlan plan = d.c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n1"), "pod default/bare has no controller (bare pod)");
}

TEST(ScaleDown, LocalStorage) {
  {
    DrainCase d;
    d.pod->volumes.push_back({.name = "scratch", .kind = model::Volume::Kind::kEmptyDir});
    ScaleDownPlan plan = d.c.Plan();
    EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
    EXPECT_EQ(KeepReason(plan, "n1"),
              "pod default/x is not evictable: uses local storage (emptyDir volume \"scratch\"); "
              "annotate cluster-autoscaler.kubernetes.io/safe-to-evict=true to allow");
    d.pod->meta.annotations[std::string(kSafeToEvictAnnotation)] = "true";
    EXPECT_EQ(Removed(d.c.Plan()), Names{"n1"});
  }
  {
    DrainCase d;
    d.pod->volumes.push_back(
        {.name = "shm", .kind = model::Volume::Kind::kEmptyDir, .empty_dir_in_memory = true});
    d.pod->volumes.push_back(
        {.name = "data", .kind = model::Volume::Kind::kPersistentVolumeClaim, .claim_name = "c"});
    EXPECT_EQ(Removed(d.c.Plan()), Names{"n1"});
  }
  {
    DrainCase d;
    d.pod->volumes.push_back({.name = "logs", .kind = model::Volume::Kind::kHostPath});
    EXPECT_THAT(KeepReason(d.c.Plan(), "n1"), HasSubstr("hostPath volume \"logs\""));
  }
}

TEST(ScaleDown, KeptForSafeToEvictFalseAndDoNotDisrupt) {
  {
    DrainCase d;
    d.pod->meta.annotations[std::string(kSafeToEvictAnnotation)] = "false";
    EXPECT_EQ(KeepReason(d.c.Plan(), "n1"),
              "pod default/x is not evictable: annotated "
              "cluster-autoscaler.kubernetes.io/safe-to-evict=false");
  }
  {
    DrainCase d;
    d.pod->meta.annotations[std::string(kDoNotDisruptAnnotation)] = "true";
    // do-not-disrupt wins over safe-to-evict=true.
    d.pod->meta.annotations[std::string(kSafeToEvictAnnotation)] = "true";
    ScaleDownPlan plan = d.c.Plan();
    EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
    EXPECT_EQ(KeepReason(plan, "n1"),
              "pod default/x is not evictable: annotated karpenter.sh/do-not-disrupt=true");
  }
}

TEST(ScaleDown, KubeSystemPodNeedsAPdb) {
  DrainCase d("coredns-1", "kube-system");
  d.pod->meta.labels["k8s-app"] = "coredns";
  ScaleDownPlan plan = d.c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"),
              HasSubstr("pod kube-system/coredns-1 is not evictable: kube-system pod without a "
                        "PodDisruptionBudget"));

  d.c.AddPdb("coredns", {{"k8s-app", "coredns"}}, "kube-system").disruptions_allowed = 1;
  EXPECT_EQ(Removed(d.c.Plan()), Names{"n1"});
}

// MayBlockEviction lets a pass skip EvictionBlocker: wherever it says no, the blocker is "" for
// every PDB coverage and training setting; and each rule alone makes it say yes. Every mix of
// the rules' inputs.
TEST(ScaleDown, MayBlockEvictionCoversEveryRuleOfEvictionBlocker) {
  using Annotations = std::vector<std::pair<std::string_view, std::string_view>>;
  const std::vector<Annotations> annotation_sets = {
      {},
      {{"example.com/other", "x"}},
      {{kDoNotDisruptAnnotation, "true"}},
      {{kDoNotDisruptAnnotation, "false"}},
      {{kSafeToEvictAnnotation, "false"}},
      {{kSafeToEvictAnnotation, "true"}},
  };
  const std::vector<std::vector<model::OwnerReference>> owners = {
      {},
      {{"apps/v1", "ReplicaSet", "web", "rs-uid", true}},
      {{"batch/v1", "Job", "train", "job-uid", true}},
      {{"apps/v1", "ReplicaSet", "web", "rs-uid", false}},  // not a controller
  };
  const std::vector<std::vector<model::Volume>> volume_sets = {
      {},
      {{.name = "scratch", .kind = model::Volume::Kind::kEmptyDir}},
      {{.name = "shm", .kind = model::Volume::Kind::kEmptyDir, .empty_dir_in_memory = true}},
      {{.name = "logs", .kind = model::Volume::Kind::kHostPath}},
  };
  int quiet = 0, said = 0;
  for (const Annotations& annotations : annotation_sets) {
    for (const auto& owner : owners) {
      for (const auto& volumes : volume_sets) {
        for (std::string_view ns : {"default", "kube-system"}) {
          for (bool running : {false, true}) {
            for (bool gang : {false, true}) {
              model::Pod pod;
              pod.meta.name = "p";
              pod.meta.namespace_ = std::string(ns);
              for (const auto& [k, v] : annotations)
                pod.meta.annotations[std::string(k)] = std::string(v);
              pod.meta.owner_references = owner;
              pod.volumes = volumes;
              pod.phase = running ? model::PodPhase::kRunning : model::PodPhase::kPending;
              if (gang) pod.meta.labels["scheduling.x-k8s.io/pod-group"] = "g";
              pod.Finalize();
              bool any = false;
              for (bool covered : {false, true})
                for (bool evict : {false, true})
                  any = any || !EvictionBlocker(pod, covered, evict).empty();
              if (!MayBlockEviction(pod)) {
                EXPECT_FALSE(any) << "ns " << ns << ", running " << running << ", gang " << gang;
                ++quiet;
              } else {
                said += any ? 1 : 0;
              }
            }
          }
        }
      }
    }
  }
  // The rules' inputs alone: annotations that mean nothing, a ReplicaSet, in-memory emptyDir,
  // default namespace, no gang: 2 x 1 x 2 x 1 x 2 x 1 pods.
  EXPECT_EQ(quiet, 8);
  EXPECT_GT(said, 0);
}

// --- PodDisruptionBudgets --------------------------------------------------------------------

TEST(ScaleDown, KeptWhenPdbAllowsNoDisruption) {
  DrainCase d("web-1");
  d.pod->meta.labels["app"] = "web";
  d.c.AddPdb("web", {{"app", "web"}}).disruptions_allowed = 0;
  ScaleDownPlan plan = d.c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n1"),
            "pod default/web-1 is not evictable: PodDisruptionBudget default/web allows no "
            "disruptions now");
}

// Two candidate nodes each hold one pod a PDB covers; the PDB allows one eviction, so only the
// first node goes in this pass. `status` picks status.disruptionsAllowed vs. minAvailable.
void PdbBudgetIsCountedAcrossThePass(bool status) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("web-1", "n1").meta.labels["app"] = "web";
  c.AddNode("n2");
  c.AddPod("web-2", "n2").meta.labels["app"] = "web";
  c.AddNode("n3", "cpupool", {{"cpu", "16"}, {"memory", "64Gi"}});
  c.AddPod("big", "n3", {{"cpu", "9"}});
  auto& pdb = c.AddPdb("web", {{"app", "web"}});
  if (status) {
    pdb.disruptions_allowed = 1;
  } else {
    pdb.min_available = model::IntOrPercent{.value = 1};  // 2 healthy, 1 may go
  }
  ScaleDownPlan plan = c.Plan(NoRateLimit());
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n2"),
            "pod default/web-2 is not evictable: PodDisruptionBudget default/web allows 1 "
            "disruption(s) and other removals in this pass use 1");
}

TEST(ScaleDown, PdbBudgetFromStatusIsCountedAcrossThePass) {
  PdbBudgetIsCountedAcrossThePass(true);
}
TEST(ScaleDown, PdbBudgetFromSpecIsCountedAcrossThePass) { PdbBudgetIsCountedAcrossThePass(false); }

TEST(ScaleDown, PdbMaxUnavailablePercentCountsOnlyRunningPodsAsHealthy) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("web-1", "n1").meta.labels["app"] = "web";
  c.AddNode("n3", "cpupool", {{"cpu", "16"}, {"memory", "64Gi"}});
  c.AddPod("big", "n3", {{"cpu", "9"}});
  model::Pod& pending = c.AddPod("web-2", "");  // selected but not healthy
  pending.phase = model::PodPhase::kPending;
  pending.meta.labels["app"] = "web";
  c.AddPdb("web", {{"app", "web"}}).max_unavailable = model::IntOrPercent{50, true};
  // expected 2, maxUnavailable 50% -> 1, desired healthy 1, healthy 1 -> 0 allowed.
  EXPECT_THAT(KeepReason(c.Plan(), "n1"), HasSubstr("allows no disruptions now"));
}

// --- Eligibility -----------------------------------------------------------------------------

TEST(ScaleDown, PoolMinimumCountsRemovalsInThePass) {
  Cluster c;
  c.config().pools[0].min = 2;
  for (const char* n : {"n1", "n2", "n3"}) c.AddNode(n);
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n2"), "pool cpupool at min 2");
  EXPECT_EQ(KeepReason(plan, "n3"), "pool cpupool at min 2");
}

TEST(ScaleDown, DelayAfterAdd) {
  Cluster c;
  c.AddNode("young").meta.creation_timestamp = c.now() - std::chrono::minutes(3);
  c.AddNode("old").meta.creation_timestamp.reset();  // no timestamp: old
  c.AddNode("exactly").meta.creation_timestamp = c.now() - std::chrono::minutes(10);
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(Removed(plan), (Names{"exactly", "old"})) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "young"), "added 3m ago, delayAfterAdd 10m");
}

TEST(ScaleDown, ScaleDownDisabledAnnotation) {
  Cluster c;
  c.AddNode("a").meta.annotations[std::string(kCaScaleDownDisabledAnnotation)] = "true";
  c.AddNode("b").meta.annotations[std::string(kScaleDownDisabledAnnotation)] = "true";
  c.AddNode("c").meta.annotations[std::string(kScaleDownDisabledAnnotation)] = "false";
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(Removed(plan), Names{"c"}) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "a"),
            "scale-down disabled by annotation "
            "cluster-autoscaler.kubernetes.io/scale-down-disabled=true");
  EXPECT_EQ(KeepReason(plan, "b"),
            "scale-down disabled by annotation tidepool.dev/scale-down-disabled=true");
}

TEST(ScaleDown, DisabledInConfig) {
  Cluster c;
  c.config().scale_down.enabled = false;
  c.AddNode("n1");
  c.AddNode("u1", "");
  std::vector<std::string> unneeded = {"stale"};
  ScaleDownPlan plan = c.Plan({}, &unneeded);
  EXPECT_TRUE(plan.scale_downs.empty());
  ASSERT_EQ(plan.keep.size(), 1u) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n1"), "scale-down disabled in config");
  EXPECT_TRUE(unneeded.empty());
}

TEST(ScaleDown, UnmanagedNodeNeverRemovedButTakesPods) {
  Cluster c;
  c.AddNode("u1", "");  // empty, unmanaged
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "1"}});
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "u1"), "<not kept>");
  EXPECT_THAT(ScaleDownPlanner().Explain(c.Input(), "n1"), HasSubstr("default/a -> u1"));
  EXPECT_THAT(ScaleDownPlanner().Explain(c.Input(), "u1"), HasSubstr("unmanaged"));
}

TEST(ScaleDown, NodeBeingDeletedIsNotADestinationNorACandidate) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "1"}});
  model::Node& n2 = c.AddNode("n2");
  n2.taints.push_back(
      {std::string(kToBeDeletedTaint), "1700000000", model::TaintEffect::kNoSchedule});
  ScaleDownPlan plan = c.Plan();
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n2"), HasSubstr("being removed already"));
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("no other ready, schedulable node"));
}

TEST(ScaleDown, PodsOfANodeBeingDeletedTakeRoomFirst) {
  // n2 is being deleted; its pod needs n3's room, so n1's pod finds none.
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "1500m"}});
  c.AddNode("n2").taints.push_back(
      {std::string(kToBeDeletedTaint), "", model::TaintEffect::kNoSchedule});
  c.AddPod("leaving", "n2", {{"cpu", "1500m"}});
  c.AddNode("n3");
  c.AddPod("c", "n3", {{"cpu", "2500m"}});
  EXPECT_TRUE(c.Plan().scale_downs.empty());
}

TEST(ScaleDown, UnreadyNodeMayGoButTakesNoPods) {
  Cluster c;
  c.AddNode("n1").ready = false;  // empty and unready: removable
  c.AddNode("n2");
  c.AddPod("a", "n2", {{"cpu", "1"}});
  c.AddNode("n3").ready = false;
  c.AddPod("b", "n3", {{"cpu", "3"}});  // above threshold, stays
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n2"), HasSubstr("no other ready, schedulable node"));
}

// --- GPU nodes -------------------------------------------------------------------------------

TEST(ScaleDown, GpuNodeWithOnlyCpuPodsIsRemovedWhenTheyFitElsewhere) {
  Cluster c;
  c.AddPool("gpupool", 0);
  c.AddNode("g1", "gpupool", {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "1"}});
  c.AddPod("cpu-heavy", "g1", {{"cpu", "6"}});  // 75% cpu, 0 of 1 GPU
  c.AddNode("c1", "cpupool", {{"cpu", "16"}, {"memory", "64Gi"}});
  c.AddPod("big", "c1", {{"cpu", "9"}});
  ScaleDownPlan plan = c.Plan();
  ASSERT_EQ(Removed(plan), Names{"g1"}) << Render(plan);
  EXPECT_EQ(plan.scale_downs[0].Detail(), "gpu utilization 0/1 < 0.5");
  EXPECT_EQ(plan.scale_downs[0].kind, RemovalKind::kUnderutilized);
  EXPECT_EQ(plan.scale_downs[0].evict, Names{"default/cpu-heavy"});
}

TEST(ScaleDown, GpuNodeWithGpuPodKept) {
  Cluster c;
  c.AddPool("gpupool", 0);
  c.AddNode("g1", "gpupool", {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "1"}});
  c.AddPod("infer", "g1", {{"cpu", "500m"}, {"nvidia.com/gpu", "1"}});
  c.AddNode("g2", "gpupool", {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "1"}});
  c.config().scale_down.gpu_utilization_threshold = 0.5;
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(Removed(plan), Names{"g2"}) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "g1"), "gpu utilization 1/1 >= threshold 0.5");
}

// --- Rate limits and may_remove --------------------------------------------------------------

TEST(ScaleDown, EmptyBulkLimit) {
  Cluster c;
  c.config().scale_down.max_empty_bulk_delete = 2;
  for (const char* n : {"n4", "n3", "n2", "n1"}) c.AddNode(n);
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(Removed(plan), (Names{"n1", "n2"})) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n3"), "maxEmptyBulkDelete 2 reached in this pass");
  std::vector<std::string> unneeded;
  c.Plan({}, &unneeded);
  EXPECT_EQ(unneeded, (Names{"n1", "n2", "n3", "n4"}));
  EXPECT_EQ(Removed(c.Plan(NoRateLimit())).size(), 4u);
}

TEST(ScaleDown, OneNonEmptyNodePerPoolPerPass) {
  Cluster c;
  c.AddPool("other", 0);
  for (const char* n : {"a1", "a2", "a3"}) {
    c.AddNode(n);
    c.AddPod(std::string("p-") + n, n, {{"cpu", "1"}});
  }
  c.AddNode("b1", "other");
  c.AddPod("p-b1", "b1", {{"cpu", "1"}});
  c.AddNode("big", "");  // unmanaged, roomy
  ScaleDownPlan plan = c.Plan();
  EXPECT_EQ(Removed(plan), (Names{"a1", "b1"})) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "a2"), "maxNonEmptyPerPool 1 reached for pool cpupool in this pass");

  c.config().scale_down.max_non_empty_per_pool = 2;
  EXPECT_EQ(Removed(c.Plan()), (Names{"a1", "a2", "b1"}));
  EXPECT_EQ(Removed(c.Plan(NoRateLimit())).size(), 4u);
}

TEST(ScaleDown, OrderIsEmptyFirstThenUtilizationThenName) {
  Cluster c;
  c.AddNode("z-empty");
  c.AddNode("a-30");
  c.AddPod("p30", "a-30", {{"cpu", "1200m"}});
  c.AddNode("b-10");
  c.AddPod("p10", "b-10", {{"cpu", "400m"}});
  c.AddNode("c-10");
  c.AddPod("q10", "c-10", {{"cpu", "400m"}});
  c.AddNode("big", "", {{"cpu", "64"}, {"memory", "256Gi"}});
  ScaleDownPlan plan = c.Plan(NoRateLimit());
  EXPECT_EQ(Removed(plan), (Names{"z-empty", "b-10", "c-10", "a-30"})) << Render(plan);
}

TEST(ScaleDown, MayRemoveFilter) {
  Cluster c;
  c.AddNode("n1");
  c.AddNode("n2");
  c.AddPod("a", "n2", {{"cpu", "1"}});
  c.AddNode("n3");
  c.AddPod("b", "n3", {{"cpu", "3"}});
  ScaleDownOptions o;
  o.may_remove = [](const model::Node& n) { return n.name() != "n1"; };
  o.not_yet_reason = [](const model::Node& n) {
    return "unneeded for 2m of 10m (" + n.name() + ")";
  };
  std::vector<std::string> unneeded;
  ScaleDownPlan plan = c.Plan(o, &unneeded);
  // n1 stays and so can take n2's pod.
  EXPECT_EQ(Removed(plan), Names{"n2"}) << Render(plan);
  EXPECT_EQ(KeepReason(plan, "n1"), "unneeded for 2m of 10m (n1)");
  // Ignoring may_remove and rate limits, n1 (empty) goes first and n2's pod still fits on n3.
  EXPECT_EQ(unneeded, (Names{"n1", "n2"}));

  o.not_yet_reason = nullptr;
  EXPECT_EQ(KeepReason(c.Plan(o), "n1"), "not unneeded for long enough yet");
}

// --- Determinism and Explain -----------------------------------------------------------------

TEST(ScaleDown, DeterministicAndIndependentOfInputOrder) {
  Cluster c;
  c.config().scale_down.max_non_empty_per_pool = 3;
  for (int i = 0; i < 12; ++i) {
    std::string n = "n" + std::to_string(i);
    c.AddNode(n);
    for (int j = 0; j < i % 4; ++j)
      c.AddPod(n + "-p" + std::to_string(j), n, {{"cpu", std::string(j % 2 ? "300m" : "700m")}});
  }
  c.AddNode("e1");
  c.AddPod("zz-bare", "n5").meta.owner_references.clear();
  c.AddPod("aa-bare", "n5").meta.owner_references.clear();
  ScaleDownPlanner planner;
  PlannerInput in = c.Input();
  ScaleDownPlan first = planner.Plan(in);
  ASSERT_FALSE(first.scale_downs.empty());
  EXPECT_EQ(KeepReason(first, "n5"), "pod default/aa-bare has no controller (bare pod)");
  EXPECT_EQ(Render(first), Render(planner.Plan(in)));
  std::reverse(in.nodes.begin(), in.nodes.end());
  std::reverse(in.pods.begin(), in.pods.end());
  ScaleDownPlan reversed = planner.Plan(in);
  EXPECT_EQ(Removed(first), Removed(reversed));
  for (const auto& k : first.keep) EXPECT_EQ(KeepReason(reversed, k.node), k.Reason());
}

TEST(ScaleDown, ExplainKeptNode) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("a", "n1", {{"cpu", "3"}});
  std::string e = ScaleDownPlanner().Explain(c.Input(), "n1");
  EXPECT_THAT(e, HasSubstr("node n1 (pool cpupool, min 0)"));
  EXPECT_THAT(e, HasSubstr("Kept"));
  EXPECT_THAT(e, HasSubstr("utilization 0.75 >= threshold 0.5 (cpu)"));
  EXPECT_THAT(ScaleDownPlanner().Explain(c.Input(), "nope"), HasSubstr("not in the cluster"));
}

// The gang a pod belongs to: the pod-group label first, then Volcano's annotation, then the
// Kubeflow and JobSet labels; other labels and annotations name none.
TEST(ScaleDownRules, GangOfReadsTheGangLabelsInOrder) {
  model::Pod p;
  p.meta.namespace_ = "ml";
  p.meta.labels["app"] = "trainer";
  p.meta.annotations["note"] = "x";
  EXPECT_EQ(GangOf(p), "");
  EXPECT_FALSE(IsTrainingPod(p));
  p.meta.labels["jobset.sigs.k8s.io/jobset-name"] = "js";
  EXPECT_EQ(GangOf(p), "ml/jobset:js");
  EXPECT_TRUE(IsTrainingPod(p));
  p.meta.labels["training.kubeflow.org/job-name"] = "kf";
  EXPECT_EQ(GangOf(p), "ml/kubeflow:kf");
  p.meta.annotations["scheduling.k8s.io/group-name"] = "vc";
  EXPECT_EQ(GangOf(p), "ml/volcano:vc");
  p.meta.labels["scheduling.x-k8s.io/pod-group"] = "pg";
  EXPECT_EQ(GangOf(p), "ml/pod-group:pg");
}

TEST(ScaleDownRules, DrainRoles) {
  Cluster c;
  model::Pod& ds = c.AddDaemonSetPod("ds", "n1");
  model::Pod& mirror = c.AddPod("static", "n1");
  mirror.meta.annotations["kubernetes.io/config.mirror"] = "abc";
  model::Pod& failed = c.AddPod("failed", "n1");
  failed.phase = model::PodPhase::kFailed;
  model::Pod& going = c.AddPod("going", "n1");
  going.meta.deletion_timestamp = c.now();
  // As a decoder leaves them (the cluster finalizes its pods when it builds an input).
  for (model::Pod* p : {&ds, &mirror, &failed, &going}) p->Finalize();
  EXPECT_EQ(DrainRoleOf(ds), DrainRole::kStays);
  EXPECT_EQ(DrainRoleOf(mirror), DrainRole::kStays);
  EXPECT_EQ(DrainRoleOf(failed), DrainRole::kIgnored);
  EXPECT_EQ(DrainRoleOf(going), DrainRole::kIgnored);
  EXPECT_EQ(DrainRoleOf(c.AddPod("web", "n1")), DrainRole::kMove);
}

// A pass on the driver's cluster model plans what a pass on a built snapshot plans; in the
// model's debug mode a model that disagrees with the input (here it holds a pod the input lacks,
// which fills the only destination) stops the process and says how the two plans differ.
TEST(ScaleDown, OnTheClusterModelAndItsDebugModeFailsLoudly) {
  Cluster c;
  c.AddNode("n1");
  c.AddPod("small", "n1", {{"cpu", "500m"}});
  c.AddNode("n2");
  c.AddPod("big", "n2", {{"cpu", "2600m"}});
  PlannerInput in = c.Input();
  auto borrow = [](const auto* o) { return sched::ClusterModel::Borrow(o); };
  sched::ClusterModel model;
  for (const model::Node* n : in.nodes) ASSERT_TRUE(model.SetNode(borrow(n)).has_value());
  for (const model::Pod* p : in.pods) ASSERT_TRUE(model.SetPod(borrow(p)).has_value());
  in.model = &model;
  model.SetVerify(true);
  EXPECT_EQ(Removed(ScaleDownPlanner().Plan(in)), Names{"n1"});

  model::Pod stranger;
  stranger.meta.name = "stranger";
  stranger.meta.namespace_ = "default";
  stranger.node_name = "n2";
  stranger.phase = model::PodPhase::kRunning;
  stranger.containers.push_back({.name = "main", .requests = Res({{"cpu", "1"}})});
  stranger.Finalize();
  ASSERT_TRUE(model.SetPod(borrow(&stranger)).has_value());
  model.SetVerify(false);
  EXPECT_EQ(Removed(ScaleDownPlanner().Plan(in)), Names{});  // the model's view: n2 is full
  model.SetVerify(true);
  EXPECT_DEATH(ScaleDownPlanner().Plan(in),
               "scale-down on the cluster model differs from scale-down on a snapshot built");
}

}  // namespace
}  // namespace tidepool::planner
