// tidepool-fake-arm: FakeArm as a process for the end-to-end tests on testenv. Serves ARM, Azure
// AD and IMDS on 127.0.0.1, and registers / removes Node objects as a real scale set's VMs would.
//
//   tidepool-fake-arm --shared-dir ../shared --kubeconfig K --boot-delay 2s
//     --scale-set name=k8s-gpuspot-vmss,sku=Standard_NC6,spot=true,tag.poolName=gpu-spot
//
// The first stdout line is "listening http://127.0.0.1:PORT". Control routes (no token needed;
// a POST needs a Content-Length, e.g. curl -d ""):
//   GET  /_fake/scale-sets                 {"<name>": {"capacity": n,
//                                           "instances": [{"id": "0", "state": "Succeeded",
//                                                          "power": "running"}]}}
//   GET  /_fake/requests?method=M&path=P   the requests received (method, path, query, body; a
//                                          client_secret redacted), oldest first; only those
//                                          matching M / containing P
//   POST /_fake/fail-next-scale-up?code=C&message=M[&instances=N]   (N: only the first N fail)
//   POST /_fake/evict?scaleSet=S&instanceId=I   a spot eviction (the VM and its Node go)
//   POST /_fake/fail-next-start?code=C&message=M   the next scale set start's operation fails
//   POST /_fake/throttle?requests=N&retryAfter=S
// SIGTERM or SIGINT stops it (Nodes it created are left as they are).

#include <httplib.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/logging.h"
#include "base/time.h"
#include "cloud/azure/node_template.h"
#include "cloud/azure/sku.h"
#include "kube/client/api_client.h"
#include "kube/client/client_config.h"
#include "kube/client/writes.h"
#include "kube/codec/encode.h"
#include "model/node.h"
#include "tests/cloud/azure/fake_arm.h"

namespace tidepool::testing::azure {
namespace {

using nlohmann::json;

constexpr std::string_view kKwokAnnotation = "kwok.x-k8s.io/node";
constexpr std::string_view kAutoscalerTagPrefix = "k8s.io_cluster-autoscaler_";
constexpr auto kRetryAfterFailure = std::chrono::seconds(1);

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A Kubernetes label name segment / value: at most 63 of [A-Za-z0-9-_.], alphanumeric at both
// ends (a value may be empty).
bool ValidLabelSegment(std::string_view s, bool may_be_empty) {
  if (s.empty()) return may_be_empty;
  if (s.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool ValidLabel(std::string_view key, std::string_view value) {
  size_t slash = key.rfind('/');
  std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (slash != std::string_view::npos && (slash == 0 || slash > 253)) return false;
  return ValidLabelSegment(name, false) && ValidLabelSegment(value, true);
}

std::optional<model::TaintEffect> EffectOf(std::string_view s) {
  if (s == "NoSchedule") return model::TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return model::TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return model::TaintEffect::kNoExecute;
  return std::nullopt;
}

// The Node a kubelet on this VM would register: labels Azure and aks-engine put on nodes (the
// agent pool from the poolName tag, the spot priority, the node-template label tags), the spot
// taint and the node-template taint tags, capacity from the VM size table, and kwok's annotation
// so testenv's kwok runs it.
Result<json> NodeFor(const InstanceEvent& e) {
  const cloud::azure::VmSize* size = cloud::azure::FindVmSize(e.vm_size);
  if (size == nullptr) return InvalidArgument("VM size {} is not in the size table", e.vm_size);
  model::Node node;
  node.meta.name = Lower(e.node_name);  // kubelets register the lower-cased computer name
  node.provider_id = e.provider_id;
  auto& labels = node.meta.labels;
  for (const auto& [k, v] : e.labels) {
    if (k.starts_with(cloud::azure::kTagLabelPrefix)) {
      labels[cloud::azure::DecodeTagKey(
          std::string_view(k).substr(cloud::azure::kTagLabelPrefix.size()))] = v;
    } else if (k.starts_with(cloud::azure::kTagTaintPrefix)) {
      size_t colon = v.rfind(':');
      auto effect = colon == std::string::npos ? std::nullopt : EffectOf(v.substr(colon + 1));
      if (!effect) {
        spdlog::warn("node {}: tag {}={}: not <value>:<Effect>, ignored", node.meta.name, k, v);
        continue;
      }
      node.taints.push_back(model::Taint{cloud::azure::DecodeTagKey(std::string_view(k).substr(
                                             cloud::azure::kTagTaintPrefix.size())),
                                         v.substr(0, colon), *effect});
    } else if (k.starts_with(kAutoscalerTagPrefix)) {
      continue;  // the Cluster Autoscaler's own tags are not node labels
    } else if (ValidLabel(k, v)) {
      labels[k] = v;
    }
  }
  std::string pool = e.agent_pool;
  for (std::string_view tag : {cloud::azure::kTagAksPoolName, cloud::azure::kTagPoolName}) {
    if (auto it = e.labels.find(std::string(tag)); pool.empty() && it != e.labels.end()) {
      pool = it->second;
    }
  }
  if (!pool.empty()) {
    labels[std::string(cloud::azure::kLabelAgentPool)] = pool;
    labels[std::string(cloud::azure::kLabelLegacyAgentPool)] = pool;
  }
  labels[std::string(model::kLabelHostname)] = node.meta.name;
  labels[std::string(model::kLabelInstanceType)] = e.vm_size;
  labels["kubernetes.io/os"] = "linux";
  labels["kubernetes.io/arch"] = "amd64";
  if (e.spot) {
    labels[std::string(cloud::azure::kLabelScaleSetPriority)] = "spot";
    model::Taint spot{std::string(cloud::azure::kLabelScaleSetPriority), "spot",
                      model::TaintEffect::kNoSchedule};
    if (std::find(node.taints.begin(), node.taints.end(), spot) == node.taints.end()) {
      node.taints.push_back(spot);
    }
  }
  node.meta.annotations[std::string(kKwokAnnotation)] = "fake";
  node.capacity = cloud::azure::CapacityOf(*size);
  node.allocatable = node.capacity;
  return kube::codec::EncodeNode(node);
}

// Creates the Node of every VM that came up, `boot_delay` later, and deletes the Node of every
// VM that went. One worker thread; failed API calls are retried a second later. A VM deleted
// before its Node was created never gets one.
class NodeRegistrar {
 public:
  NodeRegistrar(kube::ApiClient& api, Duration boot_delay)
      : api_(api), boot_delay_(boot_delay), worker_([this] { Run(); }) {}

  ~NodeRegistrar() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  void Created(const InstanceEvent& e) {
    {
      std::lock_guard lock(mu_);
      create_[Lower(e.node_name)] = {Now() + boot_delay_, e};
      changed_ = true;
    }
    spdlog::info("VM {}/{} succeeded: Node {} in {}", e.scale_set, e.instance_id,
                 Lower(e.node_name), FormatDuration(boot_delay_));
    cv_.notify_all();
  }

  void Deleted(const InstanceEvent& e) {
    std::string name = Lower(e.node_name);
    {
      std::lock_guard lock(mu_);
      if (create_.erase(name) == 0) delete_.push_back(name);
      changed_ = true;
    }
    spdlog::info("VM {}/{} deleted: Node {} goes", e.scale_set, e.instance_id, name);
    cv_.notify_all();
  }

 private:
  struct Pending {
    std::chrono::steady_clock::time_point due;
    InstanceEvent event;
  };

  static std::chrono::steady_clock::time_point Now() { return std::chrono::steady_clock::now(); }

  void Run() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      changed_ = false;
      std::vector<std::string> deletes = std::move(delete_);
      delete_.clear();
      std::vector<Pending> due;
      auto now = Now();
      for (auto it = create_.begin(); it != create_.end();) {
        if (it->second.due <= now) {
          due.push_back(std::move(it->second));
          it = create_.erase(it);
        } else {
          ++it;
        }
      }
      lock.unlock();
      std::vector<std::string> failed_deletes;
      std::vector<Pending> failed_creates;
      for (const std::string& name : deletes) {
        auto r = kube::DeleteNode(api_, name, "");
        if (r) {
          spdlog::info("Node {} deleted", name);
        } else {
          spdlog::warn("deleting Node {}: {}", name, r.error().message());
          failed_deletes.push_back(name);
        }
      }
      for (Pending& p : due) {
        std::string name = Lower(p.event.node_name);
        auto node = NodeFor(p.event);
        if (!node) {
          spdlog::error("VM {}/{}: {}", p.event.scale_set, p.event.instance_id,
                        node.error().message());
          continue;
        }
        auto r = kube::CreateNode(api_, *node);
        if (r || r.error().code() == Error::Code::kConflict) {
          spdlog::info("Node {} created ({} {})", name, p.event.vm_size, p.event.provider_id);
        } else {
          spdlog::warn("creating Node {}: {}", name, r.error().message());
          p.due = Now() + kRetryAfterFailure;
          failed_creates.push_back(std::move(p));
        }
      }
      lock.lock();
      for (auto& name : failed_deletes) delete_.push_back(std::move(name));
      for (Pending& p : failed_creates) {
        std::string name = Lower(p.event.node_name);
        // The VM went while its Node was being created: neither is wanted any more.
        if (auto it = std::find(delete_.begin(), delete_.end(), name); it != delete_.end()) {
          delete_.erase(it);
          continue;
        }
        create_[name] = std::move(p);
      }
      if (stop_) break;
      // Wake for the next due Node, a retry, new work (changed_) or stop.
      auto next = Now() + std::chrono::hours(1);
      if (!delete_.empty()) next = Now() + kRetryAfterFailure;
      for (const auto& [name, p] : create_) next = std::min(next, p.due);
      cv_.wait_until(lock, next, [&] { return stop_ || changed_; });
    }
  }

  kube::ApiClient& api_;
  Duration boot_delay_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool changed_ = false;                   // work was added since the worker last looked
  std::map<std::string, Pending> create_;  // by node name
  std::vector<std::string> delete_;
  std::thread worker_;  // last: starts after the members above exist
};

// "name=vmss,sku=Standard_NC6,capacity=0,spot=true,tag.poolName=gpu" (tag values hold no ',').
Result<ScaleSetSpec> ParseScaleSet(std::string_view text) {
  ScaleSetSpec spec;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view field = text.substr(start, end - start);
    start = end + 1;
    if (field.empty()) continue;
    size_t eq = field.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("--scale-set {}: field {} is not key=value", text, field);
    }
    std::string key(field.substr(0, eq));
    std::string value(field.substr(eq + 1));
    if (key == "name") {
      spec.name = value;
    } else if (key == "sku") {
      spec.sku = value;
    } else if (key == "capacity") {
      try {
        spec.capacity = std::stoi(value);
      } catch (const std::exception&) {
        return InvalidArgument("--scale-set {}: capacity {} is not a number", text, value);
      }
    } else if (key == "spot") {
      if (value != "true" && value != "false") {
        return InvalidArgument("--scale-set {}: spot must be true or false", text);
      }
      spec.spot = value == "true";
    } else if (key.starts_with("tag.") && key.size() > 4) {
      spec.tags[key.substr(4)] = value;
    } else {
      return InvalidArgument(
          "--scale-set {}: unknown field {} (expected name, sku, capacity, spot, tag.<name>)", text,
          key);
    }
  }
  if (spec.name.empty()) return InvalidArgument("--scale-set {}: name is required", text);
  if (cloud::azure::FindVmSize(spec.sku) == nullptr) {
    return InvalidArgument("--scale-set {}: VM size {} is not in the size table", text, spec.sku);
  }
  return spec;
}

// A token request's form body with the client_secret value replaced, so the control route never
// hands the secret out (test logs print what it returns).
std::string RedactClientSecret(std::string body) {
  constexpr std::string_view kKey = "client_secret=";
  for (size_t at = body.find(kKey); at != std::string::npos; at = body.find(kKey, at + 1)) {
    if (at != 0 && body[at - 1] != '&') continue;
    size_t start = at + kKey.size();
    size_t end = body.find('&', start);
    body.replace(start, (end == std::string::npos ? body.size() : end) - start, "<redacted>");
  }
  return body;
}

void SendJson(httplib::Response& res, const json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

// The /_fake/ control routes (see the top of this file).
void HandleControl(FakeArm& fake, const std::vector<std::string>& scale_sets,
                   const httplib::Request& req, httplib::Response& res) {
  if (req.path == "/_fake/scale-sets" && req.method == "GET") {
    json out = json::object();
    for (const std::string& name : scale_sets) {
      json instances = json::array();
      for (const std::string& id : fake.InstanceIds(name)) {
        instances.push_back({{"id", id},
                             {"state", fake.InstanceState(name, id)},
                             {"power", fake.InstancePower(name, id)}});
      }
      out[name] = {{"capacity", fake.Capacity(name)}, {"instances", instances}};
    }
    return SendJson(res, out);
  }
  if (req.path == "/_fake/requests" && req.method == "GET") {
    std::string method = req.get_param_value("method");
    std::string path = req.get_param_value("path");
    json out = json::array();
    for (const RecordedRequest& r : fake.requests()) {
      if (!method.empty() && r.method != method) continue;
      if (!path.empty() && r.path.find(path) == std::string::npos) continue;
      out.push_back({{"method", r.method},
                     {"path", r.path},
                     {"query", r.query},
                     {"body", RedactClientSecret(r.body)}});
    }
    return SendJson(res, out);
  }
  if (req.path == "/_fake/fail-next-scale-up" && req.method == "POST") {
    std::string code = req.get_param_value("code");
    if (code.empty()) return SendJson(res, {{"error", "code is required"}}, 400);
    std::string message = req.get_param_value("message");
    if (message.empty()) {
      message =
          "Allocation failed. We do not have sufficient capacity for the requested VM "
          "size in this region.";
    }
    int instances = 0;
    if (std::string n = req.get_param_value("instances"); !n.empty()) {
      try {
        instances = std::stoi(n);
      } catch (const std::exception&) {
        return SendJson(res, {{"error", "instances must be a number"}}, 400);
      }
    }
    fake.FailNextScaleUp(code, message, instances);
    spdlog::info("control: the next scale-up fails with {} ({} instance(s); 0: all)", code,
                 instances);
    return SendJson(res, {{"ok", true}});
  }
  if (req.path == "/_fake/fail-next-start" && req.method == "POST") {
    std::string code = req.get_param_value("code");
    if (code.empty()) return SendJson(res, {{"error", "code is required"}}, 400);
    std::string message = req.get_param_value("message");
    if (message.empty()) message = "The VM could not be started.";
    fake.FailNextStart(code, message);
    spdlog::info("control: the next start fails with {}", code);
    return SendJson(res, {{"ok", true}});
  }
  if (req.path == "/_fake/evict" && req.method == "POST") {
    std::string ss = req.get_param_value("scaleSet");
    std::string id = req.get_param_value("instanceId");
    auto ids = fake.InstanceIds(ss);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
      return SendJson(res, {{"error", "no instance " + id + " in " + ss}}, 404);
    }
    fake.EvictSpotInstance(ss, id);
    spdlog::info("control: evicted {}/{}", ss, id);
    return SendJson(res, {{"ok", true}});
  }
  if (req.path == "/_fake/throttle" && req.method == "POST") {
    int n = 0, after = 0;
    try {
      n = std::stoi(req.get_param_value("requests"));
      after = std::stoi(req.get_param_value("retryAfter"));
    } catch (const std::exception&) {
      return SendJson(res, {{"error", "requests and retryAfter must be numbers"}}, 400);
    }
    fake.ThrottleNext(n, after);
    return SendJson(res, {{"ok", true}});
  }
  SendJson(res, {{"error", "unknown control route " + req.method + " " + req.path}}, 404);
}

void AddControlRoutes(FakeArm& fake, std::vector<std::string> scale_sets) {
  fake.AddRoute("/_fake/", [&fake, scale_sets = std::move(scale_sets)](const httplib::Request& req,
                                                                       httplib::Response& res) {
    HandleControl(fake, scale_sets, req, res);
  });
}

struct Flags {
  std::string shared_dir;
  int port = 0;
  std::string kubeconfig;
  std::string boot_delay = "2s";
  std::vector<std::string> scale_sets;
  std::string subscription;
  std::string resource_group;
  std::string location;
  std::string tenant;
  std::string client_id;
  std::string client_secret_file;
  std::string retry_after = "1s";
  int operation_polls = 0;
  std::string fail_next_scale_up;
};

int Fail(const Error& e) {
  std::fprintf(stderr, "tidepool-fake-arm: %s\n", e.message().c_str());
  return 2;
}

int Main(int argc, char** argv) {
  FakeArmOptions defaults;
  Flags f;
  f.subscription = defaults.subscription;
  f.resource_group = defaults.resource_group;
  f.location = defaults.location;
  f.tenant = defaults.tenant;
  f.client_id = defaults.client_id;

  CLI::App app{"FakeArm (ARM, Azure AD, IMDS) for tidepool's end-to-end tests"};
  app.add_option("--shared-dir", f.shared_dir, "Folder holding azure-arm-examples/")->required();
  app.add_option("--port", f.port, "Port on 127.0.0.1 (0: any free one)");
  app.add_option("--kubeconfig", f.kubeconfig,
                 "Cluster to register VMs' Nodes in (default: none, no Nodes)");
  app.add_option("--boot-delay", f.boot_delay, "From VM succeeded to its Node (e.g. 2s)");
  app.add_option("--scale-set", f.scale_sets,
                 "name=N,sku=Standard_NC6,capacity=0,spot=true,tag.K=V (repeatable)");
  app.add_option("--subscription", f.subscription, "Subscription id");
  app.add_option("--resource-group", f.resource_group, "Resource group");
  app.add_option("--location", f.location, "Location");
  app.add_option("--tenant", f.tenant, "Azure AD tenant");
  app.add_option("--client-id", f.client_id, "Accepted client id");
  app.add_option("--client-secret-file", f.client_secret_file,
                 "File holding the accepted client secret (default: the fake's built-in one)");
  app.add_option("--retry-after", f.retry_after, "Retry-After of long-running operations");
  app.add_option("--operation-polls", f.operation_polls,
                 "Polls an operation answers InProgress before it ends");
  app.add_option("--fail-next-scale-up", f.fail_next_scale_up,
                 "The first capacity increase fails with this ARM code (e.g. AllocationFailed)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  SetupLogging(LogFormat::kText, "info");

  std::vector<ScaleSetSpec> specs;
  for (const std::string& text : f.scale_sets) {
    auto spec = ParseScaleSet(text);
    if (!spec) return Fail(spec.error());
    specs.push_back(std::move(*spec));
  }
  auto boot_delay = ParseDuration(f.boot_delay);
  if (!boot_delay) return Fail(boot_delay.error().Wrap("--boot-delay"));
  auto retry_after = ParseDuration(f.retry_after);
  if (!retry_after) return Fail(retry_after.error().Wrap("--retry-after"));

  FakeArmOptions options;
  options.shared_dir = f.shared_dir;
  options.port = f.port;
  options.subscription = f.subscription;
  options.resource_group = f.resource_group;
  options.location = f.location;
  options.tenant = f.tenant;
  options.client_id = f.client_id;
  options.retry_after = *retry_after;
  if (!f.client_secret_file.empty()) {
    auto secret = kube::ReadCredentialFile(f.client_secret_file);
    if (!secret) return Fail(secret.error().Wrap("--client-secret-file"));
    std::string s = std::move(*secret);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (s.empty()) return Fail(Error(Error::Code::kInvalidArgument, "--client-secret-file: empty"));
    options.client_secret = std::move(s);
  }
  RealClock clock;
  options.clock = &clock;

  std::unique_ptr<kube::ApiClient> api;
  if (!f.kubeconfig.empty()) {
    auto config = kube::ResolveClientConfig(f.kubeconfig, "");
    if (!config) return Fail(config.error().Wrap("--kubeconfig"));
    api = std::make_unique<kube::ApiClient>(*config);
  }

  // SIGTERM / SIGINT are taken by sigwait below: block them before any thread starts so every
  // thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<NodeRegistrar> registrar;
  if (api) registrar = std::make_unique<NodeRegistrar>(*api, *boot_delay);

  auto started = FakeArm::Start(options);
  if (!started) return Fail(started.error());
  std::unique_ptr<FakeArm> fake = std::move(*started);
  fake->SetOperationPolls(f.operation_polls);
  if (registrar) {
    fake->OnInstanceCreated([r = registrar.get()](const InstanceEvent& e) { r->Created(e); });
    fake->OnInstanceDeleted([r = registrar.get()](const InstanceEvent& e) { r->Deleted(e); });
  }
  std::vector<std::string> names;
  for (const ScaleSetSpec& spec : specs) {
    fake->AddScaleSet(spec);
    names.push_back(spec.name);
    spdlog::info("scale set {}: {} x{}{}", spec.name, spec.sku, spec.capacity,
                 spec.spot ? " (spot)" : "");
  }
  if (!f.fail_next_scale_up.empty()) {
    fake->FailNextScaleUp(f.fail_next_scale_up,
                          "Allocation failed. We do not have sufficient capacity for the "
                          "requested VM size in this region.");
  }
  AddControlRoutes(*fake, names);

  std::printf("listening %s\n", fake->endpoint().c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {}: stopping", sig);
  fake.reset();       // no more hooks
  registrar.reset();  // then the worker
  return 0;
}

}  // namespace
}  // namespace tidepool::testing::azure

int main(int argc, char** argv) { return tidepool::testing::azure::Main(argc, argv); }
