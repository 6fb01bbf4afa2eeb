#include "cloud/azure/vms_model.h"

#include <cstdint>
#include <utility>

#include "cloud/azure/node_template.h"
#include "cloud/json_fields.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// Copies `key` from `from` to `to` when present.
void CopyField(const json& from, json& to, std::string_view key) {
  if (from.is_object() && from.contains(key)) to[std::string(key)] = from[std::string(key)];
}

}  // namespace

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

json PoolTags(json tags, std::string_view pool, std::string_view agent_pool,
              std::string_view cluster_id) {
  tags[std::string(kTagTidepoolPool)] = pool;
  tags[std::string(kTagPoolName)] = agent_pool;
  tags[std::string(kTagResourceNameSuffix)] = cluster_id;
  return tags;
}

std::string PrimaryNicId(const json& vm) {
  std::string nic_id;
  for (const json& ref : ArrayField(ObjectField(ObjectField(vm, "properties"), "networkProfile"),
                                    "networkInterfaces")) {
    bool primary = ObjectField(ref, "properties").value("primary", false);
    if (nic_id.empty() || primary) nic_id = StringField(ref, "id");
  }
  return nic_id;
}

NewVmBodies BodiesFromClone(const json& vm, const json& nic, const json& tags,
                            const VmModel* overrides) {
  NewVmBodies out;
  out.nic = CloneNic(nic);
  out.nic["location"] = StringField(nic, "location").empty() ? StringField(vm, "location")
                                                             : StringField(nic, "location");
  out.nic["tags"] = tags;
  out.vm = CloneVm(vm);
  out.vm["location"] = StringField(vm, "location");
  out.vm["tags"] = tags;
  if (overrides == nullptr) return out;
  json& props = out.vm["properties"];
  if (!overrides->vm_size.empty()) props["hardwareProfile"]["vmSize"] = overrides->vm_size;
  if (!overrides->subnet_id.empty()) {
    for (json& ipc : out.nic["properties"]["ipConfigurations"]) {
      ipc["properties"]["subnet"] = {{"id", overrides->subnet_id}};
    }
  }
  if (!overrides->availability_set_id.empty()) {
    props["availabilitySet"] = {{"id", overrides->availability_set_id}};
  }
  return out;
}

std::unexpected<Error> MissingModelField(std::string_view key, std::string_view field,
                                         std::string_view pool, std::string_view what) {
  return InvalidArgument("{}.{}: required to create pool {}'s first VM ({})", key, field, pool,
                         what);
}

Result<void> CheckConfigModel(const VmModel& m, std::string_view vm_size, std::string_view key,
                              std::string_view pool) {
  auto missing = [&](std::string_view field, std::string_view what) {
    return MissingModelField(key, field, pool, what);
  };
  if (vm_size.empty()) return missing("vmSize", "or the pool's instanceType");
  if (!m.has_image()) return missing("imageReference", "publisher/offer/sku or id");
  if (m.subnet_id.empty()) return missing("subnetId", "the subnet's resource id");
  if (m.admin_username.empty()) return missing("adminUsername", "the VM's admin user");
  if (m.ssh_public_key_file.empty()) return missing("sshPublicKeyFile", "an OpenSSH public key");
  if (m.custom_data_file.empty()) {
    return missing("customDataFile", "the bootstrap that joins the VM to the cluster");
  }
  return {};
}

namespace {

json ImageReference(const VmModel& m) {
  if (!m.image_id.empty()) return {{"id", m.image_id}};
  return {{"publisher", m.image_publisher},
          {"offer", m.image_offer},
          {"sku", m.image_sku},
          {"version", m.image_version.empty() ? "latest" : m.image_version}};
}

json LinuxConfiguration(const std::string& admin, std::string ssh_key) {
  while (!ssh_key.empty() && (ssh_key.back() == '\n' || ssh_key.back() == '\r')) ssh_key.pop_back();
  return {{"disablePasswordAuthentication", true},
          {"ssh",
           {{"publicKeys",
             {{{"path", "/home/" + admin + "/.ssh/authorized_keys"}, {"keyData", ssh_key}}}}}}};
}

}  // namespace

NewVmBodies BodiesFromConfig(const VmModel& m, const ConfigModelInputs& in) {
  NewVmBodies out;
  out.nic = {{"location", in.location},
             {"tags", in.tags},
             {"properties",
              {{"enableIPForwarding", m.ip_forwarding},
               {"ipConfigurations",
                {{{"name", "ipconfig1"},
                  {"properties",
                   {{"primary", true},
                    {"privateIPAllocationMethod", "Dynamic"},
                    {"subnet", {{"id", m.subnet_id}}}}}}}}}}};
  out.vm = {{"location", in.location},
            {"tags", in.tags},
            {"properties",
             {{"hardwareProfile", {{"vmSize", in.vm_size}}},
              {"storageProfile",
               {{"imageReference", ImageReference(m)},
                {"osDisk",
                 {{"createOption", "FromImage"},
                  {"caching", "ReadWrite"},
                  {"managedDisk", {{"storageAccountType", m.os_disk_type}}}}}}},
              {"osProfile",
               {{"adminUsername", m.admin_username},
                {"customData", EncodeBase64(in.custom_data)},
                {"linuxConfiguration", LinuxConfiguration(m.admin_username, in.ssh_key)}}}}}};
  if (!m.availability_set_id.empty()) {
    out.vm["properties"]["availabilitySet"] = {{"id", m.availability_set_id}};
  }
  return out;
}

void NameNewVm(json& vm, const std::string& name, const std::string& os_disk,
               const std::string& nic_id) {
  json& props = vm["properties"];
  props["osProfile"]["computerName"] = name;
  props["storageProfile"]["osDisk"]["name"] = os_disk;
  props["networkProfile"] = {
      {"networkInterfaces", {{{"id", nic_id}, {"properties", {{"primary", true}}}}}}};
}

VmResources ResourcesOf(const json& vm) {
  VmResources r;
  r.name = StringField(vm, "name");
  const json& props = ObjectField(vm, "properties");
  for (const json& ref : ArrayField(ObjectField(props, "networkProfile"), "networkInterfaces")) {
    if (auto id = StringField(ref, "id"); !id.empty()) r.nics.push_back(id);
  }
  const json& os_disk = ObjectField(ObjectField(props, "storageProfile"), "osDisk");
  r.disk = StringField(ObjectField(os_disk, "managedDisk"), "id");
  r.vhd_uri = StringField(ObjectField(os_disk, "vhd"), "uri");
  return r;
}

}  // namespace tidepool::cloud::azure
