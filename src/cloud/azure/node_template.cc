#include "cloud/azure/node_template.h"

#include <cstdlib>
#include <optional>

#include "cloud/azure/sku.h"
#include "cloud/azure/sku_devices.h"
#include "cloud/azure/url.h"
#include "cloud/json_fields.h"
#include "model/quantity.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

std::optional<int64_t> IntOf(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0') return n;
  }
  return std::nullopt;
}

void AddTaint(model::Node& node, model::Taint t) {
  for (const auto& have : node.taints)
    if (have.key == t.key && have.effect == t.effect) return;
  node.taints.push_back(std::move(t));
}

// "key=value:Effect" (kubelet --register-with-taints, AKS nodeTaints).
std::optional<model::Taint> ParseTaintSpec(std::string_view spec) {
  auto colon = spec.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto effect = model::ParseTaintEffect(spec.substr(colon + 1));
  if (!effect) return std::nullopt;
  std::string_view kv = spec.substr(0, colon);
  auto eq = kv.find('=');
  model::Taint t;
  t.key = std::string(kv.substr(0, eq));
  if (eq != std::string_view::npos) t.value = std::string(kv.substr(eq + 1));
  t.effect = *effect;
  if (t.key.empty()) return std::nullopt;
  return t;
}

// The SKU's capacity plus labels every Azure node of this size has.
Result<void> ApplySku(const std::string& sku, int max_pods, model::Node& node,
                      const model::Resources& from_tags) {
  const VmSize* size = FindVmSize(sku);
  if (size != nullptr) {
    node.capacity = CapacityOf(*size, max_pods);
    if (size->gpus > 0) {
      node.meta.labels[std::string(kLabelAccelerator)] = "nvidia";
      node.meta.labels["accelerator"] = "nvidia";
      node.meta.labels[std::string(kLabelGpuModel)] = std::string(size->gpu_model);
    }
  } else if (from_tags.cpu_milli() <= 0 || from_tags.memory() <= 0) {
    return Fail(Error::Code::kNotFound,
                "VM size \"{}\" is not in tidepool's size table (add resources tags "
                "{}cpu and {}memory, or name the pool in the config with a template)",
                sku, kTagResourcesPrefix, kTagResourcesPrefix);
  } else {
    node.capacity.Set(model::kPods, max_pods);
  }
  from_tags.ForEach([&](model::ResourceId id, int64_t amount) { node.capacity.Set(id, amount); });
  node.allocatable = node.capacity;
  node.meta.labels[std::string(model::kLabelInstanceType)] = sku;
  return {};
}

// With the kTagDraDriver tag, the size's GPUs become devices of that driver in place of
// nvidia.com/gpu: nodes that run a DRA driver instead of the device plugin.
Result<void> ApplyDraDriver(const json& tags, model::Pool& pool) {
  if (!tags.is_object() || !tags.contains(kTagDraDriver)) return {};
  const json& v = tags[std::string(kTagDraDriver)];
  const std::string driver = v.is_string() ? v.get<std::string>() : "";
  if (driver.empty() || driver.find('.') == std::string::npos ||
      driver.find_first_of(" /") != std::string::npos) {
    return InvalidArgument("tag {}: expected a DRA driver name such as gpu.nvidia.com, got {}",
                           kTagDraDriver, v.dump());
  }
  const VmSize* size = FindVmSize(pool.instance_type);
  if (size == nullptr || GpuSpecOf(*size) == nullptr) {
    return InvalidArgument(
        "tag {}: VM size \"{}\" has no GPUs in tidepool's size table (expected an N-series "
        "size, or a pool named in the config with template.devices)",
        kTagDraDriver, pool.instance_type);
  }
  pool.devices = {GpuDevicesOf(*size, driver)};
  model::Node& node = pool.template_node;
  const model::ResourceId gpu = model::InternResource(model::kNvidiaGpu);
  node.capacity.Set(gpu, 0);
  node.allocatable.Set(gpu, 0);
  pool.device_slices = model::TemplateSlices(pool.name, node.meta.name, pool.devices);
  return {};
}

void ApplyTagLabelsAndTaints(const json& tags, model::Node& node, model::Resources& resources) {
  if (!tags.is_object()) return;
  for (const auto& [name, value] : tags.items()) {
    if (!value.is_string()) continue;
    const std::string& v = value.get_ref<const std::string&>();
    if (name.starts_with(kTagLabelPrefix)) {
      std::string key = DecodeTagKey(std::string_view(name).substr(kTagLabelPrefix.size()));
      if (!key.empty()) node.meta.labels[key] = v;
    } else if (name.starts_with(kTagTaintPrefix)) {
      // Value "<value>:<Effect>".
      std::string key = DecodeTagKey(std::string_view(name).substr(kTagTaintPrefix.size()));
      auto colon = v.rfind(':');
      if (key.empty() || colon == std::string::npos) continue;
      auto effect = model::ParseTaintEffect(std::string_view(v).substr(colon + 1));
      if (!effect) continue;
      AddTaint(node, model::Taint{key, v.substr(0, colon), *effect});
    } else if (name.starts_with(kTagResourcesPrefix)) {
      std::string resource =
          DecodeTagKey(std::string_view(name).substr(kTagResourcesPrefix.size()));
      auto q = model::Quantity::Parse(v);
      if (!resource.empty() && q) resources.SetQuantity(model::InternResource(resource), *q);
    }
  }
}

}  // namespace

std::string DecodeTagKey(std::string_view encoded) {
  std::string out;
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '~' && i + 1 < encoded.size() && encoded[i + 1] == '2') {
      out.push_back('_');
      ++i;
    } else if (encoded[i] == '_') {
      out.push_back('/');
    } else {
      out.push_back(encoded[i]);
    }
  }
  return out;
}

Result<model::Pool> PoolFromScaleSet(const std::string& pool_name, const json& scale_set) {
  model::Pool pool;
  pool.name = pool_name;
  const json& tags = ObjectField(scale_set, "tags");
  const std::string vmss_name = StringField(scale_set, "name");
  auto where = [&](const Error& e) { return e.Wrap(fmt::format("scale set {}", vmss_name)); };
  std::optional<int64_t> min, max;
  if (tags.contains(kTagMin)) min = IntOf(tags[std::string(kTagMin)]);
  if (tags.contains(kTagMax)) max = IntOf(tags[std::string(kTagMax)]);
  if (!max || *max < 0) {
    return std::unexpected(
        where(Error(Error::Code::kInvalidArgument,
                    "no usable \"max\" tag (expected the pool's maximum size)")));
  }
  pool.min = static_cast<int32_t>(min.value_or(0));
  pool.max = static_cast<int32_t>(*max);
  if (pool.min < 0 || pool.min > pool.max) {
    return std::unexpected(where(Error(
        Error::Code::kInvalidArgument,
        fmt::format("tags min {} and max {} (expected 0 <= min <= max)", pool.min, pool.max))));
  }
  std::string priority = StringField(ObjectField(scale_set, "properties"), "priority");
  const bool spot = EqualsIgnoreCase(priority, "Spot") || EqualsIgnoreCase(priority, "Low");
  pool.capacity_type = spot ? model::CapacityType::kSpot : model::CapacityType::kOnDemand;
  pool.instance_type = StringField(ObjectField(scale_set, "sku"), "name");

  model::Node& node = pool.template_node;
  node.meta.name = "template-" + pool_name;
  node.ready = true;
  model::Resources from_tags;
  ApplyTagLabelsAndTaints(tags, node, from_tags);
  if (auto r = ApplySku(pool.instance_type, 110, node, from_tags); !r) {
    return std::unexpected(where(r.error()));
  }
  std::string agent_pool = StringField(tags, kTagAksPoolName);
  if (agent_pool.empty()) agent_pool = StringField(tags, kTagPoolName);
  if (!agent_pool.empty()) {
    node.meta.labels[std::string(kLabelAgentPool)] = agent_pool;
    node.meta.labels[std::string(kLabelLegacyAgentPool)] = agent_pool;
  }
  if (spot) node.meta.labels[std::string(kLabelScaleSetPriority)] = "spot";
  node.meta.labels[std::string(model::kLabelPool)] = pool_name;
  if (auto r = ApplyDraDriver(tags, pool); !r) return std::unexpected(where(r.error()));
  return pool;
}

Result<model::Pool> PoolFromAgentPool(const std::string& pool_name, const json& agent_pool) {
  model::Pool pool;
  pool.name = pool_name;
  const json& props = ObjectField(agent_pool, "properties");
  const std::string ap_name = StringField(agent_pool, "name");
  auto where = [&](const Error& e) { return e.Wrap(fmt::format("agent pool {}", ap_name)); };
  std::optional<int64_t> min, max;
  if (props.contains("minCount")) min = IntOf(props["minCount"]);
  if (props.contains("maxCount")) max = IntOf(props["maxCount"]);
  const json& tags = ObjectField(props, "tags");
  if (!max && tags.contains(kTagMax)) max = IntOf(tags[std::string(kTagMax)]);
  if (!min && tags.contains(kTagMin)) min = IntOf(tags[std::string(kTagMin)]);
  if (!max || *max < 0) {
    return std::unexpected(where(Error(Error::Code::kInvalidArgument,
                                       "no maxCount and no \"max\" tag (expected the pool's "
                                       "maximum size)")));
  }
  pool.min = static_cast<int32_t>(min.value_or(0));
  pool.max = static_cast<int32_t>(*max);
  if (pool.min < 0 || pool.min > pool.max) {
    return std::unexpected(where(
        Error(Error::Code::kInvalidArgument,
              fmt::format("min {} and max {} (expected 0 <= min <= max)", pool.min, pool.max))));
  }
  const bool spot = EqualsIgnoreCase(StringField(props, "scaleSetPriority"), "Spot");
  pool.capacity_type = spot ? model::CapacityType::kSpot : model::CapacityType::kOnDemand;
  if (spot && props.contains("spotMaxPrice") && props["spotMaxPrice"].is_number() &&
      props["spotMaxPrice"].get<double>() > 0) {
    pool.price_per_hour = props["spotMaxPrice"].get<double>();  // an upper bound of the price
  }
  pool.instance_type = StringField(props, "vmSize");
  int max_pods = 110;
  if (props.contains("maxPods")) {
    if (auto n = IntOf(props["maxPods"]); n && *n > 0) max_pods = static_cast<int>(*n);
  }

  model::Node& node = pool.template_node;
  node.meta.name = "template-" + pool_name;
  node.ready = true;
  if (auto r = ApplySku(pool.instance_type, max_pods, node, model::Resources()); !r) {
    return std::unexpected(where(r.error()));
  }
  if (const json& labels = ObjectField(props, "nodeLabels"); labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      if (v.is_string()) node.meta.labels[k] = v.get<std::string>();
    }
  }
  if (props.contains("nodeTaints") && props["nodeTaints"].is_array()) {
    for (const auto& t : props["nodeTaints"]) {
      if (!t.is_string()) continue;
      if (auto taint = ParseTaintSpec(t.get<std::string>())) AddTaint(node, std::move(*taint));
    }
  }
  node.meta.labels[std::string(kLabelAgentPool)] = ap_name;
  node.meta.labels[std::string(kLabelLegacyAgentPool)] = ap_name;
  if (spot) {
    // AKS labels and taints every spot node so.
    node.meta.labels[std::string(kLabelScaleSetPriority)] = "spot";
    AddTaint(node, model::Taint{std::string(kLabelScaleSetPriority), "spot",
                                model::TaintEffect::kNoSchedule});
  }
  node.meta.labels[std::string(model::kLabelPool)] = pool_name;
  if (auto r = ApplyDraDriver(tags, pool); !r) return std::unexpected(where(r.error()));
  return pool;
}

}  // namespace tidepool::cloud::azure
