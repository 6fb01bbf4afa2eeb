// Within a priority, the pods that fit the fewest pool templates take the room there is first
// (Pass::SortByFlexibility), so a pod that could go anywhere does not take the node another
// pod needs. The count of templates is taken per room class of pools (equal allocatable and
// DaemonSet use) and per node constraint set: both halves are asked here. A gang takes part in
// the order with its least flexible member (Pass::PlaceGangsAndSingles).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "planner/scale_up.h"
#include "tests/planner/diverse_world.h"

namespace tidepool::planner {
namespace {

using testing::Adds;
using testing::Pending;
using testing::Shape;

struct World {
  model::AutoscalerConfig config;
  std::deque<model::Pod> pods;
  PlannerInput in;

  World() { in.config = &config; }
  model::Pod& Add(model::Pod p) {
    model::Pod& added = pods.emplace_back(std::move(p));
    in.pods.push_back(&added);
    return added;
  }
};

// One `big` node (8 cpu) on its way. The 2-cpu pod comes first in the scheduler's order (its
// name) and fits both templates; the 7-cpu pod fits only `big`. The 7-cpu pod takes the node on
// its way and the 2-cpu one gets a `small` node; in the scheduler's order the 2-cpu pod would
// take the node on its way and the 7-cpu one would need a second `big`.
TEST(FlexibilityOrder, APodThatFitsFewerShapesTakesTheRoomFirst) {
  World w;
  w.config.pools = {Shape("big", "8", "32Gi", 4), Shape("small", "2", "8Gi", 1)};
  w.in.upcoming = {{"big", 1}};
  w.Add(Pending("a-anywhere", "2", "2Gi"));
  w.Add(Pending("b-big-only", "7", "2Gi"));
  ScaleUpPlan plan = ScaleUpPlanner().Plan(w.in);
  ASSERT_EQ(plan.fits_existing.size(), 1u);
  EXPECT_EQ(plan.fits_existing.front(), "default/b-big-only");
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"small", 1}}));
}

// The same for node constraints: two pools of one shape, `spot` tainted. One on-demand node is on
// its way; the pod that tolerates spot comes first by name. The pod that does not takes the node
// on its way, and the tolerant one gets a spot node.
TEST(FlexibilityOrder, APodThatToleratesFewerTaintsTakesTheRoomFirst) {
  World w;
  w.config.pools = {Shape("od", "4", "16Gi", 2), Shape("spot", "4", "16Gi", 1)};
  w.config.pools[1].template_node.taints.push_back(
      {"spot", "true", model::TaintEffect::kNoSchedule});
  w.config.scale_up.expanders = {"price"};
  w.in.upcoming = {{"od", 1}};
  model::Pod tolerant = Pending("a-tolerant", "3");
  tolerant.tolerations.push_back({"spot", model::TolerationOp::kEqual, "true", {}});
  tolerant.Finalize();
  w.Add(std::move(tolerant));
  w.Add(Pending("b-intolerant", "3"));
  ScaleUpPlan plan = ScaleUpPlanner().Plan(w.in);
  ASSERT_EQ(plan.fits_existing.size(), 1u);
  EXPECT_EQ(plan.fits_existing.front(), "default/b-intolerant");
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"spot", 1}}));
}

// A pending member of pod-group `gang`.
model::Pod Member(std::string name, const std::string& cpu, const std::string& gang = "train") {
  model::Pod p = Pending(std::move(name), cpu);
  p.meta.labels["scheduling.x-k8s.io/pod-group"] = gang;
  p.Finalize();
  return p;
}

// Pools `big` (8 cpu) and `small` (2 cpu), `upcoming` big nodes on their way, and a gang of two
// members asking `member_cpu` each ("b-0", "b-1").
void BigAndSmallWithAGang(World& w, int upcoming, const std::string& member_cpu) {
  w.config.pools = {Shape("big", "8", "32Gi", 4), Shape("small", "2", "8Gi", 1)};
  if (upcoming > 0) w.in.upcoming = {{"big", upcoming}};
  w.Add(Member("b-0", member_cpu));
  w.Add(Member("b-1", member_cpu));
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Two `big` nodes on their way for a gang of two 7-cpu members; a 2-cpu pod that fits both
// templates came while they boot (and comes first by name). The gang keeps the nodes on their
// way and the 2-cpu pod gets a `small` node; with singles first, it took a node on its way and
// the gang asked for a third `big` node.
TEST(FlexibilityOrder, AGangKeepsItsNodesOnTheirWayFromAMoreFlexiblePod) {
  World w;
  w.Add(Pending("a-anywhere", "2"));
  BigAndSmallWithAGang(w, 2, "7");
  ScaleUpPlan plan = ScaleUpPlanner().Plan(w.in);
  EXPECT_EQ(Sorted(plan.fits_existing), (std::vector<std::string>{"default/b-0", "default/b-1"}));
  EXPECT_EQ(plan.gang_nodes.size(), 2u);
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"small", 1}}));
}

// A pod less flexible than the gang's members (it fits `big` only, they fit both) still takes
// the node on its way first; the gang gets new nodes.
TEST(FlexibilityOrder, APodLessFlexibleThanAGangTakesTheRoomFirst) {
  World w;
  w.config.pools = {Shape("big", "8", "32Gi", 4), Shape("small", "2", "8Gi", 1)};
  w.in.upcoming = {{"big", 1}};
  w.Add(Member("a-0", "2"));
  w.Add(Member("a-1", "2"));
  w.Add(Pending("b-big-only", "7"));
  ScaleUpPlan plan = ScaleUpPlanner().Plan(w.in);
  EXPECT_EQ(plan.fits_existing, (std::vector<std::string>{"default/b-big-only"}));
  EXPECT_TRUE(plan.gang_nodes.empty());
  EXPECT_FALSE(Adds(plan).empty());
}

// Priority comes before flexibility: a flexible pod of a higher priority takes a node on its way
// before a gang of the default priority, which then needs one more node.
TEST(FlexibilityOrder, AHigherPriorityPodTakesTheRoomBeforeAGang) {
  World w;
  model::Pod urgent = Pending("z-urgent", "2");
  urgent.priority = 100;
  urgent.Finalize();
  w.Add(std::move(urgent));
  BigAndSmallWithAGang(w, 2, "7");
  ScaleUpPlan plan = ScaleUpPlanner().Plan(w.in);
  EXPECT_EQ(Sorted(plan.fits_existing),
            (std::vector<std::string>{"default/b-0", "default/z-urgent"}));
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"big", 1}}));
}

// A pod placed after a gang that grew does not count the gang's new nodes as room that exists
// (ScaleUpPlan::fits_existing is registered and upcoming nodes only): it gets a node of its own.
TEST(FlexibilityOrder, APodAfterAGangDoesNotFitItsNewNodesAsExisting) {
  World w;
  w.Add(Pending("a-anywhere", "2"));
  BigAndSmallWithAGang(w, 0, "6");
  ScaleUpPlan plan = ScaleUpPlanner().Plan(w.in);
  EXPECT_TRUE(plan.fits_existing.empty());
  EXPECT_TRUE(plan.unschedulable.empty());
  int a_in_a_scale_up = 0;
  for (const ScaleUp& u : plan.scale_ups)
    a_in_a_scale_up +=
        static_cast<int>(std::count(u.pods.begin(), u.pods.end(), "default/a-anywhere"));
  EXPECT_EQ(a_in_a_scale_up, 1);
}

// The same for a gang: one that fits the room left on the new nodes of a gang before it is
// listed with their scale-up, not as fitting existing room, and books no node.
TEST(FlexibilityOrder, AGangOnAnotherGangsNewNodesIsPartOfTheirScaleUp) {
  World w;
  w.config.pools = {Shape("big", "8", "32Gi", 4)};
  for (const char* name : {"a-0", "a-1"}) w.Add(Member(name, "5"));
  for (const char* name : {"b-0", "b-1"}) w.Add(Member(name, "3", "eval"));
  ScaleUpPlan plan = ScaleUpPlanner().Plan(w.in);
  EXPECT_TRUE(plan.fits_existing.empty());
  EXPECT_TRUE(plan.gang_nodes.empty());
  ASSERT_EQ(plan.scale_ups.size(), 1u);
  EXPECT_EQ(plan.scale_ups[0].add, 2);  // the second gang shares the first one's nodes
  EXPECT_EQ(plan.scale_ups[0].pods,
            (std::vector<std::string>{"default/a-0", "default/a-1", "default/b-0", "default/b-1"}));
}

}  // namespace
}  // namespace tidepool::planner
