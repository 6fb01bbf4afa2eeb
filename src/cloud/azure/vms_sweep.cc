#include <spdlog/spdlog.h>

#include "cloud/azure/node_template.h"
#include "cloud/azure/provider_id.h"
#include "cloud/azure/url.h"
#include "cloud/azure/vms_provider.h"
#include "cloud/json_fields.h"

// VmsProvider's sweep: leftover NICs and OS disks of the pools' name patterns that nothing uses
// any more are deleted (vms_provider.h has the rules).

namespace tidepool::cloud::azure {

using nlohmann::json;

void VmsProvider::Sweep(Time now) {
  swept_at_ = now;
  auto nics = arm_->List(ResourceGroupPath() + "/providers/Microsoft.Network/networkInterfaces",
                         settings_.network_api_version);
  if (!nics) {
    spdlog::warn("azure-vms: sweep: {}", nics.error().message());
    return;
  }
  auto disks = arm_->List(ResourceGroupPath() + "/providers/Microsoft.Compute/disks",
                          settings_.compute_api_version);
  if (!disks) {
    spdlog::warn("azure-vms: sweep: {}", disks.error().message());
    return;
  }
  leftover_indexes_.clear();
  for (const model::Pool& p : pools()) {
    std::set<int> used =
        IndexesInUse(p.name, listed_ ? VmsOf(p.name, *listed_) : std::vector<PoolVm>{});
    SweepNics(p.name, *nics, used);
    SweepDisks(p.name, *disks, used);
  }
}

void VmsProvider::SweepNics(const std::string& pool, const std::vector<json>& nics,
                            const std::set<int>& used) {
  const VmsNaming naming = Naming(pool);
  for (const json& nic : nics) {
    const std::string name = StringField(nic, "name");
    auto index = naming.NicIndex(name);
    if (!index) continue;
    leftover_indexes_[pool].insert(*index);
    if (!OwnedByTags(pool, nic)) continue;  // the name alone is not enough for a NIC
    const json& props = ObjectField(nic, "properties");
    if (!StringField(ObjectField(props, "virtualMachine"), "id").empty()) continue;
    if (used.contains(*index)) continue;
    SweepDelete(pool, StringField(nic, "id").empty() ? NicId(name) : StringField(nic, "id"),
                settings_.network_api_version, "NIC");
  }
}

void VmsProvider::SweepDisks(const std::string& pool, const std::vector<json>& disks,
                             const std::set<int>& used) {
  const VmsNaming naming = Naming(pool);
  for (const json& disk : disks) {
    const std::string name = StringField(disk, "name");
    auto index = naming.DiskIndex(name);
    if (!index) continue;
    leftover_indexes_[pool].insert(*index);
    // Azure creates a VM's OS disk without the VM's tags: the pool's name pattern (which holds
    // the cluster id) decides, unless the disk's tags name another pool.
    const json& tags = ObjectField(disk, "tags");
    std::string tagged_pool = StringField(tags, kTagTidepoolPool);
    std::string tagged_agent_pool = StringField(tags, kTagPoolName);
    if ((!tagged_pool.empty() && tagged_pool != pool) ||
        (!tagged_agent_pool.empty() && !EqualsIgnoreCase(tagged_agent_pool, AgentPool(pool)))) {
      continue;
    }
    const json& props = ObjectField(disk, "properties");
    if (!StringField(disk, "managedBy").empty()) continue;
    if (!EqualsIgnoreCase(StringField(props, "diskState"), "Unattached")) continue;
    if (used.contains(*index)) continue;
    SweepDelete(pool, StringField(disk, "id").empty() ? DiskId(name) : StringField(disk, "id"),
                settings_.compute_api_version, "OS disk");
  }
}

void VmsProvider::SweepDelete(const std::string& pool, const std::string& id, std::string_view api,
                              std::string_view what) {
  auto r = arm_->Send("DELETE", id, api, nullptr);
  if (!r) {
    spdlog::warn("azure-vms: sweep: pool {}: deleting {} {}: {}", pool, what, ResourceName(id),
                 r.error().message());
  } else if (!r->ok() && r->status != 404) {
    spdlog::warn("azure-vms: sweep: pool {}: {}", pool, r->AsError().message());
  } else {
    spdlog::info("azure-vms: sweep: pool {}: deleting leftover {} {}", pool, what,
                 ResourceName(id));
  }
}

}  // namespace tidepool::cloud::azure
