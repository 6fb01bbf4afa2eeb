#include "cloud/azure/vms_provider.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "cloud/azure/blob.h"
#include "cloud/azure/json_fields.h"
#include "cloud/azure/lro.h"
#include "cloud/azure/node_template.h"
#include "cloud/azure/provider_id.h"
#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// j[key] when it is an array; an empty array otherwise.
const json& ArrayField(const json& j, std::string_view key) {
  static const json kEmpty = json::array();
  if (!j.is_object()) return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

// A non-negative decimal index ("12"), or -1.
int ParseIndex(std::string_view s) {
  if (s.empty() || s.size() > 6) return -1;
  int n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

bool ContainsLower(std::string_view haystack, std::string_view needle) {
  return ToLower(haystack).find(ToLower(needle)) != std::string::npos;
}

// Capacity failures plus a VM that never reported back from its first boot: both mean "this
// pool cannot give a node now".
bool IsProvisioningFailure(std::string_view code, std::string_view message) {
  return IsStockoutError(code, message) || ContainsLower(code, "OSProvisioningTimedOut");
}

std::string EncodeBase64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) |
                 static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The whole file named by config key `key`.
Result<std::string> ReadConfigFile(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgument("{}: cannot read \"{}\": {}", key, path, std::strerror(errno));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Copies `key` from `from` to `to` when present.
void CopyField(const json& from, json& to, std::string_view key) {
  if (from.is_object() && from.contains(key)) to[std::string(key)] = from[std::string(key)];
}

// The writable parts of an existing NIC, for a new NIC in the same subnet(s): subnets, load
// balancer pools, security groups, accelerated networking, IP forwarding. Addresses and public
// IPs are not copied.
json CloneNic(const json& nic) {
  const json& props = ObjectField(nic, "properties");
  json out = {{"properties", json::object()}};
  json& p = out["properties"];
  for (const char* key :
       {"enableAcceleratedNetworking", "enableIPForwarding", "networkSecurityGroup"}) {
    CopyField(props, p, key);
  }
  json configs = json::array();
  for (const json& ipc : ArrayField(props, "ipConfigurations")) {
    const json& ip = ObjectField(ipc, "properties");
    json c = {{"name", StringField(ipc, "name")},
              {"properties", {{"privateIPAllocationMethod", "Dynamic"}}}};
    json& cp = c["properties"];
    if (const std::string subnet = StringField(ObjectField(ip, "subnet"), "id"); !subnet.empty()) {
      cp["subnet"] = {{"id", subnet}};
    }
    for (const char* key : {"primary", "privateIPAddressVersion"}) CopyField(ip, cp, key);
    for (const char* key : {"loadBalancerBackendAddressPools", "applicationSecurityGroups"}) {
      json ids = json::array();
      for (const json& ref : ArrayField(ip, key)) {
        if (auto id = StringField(ref, "id"); !id.empty()) ids.push_back({{"id", id}});
      }
      if (!ids.empty()) cp[key] = std::move(ids);
    }
    configs.push_back(std::move(c));
  }
  p["ipConfigurations"] = std::move(configs);
  return out;
}

// The writable parts of an existing VM, for a new VM of the same pool. Names, the NIC and the OS
// disk name are set per VM later. The OS disk is always a managed disk.
json CloneVm(const json& vm) {
  const json& props = ObjectField(vm, "properties");
  json out = {{"properties", json::object()}};
  CopyField(vm, out, "plan");
  CopyField(vm, out, "zones");
  if (const json& identity = ObjectField(vm, "identity"); !identity.empty()) {
    json id = {{"type", StringField(identity, "type")}};
    if (const json& uai = ObjectField(identity, "userAssignedIdentities"); !uai.empty()) {
      id["userAssignedIdentities"] = json::object();
      for (const auto& [k, v] : uai.items()) id["userAssignedIdentities"][k] = json::object();
    }
    out["identity"] = std::move(id);
  }
  json& p = out["properties"];
  p["hardwareProfile"] = {{"vmSize", StringField(ObjectField(props, "hardwareProfile"), "vmSize")}};
  const json& storage = ObjectField(props, "storageProfile");
  json image = json::object();
  for (const char* key : {"publisher", "offer", "sku", "version", "id", "sharedGalleryImageId",
                          "communityGalleryImageId"}) {
    CopyField(ObjectField(storage, "imageReference"), image, key);
  }
  const json& os_disk = ObjectField(storage, "osDisk");
  json disk = {
      {"createOption", "FromImage"},
      {"caching", StringField(os_disk, "caching").empty() ? std::string("ReadWrite")
                                                          : StringField(os_disk, "caching")}};
  std::string account = StringField(ObjectField(os_disk, "managedDisk"), "storageAccountType");
  disk["managedDisk"] = {{"storageAccountType", account.empty() ? "Standard_LRS" : account}};
  CopyField(os_disk, disk, "diskSizeGB");
  CopyField(os_disk, disk, "osType");
  p["storageProfile"] = {{"imageReference", image}, {"osDisk", disk}};
  const json& os = ObjectField(props, "osProfile");
  p["osProfile"] = {{"adminUsername", StringField(os, "adminUsername")}};
  CopyField(os, p["osProfile"], "linuxConfiguration");
  for (const char* key : {"availabilitySet", "priority", "evictionPolicy", "billingProfile",
                          "diagnosticsProfile", "securityProfile", "userData"}) {
    CopyField(props, p, key);
  }
  if (p.contains("availabilitySet")) {
    p["availabilitySet"] = {{"id", StringField(p["availabilitySet"], "id")}};
  }
  return out;
}

constexpr std::string_view kOsDiskSuffix = "-osdisk";

}  // namespace

bool PoolVm::failed() const { return EqualsIgnoreCase(provisioning, "Failed"); }
bool PoolVm::deleting() const { return EqualsIgnoreCase(provisioning, "Deleting"); }

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

std::string VmsProvider::VmName(const std::string& pool, int index) const {
  return fmt::format("k8s-{}-{}-{}", AgentPool(pool), settings_.cluster_id, index);
}

std::string VmsProvider::NicName(const std::string& pool, int index) const {
  return fmt::format("k8s-{}-{}-nic-{}", AgentPool(pool), settings_.cluster_id, index);
}

int VmsProvider::IndexOfVmName(const std::string& pool, std::string_view name) const {
  std::string prefix = ToLower(fmt::format("k8s-{}-{}-", AgentPool(pool), settings_.cluster_id));
  std::string lower = ToLower(name);
  if (!lower.starts_with(prefix)) return -1;
  return ParseIndex(std::string_view(lower).substr(prefix.size()));
}

int VmsProvider::IndexOfNicName(const std::string& pool, std::string_view name) const {
  std::string prefix =
      ToLower(fmt::format("k8s-{}-{}-nic-", AgentPool(pool), settings_.cluster_id));
  std::string lower = ToLower(name);
  if (!lower.starts_with(prefix)) return -1;
  return ParseIndex(std::string_view(lower).substr(prefix.size()));
}

int VmsProvider::IndexOfDiskName(const std::string& pool, std::string_view name) const {
  std::string prefix = ToLower(fmt::format("k8s-{}-{}-", AgentPool(pool), settings_.cluster_id));
  std::string lower = ToLower(name);
  if (!lower.starts_with(prefix)) return -1;
  std::string_view rest = std::string_view(lower).substr(prefix.size());
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  std::string_view tail = rest.substr(digits);
  // tidepool's "<vm>-osdisk", or the name Azure gives an unnamed OS disk, "<vm>_OsDisk_1_<id>".
  if (tail != kOsDiskSuffix && !tail.starts_with("_osdisk_")) return -1;
  return ParseIndex(rest.substr(0, digits));
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
    if (IndexOfVmName(p.name, name) >= 0) return p.name;
  }
  for (const model::Pool& p : pools()) {
    if (OwnedByTags(p.name, vm)) return p.name;
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Reading.

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
    v.index = IndexOfVmName(pool, v.name);
    v.provider_id = VmProviderId({settings_.subscription_id, settings_.resource_group, v.name});
    const json& props = ObjectField(vm, "properties");
    v.provisioning = StringField(props, "provisioningState");
    for (const json& st : ArrayField(ObjectField(props, "instanceView"), "statuses")) {
      std::string code = StringField(st, "code");
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

bool VmsProvider::Removing(const std::string& pool, const std::string& vm) const {
  auto it = work_.find(pool);
  if (it == work_.end()) return false;
  for (const Removal& r : it->second.removals) {
    if (!r.vm.empty() && EqualsIgnoreCase(r.vm, vm)) return true;
  }
  return false;
}

std::set<int> VmsProvider::UsedIndexes(const std::string& pool,
                                       const std::vector<PoolVm>& vms) const {
  std::set<int> used;
  for (const PoolVm& vm : vms) {
    if (vm.index >= 0) used.insert(vm.index);
  }
  if (auto it = work_.find(pool); it != work_.end()) {
    for (const Creation& c : it->second.creations) used.insert(c.index);
    for (const Removal& r : it->second.removals) {
      if (int i = IndexOfVmName(pool, r.vm); i >= 0) used.insert(i);
      for (const std::string& nic : r.nics) {
        if (int i = IndexOfNicName(pool, ResourceName(nic)); i >= 0) used.insert(i);
      }
    }
  }
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
    ++size.instances;
  }
  size.target = size.instances;
  for (const Creation& c : work.creations) {
    if (!listed.contains(ToLower(c.vm))) ++size.target;
  }
  return size;
}

// ---------------------------------------------------------------------------------------------
// Scale up.

Result<std::pair<json, json>> VmsProvider::ModelFromConfig(const model::Pool& pool,
                                                           const json& tags) {
  auto it = settings_.vm_models.find(pool.name);
  const std::string key = "provider.models." + pool.name;
  if (it == settings_.vm_models.end()) {
    return InvalidArgument(
        "azure-vms: pool {}: no VM of the pool to copy and no {} in the config (expected "
        "vmSize, imageReference, subnetId, adminUsername, sshPublicKeyFile, customDataFile and "
        "location or availabilitySetId, to create the first VM)",
        pool.name, key);
  }
  const VmModel& m = it->second;
  std::string size = m.vm_size.empty() ? pool.instance_type : m.vm_size;
  auto missing = [&](std::string_view field, std::string_view what) {
    return InvalidArgument("{}.{}: required to create pool {}'s first VM ({})", key, field,
                           pool.name, what);
  };
  if (size.empty()) return missing("vmSize", "or the pool's instanceType");
  if (!m.has_image()) return missing("imageReference", "publisher/offer/sku or id");
  if (m.subnet_id.empty()) return missing("subnetId", "the subnet's resource id");
  if (m.admin_username.empty()) return missing("adminUsername", "the VM's admin user");
  if (m.ssh_public_key_file.empty()) return missing("sshPublicKeyFile", "an OpenSSH public key");
  if (m.custom_data_file.empty()) {
    return missing("customDataFile", "the bootstrap that joins the VM to the cluster");
  }
  std::string location = m.location;
  if (location.empty() && !m.availability_set_id.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse as,
                              arm_->Get(m.availability_set_id, settings_.compute_api_version));
    if (!as.ok()) {
      return std::unexpected(as.AsError().Wrap(fmt::format("{}.availabilitySetId", key)));
    }
    location = StringField(as.body, "location");
  }
  if (location.empty()) return missing("location", "or an availabilitySetId to take it from");
  TIDEPOOL_ASSIGN_OR_RETURN(std::string ssh_key,
                            ReadConfigFile(m.ssh_public_key_file, key + ".sshPublicKeyFile"));
  while (!ssh_key.empty() && (ssh_key.back() == '\n' || ssh_key.back() == '\r')) ssh_key.pop_back();
  TIDEPOOL_ASSIGN_OR_RETURN(std::string custom_data,
                            ReadConfigFile(m.custom_data_file, key + ".customDataFile"));

  json nic = {{"location", location},
              {"tags", tags},
              {"properties",
               {{"enableIPForwarding", m.ip_forwarding},
                {"ipConfigurations",
                 {{{"name", "ipconfig1"},
                   {"properties",
                    {{"primary", true},
                     {"privateIPAllocationMethod", "Dynamic"},
                     {"subnet", {{"id", m.subnet_id}}}}}}}}}}};
  json image = json::object();
  if (!m.image_id.empty()) {
    image["id"] = m.image_id;
  } else {
    image = {{"publisher", m.image_publisher},
             {"offer", m.image_offer},
             {"sku", m.image_sku},
             {"version", m.image_version.empty() ? "latest" : m.image_version}};
  }
  json vm = {{"location", location},
             {"tags", tags},
             {"properties",
              {{"hardwareProfile", {{"vmSize", size}}},
               {"storageProfile",
                {{"imageReference", image},
                 {"osDisk",
                  {{"createOption", "FromImage"},
                   {"caching", "ReadWrite"},
                   {"managedDisk", {{"storageAccountType", m.os_disk_type}}}}}}},
               {"osProfile",
                {{"adminUsername", m.admin_username},
                 {"customData", EncodeBase64(custom_data)},
                 {"linuxConfiguration",
                  {{"disablePasswordAuthentication", true},
                   {"ssh",
                    {{"publicKeys",
                      {{{"path", "/home/" + m.admin_username + "/.ssh/authorized_keys"},
                        {"keyData", ssh_key}}}}}}}}}}}}};
  if (!m.availability_set_id.empty()) {
    vm["properties"]["availabilitySet"] = {{"id", m.availability_set_id}};
  }
  return std::make_pair(std::move(nic), std::move(vm));
}

Result<std::pair<json, json>> VmsProvider::BuildModel(const model::Pool& pool,
                                                      const std::vector<PoolVm>& vms) {
  json tags = json::object();
  const PoolVm* source = nullptr;
  for (const PoolVm& vm : vms) {
    if (!EqualsIgnoreCase(vm.provisioning, "Succeeded") || Removing(pool.name, vm.name)) continue;
    if (source == nullptr || vm.index > source->index) source = &vm;
  }
  const VmModel* model = nullptr;
  if (auto it = settings_.vm_models.find(pool.name); it != settings_.vm_models.end()) {
    model = &it->second;
  }
  const std::string key = "provider.models." + pool.name;
  std::pair<json, json> out;
  if (source == nullptr) {
    tags = json::object();
    tags[std::string(kTagTidepoolPool)] = pool.name;
    tags[std::string(kTagPoolName)] = AgentPool(pool.name);
    tags[std::string(kTagResourceNameSuffix)] = settings_.cluster_id;
    return ModelFromConfig(pool, tags);
  }
  // The listing has no userData; a GET with $expand=userData does.
  TIDEPOOL_ASSIGN_OR_RETURN(
      ArmResponse got,
      arm_->Get(VmPath(source->name), settings_.compute_api_version, "$expand=userData"));
  if (!got.ok()) return std::unexpected(got.AsError().Wrap("reading the VM to copy"));
  const json& vm = got.body;
  tags = ObjectField(vm, "tags");
  tags[std::string(kTagTidepoolPool)] = pool.name;
  tags[std::string(kTagPoolName)] = AgentPool(pool.name);
  tags[std::string(kTagResourceNameSuffix)] = settings_.cluster_id;
  std::string nic_id;
  for (const json& ref : ArrayField(ObjectField(ObjectField(vm, "properties"), "networkProfile"),
                                    "networkInterfaces")) {
    bool primary = ObjectField(ref, "properties").value("primary", false);
    if (nic_id.empty() || primary) nic_id = StringField(ref, "id");
  }
  if (nic_id.empty()) {
    return InvalidArgument("azure-vms: pool {}: VM {} has no network interface to copy", pool.name,
                           source->name);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse nic, arm_->Get(nic_id, settings_.network_api_version));
  if (!nic.ok()) return std::unexpected(nic.AsError().Wrap("reading the NIC to copy"));
  out.first = CloneNic(nic.body);
  out.first["location"] = StringField(nic.body, "location").empty()
                              ? StringField(vm, "location")
                              : StringField(nic.body, "location");
  out.first["tags"] = tags;
  out.second = CloneVm(vm);
  out.second["location"] = StringField(vm, "location");
  out.second["tags"] = tags;
  json& props = out.second["properties"];
  if (model != nullptr) {
    if (!model->vm_size.empty()) props["hardwareProfile"]["vmSize"] = model->vm_size;
    if (!model->subnet_id.empty()) {
      for (json& ipc : out.first["properties"]["ipConfigurations"]) {
        ipc["properties"]["subnet"] = {{"id", model->subnet_id}};
      }
    }
    if (!model->availability_set_id.empty()) {
      props["availabilitySet"] = {{"id", model->availability_set_id}};
    }
  }
  // ARM never returns a VM's customData, so a copy cannot carry the bootstrap that joins the VM
  // to the cluster unless the config gives it (or the VM uses userData, which is copied).
  if (model != nullptr && !model->custom_data_file.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(std::string data,
                              ReadConfigFile(model->custom_data_file, key + ".customDataFile"));
    props["osProfile"]["customData"] = EncodeBase64(data);
  } else if (!props.contains("userData")) {
    return InvalidArgument(
        "{}.customDataFile: required for pool {} (ARM does not return VM {}'s customData, and "
        "it has no userData to copy: give the bootstrap that joins a new VM to the cluster)",
        key, pool.name, source->name);
  }
  return out;
}

Result<bool> VmsProvider::PutVm(const std::string& pool, Creation& c, Time now) {
  c.stage = Creation::Stage::kVm;
  c.op.reset();
  auto sent = arm_->Send("PUT", VmPath(c.vm), settings_.compute_api_version, &c.vm_body);
  if (!sent || !sent->ok()) {
    Error e = sent ? sent->AsError() : sent.error();
    std::string code = sent ? sent->error_code : "";
    std::string message = sent ? sent->error_message : e.message();
    CreationFailed(pool, c, code, message, now);
    if (sent) return std::unexpected(WriteFailed(pool, *sent, now));
    return std::unexpected(e.Wrap(fmt::format("azure-vms: pool {}: creating VM {}", pool, c.vm)));
  }
  spdlog::info("azure-vms: pool {}: creating VM {}", pool, c.vm);
  if (sent->operation) {
    c.op = std::move(*sent->operation);
    return true;
  }
  return false;
}

Result<void> VmsProvider::CreateOne(const model::Pool& pool, int index, json nic_body, json vm_body,
                                    Time now) {
  Creation c;
  c.index = index;
  c.vm = VmName(pool.name, index);
  c.nic = NicName(pool.name, index);
  json& props = vm_body["properties"];
  props["osProfile"]["computerName"] = c.vm;
  props["storageProfile"]["osDisk"]["name"] = c.vm + std::string(kOsDiskSuffix);
  props["networkProfile"] = {
      {"networkInterfaces", {{{"id", NicId(c.nic)}, {"properties", {{"primary", true}}}}}}};
  c.vm_body = std::move(vm_body);
  TIDEPOOL_ASSIGN_OR_RETURN(
      ArmResponse r, arm_->Send("PUT", NicId(c.nic), settings_.network_api_version, &nic_body));
  if (!r.ok()) return std::unexpected(WriteFailed(pool.name, r, now));
  spdlog::info("azure-vms: pool {}: creating NIC {} for VM {}", pool.name, c.nic, c.vm);
  const bool ready =
      EqualsIgnoreCase(StringField(ObjectField(r.body, "properties"), "provisioningState"),
                       "Succeeded") ||
      !r.operation;
  if (!ready) {
    c.op = std::move(*r.operation);
    work_[pool.name].creations.push_back(std::move(c));
    return {};
  }
  TIDEPOOL_ASSIGN_OR_RETURN(bool pending, PutVm(pool.name, c, now));
  if (pending) work_[pool.name].creations.push_back(std::move(c));
  return {};
}

void VmsProvider::CreationFailed(const std::string& pool, const Creation& c,
                                 const std::string& code, const std::string& message, Time now) {
  NoteStockout(
      pool,
      fmt::format("{}: {} (VM {})", code.empty() ? "ProvisioningFailed" : code, message, c.vm),
      now);
  Removal r;
  r.why = "failed creation";
  if (c.stage == Creation::Stage::kVm) {
    r.vm = c.vm;
    r.disk = DiskId(c.vm + std::string(kOsDiskSuffix));
    r.stage = Removal::Stage::kVm;
  } else {
    r.stage = Removal::Stage::kNic;
  }
  r.nics = {NicId(c.nic)};
  work_[pool].removals.push_back(std::move(r));
}

void VmsProvider::AdvanceCreations(const std::string& pool, Time now) {
  std::vector<Creation> keep;
  for (Creation& c : work_[pool].creations) {
    if (!c.op) {
      if (c.stage == Creation::Stage::kNic) {
        auto pending = PutVm(pool, c, now);
        if (pending && *pending) keep.push_back(std::move(c));
      }
      continue;
    }
    LroStep step = FollowOperation(*arm_, *c.op, now);
    switch (step.kind) {
      case LroStep::Kind::kTimedOut:
        spdlog::warn("azure-vms: pool {}: {} did not finish within {}; no longer followed", pool,
                     c.op->what, FormatDuration(settings_.operation_timeout));
        if (c.stage == Creation::Stage::kNic) {
          CreationFailed(pool, c, "OperationTimedOut", c.op->what, now);
        }
        break;
      case LroStep::Kind::kPollFailed:
        spdlog::warn("azure-vms: pool {}: {}", pool, step.error->message());
        keep.push_back(std::move(c));
        break;
      case LroStep::Kind::kWaiting:
        keep.push_back(std::move(c));
        break;
      case LroStep::Kind::kDone:
        if (CreationStepDone(pool, c, step.result, now)) keep.push_back(std::move(c));
        break;
    }
  }
  work_[pool].creations = std::move(keep);
}

bool VmsProvider::CreationStepDone(const std::string& pool, Creation& c, const OperationResult& r,
                                   Time now) {
  if (r.state != OperationResult::State::kSucceeded) {
    spdlog::warn("azure-vms: pool {}: creating {} failed: {}: {}", pool,
                 c.stage == Creation::Stage::kNic ? c.nic : c.vm, r.code, r.message);
    CreationFailed(pool, c, r.code, r.message, now);
    return false;
  }
  if (c.stage == Creation::Stage::kVm) {
    spdlog::info("azure-vms: pool {}: VM {} created", pool, c.vm);
    return false;
  }
  auto pending = PutVm(pool, c, now);
  return pending && *pending;
}

Result<void> VmsProvider::Grow(const model::Pool& p, int delta, Time now) {
  const std::string& pool = p.name;
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<json> all, ListVms());
  std::vector<PoolVm> vms = VmsOf(pool, all);
  int current = 0;
  std::set<std::string> listed;
  for (const PoolVm& vm : vms) {
    listed.insert(ToLower(vm.name));
    if (!vm.failed() && !vm.deleting() && !Removing(pool, vm.name)) ++current;
  }
  for (const Creation& c : work_[pool].creations) {
    if (!listed.contains(ToLower(c.vm))) ++current;
  }
  TIDEPOOL_RETURN_IF_ERROR(WithinMax(p, current, delta));
  auto model = BuildModel(p, vms);
  if (!model) return std::unexpected(model.error().Wrap(fmt::format("azure-vms: pool {}", pool)));
  std::set<int> used = UsedIndexes(pool, vms);
  for (int i = 0; i < delta; ++i) {
    int index = 0;
    while (used.contains(index)) ++index;
    used.insert(index);
    TIDEPOOL_RETURN_IF_ERROR(CreateOne(p, index, model->first, model->second, now));
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Scale down.

VmsProvider::Removal VmsProvider::RemovalOf(const json& vm, std::string why) {
  Removal r;
  r.vm = StringField(vm, "name");
  r.why = std::move(why);
  const json& props = ObjectField(vm, "properties");
  for (const json& ref : ArrayField(ObjectField(props, "networkProfile"), "networkInterfaces")) {
    if (auto id = StringField(ref, "id"); !id.empty()) r.nics.push_back(id);
  }
  const json& os_disk = ObjectField(ObjectField(props, "storageProfile"), "osDisk");
  r.disk = StringField(ObjectField(os_disk, "managedDisk"), "id");
  r.vhd_uri = StringField(ObjectField(os_disk, "vhd"), "uri");
  return r;
}

Result<void> VmsProvider::AdvanceRemoval(const std::string& pool, Removal& r, Time now) {
  auto next = [&] {
    switch (r.stage) {
      case Removal::Stage::kVm:
        r.stage = Removal::Stage::kNic;
        break;
      case Removal::Stage::kNic:
        if (++r.next_nic >= r.nics.size()) r.stage = Removal::Stage::kDisk;
        break;
      case Removal::Stage::kDisk:
        r.stage = Removal::Stage::kBlob;
        break;
      case Removal::Stage::kBlob:
      case Removal::Stage::kDone:
        r.stage = Removal::Stage::kDone;
        break;
    }
  };
  for (int steps = 0; steps < 16 && r.stage != Removal::Stage::kDone; ++steps) {
    if (r.op) {
      TIDEPOOL_ASSIGN_OR_RETURN(bool step_done, FollowRemovalStep(pool, r, now));
      if (!step_done) return {};
      next();
      continue;
    }
    std::string path, api, what;
    switch (r.stage) {
      case Removal::Stage::kVm:
        if (r.vm.empty()) {
          next();
          continue;
        }
        path = VmPath(r.vm);
        api = settings_.compute_api_version;
        what = "VM " + r.vm;
        break;
      case Removal::Stage::kNic:
        if (r.next_nic >= r.nics.size()) {
          r.stage = Removal::Stage::kDisk;
          continue;
        }
        path = r.nics[r.next_nic];
        api = settings_.network_api_version;
        what = "NIC " + ResourceName(path);
        break;
      case Removal::Stage::kDisk:
        if (r.disk.empty()) {
          r.stage = Removal::Stage::kBlob;
          continue;
        }
        path = r.disk;
        api = settings_.compute_api_version;
        what = "OS disk " + ResourceName(path);
        break;
      case Removal::Stage::kBlob: {
        // Not ARM: the Blob service, last, once the VM no longer holds the blob's lease.
        TIDEPOOL_RETURN_IF_ERROR(DeleteVhd(pool, r));
        next();
        continue;
      }
      case Removal::Stage::kDone:
        continue;
    }
    TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse sent, arm_->Send("DELETE", path, api, nullptr));
    if (sent.status == 404) {
      spdlog::info("azure-vms: pool {}: {} already gone ({})", pool, what, r.why);
      next();
      continue;
    }
    if (!sent.ok()) return std::unexpected(sent.AsError().Wrap(fmt::format("pool {}", pool)));
    spdlog::info("azure-vms: pool {}: deleting {} ({})", pool, what, r.why);
    if (sent.operation) {
      r.op = std::move(*sent.operation);
      return {};
    }
    next();
  }
  return {};
}

Result<bool> VmsProvider::FollowRemovalStep(const std::string& pool, Removal& r, Time now) {
  LroStep step = FollowOperation(*arm_, *r.op, now);
  const std::string what = r.op->what;
  switch (step.kind) {
    case LroStep::Kind::kWaiting:
      return false;
    case LroStep::Kind::kPollFailed:
      return std::unexpected(*step.error);
    case LroStep::Kind::kTimedOut:
      r.op.reset();
      return Fail(Error::Code::kUnavailable,
                  "azure-vms: pool {}: {} did not finish within {}; sent again at the next "
                  "refresh",
                  pool, what, FormatDuration(settings_.operation_timeout));
    case LroStep::Kind::kDone:
      break;
  }
  r.op.reset();
  if (step.result.state != OperationResult::State::kSucceeded) {
    return Fail(Error::Code::kUnavailable,
                "azure-vms: pool {}: {} failed: {}: {}; sent again at the next refresh", pool,
                what, step.result.code, step.result.message);
  }
  return true;
}

Result<void> VmsProvider::DeleteVhd(const std::string& pool, const Removal& r) {
  if (r.vhd_uri.empty()) return {};
  std::string_view uri = WithoutQuery(r.vhd_uri);
  Result<void> ours =
      IndexOfVmName(pool, r.vm) < 0
          ? InvalidArgument("VM {} does not have the pool's name pattern k8s-{}-{}-<index>", r.vm,
                            AgentPool(pool), settings_.cluster_id)
          : CheckVhdUri(r.vhd_uri, r.vm, settings_.storage_endpoint_suffix, settings_.arm_endpoint);
  if (!ours) {
    spdlog::warn(
        "azure-vms: pool {}: VM {}'s OS disk is an unmanaged VHD blob that tidepool does not "
        "delete ({}); delete it in its storage account if it is not used",
        pool, r.vm, ours.error().message());
    return {};
  }
  TIDEPOOL_ASSIGN_OR_RETURN(TokenSource * tokens, StorageTokens());
  auto deleted = DeleteBlob(http(), *tokens, *clock_, r.vhd_uri, settings_.request_timeout);
  if (!deleted) {
    return std::unexpected(deleted.error().Wrap(
        fmt::format("pool {}: VM {}'s OS disk (sent again at the next refresh)", pool, r.vm)));
  }
  switch (*deleted) {
    case BlobDelete::kDeleted:
      spdlog::info("azure-vms: pool {}: deleted OS disk blob {} ({})", pool, uri, r.why);
      return {};
    case BlobDelete::kGone:
      spdlog::info("azure-vms: pool {}: OS disk blob {} already gone ({})", pool, uri, r.why);
      return {};
    case BlobDelete::kLeased:
      break;
  }
  return Fail(Error::Code::kConflict,
              "pool {}: OS disk blob {} still has a lease (VM {} is not released "
              "yet); sent again at the next refresh",
              pool, uri, r.vm);
}

void VmsProvider::AdvanceRemovals(const std::string& pool, Time now) {
  auto& removals = work_[pool].removals;
  for (Removal& r : removals) {
    if (auto res = AdvanceRemoval(pool, r, now); !res) {
      spdlog::warn("azure-vms: {}", res.error().message());
    }
  }
  std::erase_if(removals, [](const Removal& r) { return r.stage == Removal::Stage::kDone; });
}

Result<void> VmsProvider::DeleteNode(const std::string& pool, const model::Node& node, Time now) {
  TIDEPOOL_RETURN_IF_ERROR(RequirePool(pool));
  auto ref = ParseVmResourceId(node.provider_id);
  if (!ref) {
    return InvalidArgument(
        "azure-vms: node {}: providerID \"{}\" does not name a VM (expected azure:///"
        "subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/"
        "<name>)",
        node.name(), node.provider_id);
  }
  if (!EqualsIgnoreCase(ref->resource_group, settings_.resource_group) ||
      !EqualsIgnoreCase(ref->subscription, settings_.subscription_id)) {
    return InvalidArgument(
        "azure-vms: node {} is VM {} of resource group {}, not of pool {}'s resource group {}",
        node.name(), ref->name, ref->resource_group, pool, settings_.resource_group);
  }
  if (Removing(pool, ref->name)) return {};
  bool by_name = IndexOfVmName(pool, ref->name) >= 0;
  auto cached = vm_pool_.find(ToLower(ref->name));
  if (!by_name && (cached == vm_pool_.end() || cached->second != pool)) {
    return InvalidArgument(
        "azure-vms: node {}: VM {} is not of pool {} (expected the name k8s-{}-{}-<index> or the "
        "pool's tags)",
        node.name(), ref->name, pool, AgentPool(pool), settings_.cluster_id);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse got,
                            arm_->Get(VmPath(ref->name), settings_.compute_api_version));
  if (got.status == 404) {
    spdlog::info("azure-vms: pool {}: VM {} already gone", pool, ref->name);
    return {};
  }
  if (!got.ok()) return std::unexpected(got.AsError().Wrap(fmt::format("pool {}", pool)));
  VmsPool& work = work_[pool];
  std::erase_if(work.creations,
                [&](const Creation& c) { return EqualsIgnoreCase(c.vm, ref->name); });
  work.removals.push_back(RemovalOf(got.body, "scale down"));
  auto advanced = AdvanceRemoval(pool, work.removals.back(), now);
  const Removal& r = work.removals.back();
  if (!advanced && r.stage == Removal::Stage::kVm && !r.op) {
    // The VM itself was not deleted: nothing to follow; the caller decides what to do.
    work.removals.pop_back();
    return std::unexpected(advanced.error());
  }
  if (!advanced) spdlog::warn("azure-vms: {}", advanced.error().message());
  if (r.stage == Removal::Stage::kDone) work.removals.pop_back();
  return {};
}

Result<void> VmsProvider::Shrink(const model::Pool& p, int delta, Time now) {
  const std::string& pool = p.name;
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<json> all, ListVms());
  std::vector<PoolVm> vms = VmsOf(pool, all);
  VmsPool& work = work_[pool];
  int remaining = delta;
  // Creations whose VM was not asked for yet: drop them, remove their NIC.
  std::sort(work.creations.begin(), work.creations.end(),
            [](const Creation& a, const Creation& b) { return a.index > b.index; });
  for (auto it = work.creations.begin(); it != work.creations.end() && remaining > 0;) {
    if (it->stage != Creation::Stage::kNic) {
      ++it;
      continue;
    }
    Removal r;
    r.why = "cancelled";
    r.stage = Removal::Stage::kNic;
    r.nics = {NicId(it->nic)};
    spdlog::info("azure-vms: pool {}: cancelling VM {} before it was requested", pool, it->vm);
    work.removals.push_back(std::move(r));
    it = work.creations.erase(it);
    --remaining;
  }
  std::vector<const PoolVm*> candidates;
  int alive = 0;
  for (const PoolVm& vm : vms) {
    if (vm.deleting() || Removing(pool, vm.name)) continue;
    ++alive;
    if (!Joined(vm)) candidates.push_back(&vm);
  }
  auto rank = [](const PoolVm* v) {
    if (v->failed()) return 0;
    if (EqualsIgnoreCase(v->provisioning, "Creating")) return 1;
    return 2;
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](auto* a, auto* b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return a->index > b->index;
  });
  for (const PoolVm* c : candidates) {
    if (remaining == 0) break;
    std::erase_if(work.creations,
                  [&](const Creation& x) { return EqualsIgnoreCase(x.vm, c->name); });
    work.removals.push_back(RemovalOf(c->body, "cancelled"));
    if (auto r = AdvanceRemoval(pool, work.removals.back(), now); !r) {
      spdlog::warn("azure-vms: {}", r.error().message());
    }
    --remaining;
  }
  std::erase_if(work.removals, [](const Removal& r) { return r.stage == Removal::Stage::kDone; });
  bool any_joined = alive > static_cast<int>(candidates.size());
  if (remaining > 0 && !any_joined) {
    spdlog::info("azure-vms: pool {}: {} of {} VM(s) to cancel are gone already", pool, remaining,
                 delta);
    return {};
  }
  if (remaining > 0) {
    return Fail(Error::Code::kConflict,
                "azure-vms: pool {}: cancelled {} of {} requested VM(s); the pool's other VMs "
                "have joined the cluster (or finished provisioning) and are removed only "
                "through DeleteNode",
                pool, delta - remaining, delta);
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// The sweep.

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
  auto remove = [&](const std::string& pool, const std::string& id, std::string_view api,
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
  };
  for (const model::Pool& p : pools()) {
    std::set<int> used;
    if (listed_) {
      for (const PoolVm& vm : VmsOf(p.name, *listed_)) {
        if (vm.index >= 0) used.insert(vm.index);
      }
    }
    if (auto it = work_.find(p.name); it != work_.end()) {
      for (const Creation& c : it->second.creations) used.insert(c.index);
      for (const Removal& r : it->second.removals) {
        if (int i = IndexOfVmName(p.name, r.vm); i >= 0) used.insert(i);
        for (const std::string& nic : r.nics) {
          if (int i = IndexOfNicName(p.name, ResourceName(nic)); i >= 0) used.insert(i);
        }
      }
    }
    for (const json& nic : *nics) {
      const std::string name = StringField(nic, "name");
      int index = IndexOfNicName(p.name, name);
      if (index < 0) continue;
      leftover_indexes_[p.name].insert(index);
      if (!OwnedByTags(p.name, nic)) continue;  // the name alone is not enough for a NIC
      const json& props = ObjectField(nic, "properties");
      if (!StringField(ObjectField(props, "virtualMachine"), "id").empty()) continue;
      if (used.contains(index)) continue;
      remove(p.name, StringField(nic, "id").empty() ? NicId(name) : StringField(nic, "id"),
             settings_.network_api_version, "NIC");
    }
    for (const json& disk : *disks) {
      const std::string name = StringField(disk, "name");
      int index = IndexOfDiskName(p.name, name);
      if (index < 0) continue;
      leftover_indexes_[p.name].insert(index);
      // Azure creates a VM's OS disk without the VM's tags: the pool's name pattern (which holds
      // the cluster id) decides, unless the disk's tags name another pool.
      const json& tags = ObjectField(disk, "tags");
      std::string tagged_pool = StringField(tags, kTagTidepoolPool);
      std::string tagged_agent_pool = StringField(tags, kTagPoolName);
      if ((!tagged_pool.empty() && tagged_pool != p.name) ||
          (!tagged_agent_pool.empty() && !EqualsIgnoreCase(tagged_agent_pool, AgentPool(p.name)))) {
        continue;
      }
      const json& props = ObjectField(disk, "properties");
      if (!StringField(disk, "managedBy").empty()) continue;
      if (!EqualsIgnoreCase(StringField(props, "diskState"), "Unattached")) continue;
      if (used.contains(index)) continue;
      remove(p.name, StringField(disk, "id").empty() ? DiskId(name) : StringField(disk, "id"),
             settings_.compute_api_version, "OS disk");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Mapping and discovery.

std::string VmsProvider::PoolOf(const model::Node& node) const {
  auto ref = ParseVmResourceId(node.provider_id);
  if (!ref || !EqualsIgnoreCase(ref->resource_group, settings_.resource_group) ||
      !EqualsIgnoreCase(ref->subscription, settings_.subscription_id)) {
    return "";
  }
  for (const model::Pool& p : pools()) {
    if (IndexOfVmName(p.name, ref->name) >= 0) return p.name;
  }
  auto it = vm_pool_.find(ToLower(ref->name));
  return it == vm_pool_.end() ? "" : it->second;
}

Result<std::vector<model::Pool>> VmsProvider::DiscoverPools(Time) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<json> all, ListVms());
  std::set<std::string> taken;
  for (const model::Pool& p : pools()) taken.insert(ToLower(AgentPool(p.name)));
  const std::string suffix = ToLower("-" + settings_.cluster_id + "-");
  std::map<std::string, const json*> found;  // agent pool -> a VM with a `max` tag
  for (const json& vm : all) {
    std::string name = ToLower(StringField(vm, "name"));
    std::string agent_pool;
    if (name.starts_with("k8s-")) {
      auto at = name.rfind(suffix);
      if (at != std::string::npos && at > 4 && ParseIndex(name.substr(at + suffix.size())) >= 0) {
        agent_pool = name.substr(4, at - 4);
      }
    }
    const json& tags = ObjectField(vm, "tags");
    if (agent_pool.empty() && StringField(tags, kTagResourceNameSuffix) == settings_.cluster_id) {
      agent_pool = ToLower(StringField(tags, kTagPoolName));
    }
    if (agent_pool.empty() || taken.contains(agent_pool)) continue;
    if (!tags.contains(kTagMax)) continue;
    found.emplace(agent_pool, &vm);
  }
  std::vector<model::Pool> out;
  for (const auto& [agent_pool, vm] : found) {
    // A VM of the pool stands in for a scale set: its size, priority and tags.
    const json& props = ObjectField(*vm, "properties");
    json as_scale_set = {
        {"name", StringField(*vm, "name")},
        {"tags", ObjectField(*vm, "tags")},
        {"sku", {{"name", StringField(ObjectField(props, "hardwareProfile"), "vmSize")}}},
        {"properties", {{"priority", StringField(props, "priority")}}}};
    auto pool = PoolFromScaleSet(agent_pool, as_scale_set);
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
