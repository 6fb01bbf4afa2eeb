// ClusterModel: deltas applied one by one leave exactly the snapshot a rebuild from the same
// objects gives (nodes, pods per node, per-node totals, topology and label counts, what fits
// where, and the pods without a node), over thousands of random sequences; and the hand cases a
// watch produces.
#include "sched/cluster_model.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sched/fit.h"
#include "tests/sched/builders.h"

namespace tidepool::sched {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::SpreadOn;
using testing::Term;

std::shared_ptr<const model::Node> Node(NodeBuilder b) {
  return std::make_shared<const model::Node>(b.Build());
}
std::shared_ptr<const model::Pod> Pod(PodBuilder b) {
  return std::make_shared<const model::Pod>(b.Build());
}

// What a snapshot holds per live node, by name.
struct NodeView {
  const model::Node* node = nullptr;
  std::multiset<const model::Pod*> pods;
  model::Resources requested, staying;
  int32_t anti = 0, affinity = 0;
  friend bool operator==(const NodeView&, const NodeView&) = default;
};

std::map<std::string, NodeView> View(const ClusterSnapshot& s) {
  std::map<std::string, NodeView> out;
  for (NodeIndex i = 0; i < s.NodeSlots(); ++i) {
    const NodeInfo& info = s.Get(i);
    if (info.removed) continue;
    NodeView& v = out[info.node->name()];
    v.node = info.node;
    v.pods.insert(info.pods.begin(), info.pods.end());
    v.requested = info.requested;
    v.staying = info.staying_requested;
    // The staying part is what its pods say, not only what a rebuild says.
    model::Resources staying;
    for (const model::Pod* p : info.pods)
      if (StaysOnDrain(*p)) staying += p->requests;
    EXPECT_EQ(info.staying_requested, staying) << info.node->name();
    v.anti = info.pods_with_required_anti_affinity;
    v.affinity = info.pods_with_required_affinity;
  }
  return out;
}

const std::vector<std::string> kZones = {"z0", "z1", "z2"};
const std::vector<std::string> kApps = {"a", "b"};

// Live nodes per zone and, per node name, the pods of "default" per app value (live and with
// terminating ones), as the snapshot's indexes count them.
std::vector<int64_t> Counts(const ClusterSnapshot& s) {
  std::vector<int64_t> out;
  const TopologyIndex& zones = s.Topology(model::kLabelZone);
  for (const std::string& z : kZones) {
    uint32_t d = zones.Find(z);
    out.push_back(d == TopologyIndex::kNoDomain ? 0 : zones.LiveNodes(d));
  }
  const LabelCounts& apps = s.Labels("default", "app");
  std::map<std::string, NodeIndex> by_name;
  for (NodeIndex i = 0; i < s.NodeSlots(); ++i)
    if (!s.Get(i).removed) by_name[s.Get(i).node->name()] = i;
  for (const auto& [name, i] : by_name) {
    for (const std::string& app : kApps) {
      uint32_t v = apps.Find(app);
      for (bool terminating : {false, true})
        out.push_back(v == LabelCounts::kNoValue ? 0 : apps.Count(i, v, terminating));
    }
  }
  return out;
}

// The node names each probe pod fits, by the scheduler's filters.
std::vector<std::set<std::string>> Fits(const ClusterSnapshot& s,
                                        const std::vector<model::Pod>& probes) {
  std::vector<std::set<std::string>> out;
  for (const model::Pod& probe : probes) {
    FitChecker checker(probe, s);
    std::set<std::string>& fits = out.emplace_back();
    for (NodeIndex i = 0; i < s.NodeSlots(); ++i)
      if (!s.Get(i).removed && checker.Fits(i)) fits.insert(s.Get(i).node->name());
  }
  return out;
}

std::vector<model::Pod> Probes() {
  std::vector<model::Pod> p;
  p.push_back(PodBuilder("probe-plain").Requests({{"cpu", "1500m"}}).Build());
  p.push_back(PodBuilder("probe-spread")
                  .Label("app", "a")
                  .Spread(SpreadOn(std::string(model::kLabelZone), 1, {{"app", "a"}}))
                  .Build());
  p.push_back(PodBuilder("probe-anti")
                  .Label("app", "b")
                  .AntiAffinity(Term(std::string(model::kLabelHostname), {{"app", "b"}}))
                  .Build());
  p.push_back(PodBuilder("probe-affinity")
                  .Affinity(Term(std::string(model::kLabelZone), {{"app", "a"}}))
                  .Build());
  return p;
}

// The objects the deltas describe, kept the plain way, and the snapshot rebuilt from them.
struct Truth {
  std::map<std::string, std::shared_ptr<const model::Node>> nodes;
  std::map<std::string, std::shared_ptr<const model::Pod>> pods;
  // When each pod now Succeeded became so, counted in deltas that made a pod Succeeded.
  std::map<std::string, uint64_t> succeeded_at;
  uint64_t last_succeeded = 0;

  void FileSucceeded() {
    std::erase_if(succeeded_at, [&](const auto& e) {
      auto it = pods.find(e.first);
      return it == pods.end() || it->second->phase != model::PodPhase::kSucceeded;
    });
    for (const auto& [key, pod] : pods)
      if (pod->phase == model::PodPhase::kSucceeded && !succeeded_at.contains(key))
        succeeded_at[key] = ++last_succeeded;
  }
  // The pods that became Succeeded after `cursor`, in that order.
  std::vector<const model::Pod*> SucceededSince(uint64_t cursor) const {
    std::map<uint64_t, const model::Pod*> in_order;
    for (const auto& [key, at] : succeeded_at)
      if (at > cursor) in_order[at] = pods.at(key).get();
    std::vector<const model::Pod*> out;
    for (const auto& [at, pod] : in_order) out.push_back(pod);
    return out;
  }

  void Rebuild(ClusterSnapshot& s) const {
    for (const auto& [name, node] : nodes) TIDEPOOL_CHECK(s.AddNode(node.get()).has_value());
    for (const auto& [key, pod] : pods) {
      if (pod->node_name.empty() || pod->IsTerminal() || !nodes.contains(pod->node_name)) continue;
      TIDEPOOL_CHECK(s.AddPod(pod.get(), pod->node_name).has_value());
    }
  }
};

std::vector<std::string> NodeNames(const Truth& truth) {
  std::vector<std::string> names;
  for (const auto& [name, node] : truth.nodes) names.push_back(name);
  return names;
}

void ExpectSame(const ClusterModel& model, const Truth& truth,
                const std::vector<model::Pod>& probes, const std::string& where) {
  ClusterSnapshot rebuilt;
  rebuilt.KeepStayingSums();  // as the model's
  truth.Rebuild(rebuilt);
  const ClusterSnapshot& s = model.snapshot();
  ASSERT_EQ(View(s), View(rebuilt)) << where;
  ASSERT_EQ(s.NodeCount(), rebuilt.NodeCount()) << where;
  ASSERT_EQ(s.PodCount(), rebuilt.PodCount()) << where;
  ASSERT_EQ(s.PodsWithRequiredAntiAffinity(), rebuilt.PodsWithRequiredAntiAffinity()) << where;
  ASSERT_EQ(s.PodsWithRequiredAffinity(), rebuilt.PodsWithRequiredAffinity()) << where;
  ASSERT_EQ(Counts(s), Counts(rebuilt)) << where;
  ASSERT_EQ(Fits(s, probes), Fits(rebuilt, probes)) << where;
  ASSERT_EQ(model.PodCount(), truth.pods.size()) << where;
  std::vector<std::string> by_name;
  for (NodeIndex i : model.NodesByName()) {
    ASSERT_EQ(model.NodesByName()[model.PlaceByName(i)], i) << where;
    by_name.push_back(s.Get(i).node->name());
  }
  ASSERT_EQ(by_name, NodeNames(truth)) << where;
  // The pods a pass may place, in key order: what a read of every pod would find.
  std::vector<const model::Pod*> unbound;
  // And the pods the loop learns runtimes from.
  std::vector<const model::Pod*> succeeded;
  for (const auto& [key, pod] : truth.pods) {
    if (pod->WaitsForNode()) unbound.push_back(pod.get());
    if (pod->phase == model::PodPhase::kSucceeded) succeeded.push_back(pod.get());
  }
  ASSERT_EQ(model.Unbound(), unbound) << where;
  ASSERT_EQ(model.Succeeded(), succeeded) << where;
}

// One random delta, applied to the model and to the truth alike (or refused by both).
class Deltas {
 public:
  explicit Deltas(uint32_t seed) : rng_(seed) {}

  std::string Apply(ClusterModel& model, Truth& truth) {
    switch (Pick(10)) {
      case 0:
      case 1:
      case 2:
        return SetNode(model, truth);
      case 3:
        return DeleteNode(model, truth);
      case 4:
        return DeletePod(model, truth);
      default:
        return SetPod(model, truth);
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::string NodeName() { return "n" + std::to_string(Pick(7)); }

  std::string SetNode(ClusterModel& model, Truth& truth) {
    NodeBuilder b(NodeName());
    if (Pick(4) != 0) b.Zone(kZones[Pick(3)]);
    if (Pick(6) == 0) b.Unschedulable();
    b.Allocatable({{"cpu", std::to_string(2 << Pick(3))}, {"memory", "16Gi"}, {"pods", "8"}});
    auto node = Node(b);
    EXPECT_TRUE(model.SetNode(node).has_value());
    truth.nodes[node->name()] = node;
    return "set node " + node->name();
  }

  std::string DeleteNode(ClusterModel& model, Truth& truth) {
    std::string name = NodeName();
    bool known = truth.nodes.erase(name) > 0;
    EXPECT_EQ(model.DeleteNode(name).has_value(), known) << name;
    return "delete node " + name;
  }

  std::string SetPod(ClusterModel& model, Truth& truth) {
    std::string ns = Pick(4) == 0 ? "other" : "default";
    PodBuilder b("p" + std::to_string(Pick(20)), ns);
    b.Requests({{"cpu", std::to_string(100 * (1 + Pick(10))) + "m"}});
    b.Label("app", kApps[Pick(2)]);
    if (Pick(3) != 0) b.NodeName(Pick(8) == 0 ? "n9" : NodeName());  // n9: never a node
    const model::PodPhase phases[] = {model::PodPhase::kRunning, model::PodPhase::kPending,
                                      model::PodPhase::kSucceeded, model::PodPhase::kFailed};
    b.Phase(phases[Pick(6) < 3 ? 0 : Pick(4)]);
    if (Pick(8) == 0) b.Terminating();
    if (Pick(6) == 0) b.DaemonSet("ds");
    if (Pick(9) == 0) b.Mirror();
    if (Pick(5) == 0) b.AntiAffinity(Term(std::string(model::kLabelHostname), {{"app", "b"}}));
    if (Pick(7) == 0) b.Affinity(Term(std::string(model::kLabelZone), {{"app", "a"}}));
    auto pod = Pod(b);
    EXPECT_TRUE(model.SetPod(pod).has_value());
    truth.pods[pod->Key()] = pod;
    return "set pod " + pod->Key() + " on '" + pod->node_name + "'";
  }

  std::string DeletePod(ClusterModel& model, Truth& truth) {
    std::string ns = Pick(4) == 0 ? "other" : "default";
    std::string name = "p" + std::to_string(Pick(20));
    bool known = truth.pods.erase(ns + "/" + name) > 0;
    EXPECT_EQ(model.DeletePod(ns, name).has_value(), known) << ns << "/" << name;
    return "delete pod " + ns + "/" + name;
  }

  std::mt19937 rng_;
};

TEST(ClusterModel, RandomDeltasLeaveWhatARebuildGives) {
  const std::vector<model::Pod> probes = Probes();
  uint64_t compactions = 0;
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    ClusterModel model;
    Truth truth;
    Deltas deltas(seed);
    const int length = seed % 10 == 0 ? 400 : 1 + static_cast<int>(seed % 60);
    std::string last;
    uint64_t cursor = 0, truth_cursor = 0;  // a reader of the pods that became Succeeded
    for (int k = 0; k < length; ++k) {
      const std::vector<std::string> names_before = NodeNames(truth);
      const uint64_t version_before = model.NamesVersion();
      last = deltas.Apply(model, truth);
      truth.FileSucceeded();
      if (k % 7 == 3) {
        ASSERT_EQ(model.SucceededSince(cursor), truth.SucceededSince(truth_cursor))
            << "seed " << seed << " at " << k << ": " << last;
        truth_cursor = truth.last_succeeded;
      }
      // The names version moves exactly when a node name came or went.
      ASSERT_EQ(model.NamesVersion() != version_before, NodeNames(truth) != names_before)
          << "seed " << seed << " at " << k << ": " << last;
      if (k % 25 == 24) ExpectSame(model, truth, probes, fmt::format("seed {} at {}", seed, k));
      if (HasFatalFailure()) return;
    }
    ExpectSame(model, truth, probes,
               fmt::format("seed {} after {} deltas, last {}", seed, length, last));
    if (HasFatalFailure()) return;
    compactions += model.generation();
  }
  // The long sequences replace nodes often enough to compact: that path is checked too.
  EXPECT_GT(compactions, 0u);
}

TEST(ClusterModel, APassForksAndRevertsAndDeltasWaitForIt) {
  ClusterModel model;
  ASSERT_TRUE(model.SetNode(Node(NodeBuilder("n1").Zone("z0"))).has_value());
  auto running = Pod(PodBuilder("p1").NodeName("n1").Phase(model::PodPhase::kRunning));
  ASSERT_TRUE(model.SetPod(running).has_value());
  model::Pod extra = PodBuilder("extra").Requests({{"cpu", "1"}}).Build();
  {
    ClusterModel::Layer layer(model);
    ASSERT_TRUE(model.snapshot().AddPod(&extra, "n1").has_value());
    EXPECT_EQ(model.snapshot().PodCount(), 2);
    Result<void> refused = model.DeletePod("default", "p1");
    ASSERT_FALSE(refused.has_value());
    EXPECT_NE(refused.error().message().find("1 open layer"), std::string::npos)
        << refused.error().message();
    EXPECT_NE(model.FindPod("default", "p1"), nullptr);
  }
  EXPECT_EQ(model.snapshot().PodCount(), 1);
  EXPECT_TRUE(model.DeletePod("default", "p1").has_value());
  EXPECT_EQ(model.snapshot().PodCount(), 0);
}

TEST(ClusterModel, APodBeforeItsNodeIsPlacedWhenTheNodeComes) {
  ClusterModel model;
  ASSERT_TRUE(model.SetPod(Pod(PodBuilder("p1").NodeName("n1").Phase(model::PodPhase::kRunning)))
                  .has_value());
  EXPECT_EQ(model.snapshot().PodCount(), 0);
  ASSERT_TRUE(model.SetNode(Node(NodeBuilder("n1"))).has_value());
  EXPECT_EQ(model.snapshot().PodCount(), 1);
  // The node goes and comes back (a relist): the pod is on it again.
  ASSERT_TRUE(model.DeleteNode("n1").has_value());
  EXPECT_EQ(model.snapshot().PodCount(), 0);
  ASSERT_TRUE(model.SetNode(Node(NodeBuilder("n1").Unschedulable())).has_value());
  EXPECT_EQ(model.snapshot().PodCount(), 1);
  NodeIndex n1 = model.snapshot().FindNode("n1");
  ASSERT_NE(n1, kNoNode);
  EXPECT_TRUE(model.snapshot().Get(n1).unschedulable);
}

TEST(ClusterModel, ABindAndAFinishMoveThePod) {
  ClusterModel model;
  ASSERT_TRUE(model.SetNode(Node(NodeBuilder("n1"))).has_value());
  ASSERT_TRUE(model.SetNode(Node(NodeBuilder("n2"))).has_value());
  ASSERT_TRUE(model.SetPod(Pod(PodBuilder("p").Requests({{"cpu", "1"}}))).has_value());
  EXPECT_EQ(model.snapshot().PodCount(), 0);  // pending: not on a node
  ASSERT_TRUE(
      model.SetPod(Pod(PodBuilder("p").Requests({{"cpu", "1"}}).NodeName("n2"))).has_value());
  NodeIndex n2 = model.snapshot().FindNode("n2");
  EXPECT_EQ(model.snapshot().Get(n2).requested.cpu_milli(), 1000);
  ASSERT_TRUE(model
                  .SetPod(Pod(PodBuilder("p")
                                  .Requests({{"cpu", "1"}})
                                  .NodeName("n2")
                                  .Phase(model::PodPhase::kSucceeded)))
                  .has_value());
  EXPECT_EQ(model.snapshot().Get(n2).requested.cpu_milli(), 0);
  EXPECT_EQ(model.PodCount(), 1u);  // known, terminal, not placed
}

// The simulator changes its objects in place and hands the same pointer again.
TEST(ClusterModel, AnObjectChangedInPlaceIsFiledAgain) {
  ClusterModel model;
  auto node = std::make_shared<model::Node>(NodeBuilder("n1").Build());
  ASSERT_TRUE(model.SetNode(node).has_value());
  ASSERT_TRUE(model.SetNode(Node(NodeBuilder("n2"))).has_value());
  auto pod = std::make_shared<model::Pod>(PodBuilder("p")
                                              .Requests({{"cpu", "1"}})
                                              .NodeName("n1")
                                              .Phase(model::PodPhase::kRunning)
                                              .Build());
  ASSERT_TRUE(model.SetPod(pod).has_value());
  pod->node_name = "n2";
  ASSERT_TRUE(model.SetPod(pod).has_value());
  const ClusterSnapshot& s = model.snapshot();
  EXPECT_EQ(s.Get(s.FindNode("n1")).requested.cpu_milli(), 0);
  EXPECT_EQ(s.Get(s.FindNode("n2")).requested.cpu_milli(), 1000);
  const NodeIndex before = s.FindNode("n1");
  EXPECT_EQ(model.PlaceByName(before), 0u);
  node->taints.push_back({"dedicated", "x", model::TaintEffect::kNoSchedule});
  ASSERT_TRUE(model.SetNode(node).has_value());
  EXPECT_TRUE(s.Get(s.FindNode("n1")).has_taints);
  // The changed node took a new slot: the old one has no place in the name order any more.
  EXPECT_EQ(model.PlaceByName(before), ClusterModel::kNoPlace);
  EXPECT_EQ(model.PlaceByName(s.FindNode("n1")), 0u);
  EXPECT_EQ(model.PlaceByName(NodeIndex{999}), ClusterModel::kNoPlace);
  EXPECT_TRUE(model.Unbound().empty());
  pod->node_name.clear();
  pod->phase = model::PodPhase::kPending;
  ASSERT_TRUE(model.SetPod(pod).has_value());
  EXPECT_EQ(s.PodCount(), 0);
  EXPECT_EQ(model.Unbound(), std::vector<const model::Pod*>{pod.get()});
  EXPECT_TRUE(model.Succeeded().empty());
  pod->node_name = "n2";
  pod->phase = model::PodPhase::kSucceeded;
  ASSERT_TRUE(model.SetPod(pod).has_value());
  EXPECT_TRUE(model.Unbound().empty());
  EXPECT_EQ(model.Succeeded(), std::vector<const model::Pod*>{pod.get()});
  ASSERT_TRUE(model.DeletePod("default", "p").has_value());
  EXPECT_EQ(model.PodCount(), 0u);
  EXPECT_TRUE(model.Unbound().empty());
  EXPECT_TRUE(model.Succeeded().empty());
}

TEST(ClusterModel, MalformedDeltasAreRefusedAndChangeNothing) {
  ClusterModel model;
  Result<void> r = model.SetNode(Node(NodeBuilder("")));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("metadata.name"), std::string::npos);
  r = model.DeleteNode("ghost");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kNotFound);
  EXPECT_NE(r.error().message().find("ghost"), std::string::npos);
  r = model.SetPod(nullptr);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(model.Changes(), 0u);
  EXPECT_EQ(model.NodeCount(), 0u);
}

}  // namespace
}  // namespace tidepool::sched
