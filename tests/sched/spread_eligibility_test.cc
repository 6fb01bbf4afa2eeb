// A spread constraint whose inclusion policies pass every node with its key reads its eligible
// domains from the snapshot's TopologyIndex (live nodes per domain) instead of visiting every
// node. Checked over seeded random histories (nodes added and removed, pods placed, forks,
// reverts, commits): the live counts equal a recount, and a probe on that path gives the verdicts
// of its twin, whose nodeTaintsPolicy Honor (no node here has a taint, so the same nodes count)
// makes the checker visit every node; also through incremental updates.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "sched/fit.h"
#include "tests/sched/builders.h"
#include "tests/sched/history.h"

namespace tidepool::sched {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::RemoveForkOrClose;
using testing::SpreadOn;
using testing::TestCluster;

const std::string kZone(model::kLabelZone);
const std::string kHost(model::kLabelHostname);

std::string Pick(std::mt19937& rng, int n, const char* prefix) {
  return prefix + std::to_string(rng() % n);
}

// Some nodes lack the zone, a few the hostname label.
model::Node RandomNode(std::mt19937& rng, const std::string& name) {
  NodeBuilder nb(name);
  if (rng() % 4 != 0) nb.Zone(Pick(rng, 4, "zone-"));
  if (rng() % 8 == 0) nb.NoLabel(kHost);
  return nb.Build();
}

// Zone and hostname spread, maxSkew 1 and 2, one with minDomains.
std::vector<model::Pod> Probes() {
  std::vector<model::Pod> probes;
  auto probe = [&](const std::string& name, model::TopologySpreadConstraint c) {
    probes.push_back(
        PodBuilder(name).Requests({{"cpu", "100m"}}).Label("app", "a1").Spread(c).Build());
  };
  probe("zone", SpreadOn(kZone, 1, {{"app", "a1"}}));
  probe("zone-other", SpreadOn(kZone, 2, {{"app", "a0"}}));
  probe("host", SpreadOn(kHost, 1, {{"app", "a1"}}));
  model::TopologySpreadConstraint min_domains = SpreadOn(kZone, 1, {{"app", "a1"}});
  min_domains.min_domains = 3;
  probe("zone-min-domains", min_domains);
  return probes;
}

model::Pod Twin(model::Pod p) {
  for (auto& c : p.mutable_topology_spread_constraints())
    c.node_taints_policy = model::InclusionPolicy::kHonor;
  p.meta.name += "-twin";
  p.Finalize();
  return p;
}

// TopologyIndex::LiveNodes against a count of the live node slots per domain.
void ExpectLiveNodesAgree(const ClusterSnapshot& s, const std::string& key,
                          const std::string& where) {
  const TopologyIndex& topo = s.Topology(key);
  std::vector<int32_t> counted(topo.DomainCount(), 0);
  for (NodeIndex i = 0; i < s.NodeSlots(); ++i) {
    if (!s.Get(i).removed && topo.DomainOf(i) != TopologyIndex::kNoDomain)
      ++counted[topo.DomainOf(i)];
  }
  for (uint32_t d = 0; d < topo.DomainCount(); ++d)
    ASSERT_EQ(topo.LiveNodes(d), counted[d]) << where << " " << key << " " << topo.Value(d);
}

void ExpectSameVerdicts(const FitChecker& a, const FitChecker& b, const ClusterSnapshot& s,
                        const std::vector<model::Node>& templates, const std::string& where) {
  for (NodeIndex i = 0; i < s.NodeSlots(); ++i) {
    if (s.Get(i).removed) continue;
    ASSERT_EQ(a.Check(i).code, b.Check(i).code)
        << where << " probe " << a.pod().meta.name << " node " << s.Get(i).node->name();
  }
  for (const model::Node& t : templates) {
    ASSERT_EQ(a.CheckTemplate(t, {}, 0).code, b.CheckTemplate(t, {}, 0).code)
        << where << " probe " << a.pod().meta.name << " template " << t.name();
  }
  ASSERT_EQ(a.SpreadLoosened(), b.SpreadLoosened()) << where << " " << a.pod().meta.name;
}

TEST(SpreadEligibility, FromLiveNodesEqualsAVisitOfEveryNode) {
  std::vector<model::Pod> probes = Probes();
  std::vector<model::Pod> twins;
  for (const model::Pod& p : probes) twins.push_back(Twin(p));
  // New nodes in a known zone, a zone no node has yet, and without a zone.
  std::vector<model::Node> templates = {NodeBuilder("t-known").Zone("zone-1").Build(),
                                        NodeBuilder("t-new").Zone("zone-9").Build(),
                                        NodeBuilder("t-none").Build()};
  int rises = 0;
  for (int seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    TestCluster c;
    int nodes = 0;
    for (; nodes < 4; ++nodes) c.AddNode(RandomNode(rng, "node-" + std::to_string(nodes)));
    // Checkers kept up to date through adds only; rebuilt after any other change.
    std::vector<FitChecker> kept, kept_twins;
    std::vector<uint64_t> built;  // kept[k].SpreadLoosened() when it was built
    auto rebuild = [&] {
      kept.clear();
      kept_twins.clear();
      built.clear();
      for (size_t k = 0; k < probes.size(); ++k) {
        kept.emplace_back(probes[k], c.snapshot());
        kept_twins.emplace_back(twins[k], c.snapshot());
        built.push_back(kept.back().SpreadLoosened());
      }
    };
    rebuild();
    int depth = 0;
    for (int step = 0; step < 80; ++step) {
      ClusterSnapshot& s = c.snapshot();
      bool added_only = false;
      const unsigned choice = rng() % 8;
      switch (choice) {
        case 0: {
          NodeIndex i = c.AddNode(RandomNode(rng, "node-" + std::to_string(nodes++)));
          for (FitChecker& k : kept) k.OnNodeAdded(i);
          for (FitChecker& k : kept_twins) k.OnNodeAdded(i);
          added_only = true;
          break;
        }
        case 1:
        case 2:
        case 3:
          RemoveForkOrClose(s, rng, choice, nodes, depth);
          break;
        default: {
          NodeIndex i = static_cast<NodeIndex>(rng() % s.NodeSlots());
          if (s.Get(i).removed) break;
          const model::Pod* p = c.Keep(
              PodBuilder("p-" + std::to_string(step)).Label("app", Pick(rng, 2, "a")).Build());
          (void)s.AddPod(p, i);
          for (FitChecker& k : kept) k.OnPodAdded(*p, i);
          for (FitChecker& k : kept_twins) k.OnPodAdded(*p, i);
          added_only = true;
          break;
        }
      }
      std::string where = "seed " + std::to_string(seed) + " step " + std::to_string(step);
      ExpectLiveNodesAgree(s, kZone, where);
      ExpectLiveNodesAgree(s, kHost, where);
      for (size_t k = 0; k < probes.size(); ++k) {
        ExpectSameVerdicts(FitChecker(probes[k], s), FitChecker(twins[k], s), s, templates, where);
        if (!added_only) continue;
        ExpectSameVerdicts(kept[k], kept_twins[k], s, templates, where + " (kept)");
        rises += kept[k].SpreadLoosened() > built[k] ? 1 : 0;
      }
      if (HasFatalFailure()) return;
      if (!added_only) rebuild();
    }
  }
  // The kept checkers saw their minimum rise: the comparison covers the incremental path.
  EXPECT_GT(rises, 0);
}

}  // namespace
}  // namespace tidepool::sched
