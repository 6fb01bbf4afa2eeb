// Node-local filters: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
// NodeResourcesFit, their order and wording, and CheckTemplate's resource accounting.
#include "sched/fit.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/sched/builders.h"

namespace tidepool::sched {
namespace {

using model::SelectorOp;
using model::TaintEffect;
using model::TolerationOp;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Req;
using testing::Res;
using testing::TestCluster;

FitResult FitOn(TestCluster& c, const model::Pod& pod, std::string_view node) {
  return Fits(pod, c.Index(node), c.snapshot());
}

TEST(FitResources, FitsWhenEnoughIsFree) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Build());
  c.AddPod(PodBuilder("a").Requests({{"cpu", "3"}, {"memory", "8Gi"}}).Build(), "n1");
  auto pod = PodBuilder("p").Requests({{"cpu", "1"}, {"memory", "8Gi"}}).Build();
  FitResult r = FitOn(c, pod, "n1");
  EXPECT_TRUE(r.fits());
  EXPECT_EQ(r.code, FitCode::kFits);
  EXPECT_EQ(r.reason, "");
}

// A pod the bound excludes fits no node it was built from, and the bound is tight: a pod asking
// exactly the most room of one amount (and nothing else) fits some node. Random small clusters,
// overcommitted nodes among them.
TEST(FitResources, RoomBoundExcludesOnlyPodsThatFitNowhere) {
  std::mt19937 rng(5);
  auto pick = [&rng](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  int excluded = 0;
  for (int round = 0; round < 300; ++round) {
    TestCluster c;
    int nodes = 1 + pick(4);
    for (int n = 0; n < nodes; ++n) {
      std::string name = "n" + std::to_string(n);
      c.AddNode(NodeBuilder(name)
                    .Allocatable({{"cpu", std::to_string(1 + pick(4))},
                                  {"memory", std::to_string(1 + pick(4)) + "Gi"},
                                  {"pods", std::to_string(1 + pick(3))}})
                    .Build());
      for (int k = pick(4); k > 0; --k) {
        c.AddPod(PodBuilder(name + "-" + std::to_string(k))
                     .Requests({{"cpu", std::to_string(500 * pick(4)) + "m"},
                                {"memory", std::to_string(pick(3)) + "Gi"}})
                     .Build(),
                 name);
      }
    }
    RoomBound room;
    for (NodeIndex n = 0; n < c.snapshot().NodeSlots(); ++n) room.Add(c.snapshot().Get(n));
    auto pod = PodBuilder("p")
                   .Requests({{"cpu", std::to_string(500 * pick(8)) + "m"},
                              {"memory", std::to_string(pick(5)) + "Gi"}})
                   .Build();
    bool fits_some = false;
    for (NodeIndex n = 0; n < c.snapshot().NodeSlots(); ++n)
      fits_some = fits_some || Fits(pod, n, c.snapshot()).fits();
    if (room.Excludes(pod)) {
      ++excluded;
      EXPECT_FALSE(fits_some) << "round " << round;
    }
    if (room.pods >= 1 && room.cpu > 0) {
      auto at_bound = PodBuilder("b").Requests({{"cpu", std::to_string(room.cpu) + "m"}}).Build();
      EXPECT_FALSE(room.Excludes(at_bound));
    }
  }
  EXPECT_GT(excluded, 30);  // the rounds reach the case
}

TEST(FitResources, InsufficientCpuCountsPlacedPods) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Build());
  c.AddPod(PodBuilder("a").Requests({{"cpu", "3500m"}}).Build(), "n1");
  auto pod = PodBuilder("p").Requests({{"cpu", "501m"}}).Build();
  FitResult r = FitOn(c, pod, "n1");
  EXPECT_EQ(r.code, FitCode::kNodeResources);
  EXPECT_EQ(r.reason, "Insufficient cpu");
  EXPECT_FALSE(r.unresolvable());
  auto exact = PodBuilder("q").Requests({{"cpu", "500m"}}).Build();
  EXPECT_TRUE(FitOn(c, exact, "n1").fits());
}

TEST(FitResources, ReportsFirstInsufficientInKubeSchedulerOrder) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1")
                .Allocatable(
                    {{"cpu", "1"}, {"memory", "1Gi"}, {"ephemeral-storage", "1Gi"}, {"pods", "1"}})
                .Build());
  auto big = [](std::string name) {
    return PodBuilder(std::move(name))
        .Requests({{"cpu", "2"},
                   {"memory", "2Gi"},
                   {"ephemeral-storage", "2Gi"},
                   {"zz.example.com/widget", "1"},
                   {"amd.com/gpu", "1"}});
  };
  // Pods first.
  c.AddPod(PodBuilder("a").Build(), "n1");
  EXPECT_EQ(FitOn(c, big("p").Build(), "n1").reason, "Too many pods");
  EXPECT_EQ(FitOn(c, big("p").Build(), "n1").resource, model::kPods);

  TestCluster d;
  d.AddNode(NodeBuilder("n1")
                .Allocatable(
                    {{"cpu", "1"}, {"memory", "1Gi"}, {"ephemeral-storage", "1Gi"}, {"pods", "10"}})
                .Build());
  EXPECT_EQ(FitOn(d, big("p").Build(), "n1").reason, "Insufficient cpu");
  EXPECT_EQ(FitOn(d, big("p").Build(), "n1").resource, model::kCpu);
  auto no_cpu = PodBuilder("p").Requests(
      {{"memory", "2Gi"}, {"ephemeral-storage", "2Gi"}, {"zz.example.com/widget", "1"}});
  EXPECT_EQ(FitOn(d, no_cpu.Build(), "n1").reason, "Insufficient memory");
  auto storage = PodBuilder("p").Requests({{"ephemeral-storage", "2Gi"}, {"amd.com/gpu", "1"}});
  EXPECT_EQ(FitOn(d, storage.Build(), "n1").reason, "Insufficient ephemeral-storage");
  // Extended resources by name, whatever order they were interned in.
  auto extended = PodBuilder("p").Requests({{"zz.example.com/widget", "1"}, {"amd.com/gpu", "1"}});
  EXPECT_EQ(FitOn(d, extended.Build(), "n1").reason, "Insufficient amd.com/gpu");
  // nvidia.com/gpu is stored inline (kNvidiaGpuId) but ordered by name with the others.
  auto nvidia_last = PodBuilder("p").Requests({{"nvidia.com/gpu", "1"}, {"amd.com/gpu", "1"}});
  EXPECT_EQ(FitOn(d, nvidia_last.Build(), "n1").reason, "Insufficient amd.com/gpu");
  auto nvidia_first =
      PodBuilder("p").Requests({{"zz.example.com/widget", "1"}, {"nvidia.com/gpu", "1"}});
  EXPECT_EQ(FitOn(d, nvidia_first.Build(), "n1").reason, "Insufficient nvidia.com/gpu");
  EXPECT_EQ(FitOn(d, nvidia_first.Build(), "n1").resource, model::kNvidiaGpuId);
}

TEST(FitResources, InsufficientGpuOnNodeWithoutGpus) {
  TestCluster c;
  c.AddNode(NodeBuilder("cpu-node").Build());
  c.AddNode(
      NodeBuilder("gpu-node")
          .Allocatable({{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "1"}})
          .Build());
  auto pod = PodBuilder("p").Requests({{"cpu", "1"}, {"nvidia.com/gpu", "1"}}).Build();
  FitResult r = FitOn(c, pod, "cpu-node");
  EXPECT_EQ(r.code, FitCode::kNodeResources);
  EXPECT_EQ(r.reason, "Insufficient nvidia.com/gpu");
  EXPECT_TRUE(FitOn(c, pod, "gpu-node").fits());
  c.AddPod(PodBuilder("user").Requests({{"nvidia.com/gpu", "1"}}).Build(), "gpu-node");
  EXPECT_EQ(FitOn(c, pod, "gpu-node").reason, "Insufficient nvidia.com/gpu");
}

TEST(FitResources, TooManyPods) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Allocatable({{"cpu", "4"}, {"pods", "2"}}).Build());
  auto pod = PodBuilder("p").Build();
  c.AddPod(PodBuilder("a").Build(), "n1");
  EXPECT_TRUE(FitOn(c, pod, "n1").fits());
  c.AddPod(PodBuilder("b").Build(), "n1");
  FitResult r = FitOn(c, pod, "n1");
  EXPECT_EQ(r.code, FitCode::kNodeResources);
  EXPECT_EQ(r.reason, "Too many pods");
}

TEST(FitResources, ZeroRequestPodFitsOvercommittedNode) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Build());
  // Placed without a fit check: more cpu than the node has.
  c.AddPod(PodBuilder("hog").Requests({{"cpu", "6"}}).Build(), "n1");
  EXPECT_TRUE(FitOn(c, PodBuilder("besteffort").Build(), "n1").fits());
  EXPECT_EQ(FitOn(c, PodBuilder("p").Requests({{"cpu", "1m"}}).Build(), "n1").reason,
            "Insufficient cpu");
}

TEST(FitResources, InitContainerLargerThanAppContainersDecides) {
  TestCluster c;
  c.AddNode(
      NodeBuilder("n1").Allocatable({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}).Build());
  // App containers sum to 1.5 cpu, the init container needs 3: the effective request is 3.
  auto pod = PodBuilder("p")
                 .Requests({{"cpu", "1"}})
                 .AddContainer({{"cpu", "500m"}})
                 .InitContainer({{"cpu", "3"}})
                 .Build();
  EXPECT_EQ(FitOn(c, pod, "n1").reason, "Insufficient cpu");
  auto small_init = PodBuilder("q")
                        .Requests({{"cpu", "1"}})
                        .AddContainer({{"cpu", "500m"}})
                        .InitContainer({{"cpu", "2"}})
                        .Build();
  EXPECT_TRUE(FitOn(c, small_init, "n1").fits());
}

TEST(FitNodeName, MismatchIsUnresolvable) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Build());
  c.AddNode(NodeBuilder("n2").Build());
  auto pod = PodBuilder("p").NodeName("n2").Build();
  FitResult r = FitOn(c, pod, "n1");
  EXPECT_EQ(r.code, FitCode::kNodeName);
  EXPECT_EQ(r.reason, "node(s) didn't match the requested node name");
  EXPECT_TRUE(r.unresolvable());
  EXPECT_TRUE(FitOn(c, pod, "n2").fits());
}

TEST(FitUnschedulable, CordonedNodeRejectsUnlessTolerated) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Unschedulable().Build());
  FitResult r = FitOn(c, PodBuilder("p").Build(), "n1");
  EXPECT_EQ(r.code, FitCode::kNodeUnschedulable);
  EXPECT_EQ(r.reason, "node(s) were unschedulable");
  EXPECT_TRUE(r.unresolvable());

  auto tolerant = PodBuilder("t")
                      .Tolerate("node.kubernetes.io/unschedulable", TolerationOp::kExists, "",
                                TaintEffect::kNoSchedule)
                      .Build();
  EXPECT_TRUE(FitOn(c, tolerant, "n1").fits());
  auto everything = PodBuilder("e").Tolerate("", TolerationOp::kExists).Build();
  EXPECT_TRUE(FitOn(c, everything, "n1").fits());
  auto wrong_effect = PodBuilder("w")
                          .Tolerate("node.kubernetes.io/unschedulable", TolerationOp::kExists, "",
                                    TaintEffect::kNoExecute)
                          .Build();
  EXPECT_EQ(FitOn(c, wrong_effect, "n1").code, FitCode::kNodeUnschedulable);
}

TEST(FitTaints, UntoleratedNoScheduleAndNoExecute) {
  TestCluster c;
  c.AddNode(NodeBuilder("spot")
                .Taint("kubernetes.azure.com/scalesetpriority", "spot", TaintEffect::kNoSchedule)
                .Build());
  c.AddNode(NodeBuilder("evict").Taint("dedicated", "gpu", TaintEffect::kNoExecute).Build());
  auto pod = PodBuilder("p").Build();
  FitResult r = FitOn(c, pod, "spot");
  EXPECT_EQ(r.code, FitCode::kTaintToleration);
  EXPECT_EQ(r.reason,
            "node(s) had untolerated taint {kubernetes.azure.com/scalesetpriority: spot}");
  EXPECT_TRUE(r.unresolvable());
  r = FitOn(c, pod, "evict");
  EXPECT_EQ(r.code, FitCode::kTaintToleration);
  EXPECT_EQ(r.reason, "node(s) had untolerated taint {dedicated: gpu}");

  auto spot_ok = PodBuilder("s")
                     .Tolerate("kubernetes.azure.com/scalesetpriority", TolerationOp::kEqual,
                               "spot", TaintEffect::kNoSchedule)
                     .Build();
  EXPECT_TRUE(FitOn(c, spot_ok, "spot").fits());
  EXPECT_EQ(FitOn(c, spot_ok, "evict").code, FitCode::kTaintToleration);
  auto wrong_value =
      PodBuilder("v")
          .Tolerate("kubernetes.azure.com/scalesetpriority", TolerationOp::kEqual, "regular")
          .Build();
  EXPECT_EQ(FitOn(c, wrong_value, "spot").code, FitCode::kTaintToleration);
}

TEST(FitTaints, PreferNoScheduleIsIgnored) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Taint("soft", "x", TaintEffect::kPreferNoSchedule).Build());
  EXPECT_TRUE(FitOn(c, PodBuilder("p").Build(), "n1").fits());
}

TEST(FitTaints, EmptyKeyExistsToleratesEverything) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1")
                .Taint("a", "1", TaintEffect::kNoSchedule)
                .Taint("b", "2", TaintEffect::kNoExecute)
                .Build());
  EXPECT_TRUE(FitOn(c, PodBuilder("p").Tolerate("", TolerationOp::kExists).Build(), "n1").fits());
  // The first untolerated taint is the one reported.
  auto only_a = PodBuilder("q").Tolerate("a", TolerationOp::kExists).Build();
  EXPECT_EQ(FitOn(c, only_a, "n1").reason, "node(s) had untolerated taint {b: 2}");
}

TEST(FitNodeAffinity, NodeSelector) {
  TestCluster c;
  c.AddNode(NodeBuilder("gpu").Label("pool", "gpu").Build());
  c.AddNode(NodeBuilder("cpu").Label("pool", "cpu").Build());
  auto pod = PodBuilder("p").NodeSelector("pool", "gpu").Build();
  EXPECT_TRUE(FitOn(c, pod, "gpu").fits());
  FitResult r = FitOn(c, pod, "cpu");
  EXPECT_EQ(r.code, FitCode::kNodeAffinity);
  EXPECT_EQ(r.reason, "node(s) didn't match Pod's node affinity/selector");
  EXPECT_TRUE(r.unresolvable());
}

TEST(FitNodeAffinity, GtLtAndTermsAreOred) {
  TestCluster c;
  c.AddNode(NodeBuilder("gen3").Label("gpu-gen", "3").Build());
  c.AddNode(NodeBuilder("gen5").Label("gpu-gen", "5").Build());
  c.AddNode(NodeBuilder("gen8").Label("gpu-gen", "8").Build());
  c.AddNode(NodeBuilder("none").Build());
  auto between = PodBuilder("p")
                     .NodeAffinityTerm({Req("gpu-gen", SelectorOp::kGt, {"4"}),
                                        Req("gpu-gen", SelectorOp::kLt, {"6"})})
                     .Build();
  EXPECT_EQ(FitOn(c, between, "gen3").code, FitCode::kNodeAffinity);
  EXPECT_TRUE(FitOn(c, between, "gen5").fits());
  EXPECT_EQ(FitOn(c, between, "gen8").code, FitCode::kNodeAffinity);
  EXPECT_EQ(FitOn(c, between, "none").code, FitCode::kNodeAffinity);

  auto either = PodBuilder("q")
                    .NodeAffinityTerm({Req("gpu-gen", SelectorOp::kLt, {"4"})})
                    .NodeAffinityTerm({Req("gpu-gen", SelectorOp::kGt, {"7"})})
                    .Build();
  EXPECT_TRUE(FitOn(c, either, "gen3").fits());
  EXPECT_EQ(FitOn(c, either, "gen5").code, FitCode::kNodeAffinity);
  EXPECT_TRUE(FitOn(c, either, "gen8").fits());
}

TEST(FitNodeAffinity, MatchFieldsMetadataName) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Build());
  c.AddNode(NodeBuilder("n2").Build());
  auto pod =
      PodBuilder("p").NodeAffinityTerm({}, {Req("metadata.name", SelectorOp::kIn, {"n2"})}).Build();
  EXPECT_EQ(FitOn(c, pod, "n1").code, FitCode::kNodeAffinity);
  EXPECT_TRUE(FitOn(c, pod, "n2").fits());
}

TEST(FitNodeAffinity, SelectorAndAffinityMustBothMatch) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Label("pool", "gpu").Zone("a").Build());
  auto pod = PodBuilder("p")
                 .NodeSelector("pool", "gpu")
                 .NodeAffinityTerm({Req(std::string(model::kLabelZone), SelectorOp::kIn, {"b"})})
                 .Build();
  EXPECT_EQ(FitOn(c, pod, "n1").code, FitCode::kNodeAffinity);
}

TEST(FitPorts, ConflictsOnSamePortAndProtocol) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Build());
  c.AddPod(PodBuilder("a").HostPort(8080).Build(), "n1");
  FitResult r = FitOn(c, PodBuilder("p").HostPort(8080).Build(), "n1");
  EXPECT_EQ(r.code, FitCode::kNodePorts);
  EXPECT_EQ(r.reason, "node(s) didn't have free ports for the requested pod ports");
  EXPECT_FALSE(r.unresolvable());
  EXPECT_TRUE(FitOn(c, PodBuilder("q").HostPort(8081).Build(), "n1").fits());
  EXPECT_TRUE(FitOn(c, PodBuilder("u").HostPort(8080, "UDP").Build(), "n1").fits());
  EXPECT_TRUE(FitOn(c, PodBuilder("none").Build(), "n1").fits());
}

TEST(FitPorts, HostIpsOverlapOnlyWhenEqualOrWildcard) {
  TestCluster c;
  c.AddNode(NodeBuilder("specific").Build());
  c.AddNode(NodeBuilder("wildcard").Build());
  c.AddPod(PodBuilder("a").HostPort(53, "UDP", "10.0.0.1").Build(), "specific");
  c.AddPod(PodBuilder("b").HostPort(53, "UDP", "0.0.0.0").Build(), "wildcard");

  EXPECT_TRUE(
      FitOn(c, PodBuilder("p1").HostPort(53, "UDP", "10.0.0.2").Build(), "specific").fits());
  EXPECT_EQ(FitOn(c, PodBuilder("p2").HostPort(53, "UDP", "10.0.0.1").Build(), "specific").code,
            FitCode::kNodePorts);
  // An empty host IP means every address and overlaps any IP.
  EXPECT_EQ(FitOn(c, PodBuilder("p3").HostPort(53, "UDP").Build(), "specific").code,
            FitCode::kNodePorts);
  EXPECT_EQ(FitOn(c, PodBuilder("p4").HostPort(53, "UDP", "10.0.0.9").Build(), "wildcard").code,
            FitCode::kNodePorts);
  EXPECT_TRUE(FitOn(c, PodBuilder("p5").HostPort(53, "TCP").Build(), "wildcard").fits());
}

TEST(FitOrder, FiltersRunInDefaultProfileOrder) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1")
                .Unschedulable()
                .Taint("t", "v", TaintEffect::kNoSchedule)
                .Label("pool", "cpu")
                .Allocatable({{"cpu", "1"}, {"pods", "110"}})
                .Build());
  c.AddPod(PodBuilder("a").HostPort(80).Build(), "n1");
  PodBuilder b("p");
  b.Requests({{"cpu", "2"}}).HostPort(80).NodeSelector("pool", "gpu").NodeName("other");
  EXPECT_EQ(FitOn(c, b.Build(), "n1").code, FitCode::kNodeUnschedulable);
  b.Tolerate("node.kubernetes.io/unschedulable", TolerationOp::kExists);
  EXPECT_EQ(FitOn(c, b.Build(), "n1").code, FitCode::kNodeName);
  b.NodeName("n1");
  EXPECT_EQ(FitOn(c, b.Build(), "n1").code, FitCode::kTaintToleration);
  b.Tolerate("t", TolerationOp::kExists);
  EXPECT_EQ(FitOn(c, b.Build(), "n1").code, FitCode::kNodeAffinity);
  b.NodeSelector("pool", "cpu");
  EXPECT_EQ(FitOn(c, b.Build(), "n1").code, FitCode::kNodePorts);
  PodBuilder no_port("q");
  no_port.Requests({{"cpu", "2"}}).NodeSelector("pool", "cpu").Tolerate("", TolerationOp::kExists);
  EXPECT_EQ(FitOn(c, no_port.Build(), "n1").code, FitCode::kNodeResources);
}

TEST(FitStatic, ExposedHelpersMatchCheck) {
  auto node = NodeBuilder("n1").Label("pool", "gpu").Build();
  EXPECT_TRUE(CheckNodeStatic(PodBuilder("p").NodeSelector("pool", "gpu").Build(), node).fits());
  EXPECT_EQ(CheckNodeStatic(PodBuilder("p").NodeSelector("pool", "cpu").Build(), node).code,
            FitCode::kNodeAffinity);
  auto pod = PodBuilder("p").Requests({{"cpu", "2"}}).Build();
  EXPECT_TRUE(
      CheckResources(pod, Res({{"cpu", "4"}, {"pods", "10"}}), Res({{"cpu", "2"}, {"pods", "9"}}))
          .fits());
  EXPECT_EQ(
      CheckResources(pod, Res({{"cpu", "4"}, {"pods", "10"}}), Res({{"cpu", "2"}, {"pods", "10"}}))
          .reason,
      "Too many pods");
  EXPECT_EQ(CheckResources(pod, Res({{"cpu", "4"}, {"pods", "10"}}),
                           Res({{"cpu", "2001m"}, {"pods", "1"}}))
                .reason,
            "Insufficient cpu");
}

// The answer-only helpers a planner uses for hundreds of pool templates per pod say what the
// worded checks say, on every mix of selector, taint, cordon, node name and amounts.
TEST(FitStatic, AnswerOnlyHelpersAgreeWithTheWordedChecks) {
  std::mt19937 rng(5);
  int static_no = 0, resources_no = 0;
  for (int i = 0; i < 2000; ++i) {
    NodeBuilder nb("n" + std::to_string(i % 3));
    if (rng() % 2) nb.Label("pool", rng() % 2 ? "gpu" : "cpu");
    if (rng() % 3 == 0) nb.Taint("dedicated", "gpu", TaintEffect::kNoSchedule);
    if (rng() % 5 == 0) nb.Unschedulable();
    nb.Allocatable({{"cpu", std::to_string(1 + rng() % 8)},
                    {"memory", std::to_string(1 + rng() % 8) + "Gi"},
                    {"nvidia.com/gpu", std::to_string(rng() % 3)},
                    {"pods", std::to_string(1 + rng() % 4)}});
    model::Node node = nb.Build();
    PodBuilder pb("p");
    if (rng() % 2) pb.NodeSelector("pool", rng() % 2 ? "gpu" : "cpu");
    if (rng() % 2) pb.Tolerate("dedicated", TolerationOp::kExists);
    if (rng() % 7 == 0) pb.NodeName("n" + std::to_string(rng() % 3));
    pb.Requests({{"cpu", std::to_string(1 + rng() % 3)},
                 {"memory", std::to_string(1 + rng() % 3) + "Gi"},
                 {"nvidia.com/gpu", std::to_string(rng() % 2)}});
    model::Pod pod = pb.Build();
    model::Resources requested =
        Res({{"cpu", std::to_string(rng() % 3)}, {"pods", std::to_string(rng() % 3)}});
    const bool worded_static = CheckNodeStatic(pod, node).fits();
    const bool worded_resources = CheckResources(pod, node.allocatable, requested).fits();
    ASSERT_EQ(PassesNodeStatic(pod, node), worded_static) << "case " << i;
    ASSERT_EQ(HasResources(pod, node.allocatable, requested), worded_resources) << "case " << i;
    static_no += worded_static ? 0 : 1;
    resources_no += worded_resources ? 0 : 1;
  }
  // Both answers occur often enough for the comparison to mean something.
  EXPECT_GT(static_no, 200);
  EXPECT_LT(static_no, 1800);
  EXPECT_GT(resources_no, 200);
  EXPECT_LT(resources_no, 1800);
}

TEST(FitTemplate, ResourcesCountDaemonSetPods) {
  TestCluster c;
  auto tmpl = NodeBuilder("template")
                  .Allocatable({{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "3"}})
                  .Build();
  auto pod = PodBuilder("p").Requests({{"cpu", "3"}}).Build();
  FitChecker checker(pod, c.snapshot());
  EXPECT_TRUE(checker.CheckTemplate(tmpl, model::Resources(), 0).fits());
  // The "pods" entry of existing_requests is ignored; existing_pods counts.
  EXPECT_TRUE(checker.CheckTemplate(tmpl, Res({{"cpu", "1"}, {"pods", "50"}}), 2).fits());
  EXPECT_EQ(checker.CheckTemplate(tmpl, Res({{"cpu", "1"}}), 3).reason, "Too many pods");
  EXPECT_EQ(checker.CheckTemplate(tmpl, Res({{"cpu", "1001m"}}), 1).reason, "Insufficient cpu");
  auto tainted = NodeBuilder("t").Taint("gpu", "true", TaintEffect::kNoSchedule).Build();
  EXPECT_EQ(checker.CheckTemplate(tainted, model::Resources(), 0).code, FitCode::kTaintToleration);
}

TEST(FitResult, UnresolvableByCode) {
  auto with = [](FitCode code, bool affinity_unresolvable = false) {
    FitResult r;
    r.code = code;
    r.pod_affinity_unresolvable = affinity_unresolvable;
    return r.unresolvable();
  };
  EXPECT_FALSE(with(FitCode::kFits));
  EXPECT_TRUE(with(FitCode::kNodeUnschedulable));
  EXPECT_TRUE(with(FitCode::kNodeName));
  EXPECT_TRUE(with(FitCode::kTaintToleration));
  EXPECT_TRUE(with(FitCode::kNodeAffinity));
  EXPECT_FALSE(with(FitCode::kNodePorts));
  EXPECT_FALSE(with(FitCode::kNodeResources));
  EXPECT_TRUE(with(FitCode::kTopologySpreadMissingLabel));
  EXPECT_FALSE(with(FitCode::kTopologySpread));
  EXPECT_FALSE(with(FitCode::kPodAffinity));
  EXPECT_TRUE(with(FitCode::kPodAffinity, true));
  EXPECT_FALSE(with(FitCode::kPodAntiAffinity));
  EXPECT_FALSE(with(FitCode::kExistingAntiAffinity));
}

// Fits() runs the resource filter first and drops the wording; Check() keeps kube-scheduler's
// order and says why. Whatever the order, they must agree on every node: random clusters of
// nodes short of one amount or another (pod slots, cpu, memory, storage, GPUs, an extended
// resource), labelled, tainted or cordoned, and pods that ask for them.
TEST(FitOrder, FitsSaysWhatCheckSays) {
  std::mt19937 rng(17);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int fits = 0, short_only = 0;
  for (int round = 0; round < 200; ++round) {
    TestCluster c;
    for (int n = 0; n < 8; ++n) {
      const std::string name = "n" + std::to_string(n);
      NodeBuilder b(name);
      b.Allocatable({{"cpu", std::to_string(1 + pick(4))},
                     {"memory", std::to_string(1 + pick(4)) + "Gi"},
                     {"pods", std::to_string(1 + pick(3))},
                     {"ephemeral-storage", std::to_string(1 + pick(3)) + "Gi"},
                     {"nvidia.com/gpu", std::to_string(pick(2) * 2)},
                     {"example.com/fpga", std::to_string(pick(2))}});
      b.Label("pool", pick(2) == 0 ? "a" : "b").Label(std::string(model::kLabelHostname), name);
      if (pick(4) == 0) b.Taint("gpu", "true", TaintEffect::kNoSchedule);
      if (pick(8) == 0) b.Unschedulable();
      c.AddNode(b.Build());
      for (int k = pick(3); k > 0; --k) {
        c.AddPod(PodBuilder(name + "-p" + std::to_string(k))
                     .Requests({{"cpu", std::to_string(100 * (1 + pick(10))) + "m"},
                                {"memory", std::to_string(256 * (1 + pick(4))) + "Mi"}})
                     .Build(),
                 name);
      }
    }
    for (int k = 0; k < 10; ++k) {
      PodBuilder b("incoming");
      const std::string cpu = std::to_string(250 * (1 + pick(8))) + "m";
      const std::string memory = std::to_string(512 * (1 + pick(6))) + "Mi";
      const std::string storage = std::to_string(1 + pick(3)) + "Gi";
      const std::string gpus = std::to_string(1 + pick(2));
      b.Requests({{"cpu", cpu}, {"memory", memory}});
      // Each further amount in a container of its own: the pod asks for the sum.
      if (pick(3) == 0) b.AddContainer({{"ephemeral-storage", storage}});
      if (pick(3) == 0) b.AddContainer({{"nvidia.com/gpu", gpus}});
      if (pick(4) == 0) b.AddContainer({{"example.com/fpga", "1"}});
      if (pick(3) == 0) b.NodeSelector("pool", "a");
      if (pick(2) == 0) b.Tolerate("gpu", TolerationOp::kExists);
      const model::Pod* pod = c.Keep(b.Build());
      FitChecker checker(*pod, c.snapshot());
      for (NodeIndex i = 0; i < c.snapshot().NodeSlots(); ++i) {
        const FitResult full = checker.Check(i);
        ASSERT_EQ(checker.Fits(i), full.fits())
            << "round " << round << " pod " << k << " node " << i << ": " << full.reason;
        fits += full.fits();
        // Turned down for resources alone: the case the reordering skips the rest for.
        short_only += full.code == FitCode::kNodeResources;
      }
    }
  }
  EXPECT_GT(fits, 100);
  EXPECT_GT(short_only, 100);
}

}  // namespace
}  // namespace tidepool::sched
