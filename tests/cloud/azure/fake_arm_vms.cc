// FakeArm, azure-vms: standalone VMs, NICs, managed disks and availability sets, their JSON, and
// the virtualMachines, networkInterfaces, disks and availabilitySets routes.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <utility>

#include "tests/cloud/azure/fake_arm.h"
#include "tests/cloud/azure/fake_arm_util.h"

namespace tidepool::testing::azure {
namespace {

using fake_arm_util::Eq;
using fake_arm_util::Lower;
using nlohmann::json;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Standalone VMs, NICs, disks and availability sets (azure-vms). mu_ held unless said otherwise.

std::string FakeArm::Id(const std::string& provider_type, const std::string& name) const {
  return ResourceGroupPath() + "/providers/" + provider_type + "/" + name;
}

std::string FakeArm::SubnetId(const std::string& subnet) const {
  return Id("Microsoft.Network/virtualNetworks", "k8s-vnet") + "/subnets/" + subnet;
}

std::string FakeArm::AvailabilitySetId(const std::string& name) const {
  return Id("Microsoft.Compute/availabilitySets", name);
}

json FakeArm::NicJson(const std::string& name, const std::map<std::string, std::string>& tags,
                      const std::string& subnet, const std::string& attached_vm) const {
  // As NetworkInterfaceGet.json (2024-05-01): ipConfigurations with subnet, virtualMachine.
  json nic = {
      {"name", name},
      {"id", Id("Microsoft.Network/networkInterfaces", name)},
      {"type", "Microsoft.Network/networkInterfaces"},
      {"location", options_.location},
      {"tags", json::object()},
      {"properties",
       {{"provisioningState", "Succeeded"},
        {"ipConfigurations",
         {{{"name", "ipconfig1"},
           {"id", Id("Microsoft.Network/networkInterfaces", name) + "/ipConfigurations/ipconfig1"},
           {"properties",
            {{"provisioningState", "Succeeded"},
             {"privateIPAddress", "10.240.0." + std::to_string(nics_.size() + 4)},
             {"privateIPAllocationMethod", "Dynamic"},
             {"subnet", {{"id", SubnetId(subnet)}}},
             {"primary", true},
             {"privateIPAddressVersion", "IPv4"}}}}}},
        {"enableAcceleratedNetworking", false},
        {"enableIPForwarding", true},
        {"primary", true}}}};
  for (const auto& [k, v] : tags) nic["tags"][k] = v;
  if (!attached_vm.empty()) {
    nic["properties"]["virtualMachine"] = {
        {"id", Id("Microsoft.Compute/virtualMachines", attached_vm)}};
  }
  return nic;
}

void FakeArm::AddAvailabilitySet(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (availability_sets_.contains(Lower(name))) return;
  availability_sets_[Lower(name)] = {
      {"name", name},
      {"id", AvailabilitySetId(name)},
      {"type", "Microsoft.Compute/availabilitySets"},
      {"location", options_.location},
      {"sku", {{"name", "Aligned"}}},
      {"properties", {{"platformFaultDomainCount", 2}, {"platformUpdateDomainCount", 3}}}};
}

void FakeArm::AddNic(const NicSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  nics_[Lower(spec.name)] = NicJson(spec.name, spec.tags, spec.subnet, spec.attached_vm);
}

void FakeArm::AddDisk(const DiskSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  json disk = {{"name", spec.name},
               {"id", Id("Microsoft.Compute/disks", spec.name)},
               {"type", "Microsoft.Compute/disks"},
               {"location", options_.location},
               {"tags", json::object()},
               {"sku", {{"name", "Premium_LRS"}, {"tier", "Premium"}}},
               {"properties",
                {{"osType", "Linux"},
                 {"diskSizeGB", 128},
                 {"provisioningState", "Succeeded"},
                 {"diskState", spec.attached_vm.empty() ? "Unattached" : "Attached"}}}};
  for (const auto& [k, v] : spec.tags) disk["tags"][k] = v;
  if (!spec.attached_vm.empty()) {
    disk["managedBy"] = Id("Microsoft.Compute/virtualMachines", spec.attached_vm);
  }
  disks_[Lower(spec.name)] = std::move(disk);
}

void FakeArm::AddVm(const VmSpec& spec) {
  if (!spec.availability_set.empty()) AddAvailabilitySet(spec.availability_set);
  std::string nic = spec.nic;
  if (nic.empty()) {
    // k8s-<pool>-<id>-<n> -> k8s-<pool>-<id>-nic-<n>
    auto dash = spec.name.rfind('-');
    nic = dash == std::string::npos ? spec.name + "-nic"
                                    : spec.name.substr(0, dash) + "-nic" + spec.name.substr(dash);
  }
  std::string disk = spec.os_disk.empty() ? spec.name + "_OsDisk_1_5f0c3a2d9e8b4c1fa6d7e0b2c4f8a913"
                                          : spec.os_disk;
  AddNic({.name = nic, .tags = spec.tags, .attached_vm = spec.name, .subnet = spec.subnet});
  if (spec.vhd_uri.empty()) AddDisk({.name = disk, .tags = spec.tags, .attached_vm = spec.name});
  std::lock_guard<std::mutex> lock(mu_);
  // As VirtualMachine_Create_InAnAvailabilitySet.json / VirtualMachine_Get (2025-04-01).
  json vm = {
      {"name", spec.name},
      {"id", Id("Microsoft.Compute/virtualMachines", spec.name)},
      {"type", "Microsoft.Compute/virtualMachines"},
      {"location", options_.location},
      {"tags", json::object()},
      {"properties",
       {{"vmId", "6f3b5a2e-0000-4000-8000-" + std::to_string(100000000000 + next_vm_id_++)},
        {"hardwareProfile", {{"vmSize", spec.vm_size}}},
        {"storageProfile",
         {{"imageReference",
           {{"publisher", "Canonical"},
            {"offer", "UbuntuServer"},
            {"sku", "16.04-LTS"},
            {"version", "16.04.201706191"}}},
          {"osDisk",
           {{"osType", "Linux"},
            {"name", disk},
            {"createOption", "FromImage"},
            {"caching", "ReadWrite"},
            {"managedDisk",
             {{"storageAccountType", "Premium_LRS"}, {"id", Id("Microsoft.Compute/disks", disk)}}},
            {"diskSizeGB", 128}}},
          {"dataDisks", json::array()}}},
        {"osProfile",
         {{"computerName", spec.name},
          {"adminUsername", "azureuser"},
          {"linuxConfiguration",
           {{"disablePasswordAuthentication", true},
            {"ssh",
             {{"publicKeys",
               {{{"path", "/home/azureuser/.ssh/authorized_keys"},
                 {"keyData", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC0fake azureuser"}}}}}}}},
          {"secrets", json::array()}}},
        {"networkProfile",
         {{"networkInterfaces",
           {{{"id", Id("Microsoft.Network/networkInterfaces", nic)},
             {"properties", {{"primary", true}}}}}}}},
        {"provisioningState", spec.provisioning}}}};
  for (const auto& [k, v] : spec.tags) vm["tags"][k] = v;
  if (!spec.availability_set.empty()) {
    vm["properties"]["availabilitySet"] = {{"id", AvailabilitySetId(spec.availability_set)}};
  }
  if (!spec.user_data.empty()) vm["properties"]["userData"] = spec.user_data;
  if (!spec.vhd_uri.empty()) {
    // As VirtualMachine_Create_WithUnmanagedOsDisk (acs-engine's storageAccount agent pools).
    json& os_disk = vm["properties"]["storageProfile"]["osDisk"];
    os_disk.erase("managedDisk");
    os_disk["name"] = spec.name + "-osdisk";
    os_disk["vhd"] = {{"uri", spec.vhd_uri}};
  }
  Vm state;
  state.body = std::move(vm);
  state.announced = spec.provisioning == "Succeeded";
  vms_[Lower(spec.name)] = std::move(state);
}

std::vector<std::string> FakeArm::VmNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [k, vm] : vms_) out.push_back(vm.body["name"].get<std::string>());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> FakeArm::NicNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [k, nic] : nics_) out.push_back(nic["name"].get<std::string>());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> FakeArm::DiskNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [k, disk] : disks_) out.push_back(disk["name"].get<std::string>());
  std::sort(out.begin(), out.end());
  return out;
}

std::string FakeArm::VmState(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = vms_.find(Lower(name));
  if (it == vms_.end()) return "";
  return it->second.body["properties"].value("provisioningState", "");
}

std::string FakeArm::VmPower(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = vms_.find(Lower(name));
  return it == vms_.end() ? "" : it->second.power;
}

void FakeArm::ForgetNicOrDisk(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  nics_.erase(Lower(name));
  disks_.erase(Lower(name));
}

json FakeArm::VmPutBody(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = vms_.find(Lower(name));
  return it == vms_.end() ? json() : it->second.put_body;
}

json FakeArm::NicPutBody(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nic_puts_.find(Lower(name));
  return it == nic_puts_.end() ? json() : it->second;
}

InstanceEvent FakeArm::VmEventFor(const Vm& vm) const {
  InstanceEvent e;
  e.instance_id = vm.body["name"].get<std::string>();
  e.provider_id = "azure://" + vm.body["id"].get<std::string>();
  e.node_name = e.instance_id;
  e.vm_size = vm.body["properties"]["hardwareProfile"].value("vmSize", "");
  e.spot = vm.body["properties"].value("priority", "") == "Spot";
  if (vm.body.contains("tags") && vm.body["tags"].is_object()) {
    for (const auto& [k, v] : vm.body["tags"].items()) {
      if (v.is_string()) e.labels[k] = v.get<std::string>();
    }
  }
  return e;
}

json FakeArm::StandaloneVmJson(const Vm& vm, bool instance_view, bool user_data) const {
  json j = vm.body;
  json& props = j["properties"];
  props["osProfile"].erase("customData");  // ARM never returns it
  if (!user_data) props.erase("userData");
  if (instance_view) {
    std::string state = props.value("provisioningState", "");
    json statuses = json::array();
    if (state == "Failed") {
      statuses.push_back({{"code", "ProvisioningState/failed/" + vm.error_code},
                          {"level", "Error"},
                          {"displayStatus", "Provisioning failed"},
                          {"message", vm.error_message}});
      if (vm.power == "deallocated") {  // a start that failed
        statuses.push_back({{"code", "PowerState/deallocated"}, {"level", "Info"}});
      }
    } else {
      statuses.push_back({{"code", "ProvisioningState/" + Lower(state)},
                          {"level", "Info"},
                          {"displayStatus", "Provisioning " + Lower(state)}});
      const std::string power = state == "Succeeded" ? vm.power : "starting";
      statuses.push_back(
          {{"code", "PowerState/" + power}, {"level", "Info"}, {"displayStatus", "VM " + power}});
    }
    props["instanceView"] = {{"statuses", statuses}};
  }
  return j;
}

void FakeArm::RouteVms(const std::vector<std::string>& seg, const httplib::Request& req,
                       httplib::Response& res, Events& events) {
  if (Eq(seg[6], "availabilitySets")) {
    auto it = seg.size() == 8 ? availability_sets_.find(Lower(seg[7])) : availability_sets_.end();
    if (it == availability_sets_.end() || req.method != "GET") {
      return SendError(res, 404, "ResourceNotFound",
                       "The Resource 'Microsoft.Compute/availabilitySets/" +
                           (seg.size() >= 8 ? seg[7] : "") + "' was not found.");
    }
    res.status = 200;
    res.set_content(it->second.dump(), "application/json");
    return;
  }
  if (seg.size() == 7 && req.method == "GET") {
    bool view = req.get_param_value("$expand") == "instanceView";
    std::vector<json> items;
    for (const auto& [name, vm] : vms_) items.push_back(StandaloneVmJson(vm, view, false));
    return SendList(req, res, items);
  }
  const bool power_action =
      seg.size() == 9 && req.method == "POST" && (Eq(seg[8], "deallocate") || Eq(seg[8], "start"));
  if (seg.size() != 8 && !power_action) {
    return SendError(res, 405, "MethodNotAllowed", "Not supported by the fake.");
  }
  const std::string key = Lower(seg[7]);
  auto it = vms_.find(key);
  auto not_found = [&] {
    SendError(res, 404, "ResourceNotFound",
              "The Resource 'Microsoft.Compute/virtualMachines/" + seg[7] +
                  "' under resource group '" + options_.resource_group + "' was not found.");
  };
  if (power_action) {
    if (it == vms_.end()) return not_found();
    return VmPowerAction(it->second, Eq(seg[8], "start"), res, events);
  }
  if (req.method == "GET") {
    if (it == vms_.end()) return not_found();
    std::string expand = req.get_param_value("$expand");
    res.status = 200;
    res.set_content(
        StandaloneVmJson(it->second, expand == "instanceView", expand == "userData").dump(),
        "application/json");
    return;
  }
  if (req.method == "DELETE") {
    if (it == vms_.end()) return not_found();
    it->second.body["properties"]["provisioningState"] = "Deleting";
    Op op;
    op.vm_delete = key;
    std::string id = StartOp(std::move(op), events);
    res.status = 202;
    AsyncHeaders(res, id, "Microsoft.Compute", AsyncStyle::kLocation);
    return;
  }
  if (req.method != "PUT") {
    return SendError(res, 405, "MethodNotAllowed", "Not supported by the fake.");
  }
  // VirtualMachines_CreateOrUpdate: the parts a real VM needs, checked as ARM would.
  json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("properties") || !body["properties"].is_object()) {
    return SendError(res, 400, "InvalidRequestContent", "The request content was invalid.");
  }
  if (body.value("location", "").empty()) {
    return SendError(res, 400, "LocationRequired", "The location property is required.");
  }
  const json& props = body["properties"];
  auto str = [](const json& j, std::initializer_list<const char*> path) -> std::string {
    const json* at = &j;
    for (const char* p : path) {
      if (!at->is_object() || !at->contains(p)) return "";
      at = &(*at)[p];
    }
    return at->is_string() ? at->get<std::string>() : "";
  };
  if (str(props, {"hardwareProfile", "vmSize"}).empty()) {
    return SendError(res, 400, "InvalidParameter", "Required parameter 'vmSize' is missing.");
  }
  if (!props.contains("storageProfile") || !props["storageProfile"].contains("imageReference") ||
      props["storageProfile"]["imageReference"].empty()) {
    return SendError(res, 400, "InvalidParameter",
                     "Required parameter 'imageReference' is missing (null).");
  }
  if (str(props, {"osProfile", "adminUsername"}).empty() ||
      str(props, {"osProfile", "computerName"}).empty()) {
    return SendError(res, 400, "InvalidParameter",
                     "Required parameter 'osProfile.adminUsername' is missing (null).");
  }
  if (!props.contains("networkProfile") || !props["networkProfile"].contains("networkInterfaces") ||
      props["networkProfile"]["networkInterfaces"].empty()) {
    return SendError(res, 400, "InvalidParameter", "networkInterfaces is required.");
  }
  const std::string nic_id = props["networkProfile"]["networkInterfaces"][0].value("id", "");
  auto nic = nics_.find(Lower(nic_id.substr(nic_id.rfind('/') + 1)));
  if (nic == nics_.end()) {
    return SendError(
        res, 400, "InvalidResourceReference",
        "Resource " + nic_id + " referenced by resource " + seg[7] + " was not found.");
  }
  const std::string vm_id = Id("Microsoft.Compute/virtualMachines", seg[7]);
  if (nic->second["properties"].contains("virtualMachine") &&
      !Eq(nic->second["properties"]["virtualMachine"].value("id", ""), vm_id)) {
    return SendError(res, 400, "NicInUse",
                     "Network Interface " + nic_id + " is used by existing resource " +
                         nic->second["properties"]["virtualMachine"].value("id", "") + ".");
  }
  if (std::string as = str(props, {"availabilitySet", "id"}); !as.empty()) {
    if (!availability_sets_.contains(Lower(as.substr(as.rfind('/') + 1)))) {
      return SendError(res, 404, "NotFound", "Availability set " + as + " was not found.");
    }
  }
  if (it != vms_.end()) {
    // An update of an existing VM: keep it simple, answer with what is there.
    it->second.put_body = body;
    res.status = 200;
    res.set_content(StandaloneVmJson(it->second, false, false).dump(), "application/json");
    return;
  }
  Vm vm;
  vm.put_body = body;
  vm.body = body;
  vm.body["name"] = seg[7];
  vm.body["id"] = vm_id;
  vm.body["type"] = "Microsoft.Compute/virtualMachines";
  if (!vm.body.contains("tags")) vm.body["tags"] = json::object();
  json& p = vm.body["properties"];
  p["vmId"] = "6f3b5a2e-0000-4000-8000-" + std::to_string(100000000000 + next_vm_id_++);
  p["provisioningState"] = "Creating";
  json& os_disk = p["storageProfile"]["osDisk"];
  std::string disk_name = os_disk.value("name", "");
  if (disk_name.empty()) {
    disk_name = seg[7] + "_OsDisk_1_" + std::to_string(next_vm_id_) + "c0ffee";
  }
  if (disks_.contains(Lower(disk_name))) {
    return SendError(res, 409, "ConflictingUserInput",
                     "Disk " + disk_name + " already exists in resource group " +
                         options_.resource_group + ". Only CreateOption.Attach is supported.");
  }
  os_disk["name"] = disk_name;
  os_disk["osType"] = "Linux";
  if (!os_disk.contains("managedDisk")) os_disk["managedDisk"] = json::object();
  os_disk["managedDisk"]["id"] = Id("Microsoft.Compute/disks", disk_name);
  disks_[Lower(disk_name)] = {
      {"name", disk_name},
      {"id", Id("Microsoft.Compute/disks", disk_name)},
      {"type", "Microsoft.Compute/disks"},
      {"location", options_.location},
      {"managedBy", vm_id},
      {"properties",
       {{"osType", "Linux"}, {"provisioningState", "Succeeded"}, {"diskState", "Attached"}}}};
  nic->second["properties"]["virtualMachine"] = {{"id", vm_id}};
  Op op;
  op.vm_create = key;
  TakeFault(fail_next_vm_create_, op);
  vms_[key] = std::move(vm);
  json answer = StandaloneVmJson(vms_[key], false, false);
  std::string id = StartOp(std::move(op), events);
  res.status = 201;
  AsyncHeaders(res, id, "Microsoft.Compute", AsyncStyle::kAsyncOperation);
  res.set_content(answer.dump(), "application/json");
}

void FakeArm::VmPowerAction(Vm& vm, bool start, httplib::Response& res, Events& events) {
  // As VirtualMachine_Deallocate_MaximumSet_Gen.json / VirtualMachine_Start_MaximumSet_Gen.json
  // of the REST specs (2025-04-01): no body, 202 with a location header (ours pointing at this
  // server).
  json& props = vm.body["properties"];
  if (props.value("provisioningState", "") == "Deleting") {
    return SendError(res, 409, "OperationNotAllowed",
                     "The operation is not allowed while the VM is being deleted.");
  }
  Op op;
  const std::string key = Lower(vm.body["name"].get<std::string>());
  if (start && vm.power != "running") {
    vm.power = "starting";
    op.vm_start = key;
    TakeFault(fail_next_start_, op);
  } else if (!start && vm.power != "deallocated") {
    vm.power = "deallocating";
    op.vm_deallocate = key;
  }
  std::string id = StartOp(std::move(op), events);
  res.status = 202;
  AsyncHeaders(res, id, "Microsoft.Compute", AsyncStyle::kLocation);
}

void FakeArm::FinishVmPower(Op& op, Events& events) {
  for (const std::string* key : {&op.vm_deallocate, &op.vm_start}) {
    auto it = key->empty() ? vms_.end() : vms_.find(*key);
    if (it == vms_.end()) continue;
    Vm& vm = it->second;
    const bool start = key == &op.vm_start;
    if (start && op.failed) {
      vm.power = "deallocated";
      vm.body["properties"]["provisioningState"] = "Failed";
      vm.error_code = op.code;
      vm.error_message = op.message;
      continue;
    }
    vm.power = start ? "running" : "deallocated";
    // A deallocated VM keeps its OS disk, Reserved (still managedBy the VM), and its NIC.
    for (auto& [name, disk] : disks_) {
      if (Eq(disk.value("managedBy", ""), vm.body["id"].get<std::string>())) {
        disk["properties"]["diskState"] = start ? "Attached" : "Reserved";
      }
    }
    if (start) {
      vm.announced = true;
      events.emplace_back(true, VmEventFor(vm));
    } else if (vm.announced) {
      vm.announced = false;
      events.emplace_back(false, VmEventFor(vm));
    }
  }
  op.vm_deallocate.clear();
  op.vm_start.clear();
}

void FakeArm::RouteNics(const std::vector<std::string>& seg, const httplib::Request& req,
                        httplib::Response& res, Events& events) {
  if (seg.size() == 7 && req.method == "GET") {
    std::vector<json> items;
    for (const auto& [name, nic] : nics_) items.push_back(nic);
    return SendList(req, res, items);
  }
  if (seg.size() != 8) {
    return SendError(res, 405, "MethodNotAllowed", "Not supported by the fake.");
  }
  const std::string key = Lower(seg[7]);
  auto it = nics_.find(key);
  auto not_found = [&] {
    SendError(res, 404, "NotFound",
              "Resource /subscriptions/" + options_.subscription + "/resourceGroups/" +
                  options_.resource_group + "/providers/Microsoft.Network/networkInterfaces/" +
                  seg[7] + " not found.");
  };
  if (req.method == "GET") {
    if (it == nics_.end()) return not_found();
    res.status = 200;
    res.set_content(it->second.dump(), "application/json");
    return;
  }
  if (req.method == "DELETE") {
    if (it == nics_.end()) return not_found();
    if (it->second["properties"].contains("virtualMachine")) {
      return SendError(res, 400, "NicInUse",
                       "Network Interface " + it->second["id"].get<std::string>() +
                           " is used by existing resource " +
                           it->second["properties"]["virtualMachine"].value("id", "") +
                           ". In order to delete the network interface, it must be dissociated "
                           "from the resource.");
    }
    Op op;
    op.nic_delete = key;
    std::string id = StartOp(std::move(op), events);
    res.status = 202;
    AsyncHeaders(res, id, "Microsoft.Network", AsyncStyle::kLocation);
    return;
  }
  if (req.method != "PUT") {
    return SendError(res, 405, "MethodNotAllowed", "Not supported by the fake.");
  }
  // NetworkInterfaces_CreateOrUpdate, as NetworkInterfaceCreate.json.
  json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("properties") ||
      !body["properties"].contains("ipConfigurations") ||
      !body["properties"]["ipConfigurations"].is_array() ||
      body["properties"]["ipConfigurations"].empty()) {
    return SendError(res, 400, "InvalidRequestFormat",
                     "Cannot parse the request: ipConfigurations are required.");
  }
  if (body.value("location", "").empty()) {
    return SendError(res, 400, "LocationRequired", "The location property is required.");
  }
  const json& first = body["properties"]["ipConfigurations"][0];
  std::string subnet;
  if (first.contains("properties") && first["properties"].contains("subnet")) {
    subnet = first["properties"]["subnet"].value("id", "");
  }
  if (subnet.empty()) {
    return SendError(res, 400, "SubnetRequired",
                     "IP configuration " + first.value("name", "") + " must reference a subnet.");
  }
  nic_puts_[key] = body;
  bool created = it == nics_.end();
  std::map<std::string, std::string> tags;
  if (body.contains("tags") && body["tags"].is_object()) {
    for (const auto& [k, v] : body["tags"].items()) {
      if (v.is_string()) tags[k] = v.get<std::string>();
    }
  }
  std::string attached = created ? ""
                         : it->second["properties"].contains("virtualMachine")
                             ? it->second["properties"]["virtualMachine"]["id"].get<std::string>()
                             : "";
  json nic = NicJson(seg[7], tags, subnet.substr(subnet.rfind('/') + 1),
                     attached.empty() ? "" : attached.substr(attached.rfind('/') + 1));
  nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"] = subnet;
  nic["properties"]["enableIPForwarding"] = body["properties"].value("enableIPForwarding", false);
  Op op;
  op.nic_create = key;
  nic["properties"]["provisioningState"] = operation_polls_ > 0 ? "Updating" : "Succeeded";
  nics_[key] = nic;
  std::string id = StartOp(std::move(op), events);
  res.status = created ? 201 : 200;
  AsyncHeaders(res, id, "Microsoft.Network", AsyncStyle::kAsyncOperation);
  res.set_content(nics_[key].dump(), "application/json");
}

void FakeArm::RouteDisks(const std::vector<std::string>& seg, const httplib::Request& req,
                         httplib::Response& res, Events& events) {
  if (seg.size() == 7 && req.method == "GET") {
    std::vector<json> items;
    for (const auto& [name, disk] : disks_) items.push_back(disk);
    return SendList(req, res, items);
  }
  if (seg.size() != 8) {
    return SendError(res, 405, "MethodNotAllowed", "Not supported by the fake.");
  }
  const std::string key = Lower(seg[7]);
  auto it = disks_.find(key);
  auto not_found = [&] {
    SendError(res, 404, "ResourceNotFound",
              "The Resource 'Microsoft.Compute/disks/" + seg[7] + "' under resource group '" +
                  options_.resource_group + "' was not found.");
  };
  if (req.method == "GET") {
    if (it == disks_.end()) return not_found();
    res.status = 200;
    res.set_content(it->second.dump(), "application/json");
    return;
  }
  if (req.method == "DELETE") {
    if (it == disks_.end()) return not_found();
    if (!it->second.value("managedBy", "").empty()) {
      return SendError(res, 409, "OperationNotAllowed",
                       "Disk " + seg[7] + " is attached to VM " +
                           it->second["managedBy"].get<std::string>() + ".");
    }
    Op op;
    op.disk_delete = key;
    std::string id = StartOp(std::move(op), events);
    res.status = 202;
    AsyncHeaders(res, id, "Microsoft.Compute", AsyncStyle::kLocation);
    return;
  }
  SendError(res, 405, "MethodNotAllowed", "Not supported by the fake.");
}

}  // namespace tidepool::testing::azure
