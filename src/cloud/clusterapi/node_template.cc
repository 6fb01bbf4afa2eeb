#include "cloud/clusterapi/node_template.h"

#include <fmt/format.h>

#include <charconv>

#include "model/pool.h"
#include "model/quantity.h"
#include "model/selector.h"

namespace tidepool::cloud::clusterapi {

using nlohmann::json;

namespace {

constexpr int64_t kDefaultMaxPods = 110;

std::string Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string item = Trim(text.substr(start, comma - start));
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

const std::string* Annotation(const NodeGroup& g, std::string_view name) {
  auto it = g.annotations.find(fmt::format("{}{}", kCapacityPrefix, name));
  return it == g.annotations.end() ? nullptr : &it->second;
}

// "k=v,k2=v2" into `labels`.
Result<void> ReadLabels(const NodeGroup& g, model::Labels& labels) {
  const std::string* text = Annotation(g, "labels");
  if (text == nullptr) return {};
  for (const std::string& item : SplitList(*text)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument(
          "{}: annotation {}labels: \"{}\" is not key=value (expected "
          "\"key=value,key2=value2\")",
          g.Describe(), kCapacityPrefix, item);
    }
    labels[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return {};
}

// "k=v:Effect,k2:Effect" into `taints`.
Result<void> ReadTaints(const NodeGroup& g, std::vector<model::Taint>& taints) {
  const std::string* text = Annotation(g, "taints");
  if (text == nullptr) return {};
  for (const std::string& item : SplitList(*text)) {
    size_t colon = item.rfind(':');
    std::optional<model::TaintEffect> effect;
    if (colon != std::string::npos) effect = model::ParseTaintEffect(item.substr(colon + 1));
    if (!effect || colon == 0) {
      return InvalidArgument(
          "{}: annotation {}taints: \"{}\" (expected \"key=value:Effect\", Effect one of "
          "NoSchedule, PreferNoSchedule, NoExecute)",
          g.Describe(), kCapacityPrefix, item);
    }
    std::string kv = item.substr(0, colon);
    size_t eq = kv.find('=');
    model::Taint t;
    t.key = kv.substr(0, eq);
    if (eq != std::string::npos) t.value = kv.substr(eq + 1);
    t.effect = *effect;
    taints.push_back(std::move(t));
  }
  return {};
}

// One resource annotation into `node.capacity` (overriding the infrastructure's value).
Result<void> ReadQuantity(const NodeGroup& g, std::string_view annotation,
                          std::string_view resource, model::Node& node) {
  const std::string* text = Annotation(g, annotation);
  if (text == nullptr) return {};
  auto q = model::Quantity::Parse(*text);
  if (!q || q->Sign() < 0) {
    return InvalidArgument(
        "{}: annotation {}{}: \"{}\" (expected a quantity such as \"8\", "
        "\"64Gi\" or \"500m\")",
        g.Describe(), kCapacityPrefix, annotation, *text);
  }
  node.capacity.SetQuantity(model::InternResource(resource), *q);
  return {};
}

Result<void> ReadGpus(const NodeGroup& g, model::Node& node) {
  const std::string* count = Annotation(g, "gpu-count");
  if (count == nullptr) return {};
  const std::string* type = Annotation(g, "gpu-type");
  std::string resource =
      type != nullptr && !type->empty() ? *type : std::string(kDefaultGpuResource);
  int64_t n = -1;
  auto [end, ec] = std::from_chars(count->data(), count->data() + count->size(), n);
  if (ec != std::errc() || end != count->data() + count->size() || n < 0) {
    return InvalidArgument("{}: annotation {}gpu-count: \"{}\" (expected a non-negative integer)",
                           g.Describe(), kCapacityPrefix, *count);
  }
  node.capacity.Set(model::InternResource(resource), n);
  return {};
}

}  // namespace

Result<std::optional<InfraStatus>> ParseInfraStatus(const json& tmpl) {
  const std::string where =
      fmt::format("{} {}/{}", tmpl.value("kind", "InfraMachineTemplate"),
                  tmpl.contains("metadata") ? tmpl["metadata"].value("namespace", "") : "",
                  tmpl.contains("metadata") ? tmpl["metadata"].value("name", "") : "");
  auto status = tmpl.find("status");
  if (status == tmpl.end() || !status->is_object()) return std::optional<InfraStatus>();
  InfraStatus s;
  if (auto cap = status->find("capacity"); cap != status->end() && cap->is_object()) {
    for (const auto& [name, value] : cap->items()) {
      std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      auto q = model::Quantity::Parse(text);
      if (!q) {
        return InvalidArgument("{}: status.capacity.{}: \"{}\" (expected a quantity)", where, name,
                               text);
      }
      model::ResourceId id = model::InternResource(name);
      s.capacity.SetQuantity(id, *q);
      s.set.push_back(id);
    }
  }
  if (auto info = status->find("nodeInfo"); info != status->end() && info->is_object()) {
    s.architecture = info->value("architecture", "");
    s.operating_system = info->value("operatingSystem", "");
  }
  if (s.set.empty() && s.architecture.empty() && s.operating_system.empty()) {
    return std::optional<InfraStatus>();
  }
  return std::optional<InfraStatus>(std::move(s));
}

Result<model::Node> TemplateNode(const NodeGroup& group, const InfraStatus* infra,
                                 const std::string& pool) {
  model::Node node;
  node.meta.name = "template-" + pool;
  node.ready = true;
  if (infra != nullptr) {
    node.capacity = infra->capacity;
    if (!infra->architecture.empty()) node.meta.labels["kubernetes.io/arch"] = infra->architecture;
    if (!infra->operating_system.empty()) {
      node.meta.labels["kubernetes.io/os"] = infra->operating_system;
    }
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadQuantity(group, "cpu", "cpu", node));
  TIDEPOOL_RETURN_IF_ERROR(ReadQuantity(group, "memory", "memory", node));
  TIDEPOOL_RETURN_IF_ERROR(ReadQuantity(group, "ephemeral-disk", "ephemeral-storage", node));
  TIDEPOOL_RETURN_IF_ERROR(ReadQuantity(group, "maxPods", "pods", node));
  TIDEPOOL_RETURN_IF_ERROR(ReadGpus(group, node));
  TIDEPOOL_RETURN_IF_ERROR(ReadLabels(group, node.meta.labels));
  TIDEPOOL_RETURN_IF_ERROR(ReadTaints(group, node.taints));
  if (node.capacity.cpu_milli() <= 0 || node.capacity.memory() <= 0) {
    return InvalidArgument(
        "{}: no cpu or memory known for a new node (expected the annotations {}cpu and "
        "{}memory, or an infrastructure template that publishes status.capacity)",
        group.Describe(), kCapacityPrefix, kCapacityPrefix);
  }
  if (node.capacity.pods() <= 0) node.capacity.Set(model::kPods, kDefaultMaxPods);
  node.meta.labels[std::string(model::kLabelPool)] = pool;
  node.allocatable = node.capacity;
  return node;
}

}  // namespace tidepool::cloud::clusterapi
