// Scenario tests: every folder of tests/scenarios/ holds config.yaml, state.yaml, an optional
// input.yaml (now, upcoming, backoff) and expected.json, the part of `tidepool plan -o json`
// that must match. A string starting with "~" in expected.json matches any string containing
// the rest; arrays must have the same length; objects list only the keys that matter.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kube/codec/objects.h"
#include "kube/config/autoscaler_config.h"
#include "planner/plan_json.h"
#include "planner/scale_down.h"
#include "planner/scale_up.h"

namespace tidepool::planner {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ScenarioNames() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(TIDEPOOL_SOURCE_DIR) / "tests/scenarios"))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Returns "" when `actual` matches `expected`, else where and how it differs.
std::string Mismatch(const nlohmann::json& expected, const nlohmann::json& actual,
                     const std::string& path) {
  if (expected.is_string() && expected.get<std::string>().starts_with("~")) {
    std::string want = expected.get<std::string>().substr(1);
    if (!actual.is_string() || actual.get<std::string>().find(want) == std::string::npos) {
      return path + ": expected a string containing \"" + want + "\", got " + actual.dump();
    }
    return "";
  }
  if (expected.is_object()) {
    if (!actual.is_object()) return path + ": expected an object, got " + actual.dump();
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      if (!actual.contains(it.key())) return path + "." + it.key() + ": missing";
      std::string m = Mismatch(it.value(), actual.at(it.key()), path + "." + it.key());
      if (!m.empty()) return m;
    }
    return "";
  }
  if (expected.is_array()) {
    if (!actual.is_array() || actual.size() != expected.size()) {
      return path + ": expected " + std::to_string(expected.size()) + " element(s), got " +
             actual.dump();
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string m = Mismatch(expected[i], actual[i], path + "[" + std::to_string(i) + "]");
      if (!m.empty()) return m;
    }
    return "";
  }
  return expected == actual ? ""
                            : path + ": expected " + expected.dump() + ", got " + actual.dump();
}

class Scenario : public testing::TestWithParam<std::string> {};

TEST_P(Scenario, PlanMatchesExpected) {
  fs::path dir = fs::path(TIDEPOOL_SOURCE_DIR) / "tests/scenarios" / GetParam();
  auto config = kube::config::LoadAutoscalerConfig((dir / "config.yaml").string());
  ASSERT_TRUE(config) << config.error().message();
  auto state = kube::codec::LoadStatePath((dir / "state.yaml").string());
  ASSERT_TRUE(state) << state.error().message();

  PlannerInput in;
  in.config = &*config;
  for (const auto& n : state->nodes) in.nodes.push_back(&n);
  for (const auto& p : state->pods) in.pods.push_back(&p);
  for (const auto& p : state->pdbs) in.pdbs.push_back(&p);
  for (const auto& d : state->daemon_sets) in.daemon_sets.push_back(&d);
  if (!state->dra.empty()) in.dra = &state->dra;
  if (fs::exists(dir / "input.yaml")) {
    YAML::Node input = YAML::LoadFile((dir / "input.yaml").string());
    if (input["now"]) in.now = *ParseRfc3339(input["now"].as<std::string>());
    for (const auto& kv : input["upcoming"])
      in.upcoming[kv.first.as<std::string>()] = kv.second.as<int>();
    for (const auto& kv : input["backoff"])
      in.backoff_until[kv.first.as<std::string>()] = *ParseRfc3339(kv.second.as<std::string>());
  }

  ScaleUpPlan up = ScaleUpPlanner().Plan(in);
  ScaleDownPlan down = ScaleDownPlanner().Plan(in);
  nlohmann::json actual = PlanToJson(up, down);

  std::ifstream f(dir / "expected.json");
  nlohmann::json expected = nlohmann::json::parse(f);
  std::string m = Mismatch(expected, actual, "$");
  EXPECT_TRUE(m.empty()) << m << "\nfull plan:\n" << actual.dump(2);

  // Same input, same output.
  EXPECT_EQ(PlanToJson(ScaleUpPlanner().Plan(in), ScaleDownPlanner().Plan(in)), actual);
}

// ScaleUpOptions::gang_aware off (the simulator's ca-like policy): the gang of four 4-GPU pods
// that a pool of max one 8-GPU node cannot hold whole gets that one node for two members, as the
// Cluster Autoscaler would; with gangs on (the default) nothing is added.
TEST(ScaleUpOptions, GangAwarenessOff) {
  fs::path dir = fs::path(TIDEPOOL_SOURCE_DIR) / "tests/scenarios/gang-pool-max-one";
  auto config = kube::config::LoadAutoscalerConfig((dir / "config.yaml").string());
  ASSERT_TRUE(config) << config.error().message();
  auto state = kube::codec::LoadStatePath((dir / "state.yaml").string());
  ASSERT_TRUE(state) << state.error().message();
  PlannerInput in;
  in.config = &*config;
  in.now = *ParseRfc3339("2026-11-22T00:00:00Z");
  for (const auto& p : state->pods) in.pods.push_back(&p);

  EXPECT_TRUE(ScaleUpPlanner().Plan(in).scale_ups.empty());
  ScaleUpOptions options;
  options.gang_aware = false;
  ScaleUpPlan plan = ScaleUpPlanner().Plan(in, options);
  ASSERT_EQ(plan.scale_ups.size(), 1u);
  EXPECT_EQ(plan.scale_ups[0].pool, "gpu8");
  EXPECT_EQ(plan.scale_ups[0].add, 1);
  EXPECT_EQ(plan.scale_ups[0].pods, (std::vector<std::string>{"ml/dist-0", "ml/dist-1"}));
  ASSERT_EQ(plan.unschedulable.size(), 2u);
  for (const Unschedulable& u : plan.unschedulable) {
    EXPECT_NE(u.reasons.at("gpu8").kind, ReasonKind::kGang) << u.reasons.at("gpu8").text;
  }
}

INSTANTIATE_TEST_SUITE_P(All, Scenario, testing::ValuesIn(ScenarioNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace tidepool::planner
