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

#include "kube/config/yaml_reader.h"
#include "model/node.h"
#include "model/resources.h"
#include "model/selector.h"

namespace tidepool::kube::config {
namespace {

using model::AutoscalerConfig;
using model::Pool;

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Pods per node when a template's capacity does not say (the kubelet's default maxPods).
constexpr int64_t kDefaultPodsPerNode = 110;

// What an empty or unparsable document was expected to be, for error messages.
constexpr std::string_view kWhat = "an AutoscalerConfig";

constexpr std::string_view kTopKeys[] = {"apiVersion",   "kind",    "provider",
                                         "limits",       "scaleUp", "scaleDown",
                                         "scanInterval", "pools",   "simulation"};
constexpr std::string_view kProviderKeys[] = {"type", "bootDelay", "unavailablePools"};
constexpr std::string_view kProviderTypes[] = {"kwok", "azure-vmss", "aks", "azure-vms"};
constexpr std::string_view kScaleUpKeys[] = {
    "expanders", "provisionTimeout",   "backoff",   "expendablePriorityCutoff", "batchIdle",
    "batchMax",  "maxNodesPerScaleUp", "randomSeed"};
constexpr std::string_view kBackoffKeys[] = {"initial", "max"};
constexpr std::string_view kExpanders[] = {"priority", "least-waste", "price", "most-pods",
                                           "random"};
constexpr std::string_view kScaleDownKeys[] = {
    "enabled",       "utilizationThreshold", "gpuUtilizationThreshold", "unneededTime",
    "delayAfterAdd", "maxEmptyBulkDelete",   "maxNonEmptyPerPool",      "maxPodEvictionTime"};
constexpr std::string_view kPoolKeys[] = {
    "name",         "min",      "max",          "capacityType",
    "pricePerHour", "priority", "instanceType", "provisionTimeout",
    "bootDelay",    "template",     "warm"};
constexpr std::string_view kWarmKeys[] = {"spareNodes", "headroom", "predictive"};
constexpr std::string_view kPredictiveKeys[] = {"enabled", "horizon", "maxCostPerDay",
                                                "waitValuePerGpuHour"};
constexpr std::string_view kTemplateKeys[] = {"labels", "taints", "capacity", "allocatable"};
constexpr std::string_view kTaintKeys[] = {"key", "value", "effect"};
// Index order matches model::CapacityType / model::TaintEffect below.
constexpr std::string_view kCapacityTypes[] = {"on-demand", "spot"};
constexpr model::CapacityType kCapacityTypeValues[] = {model::CapacityType::kOnDemand,
                                                       model::CapacityType::kSpot};
constexpr std::string_view kTaintEffects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
constexpr model::TaintEffect kTaintEffectValues[] = {model::TaintEffect::kNoSchedule,
                                                     model::TaintEffect::kPreferNoSchedule,
                                                     model::TaintEffect::kNoExecute};

// Reads `key` of `m` as an integer in [lo, hi] into `out` when present.
template <typename Int>
Result<void> ReadIntField(const YamlMap& m, std::string_view key, int64_t lo, int64_t hi,
                          std::string_view what, Int& out) {
  const YamlValue* v = m.Find(key);
  if (v == nullptr) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t n, v->ReadInt(lo, hi, what));
  out = static_cast<Int>(n);
  return {};
}

Result<void> ReadDurationField(const YamlMap& m, std::string_view key, bool allow_zero,
                               Duration& out) {
  const YamlValue* v = m.Find(key);
  if (v == nullptr) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(out, v->ReadDuration(allow_zero));
  return {};
}

Result<void> ReadDurationField(const YamlMap& m, std::string_view key, bool allow_zero,
                               std::optional<Duration>& out) {
  const YamlValue* v = m.Find(key);
  if (v == nullptr) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(out, v->ReadDuration(allow_zero));
  return {};
}

Result<void> ReadFractionField(const YamlMap& m, std::string_view key, double& out) {
  const YamlValue* v = m.Find(key);
  if (v == nullptr) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(out, v->ReadNumber(0, 1, "a number between 0 and 1"));
  return {};
}

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
    // Azure settings (subscriptionId, resourceGroup, auth: {...}, ...) belong to the provider;
    // the core keeps them as text.
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

// The resource named by a key of `limits`, `capacity` or `allocatable`. A key that is no
// resource name is an error, so a typo such as "MaxNodes" or "gpu" is not taken for a resource.
Result<model::ResourceId> ReadResourceName(const YamlMap::Entry& e,
                                           std::span<const std::string_view> other_keys = {}) {
  if (!IsResourceName(e.key)) {
    std::string message =
        "unknown resource name (expected cpu, memory, ephemeral-storage, pods, hugepages-<size> "
        "or an extended resource with a domain, such as nvidia.com/gpu)";
    std::string_view hint = ClosestName(e.key, other_keys);
    if (e.key == "gpu" || e.key == "gpus") hint = model::kNvidiaGpu;
    if (!hint.empty()) message += fmt::format("; did you mean \"{}\"?", hint);
    return std::unexpected(e.value.MakeError(message));
  }
  return model::InternResource(e.key);
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
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "maxPodEvictionTime", /*allow_zero=*/false, out.max_pod_eviction_time));
  return {};
}

// A resource list (`capacity:`, `allocatable:`): every entry is a valid resource name with a
// non-negative quantity. Calls `set(id, amount, entry)` for each.
template <typename F>
Result<void> ParseResourceList(const YamlMap& m, F&& set) {
  for (const auto& e : m.entries()) {
    TIDEPOOL_ASSIGN_OR_RETURN(model::ResourceId id, ReadResourceName(e));
    TIDEPOOL_ASSIGN_OR_RETURN(model::Quantity q, e.value.ReadQuantity());
    model::Resources one;
    one.SetQuantity(id, q);
    TIDEPOOL_RETURN_IF_ERROR(set(id, one.Get(id), e.value));
  }
  return {};
}

Result<void> ParseLabels(const YamlValue& v, model::Labels& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, "a map of node labels"));
  for (const auto& e : m.entries()) {
    if (!IsQualifiedName(e.key)) {
      return std::unexpected(e.value.MakeError(
          "invalid label key (expected an optional DNS subdomain prefix and '/', then at most 63 "
          "letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"));
    }
    TIDEPOOL_ASSIGN_OR_RETURN(std::string value, e.value.ReadString());
    if (!IsLabelValue(value)) {
      return std::unexpected(e.value.Expected(
          "a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
          "letter or digit"));
    }
    out[e.key] = std::move(value);
  }
  return {};
}

Result<void> ParseTaints(const YamlValue& v, std::vector<model::Taint>& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(auto items, v.ReadList());
  for (const auto& item : items) {
    constexpr std::string_view kExpected = "a taint {key, value, effect}";
    if (item.IsNull()) return std::unexpected(item.Expected(kExpected));
    TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(item, kExpected));
    TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kTaintKeys));
    model::Taint taint;
    TIDEPOOL_ASSIGN_OR_RETURN(YamlValue key, m.Require("key", "a taint key"));
    TIDEPOOL_ASSIGN_OR_RETURN(taint.key, key.ReadString());
    if (!IsQualifiedName(taint.key)) {
      return std::unexpected(key.Expected("a taint key like \"sku\" or \"example.com/gpu\""));
    }
    if (const YamlValue* value = m.Find("value")) {
      TIDEPOOL_ASSIGN_OR_RETURN(taint.value, value->ReadString());
      if (!IsLabelValue(taint.value)) {
        return std::unexpected(value->Expected(
            "a taint value: at most 63 letters, digits, '-', '_' or '.', starting and ending "
            "with a letter or digit"));
      }
    }
    TIDEPOOL_ASSIGN_OR_RETURN(YamlValue effect,
                              m.Require("effect", "NoSchedule, PreferNoSchedule or NoExecute"));
    TIDEPOOL_ASSIGN_OR_RETURN(size_t e, effect.ReadEnum(kTaintEffects));
    taint.effect = kTaintEffectValues[e];
    for (const auto& other : out) {
      if (other.key == taint.key && other.effect == taint.effect) {
        return std::unexpected(item.MakeError(
            fmt::format("duplicate taint: key \"{}\" with effect {} is already given", taint.key,
                        model::TaintEffectName(taint.effect))));
      }
    }
    out.push_back(std::move(taint));
  }
  return {};
}

Result<void> ParseTemplate(const YamlValue& v, Pool& pool) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m,
                            YamlMap::Read(v, "a map {labels, taints, capacity, allocatable}"));
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kTemplateKeys));
  model::Node& node = pool.template_node;
  node.meta.name = "template-" + pool.name;
  node.ready = true;

  if (const YamlValue* labels = m.Find("labels")) {
    TIDEPOOL_RETURN_IF_ERROR(ParseLabels(*labels, node.meta.labels));
    // The labels tidepool sets itself must not say something else.
    auto check = [&](std::string_view key, const std::string& want) -> Result<void> {
      const std::string* have = node.meta.Label(key);
      if (have == nullptr || *have == want) return {};
      YamlMap lm = *YamlMap::Read(*labels, "");
      return std::unexpected(lm.Find(key)->MakeError(fmt::format(
          "is \"{}\" but tidepool sets it to \"{}\" (remove it or make it match)", *have, want)));
    };
    TIDEPOOL_RETURN_IF_ERROR(check(model::kLabelPool, pool.name));
    if (!pool.instance_type.empty()) {
      TIDEPOOL_RETURN_IF_ERROR(check(model::kLabelInstanceType, pool.instance_type));
    }
  }
  node.meta.labels[std::string(model::kLabelPool)] = pool.name;
  if (!pool.instance_type.empty()) {
    node.meta.labels[std::string(model::kLabelInstanceType)] = pool.instance_type;
  }

  if (const YamlValue* taints = m.Find("taints")) {
    TIDEPOOL_RETURN_IF_ERROR(ParseTaints(*taints, node.taints));
  }

  TIDEPOOL_ASSIGN_OR_RETURN(
      YamlValue capacity_value,
      m.Require("capacity", "the node's resources, e.g. {cpu: \"4\", memory: 16Gi}"));
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap capacity,
                            YamlMap::Read(capacity_value, "a map of resource quantities"));
  TIDEPOOL_RETURN_IF_ERROR(ParseResourceList(
      capacity, [&](model::ResourceId id, int64_t amount, const YamlValue&) -> Result<void> {
        node.capacity.Set(id, amount);
        return {};
      }));
  for (std::string_view required : {"cpu", "memory"}) {
    TIDEPOOL_ASSIGN_OR_RETURN(YamlValue at, capacity.Require(required, "a positive quantity"));
    if (node.capacity.Get(model::InternResource(required)) <= 0) {
      return std::unexpected(at.Expected("a positive quantity"));
    }
  }
  if (const YamlValue* pods = capacity.Find("pods")) {
    if (node.capacity.pods() <= 0) return std::unexpected(pods->Expected("a positive quantity"));
  } else {
    node.capacity.Set(model::kPods, kDefaultPodsPerNode);
  }

  // Allocatable: capacity, with the amounts the config lists instead.
  node.allocatable = node.capacity;
  if (const YamlValue* allocatable_value = m.Find("allocatable")) {
    TIDEPOOL_ASSIGN_OR_RETURN(YamlMap allocatable,
                              YamlMap::Read(*allocatable_value, "a map of resource quantities"));
    TIDEPOOL_RETURN_IF_ERROR(ParseResourceList(
        allocatable,
        [&](model::ResourceId id, int64_t amount, const YamlValue& at) -> Result<void> {
          int64_t cap = node.capacity.Get(id);
          if (amount > cap) {
            return std::unexpected(at.MakeError(
                fmt::format("{} is more than the capacity ({}) (expected allocatable <= capacity)",
                            model::FormatAmount(id, amount), model::FormatAmount(id, cap))));
          }
          node.allocatable.Set(id, amount);
          return {};
        }));
  }
  return {};
}

// `pools[i].warm`. Runs after the template is parsed: headroom must fit the pool's node shape.
Result<void> ParseWarm(const YamlValue& v, Pool& pool) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m,
                            YamlMap::Read(v, "a map {spareNodes, headroom, predictive}"));
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kWarmKeys));
  model::WarmConfig& warm = pool.warm;
  TIDEPOOL_RETURN_IF_ERROR(ReadIntField(m, "spareNodes", 0, kInt32Max, "a non-negative integer",
                                        warm.spare_nodes));
  if (warm.spare_nodes > pool.max) {
    return std::unexpected(m.Find("spareNodes")->MakeError(fmt::format(
        "{} spare nodes is more than the pool's max {} (expected at most max)", warm.spare_nodes,
        pool.max)));
  }
  if (const YamlValue* headroom = m.Find("headroom")) {
    TIDEPOOL_ASSIGN_OR_RETURN(
        YamlMap h, YamlMap::Read(*headroom, "a map of resource quantities, e.g. {nvidia.com/gpu: 4}"));
    TIDEPOOL_RETURN_IF_ERROR(ParseResourceList(
        h, [&](model::ResourceId id, int64_t amount, const YamlValue& at) -> Result<void> {
          if (pool.template_node.allocatable.Get(id) <= 0) {
            return std::unexpected(at.MakeError(fmt::format(
                "the pool's nodes have no {} (expected a resource its template's allocatable "
                "lists)",
                model::ResourceName(id))));
          }
          if (amount <= 0) return std::unexpected(at.Expected("a positive quantity"));
          warm.headroom.Set(id, amount);
          warm.headroom_set.push_back(id);
          return {};
        }));
  }
  if (const YamlValue* predictive = m.Find("predictive")) {
    TIDEPOOL_ASSIGN_OR_RETURN(
        YamlMap p, YamlMap::Read(*predictive,
                                 "a map {enabled, horizon, maxCostPerDay, waitValuePerGpuHour}"));
    TIDEPOOL_RETURN_IF_ERROR(p.CheckKeys(kPredictiveKeys));
    model::WarmConfig::Predictive& pr = warm.predictive;
    if (const YamlValue* enabled = p.Find("enabled")) {
      TIDEPOOL_ASSIGN_OR_RETURN(pr.enabled, enabled->ReadBool());
    }
    TIDEPOOL_RETURN_IF_ERROR(ReadDurationField(p, "horizon", /*allow_zero=*/false, pr.horizon));
    if (pr.horizon > std::chrono::hours(24)) {
      return std::unexpected(p.Find("horizon")->Expected("a duration of at most 24h"));
    }
    constexpr double kMaxNumber = std::numeric_limits<double>::max();
    if (const YamlValue* cost = p.Find("maxCostPerDay")) {
      TIDEPOOL_ASSIGN_OR_RETURN(pr.max_cost_per_day,
                                cost->ReadNumber(0, kMaxNumber, "a non-negative number"));
    }
    if (const YamlValue* value = p.Find("waitValuePerGpuHour")) {
      TIDEPOOL_ASSIGN_OR_RETURN(pr.wait_value_per_gpu_hour,
                                value->ReadNumber(0, kMaxNumber, "a non-negative number"));
    }
    if (pr.enabled && pr.max_cost_per_day <= 0) {
      const YamlValue* at = p.Find("maxCostPerDay") ? p.Find("maxCostPerDay") : p.Find("enabled");
      return std::unexpected(at->MakeError(
          "predictive pre-warming is enabled without a budget (expected maxCostPerDay > 0)"));
    }
    if (pr.enabled && pool.price_per_hour <= 0) {
      return std::unexpected(p.Find("enabled")->MakeError(
          "predictive pre-warming needs the pool's pricePerHour to weigh idle cost (expected "
          "pricePerHour > 0)"));
    }
  }
  return {};
}

Result<void> ParsePool(const YamlValue& v, Pool& pool) {
  constexpr std::string_view kExpected = "a pool (a map with name, min, max, template, ...)";
  if (v.IsNull()) return std::unexpected(v.Expected(kExpected));
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, kExpected));
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kPoolKeys));

  TIDEPOOL_ASSIGN_OR_RETURN(YamlValue name, m.Require("name", "the pool's name"));
  TIDEPOOL_ASSIGN_OR_RETURN(pool.name, name.ReadString());
  if (!IsDns1123Label(pool.name)) {
    return std::unexpected(name.Expected(
        "a pool name: lowercase letters, digits and '-', starting and ending with a letter or "
        "digit, at most 63 characters"));
  }

  TIDEPOOL_RETURN_IF_ERROR(
      ReadIntField(m, "min", 0, kInt32Max, "a non-negative integer", pool.min));
  TIDEPOOL_ASSIGN_OR_RETURN(YamlValue max, m.Require("max", "a non-negative integer"));
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t max_value, max.ReadInt(0, kInt32Max, "a non-negative integer"));
  pool.max = static_cast<int32_t>(max_value);
  if (pool.min > pool.max) {
    return std::unexpected(m.Find("min")->MakeError(
        fmt::format("min {} is greater than max {} (expected min <= max)", pool.min, pool.max)));
  }

  if (const YamlValue* type = m.Find("capacityType")) {
    TIDEPOOL_ASSIGN_OR_RETURN(size_t i, type->ReadEnum(kCapacityTypes));
    pool.capacity_type = kCapacityTypeValues[i];
  }
  if (const YamlValue* price = m.Find("pricePerHour")) {
    TIDEPOOL_ASSIGN_OR_RETURN(
        pool.price_per_hour,
        price->ReadNumber(0, std::numeric_limits<double>::max(), "a non-negative number"));
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ReadIntField(m, "priority", kInt32Min, kInt32Max, "an integer", pool.priority));
  if (const YamlValue* instance_type = m.Find("instanceType")) {
    TIDEPOOL_ASSIGN_OR_RETURN(pool.instance_type, instance_type->ReadString());
    if (pool.instance_type.empty() || !IsLabelValue(pool.instance_type)) {
      return std::unexpected(instance_type->Expected(
          "a VM size such as \"Standard_NC6s_v3\" (it becomes the node.kubernetes.io/instance-type "
          "label)"));
    }
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "provisionTimeout", /*allow_zero=*/false, pool.provision_timeout));
  TIDEPOOL_RETURN_IF_ERROR(ReadDurationField(m, "bootDelay", /*allow_zero=*/true, pool.boot_delay));

  TIDEPOOL_ASSIGN_OR_RETURN(
      YamlValue tmpl, m.Require("template", "the node the pool creates: labels, taints, capacity"));
  TIDEPOOL_RETURN_IF_ERROR(ParseTemplate(tmpl, pool));
  if (const YamlValue* warm = m.Find("warm")) TIDEPOOL_RETURN_IF_ERROR(ParseWarm(*warm, pool));
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

  TIDEPOOL_ASSIGN_OR_RETURN(YamlValue pools_value, m.Require("pools", "a list of pools"));
  TIDEPOOL_ASSIGN_OR_RETURN(auto pools, pools_value.ReadList());
  if (pools.empty()) {
    return std::unexpected(pools_value.MakeError("expected at least one pool, got an empty list"));
  }
  for (size_t i = 0; i < pools.size(); ++i) {
    Pool pool;
    TIDEPOOL_RETURN_IF_ERROR(ParsePool(pools[i], pool));
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

}  // namespace tidepool::kube::config
