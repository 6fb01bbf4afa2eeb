#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "cloud/azure/node_template.h"
#include "cloud/azure/provider_id.h"
#include "cloud/azure/url.h"
#include "cloud/azure/vms_provider.h"
#include "cloud/json_fields.h"

// VmsProvider: the pool of a node (PoolOf) and agent pools no configured pool names
// (DiscoverPools).

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// The agent pool a VM of cluster `cluster_id` belongs to, in lower case: from its name
// k8s-<agentPool>-<clusterId>-<index>, else from its poolName and resourceNameSuffix tags; ""
// when neither says.
std::string AgentPoolOfVm(const json& vm, const std::string& cluster_id) {
  if (auto parsed = ParseVmName(StringField(vm, "name"), cluster_id)) return parsed->agent_pool;
  const json& tags = ObjectField(vm, "tags");
  if (StringField(tags, kTagResourceNameSuffix) == cluster_id) {
    return ToLower(StringField(tags, kTagPoolName));
  }
  return "";
}

// A VM of the pool standing in for a scale set (PoolFromScaleSet): its size, priority and tags.
json AsScaleSet(const json& vm) {
  const json& props = ObjectField(vm, "properties");
  return {{"name", StringField(vm, "name")},
          {"tags", ObjectField(vm, "tags")},
          {"sku", {{"name", StringField(ObjectField(props, "hardwareProfile"), "vmSize")}}},
          {"properties", {{"priority", StringField(props, "priority")}}}};
}

}  // namespace

std::string VmsProvider::PoolOf(const model::Node& node) const {
  auto ref = ParseVmResourceId(node.provider_id);
  if (!ref || !EqualsIgnoreCase(ref->resource_group, settings_.resource_group) ||
      !EqualsIgnoreCase(ref->subscription, settings_.subscription_id)) {
    return "";
  }
  for (const model::Pool& p : pools()) {
    if (Naming(p.name).VmIndex(ref->name)) return p.name;
  }
  auto it = vm_pool_.find(ToLower(ref->name));
  return it == vm_pool_.end() ? "" : it->second;
}

Result<std::vector<model::Pool>> VmsProvider::DiscoverPools(Time) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<json> all, ListVms());
  std::set<std::string> taken;
  for (const model::Pool& p : pools()) taken.insert(ToLower(AgentPool(p.name)));
  std::map<std::string, const json*> found;  // agent pool -> a VM with a `max` tag
  for (const json& vm : all) {
    std::string agent_pool = AgentPoolOfVm(vm, settings_.cluster_id);
    if (agent_pool.empty() || taken.contains(agent_pool)) continue;
    if (!ObjectField(vm, "tags").contains(kTagMax)) continue;
    found.emplace(agent_pool, &vm);
  }
  std::vector<model::Pool> out;
  for (const auto& [agent_pool, vm] : found) {
    auto pool = PoolFromScaleSet(agent_pool, AsScaleSet(*vm));
    if (!pool) {
      spdlog::warn("azure-vms: discovery: agent pool {}: {}; skipped", agent_pool,
                   pool.error().message());
      continue;
    }
    if (FindPool(pool->name) != nullptr) continue;
    settings_.vm_pools[pool->name] = agent_pool;
    AddPool(*pool);
    out.push_back(std::move(*pool));
  }
  return out;
}

}  // namespace tidepool::cloud::azure
