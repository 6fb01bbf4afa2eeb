#include "cloud/azure/vms_provider.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "cloud/azure/node_template.h"
#include "cloud/azure/provider_id.h"
#include "cloud/azure/url.h"
#include "cloud/json_fields.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

bool ContainsLower(std::string_view haystack, std::string_view needle) {
  return ToLower(haystack).find(ToLower(needle)) != std::string::npos;
}

// Capacity failures plus a VM that never reported back from its first boot: both mean "this
// pool cannot give a node now".
bool IsProvisioningFailure(std::string_view code, std::string_view message) {
  return IsStockoutError(code, message) || ContainsLower(code, "OSProvisioningTimedOut");
}

}  // namespace

bool PoolVm::failed() const { return EqualsIgnoreCase(provisioning, "Failed"); }
bool PoolVm::deleting() const { return EqualsIgnoreCase(provisioning, "Deleting"); }
bool PoolVm::stopped() const {
  return !failed() && !deleting() &&
         (EqualsIgnoreCase(power, "deallocated") || EqualsIgnoreCase(power, "deallocating"));
}

VmsProvider::VmsProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps)
    : AzureProvider(std::move(settings), std::move(pools), std::move(deps)) {}

size_t VmsProvider::pending_creations(const std::string& pool) const {
  auto it = work_.find(pool);
  return it == work_.end() ? 0 : it->second.creations.size();
}

size_t VmsProvider::pending_removals(const std::string& pool) const {
  auto it = work_.find(pool);
  return it == work_.end() ? 0 : it->second.removals.size();
}

// ---------------------------------------------------------------------------------------------
// Names.

std::string VmsProvider::ResourceGroupPath() const {
  return fmt::format("/subscriptions/{}/resourceGroups/{}", settings_.subscription_id,
                     settings_.resource_group);
}

std::string VmsProvider::VmPath(const std::string& name) const {
  return ResourceGroupPath() + "/providers/Microsoft.Compute/virtualMachines/" + name;
}

std::string VmsProvider::NicId(const std::string& name) const {
  return ResourceGroupPath() + "/providers/Microsoft.Network/networkInterfaces/" + name;
}

std::string VmsProvider::DiskId(const std::string& name) const {
  return ResourceGroupPath() + "/providers/Microsoft.Compute/disks/" + name;
}

const std::string& VmsProvider::AgentPool(const std::string& pool) const {
  auto it = settings_.vm_pools.find(pool);
  return it == settings_.vm_pools.end() ? pool : it->second;
}

VmsNaming VmsProvider::Naming(const std::string& pool) const {
  return {.agent_pool = AgentPool(pool), .cluster_id = settings_.cluster_id};
}

bool VmsProvider::OwnedByTags(const std::string& pool, const json& resource) const {
  const json& tags = ObjectField(resource, "tags");
  if (StringField(tags, kTagTidepoolPool) == pool) return true;
  return EqualsIgnoreCase(StringField(tags, kTagPoolName), AgentPool(pool)) &&
         StringField(tags, kTagResourceNameSuffix) == settings_.cluster_id;
}

std::string VmsProvider::PoolOfVm(const json& vm) const {
  const std::string name = StringField(vm, "name");
  for (const model::Pool& p : pools()) {
    if (Naming(p.name).VmIndex(name)) return p.name;
  }
  for (const model::Pool& p : pools()) {
    if (OwnedByTags(p.name, vm)) return p.name;
  }
  return "";
}

Result<std::vector<json>> VmsProvider::ListVms() {
  return arm_->List(ResourceGroupPath() + "/providers/Microsoft.Compute/virtualMachines",
                    settings_.compute_api_version, "$expand=instanceView");
}

std::vector<PoolVm> VmsProvider::VmsOf(const std::string& pool,
                                       const std::vector<json>& vms) const {
  std::vector<PoolVm> out;
  for (const json& vm : vms) {
    if (PoolOfVm(vm) != pool) continue;
    PoolVm v;
    v.name = StringField(vm, "name");
    v.index = Naming(pool).VmIndex(v.name).value_or(-1);
    v.provider_id = VmProviderId({settings_.subscription_id, settings_.resource_group, v.name});
    const json& props = ObjectField(vm, "properties");
    v.provisioning = StringField(props, "provisioningState");
    for (const json& st : ArrayField(ObjectField(props, "instanceView"), "statuses")) {
      std::string code = StringField(st, "code");
      constexpr std::string_view kPower = "PowerState/";
      if (code.starts_with(kPower)) v.power = code.substr(kPower.size());
      if (code.starts_with("ProvisioningState/failed")) {
        auto slash = code.find('/', std::string_view("ProvisioningState/").size());
        v.error_code = slash == std::string::npos ? "" : code.substr(slash + 1);
        v.error_message = StringField(st, "message");
        if (v.provisioning.empty()) v.provisioning = "Failed";
      }
    }
    v.body = vm;
    out.push_back(std::move(v));
  }
  return out;
}

bool VmsProvider::Joined(const PoolVm& vm) const {
  if (node_joined_) return node_joined_(vm.provider_id);
  return EqualsIgnoreCase(vm.provisioning, "Succeeded");
}

bool VmsProvider::StoppedIn(const model::Pool& pool, const PoolVm& vm) const {
  return pool.scale_down.Deallocates() && vm.stopped();
}

bool VmsProvider::Removing(const std::string& pool, const std::string& vm) const {
  auto it = work_.find(pool);
  if (it == work_.end()) return false;
  for (const Removal& r : it->second.removals) {
    if (!r.vm.empty() && EqualsIgnoreCase(r.vm, vm)) return true;
  }
  return false;
}

std::set<int> VmsProvider::IndexesInUse(const std::string& pool,
                                        const std::vector<PoolVm>& vms) const {
  std::set<int> used;
  for (const PoolVm& vm : vms) {
    if (vm.index >= 0) used.insert(vm.index);
  }
  auto it = work_.find(pool);
  if (it == work_.end()) return used;
  const VmsNaming naming = Naming(pool);
  for (const Creation& c : it->second.creations) used.insert(c.index);
  for (const Removal& r : it->second.removals) {
    if (auto i = naming.VmIndex(r.vm)) used.insert(*i);
    for (const std::string& nic : r.nics) {
      if (auto i = naming.NicIndex(ResourceName(nic))) used.insert(*i);
    }
  }
  return used;
}

std::set<int> VmsProvider::UsedIndexes(const std::string& pool,
                                       const std::vector<PoolVm>& vms) const {
  std::set<int> used = IndexesInUse(pool, vms);
  if (auto it = leftover_indexes_.find(pool); it != leftover_indexes_.end()) {
    used.insert(it->second.begin(), it->second.end());
  }
  return used;
}

Result<void> VmsProvider::BeforeRefresh(Time now) {
  listed_ = ListVms();
  if (!listed_) return std::unexpected(listed_.error());
  vm_pool_.clear();
  for (const json& vm : *listed_) {
    if (std::string pool = PoolOfVm(vm); !pool.empty()) {
      vm_pool_[ToLower(StringField(vm, "name"))] = pool;
    }
  }
  if (!swept_at_ || now >= *swept_at_ + settings_.sweep_interval) Sweep(now);
  return {};
}

Result<std::optional<PoolSize>> VmsProvider::RefreshPool(const model::Pool& pool, Time now) {
  if (!listed_) return std::unexpected(listed_.error());
  AdvanceCreations(pool.name, now);
  AdvanceRemovals(pool.name, now);
  std::vector<PoolVm> vms = VmsOf(pool.name, *listed_);
  VmsPool& work = work_[pool.name];
  PoolSize size;
  size.pool = pool.name;
  std::set<std::string> listed;
  for (const PoolVm& vm : vms) {
    listed.insert(ToLower(vm.name));
    if (Removing(pool.name, vm.name)) continue;
    bool creating = std::any_of(work.creations.begin(), work.creations.end(),
                                [&](const Creation& c) { return EqualsIgnoreCase(c.vm, vm.name); });
    if (vm.failed()) {
      if (creating) continue;  // the creation's operation reports it
      const bool provisioning_failure = IsProvisioningFailure(vm.error_code, vm.error_message);
      if (provisioning_failure) {
        NoteStockout(pool.name,
                     fmt::format("{}: {} (VM {})", vm.error_code, vm.error_message, vm.name), now);
      }
      const bool removable = node_joined_ ? !node_joined_(vm.provider_id) : provisioning_failure;
      if (removable) {
        spdlog::warn("azure-vms: pool {}: VM {} failed ({}); removing it", pool.name, vm.name,
                     vm.error_code.empty() ? std::string("no error details")
                                           : vm.error_code + ": " + vm.error_message);
        work.removals.push_back(RemovalOf(vm.body, "failed VM"));
        if (auto r = AdvanceRemoval(pool.name, work.removals.back(), now); !r) {
          spdlog::warn("azure-vms: pool {}: {}", pool.name, r.error().message());
        }
      }
      continue;
    }
    if (vm.deleting()) continue;
    if (StoppedIn(pool, vm)) {
      ++size.stopped;
      continue;
    }
    ++size.instances;
  }
  size.target = size.instances;
  for (const Creation& c : work.creations) {
    if (!listed.contains(ToLower(c.vm))) ++size.target;
  }
  return size;
}

}  // namespace tidepool::cloud::azure
