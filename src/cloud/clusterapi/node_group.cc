#include "cloud/clusterapi/node_group.h"

#include <fmt/format.h>

#include <charconv>

#include "cloud/json_fields.h"

namespace tidepool::cloud::clusterapi {

using nlohmann::json;

namespace {

Result<std::optional<int32_t>> SizeAnnotation(const NodeGroup& g, std::string_view key) {
  auto it = g.annotations.find(std::string(key));
  if (it == g.annotations.end()) return std::optional<int32_t>();
  const std::string& text = it->second;
  int32_t value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return InvalidArgument("{}: annotation {}: \"{}\" (expected a non-negative integer)",
                           g.Describe(), key, text);
  }
  return std::optional<int32_t>(value);
}

bool OwnedByMachineDeployment(const json& obj) {
  for (const json& o : ArrayField(ObjectField(obj, "metadata"), "ownerReferences")) {
    if (o.is_object() && o.value("kind", "") == "MachineDeployment") return true;
  }
  return false;
}

std::optional<InfraRef> ReadInfraRef(const json& obj) {
  const json& ref = ObjectField(
      ObjectField(ObjectField(ObjectField(obj, "spec"), "template"), "spec"), "infrastructureRef");
  if (ref.empty()) return std::nullopt;
  InfraRef r;
  r.kind = ref.value("kind", "");
  r.name = ref.value("name", "");
  r.api_group = ref.value("apiGroup", "");
  r.api_version = ref.value("apiVersion", "");
  if (r.api_group.empty() && !r.api_version.empty()) {
    r.api_group = r.api_version.substr(0, r.api_version.find('/'));
  }
  if (r.kind.empty() || r.name.empty() || r.api_group.empty()) return std::nullopt;
  return r;
}

}  // namespace

std::string_view KindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kMachineDeployment:
      return "MachineDeployment";
    case GroupKind::kMachineSet:
      return "MachineSet";
    case GroupKind::kMachinePool:
      return "MachinePool";
  }
  return "?";
}

std::string_view ResourceName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kMachineDeployment:
      return "machinedeployments";
    case GroupKind::kMachineSet:
      return "machinesets";
    case GroupKind::kMachinePool:
      return "machinepools";
  }
  return "?";
}

std::string NodeGroup::Describe() const {
  return fmt::format("{} {}/{}", KindName(kind), namespace_, name);
}

Result<std::optional<NodeGroup>> ParseNodeGroup(const json& obj, GroupKind kind) {
  NodeGroup g;
  g.kind = kind;
  const json& meta = ObjectField(obj, "metadata");
  const json& spec = ObjectField(obj, "spec");
  g.namespace_ = StringField(meta, "namespace");
  g.name = StringField(meta, "name");
  g.uid = StringField(meta, "uid");
  if (g.name.empty()) {
    return InvalidArgument("a {} without metadata.name (expected a Cluster API object)",
                           KindName(kind));
  }
  for (const auto& [k, v] : ObjectField(meta, "annotations").items()) {
    if (v.is_string()) g.annotations[k] = v.get<std::string>();
  }
  TIDEPOOL_ASSIGN_OR_RETURN(auto min, SizeAnnotation(g, kMinSizeAnnotation));
  TIDEPOOL_ASSIGN_OR_RETURN(auto max, SizeAnnotation(g, kMaxSizeAnnotation));
  if (!min && !max) return std::optional<NodeGroup>();
  if (kind == GroupKind::kMachineSet && OwnedByMachineDeployment(obj)) {
    return std::optional<NodeGroup>();
  }
  if (!min || !max) {
    return InvalidArgument("{}: annotation {} is set but {} is not (expected both)", g.Describe(),
                           min ? kMinSizeAnnotation : kMaxSizeAnnotation,
                           min ? kMaxSizeAnnotation : kMinSizeAnnotation);
  }
  if (*min > *max) {
    return InvalidArgument("{}: min size {} is greater than max size {} (expected min <= max)",
                           g.Describe(), *min, *max);
  }
  g.min = *min;
  g.max = *max;
  if (auto r = spec.find("replicas"); r != spec.end() && r->is_number_integer()) {
    g.replicas = r->get<int32_t>();
  }
  g.cluster_name = StringField(spec, "clusterName");
  g.infrastructure = ReadInfraRef(obj);
  for (const json& id : ArrayField(spec, "providerIDList")) {
    if (id.is_string()) g.provider_ids.push_back(id.get<std::string>());
  }
  return std::optional<NodeGroup>(std::move(g));
}

}  // namespace tidepool::cloud::clusterapi
