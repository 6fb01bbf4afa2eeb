#include "tests/cloud/azure/fake_arm.h"

#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

namespace tidepool::testing::azure {
namespace {

using nlohmann::json;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool Eq(std::string_view a, std::string_view b) { return Lower(a) == Lower(b); }

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::map<std::string, std::string> ParseForm(std::string_view body) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find('&', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view pair = body.substr(start, end - start);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos) {
      out[UrlDecode(pair.substr(0, eq))] = UrlDecode(pair.substr(eq + 1));
    }
    start = end + 1;
  }
  return out;
}

std::string Base36(int n) {
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[n % 36]);
    n /= 36;
  } while (n > 0);
  while (s.size() < 6) s.insert(s.begin(), '0');
  return s;
}

constexpr char kArmResource[] = "https://management.azure.com/";
constexpr char kStorageResource[] = "https://storage.azure.com/";

bool IsWrite(const std::string& method) {
  return method == "PUT" || method == "PATCH" || method == "POST" || method == "DELETE";
}

}  // namespace

FakeArm::FakeArm(FakeArmOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<FakeArm>> FakeArm::Start(FakeArmOptions options) {
  if (options.clock == nullptr) {
    return InvalidArgument("FakeArm: options.clock is required");
  }
  std::unique_ptr<FakeArm> fake(new FakeArm(std::move(options)));
  // Load every example once; a missing file is a broken test setup.
  for (const char* file :
       {"vmss/VirtualMachineScaleSet_Get_WithUserData.json",
        "vmss/VirtualMachineScaleSetVM_Get_WithUserData.json",
        "vmss/VirtualMachineScaleSetVM_Get_InstanceViewAutoPlacedOnDedicatedHostGroup.json",
        "aks/AgentPoolsCreate_Update.json", "aks/AgentPoolsGet.json", "aks/MachineGet.json",
        "aks/AgentPoolsDeleteMachines.json", "common/AgentPoolsAbortOperation.json",
        "vmss/VirtualMachineScaleSet_DeleteInstances_MinimumSet_Gen.json"}) {
    std::string path = fake->options_.shared_dir + "/azure-arm-examples/" + file;
    std::ifstream in(path);
    if (!in) return InvalidArgument("FakeArm: cannot read example {}", path);
    std::stringstream ss;
    ss << in.rdbuf();
    json j = json::parse(ss.str(), nullptr, false);
    if (j.is_discarded()) return InvalidArgument("FakeArm: {} is not JSON", path);
    fake->examples_[file] = std::move(j);
  }
  fake->server_ = std::make_unique<httplib::Server>();
  auto handler = [raw = fake.get()](const httplib::Request& req, httplib::Response& res) {
    raw->Handle(req, res);
  };
  fake->server_->Get(".*", handler);
  fake->server_->Post(".*", handler);
  fake->server_->Put(".*", handler);
  fake->server_->Patch(".*", handler);
  fake->server_->Delete(".*", handler);
  if (fake->options_.port == 0) {
    fake->port_ = fake->server_->bind_to_any_port("127.0.0.1");
  } else if (fake->server_->bind_to_port("127.0.0.1", fake->options_.port)) {
    fake->port_ = fake->options_.port;
  }
  if (fake->port_ <= 0) {
    return InvalidArgument("FakeArm: cannot bind 127.0.0.1:{}", fake->options_.port);
  }
  // The storage account's blob endpoint: its own origin, as a real one is.
  fake->blob_server_ = std::make_unique<httplib::Server>();
  auto blob_handler = [raw = fake.get()](const httplib::Request& req, httplib::Response& res) {
    raw->HandleBlob(req, res);
  };
  fake->blob_server_->Get(".*", blob_handler);
  fake->blob_server_->Put(".*", blob_handler);
  fake->blob_server_->Delete(".*", blob_handler);
  fake->blob_port_ = fake->blob_server_->bind_to_any_port("127.0.0.1");
  if (fake->blob_port_ <= 0) return InvalidArgument("FakeArm: cannot bind the blob endpoint");
  fake->thread_ = std::thread([raw = fake.get()] { raw->server_->listen_after_bind(); });
  fake->blob_thread_ = std::thread([raw = fake.get()] { raw->blob_server_->listen_after_bind(); });
  // The socket is bound and listening already; wait for the accept loop so tests start clean.
  for (int i = 0; i < 2000 && !(fake->server_->is_running() && fake->blob_server_->is_running());
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return fake;
}

FakeArm::~FakeArm() {
  if (server_) server_->stop();
  if (blob_server_) blob_server_->stop();
  if (thread_.joinable()) thread_.join();
  if (blob_thread_.joinable()) blob_thread_.join();
}

std::string FakeArm::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
std::string FakeArm::blob_endpoint() const {
  return "http://127.0.0.1:" + std::to_string(blob_port_);
}
std::string FakeArm::imds_endpoint() const {
  return endpoint() + "/metadata/identity/oauth2/token";
}

std::string FakeArm::ResourceGroupPath() const {
  return "/subscriptions/" + options_.subscription + "/resourceGroups/" + options_.resource_group;
}

json FakeArm::Example(const std::string& relative) const {
  const json& file = examples_.at(relative);
  const json& responses = file.at("responses");
  for (const char* status : {"200", "201", "202"}) {
    if (responses.contains(status) && responses[status].contains("body")) {
      return responses[status]["body"];
    }
  }
  return json::object();
}

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
  const AgentPool& ap = aks_.at(cluster).at(agent_pool);
  return scale_sets_.at(Lower(ap.scale_set)).capacity;
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
// Faults and hooks.

void FakeArm::ThrottleNext(int requests, int retry_after_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  throttle_left_ = requests;
  throttle_retry_after_ = retry_after_seconds;
}

void FakeArm::ConflictNextWrite(const std::string& code, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  conflict_next_ = {code, message};
}

void FakeArm::EtagMismatchNextWrite() {
  std::lock_guard<std::mutex> lock(mu_);
  etag_mismatch_next_ = true;
}

void FakeArm::FailNextScaleUp(const std::string& code, const std::string& message, int instances) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_scale_up_ = {code, message};
  fail_next_scale_up_instances_ = instances;
}

void FakeArm::FailNextVmCreate(const std::string& code, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_vm_create_ = {code, message};
}

void FakeArm::FailNextDelete(const std::string& path_part, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_delete_ = {path_part, status};
}

void FakeArm::SetOperationPolls(int polls) {
  std::lock_guard<std::mutex> lock(mu_);
  operation_polls_ = polls;
}

void FakeArm::ExpireAllTokens() {
  std::lock_guard<std::mutex> lock(mu_);
  Time past = options_.clock->Now() - std::chrono::seconds(1);
  for (auto& [token, expiry] : tokens_) expiry = past;
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

void FakeArm::OnInstanceCreated(std::function<void(const InstanceEvent&)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_created_ = std::move(hook);
}

void FakeArm::OnInstanceDeleted(std::function<void(const InstanceEvent&)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_deleted_ = std::move(hook);
}

void FakeArm::AddRoute(std::string prefix, RawHandler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  routes_.emplace_back(std::move(prefix), std::move(handler));
}

std::vector<RecordedRequest> FakeArm::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int FakeArm::CountRequests(std::string_view method, std::string_view path_part) const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& r : requests_) {
    if ((method.empty() || r.method == method) && r.path.find(path_part) != std::string::npos) {
      ++n;
    }
  }
  return n;
}

std::string FakeArm::AddBlob(const std::string& container, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  blobs_.insert(container + "/" + name);
  return blob_endpoint() + "/" + container + "/" + name;
}

std::vector<std::string> FakeArm::BlobNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<std::string>(blobs_.begin(), blobs_.end());
}

void FakeArm::LeaseBlobOnce(const std::string& container, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  leased_once_.insert(container + "/" + name);
}

int FakeArm::token_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return token_requests_;
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
  Op op;
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
    if (in.provisioning != "Succeeded") power["code"] = "PowerState/starting";
    statuses.push_back(power);
  }
  view["statuses"] = statuses;
  props["instanceView"] = view;
  return j;
}

json FakeArm::AgentPoolJson(const std::string& cluster, const AgentPool& ap) const {
  json j = Example("aks/AgentPoolsCreate_Update.json");
  const ScaleSet& ss = scale_sets_.at(Lower(ap.scale_set));
  j["name"] = ap.spec.name;
  j["id"] = ResourceGroupPath() + "/providers/Microsoft.ContainerService/managedClusters/" +
            cluster + "/agentPools/" + ap.spec.name;
  json& props = j["properties"];
  props["count"] = ss.capacity;
  props["vmSize"] = ap.spec.vm_size;
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

void FakeArm::SendList(const httplib::Request& req, httplib::Response& res,
                       const std::vector<json>& items) const {
  size_t skip = 0;
  if (req.has_param("$skiptoken")) skip = std::stoul(req.get_param_value("$skiptoken"));
  json page = {{"value", json::array()}};
  for (size_t i = skip; i < items.size() && i < skip + options_.page_size; ++i) {
    page["value"].push_back(items[i]);
  }
  if (skip + options_.page_size < items.size()) {
    std::string query;
    for (const auto& [k, v] : req.params) {
      if (k == "$skiptoken") continue;
      query += (query.empty() ? "" : "&") + k + "=" + v;
    }
    page["nextLink"] = endpoint() + req.path + "?" + query +
                       "&$skiptoken=" + std::to_string(skip + options_.page_size);
  }
  res.status = 200;
  res.set_content(page.dump(), "application/json");
}

void FakeArm::SendError(httplib::Response& res, int status, const std::string& code,
                        const std::string& message) {
  res.status = status;
  json body = {{"error", {{"code", code}, {"message", message}}}};
  res.set_content(body.dump(), "application/json");
}

// ---------------------------------------------------------------------------------------------
// HTTP.

void FakeArm::Handle(const httplib::Request& req, httplib::Response& res) {
  RawHandler route;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [prefix, handler] : routes_) {
      if (req.path.starts_with(prefix)) route = handler;
    }
  }
  if (route) return route(req, res);
  {
    std::lock_guard<std::mutex> lock(mu_);
    RecordedRequest r;
    r.method = req.method;
    r.path = req.path;
    auto q = req.target.find('?');
    if (q != std::string::npos) r.query = req.target.substr(q + 1);
    r.body = req.body;
    for (const auto& [k, v] : req.headers) r.headers[k] = v;
    requests_.push_back(std::move(r));
  }
  if (req.path.ends_with("/oauth2/v2.0/token")) return HandleToken(req, res);
  if (req.path == "/metadata/identity/oauth2/token") return HandleImds(req, res);

  Events events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Auth first, as ARM does.
    std::string auth = req.get_header_value("Authorization");
    std::string token = auth.starts_with("Bearer ") ? auth.substr(7) : "";
    auto it = tokens_.find(token);
    if (it == tokens_.end()) {
      SendError(res, 401, "InvalidAuthenticationToken", "The access token is invalid or missing.");
      return;
    }
    if (options_.clock->Now() >= it->second) {
      SendError(res, 401, "ExpiredAuthenticationToken",
                "The access token expiry UTC time is earlier than current UTC time.");
      return;
    }
    if (token_audience_[token] != kArmResource) {
      SendError(res, 401, "InvalidAuthenticationTokenAudience",
                "The access token has been obtained for wrong audience or resource.");
      return;
    }
    if (throttle_left_ > 0) {
      --throttle_left_;
      res.set_header("Retry-After", std::to_string(throttle_retry_after_));
      SendError(res, 429, "TooManyRequests",
                "The request is being throttled as the limit has been reached for operation "
                "type - Read_ObservationWindow_00:03:00.");
      return;
    }
    if (IsWrite(req.method) && conflict_next_) {
      auto [code, message] = *conflict_next_;
      conflict_next_.reset();
      SendError(res, 409, code, message);
      return;
    }
    Route(req, res, events);
  }
  Announce(events);
}

void FakeArm::HandleToken(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  ++token_requests_;
  auto form = ParseForm(req.body);
  auto fail = [&](int status, const std::string& error, const std::string& description) {
    res.status = status;
    res.set_content(json{{"error", error}, {"error_description", description}}.dump(),
                    "application/json");
  };
  if (req.path != "/" + options_.tenant + "/oauth2/v2.0/token") {
    return fail(400, "invalid_request", "AADSTS90002: Tenant not found.");
  }
  if (form["grant_type"] != "client_credentials") {
    return fail(400, "unsupported_grant_type", "AADSTS70003: grant_type not supported.");
  }
  std::string audience;
  if (form["scope"] == std::string(kArmResource) + ".default") {
    audience = kArmResource;
  } else if (form["scope"] == std::string(kStorageResource) + ".default") {
    audience = kStorageResource;
  } else {
    return fail(400, "invalid_scope", "AADSTS70011: The provided value for scope is not valid.");
  }
  if (form["client_id"] != options_.client_id) {
    return fail(400, "unauthorized_client", "AADSTS700016: Application not found.");
  }
  bool ok = false;
  if (form.contains("client_secret")) {
    ok = form["client_secret"] == options_.client_secret;
    if (!ok) return fail(401, "invalid_client", "AADSTS7000215: Invalid client secret provided.");
  } else if (form.contains("client_assertion")) {
    ok =
        form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" &&
        form["client_assertion"] == options_.federated_token;
    if (!ok) {
      return fail(400, "invalid_client",
                  "AADSTS700213: No matching federated identity record found.");
    }
  }
  if (!ok) return fail(400, "invalid_request", "AADSTS900144: no client credential.");
  std::string token = "fake-token-" + std::to_string(next_token_++);
  tokens_[token] = options_.clock->Now() + options_.token_lifetime;
  token_audience_[token] = audience;
  int64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(options_.token_lifetime).count();
  res.status = 200;
  res.set_content(json{{"token_type", "Bearer"},
                       {"expires_in", seconds},
                       {"ext_expires_in", seconds},
                       {"access_token", token}}
                      .dump(),
                  "application/json");
}

void FakeArm::HandleImds(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  ++token_requests_;
  if (req.get_header_value("Metadata") != "true") {
    res.status = 400;
    res.set_content(json{{"error", "invalid_request"},
                         {"error_description", "Required metadata header not specified"}}
                        .dump(),
                    "application/json");
    return;
  }
  std::string audience = req.get_param_value("resource");
  if (audience != kArmResource && audience != kStorageResource) {
    res.status = 400;
    res.set_content(
        json{{"error", "invalid_resource"}, {"error_description", "bad resource"}}.dump(),
        "application/json");
    return;
  }
  std::string token = "fake-mi-token-" + std::to_string(next_token_++);
  Time expiry = options_.clock->Now() + options_.token_lifetime;
  tokens_[token] = expiry;
  token_audience_[token] = audience;
  int64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(options_.token_lifetime).count();
  int64_t on = std::chrono::duration_cast<std::chrono::seconds>(expiry.time_since_epoch()).count();
  res.status = 200;
  // IMDS answers with numbers as strings.
  res.set_content(json{{"access_token", token},
                       {"expires_in", std::to_string(seconds)},
                       {"expires_on", std::to_string(on)},
                       {"resource", audience},
                       {"token_type", "Bearer"}}
                      .dump(),
                  "application/json");
}

void FakeArm::HandleBlob(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  RecordedRequest r;
  r.method = req.method;
  r.path = req.path;
  r.blob = true;
  auto q = req.target.find('?');
  if (q != std::string::npos) r.query = req.target.substr(q + 1);
  for (const auto& [k, v] : req.headers) r.headers[k] = v;
  requests_.push_back(std::move(r));
  // As the Blob service answers errors: an XML body and the code in x-ms-error-code.
  auto fail = [&](int status, const std::string& code, const std::string& message) {
    res.status = status;
    res.set_header("x-ms-error-code", code);
    res.set_content("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>" + code +
                        "</Code><Message>" + message + "</Message></Error>",
                    "application/xml");
  };
  std::string version = req.get_header_value("x-ms-version");
  if (version.empty() || req.get_header_value("x-ms-date").empty()) {
    return fail(400, "MissingRequiredHeader",
                "An HTTP header that's mandatory for this request is not specified.");
  }
  std::string auth = req.get_header_value("Authorization");
  if (!auth.starts_with("Bearer ")) {
    return fail(403, "AuthenticationFailed", "Server failed to authenticate the request.");
  }
  if (version < "2017-11-09") {
    return fail(400, "InvalidHeaderValue", "Bearer tokens need x-ms-version 2017-11-09 or later.");
  }
  std::string token = auth.substr(7);
  auto it = tokens_.find(token);
  if (it == tokens_.end() || options_.clock->Now() >= it->second) {
    return fail(401, "InvalidAuthenticationInfo", "Server failed to authenticate the request.");
  }
  if (token_audience_[token] != kStorageResource) {
    return fail(401, "InvalidAuthenticationInfo", "Audience validation failed.");
  }
  if (req.method != "DELETE") {
    return fail(405, "UnsupportedHttpVerb", "The resource doesn't support the specified verb.");
  }
  std::string name = req.path.size() > 1 ? req.path.substr(1) : "";
  if (!blobs_.contains(name)) {
    return fail(404, "BlobNotFound", "The specified blob does not exist.");
  }
  std::string uri = blob_endpoint() + req.path;
  bool attached = std::any_of(vms_.begin(), vms_.end(), [&](const auto& kv) {
    const json& os_disk = kv.second.body["properties"]["storageProfile"]["osDisk"];
    return os_disk.contains("vhd") && os_disk["vhd"].value("uri", "") == uri;
  });
  if (attached || leased_once_.erase(name) > 0) {
    return fail(409, "LeaseIdMissing",
                "There is currently a lease on the blob and no lease ID was specified in the "
                "request.");
  }
  if (req.get_header_value("x-ms-delete-snapshots") != "include") {
    // Snapshots are not modelled; the header is required so a blob with snapshots goes too.
    return fail(409, "SnapshotsPresent",
                "This operation is not permitted because the blob has snapshots.");
  }
  blobs_.erase(name);
  res.status = 202;
  res.set_header("x-ms-delete-type-permanent", "false");
}

void FakeArm::Route(const httplib::Request& req, httplib::Response& res, Events& events) {
  std::vector<std::string> seg = Segments(req.path);
  if (!req.has_param("api-version")) {
    return SendError(res, 400, "MissingApiVersionParameter",
                     "The api-version query parameter (?api-version=) is required for all "
                     "requests.");
  }
  // /subscriptions/{s}/providers/Microsoft.Compute/locations/{l}/operations|operationresults/{id}
  if (seg.size() == 8 && Eq(seg[0], "subscriptions") && Eq(seg[2], "providers") &&
      Eq(seg[4], "locations")) {
    return RouteOperation(seg[7], Eq(seg[6], "operationresults"), res, events);
  }
  if (seg.size() < 7 || !Eq(seg[0], "subscriptions") || seg[1] != options_.subscription ||
      !Eq(seg[2], "resourceGroups") || !Eq(seg[3], options_.resource_group) ||
      !Eq(seg[4], "providers")) {
    return SendError(res, 404, "ResourceGroupNotFound",
                     "Resource group '" + (seg.size() > 3 ? seg[3] : "") + "' could not be found.");
  }
  if (Eq(seg[5], "Microsoft.Compute") && Eq(seg[6], "virtualMachineScaleSets")) {
    return RouteCompute(seg, req, res, events);
  }
  if (Eq(seg[5], "Microsoft.ContainerService") && Eq(seg[6], "managedClusters")) {
    return RouteAks(seg, req, res, events);
  }
  if (req.method == "DELETE" && fail_next_delete_ &&
      req.path.find(fail_next_delete_->first) != std::string::npos) {
    int status = fail_next_delete_->second;
    fail_next_delete_.reset();
    return SendError(res, status, "InternalServerError",
                     "An unexpected error occured while processing the request.");
  }
  if (Eq(seg[5], "Microsoft.Compute") &&
      (Eq(seg[6], "virtualMachines") || Eq(seg[6], "availabilitySets"))) {
    return RouteVms(seg, req, res, events);
  }
  if (Eq(seg[5], "Microsoft.Compute") && Eq(seg[6], "disks")) {
    return RouteDisks(seg, req, res, events);
  }
  if (Eq(seg[5], "Microsoft.Network") && Eq(seg[6], "networkInterfaces")) {
    return RouteNics(seg, req, res, events);
  }
  SendError(res, 404, "InvalidResourceType", "The resource type could not be found.");
}

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
    res.set_header("Azure-AsyncOperation", endpoint() + "/subscriptions/" + options_.subscription +
                                               "/providers/Microsoft.Compute/locations/" +
                                               options_.location + "/operations/" + op +
                                               "?api-version=2025-04-01");
    res.set_header(
        "Retry-After",
        std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(options_.retry_after).count()));
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
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("instanceIds") || !body["instanceIds"].is_array()) {
      return SendError(res, 400, "InvalidParameter", "instanceIds is required.");
    }
    Op op;
    op.scale_set = Lower(ss.spec.name);
    for (const auto& id : body["instanceIds"]) {
      std::string s = id.get<std::string>();
      auto in = std::find_if(ss.instances.begin(), ss.instances.end(),
                             [&](const Instance& i) { return i.id == s; });
      if (in == ss.instances.end()) {
        return SendError(res, 404, "NotFound",
                         "The entity was not found in this Azure location: instance " + s);
      }
      if (in->provisioning != "Deleting") {
        in->provisioning = "Deleting";
        ss.capacity = std::max(0, ss.capacity - 1);
      }
      op.deleting.push_back(s);
    }
    ++ss.etag;
    std::string id = StartOp(std::move(op), events);
    json example = examples_.at("vmss/VirtualMachineScaleSet_DeleteInstances_MinimumSet_Gen.json");
    (void)example;  // its 202 carries a location header; ours points at this server
    res.status = 202;
    res.set_header("Location", endpoint() + "/subscriptions/" + options_.subscription +
                                   "/providers/Microsoft.Compute/locations/" + options_.location +
                                   "/operationresults/" + id + "?api-version=2025-04-01");
    res.set_header(
        "Retry-After",
        std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(options_.retry_after).count()));
    return;
  }
  SendError(res, 405, "MethodNotAllowed", "The requested method is not supported by the fake.");
}

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
  auto async_headers = [&](const std::string& op) {
    // As common/AgentPoolsAbortOperation.json: Azure-AsyncOperation and location.
    std::string base = endpoint() + "/subscriptions/" + options_.subscription +
                       "/providers/Microsoft.ContainerService/locations/" + options_.location;
    res.set_header("Azure-AsyncOperation", base + "/operations/" + op + "?api-version=2026-08-01");
    res.set_header("Location", base + "/operationresults/" + op + "?api-version=2026-08-01");
    res.set_header(
        "Retry-After",
        std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(options_.retry_after).count()));
  };
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
    bool failing = fail_next_scale_up_.has_value();
    std::string op = Resize(ss, body["properties"]["count"].get<int>(), events);
    if (failing) {
      ap.provisioning = "Failed";
      ap.error_code = ops_[op].code;
      ap.error_message = ops_[op].message;
    } else {
      ap.provisioning = "Succeeded";
      ap.error_code.clear();
    }
    async_headers(op);
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
    } else {
      statuses.push_back({{"code", "ProvisioningState/" + Lower(state)},
                          {"level", "Info"},
                          {"displayStatus", "Provisioning " + Lower(state)}});
      statuses.push_back(
          {{"code", state == "Succeeded" ? "PowerState/running" : "PowerState/starting"},
           {"level", "Info"}});
    }
    props["instanceView"] = {{"statuses", statuses}};
  }
  return j;
}

void FakeArm::AsyncHeaders(httplib::Response& res, const std::string& op,
                           const std::string& provider, bool location_style) const {
  std::string base = endpoint() + "/subscriptions/" + options_.subscription + "/providers/" +
                     provider + "/locations/" + options_.location;
  std::string version = provider == "Microsoft.Network" ? "2024-05-01" : "2025-04-01";
  if (location_style) {
    res.set_header("Location", base + "/operationresults/" + op + "?api-version=" + version);
  } else {
    res.set_header("Azure-AsyncOperation", base + "/operations/" + op + "?api-version=" + version);
  }
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options_.retry_after);
  res.set_header("Retry-After", std::to_string(seconds.count()));
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
  if (seg.size() != 8) {
    return SendError(res, 405, "MethodNotAllowed", "Not supported by the fake.");
  }
  const std::string key = Lower(seg[7]);
  auto it = vms_.find(key);
  auto not_found = [&] {
    SendError(res, 404, "ResourceNotFound",
              "The Resource 'Microsoft.Compute/virtualMachines/" + seg[7] +
                  "' under resource group '" + options_.resource_group + "' was not found.");
  };
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
    AsyncHeaders(res, id, "Microsoft.Compute", /*location_style=*/true);
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
  if (fail_next_vm_create_) {
    op.failed = true;
    op.code = fail_next_vm_create_->first;
    op.message = fail_next_vm_create_->second;
    fail_next_vm_create_.reset();
  }
  vms_[key] = std::move(vm);
  json answer = StandaloneVmJson(vms_[key], false, false);
  std::string id = StartOp(std::move(op), events);
  res.status = 201;
  AsyncHeaders(res, id, "Microsoft.Compute", /*location_style=*/false);
  res.set_content(answer.dump(), "application/json");
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
    AsyncHeaders(res, id, "Microsoft.Network", /*location_style=*/true);
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
  AsyncHeaders(res, id, "Microsoft.Network", /*location_style=*/false);
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
    AsyncHeaders(res, id, "Microsoft.Compute", /*location_style=*/true);
    return;
  }
  SendError(res, 405, "MethodNotAllowed", "Not supported by the fake.");
}

}  // namespace tidepool::testing::azure
