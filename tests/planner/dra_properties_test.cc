// Property tests of scale-up with Dynamic Resource Allocation over random clusters (seeded): a
// plan never places more device requests on a pool's new nodes than their devices hold, pods
// land only in pools whose devices match their selectors, and pods without room are reported.
// The oracle counts devices from the pools' templates, not from the planner's state.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <string>

#include "model/dra.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_up.h"

namespace tidepool::planner {
namespace {

constexpr std::string_view kDriver = "gpu.example.com";
const char* const kProducts[] = {"A100", "H100", "T4"};

model::Pool MakePool(int i, std::mt19937_64& rng) {
  model::Pool p;
  p.name = fmt::format("pool-{}", i);
  p.max = 1 + static_cast<int>(rng() % 6);
  p.price_per_hour = 1 + static_cast<double>(rng() % 5);
  p.priority = static_cast<int>(rng() % 3);
  p.template_node.meta.name = "template-" + p.name;
  p.template_node.meta.labels[std::string(model::kLabelPool)] = p.name;
  p.template_node.capacity.Set(model::kCpu, 64000);
  p.template_node.capacity.Set(model::kMemory, int64_t{256} << 30);
  p.template_node.capacity.Set(model::kPods, 110);
  p.template_node.allocatable = p.template_node.capacity;
  p.template_node.ready = true;
  if (rng() % 4 != 0) {
    model::TemplateDevices d;
    d.driver = std::string(kDriver);
    d.count = 1 << (rng() % 4);  // 1, 2, 4 or 8
    d.attributes["gpu.example.com/productName"] = {.kind = model::DeviceAttribute::Kind::kString,
                                                   .text = kProducts[rng() % 3]};
    p.devices.push_back(d);
    p.device_slices = model::TemplateSlices(p.name, p.template_node.meta.name, p.devices);
  }
  return p;
}

// Templates "<product>-<k>": k devices of that product.
void AddTemplates(model::DraObjects& dra) {
  model::DeviceClass& dc = dra.device_classes.emplace_back();
  dc.meta.name = std::string(kDriver);
  dc.selectors.push_back(fmt::format("device.driver == '{}'", kDriver));
  for (const char* product : kProducts) {
    for (int k : {1, 2, 4}) {
      model::ResourceClaimTemplate& t = dra.claim_templates.emplace_back();
      t.meta.name = fmt::format("{}-{}", product, k);
      t.meta.namespace_ = "ml";
      model::DeviceRequest& r = t.spec.requests.emplace_back();
      r.name = "gpus";
      r.exactly.emplace();
      r.exactly->device_class_name = std::string(kDriver);
      r.exactly->count = k;
      r.exactly->selectors.push_back(
          fmt::format("device.attributes['{}'].productName == '{}'", kDriver, product));
    }
  }
}

struct Want {
  std::string product;
  int devices;
};

TEST(DraProperties, PlansNeverPlaceMoreClaimsOnANodeThanItsDevicesHold) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    model::AutoscalerConfig config;
    int pools = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < pools; ++i) config.pools.push_back(MakePool(i, rng));
    model::DraObjects dra;
    AddTemplates(dra);
    std::deque<model::Pod> pods;
    std::map<std::string, Want> wants;
    int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      model::Pod& p = pods.emplace_back();
      p.meta.name = fmt::format("p{}", i);
      p.meta.namespace_ = "ml";
      std::string owner = fmt::format("rs{}", rng() % 4);
      p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", owner, owner, true});
      Want w{kProducts[rng() % 3], 1 << (rng() % 3)};
      p.mutable_resource_claims().push_back(
          {.name = "gpus", .template_name = fmt::format("{}-{}", w.product, w.devices)});
      model::Container c;
      c.requests.Set(model::kCpu, 100);
      p.containers.push_back(c);
      p.Finalize();
      wants[p.Key()] = w;
    }
    PlannerInput in;
    in.config = &config;
    in.dra = &dra;
    for (const auto& p : pods) in.pods.push_back(&p);
    ScaleUpPlan plan = ScaleUpPlanner().Plan(in);

    size_t placed = 0;
    for (const ScaleUp& up : plan.scale_ups) {
      const model::Pool* pool = config.FindPool(up.pool);
      ASSERT_NE(pool, nullptr);
      ASSERT_FALSE(pool->devices.empty()) << "seed " << seed << ": pool without devices grew";
      const auto& d = pool->devices[0];
      const std::string& product = d.attributes.at("gpu.example.com/productName").text;
      int64_t asked = 0;
      for (const std::string& key : up.pods) {
        const Want& w = wants.at(key);
        EXPECT_EQ(w.product, product) << "seed " << seed << ": " << key << " in " << up.pool;
        EXPECT_LE(w.devices, d.count) << "seed " << seed << ": " << key << " in " << up.pool;
        asked += w.devices;
      }
      EXPECT_LE(asked, static_cast<int64_t>(up.add) * d.count)
          << "seed " << seed << ": pool " << up.pool << " adds " << up.add << " node(s) of "
          << d.count << " devices for " << asked;
      EXPECT_LE(up.add, pool->max) << "seed " << seed;
      placed += up.pods.size();
    }
    EXPECT_EQ(placed + plan.unschedulable.size(), pods.size()) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tidepool::planner
