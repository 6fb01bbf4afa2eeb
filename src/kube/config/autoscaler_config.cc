#include "kube/config/autoscaler_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "kube/config/config_fields.h"
#include "kube/config/yaml_reader.h"
#include "model/node.h"
#include "model/resources.h"
#include "model/selector.h"

namespace tidepool::kube::config {
namespace {

using config_detail::kInt32Max;
using config_detail::kInt32Min;
using config_detail::kInt64Max;
using config_detail::ParsePool;
using config_detail::ReadDurationField;
using config_detail::ReadFractionField;
using config_detail::ReadIntField;
using config_detail::ReadResourceName;

using model::AutoscalerConfig;
using model::Pool;

// What an empty or unparsable document was expected to be, for error messages.
constexpr std::string_view kWhat = "an AutoscalerConfig";

constexpr std::string_view kTopKeys[] = {"apiVersion",   "kind",    "provider",
                                         "limits",       "scaleUp", "scaleDown",
                                         "scanInterval", "pools",   "simulation"};
constexpr std::string_view kProviderKeys[] = {"type", "bootDelay", "unavailablePools"};
constexpr std::string_view kProviderTypes[] = {"kwok", "azure-vmss", "aks", "azure-vms",
                                               "clusterapi"};
constexpr std::string_view kScaleUpKeys[] = {
    "expanders", "provisionTimeout",   "backoff",    "expendablePriorityCutoff", "batchIdle",
    "batchMax",  "maxNodesPerScaleUp", "randomSeed", "provisioningRequests",     "balanceZones"};
constexpr std::string_view kBackoffKeys[] = {"initial", "max"};
constexpr std::string_view kProvisioningRequestKeys[] = {"bookingTime"};
constexpr std::string_view kExpanders[] = {"priority", "least-waste", "price", "most-pods",
                                           "random"};
constexpr std::string_view kScaleDownKeys[] = {
    "enabled",       "utilizationThreshold", "gpuUtilizationThreshold", "unneededTime",
    "delayAfterAdd", "maxEmptyBulkDelete",   "maxNonEmptyPerPool",      "maxPodEvictionTime",
    "consolidation", "candidatesPerPass",    "markCandidates"};
constexpr std::string_view kConsolidationKeys[] = {"enabled", "safetyFactor", "restartDelay",
                                                   "maxHorizon", "replace"};

}  // namespace

namespace config_detail {

// The lists of `pools:` (declared in config_fields.h for pool_config.cc).
constexpr std::string_view kPoolKeys[] = {
    "name",         "min",      "max",          "capacityType",
    "pricePerHour", "priority", "instanceType", "provisionTimeout",
    "bootDelay",    "template", "warm",         "scaleDown",
    "restartDelay"};
constexpr std::string_view kWarmKeys[] = {"spareNodes", "stoppedNodes", "headroom", "predictive"};
constexpr std::string_view kPredictiveKeys[] = {"enabled", "horizon", "maxCostPerDay",
                                                "waitValuePerGpuHour"};
constexpr std::string_view kTemplateKeys[] = {"labels", "taints", "capacity", "allocatable",
                                              "devices"};
constexpr std::string_view kTaintKeys[] = {"key", "value", "effect"};
constexpr std::string_view kDeviceKeys[] = {"driver", "count", "attributes", "capacity"};
constexpr std::string_view kCapacityTypes[] = {"on-demand", "spot"};
constexpr std::string_view kTaintEffects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
constexpr std::string_view kPoolScaleDownKeys[] = {"mode", "maxStopped"};
constexpr std::string_view kScaleDownModes[] = {"delete", "deallocate"};
constexpr std::string_view kStoppingProviders[] = {"kwok", "azure-vmss", "azure-vms", "aks"};

}  // namespace config_detail

namespace {

// Flattens a provider setting into `out`: a scalar is stored as written under `key`, a map
// recursively under "key.member".
Result<void> FlattenSetting(const YamlValue& v, const std::string& key,
                            std::map<std::string, std::string>& out) {
  if (v.IsMap()) {
    TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, "a map"));
    for (const auto& e : m.entries()) {
      TIDEPOOL_RETURN_IF_ERROR(FlattenSetting(e.value, key + "." + e.key, out));
    }
    return {};
  }
  if (v.IsNull() || !v.IsScalar()) return std::unexpected(v.Expected("a string or a map"));
  out[key] = v.node().Scalar();
  return {};
}

// `provider:`. Returns the unavailablePools items (for the check against pool names, which
// needs the pools parsed first).
Result<std::vector<YamlValue>> ParseProvider(const YamlValue& v, model::ProviderConfig& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, "a map of provider settings"));
  if (const YamlValue* type = m.Find("type")) {
    TIDEPOOL_ASSIGN_OR_RETURN(size_t i, type->ReadEnum(kProviderTypes));
    out.type = std::string(kProviderTypes[i]);
  }
  if (out.type == "kwok") {
    TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kProviderKeys));
  } else {
    // Azure and Cluster API settings (subscriptionId, auth: {...}, managementKubeconfig, ...)
    // belong to the provider; the core keeps them as text.
    for (const auto& e : m.entries()) {
      if (std::find(std::begin(kProviderKeys), std::end(kProviderKeys), e.key) !=
          std::end(kProviderKeys)) {
        continue;
      }
      TIDEPOOL_RETURN_IF_ERROR(FlattenSetting(e.value, e.key, out.settings));
    }
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadDurationField(m, "bootDelay", /*allow_zero=*/true, out.boot_delay));
  std::vector<YamlValue> unavailable;
  if (const YamlValue* list = m.Find("unavailablePools")) {
    TIDEPOOL_ASSIGN_OR_RETURN(unavailable, list->ReadList());
    for (const auto& item : unavailable) {
      TIDEPOOL_ASSIGN_OR_RETURN(std::string name, item.ReadString());
      out.unavailable_pools.push_back(std::move(name));
    }
  }
  return unavailable;
}

Result<void> ParseLimits(const YamlValue& v, model::ClusterLimits& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(
      YamlMap m, YamlMap::Read(v, "a map of maxNodes and resource limits (cpu, memory, ...)"));
  for (const auto& e : m.entries()) {
    if (e.key == "maxNodes") {
      TIDEPOOL_ASSIGN_OR_RETURN(int64_t n, e.value.ReadInt(0, kInt32Max, "a non-negative integer"));
      out.max_nodes = static_cast<int32_t>(n);
      continue;
    }
    static constexpr std::string_view kOtherKeys[] = {"maxNodes"};
    TIDEPOOL_ASSIGN_OR_RETURN(model::ResourceId id, ReadResourceName(e, kOtherKeys));
    TIDEPOOL_ASSIGN_OR_RETURN(model::Quantity q, e.value.ReadQuantity());
    out.resources.SetQuantity(id, q);
    out.limited.push_back(id);
  }
  return {};
}

Result<void> ParseScaleUp(const YamlValue& v, model::ScaleUpConfig& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, "a map of scale-up settings"));
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kScaleUpKeys));
  if (const YamlValue* list = m.Find("expanders")) {
    TIDEPOOL_ASSIGN_OR_RETURN(auto items, list->ReadList());
    if (items.empty()) {
      return std::unexpected(list->MakeError("expected at least one expander, got an empty list"));
    }
    std::vector<std::string> expanders;
    for (const auto& item : items) {
      TIDEPOOL_ASSIGN_OR_RETURN(size_t i, item.ReadEnum(kExpanders));
      std::string name(kExpanders[i]);
      if (std::find(expanders.begin(), expanders.end(), name) != expanders.end()) {
        return std::unexpected(
            item.MakeError(fmt::format("expander \"{}\" is listed twice", name)));
      }
      expanders.push_back(std::move(name));
    }
    out.expanders = std::move(expanders);
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "provisionTimeout", /*allow_zero=*/false, out.provision_timeout));
  if (const YamlValue* backoff = m.Find("backoff")) {
    TIDEPOOL_ASSIGN_OR_RETURN(YamlMap b, YamlMap::Read(*backoff, "a map {initial, max}"));
    TIDEPOOL_RETURN_IF_ERROR(b.CheckKeys(kBackoffKeys));
    TIDEPOOL_RETURN_IF_ERROR(
        ReadDurationField(b, "initial", /*allow_zero=*/true, out.backoff_initial));
    TIDEPOOL_RETURN_IF_ERROR(ReadDurationField(b, "max", /*allow_zero=*/true, out.backoff_max));
    if (out.backoff_initial > out.backoff_max) {
      const YamlValue* at = b.Find("initial") ? b.Find("initial") : backoff;
      return std::unexpected(at->MakeError(
          fmt::format("initial backoff {} is longer than the maximum {} (expected initial <= max)",
                      FormatDuration(out.backoff_initial), FormatDuration(out.backoff_max))));
    }
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadIntField(m, "expendablePriorityCutoff", kInt32Min, kInt32Max,
                                        "an integer", out.expendable_priority_cutoff));
  TIDEPOOL_RETURN_IF_ERROR(ReadDurationField(m, "batchIdle", /*allow_zero=*/true, out.batch_idle));
  TIDEPOOL_RETURN_IF_ERROR(ReadDurationField(m, "batchMax", /*allow_zero=*/true, out.batch_max));
  TIDEPOOL_RETURN_IF_ERROR(ReadIntField(m, "maxNodesPerScaleUp", 1, kInt32Max, "a positive integer",
                                        out.max_nodes_per_scale_up));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadIntField(m, "randomSeed", 0, kInt64Max, "a non-negative integer", out.random_seed));
  if (const YamlValue* balance = m.Find("balanceZones")) {
    TIDEPOOL_ASSIGN_OR_RETURN(out.balance_zones, balance->ReadBool());
  }
  if (const YamlValue* requests = m.Find("provisioningRequests")) {
    TIDEPOOL_ASSIGN_OR_RETURN(YamlMap r, YamlMap::Read(*requests, "a map {bookingTime}"));
    TIDEPOOL_RETURN_IF_ERROR(r.CheckKeys(kProvisioningRequestKeys));
    TIDEPOOL_RETURN_IF_ERROR(
        ReadDurationField(r, "bookingTime", /*allow_zero=*/false, out.booking_time));
  }
  return {};
}

Result<void> ParseConsolidation(const YamlValue& v, model::ConsolidationConfig& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(
      YamlMap m,
      YamlMap::Read(v, "a map {enabled, safetyFactor, restartDelay, maxHorizon, replace}"));
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kConsolidationKeys));
  if (const YamlValue* enabled = m.Find("enabled")) {
    TIDEPOOL_ASSIGN_OR_RETURN(out.enabled, enabled->ReadBool());
  }
  if (const YamlValue* safety = m.Find("safetyFactor")) {
    // Below 1 would evict training for less than the work it throws away.
    TIDEPOOL_ASSIGN_OR_RETURN(out.safety_factor,
                              safety->ReadNumber(1, 1000, "a number between 1 and 1000"));
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "restartDelay", /*allow_zero=*/true, out.restart_delay));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "maxHorizon", /*allow_zero=*/false, out.max_horizon));
  if (const YamlValue* replace = m.Find("replace")) {
    TIDEPOOL_ASSIGN_OR_RETURN(out.replace, replace->ReadBool());
  }
  return {};
}

Result<void> ParseScaleDown(const YamlValue& v, model::ScaleDownConfig& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, "a map of scale-down settings"));
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kScaleDownKeys));
  if (const YamlValue* enabled = m.Find("enabled")) {
    TIDEPOOL_ASSIGN_OR_RETURN(out.enabled, enabled->ReadBool());
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadFractionField(m, "utilizationThreshold", out.utilization_threshold));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadFractionField(m, "gpuUtilizationThreshold", out.gpu_utilization_threshold));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "unneededTime", /*allow_zero=*/true, out.unneeded_time));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "delayAfterAdd", /*allow_zero=*/true, out.delay_after_add));
  TIDEPOOL_RETURN_IF_ERROR(ReadIntField(m, "maxEmptyBulkDelete", 0, kInt32Max,
                                        "a non-negative integer", out.max_empty_bulk_delete));
  TIDEPOOL_RETURN_IF_ERROR(ReadIntField(m, "maxNonEmptyPerPool", 0, kInt32Max,
                                        "a non-negative integer", out.max_non_empty_per_pool));
  TIDEPOOL_RETURN_IF_ERROR(ReadIntField(m, "candidatesPerPass", 0, kInt32Max,
                                        "a non-negative integer (0: every candidate)",
                                        out.candidates_per_pass));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "maxPodEvictionTime", /*allow_zero=*/false, out.max_pod_eviction_time));
  if (const YamlValue* mark = m.Find("markCandidates")) {
    TIDEPOOL_ASSIGN_OR_RETURN(out.mark_candidates, mark->ReadBool());
  }
  if (const YamlValue* c = m.Find("consolidation")) {
    TIDEPOOL_RETURN_IF_ERROR(ParseConsolidation(*c, out.consolidation));
  }
  return {};
}

Result<AutoscalerConfig> ParseConfig(const YamlValue& root, std::optional<RawSection>* simulation) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(root, "a map (an AutoscalerConfig)"));

  // apiVersion and kind first: for a file that is not a config at all they say the most.
  TIDEPOOL_ASSIGN_OR_RETURN(YamlValue api_version,
                            m.Require("apiVersion", fmt::format("\"{}\"", kConfigApiVersion)));
  TIDEPOOL_ASSIGN_OR_RETURN(std::string api_version_text, api_version.ReadString());
  if (api_version_text != kConfigApiVersion) {
    return std::unexpected(api_version.Expected(fmt::format("\"{}\"", kConfigApiVersion)));
  }
  TIDEPOOL_ASSIGN_OR_RETURN(YamlValue kind, m.Require("kind", fmt::format("\"{}\"", kConfigKind)));
  TIDEPOOL_ASSIGN_OR_RETURN(std::string kind_text, kind.ReadString());
  if (kind_text != kConfigKind) {
    return std::unexpected(kind.Expected(fmt::format("\"{}\"", kConfigKind)));
  }
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kTopKeys));

  AutoscalerConfig config;
  std::vector<YamlValue> unavailable;
  if (const YamlValue* provider = m.Find("provider")) {
    TIDEPOOL_ASSIGN_OR_RETURN(unavailable, ParseProvider(*provider, config.provider));
  }
  if (const YamlValue* limits = m.Find("limits")) {
    TIDEPOOL_RETURN_IF_ERROR(ParseLimits(*limits, config.limits));
  }
  if (const YamlValue* scale_up = m.Find("scaleUp")) {
    TIDEPOOL_RETURN_IF_ERROR(ParseScaleUp(*scale_up, config.scale_up));
  }
  if (const YamlValue* scale_down = m.Find("scaleDown")) {
    TIDEPOOL_RETURN_IF_ERROR(ParseScaleDown(*scale_down, config.scale_down));
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "scanInterval", /*allow_zero=*/false, config.scan_interval));
  // `simulation:` belongs to sim/, which parses it from the kept subtree; here only its shape.
  if (const YamlValue* sim = m.Find("simulation")) {
    if (!sim->IsNull() && !sim->IsMap()) {
      return std::unexpected(sim->Expected("a map of simulation settings"));
    }
    if (simulation != nullptr) {
      *simulation = RawSection{sim->node(), std::string(sim->source()), sim->path(), sim->line()};
    }
  }

  // With Cluster API the pools are the cluster's node groups: `pools:` only adds settings to
  // them by name, and may be left out.
  const bool node_groups = config.provider.type == "clusterapi";
  std::vector<YamlValue> pools;
  if (const YamlValue* pools_value = m.Find("pools"); pools_value != nullptr || !node_groups) {
    TIDEPOOL_ASSIGN_OR_RETURN(YamlValue v, m.Require("pools", "a list of pools"));
    if (!(node_groups && v.IsNull())) {
      TIDEPOOL_ASSIGN_OR_RETURN(pools, v.ReadList());
    }
    if (pools.empty() && !node_groups) {
      return std::unexpected(v.MakeError("expected at least one pool, got an empty list"));
    }
  }
  const auto source =
      node_groups ? config_detail::PoolSource::kNodeGroup : config_detail::PoolSource::kConfig;
  for (size_t i = 0; i < pools.size(); ++i) {
    Pool pool;
    TIDEPOOL_RETURN_IF_ERROR(ParsePool(pools[i], pool, source, config.provider.type));
    for (size_t j = 0; j < config.pools.size(); ++j) {
      if (config.pools[j].name == pool.name) {
        // ParsePool succeeded, so the item is a map with a name.
        YamlMap pm = *YamlMap::Read(pools[i], "");
        return std::unexpected(pm.Find("name")->MakeError(
            fmt::format("duplicate pool name \"{}\" (already used by pools[{}])", pool.name, j)));
      }
    }
    config.pools.push_back(std::move(pool));
  }

  for (size_t i = 0; i < unavailable.size(); ++i) {
    const std::string& name = config.provider.unavailable_pools[i];
    if (config.FindPool(name) == nullptr) {
      std::string known;
      for (const auto& p : config.pools) known += (known.empty() ? "" : ", ") + p.name;
      return std::unexpected(unavailable[i].MakeError(
          fmt::format("no pool named \"{}\" (expected one of: {})", name, known)));
    }
    for (size_t j = 0; j < i; ++j) {
      if (config.provider.unavailable_pools[j] == name) {
        return std::unexpected(
            unavailable[i].MakeError(fmt::format("pool \"{}\" is listed twice", name)));
      }
    }
  }
  return config;
}

}  // namespace

Result<ConfigFile> ParseConfigFile(std::string_view yaml, std::string_view source) {
  try {
    TIDEPOOL_ASSIGN_OR_RETURN(YAML::Node doc, LoadYamlDocument(yaml, source, kWhat));
    ConfigFile file;
    TIDEPOOL_ASSIGN_OR_RETURN(file.config,
                              ParseConfig(YamlValue::Root(doc, source), &file.simulation));
    return file;
  } catch (const YAML::Exception& e) {
    // Walking the tree does not throw in practice; this keeps it so if yaml-cpp ever does.
    if (e.mark.is_null() || e.mark.line < 0) return InvalidArgument("{}: {}", source, e.msg);
    return InvalidArgument("{}:{}: {}", source, e.mark.line + 1, e.msg);
  } catch (const std::exception& e) {
    return InvalidArgument("{}: cannot read the config: {}", source, e.what());
  }
}

Result<AutoscalerConfig> ParseAutoscalerConfig(std::string_view yaml, std::string_view source) {
  TIDEPOOL_ASSIGN_OR_RETURN(ConfigFile file, ParseConfigFile(yaml, source));
  return std::move(file.config);
}

Result<ConfigFile> LoadConfigFile(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) {
    return InvalidArgument("cannot open config file \"{}\": {}", path, std::strerror(errno));
  }
  std::string text;
  char buffer[64 * 1024];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, file.get())) text.append(buffer, n);
  if (std::ferror(file.get())) {
    return InvalidArgument("cannot read config file \"{}\": {}", path, std::strerror(errno));
  }
  return ParseConfigFile(text, path);
}

Result<AutoscalerConfig> LoadAutoscalerConfig(const std::string& path) {
  TIDEPOOL_ASSIGN_OR_RETURN(ConfigFile file, LoadConfigFile(path));
  return std::move(file.config);
}

Result<void> RequirePoolsInFile(const AutoscalerConfig& config, std::string_view source,
                                std::string_view command) {
  if (config.provider.type != "clusterapi") return {};
  return InvalidArgument(
      "{}: provider.type clusterapi: the pools are the management cluster's node groups, read by "
      "`tidepool run`; `{}` works from a file and needs them defined there (expected a config "
      "with another provider type and the pools' templates)",
      source, command);
}

}  // namespace tidepool::kube::config
