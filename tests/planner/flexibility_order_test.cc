// Within a priority, the pods that fit the fewest pool templates take the room there is first
// (Pass::SortByFlexibility), so a pod that could go anywhere does not take the node another
// pod needs. The count of templates is taken per room class of pools (equal allocatable and
// DaemonSet use) and per node constraint set: both halves are asked here.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>

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

}  // namespace
}  // namespace tidepool::planner
