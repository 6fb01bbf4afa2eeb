// FakeArm, scale sets: their state and instances, the operations every write starts (and what
// finishing one does), their JSON, and the virtualMachineScaleSets and operation routes.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "tests/cloud/azure/fake_arm.h"
#include "tests/cloud/azure/fake_arm_util.h"

namespace tidepool::testing::azure {
namespace {

using fake_arm_util::Base36;
using fake_arm_util::Eq;
using fake_arm_util::Lower;
using nlohmann::json;

}  // namespace

// ---------------------------------------------------------------------------------------------
// State.

void FakeArm::AddScaleSet(const ScaleSetSpec& spec) {
  Events events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ScaleSet ss;
    ss.spec = spec;
    scale_sets_[Lower(spec.name)] = ss;
    Resize(scale_sets_[Lower(spec.name)], spec.capacity, events);
  }
  Announce(events);
}

int FakeArm::Capacity(const std::string& scale_set) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = scale_sets_.find(Lower(scale_set));
  return it == scale_sets_.end() ? -1 : it->second.capacity;
}

std::vector<std::string> FakeArm::InstanceIds(const std::string& scale_set) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  auto it = scale_sets_.find(Lower(scale_set));
  if (it != scale_sets_.end()) {
    for (const auto& in : it->second.instances) out.push_back(in.id);
  }
  return out;
}

std::string FakeArm::InstanceState(const std::string& scale_set, const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = scale_sets_.find(Lower(scale_set));
  if (it == scale_sets_.end()) return "";
  for (const auto& in : it->second.instances)
    if (in.id == id) return in.provisioning;
  return "";
}

std::string FakeArm::InstancePower(const std::string& scale_set, const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = scale_sets_.find(Lower(scale_set));
  if (it == scale_sets_.end()) return "";
  for (const auto& in : it->second.instances)
    if (in.id == id) return in.power;
  return "";
}

void FakeArm::EvictSpotInstance(const std::string& scale_set, const std::string& instance_id) {
  Events events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ScaleSet& ss = scale_sets_.at(Lower(scale_set));
    RemoveInstances(ss, {instance_id}, events);
    ss.capacity = std::max(0, ss.capacity - 1);
    ++ss.etag;
  }
  Announce(events);
}

// ---------------------------------------------------------------------------------------------
// Instances and operations (mu_ held).

InstanceEvent FakeArm::EventFor(const ScaleSet& ss, const Instance& in) const {
  InstanceEvent e;
  e.scale_set = ss.spec.name;
  e.instance_id = in.id;
  e.provider_id = "azure://" + ResourceGroupPath() +
                  "/providers/Microsoft.Compute/virtualMachineScaleSets/" + ss.spec.name +
                  "/virtualMachines/" + in.id;
  e.node_name = ss.spec.name + Base36(std::stoi(in.id));
  e.vm_size = ss.spec.sku;
  e.spot = ss.spec.spot;
  e.agent_pool = ss.agent_pool;
  for (const auto& [k, v] : ss.spec.tags) e.labels[k] = v;
  if (!ss.agent_pool.empty()) {
    const AgentPool& ap = aks_.at(ss.cluster).at(ss.agent_pool);
    for (const auto& [k, v] : ap.spec.node_labels) e.labels[k] = v;
    e.labels["kubernetes.azure.com/agentpool"] = ss.agent_pool;
  }
  return e;
}

std::string FakeArm::Resize(ScaleSet& ss, int capacity, Events& events) {
  return Resize(ss, capacity, events, Op{});
}

std::string FakeArm::Resize(ScaleSet& ss, int capacity, Events& events, Op op) {
  op.scale_set = Lower(ss.spec.name);
  if (capacity > ss.capacity) {
    std::optional<std::pair<std::string, std::string>> failure;
    std::swap(failure, fail_next_scale_up_);
    int to_fail = fail_next_scale_up_instances_ > 0 ? fail_next_scale_up_instances_ : capacity;
    for (int i = ss.capacity; i < capacity; ++i) {
      Instance in;
      in.id = std::to_string(ss.next_id++);
      in.provisioning = "Creating";
      if (failure && to_fail-- > 0) {
        in.provisioning = "Failed";
        in.error_code = failure->first;
        in.error_message = failure->second;
      } else {
        op.creating.push_back(in.id);
      }
      ss.instances.push_back(in);
    }
    if (failure) {
      op.failed = true;
      op.code = failure->first;
      op.message = failure->second;
    }
  } else if (capacity < ss.capacity) {
    // Scale-in takes the highest ids (enough for a fake).
    std::vector<std::string> ids;
    for (auto it = ss.instances.rbegin();
         it != ss.instances.rend() && static_cast<int>(ids.size()) < ss.capacity - capacity; ++it) {
      ids.push_back(it->id);
    }
    RemoveInstances(ss, ids, events);
  }
  ss.capacity = capacity;
  ++ss.etag;
  return StartOp(std::move(op), events);
}

std::string FakeArm::StartOp(Op op, Events& events) {
  std::string id = "op-" + std::to_string(next_op_++);
  op.polls_left = operation_polls_;
  if (op.polls_left == 0) FinishOp(op, events);
  ops_[id] = std::move(op);
  return id;
}

void FakeArm::TakeFault(std::optional<std::pair<std::string, std::string>>& fault, Op& op) {
  if (!fault) return;
  op.failed = true;
  op.code = fault->first;
  op.message = fault->second;
  fault.reset();
}

void FakeArm::FinishOp(Op& op, Events& events) {
  if (!op.vm_create.empty()) {
    if (auto vm = vms_.find(op.vm_create); vm != vms_.end()) {
      if (op.failed) {
        vm->second.body["properties"]["provisioningState"] = "Failed";
        vm->second.error_code = op.code;
        vm->second.error_message = op.message;
      } else {
        vm->second.body["properties"]["provisioningState"] = "Succeeded";
        vm->second.announced = true;
        events.emplace_back(true, VmEventFor(vm->second));
      }
    }
    op.vm_create.clear();
  }
  if (!op.vm_delete.empty()) {
    if (auto vm = vms_.find(op.vm_delete); vm != vms_.end()) {
      const std::string id = vm->second.body["id"].get<std::string>();
      for (auto& [name, nic] : nics_) {
        if (nic["properties"].contains("virtualMachine") &&
            Eq(nic["properties"]["virtualMachine"].value("id", ""), id)) {
          nic["properties"].erase("virtualMachine");
        }
      }
      for (auto& [name, disk] : disks_) {
        if (Eq(disk.value("managedBy", ""), id)) {
          disk.erase("managedBy");
          disk["properties"]["diskState"] = "Unattached";
        }
      }
      if (vm->second.announced) events.emplace_back(false, VmEventFor(vm->second));
      vms_.erase(vm);
    }
    op.vm_delete.clear();
  }
  if (!op.nic_create.empty()) {
    if (auto nic = nics_.find(op.nic_create); nic != nics_.end()) {
      nic->second["properties"]["provisioningState"] = "Succeeded";
    }
    op.nic_create.clear();
  }
  if (!op.nic_delete.empty()) {
    nics_.erase(op.nic_delete);
    op.nic_delete.clear();
  }
  if (!op.disk_delete.empty()) {
    disks_.erase(op.disk_delete);
    op.disk_delete.clear();
  }
  FinishVmPower(op, events);
  auto it = scale_sets_.find(op.scale_set);
  if (it == scale_sets_.end()) return;
  ScaleSet& ss = it->second;
  for (auto& in : ss.instances) {
    if (std::find(op.creating.begin(), op.creating.end(), in.id) != op.creating.end() &&
        in.provisioning == "Creating") {
      in.provisioning = "Succeeded";
      in.announced = true;
      events.emplace_back(true, EventFor(ss, in));
    }
  }
  op.creating.clear();
  FinishPower(ss, op, events);
  if (!op.deleting.empty()) {
    std::vector<std::string> ids = std::move(op.deleting);
    op.deleting.clear();
    RemoveInstances(ss, ids, events);
  }
}

void FakeArm::RemoveInstances(ScaleSet& ss, const std::vector<std::string>& ids, Events& events) {
  auto& v = ss.instances;
  for (auto it = v.begin(); it != v.end();) {
    if (std::find(ids.begin(), ids.end(), it->id) != ids.end()) {
      if (it->announced) events.emplace_back(false, EventFor(ss, *it));
      it = v.erase(it);
    } else {
      ++it;
    }
  }
}

void FakeArm::Announce(const Events& events) {
  std::function<void(const InstanceEvent&)> created, deleted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    created = on_created_;
    deleted = on_deleted_;
  }
  for (const auto& [is_created, e] : events) {
    if (is_created && created) created(e);
    if (!is_created && deleted) deleted(e);
  }
}

void FakeArm::FinishPower(ScaleSet& ss, Op& op, Events& events) {
  for (auto& in : ss.instances) {
    bool deallocating =
        std::find(op.deallocating.begin(), op.deallocating.end(), in.id) != op.deallocating.end();
    bool starting = std::find(op.starting.begin(), op.starting.end(), in.id) != op.starting.end();
    if (deallocating && in.power == "deallocating") {
      in.power = "deallocated";
      if (in.announced) events.emplace_back(false, EventFor(ss, in));
      in.announced = false;
    } else if (starting && in.power == "starting") {
      if (op.failed) {
        in.power = "deallocated";
        in.provisioning = "Failed";
        in.error_code = op.code;
        in.error_message = op.message;
      } else {
        in.power = "running";
        in.announced = true;
        events.emplace_back(true, EventFor(ss, in));
      }
    }
  }
  op.deallocating.clear();
  op.starting.clear();
}

std::optional<std::vector<FakeArm::Instance*>> FakeArm::RequestedInstances(
    ScaleSet& ss, const httplib::Request& req, httplib::Response& res, bool deleting_ok) {
  json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("instanceIds") || !body["instanceIds"].is_array()) {
    SendError(res, 400, "InvalidParameter", "instanceIds is required.");
    return std::nullopt;
  }
  std::vector<Instance*> out;
  for (const auto& id : body["instanceIds"]) {
    std::string s = id.get<std::string>();
    auto in = std::find_if(ss.instances.begin(), ss.instances.end(),
                           [&](const Instance& i) { return i.id == s; });
    if (in == ss.instances.end() || (!deleting_ok && in->provisioning == "Deleting")) {
      SendError(res, 404, "NotFound",
                "The entity was not found in this Azure location: instance " + s);
      return std::nullopt;
    }
    out.push_back(&*in);
  }
  return out;
}

void FakeArm::PowerAction(ScaleSet& ss, bool start, const httplib::Request& req,
                          httplib::Response& res, Events& events) {
  // As VirtualMachineScaleSet_Deallocate_* / _Start_* of the REST specs: body
  // {"instanceIds": [...]}, answer 202 with a location header (ours pointing at this server).
  auto named = RequestedInstances(ss, req, res, /*deleting_ok=*/false);
  if (!named) return;
  Op op;
  op.scale_set = Lower(ss.spec.name);
  for (Instance* in : *named) {
    if (start && in->power != "running") {
      in->power = "starting";
      op.starting.push_back(in->id);
    } else if (!start && in->power != "deallocated") {
      in->power = "deallocating";
      op.deallocating.push_back(in->id);
    }
  }
  if (start) TakeFault(fail_next_start_, op);
  std::string id = StartOp(std::move(op), events);
  res.status = 202;
  AsyncHeaders(res, id, "Microsoft.Compute", AsyncStyle::kLocation);
}

// ---------------------------------------------------------------------------------------------
// JSON built from the examples.

json FakeArm::ScaleSetJson(const ScaleSet& ss) const {
  json j = Example("vmss/VirtualMachineScaleSet_Get_WithUserData.json");
  j["name"] = ss.spec.name;
  j["id"] =
      ResourceGroupPath() + "/providers/Microsoft.Compute/virtualMachineScaleSets/" + ss.spec.name;
  j["location"] = options_.location;
  j["etag"] = "\"" + std::to_string(ss.etag) + "\"";
  j["tags"] = json::object();
  for (const auto& [k, v] : ss.spec.tags) j["tags"][k] = v;
  j["sku"] = {{"name", ss.spec.sku}, {"tier", "Standard"}, {"capacity", ss.capacity}};
  json& props = j["properties"];
  props["provisioningState"] = "Succeeded";
  props.erase("hostGroup");
  props["virtualMachineProfile"].erase("userData");
  props["virtualMachineProfile"]["osProfile"]["computerNamePrefix"] = ss.spec.name;
  if (ss.spec.spot) {
    // As VirtualMachineScaleSet_Create_WithSpotRestorePolicy.json, with Delete eviction.
    props["virtualMachineProfile"]["priority"] = "Spot";
    props["virtualMachineProfile"]["evictionPolicy"] = "Delete";
    props["virtualMachineProfile"]["billingProfile"] = {{"maxPrice", -1}};
    props["priority"] = "Spot";  // where tidepool reads it for templates
  }
  return j;
}

json FakeArm::VmJson(const ScaleSet& ss, const Instance& in) const {
  json j = Example("vmss/VirtualMachineScaleSetVM_Get_WithUserData.json");
  j["name"] = ss.spec.name + "_" + in.id;
  j["id"] = ResourceGroupPath() + "/providers/Microsoft.Compute/virtualMachineScaleSets/" +
            ss.spec.name + "/virtualMachines/" + in.id;
  j["instanceId"] = in.id;
  j["location"] = options_.location;
  j["sku"] = {{"name", ss.spec.sku}, {"tier", "Standard"}};
  j.erase("resources");
  json& props = j["properties"];
  props.erase("userData");
  props["provisioningState"] = in.provisioning;
  props["osProfile"]["computerName"] = ss.spec.name + Base36(std::stoi(in.id));
  props["hardwareProfile"] = {{"vmSize", ss.spec.sku}};
  json view =
      Example("vmss/VirtualMachineScaleSetVM_Get_InstanceViewAutoPlacedOnDedicatedHostGroup.json");
  view.erase("assignedHost");
  json statuses = json::array();
  if (in.provisioning == "Failed") {
    statuses.push_back({{"code", "ProvisioningState/failed/" + in.error_code},
                        {"level", "Error"},
                        {"displayStatus", "Provisioning failed"},
                        {"message", in.error_message}});
    statuses.push_back({{"code", "PowerState/stopped"}, {"level", "Info"}});
  } else {
    json prov = view["statuses"][0];
    prov["code"] = "ProvisioningState/" + Lower(in.provisioning);
    statuses.push_back(prov);
    json power = view["statuses"][1];
    std::string state = in.provisioning != "Succeeded" ? "starting" : in.power;
    power["code"] = "PowerState/" + state;
    power["displayStatus"] = "VM " + state;
    statuses.push_back(power);
  }
  view["statuses"] = statuses;
  props["instanceView"] = view;
  return j;
}

// ---------------------------------------------------------------------------------------------
// HTTP.

void FakeArm::RouteCompute(const std::vector<std::string>& seg, const httplib::Request& req,
                           httplib::Response& res, Events& events) {
  if (seg.size() == 7 && req.method == "GET") {
    std::vector<json> items;
    for (const auto& [name, ss] : scale_sets_) items.push_back(ScaleSetJson(ss));
    return SendList(req, res, items);
  }
  auto it = seg.size() >= 8 ? scale_sets_.find(Lower(seg[7])) : scale_sets_.end();
  if (it == scale_sets_.end()) {
    return SendError(res, 404, "ResourceNotFound",
                     "The Resource 'Microsoft.Compute/virtualMachineScaleSets/" +
                         (seg.size() >= 8 ? seg[7] : "") + "' under resource group '" +
                         options_.resource_group + "' was not found.");
  }
  ScaleSet& ss = it->second;
  if (seg.size() == 8 && req.method == "GET") {
    res.status = 200;
    res.set_header("ETag", "\"" + std::to_string(ss.etag) + "\"");
    res.set_content(ScaleSetJson(ss).dump(), "application/json");
    return;
  }
  if (seg.size() == 8 && req.method == "PATCH") {
    std::string if_match = req.get_header_value("If-Match");
    if (etag_mismatch_next_ && !if_match.empty()) {
      etag_mismatch_next_ = false;
      ++ss.etag;  // someone else changed it
    }
    if (!if_match.empty() && if_match != "\"" + std::to_string(ss.etag) + "\"") {
      return SendError(res, 412, "PreconditionFailed",
                       "The specified precondition 'If-Match' is not met.");
    }
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) return SendError(res, 400, "InvalidRequestContent", "bad JSON");
    std::string op;
    if (body.contains("sku") && body["sku"].contains("capacity")) {
      op = Resize(ss, body["sku"]["capacity"].get<int>(), events);
    } else {
      ++ss.etag;
      op = StartOp(Op{}, events);
    }
    res.status = 200;
    AsyncHeaders(res, op, "Microsoft.Compute", AsyncStyle::kAsyncOperation);
    res.set_content(ScaleSetJson(ss).dump(), "application/json");
    return;
  }
  if (seg.size() == 9 && Eq(seg[8], "virtualMachines") && req.method == "GET") {
    std::vector<json> items;
    bool view = req.get_param_value("$expand") == "instanceView";
    for (const auto& in : ss.instances) {
      json vm = VmJson(ss, in);
      if (!view) vm["properties"].erase("instanceView");
      items.push_back(std::move(vm));
    }
    return SendList(req, res, items);
  }
  if (seg.size() == 9 && Eq(seg[8], "delete") && req.method == "POST") {
    // As VirtualMachineScaleSet_DeleteInstances_*.json: {"instanceIds": [...]}, 202 + location.
    auto named = RequestedInstances(ss, req, res, /*deleting_ok=*/true);
    if (!named) return;
    Op op;
    op.scale_set = Lower(ss.spec.name);
    for (Instance* in : *named) {
      if (in->provisioning != "Deleting") {
        in->provisioning = "Deleting";
        ss.capacity = std::max(0, ss.capacity - 1);
      }
      op.deleting.push_back(in->id);
    }
    ++ss.etag;
    std::string id = StartOp(std::move(op), events);
    // As vmss/VirtualMachineScaleSet_DeleteInstances_MinimumSet_Gen.json: 202 with a location
    // header, ours pointing at this server.
    res.status = 202;
    AsyncHeaders(res, id, "Microsoft.Compute", AsyncStyle::kLocation);
    return;
  }
  if (seg.size() == 9 && (Eq(seg[8], "deallocate") || Eq(seg[8], "start")) &&
      req.method == "POST") {
    return PowerAction(ss, Eq(seg[8], "start"), req, res, events);
  }
  SendError(res, 405, "MethodNotAllowed", "The requested method is not supported by the fake.");
}

void FakeArm::RouteOperation(const std::string& id, bool location_style, httplib::Response& res,
                             Events& events) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return SendError(res, 404, "NotFound", "Operation not found.");
  Op& op = it->second;
  std::string retry = std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(options_.retry_after).count());
  bool running = op.polls_left > 0;
  if (running) {
    --op.polls_left;
    if (op.polls_left == 0) FinishOp(op, events);
  }
  if (location_style) {
    if (running) {
      res.status = 202;
      res.set_header("Retry-After", retry);
      return;
    }
    if (op.failed) return SendError(res, 409, op.code, op.message);
    res.status = 200;
    return;
  }
  // OperationStatusResult (common/types.json).
  json body = {{"id", id}, {"name", id}};
  if (running) {
    body["status"] = "InProgress";
    res.set_header("Retry-After", retry);
  } else if (op.failed) {
    body["status"] = "Failed";
    body["error"] = {{"code", op.code}, {"message", op.message}};
  } else {
    body["status"] = "Succeeded";
  }
  res.status = 200;
  res.set_content(body.dump(), "application/json");
}

}  // namespace tidepool::testing::azure
