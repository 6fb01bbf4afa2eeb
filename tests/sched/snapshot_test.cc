// ClusterSnapshot: adding and removing nodes and pods, incremental requests, errors, and nested
// fork/revert/commit restoring exactly the previous state.
#include "sched/snapshot.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "tests/sched/builders.h"

namespace tidepool::sched {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Res;
using testing::Term;

// Everything observable about a snapshot, for before/after comparisons.
struct State {
  size_t slots, count;
  int64_t pods, anti, affinity;
  int depth;
  std::vector<bool> removed;
  std::vector<std::vector<const model::Pod*>> pods_per_node;
  std::vector<model::Resources> requested, staying;
  std::vector<model::Resources> allocatable;
  std::vector<std::pair<int32_t, int32_t>> per_node_affinity;
  std::vector<NodeIndex> by_name;
  friend bool operator==(const State&, const State&) = default;
};

class SnapshotTest : public ::testing::Test {
 protected:
  const model::Node* Node(std::string name) {
    nodes_.push_back(NodeBuilder(std::move(name)).Build());
    return &nodes_.back();
  }
  const model::Pod* Pod(std::string name, std::string_view cpu = "100m") {
    pods_.push_back(PodBuilder(std::move(name)).Requests({{"cpu", cpu}}).Build());
    return &pods_.back();
  }
  const model::Pod* GpuPod(std::string name) {
    pods_.push_back(PodBuilder(std::move(name))
                        .Requests({{"cpu", "1"}, {"nvidia.com/gpu", "1"}})
                        .AntiAffinity(Term("kubernetes.io/hostname", {{"app", "x"}}))
                        .Build());
    return &pods_.back();
  }
  State Capture() const {
    State s{s_.NodeSlots(),
            s_.NodeCount(),
            s_.PodCount(),
            s_.PodsWithRequiredAntiAffinity(),
            s_.PodsWithRequiredAffinity(),
            s_.Depth()};
    for (NodeIndex i = 0; i < s_.NodeSlots(); ++i) {
      const NodeInfo& n = s_.Get(i);
      s.removed.push_back(n.removed);
      s.pods_per_node.push_back(n.pods);
      s.requested.push_back(n.requested);
      s.staying.push_back(n.staying_requested);
      s.allocatable.push_back(n.allocatable);
      s.per_node_affinity.emplace_back(n.pods_with_required_anti_affinity,
                                       n.pods_with_required_affinity);
    }
    for (NodeIndex i = 0; i < s_.NodeSlots(); ++i) {
      s.by_name.push_back(s_.FindNode(s_.Get(i).node->name()));
    }
    return s;
  }
  // Three nodes, a few pods.
  void Populate() {
    ASSERT_TRUE(s_.AddNode(Node("n0")).has_value());
    ASSERT_TRUE(s_.AddNode(Node("n1")).has_value());
    ASSERT_TRUE(s_.AddNode(Node("n2")).has_value());
    ASSERT_TRUE(s_.AddPod(Pod("p0"), "n0").has_value());
    ASSERT_TRUE(s_.AddPod(Pod("p1", "1"), "n0").has_value());
    ASSERT_TRUE(s_.AddPod(GpuPod("g0"), "n1").has_value());
    ASSERT_TRUE(s_.AddPod(Pod("p2"), "n1").has_value());
  }

  std::deque<model::Node> nodes_;
  std::deque<model::Pod> pods_;
  ClusterSnapshot s_;
};

TEST_F(SnapshotTest, AddNodesAndPodsKeepsRequestsIncrementally) {
  auto i0 = s_.AddNode(Node("n0"));
  auto i1 = s_.AddNode(Node("n1"));
  ASSERT_TRUE(i0 && i1);
  EXPECT_EQ(*i0, 0u);
  EXPECT_EQ(*i1, 1u);
  EXPECT_EQ(s_.FindNode("n1"), 1u);
  EXPECT_EQ(s_.FindNode("nope"), kNoNode);
  ASSERT_TRUE(s_.AddPod(Pod("a", "250m"), "n0"));
  ASSERT_TRUE(s_.AddPod(Pod("b", "500m"), NodeIndex{0}));
  ASSERT_TRUE(s_.AddPod(GpuPod("g"), "n1"));
  EXPECT_EQ(s_.Get(0).requested, Res({{"cpu", "750m"}, {"pods", "2"}}));
  EXPECT_EQ(s_.Get(1).requested, Res({{"cpu", "1"}, {"pods", "1"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(s_.Get(1).pods_with_required_anti_affinity, 1);
  EXPECT_EQ(s_.PodsWithRequiredAntiAffinity(), 1);
  EXPECT_EQ(s_.PodCount(), 3);
  ASSERT_TRUE(s_.RemovePod(&pods_[0], 0));
  EXPECT_EQ(s_.Get(0).requested, Res({{"cpu", "500m"}, {"pods", "1"}}));
  ASSERT_TRUE(s_.RemovePod(&pods_[2], 1));
  EXPECT_TRUE(s_.Get(1).requested.IsZero());
  EXPECT_EQ(s_.PodsWithRequiredAntiAffinity(), 0);
  EXPECT_EQ(s_.PodCount(), 1);
}

// DaemonSet and mirror pods, and pods being deleted, stay when the node drains: their requests
// are kept apart too, through removals and reverts, by a snapshot asked to.
TEST_F(SnapshotTest, KeepsTheRequestsOfPodsThatStayOnDrain) {
  s_.KeepStayingSums();
  ASSERT_TRUE(s_.AddNode(Node("n0")));
  pods_.push_back(PodBuilder("ds").Requests({{"cpu", "100m"}}).DaemonSet("agent").Build());
  pods_.push_back(PodBuilder("mirror").Requests({{"cpu", "200m"}}).Mirror().Build());
  pods_.push_back(PodBuilder("going").Requests({{"cpu", "400m"}}).Terminating().Build());
  for (const model::Pod& p : pods_) ASSERT_TRUE(s_.AddPod(&p, "n0"));
  ASSERT_TRUE(s_.AddPod(Pod("moves", "800m"), "n0"));
  EXPECT_EQ(s_.Get(0).requested, Res({{"cpu", "1500m"}, {"pods", "4"}}));
  EXPECT_EQ(s_.Get(0).staying_requested, Res({{"cpu", "700m"}, {"pods", "3"}}));

  State before = Capture();
  s_.Fork();
  ASSERT_TRUE(s_.RemovePod(&pods_[1], 0));
  EXPECT_EQ(s_.Get(0).staying_requested, Res({{"cpu", "500m"}, {"pods", "2"}}));
  ASSERT_TRUE(s_.RemoveNode("n0"));
  EXPECT_TRUE(s_.Get(0).staying_requested.IsZero());
  s_.Revert();
  EXPECT_EQ(Capture(), before);
  EXPECT_EQ(s_.Get(0).staying_requested, Res({{"cpu", "700m"}, {"pods", "3"}}));

  // One not asked keeps the same requests and no staying part.
  ClusterSnapshot plain;
  ASSERT_TRUE(plain.AddNode(&nodes_.back()));
  for (const model::Pod& p : pods_) ASSERT_TRUE(plain.AddPod(&p, "n0"));
  EXPECT_EQ(plain.Get(0).requested, s_.Get(0).requested);
  EXPECT_TRUE(plain.Get(0).staying_requested.IsZero());
  EXPECT_DEATH(plain.KeepStayingSums(), "with pods");
}

TEST_F(SnapshotTest, ErrorsNameTheNodeOrPod) {
  Populate();
  auto dup = s_.AddNode(Node("n1"));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code(), Error::Code::kConflict);
  EXPECT_NE(dup.error().message().find("\"n1\""), std::string::npos);
  EXPECT_FALSE(s_.AddNode(Node("")));

  auto unknown = s_.AddPod(Pod("x"), "ghost");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), Error::Code::kNotFound);
  EXPECT_NE(unknown.error().message().find("ghost"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("default/x"), std::string::npos);
  EXPECT_FALSE(s_.AddPod(Pod("y"), NodeIndex{42}));

  auto remove = s_.RemoveNode("ghost");
  ASSERT_FALSE(remove);
  EXPECT_NE(remove.error().message().find("ghost"), std::string::npos);

  auto not_there = s_.RemovePod(Pod("z"), 0);
  ASSERT_FALSE(not_there);
  EXPECT_NE(not_there.error().message().find("default/z"), std::string::npos);

  pods_.push_back(PodBuilder("done").Phase(model::PodPhase::kSucceeded).Build());
  auto terminal = s_.AddPod(&pods_.back(), "n0");
  ASSERT_FALSE(terminal);
  EXPECT_NE(terminal.error().message().find("Succeeded"), std::string::npos);

  ASSERT_TRUE(s_.RemoveNode("n2"));
  auto removed = s_.AddPod(Pod("w"), NodeIndex{2});
  ASSERT_FALSE(removed);
  EXPECT_NE(removed.error().message().find("removed"), std::string::npos);
  EXPECT_EQ(s_.PodCount(), 4);  // failed calls changed nothing
}

TEST_F(SnapshotTest, RemovePodMatchesByNameWhenPointerDiffers) {
  Populate();
  model::Pod copy = pods_[1];  // default/p1, another object
  ASSERT_TRUE(s_.RemovePod(&copy, 0));
  ASSERT_EQ(s_.Get(0).pods.size(), 1u);
  EXPECT_EQ(s_.Get(0).pods[0], &pods_[0]);
}

TEST_F(SnapshotTest, ForkAddRevertRestoresExactly) {
  Populate();
  State before = Capture();
  s_.Fork();
  EXPECT_EQ(s_.Depth(), 1);
  ASSERT_TRUE(s_.AddPod(Pod("f0"), "n2"));
  ASSERT_TRUE(s_.AddPod(GpuPod("f1"), "n0"));
  ASSERT_TRUE(s_.AddNode(Node("n3")));
  ASSERT_TRUE(s_.AddPod(Pod("f2"), "n3"));
  ASSERT_TRUE(s_.RemovePod(&pods_[0], 0));  // p0: the last pod of n0 takes its place
  EXPECT_NE(Capture(), before);
  EXPECT_EQ(s_.NodeCount(), 4u);
  s_.Revert();
  EXPECT_EQ(Capture(), before);
  EXPECT_EQ(s_.FindNode("n3"), kNoNode);
  EXPECT_EQ(s_.Get(0).pods[0], &pods_[0]);  // order restored
  EXPECT_EQ(s_.Depth(), 0);
}

// A node a pass made up, added without its name: FindNode does not see it, a live node may hold
// the same name, and a revert takes it back without touching that node's entry in the index.
TEST_F(SnapshotTest, AnUnnamedNodeIsNotFoundByNameAndIsUndoneByRevert) {
  Populate();
  State before = Capture();
  s_.Fork();
  const NodeIndex made = s_.AddUnnamedNode(Node("n0"));  // n0's name: a real node holds it
  EXPECT_EQ(made, 3u);
  EXPECT_EQ(s_.NodeCount(), 4u);
  EXPECT_EQ(s_.FindNode("n0"), 0u);
  ASSERT_TRUE(s_.AddPod(Pod("f0"), made));
  EXPECT_EQ(s_.Get(made).requested.cpu_milli(), 100);
  EXPECT_TRUE(s_.Get(made).unnamed);
  const NodeIndex other = s_.AddUnnamedNode(Node("fresh"));
  EXPECT_EQ(s_.FindNode("fresh"), kNoNode);
  EXPECT_FALSE(s_.AddPod(Pod("f1"), "fresh").has_value());  // by name: not there
  ASSERT_TRUE(s_.AddPod(Pod("f2"), other));
  // Removed by slot, and its removal undone, without touching n0's entry in the index.
  ASSERT_TRUE(s_.RemoveNodeAt(made));
  EXPECT_FALSE(s_.RemoveNodeAt(made).has_value());
  EXPECT_EQ(s_.FindNode("n0"), 0u);
  s_.Fork();
  ASSERT_TRUE(s_.RemoveNodeAt(0));
  EXPECT_EQ(s_.FindNode("n0"), kNoNode);
  s_.Revert();
  EXPECT_EQ(s_.FindNode("n0"), 0u);
  s_.Revert();
  EXPECT_EQ(Capture(), before);
  EXPECT_EQ(s_.FindNode("n0"), 0u);
  EXPECT_EQ(s_.NodeSlots(), 3u);
}

// A node the caller sees otherwise (a copy with a taint): it takes the node's name and pods, in
// their order, at a new slot; a revert restores the old slot with the old object.
TEST_F(SnapshotTest, ReplaceNodeKeepsThePodsAndIsUndoneByRevert) {
  Populate();
  State before = Capture();
  model::Node tainted = *s_.Get(1).node;
  tainted.taints.push_back({"k", "v", model::TaintEffect::kNoSchedule});
  s_.Fork();
  auto index = s_.ReplaceNode(&tainted);
  ASSERT_TRUE(index.has_value()) << index.error().message();
  EXPECT_EQ(*index, 3u);
  EXPECT_TRUE(s_.Get(1).removed);
  EXPECT_EQ(s_.FindNode("n1"), 3u);
  EXPECT_EQ(s_.Get(3).node, &tainted);
  EXPECT_EQ(s_.Get(3).pods, before.pods_per_node[1]);
  EXPECT_EQ(s_.Get(3).requested, before.requested[1]);
  EXPECT_EQ(s_.PodCount(), before.pods);
  EXPECT_EQ(s_.PodsWithRequiredAntiAffinity(), before.anti);
  s_.Revert();
  EXPECT_EQ(Capture(), before);
  model::Node stranger = NodeBuilder("nowhere").Build();
  auto missing = s_.ReplaceNode(&stranger);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("nowhere"), std::string::npos);
}

// A flexible new node narrowed to its shape: the allocatable changes in the snapshot only, and
// a revert restores it, also when several changes of one node are undone together.
TEST_F(SnapshotTest, SetAllocatableIsUndoneByRevert) {
  Populate();
  const model::Resources original = s_.Get(2).allocatable;
  const model::Resources small = Res({{"cpu", "1"}, {"pods", "10"}});
  State before = Capture();
  s_.Fork();
  ASSERT_TRUE(s_.SetAllocatable(2, small));
  EXPECT_EQ(s_.Get(2).allocatable, small);
  EXPECT_EQ(s_.Get(2).node->allocatable, original);  // the Node itself is untouched
  s_.Fork();
  ASSERT_TRUE(s_.SetAllocatable(2, Res({{"cpu", "2"}})));
  ASSERT_TRUE(s_.SetAllocatable(2, Res({{"cpu", "3"}})));
  s_.Revert();
  EXPECT_EQ(s_.Get(2).allocatable, small);
  s_.Revert();
  EXPECT_EQ(Capture(), before);
  s_.Fork();
  ASSERT_TRUE(s_.SetAllocatable(2, small));
  s_.Commit();
  EXPECT_EQ(s_.Get(2).allocatable, small);
  EXPECT_FALSE(s_.SetAllocatable(99, small).has_value());
}

TEST_F(SnapshotTest, NestedForks) {
  Populate();
  State s0 = Capture();
  s_.Fork();
  ASSERT_TRUE(s_.AddPod(Pod("outer"), "n0"));
  State s1 = Capture();
  s_.Fork();
  ASSERT_TRUE(s_.AddPod(Pod("inner"), "n1"));
  ASSERT_TRUE(s_.RemoveNode("n2"));
  EXPECT_EQ(s_.Depth(), 2);
  s_.Revert();
  EXPECT_EQ(Capture(), s1);
  s_.Revert();
  EXPECT_EQ(Capture(), s0);
}

TEST_F(SnapshotTest, CommitInsideForkThenRevertOuterUndoesBoth) {
  Populate();
  State s0 = Capture();
  s_.Fork();
  ASSERT_TRUE(s_.AddPod(Pod("outer"), "n0"));
  s_.Fork();
  ASSERT_TRUE(s_.AddPod(Pod("inner"), "n1"));
  ASSERT_TRUE(s_.RemoveNode("n0"));
  s_.Commit();
  EXPECT_EQ(s_.Depth(), 1);
  EXPECT_EQ(s_.FindNode("n0"), kNoNode);
  EXPECT_EQ(s_.Get(1).pods.size(), 3u);
  s_.Revert();
  EXPECT_EQ(Capture(), s0);
}

TEST_F(SnapshotTest, CommitOfOutermostLayerKeepsChanges) {
  Populate();
  s_.Fork();
  ASSERT_TRUE(s_.AddPod(Pod("kept", "2"), "n2"));
  ASSERT_TRUE(s_.RemoveNode("n0"));
  s_.Commit();
  EXPECT_EQ(s_.Depth(), 0);
  EXPECT_EQ(s_.Get(2).requested, Res({{"cpu", "2"}, {"pods", "1"}}));
  EXPECT_TRUE(s_.Get(0).removed);
  EXPECT_TRUE(s_.Get(0).pods.empty());
  // A later fork/revert does not reach behind the commit.
  State after = Capture();
  s_.Fork();
  ASSERT_TRUE(s_.AddPod(Pod("more"), "n2"));
  s_.Revert();
  EXPECT_EQ(Capture(), after);
}

TEST_F(SnapshotTest, RemoveNodeThenRevert) {
  Populate();
  State before = Capture();
  s_.Fork();
  ASSERT_TRUE(s_.RemoveNode("n1"));
  EXPECT_EQ(s_.NodeCount(), 2u);
  EXPECT_EQ(s_.NodeSlots(), 3u);  // the index stays, as a tombstone
  EXPECT_TRUE(s_.Get(1).removed);
  EXPECT_TRUE(s_.Get(1).pods.empty());
  EXPECT_TRUE(s_.Get(1).requested.IsZero());
  EXPECT_EQ(s_.FindNode("n1"), kNoNode);
  EXPECT_EQ(s_.PodsWithRequiredAntiAffinity(), 0);
  EXPECT_EQ(s_.PodCount(), 2);
  // The name is free again while the removal stands.
  auto again = s_.AddNode(Node("n1"));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 3u);
  ASSERT_TRUE(s_.AddPod(Pod("new"), "n1"));
  s_.Revert();
  EXPECT_EQ(Capture(), before);
  EXPECT_EQ(s_.FindNode("n1"), 1u);
  EXPECT_EQ(s_.Get(1).pods[0], &pods_[2]);  // g0, then p2
  EXPECT_EQ(s_.PodsWithRequiredAntiAffinity(), 1);
}

TEST_F(SnapshotTest, RemoveNodeWithoutForkIsPermanent) {
  Populate();
  ASSERT_TRUE(s_.RemoveNode("n0"));
  EXPECT_TRUE(s_.Get(0).removed);
  EXPECT_TRUE(s_.Get(0).pods.empty());
  EXPECT_EQ(s_.NodeCount(), 2u);
  EXPECT_EQ(s_.PodCount(), 2);
}

TEST_F(SnapshotTest, ManyRandomOpsRevertToStart) {
  Populate();
  State before = Capture();
  s_.Fork();
  uint32_t seed = 7;
  auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
  for (int i = 0; i < 500; ++i) {
    NodeIndex n = next() % s_.NodeSlots();
    if (s_.Get(n).removed) continue;
    switch (next() % 4) {
      case 0:
      case 1:
        ASSERT_TRUE(s_.AddPod(next() % 2 ? Pod("r" + std::to_string(i)) : GpuPod("g"), n));
        break;
      case 2:
        if (!s_.Get(n).pods.empty()) {
          const auto& pods = s_.Get(n).pods;
          ASSERT_TRUE(s_.RemovePod(pods[next() % pods.size()], n));
        }
        break;
      case 3:
        if (next() % 8 == 0) {
          ASSERT_TRUE(s_.AddNode(Node("extra" + std::to_string(i))));
        } else if (next() % 8 == 0 && s_.NodeCount() > 1) {
          ASSERT_TRUE(s_.RemoveNode(s_.Get(n).node->name()));
        }
        break;
    }
    if (i % 100 == 50) s_.Fork();  // a few nested layers, committed below
  }
  while (s_.Depth() > 1) s_.Commit();
  s_.Revert();
  EXPECT_EQ(Capture(), before);
}

TEST_F(SnapshotTest, TopologyIndexAssignsDenseDomainIds) {
  nodes_.push_back(NodeBuilder("a1").Zone("a").Build());
  nodes_.push_back(NodeBuilder("b1").Zone("b").Build());
  nodes_.push_back(NodeBuilder("none").Build());
  for (const auto& n : nodes_) ASSERT_TRUE(s_.AddNode(&n));
  const TopologyIndex& zone = s_.Topology(model::kLabelZone);
  EXPECT_EQ(&zone, &s_.Topology(model::kLabelZone));  // built once
  EXPECT_EQ(zone.DomainCount(), 2u);
  EXPECT_EQ(zone.DomainOf(0), zone.Find("a"));
  EXPECT_EQ(zone.Value(zone.DomainOf(1)), "b");
  EXPECT_EQ(zone.DomainOf(2), TopologyIndex::kNoDomain);
  EXPECT_EQ(zone.Find("c"), TopologyIndex::kNoDomain);
  // Later nodes are indexed as they come.
  nodes_.push_back(NodeBuilder("a2").Zone("a").Build());
  auto i = s_.AddNode(&nodes_.back());
  ASSERT_TRUE(i);
  EXPECT_EQ(zone.DomainOf(*i), zone.Find("a"));
}

TEST_F(SnapshotTest, TopologyIndexFollowsRevertedNodes) {
  nodes_.push_back(NodeBuilder("a1").Zone("a").Build());
  ASSERT_TRUE(s_.AddNode(&nodes_.back()));
  s_.Fork();
  nodes_.push_back(NodeBuilder("b1").Zone("b").Build());
  ASSERT_TRUE(s_.AddNode(&nodes_.back()));
  const TopologyIndex& zone = s_.Topology(model::kLabelZone);  // built inside the fork
  EXPECT_EQ(zone.Value(zone.DomainOf(1)), "b");
  s_.Revert();
  // Slot 1 is handed out again; it must not inherit b1's domain.
  nodes_.push_back(NodeBuilder("a2").Zone("a").Build());
  auto i = s_.AddNode(&nodes_.back());
  ASSERT_TRUE(i);
  EXPECT_EQ(*i, 1u);
  EXPECT_EQ(zone.Value(zone.DomainOf(1)), "a");
}

}  // namespace
}  // namespace tidepool::sched
