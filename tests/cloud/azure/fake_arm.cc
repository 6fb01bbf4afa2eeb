// FakeArm: lifecycle, scripted faults and hooks, the record of requests, and the HTTP entry that
// checks tokens and routes ARM requests to the per-resource files (fake_arm_*.cc).
#include "tests/cloud/azure/fake_arm.h"

#include <httplib.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "tests/cloud/azure/fake_arm_util.h"

namespace tidepool::testing::azure {
namespace {

using fake_arm_util::Eq;
using fake_arm_util::IsWrite;
using fake_arm_util::kArmResource;
using fake_arm_util::Segments;
using nlohmann::json;

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

void FakeArm::FailNextStart(const std::string& code, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_start_ = {code, message};
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

void FakeArm::AsyncHeaders(httplib::Response& res, const std::string& op,
                           const std::string& provider, AsyncStyle style) const {
  std::string base = endpoint() + "/subscriptions/" + options_.subscription + "/providers/" +
                     provider + "/locations/" + options_.location;
  std::string version = provider == "Microsoft.Network"            ? "2024-05-01"
                        : provider == "Microsoft.ContainerService" ? "2026-08-01"
                                                                   : "2025-04-01";
  if (style != AsyncStyle::kLocation) {
    res.set_header("Azure-AsyncOperation", base + "/operations/" + op + "?api-version=" + version);
  }
  if (style != AsyncStyle::kAsyncOperation) {
    res.set_header("Location", base + "/operationresults/" + op + "?api-version=" + version);
  }
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options_.retry_after);
  res.set_header("Retry-After", std::to_string(seconds.count()));
}

}  // namespace tidepool::testing::azure
