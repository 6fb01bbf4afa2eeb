#include "planner/expander.h"

#include <gtest/gtest.h>

#include <set>

namespace tidepool::planner {
namespace {

model::Pool P(std::string name, int priority, double price) {
  model::Pool p;
  p.name = std::move(name);
  p.priority = priority;
  p.price_per_hour = price;
  return p;
}

ExpanderOption O(const model::Pool& p, int nodes, int pods, int64_t req_cpu, int64_t alloc_cpu) {
  ExpanderOption o;
  o.pool = &p;
  o.nodes = nodes;
  o.pods = pods;
  o.requested.Set(model::kCpu, req_cpu);
  o.allocatable.Set(model::kCpu, alloc_cpu);
  return o;
}

TEST(Expander, PriorityThenLeastWaste) {
  auto spot = P("gpu-spot", 100, 0.2), spot2 = P("gpu-spot-b", 100, 0.2), od = P("gpu", 10, 0.9);
  std::vector<ExpanderOption> opts = {O(od, 1, 1, 900, 1000), O(spot, 1, 1, 500, 1000),
                                      O(spot2, 1, 1, 800, 1000)};
  auto c = ChooseOption({"priority", "least-waste"}, opts, 1, 1);
  EXPECT_EQ(opts[c.index].pool->name, "gpu-spot-b");  // priority keeps two, waste picks b
  EXPECT_NE(c.reason.find("priority 100"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("least-waste"), std::string::npos) << c.reason;
}

TEST(Expander, PricePerPod) {
  auto cheap = P("a", 0, 1.0), dear = P("b", 0, 1.0);
  // a: 2 nodes for 4 pods (0.5/pod), b: 1 node for 1 pod (1.0/pod).
  std::vector<ExpanderOption> opts = {O(dear, 1, 1, 0, 1), O(cheap, 2, 4, 0, 1)};
  EXPECT_EQ(opts[ChooseOption({"price"}, opts, 1, 1).index].pool->name, "a");
}

TEST(Expander, MostPodsAndNameTie) {
  auto a = P("zeta", 0, 1), b = P("alpha", 0, 1);
  std::vector<ExpanderOption> opts = {O(a, 1, 3, 0, 1), O(b, 1, 3, 0, 1)};
  auto c = ChooseOption({"most-pods"}, opts, 1, 1);
  EXPECT_EQ(opts[c.index].pool->name, "alpha");
  opts[0].pods = 5;
  EXPECT_EQ(opts[ChooseOption({"most-pods"}, opts, 1, 1).index].pool->name, "zeta");
}

TEST(Expander, RandomIsSeededAndDeterministic) {
  std::vector<model::Pool> pools;
  for (int i = 0; i < 8; ++i) pools.push_back(P("p" + std::to_string(i), 0, 1));
  std::vector<ExpanderOption> opts;
  for (const auto& p : pools) opts.push_back(O(p, 1, 1, 0, 1));
  std::set<size_t> seen;
  for (uint64_t round = 0; round < 32; ++round) {
    size_t a = ChooseOption({"random"}, opts, 42, round).index;
    EXPECT_EQ(a, ChooseOption({"random"}, opts, 42, round).index);
    seen.insert(a);
  }
  EXPECT_GT(seen.size(), 2u);  // it does spread
}

TEST(Expander, WasteCountsGpus) {
  auto p = P("g", 0, 1);
  ExpanderOption o = O(p, 1, 1, 1000, 1000);
  o.allocatable.Set(model::kMemory, 100);
  o.requested.Set(model::kMemory, 100);
  EXPECT_DOUBLE_EQ(Waste(o), 0.0);
  o.allocatable.Set(model::InternResource("nvidia.com/gpu"), 4);
  o.requested.Set(model::InternResource("nvidia.com/gpu"), 1);
  EXPECT_DOUBLE_EQ(Waste(o), 0.75 / 3);
}

}  // namespace
}  // namespace tidepool::planner
