// FakeArm, AKS: managed clusters and their agent pools (each backed by a scale set), the agent
// pool and machine JSON, and the managedClusters routes.
#include <httplib.h>

#include <algorithm>
#include <chrono>
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

void FakeArm::AddManagedCluster(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  aks_[name];
}

void FakeArm::AddAgentPool(const std::string& cluster, const AgentPoolSpec& spec) {
  Events events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    AgentPool ap;
    ap.spec = spec;
    ap.count = spec.count;
    ap.scale_set = "aks-" + spec.name + "-12345678-vmss";
    ScaleSet ss;
    ss.spec.name = ap.scale_set;
    ss.spec.sku = spec.vm_size;
    ss.spec.spot = spec.spot;
    ss.spec.tags = {{"aks-managed-poolName", spec.name}};
    ss.agent_pool = spec.name;
    ss.cluster = cluster;
    scale_sets_[Lower(ap.scale_set)] = ss;
    aks_[cluster][spec.name] = ap;
    Resize(scale_sets_[Lower(ap.scale_set)], spec.count, events);
  }
  Announce(events);
}

int FakeArm::AgentPoolCount(const std::string& cluster, const std::string& agent_pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  return aks_.at(cluster).at(agent_pool).count;
}

std::vector<std::string> FakeArm::MachineNames(const std::string& cluster,
                                               const std::string& agent_pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  const AgentPool& ap = aks_.at(cluster).at(agent_pool);
  std::vector<std::string> out;
  for (const auto& in : scale_sets_.at(Lower(ap.scale_set)).instances) {
    out.push_back(ap.scale_set + Base36(std::stoi(in.id)));
  }
  return out;
}

void FakeArm::FailAgentPool(const std::string& cluster, const std::string& agent_pool,
                            const std::string& code, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  AgentPool& ap = aks_.at(cluster).at(agent_pool);
  ap.provisioning = "Failed";
  ap.error_code = code;
  ap.error_message = message;
}

// ---------------------------------------------------------------------------------------------
// JSON built from the examples.

json FakeArm::AgentPoolJson(const std::string& cluster, const AgentPool& ap) const {
  json j = Example("aks/AgentPoolsCreate_Update.json");
  j["name"] = ap.spec.name;
  j["id"] = ResourceGroupPath() + "/providers/Microsoft.ContainerService/managedClusters/" +
            cluster + "/agentPools/" + ap.spec.name;
  json& props = j["properties"];
  props["count"] = ap.count;
  props["vmSize"] = ap.spec.vm_size;
  // ManagedClusterAgentPoolProfileProperties.scaleDownMode of the AKS swagger (managedClusters
  // .json; "Delete" or "Deallocate", absent when unset): none of the stored examples carries it.
  if (!ap.spec.scale_down_mode.empty()) props["scaleDownMode"] = ap.spec.scale_down_mode;
  props["eTag"] = "etag-" + std::to_string(ap.etag);  // as AgentPoolsGet.json carries it
  props["provisioningState"] = ap.provisioning;
  props["nodeLabels"] = json::object();
  for (const auto& [k, v] : ap.spec.node_labels) props["nodeLabels"][k] = v;
  props["nodeTaints"] = ap.spec.node_taints;
  props["enableAutoScaling"] = ap.spec.enable_autoscaling;
  if (ap.spec.spot) {
    props["scaleSetPriority"] = "Spot";
    props["scaleSetEvictionPolicy"] = "Delete";
    props["spotMaxPrice"] = -1;
  } else {
    props["scaleSetPriority"] = "Regular";
    props.erase("scaleSetEvictionPolicy");
  }
  if (!ap.error_code.empty()) {
    props["status"] = {
        {"provisioningError", {{"code", ap.error_code}, {"message", ap.error_message}}}};
  }
  return j;
}

json FakeArm::MachineJson(const ScaleSet& ss, const Instance& in) const {
  json j = Example("aks/MachineGet.json");
  std::string name = ss.spec.name + Base36(std::stoi(in.id));
  j["name"] = name;
  j["id"] = ResourceGroupPath() + "/providers/Microsoft.ContainerService/managedClusters/" +
            ss.cluster + "/agentPools/" + ss.agent_pool + "/machines/" + name;
  j["properties"]["resourceId"] = ResourceGroupPath() +
                                  "/providers/Microsoft.Compute/virtualMachineScaleSets/" +
                                  ss.spec.name + "/virtualMachines/" + in.id;
  j["properties"]["status"] = {{"provisioningState", in.provisioning}};
  return j;
}

// ---------------------------------------------------------------------------------------------
// Scaling under scaleDownMode (mu_ held).

// What AKS does with a PUT's count, as docs/azure.md reads AKS's Scale-down Mode article. The
// starts and deallocations ride on the PUT's own operation (AgentPoolsAbortOperation.json's
// headers), as AKS runs them inside the agent pool operation.
std::string FakeArm::ScaleAgentPool(AgentPool& ap, ScaleSet& ss, int count, Events& events) {
  ap.count = count;
  std::vector<Instance*> running, stopped;
  for (Instance& in : ss.instances) {
    if (in.provisioning == "Deleting") continue;
    bool down = in.power == "deallocated" || in.power == "deallocating";
    (down ? stopped : running).push_back(&in);
  }
  if (!Eq(ap.spec.scale_down_mode, "Deallocate")) {
    // scale-down-mode.md: Delete removes every deallocated VM, also those deallocated through
    // the scale set API.
    std::vector<std::string> ids;
    for (Instance* in : stopped) ids.push_back(in->id);
    RemoveInstances(ss, ids, events);
    ss.capacity = std::max(0, ss.capacity - static_cast<int>(ids.size()));
    return Resize(ss, count, events);
  }
  const int n_running = static_cast<int>(running.size());
  Op op;
  if (count < n_running) {
    for (int i = n_running - 1; i >= count; --i) {  // AKS's choice: the highest ids
      running[i]->power = "deallocating";
      op.deallocating.push_back(running[i]->id);
    }
    return Resize(ss, ss.capacity, events, std::move(op));
  }
  // Deallocated instances start first (the newest), then new ones are created.
  int to_start = std::min(count - n_running, static_cast<int>(stopped.size()));
  for (int i = 0; i < to_start; ++i) {
    Instance* in = stopped[stopped.size() - 1 - i];
    in->power = "starting";
    op.starting.push_back(in->id);
  }
  if (to_start > 0 && fail_next_start_) {
    op.failed = true;
    op.code = fail_next_start_->first;
    op.message = fail_next_start_->second;
    fail_next_start_.reset();
  }
  return Resize(ss, ss.capacity + (count - n_running - to_start), events, std::move(op));
}

// ---------------------------------------------------------------------------------------------
// HTTP.

void FakeArm::RouteAks(const std::vector<std::string>& seg, const httplib::Request& req,
                       httplib::Response& res, Events& events) {
  // seg: ... managedClusters/{c}/agentPools[/{ap}[/machines|/deleteMachines]]
  if (seg.size() < 9 || !Eq(seg[8], "agentPools") || !aks_.contains(seg[7])) {
    return SendError(res, 404, "ResourceNotFound", "The managed cluster was not found.");
  }
  const std::string& cluster = seg[7];
  auto& pools = aks_[cluster];
  if (seg.size() == 9 && req.method == "GET") {
    std::vector<json> items;
    for (const auto& [name, ap] : pools) items.push_back(AgentPoolJson(cluster, ap));
    return SendList(req, res, items);
  }
  auto it = pools.find(seg[9]);
  if (it == pools.end()) {
    return SendError(res, 404, "NotFound", "Agent pool '" + seg[9] + "' not found.");
  }
  AgentPool& ap = it->second;
  ScaleSet& ss = scale_sets_.at(Lower(ap.scale_set));
  if (seg.size() == 10 && req.method == "GET") {
    res.status = 200;
    res.set_content(AgentPoolJson(cluster, ap).dump(), "application/json");
    return;
  }
  if (seg.size() == 10 && req.method == "PUT") {
    std::string if_match = req.get_header_value("If-Match");
    if (etag_mismatch_next_ && !if_match.empty()) {
      etag_mismatch_next_ = false;
      ++ap.etag;
    }
    if (!if_match.empty() && if_match != "etag-" + std::to_string(ap.etag)) {
      return SendError(res, 412, "PreconditionFailed",
                       "Operation failed: the eTag given does not match.");
    }
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("properties") ||
        !body["properties"].contains("count")) {
      return SendError(res, 400, "InvalidParameter", "properties.count is required.");
    }
    if (body["properties"].contains("provisioningState")) {
      return SendError(res, 400, "InvalidParameter", "provisioningState is read-only.");
    }
    ++ap.etag;
    if (body["properties"].contains("scaleDownMode")) {
      ap.spec.scale_down_mode = body["properties"]["scaleDownMode"].get<std::string>();
    }
    bool failing = fail_next_scale_up_.has_value();
    std::string op = ScaleAgentPool(ap, ss, body["properties"]["count"].get<int>(), events);
    if (failing) {
      ap.provisioning = "Failed";
      ap.error_code = ops_[op].code;
      ap.error_message = ops_[op].message;
    } else {
      ap.provisioning = "Succeeded";
      ap.error_code.clear();
    }
    // As common/AgentPoolsAbortOperation.json: Azure-AsyncOperation and location.
    AsyncHeaders(res, op, "Microsoft.ContainerService", AsyncStyle::kBoth);
    res.status = 201;
    res.set_content(AgentPoolJson(cluster, ap).dump(), "application/json");
    return;
  }
  if (seg.size() == 11 && Eq(seg[10], "machines") && req.method == "GET") {
    std::vector<json> items;
    for (const auto& in : ss.instances) items.push_back(MachineJson(ss, in));
    return SendList(req, res, items);
  }
  if (seg.size() == 11 && Eq(seg[10], "deleteMachines") && req.method == "POST") {
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("machineNames") || !body["machineNames"].is_array()) {
      return SendError(res, 400, "InvalidParameter", "machineNames is required.");
    }
    Op op;
    op.scale_set = Lower(ss.spec.name);
    for (const auto& n : body["machineNames"]) {
      std::string name = n.get<std::string>();
      auto in = std::find_if(ss.instances.begin(), ss.instances.end(), [&](const Instance& i) {
        return ss.spec.name + Base36(std::stoi(i.id)) == name;
      });
      if (in == ss.instances.end()) {
        return SendError(res, 404, "NotFound", "Machine '" + name + "' not found.");
      }
      if (in->provisioning != "Deleting") {
        in->provisioning = "Deleting";
        ss.capacity = std::max(0, ss.capacity - 1);
        if (in->power != "deallocated" && in->power != "deallocating") {
          ap.count = std::max(0, ap.count - 1);
        }
      }
      op.deleting.push_back(in->id);
    }
    ++ap.etag;
    std::string id = StartOp(std::move(op), events);
    // As aks/AgentPoolsDeleteMachines.json: 202 with a location header.
    res.status = 202;
    res.set_header("Location", endpoint() + "/subscriptions/" + options_.subscription +
                                   "/providers/Microsoft.ContainerService/locations/" +
                                   options_.location + "/operationresults/" + id +
                                   "?api-version=2026-08-01");
    return;
  }
  SendError(res, 405, "MethodNotAllowed", "The requested method is not supported by the fake.");
}

}  // namespace tidepool::testing::azure
