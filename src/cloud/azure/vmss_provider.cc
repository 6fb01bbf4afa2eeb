#include "cloud/azure/vmss_provider.h"

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

constexpr Duration kDiscoveryInterval = std::chrono::minutes(1);

// A DNS-1123 label from a tag or scale set name ("Agentpool1" -> "agentpool1").
std::string PoolNameFrom(std::string_view raw) {
  std::string out;
  for (char c : ToLower(raw)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    out.push_back(ok ? c : '-');
  }
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > 63) out.resize(63);
  return out;
}

// The name a discovered scale set is known by as a pool.
std::string DiscoveredPoolName(const json& scale_set) {
  const json& tags = ObjectField(scale_set, "tags");
  std::string name = StringField(tags, kTagAksPoolName);
  if (name.empty()) name = StringField(tags, kTagPoolName);
  if (name.empty()) name = StringField(scale_set, "name");
  return PoolNameFrom(name);
}

}  // namespace

VmssProvider::VmssProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps)
    : AzureProvider(std::move(settings), std::move(pools), std::move(deps)) {
  bound_ = settings_.scale_sets;
}

std::string VmssProvider::ScaleSetPath(const std::string& scale_set) const {
  return ScaleSetPathOf({settings_.subscription_id, settings_.resource_group, scale_set, ""});
}

std::optional<std::string> VmssProvider::ScaleSetOf(const std::string& pool) const {
  auto it = bound_.find(pool);
  if (it == bound_.end()) return std::nullopt;
  return it->second;
}

Result<std::string> VmssProvider::Bound(const std::string& pool) const {
  if (auto s = ScaleSetOf(pool)) return *s;
  return Fail(Error::Code::kNotFound,
              "azure-vmss: pool {}: no scale set (name it in provider.scaleSets.{} or tag one for "
              "discovery)",
              pool, pool);
}

Result<void> VmssProvider::BeforeRefresh(Time now) {
  if (!settings_.discovery()) return {};
  return Discover(now, /*force=*/false);
}

Result<void> VmssProvider::Discover(Time now, bool force) {
  if (!force && discovered_at_ && now < *discovered_at_ + kDiscoveryInterval) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(
      auto items,
      arm_->List(fmt::format("/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Compute/"
                             "virtualMachineScaleSets",
                             settings_.subscription_id, settings_.resource_group),
                 settings_.compute_api_version));
  discovered_at_ = now;
  discovered_.clear();
  for (auto& ss : items) {
    const json& tags = ObjectField(ss, "tags");
    bool match = false;
    if (!settings_.discovery_cluster.empty()) {
      match = tags.contains(kTagAutoscalerEnabled) &&
              tags.contains(std::string(kTagAutoscalerClusterPrefix) + settings_.discovery_cluster);
    }
    if (settings_.discovery_pool_name_tag && !StringField(tags, kTagPoolName).empty()) match = true;
    if (match) discovered_.push_back(std::move(ss));
  }
  // Bind configured (and adopted) pools that have no explicit scale set.
  for (const model::Pool& pool : pools()) {
    if (settings_.scale_sets.contains(pool.name)) continue;
    for (const json& ss : discovered_) {
      if (DiscoveredPoolName(ss) == pool.name || StringField(ss, "name") == pool.name) {
        bound_[pool.name] = StringField(ss, "name");
        break;
      }
    }
  }
  return {};
}

Result<std::vector<model::Pool>> VmssProvider::DiscoverPools(Time now) {
  if (!settings_.discovery()) return std::vector<model::Pool>{};
  TIDEPOOL_RETURN_IF_ERROR(Discover(now, /*force=*/true));
  std::set<std::string> taken;
  for (const auto& [pool, ss] : bound_) taken.insert(ToLower(ss));
  std::vector<model::Pool> out;
  for (const json& ss : discovered_) {
    std::string ss_name = StringField(ss, "name");
    if (taken.contains(ToLower(ss_name))) continue;
    std::string name = DiscoveredPoolName(ss);
    if (name.empty() || FindPool(name) != nullptr) {
      spdlog::warn("azure-vmss: scale set {}: pool name \"{}\" is empty or taken; skipped", ss_name,
                   name);
      continue;
    }
    auto pool = PoolFromScaleSet(name, ss);
    if (!pool) {
      spdlog::warn("azure-vmss: discovery: {}; skipped", pool.error().message());
      continue;
    }
    bound_[name] = ss_name;
    AddPool(*pool);
    out.push_back(std::move(*pool));
  }
  return out;
}

Result<VmssProvider::ScaleSetView> VmssProvider::ReadScaleSet(const std::string& scale_set) {
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse r,
                            arm_->Get(ScaleSetPath(scale_set), settings_.compute_api_version));
  if (!r.ok()) return std::unexpected(r.AsError());
  ScaleSetView v;
  const json& sku = ObjectField(r.body, "sku");
  if (!sku.contains("capacity") || !sku["capacity"].is_number_integer()) {
    return Fail(Error::Code::kUnavailable,
                "ARM GET {}: the scale set has no sku.capacity (expected an integer)", r.path);
  }
  v.capacity = sku["capacity"].get<int>();
  v.etag = r.etag;
  v.from_cache = r.from_cache;
  v.body = std::move(r.body);
  return v;
}

Result<std::vector<VmssInstance>> VmssProvider::ListInstances(const std::string& scale_set) {
  return ListVmssInstances(*arm_,
                           {settings_.subscription_id, settings_.resource_group, scale_set, ""},
                           settings_.compute_api_version);
}

bool VmssProvider::Joined(const VmssInstance& instance) const {
  if (node_joined_) return node_joined_(instance.provider_id);
  return EqualsIgnoreCase(instance.provisioning, "Succeeded");
}

Result<void> VmssProvider::DeleteInstances(const std::string& pool, const std::string& scale_set,
                                           const std::vector<std::string>& ids, Time now) {
  if (ids.empty()) return {};
  json body = {{"instanceIds", ids}};
  TIDEPOOL_ASSIGN_OR_RETURN(
      ArmResponse r,
      arm_->Send("POST", ScaleSetPath(scale_set) + "/delete", settings_.compute_api_version, &body,
                 {}, settings_.force_deletion ? "forceDeletion=true" : ""));
  if (r.status == 404) {
    spdlog::info("azure-vmss: pool {}: instances {} already gone", pool, fmt::join(ids, ","));
    return {};
  }
  if (!r.ok()) return std::unexpected(r.AsError().Wrap(fmt::format("pool {}", pool)));
  spdlog::info("azure-vmss: pool {}: deleting instances {} of {}", pool, fmt::join(ids, ","),
               scale_set);
  if (r.operation) Track(pool, std::move(*r.operation), "delete");
  (void)now;
  return {};
}

Result<void> VmssProvider::SetCapacity(const std::string& pool, const std::string& scale_set,
                                       const std::function<Result<int>(int)>& compute, Time now) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    TIDEPOOL_ASSIGN_OR_RETURN(ScaleSetView ss, ReadScaleSet(scale_set));
    if (ss.from_cache) {
      return Fail(Error::Code::kThrottled,
                  "azure-vmss: pool {}: ARM is throttling reads (until {}); not scaling on a "
                  "cached capacity",
                  pool, arm_->throttled_until() ? FormatRfc3339(*arm_->throttled_until()) : "?");
    }
    TIDEPOOL_ASSIGN_OR_RETURN(int capacity, compute(ss.capacity));
    json body = {{"sku", {{"capacity", capacity}}}};
    std::vector<std::pair<std::string, std::string>> headers;
    if (!ss.etag.empty()) headers.emplace_back("If-Match", ss.etag);
    TIDEPOOL_ASSIGN_OR_RETURN(
        ArmResponse r, arm_->Send("PATCH", ScaleSetPath(scale_set), settings_.compute_api_version,
                                  &body, headers));
    if (r.status == 412 && attempt == 0) {
      spdlog::info("azure-vmss: pool {}: scale set {} changed meanwhile (412); reading it again",
                   pool, scale_set);
      continue;
    }
    if (!r.ok()) return std::unexpected(WriteFailed(pool, r, now));
    spdlog::info("azure-vmss: pool {}: scale set {} capacity {} -> {}", pool, scale_set,
                 ss.capacity, capacity);
    if (r.operation) Track(pool, std::move(*r.operation), "scale");
    return {};
  }
  return Fail(Error::Code::kConflict,
              "azure-vmss: pool {}: scale set {} kept changing (HTTP 412 twice); try again", pool,
              scale_set);
}

Result<std::optional<PoolSize>> VmssProvider::RefreshPool(const model::Pool& pool, Time now) {
  auto bound = ScaleSetOf(pool.name);
  if (!bound) {
    if (warned_unbound_.insert(pool.name).second) {
      spdlog::warn(
          "azure-vmss: pool {}: no scale set found by discovery (tag one with poolName={} or name "
          "it in provider.scaleSets.{}); left out until one is",
          pool.name, pool.name, pool.name);
    }
    return std::optional<PoolSize>();
  }
  TIDEPOOL_ASSIGN_OR_RETURN(ScaleSetView ss, ReadScaleSet(*bound));
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<VmssInstance> instances, ListInstances(*bound));
  if (!pool.instance_type.empty()) {
    std::string sku = StringField(ObjectField(ss.body, "sku"), "name");
    if (!sku.empty() && !EqualsIgnoreCase(sku, pool.instance_type)) {
      spdlog::warn("azure-vmss: pool {}: config says {} but scale set {} runs {}", pool.name,
                   pool.instance_type, *bound, sku);
    }
  }

  PoolSize size;
  size.pool = pool.name;
  size.target = ss.capacity;
  std::vector<std::string> to_delete;
  const VmssInstance* stockout = nullptr;
  for (const VmssInstance& inst : instances) {
    if (inst.failed()) {
      bool capacity_failure = IsStockoutError(inst.error_code, inst.error_message);
      if (capacity_failure && stockout == nullptr) stockout = &inst;
      bool removable = node_joined_ ? !node_joined_(inst.provider_id) : capacity_failure;
      if (removable) to_delete.push_back(inst.id);
      continue;
    }
    if (inst.deleting()) continue;
    if (pool.scale_down.Deallocates() && inst.stopped()) {
      ++size.stopped;
      continue;
    }
    ++size.instances;
  }
  size.target = std::max(0, size.target - size.stopped);
  if (stockout != nullptr) {
    NoteStockout(pool.name,
                 fmt::format("{}: {} (instance {} of {})", stockout->error_code,
                             stockout->error_message, stockout->id, *bound),
                 now);
  }
  if (!to_delete.empty() && !ss.from_cache) {
    auto deleted = DeleteInstances(pool.name, *bound, to_delete, now);
    if (deleted) {
      size.target = std::max(0, size.target - static_cast<int>(to_delete.size()));
    } else {
      spdlog::warn("azure-vmss: pool {}: deleting failed instances: {}", pool.name,
                   deleted.error().message());
    }
  }
  return size;
}

Result<void> VmssProvider::Grow(const model::Pool& p, int delta, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::string scale_set, Bound(p.name));
  if (p.scale_down.Deallocates()) return GrowFromStopped(p, scale_set, delta, now);
  return SetCapacity(
      p.name, scale_set, [&](int capacity) { return WithinMax(p, capacity, delta); }, now);
}

Result<void> VmssProvider::Shrink(const model::Pool& p, int delta, Time now) {
  const std::string& pool = p.name;
  TIDEPOOL_ASSIGN_OR_RETURN(std::string scale_set, Bound(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(ScaleSetView ss, ReadScaleSet(scale_set));
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<VmssInstance> instances, ListInstances(scale_set));
  std::vector<const VmssInstance*> candidates;
  int listed = 0;
  int stopped = 0;
  for (const VmssInstance& inst : instances) {
    if (inst.deleting()) continue;
    ++listed;
    if (p.scale_down.Deallocates() && inst.stopped()) {
      ++stopped;  // in the capacity, but neither upcoming nor joined
      continue;
    }
    if (!Joined(inst)) candidates.push_back(&inst);
  }
  auto rank = [](const VmssInstance* i) {
    if (i->failed()) return 0;
    if (EqualsIgnoreCase(i->provisioning, "Creating")) return 1;
    return 2;
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](auto* a, auto* b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return a->number() > b->number();  // newest first
  });
  int remaining = delta;
  // Capacity no listed instance stands for yet (the scale set is still creating the models).
  int unbacked = std::max(0, ss.capacity - listed);
  if (unbacked > 0) {
    int give_back = std::min(unbacked, remaining);
    TIDEPOOL_RETURN_IF_ERROR(SetCapacity(
        pool, scale_set,
        [&](int capacity) -> Result<int> { return std::max(0, capacity - give_back); }, now));
    remaining -= give_back;
  }
  std::vector<std::string> ids;
  for (const VmssInstance* c : candidates) {
    if (remaining == 0) break;
    ids.push_back(c->id);
    --remaining;
  }
  TIDEPOOL_RETURN_IF_ERROR(DeleteInstances(pool, scale_set, ids, now));
  // With no joined instance left, the rest cannot have joined: they are gone already (failed
  // instances Refresh deleted, evicted spot VMs), and the target is as low as it goes.
  bool any_joined = listed - stopped > static_cast<int>(candidates.size());
  if (remaining > 0 && !any_joined) {
    spdlog::info("azure-vmss: pool {}: {} of {} instance(s) to cancel are gone already", pool,
                 remaining, delta);
    return {};
  }
  if (remaining > 0) {
    return Fail(Error::Code::kConflict,
                "azure-vmss: pool {}: cancelled {} of {} requested instance(s); the other "
                "instances of {} have joined the cluster (or finished provisioning) and are "
                "removed only through DeleteNode",
                pool, delta - remaining, delta, scale_set);
  }
  return {};
}

Result<void> VmssProvider::DeleteNode(const std::string& pool, const model::Node& node, Time now) {
  TIDEPOOL_RETURN_IF_ERROR(RequirePool(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(std::string scale_set, Bound(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(std::string id, InstanceOf(pool, scale_set, node));
  return DeleteInstances(pool, scale_set, {id}, now);
}

Result<std::string> VmssProvider::InstanceOf(const std::string& pool, const std::string& scale_set,
                                             const model::Node& node) const {
  auto ref = ParseVmssInstanceId(node.provider_id);
  if (!ref) {
    return InvalidArgument(
        "azure-vmss: node {}: providerID \"{}\" does not name a scale set instance (expected "
        "azure:///subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/"
        "virtualMachineScaleSets/<vmss>/virtualMachines/<id>)",
        node.name(), node.provider_id);
  }
  if (!EqualsIgnoreCase(ref->scale_set, scale_set) ||
      !EqualsIgnoreCase(ref->resource_group, settings_.resource_group) ||
      !EqualsIgnoreCase(ref->subscription, settings_.subscription_id)) {
    return InvalidArgument(
        "azure-vmss: node {} is an instance of scale set {} (resource group {}), not of pool "
        "{}'s scale set {} (resource group {})",
        node.name(), ref->scale_set, ref->resource_group, pool, scale_set,
        settings_.resource_group);
  }
  return ref->instance_id;
}

std::string VmssProvider::PoolOf(const model::Node& node) const {
  auto ref = ParseVmssInstanceId(node.provider_id);
  if (!ref || !EqualsIgnoreCase(ref->resource_group, settings_.resource_group) ||
      !EqualsIgnoreCase(ref->subscription, settings_.subscription_id)) {
    return "";
  }
  for (const auto& [pool, scale_set] : bound_) {
    if (EqualsIgnoreCase(scale_set, ref->scale_set)) return pool;
  }
  return "";
}

}  // namespace tidepool::cloud::azure
