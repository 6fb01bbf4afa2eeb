// Shared setup of the azure-vms tests (vms_test.cc, vms_stopped_test.cc): the provider config
// for the fake, acs-engine's tags, a VM's Node, and letting pending operations finish.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "tests/cloud/azure/azure_fixture.h"

namespace tidepool::testing::azure {

inline constexpr char kCluster[] = "12345678";

class AzureVmsTestBase : public AzureTestBase {
 protected:
  // provider: azure-vms with cluster id kCluster against the fake.
  model::AutoscalerConfig VmsConfig(std::vector<model::Pool> pools,
                                    std::map<std::string, std::string> extra = {}) {
    model::AutoscalerConfig c;
    c.provider.type = "azure-vms";
    c.provider.settings = CommonSettings();
    c.provider.settings["clusterId"] = kCluster;
    for (auto& [k, v] : extra) c.provider.settings[k] = v;
    c.pools = std::move(pools);
    return c;
  }

  // The tags acs-engine puts on an agent pool's VMs, NICs and disks.
  std::map<std::string, std::string> AcsTags(const std::string& agent_pool) const {
    return {{"poolName", agent_pool},
            {"orchestrator", "Kubernetes:1.6.6"},
            {"resourceNameSuffix", kCluster},
            {"creationSource", "acsengine-k8s-" + agent_pool + "-" + kCluster + "-0"}};
  }

  // The Node a kubelet on VM `vm` registers.
  model::Node NodeOf(const std::string& vm) const {
    model::Node n;
    n.meta.name = vm;
    n.provider_id = "azure:///subscriptions/" + fake_->options().subscription + "/resourceGroups/" +
                    fake_->options().resource_group +
                    "/providers/Microsoft.Compute/virtualMachines/" + vm;
    return n;
  }

  // Lets the pending operations finish: Refresh after each Retry-After.
  void Settle(cloud::CloudProvider& p, const std::string& pool, int passes = 6) {
    for (int i = 0; i < passes; ++i) {
      clock_.Advance(std::chrono::seconds(3));
      RefreshOne(p, pool);
    }
  }
};

}  // namespace tidepool::testing::azure
