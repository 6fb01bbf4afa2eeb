// PodTopologySpread (DoNotSchedule): skew across zones and hosts, nodes missing the key,
// minDomains, node inclusion policies, matchLabelKeys, what counts, and pool templates.
#include <gtest/gtest.h>

#include <string>

#include "sched/fit.h"
#include "tests/sched/builders.h"

namespace tidepool::sched {
namespace {

using model::InclusionPolicy;
using model::TaintEffect;
using model::TolerationOp;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::SpreadOn;
using testing::Term;
using testing::TestCluster;

const std::string kHost(model::kLabelHostname);
const std::string kZone(model::kLabelZone);

model::Pod Web(std::string name, std::string ns = "default") {
  return PodBuilder(std::move(name), std::move(ns)).Label("app", "web").Build();
}

// a1, a2 in zone a; b1 in zone b; c1 in zone c.
class SpreadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.AddNode(NodeBuilder("a1").Zone("a").Build());
    c_.AddNode(NodeBuilder("a2").Zone("a").Build());
    c_.AddNode(NodeBuilder("b1").Zone("b").Build());
    c_.AddNode(NodeBuilder("c1").Zone("c").Build());
  }
  FitResult FitOn(const model::Pod& pod, std::string_view node) {
    return Fits(pod, c_.Index(node), c_.snapshot());
  }
  model::Pod Incoming(model::TopologySpreadConstraint c) {
    return PodBuilder("new").Label("app", "web").Spread(std::move(c)).Build();
  }
  TestCluster c_;
};

TEST_F(SpreadTest, MaxSkewOneAcrossZones) {
  c_.AddPod(Web("w1"), "a1");
  c_.AddPod(Web("w2"), "a2");
  c_.AddPod(Web("w3"), "b1");
  c_.AddPod(Web("w4"), "c1");
  c_.AddPod(PodBuilder("other").Label("app", "db").Build(), "b1");
  auto pod = Incoming(SpreadOn(kZone, 1, {{"app", "web"}}));
  FitResult r = FitOn(pod, "a1");  // zone a: 2 + 1 - 1 = 2 > 1
  EXPECT_EQ(r.code, FitCode::kTopologySpread);
  EXPECT_EQ(r.reason, "node(s) didn't match pod topology spread constraints");
  EXPECT_FALSE(r.unresolvable());
  EXPECT_EQ(FitOn(pod, "a2").code, FitCode::kTopologySpread);
  EXPECT_TRUE(FitOn(pod, "b1").fits());
  EXPECT_TRUE(FitOn(pod, "c1").fits());
  EXPECT_TRUE(FitOn(Incoming(SpreadOn(kZone, 2, {{"app", "web"}})), "a1").fits());
}

TEST_F(SpreadTest, NodeWithoutTheKeyIsUnresolvableAndNoDomain) {
  c_.AddNode(NodeBuilder("nozone").Build());
  for (auto node : {"a1", "a2", "b1", "c1"}) c_.AddPod(Web(std::string("w-") + node), node);
  auto pod = PodBuilder("new")
                 .Label("app", "web")
                 .Spread(SpreadOn(kHost, 1, {{"app", "web"}}))
                 .Spread(SpreadOn(kZone, 5, {{"app", "web"}}))
                 .Build();
  FitResult r = FitOn(pod, "nozone");
  EXPECT_EQ(r.code, FitCode::kTopologySpreadMissingLabel);
  EXPECT_EQ(r.reason,
            "node(s) didn't match pod topology spread constraints (missing required label)");
  EXPECT_TRUE(r.unresolvable());
  // "nozone" has the hostname key but lacks the zone key, so it is not a hostname domain
  // either: its zero count does not lower the minimum (1 + 1 - 1 <= 1).
  EXPECT_TRUE(FitOn(pod, "a1").fits());
  // Pods on it do not count anywhere.
  c_.AddPod(Web("stray"), "nozone");
  EXPECT_TRUE(FitOn(pod, "a1").fits());
}

TEST_F(SpreadTest, MinDomainsForcesGlobalMinimumToZero) {
  c_.AddPod(Web("w1"), "a1");
  c_.AddPod(Web("w2"), "b1");
  c_.AddPod(Web("w3"), "c1");
  auto c3 = SpreadOn(kZone, 1, {{"app", "web"}});
  c3.min_domains = 3;
  EXPECT_TRUE(FitOn(Incoming(c3), "a1").fits());  // 3 domains: min 1, skew 1
  auto c4 = c3;
  c4.min_domains = 4;
  EXPECT_EQ(FitOn(Incoming(c4), "a1").code, FitCode::kTopologySpread);  // min 0, skew 2
}

TEST(SpreadPolicy, NodeAffinityPolicyHonorVsIgnore) {
  TestCluster c;
  c.AddNode(NodeBuilder("g1").Zone("a").Label("pool", "gpu").Build());
  c.AddNode(NodeBuilder("g2").Zone("b").Label("pool", "gpu").Build());
  c.AddNode(NodeBuilder("x1").Zone("c").Label("pool", "cpu").Build());
  c.AddPod(Web("w1"), "g1");
  c.AddPod(Web("w2"), "g2");
  auto honor = SpreadOn(kZone, 1, {{"app", "web"}});  // Honor is the default
  auto pod_honor =
      PodBuilder("p").Label("app", "web").NodeSelector("pool", "gpu").Spread(honor).Build();
  // Zone c has no gpu node, so it is not a domain: min 1, skew 1.
  EXPECT_TRUE(Fits(pod_honor, c.Index("g1"), c.snapshot()).fits());
  auto ignore = honor;
  ignore.node_affinity_policy = InclusionPolicy::kIgnore;
  auto pod_ignore =
      PodBuilder("q").Label("app", "web").NodeSelector("pool", "gpu").Spread(ignore).Build();
  // Zone c counts with 0 pods: min 0, skew 2.
  EXPECT_EQ(Fits(pod_ignore, c.Index("g1"), c.snapshot()).code, FitCode::kTopologySpread);
}

// A node that fails the inclusion policies adds none of its pods to its domain, even when another
// node of that domain is eligible (kube-scheduler's PreFilter counts per node that passes).
// Zone a: g1 (gpu, no web pods), then x1 (cpu, two web pods); zone b: g2 (gpu, one web pod).
// For a gpu pod (Honor), zone a counts 0 and zone b 1: g1 takes it, g2 does not (1 + 1 - 0).
// x1 comes after g1 in the snapshot, where a count by domain alone would take its pods in.
TEST(SpreadPolicy, PodsOfANodeThatFailsThePoliciesNeverCount) {
  // One selector key is counted from the snapshot's label index, two keys pod by pod.
  for (bool two_keys : {false, true}) {
    TestCluster c;
    c.AddNode(NodeBuilder("g1").Zone("a").Label("pool", "gpu").Build());
    c.AddNode(NodeBuilder("x1").Zone("a").Label("pool", "cpu").Build());
    c.AddNode(NodeBuilder("g2").Zone("b").Label("pool", "gpu").Build());
    auto web = [](std::string name) {
      return PodBuilder(std::move(name)).Label("app", "web").Label("tier", "front").Build();
    };
    c.AddPod(web("w1"), "x1");
    c.AddPod(web("w2"), "x1");
    c.AddPod(web("w3"), "g2");
    model::Labels selector = {{"app", "web"}};
    if (two_keys) selector["tier"] = "front";
    model::Pod pod = PodBuilder("p")
                         .Label("app", "web")
                         .Label("tier", "front")
                         .NodeSelector("pool", "gpu")
                         .Spread(SpreadOn(kZone, 1, selector))
                         .Build();
    FitChecker checker(pod, c.snapshot());
    EXPECT_TRUE(checker.Fits(c.Index("g1"))) << two_keys;
    EXPECT_EQ(checker.Check(c.Index("g2")).code, FitCode::kTopologySpread) << two_keys;
    // Placed after the checker was built: the same.
    const model::Pod* more = c.AddPod(web("w4"), "x1");
    checker.OnPodAdded(*more, c.Index("x1"));
    EXPECT_TRUE(checker.Fits(c.Index("g1"))) << two_keys;
    EXPECT_TRUE(Fits(pod, c.Index("g1"), c.snapshot()).fits()) << two_keys;
  }
}

TEST(SpreadPolicy, NodeTaintsPolicyIgnoreVsHonor) {
  TestCluster c;
  c.AddNode(NodeBuilder("a1").Zone("a").Build());
  c.AddNode(NodeBuilder("b1").Zone("b").Build());
  c.AddNode(NodeBuilder("t1").Zone("c").Taint("dedicated", "x", TaintEffect::kNoSchedule).Build());
  c.AddPod(Web("w1"), "a1");
  c.AddPod(Web("w2"), "b1");
  auto ignore = SpreadOn(kZone, 1, {{"app", "web"}});  // Ignore is the default
  auto honor = ignore;
  honor.node_taints_policy = InclusionPolicy::kHonor;
  // Ignore: the tainted zone counts with 0 pods.
  EXPECT_EQ(
      Fits(PodBuilder("p").Label("app", "web").Spread(ignore).Build(), c.Index("a1"), c.snapshot())
          .code,
      FitCode::kTopologySpread);
  // Honor: it does not, unless the pod tolerates the taint.
  EXPECT_TRUE(
      Fits(PodBuilder("q").Label("app", "web").Spread(honor).Build(), c.Index("a1"), c.snapshot())
          .fits());
  auto tolerant = PodBuilder("r")
                      .Label("app", "web")
                      .Spread(honor)
                      .Tolerate("dedicated", TolerationOp::kExists);
  EXPECT_EQ(Fits(tolerant.Build(), c.Index("a1"), c.snapshot()).code, FitCode::kTopologySpread);
}

TEST_F(SpreadTest, MatchLabelKeysNarrowTheSelector) {
  c_.AddPod(PodBuilder("v1-a").Label("app", "web").Label("version", "1").Build(), "a1");
  c_.AddPod(PodBuilder("v1-b").Label("app", "web").Label("version", "1").Build(), "a2");
  c_.AddPod(PodBuilder("v2-a").Label("app", "web").Label("version", "2").Build(), "b1");
  auto plain = SpreadOn(kZone, 1, {{"app", "web"}});
  auto keyed = plain;
  keyed.match_label_keys = {"version", "absent-key"};
  auto v2 = [&](const model::TopologySpreadConstraint& c) {
    return PodBuilder("new").Label("app", "web").Label("version", "2").Spread(c).Build();
  };
  EXPECT_EQ(FitOn(v2(plain), "a1").code, FitCode::kTopologySpread);  // 2 + 1 - 0
  EXPECT_TRUE(FitOn(v2(keyed), "a1").fits());                        // 0 + 1 - 0
  EXPECT_EQ(FitOn(v2(keyed), "b1").code, FitCode::kTopologySpread);  // 1 + 1 - 0
}

TEST_F(SpreadTest, OnlySameNamespaceAndNotTerminatingPodsCount) {
  c_.AddPod(Web("x1", "other"), "a1");
  c_.AddPod(Web("x2", "other"), "a2");
  c_.AddPod(PodBuilder("leaving").Label("app", "web").Terminating().Build(), "a1");
  auto pod = Incoming(SpreadOn(kZone, 1, {{"app", "web"}}));
  EXPECT_TRUE(FitOn(pod, "a1").fits());
  c_.AddPod(Web("real"), "a2");
  EXPECT_EQ(FitOn(pod, "a1").code, FitCode::kTopologySpread);
}

TEST_F(SpreadTest, SelfMatchAndSelectorEdgeCases) {
  c_.AddPod(Web("w1"), "a1");
  c_.AddPod(Web("w2"), "a2");
  c_.AddPod(Web("w3"), "b1");
  c_.AddPod(Web("w4"), "c1");
  auto c = SpreadOn(kZone, 1, {{"app", "web"}});
  // A pod outside its own selector adds nothing: 2 + 0 - 1 <= 1.
  EXPECT_TRUE(FitOn(PodBuilder("db").Label("app", "db").Spread(c).Build(), "a1").fits());
  // ScheduleAnyway is not a filter.
  auto soft = c;
  soft.when_unsatisfiable = model::WhenUnsatisfiable::kScheduleAnyway;
  c_.AddPod(Web("w5"), "a1");
  EXPECT_TRUE(FitOn(Incoming(soft), "a1").fits());
  EXPECT_EQ(FitOn(Incoming(c), "a1").code, FitCode::kTopologySpread);
  // As in kube-scheduler, an empty selector counts no placed pods (only the pod itself).
  auto empty = c;
  empty.label_selector = {};
  EXPECT_TRUE(FitOn(Incoming(empty), "a1").fits());
}

TEST_F(SpreadTest, SpreadIsCheckedBeforeInterPodAffinity) {
  c_.AddPod(Web("w1"), "a1");
  auto pod = PodBuilder("new")
                 .Label("app", "web")
                 .Spread(SpreadOn(kZone, 1, {{"app", "web"}}))
                 .Affinity(Term(kZone, {{"app", "nothing"}}))
                 .Build();
  EXPECT_EQ(FitOn(pod, "a1").code, FitCode::kTopologySpread);
  EXPECT_EQ(FitOn(pod, "b1").code, FitCode::kPodAffinity);
}

TEST_F(SpreadTest, TemplatesSeeTheirZoneCountsAndAreANewHost) {
  c_.AddPod(Web("w1"), "a1");
  c_.AddPod(Web("w2"), "a1");
  c_.AddPod(Web("w3"), "a2");
  c_.AddPod(Web("w4"), "b1");
  c_.AddPod(Web("w5"), "c1");
  auto by_host = Incoming(SpreadOn(kHost, 1, {{"app", "web"}}));
  FitChecker host_checker(by_host, c_.snapshot());
  EXPECT_EQ(host_checker.Check(c_.Index("a1")).code, FitCode::kTopologySpread);
  EXPECT_TRUE(host_checker.Check(c_.Index("b1")).fits());
  // A new node is a new hostname domain with no pods, even with a template lacking the label.
  auto tmpl = NodeBuilder("tmpl").Zone("a").NoLabel(model::kLabelHostname).Build();
  EXPECT_TRUE(host_checker.CheckTemplate(tmpl, {}, 0).fits());

  auto by_zone = Incoming(SpreadOn(kZone, 1, {{"app", "web"}}));
  FitChecker zone_checker(by_zone, c_.snapshot());
  EXPECT_EQ(zone_checker.CheckTemplate(tmpl, {}, 0).code, FitCode::kTopologySpread);  // 3+1-1
  EXPECT_TRUE(zone_checker.CheckTemplate(NodeBuilder("t").Zone("b").Build(), {}, 0).fits());
  EXPECT_TRUE(zone_checker.CheckTemplate(NodeBuilder("t").Zone("new").Build(), {}, 0).fits());
  FitResult missing = zone_checker.CheckTemplate(NodeBuilder("t").Build(), {}, 0);
  EXPECT_EQ(missing.code, FitCode::kTopologySpreadMissingLabel);
  EXPECT_TRUE(missing.unresolvable());

  // minDomains 4 with 3 zones: the minimum is 0, so zone b's node fails (1 + 1 - 0); a
  // template in a new zone opens a fourth, empty domain and fits (0 + 1 - 0).
  auto c = SpreadOn(kZone, 1, {{"app", "web"}});
  c.min_domains = 4;
  auto pod = Incoming(c);
  FitChecker min_checker(pod, c_.snapshot());
  EXPECT_TRUE(min_checker.CheckTemplate(NodeBuilder("t").Zone("d").Build(), {}, 0).fits());
  EXPECT_EQ(min_checker.Check(c_.Index("b1")).code, FitCode::kTopologySpread);
}

// Scale-up's offered domains (FitChecker::OfferDomain): a zone a pool template offers counts with
// no pods, so the minimum is 0 until it has some; templates the policies exclude, zones that
// already count, and hostname constraints are unaffected.
TEST(SpreadOffers, AnOfferedZoneHoldsTheMinimumAtZero) {
  TestCluster c;
  c.AddNode(NodeBuilder("a1").Zone("a").Build());
  c.AddPod(Web("w1"), "a1");
  auto pod = PodBuilder("new")
                 .Label("app", "web")
                 .Spread(SpreadOn(kZone, 1, {{"app", "web"}}))
                 .NodeAffinityTerm({testing::Req(kZone, model::SelectorOp::kIn, {"a", "b"})})
                 .Build();
  FitChecker checker(pod, c.snapshot());
  EXPECT_TRUE(checker.Check(c.Index("a1")).fits());  // zone a is the only domain: 1 + 1 - 1
  checker.OfferDomain(NodeBuilder("t-a").Zone("a").Build());  // already counted: no change
  EXPECT_TRUE(checker.Check(c.Index("a1")).fits());
  checker.OfferDomain(NodeBuilder("t-c").Zone("c").Build());  // node affinity excludes zone c
  checker.OfferDomain(NodeBuilder("t-none").NoLabel(kZone).Build());
  EXPECT_TRUE(checker.Check(c.Index("a1")).fits());
  checker.OfferDomain(NodeBuilder("t-b").Zone("b").Build());
  EXPECT_EQ(checker.Check(c.Index("a1")).code, FitCode::kTopologySpread);  // 1 + 1 - 0
  EXPECT_TRUE(checker.CheckTemplate(NodeBuilder("t-b").Zone("b").Build(), {}, 0).fits());
  // Once zone b has a node with a matching pod the minimum is 1 again.
  c.AddNode(NodeBuilder("b1").Zone("b").Build());
  checker.OnNodeAdded(c.Index("b1"));
  checker.OnPodAdded(*c.AddPod(Web("w2"), "b1"), c.Index("b1"));
  EXPECT_TRUE(checker.Check(c.Index("a1")).fits());

  auto host =
      PodBuilder("h").Label("app", "web").Spread(SpreadOn(kHost, 1, {{"app", "web"}})).Build();
  FitChecker host_checker(host, c.snapshot());
  host_checker.OfferDomain(NodeBuilder("t-c").Zone("c").Build());
  EXPECT_TRUE(host_checker.Check(c.Index("a1")).fits());  // every host has 1
}

// With no node in the zones at all, kube-scheduler skips the constraint; offered zones make it
// count from the first pod.
TEST(SpreadOffers, FromZeroTheConstraintIsEnforced) {
  TestCluster c;
  auto pod =
      PodBuilder("new").Label("app", "web").Spread(SpreadOn(kZone, 1, {{"app", "web"}})).Build();
  FitChecker checker(pod, c.snapshot());
  checker.OfferDomain(NodeBuilder("t-a").Zone("a").Build());
  checker.OfferDomain(NodeBuilder("t-b").Zone("b").Build());
  c.AddNode(NodeBuilder("a1").Zone("a").Build());
  checker.OnNodeAdded(c.Index("a1"));
  EXPECT_TRUE(checker.Check(c.Index("a1")).fits());  // 0 + 1 - 0
  checker.OnPodAdded(*c.AddPod(Web("w1"), "a1"), c.Index("a1"));
  EXPECT_EQ(checker.Check(c.Index("a1")).code, FitCode::kTopologySpread);  // 1 + 1 - 0
}

}  // namespace
}  // namespace tidepool::sched
