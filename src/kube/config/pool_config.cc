// `pools:` of the config file: each pool's settings, its node template (labels, taints,
// capacity) and its warm capacity.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kube/config/config_fields.h"
#include "model/node.h"
#include "model/selector.h"

namespace tidepool::kube::config::config_detail {
namespace {

using model::Pool;

// Pods per node when a template's capacity does not say (the kubelet's default maxPods).
constexpr int64_t kDefaultPodsPerNode = 110;

// Index order matches kCapacityTypes / kTaintEffects (config_fields.h).
constexpr model::CapacityType kCapacityTypeValues[] = {model::CapacityType::kOnDemand,
                                                       model::CapacityType::kSpot};
constexpr model::TaintEffect kTaintEffectValues[] = {model::TaintEffect::kNoSchedule,
                                                     model::TaintEffect::kPreferNoSchedule,
                                                     model::TaintEffect::kNoExecute};

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

// One attribute of `template.devices[i].attributes`: a plain true/false is a bool, a plain integer
// an int, anything else a string; {version: "1.2.3"} is a version.
Result<model::DeviceAttribute> ParseDeviceAttribute(const YamlValue& v) {
  using Kind = model::DeviceAttribute::Kind;
  model::DeviceAttribute a;
  if (v.IsMap()) {
    TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, "a version {version: \"1.2.3\"}"));
    static const std::string_view kVersionOnly[] = {"version"};
    TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kVersionOnly));
    TIDEPOOL_ASSIGN_OR_RETURN(YamlValue version, m.Require("version", "a semantic version"));
    TIDEPOOL_ASSIGN_OR_RETURN(a.text, version.ReadString());
    a.kind = Kind::kVersion;
    return a;
  }
  if (!v.IsScalar()) return std::unexpected(v.Expected("a string, integer, bool or {version}"));
  if (v.IsPlainScalar()) {
    if (auto b = v.ReadBool()) {
      a.kind = Kind::kBool;
      a.bool_value = *b;
      return a;
    }
    if (auto i = v.ReadInt(INT64_MIN, INT64_MAX, "an integer")) {
      a.kind = Kind::kInt;
      a.int_value = *i;
      return a;
    }
  }
  TIDEPOOL_ASSIGN_OR_RETURN(a.text, v.ReadString());
  a.kind = Kind::kString;
  return a;
}

// `template.devices`: [{driver, count, attributes, capacity}], what each new node's DRA drivers
// publish (docs/dra.md).
Result<void> ParseDevices(const YamlValue& v, Pool& pool) {
  TIDEPOOL_ASSIGN_OR_RETURN(auto items, v.ReadList());
  for (const auto& item : items) {
    constexpr std::string_view kExpected = "devices {driver, count, attributes, capacity}";
    TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(item, kExpected));
    TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kDeviceKeys));
    model::TemplateDevices d;
    TIDEPOOL_ASSIGN_OR_RETURN(YamlValue driver, m.Require("driver", "a DRA driver name"));
    TIDEPOOL_ASSIGN_OR_RETURN(d.driver, driver.ReadString());
    if (d.driver.empty() || !IsQualifiedName(d.driver) || d.driver.find('/') != std::string::npos) {
      return std::unexpected(driver.Expected("a DRA driver name like \"gpu.example.com\""));
    }
    int64_t count = 1;
    TIDEPOOL_RETURN_IF_ERROR(ReadIntField(m, "count", 1, 1024, "an integer from 1 to 1024", count));
    d.count = static_cast<int32_t>(count);
    if (const YamlValue* attrs = m.Find("attributes")) {
      TIDEPOOL_ASSIGN_OR_RETURN(YamlMap am, YamlMap::Read(*attrs, "a map of device attributes"));
      for (const auto& e : am.entries()) {
        if (!IsQualifiedName(e.key)) {
          return std::unexpected(
              e.value.MakeError("invalid attribute name (expected a name, "
                                "optionally prefixed by a domain and '/')"));
        }
        TIDEPOOL_ASSIGN_OR_RETURN(d.attributes[model::QualifiedName(d.driver, e.key)],
                                  ParseDeviceAttribute(e.value));
      }
    }
    if (const YamlValue* caps = m.Find("capacity")) {
      TIDEPOOL_ASSIGN_OR_RETURN(YamlMap cm, YamlMap::Read(*caps, "a map of device capacities"));
      for (const auto& e : cm.entries()) {
        if (!IsQualifiedName(e.key)) {
          return std::unexpected(e.value.MakeError("invalid capacity name"));
        }
        TIDEPOOL_ASSIGN_OR_RETURN(d.capacity[model::QualifiedName(d.driver, e.key)],
                                  e.value.ReadQuantity());
      }
    }
    pool.devices.push_back(std::move(d));
  }
  pool.device_slices = model::TemplateSlices(pool.name, pool.template_node.meta.name, pool.devices);
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
  if (const YamlValue* devices = m.Find("devices")) {
    TIDEPOOL_RETURN_IF_ERROR(ParseDevices(*devices, pool));
  }
  return {};
}

// `warm.stoppedNodes` against `scaleDown` (parsed before `warm`): the stopped machines it keeps
// need mode deallocate, and may not be more than maxStopped lets stop.
Result<void> CheckStoppedNodes(const YamlMap& m, const Pool& pool) {
  const int32_t n = pool.warm.stopped_nodes;
  if (n == 0) return {};
  const YamlValue* at = m.Find("stoppedNodes");
  if (!pool.scale_down.Deallocates()) {
    return std::unexpected(at->MakeError(
        "stoppedNodes keeps stopped machines, which needs the pool's scaleDown.mode deallocate "
        "(expected scaleDown: {mode: deallocate}, or stoppedNodes left out)"));
  }
  if (n > pool.scale_down.max_stopped) {
    return std::unexpected(at->MakeError(fmt::format(
        "{} stopped nodes is more than scaleDown.maxStopped {} (expected at most maxStopped)", n,
        pool.scale_down.max_stopped)));
  }
  return {};
}

// `pools[i].warm`. Runs after the template and `scaleDown` are parsed: headroom must fit the
// pool's node shape. For a node group (`shape_known` false) the shape and max come from the
// provider, which checks them then (cloud/clusterapi).
Result<void> ParseWarm(const YamlValue& v, Pool& pool, bool shape_known) {
  TIDEPOOL_ASSIGN_OR_RETURN(
      YamlMap m, YamlMap::Read(v, "a map {spareNodes, stoppedNodes, headroom, predictive}"));
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kWarmKeys));
  model::WarmConfig& warm = pool.warm;
  TIDEPOOL_RETURN_IF_ERROR(
      ReadIntField(m, "spareNodes", 0, kInt32Max, "a non-negative integer", warm.spare_nodes));
  if (shape_known && warm.spare_nodes > pool.max) {
    return std::unexpected(
        m.Find("spareNodes")
            ->MakeError(
                fmt::format("{} spare nodes is more than the pool's max {} (expected at most max)",
                            warm.spare_nodes, pool.max)));
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ReadIntField(m, "stoppedNodes", 0, kInt32Max, "a non-negative integer", warm.stopped_nodes));
  TIDEPOOL_RETURN_IF_ERROR(CheckStoppedNodes(m, pool));
  if (const YamlValue* headroom = m.Find("headroom")) {
    TIDEPOOL_ASSIGN_OR_RETURN(
        YamlMap h,
        YamlMap::Read(*headroom, "a map of resource quantities, e.g. {nvidia.com/gpu: 4}"));
    TIDEPOOL_RETURN_IF_ERROR(ParseResourceList(
        h, [&](model::ResourceId id, int64_t amount, const YamlValue& at) -> Result<void> {
          if (shape_known && pool.template_node.allocatable.Get(id) <= 0) {
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
        YamlMap p,
        YamlMap::Read(*predictive, "a map {enabled, horizon, maxCostPerDay, waitValuePerGpuHour}"));
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

// `pools[i].scaleDown`. Runs after max is known (maxStopped defaults to it).
Result<void> ParsePoolScaleDown(const YamlValue& v, Pool& pool, std::string_view provider_type) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, "a map {mode, maxStopped}"));
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kPoolScaleDownKeys));
  model::PoolScaleDown& sd = pool.scale_down;
  if (const YamlValue* mode = m.Find("mode")) {
    TIDEPOOL_ASSIGN_OR_RETURN(size_t i, mode->ReadEnum(kScaleDownModes));
    sd.mode = i == 1 ? model::ScaleDownMode::kDeallocate : model::ScaleDownMode::kDelete;
    auto& stopping = kStoppingProviders;
    if (sd.Deallocates() &&
        std::find(std::begin(stopping), std::end(stopping), provider_type) == std::end(stopping)) {
      return std::unexpected(mode->MakeError(fmt::format(
          "provider.type {} cannot stop machines (mode deallocate works with {}; expected mode "
          "delete)",
          provider_type, fmt::join(stopping, ", "))));
    }
  }
  sd.max_stopped = pool.max;
  if (const YamlValue* max_stopped = m.Find("maxStopped")) {
    if (!sd.Deallocates()) {
      return std::unexpected(max_stopped->MakeError(
          "maxStopped applies to mode deallocate only (expected it left out, or mode: "
          "deallocate)"));
    }
    TIDEPOOL_ASSIGN_OR_RETURN(int64_t n,
                              max_stopped->ReadInt(0, kInt32Max, "a non-negative integer"));
    sd.max_stopped = static_cast<int32_t>(n);
  }
  return {};
}

}  // namespace

Result<void> ParsePool(const YamlValue& v, Pool& pool, PoolSource source,
                       std::string_view provider_type) {
  const bool node_group = source == PoolSource::kNodeGroup;
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
  if (node_group) {
    // Cluster API: the node group's annotations say these; the config only adds to them.
    for (std::string_view key : {"min", "max", "template"}) {
      if (const YamlValue* at = m.Find(key)) {
        return std::unexpected(at->MakeError(fmt::format(
            "{} comes from the node group (its cluster.x-k8s.io/cluster-api-autoscaler-node-group-"
            "*-size and capacity.cluster-autoscaler.kubernetes.io/* annotations) with provider "
            "type clusterapi (expected it left out)",
            key)));
      }
    }
  } else {
    TIDEPOOL_RETURN_IF_ERROR(
        ReadIntField(m, "min", 0, kInt32Max, "a non-negative integer", pool.min));
    TIDEPOOL_ASSIGN_OR_RETURN(YamlValue max, m.Require("max", "a non-negative integer"));
    TIDEPOOL_ASSIGN_OR_RETURN(int64_t max_value,
                              max.ReadInt(0, kInt32Max, "a non-negative integer"));
    pool.max = static_cast<int32_t>(max_value);
    if (pool.min > pool.max) {
      return std::unexpected(m.Find("min")->MakeError(
          fmt::format("min {} is greater than max {} (expected min <= max)", pool.min, pool.max)));
    }
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

  if (!node_group) {
    TIDEPOOL_ASSIGN_OR_RETURN(
        YamlValue tmpl,
        m.Require("template", "the node the pool creates: labels, taints, capacity"));
    TIDEPOOL_RETURN_IF_ERROR(ParseTemplate(tmpl, pool));
  }
  if (const YamlValue* scale_down = m.Find("scaleDown")) {
    TIDEPOOL_RETURN_IF_ERROR(ParsePoolScaleDown(*scale_down, pool, provider_type));
  }
  if (const YamlValue* warm = m.Find("warm")) {
    TIDEPOOL_RETURN_IF_ERROR(ParseWarm(*warm, pool, /*shape_known=*/!node_group));
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ReadDurationField(m, "restartDelay", /*allow_zero=*/true, pool.restart_delay));
  if (pool.restart_delay && !pool.scale_down.Deallocates()) {
    return std::unexpected(m.Find("restartDelay")
                               ->MakeError("restartDelay applies to pools with scaleDown.mode "
                                           "deallocate (expected it left out, or that mode)"));
  }
  return {};
}

}  // namespace tidepool::kube::config::config_detail
