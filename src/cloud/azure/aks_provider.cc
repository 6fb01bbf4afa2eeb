#include "cloud/azure/aks_provider.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

#include "cloud/azure/node_template.h"
#include "cloud/azure/provider_id.h"
#include "cloud/azure/url.h"
#include "cloud/json_fields.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// Read-only agent pool properties that must not be sent back in a PUT.
constexpr std::string_view kReadOnlyProperties[] = {
    "provisioningState", "currentOrchestratorVersion", "nodeImageVersion", "eTag", "status",
    "powerState"};

}  // namespace

AksProvider::AksProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps)
    : AzureProvider(std::move(settings), std::move(pools), std::move(deps)) {}

std::string AksProvider::ClusterPath() const {
  return fmt::format(
      "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.ContainerService/managedClusters/{}",
      settings_.subscription_id, settings_.resource_group, settings_.cluster_name);
}

std::string AksProvider::AgentPoolPath(const std::string& agent_pool) const {
  return ClusterPath() + "/agentPools/" + agent_pool;
}

Result<std::string> AksProvider::AgentPoolOf(const std::string& pool) const {
  auto it = settings_.agent_pools.find(pool);
  if (it != settings_.agent_pools.end()) return it->second;
  if (FindPool(pool) != nullptr) return pool;  // discovered pools keep the agent pool's name
  return Fail(Error::Code::kNotFound, "aks: no pool named \"{}\"", pool);
}

Result<AksProvider::AgentPoolView> AksProvider::ReadAgentPool(const std::string& agent_pool) {
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse r,
                            arm_->Get(AgentPoolPath(agent_pool), settings_.aks_api_version));
  if (!r.ok()) return std::unexpected(r.AsError());
  const json& props = ObjectField(r.body, "properties");
  if (!props.contains("count") || !props["count"].is_number_integer()) {
    return Fail(Error::Code::kUnavailable,
                "ARM GET {}: the agent pool has no properties.count (expected an integer)", r.path);
  }
  AgentPoolView v;
  v.count = props["count"].get<int>();
  v.etag = r.etag;
  v.from_cache = r.from_cache;
  v.body = std::move(r.body);
  return v;
}

Result<std::optional<std::vector<AksMachine>>> AksProvider::ListMachines(
    const std::string& agent_pool) {
  auto items = arm_->List(AgentPoolPath(agent_pool) + "/machines", settings_.aks_api_version);
  if (!items) {
    Error::Code c = items.error().code();
    if (c == Error::Code::kNotFound || c == Error::Code::kInvalidArgument) {
      return std::optional<std::vector<AksMachine>>();
    }
    return std::unexpected(items.error());
  }
  std::vector<AksMachine> out;
  for (const json& m : *items) {
    AksMachine machine;
    machine.name = StringField(m, "name");
    const json& props = ObjectField(m, "properties");
    std::string rid = StringField(props, "resourceId");
    if (!rid.empty()) machine.provider_id = "azure://" + rid;
    machine.provisioning = StringField(ObjectField(props, "status"), "provisioningState");
    if (!machine.name.empty()) out.push_back(std::move(machine));
  }
  return std::optional<std::vector<AksMachine>>(std::move(out));
}

bool AksProvider::Joined(const AksMachine& m) const {
  if (node_joined_ && !m.provider_id.empty()) return node_joined_(m.provider_id);
  return m.provisioning.empty() || EqualsIgnoreCase(m.provisioning, "Succeeded");
}

Result<void> AksProvider::CheckIdle(const std::string& pool) const {
  // Deallocations (StopNode) go to the Compute API, not to the agent pool.
  if (pending_operations(pool) > pending_operations(pool, "stop")) {
    return Fail(Error::Code::kUnavailable,
                "aks: pool {}: a previous operation on the agent pool is still running (AKS runs "
                "one at a time); try again after it finishes",
                pool);
  }
  return {};
}

Result<void> AksProvider::SetCount(const std::string& pool, const std::string& agent_pool,
                                   const std::function<Result<int>(int)>& compute, Time now) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    TIDEPOOL_ASSIGN_OR_RETURN(AgentPoolView ap, ReadAgentPool(agent_pool));
    if (ap.from_cache) {
      return Fail(Error::Code::kThrottled,
                  "aks: pool {}: ARM is throttling reads; not scaling on a cached count", pool);
    }
    const json& props = ObjectField(ap.body, "properties");
    if (props.contains("enableAutoScaling") && props["enableAutoScaling"].is_boolean() &&
        props["enableAutoScaling"].get<bool>()) {
      return InvalidArgument(
          "aks: pool {}: agent pool {} has enableAutoScaling on, so AKS's own cluster "
          "autoscaler owns its count (expected it off: az aks nodepool update "
          "--disable-cluster-autoscaler)",
          pool, agent_pool);
    }
    TIDEPOOL_ASSIGN_OR_RETURN(int count, compute(ap.count));
    json new_props = props;
    for (auto key : kReadOnlyProperties) new_props.erase(std::string(key));
    new_props["count"] = count;
    json body = {{"properties", new_props}};
    std::vector<std::pair<std::string, std::string>> headers;
    if (!ap.etag.empty()) headers.emplace_back("If-Match", ap.etag);
    TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse r, arm_->Send("PUT", AgentPoolPath(agent_pool),
                                                        settings_.aks_api_version, &body, headers));
    if (r.status == 412 && attempt == 0) {
      spdlog::info("aks: pool {}: agent pool {} changed meanwhile (412); reading it again", pool,
                   agent_pool);
      continue;
    }
    if (!r.ok()) return std::unexpected(WriteFailed(pool, r, now));
    spdlog::info("aks: pool {}: agent pool {} count {} -> {}", pool, agent_pool, ap.count, count);
    if (r.operation) Track(pool, std::move(*r.operation), "scale");
    return {};
  }
  return Fail(Error::Code::kConflict,
              "aks: pool {}: agent pool {} kept changing (HTTP 412 twice); try again", pool,
              agent_pool);
}

Result<void> AksProvider::DeleteMachines(const std::string& pool, const std::string& agent_pool,
                                         const std::vector<std::string>& names, Time now) {
  if (names.empty()) return {};
  json body = {{"machineNames", names}};
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse r,
                            arm_->Send("POST", AgentPoolPath(agent_pool) + "/deleteMachines",
                                       settings_.aks_api_version, &body));
  if (r.status == 404) {
    spdlog::info("aks: pool {}: machines {} already gone", pool, fmt::join(names, ","));
    return {};
  }
  if (!r.ok()) return std::unexpected(WriteFailed(pool, r, now));
  spdlog::info("aks: pool {}: deleting machines {}", pool, fmt::join(names, ","));
  if (r.operation) Track(pool, std::move(*r.operation), "delete");
  return {};
}

Result<std::optional<PoolSize>> AksProvider::RefreshPool(const model::Pool& pool, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::string agent_pool, AgentPoolOf(pool.name));
  TIDEPOOL_ASSIGN_OR_RETURN(AgentPoolView ap, ReadAgentPool(agent_pool));
  TIDEPOOL_ASSIGN_OR_RETURN(auto machines, ListMachines(agent_pool));
  const json& props = ObjectField(ap.body, "properties");
  PoolSize size;
  size.pool = pool.name;
  size.target = ap.count;
  if (machines) {
    machines_[pool.name] = *machines;
    for (const AksMachine& m : *machines) {
      if (!EqualsIgnoreCase(m.provisioning, "Failed")) ++size.instances;
    }
  } else {
    size.instances = ap.count;
  }
  if (pool.scale_down.Deallocates()) {
    TIDEPOOL_RETURN_IF_ERROR(RefreshStopped(pool, agent_pool, ap, std::move(machines), size, now));
  }
  if (EqualsIgnoreCase(StringField(props, "provisioningState"), "Failed") && !ap.from_cache) {
    const json& err = ObjectField(ObjectField(props, "status"), "provisioningError");
    std::string code = StringField(err, "code");
    std::string message = StringField(err, "message");
    if (IsStockoutError(code, message)) {
      NoteStockout(pool.name, fmt::format("{}: {} (agent pool {})", code, message, agent_pool),
                   now);
    }
  }
  return size;
}

Result<void> AksProvider::Grow(const model::Pool& p, int delta, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::string agent_pool, AgentPoolOf(p.name));
  TIDEPOOL_RETURN_IF_ERROR(CheckIdle(p.name));
  if (p.scale_down.Deallocates()) return GrowKeepingStopped(p, agent_pool, delta, now);
  return SetCount(
      p.name, agent_pool, [&](int count) { return WithinMax(p, count, delta); }, now);
}

Result<void> AksProvider::Shrink(const model::Pool& p, int delta, Time now) {
  const std::string& pool = p.name;
  TIDEPOOL_ASSIGN_OR_RETURN(std::string agent_pool, AgentPoolOf(pool));
  TIDEPOOL_RETURN_IF_ERROR(CheckIdle(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(AgentPoolView ap, ReadAgentPool(agent_pool));
  TIDEPOOL_ASSIGN_OR_RETURN(auto machines, ListMachines(agent_pool));
  // Deallocate pools: stopped machines are neither in count nor cancellable, and count is not
  // lowered while a deallocation runs (AKS could meet it by deallocating a node of its choice).
  if (p.scale_down.Deallocates() && pending_operations(pool, "stop") > 0) {
    return Fail(Error::Code::kUnavailable,
                "aks: pool {}: a node's deallocation is still running; try again after it finishes",
                pool);
  }
  std::set<std::string> stopped;
  if (p.scale_down.Deallocates() && machines) {
    TIDEPOOL_ASSIGN_OR_RETURN(StoppedView v, ReadStopped(pool, agent_pool));
    stopped = std::move(v.stopped_ids);
  }
  auto is_stopped = [&](const AksMachine& m) { return stopped.contains(ToLower(m.provider_id)); };
  int remaining = delta;
  int listed = machines ? static_cast<int>(std::count_if(machines->begin(), machines->end(),
                                                         [&](auto& m) { return !is_stopped(m); }))
                        : ap.count;
  int unbacked = std::max(0, ap.count - listed);
  if (unbacked > 0) {
    int give_back = std::min(unbacked, remaining);
    TIDEPOOL_RETURN_IF_ERROR(SetCount(
        pool, agent_pool, [&](int count) -> Result<int> { return std::max(0, count - give_back); },
        now));
    remaining -= give_back;
    if (remaining > 0 && machines) {
      // AKS runs one operation at a time: the machines wait for the next call.
      return Fail(Error::Code::kUnavailable,
                  "aks: pool {}: lowered the count by {}; {} machine(s) still to cancel once "
                  "that operation finishes",
                  pool, give_back, remaining);
    }
  }
  if (remaining > 0 && machines) {
    std::vector<const AksMachine*> candidates;
    for (const AksMachine& m : *machines)
      if (!Joined(m) && !is_stopped(m)) candidates.push_back(&m);
    std::sort(candidates.begin(), candidates.end(), [](auto* a, auto* b) {
      bool fa = EqualsIgnoreCase(a->provisioning, "Failed");
      bool fb = EqualsIgnoreCase(b->provisioning, "Failed");
      if (fa != fb) return fa;
      return a->name > b->name;  // same-length base-36 suffixes: newest first
    });
    std::vector<std::string> names;
    for (const AksMachine* m : candidates) {
      if (remaining == 0) break;
      names.push_back(m->name);
      --remaining;
    }
    TIDEPOOL_RETURN_IF_ERROR(DeleteMachines(pool, agent_pool, names, now));
  }
  if (remaining > 0) {
    return Fail(Error::Code::kConflict,
                "aks: pool {}: cancelled {} of {} requested machine(s); the other machines of "
                "agent pool {} have joined the cluster and are removed only through DeleteNode",
                pool, delta - remaining, delta, agent_pool);
  }
  return {};
}

Result<void> AksProvider::DeleteNode(const std::string& pool, const model::Node& node, Time now) {
  TIDEPOOL_RETURN_IF_ERROR(RequirePool(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(std::string agent_pool, AgentPoolOf(pool));
  TIDEPOOL_RETURN_IF_ERROR(CheckIdle(pool));
  std::string machine;
  if (auto it = machines_.find(pool); it != machines_.end() && !node.provider_id.empty()) {
    for (const AksMachine& m : it->second) {
      if (EqualsIgnoreCase(m.provider_id, node.provider_id)) machine = m.name;
    }
  }
  if (machine.empty()) {
    if (auto ap = AksAgentPoolOfMachineName(node.name()); ap && *ap == agent_pool) {
      machine = node.name();
    }
  }
  if (machine.empty()) {
    if (auto ref = ParseVmssInstanceId(node.provider_id)) {
      auto ap = AksAgentPoolOfScaleSet(ref->scale_set);
      if (!ap || *ap != agent_pool) {
        return InvalidArgument(
            "aks: node {} is an instance of scale set {}, which is not agent pool {} of pool {}",
            node.name(), ref->scale_set, agent_pool, pool);
      }
      if (auto name = AksMachineName(ref->scale_set, ref->instance_id)) machine = *name;
    }
  }
  if (machine.empty()) {
    return InvalidArgument(
        "aks: node {}: cannot tell its machine: neither its name (expected "
        "aks-{}-<digits>-vmss<id>) nor its providerID \"{}\" (expected a scale set instance) "
        "names one",
        node.name(), agent_pool, node.provider_id);
  }
  return DeleteMachines(pool, agent_pool, {machine}, now);
}

std::string AksProvider::PoolOf(const model::Node& node) const {
  std::optional<std::string> ap;
  if (auto ref = ParseVmssInstanceId(node.provider_id)) {
    if (!EqualsIgnoreCase(ref->subscription, settings_.subscription_id)) return "";
    ap = AksAgentPoolOfScaleSet(ref->scale_set);
  }
  if (!ap) {
    for (const auto& [pool, machines] : machines_) {
      for (const AksMachine& m : machines) {
        if (!node.provider_id.empty() && EqualsIgnoreCase(m.provider_id, node.provider_id)) {
          return pool;
        }
      }
    }
    return "";
  }
  for (const auto& [pool, agent_pool] : settings_.agent_pools) {
    if (agent_pool == *ap) return pool;
  }
  if (FindPool(*ap) != nullptr) return *ap;
  return "";
}

Result<std::vector<model::Pool>> AksProvider::DiscoverPools(Time) {
  TIDEPOOL_ASSIGN_OR_RETURN(auto items,
                            arm_->List(ClusterPath() + "/agentPools", settings_.aks_api_version));
  std::set<std::string> taken;
  for (const auto& [pool, agent_pool] : settings_.agent_pools) taken.insert(agent_pool);
  std::vector<model::Pool> out;
  for (const json& ap : items) {
    std::string name = StringField(ap, "name");
    if (name.empty() || taken.contains(name) || FindPool(name) != nullptr) continue;
    const json& props = ObjectField(ap, "properties");
    if (props.contains("enableAutoScaling") && props["enableAutoScaling"].is_boolean() &&
        props["enableAutoScaling"].get<bool>()) {
      spdlog::info("aks: agent pool {} is scaled by AKS's own autoscaler; not adopted", name);
      continue;
    }
    auto pool = PoolFromAgentPool(name, ap);
    if (!pool) {
      spdlog::warn("aks: discovery: {}; skipped", pool.error().message());
      continue;
    }
    AddPool(*pool);
    out.push_back(std::move(*pool));
  }
  return out;
}

}  // namespace tidepool::cloud::azure
