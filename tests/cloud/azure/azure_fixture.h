// Shared setup of the Azure provider tests: a thread-safe fake clock, FakeArm started on it, and
// configs for azure-vmss and aks pointing at the fake.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/time.h"
#include "cloud/azure/azure_provider.h"
#include "model/pool.h"
#include "tests/cloud/azure/fake_arm.h"
#include "tests/testing/values.h"

namespace tidepool::testing::azure {

// A clock that tests (and the sleeper) move; readable from FakeArm's server threads.
class TestClock final : public Clock {
 public:
  explicit TestClock(Time start) : ms_(start.time_since_epoch().count()) {}
  Time Now() const override { return Time(Duration(ms_.load())); }
  void Advance(Duration d) { ms_ += d.count(); }

 private:
  std::atomic<int64_t> ms_;
};

inline model::Pool MakePool(const std::string& name, int max, bool spot = false,
                            const std::string& instance_type = "") {
  model::Pool p;
  p.name = name;
  p.max = max;
  p.capacity_type = spot ? model::CapacityType::kSpot : model::CapacityType::kOnDemand;
  p.instance_type = instance_type;
  p.template_node.meta.name = "template-" + name;
  p.template_node.meta.labels[std::string(model::kLabelPool)] = name;
  p.template_node.capacity = Res({{"cpu", "2"}, {"memory", "7Gi"}, {"pods", "110"}});
  p.template_node.allocatable = p.template_node.capacity;
  return p;
}

class AzureTestBase : public ::testing::Test {
 protected:
  // A fake that cannot start (examples missing) fails the test before its body dereferences it.
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartFake({})); }

  void StartFake(FakeArmOptions options) {
    fake_.reset();
    options.shared_dir = TIDEPOOL_SHARED_DIR;
    options.clock = &clock_;
    auto fake = FakeArm::Start(options);
    ASSERT_TRUE(fake.has_value()) << fake.error().message();
    fake_ = std::move(*fake);
    env_["AZURE_CLIENT_SECRET"] = fake_->options().client_secret;
  }

  // provider: azure-vmss with client-secret auth against the fake.
  model::AutoscalerConfig VmssConfig(std::vector<model::Pool> pools,
                                     std::map<std::string, std::string> extra = {}) {
    model::AutoscalerConfig c;
    c.provider.type = "azure-vmss";
    c.provider.settings = CommonSettings();
    for (auto& [k, v] : extra) c.provider.settings[k] = v;
    c.pools = std::move(pools);
    return c;
  }

  model::AutoscalerConfig AksConfig(std::vector<model::Pool> pools,
                                    std::map<std::string, std::string> extra = {}) {
    model::AutoscalerConfig c;
    c.provider.type = "aks";
    c.provider.settings = CommonSettings();
    c.provider.settings["clusterName"] = "cluster1";
    for (auto& [k, v] : extra) c.provider.settings[k] = v;
    c.pools = std::move(pools);
    return c;
  }

  std::map<std::string, std::string> CommonSettings() const {
    return {{"subscriptionId", fake_->options().subscription},
            {"resourceGroup", fake_->options().resource_group},
            {"armEndpoint", fake_->endpoint()},
            {"authorityHost", fake_->endpoint()},
            {"auth.type", "clientSecret"},
            {"auth.tenantId", fake_->options().tenant},
            {"auth.clientId", fake_->options().client_id},
            {"stockoutHold", "3m"}};
  }

  // Client-secret auth against the fake (the secret from env_), for ArmClients made by hand.
  cloud::azure::AuthConfig FakeAuth() const {
    cloud::azure::AuthConfig a;
    a.tenant_id = fake_->options().tenant;
    a.client_id = fake_->options().client_id;
    a.client_secret.env = "AZURE_CLIENT_SECRET";
    a.authority_host = fake_->endpoint();
    return a;
  }

  cloud::azure::Options ProviderOptions() {
    cloud::azure::Options o;
    o.clock = &clock_;
    o.sleep = [this](Duration d) {
      sleeps_.push_back(d);
      clock_.Advance(d);
    };
    o.env = [this](std::string_view name) -> std::optional<std::string> {
      auto it = env_.find(std::string(name));
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
    o.node_joined = node_joined_;
    return o;
  }

  std::unique_ptr<cloud::azure::AzureProvider> Make(const model::AutoscalerConfig& config) {
    auto p = cloud::azure::NewAzureProvider(config, ProviderOptions());
    EXPECT_TRUE(p.has_value()) << p.error().message();
    return p ? std::move(*p) : nullptr;
  }

  // The one pool's size from a Refresh that must succeed.
  cloud::PoolSize RefreshOne(cloud::CloudProvider& p, const std::string& pool) {
    auto sizes = p.Refresh(clock_.Now());
    EXPECT_TRUE(sizes.has_value()) << sizes.error().message();
    if (sizes) {
      for (const auto& s : *sizes)
        if (s.pool == pool) return s;
    }
    ADD_FAILURE() << "no PoolSize for " << pool;
    return {};
  }

  // The Node of instance `id` (one digit) of `scale_set` in the fake's resource group, named and
  // with the providerID as the kubelet sets them.
  model::Node ScaleSetNode(const std::string& scale_set, const std::string& id) const {
    model::Node n;
    n.meta.name = scale_set + "00000" + id;
    n.provider_id = "azure:///subscriptions/" + fake_->options().subscription + "/resourceGroups/" +
                    fake_->options().resource_group +
                    "/providers/Microsoft.Compute/virtualMachineScaleSets/" + scale_set +
                    "/virtualMachines/" + id;
    return n;
  }

  model::Node NodeFor(const InstanceEvent& e) const {
    model::Node n;
    n.meta.name = e.node_name;
    n.provider_id = e.provider_id;
    return n;
  }

  TestClock clock_{At("2026-11-22T00:00:00Z")};
  std::unique_ptr<FakeArm> fake_;
  std::map<std::string, std::string> env_;
  std::vector<Duration> sleeps_;
  cloud::azure::NodeJoined node_joined_;
};

// Tests of a pool "gpu" with scaleDown.mode deallocate (cloud::MachineStopper).
class AzureStoppedTestBase : public AzureTestBase {
 protected:
  // Pool "gpu" with at most `max` nodes and as many stopped machines.
  static model::Pool DeallocatePool(int max) {
    model::Pool pool = MakePool("gpu", max);
    pool.scale_down.mode = model::ScaleDownMode::kDeallocate;
    pool.scale_down.max_stopped = max;
    return pool;
  }

  // Makes the provider under test; it must be a MachineStopper.
  void Use(const model::AutoscalerConfig& config) {
    provider_ = Make(config);
    ASSERT_NE(provider_, nullptr);
    stopper_ = dynamic_cast<cloud::MachineStopper*>(provider_.get());
    ASSERT_NE(stopper_, nullptr);
  }

  void StopOk(const model::Node& node) {
    auto r = stopper_->StopNode("gpu", node, clock_.Now());
    ASSERT_TRUE(r.has_value()) << r.error().message();
  }

  std::unique_ptr<cloud::azure::AzureProvider> provider_;
  cloud::MachineStopper* stopper_ = nullptr;
};

}  // namespace tidepool::testing::azure
