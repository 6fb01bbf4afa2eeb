// The snapshot's label indexes (LabelCounts, AntiAffinityIndex) must give the inter-pod filters
// exactly what reading every placed pod gives, through adds, removals, forks and reverts. Checked
// over seeded random clusters: a probe whose selector the indexes serve is compared with its twin
// whose selector (one redundant requirement more) is matched pod by pod, and a snapshot with a
// history of changes is compared with one built from scratch in the same final state.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/fit.h"
#include "tests/sched/builders.h"
#include "tests/sched/history.h"

namespace tidepool::sched {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::RemoveForkOrClose;
using testing::Req;
using testing::SpreadOn;
using testing::Term;
using testing::TestCluster;

std::string Pick(std::mt19937& rng, int n, const char* prefix) {
  return prefix + std::to_string(rng() % n);
}

// A pod of one of six shapes. Placed pods' anti-affinity terms take every form the index files
// differently: matchLabels, In with two values, Exists, NotIn only.
model::Pod Shape(std::mt19937& rng, const std::string& name) {
  std::string app = Pick(rng, 3, "a");
  PodBuilder b(name, rng() % 4 == 0 ? "other" : "default");
  b.Requests({{"cpu", "100m"}, {"memory", "64Mi"}}).Label("app", app);
  if (rng() % 3 == 0) b.Label("tier", Pick(rng, 2, "t"));
  if (rng() % 6 == 0) b.Terminating();
  std::string zone(model::kLabelZone);
  std::string host(model::kLabelHostname);
  std::string key = rng() % 2 == 0 ? zone : host;
  switch (rng() % 6) {
    case 0:
      break;
    case 1:
      b.Spread(SpreadOn(key, 1, {{"app", app}}));
      break;
    case 2:
      b.Affinity(Term(zone, {{"app", app}}));
      break;
    case 3:
      b.AntiAffinity(Term(key, {{"app", app}}));
      break;
    case 4: {
      model::PodAffinityTerm t = Term(key, {});
      t.label_selector.match_expressions = {Req("app", model::SelectorOp::kIn, {app, "a9"})};
      b.AntiAffinity(t);
      break;
    }
    default: {
      model::PodAffinityTerm t = Term(key, {});
      t.label_selector.match_expressions = {
          Req(rng() % 2 == 0 ? "tier" : "app",
              rng() % 2 == 0 ? model::SelectorOp::kExists : model::SelectorOp::kNotIn, {"t0"})};
      b.AntiAffinity(t);
      break;
    }
  }
  return b.Build();
}

model::Node RandomNode(std::mt19937& rng, const std::string& name) {
  NodeBuilder nb(name);
  if (rng() % 5 != 0) nb.Zone(Pick(rng, 3, "zone-"));
  return nb.Build();
}

// Probes whose selectors the label counts serve: zone and hostname spread, zone affinity,
// hostname anti-affinity, one selecting an app value in another namespace, one with In, and a
// spread on another key.
std::vector<model::Pod> Probes() {
  std::string zone(model::kLabelZone);
  std::string host(model::kLabelHostname);
  std::vector<model::Pod> probes;
  auto probe = [&](const std::string& name) {
    PodBuilder b(name);
    b.Requests({{"cpu", "100m"}}).Label("app", "a1");
    return b;
  };
  probes.push_back(probe("spread-zone").Spread(SpreadOn(zone, 1, {{"app", "a1"}})).Build());
  probes.push_back(probe("spread-host").Spread(SpreadOn(host, 1, {{"app", "a0"}})).Build());
  probes.push_back(probe("affinity").Affinity(Term(zone, {{"app", "a2"}})).Build());
  probes.push_back(probe("anti").AntiAffinity(Term(host, {{"app", "a0"}})).Build());
  probes.push_back(
      probe("anti-other").AntiAffinity(Term(zone, {{"app", "a1"}}, {"other"})).Build());
  model::PodAffinityTerm in = Term(zone, {});
  in.label_selector.match_expressions = {Req("app", model::SelectorOp::kIn, {"a0", "a2"})};
  probes.push_back(probe("affinity-in").Affinity(in).Build());
  probes.push_back(probe("spread-tier").Spread(SpreadOn(zone, 1, {{"tier", "t1"}})).Build());
  return probes;
}

// The probe with one redundant requirement (app Exists) on every selector: the same pods match,
// but a selector of two requirements is matched pod by pod.
model::Pod Twin(model::Pod p) {
  auto widen = [](model::LabelSelector& s) {
    s.match_expressions.push_back(Req("app", model::SelectorOp::kExists));
  };
  for (auto& c : p.mutable_topology_spread_constraints()) widen(c.label_selector);
  for (auto& t : p.mutable_affinity().pod_affinity_required) widen(t.label_selector);
  for (auto& t : p.mutable_affinity().pod_anti_affinity_required) widen(t.label_selector);
  p.meta.name += "-twin";
  p.Finalize();
  return p;
}

void ExpectSameVerdicts(const model::Pod& a, const ClusterSnapshot& sa, const model::Pod& b,
                        const ClusterSnapshot& sb, const std::string& where) {
  FitChecker ca(a, sa);
  FitChecker cb(b, sb);
  for (NodeIndex i = 0; i < sa.NodeSlots(); ++i) {
    if (sa.Get(i).removed) continue;
    NodeIndex j = sb.FindNode(sa.Get(i).node->name());
    ASSERT_NE(j, kNoNode) << where;
    ASSERT_EQ(ca.Check(i).code, cb.Check(j).code)
        << where << " probe " << a.meta.name << " node " << sa.Get(i).node->name();
  }
}

// LabelCounts::NodesWith lists, once each, exactly the node slots whose counts have the value.
void ExpectNodesWithAgree(const LabelCounts& labels, size_t slots, const std::string& where) {
  for (uint32_t v = 0; v < labels.ValueCount(); ++v) {
    std::vector<uint32_t> listed = labels.NodesWith(v);
    std::sort(listed.begin(), listed.end());
    std::vector<uint32_t> counted;
    for (uint32_t i = 0; i < slots; ++i)
      if (labels.Count(i, v, /*terminating=*/true) > 0) counted.push_back(i);
    ASSERT_EQ(listed, counted) << where << " " << labels.ns() << "/" << labels.key() << " value "
                               << v;
  }
}

TEST(LabelIndexes, GiveWhatReadingEveryPodGives) {
  std::vector<model::Pod> probes = Probes();
  std::vector<model::Pod> twins;
  for (const model::Pod& p : probes) twins.push_back(Twin(p));
  for (int seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    TestCluster c;
    std::vector<std::pair<const model::Pod*, std::string>> placed;
    int nodes = 0;
    for (; nodes < 5; ++nodes) c.AddNode(RandomNode(rng, "node-" + std::to_string(nodes)));
    // Build the indexes early, so every change below has to keep them up to date.
    for (size_t k = 0; k + 1 < probes.size(); ++k) FitChecker warm(probes[k], c.snapshot());
    int depth = 0;
    for (int step = 0; step < 60; ++step) {
      ClusterSnapshot& s = c.snapshot();
      const unsigned choice = rng() % 8;
      switch (choice) {
        case 0:
          c.AddNode(RandomNode(rng, "node-" + std::to_string(nodes++)));
          break;
        case 1:
        case 2:
        case 3:
          RemoveForkOrClose(s, rng, choice, nodes, depth);
          break;
        case 4: {
          NodeIndex i = static_cast<NodeIndex>(rng() % s.NodeSlots());
          if (!s.Get(i).removed && !s.Get(i).pods.empty())
            (void)s.RemovePod(s.Get(i).pods[rng() % s.Get(i).pods.size()], i);
          break;
        }
        default: {
          NodeIndex i = static_cast<NodeIndex>(rng() % s.NodeSlots());
          if (!s.Get(i).removed) {
            const model::Pod* p = c.Keep(Shape(rng, "p-" + std::to_string(step)));
            (void)s.AddPod(p, i);
          }
          break;
        }
      }
      std::string where = "seed " + std::to_string(seed) + " step " + std::to_string(step);
      // The last probe's key is first indexed halfway, inside whatever layers are open then.
      size_t active = step < 30 ? probes.size() - 1 : probes.size();
      for (size_t k = 0; k < active; ++k) ExpectSameVerdicts(probes[k], s, twins[k], s, where);
      // The indexes the probes built (reading one builds it).
      ExpectNodesWithAgree(s.Labels("default", "app"), s.NodeSlots(), where);
      ExpectNodesWithAgree(s.Labels("other", "app"), s.NodeSlots(), where);
      if (active == probes.size())
        ExpectNodesWithAgree(s.Labels("default", "tier"), s.NodeSlots(), where);
      // Placed pods' anti-affinity against each probe, on a snapshot built from scratch.
      TestCluster fresh;
      for (NodeIndex i = 0; i < s.NodeSlots(); ++i) {
        if (s.Get(i).removed) continue;
        fresh.AddNode(*s.Get(i).node);
        NodeIndex j = fresh.Index(s.Get(i).node->name());
        for (const model::Pod* p : s.Get(i).pods) (void)fresh.snapshot().AddPod(p, j);
      }
      for (size_t k = 0; k < active; ++k)
        ExpectSameVerdicts(probes[k], s, probes[k], fresh.snapshot(), where);
      if (HasFatalFailure()) return;
    }
  }
}

// An index first built while a node is removed inside a layer must count the node's pods again
// when a revert brings it back.
TEST(LabelIndexes, CountANodeRestoredByARevert) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Zone("z1").Build());
  c.AddNode(NodeBuilder("n2").Zone("z2").Build());
  c.AddPod(PodBuilder("web").Label("app", "web").Build(), "n1");
  std::string zone(model::kLabelZone);
  model::Pod spread = PodBuilder("s").Spread(SpreadOn(zone, 0, {{"app", "web"}})).Build();
  c.snapshot().Fork();
  ASSERT_TRUE(c.snapshot().RemoveNode("n1").has_value());
  { FitChecker built_now(spread, c.snapshot()); }
  c.snapshot().Revert();
  FitChecker checker(spread, c.snapshot());
  EXPECT_FALSE(checker.Check(c.Index("n1")).fits());  // z1 holds the web pod: 1 - 0 > 0
  EXPECT_TRUE(checker.Check(c.Index("n2")).fits());
}

// A terminating pod counts for inter-pod affinity but not for topology spread, as in
// kube-scheduler; the label counts keep both.
TEST(LabelIndexes, TerminatingPodsCountForAffinityOnly) {
  TestCluster c;
  c.AddNode(NodeBuilder("n1").Zone("z1").Build());
  c.AddNode(NodeBuilder("n2").Zone("z2").Build());
  c.AddPod(PodBuilder("old").Label("app", "web").Terminating().Build(), "n1");
  model::Pod affinity =
      PodBuilder("a").Affinity(Term(std::string(model::kLabelZone), {{"app", "web"}})).Build();
  FitChecker ca(affinity, c.snapshot());
  EXPECT_TRUE(ca.Check(c.Index("n1")).fits());
  EXPECT_FALSE(ca.Check(c.Index("n2")).fits());
  // Spread: with a live pod in z2, z1 counts 0 (its pod is terminating) and z2 counts 1.
  c.AddPod(PodBuilder("live").Label("app", "web").Build(), "n2");
  model::Pod spread = PodBuilder("s")
                          .Label("app", "web")
                          .Spread(SpreadOn(std::string(model::kLabelZone), 1, {{"app", "web"}}))
                          .Build();
  FitChecker cs(spread, c.snapshot());
  EXPECT_TRUE(cs.Check(c.Index("n1")).fits());   // 0 + 1 - min 0 = 1
  EXPECT_FALSE(cs.Check(c.Index("n2")).fits());  // 1 + 1 - min 0 = 2 > maxSkew
}

}  // namespace
}  // namespace tidepool::sched
