#include "kube/codec/encode.h"

#include "model/quantity.h"

namespace tidepool::kube::codec {

using nlohmann::json;

json EncodeResources(const model::Resources& resources) {
  json out = json::object();
  resources.ForEach([&](model::ResourceId id, int64_t amount) {
    model::Quantity q = id == model::kCpu
                            ? model::Quantity::FromMilli(amount)
                            : model::Quantity::FromUnits(
                                  amount, id == model::kMemory || id == model::kEphemeralStorage
                                              ? model::Quantity::Format::kBinarySI
                                              : model::Quantity::Format::kDecimalSI);
    out[std::string(model::ResourceName(id))] = q.ToString();
  });
  return out;
}

json EncodeTaints(const std::vector<model::Taint>& taints) {
  json out = json::array();
  for (const auto& t : taints) {
    json j = {{"key", t.key}, {"effect", std::string(model::TaintEffectName(t.effect))}};
    if (!t.value.empty()) j["value"] = t.value;
    out.push_back(std::move(j));
  }
  return out;
}

json EncodeNode(const model::Node& node) {
  json meta = {{"name", node.meta.name}};
  if (!node.meta.labels.empty()) meta["labels"] = node.meta.labels;
  if (!node.meta.annotations.empty()) meta["annotations"] = node.meta.annotations;
  json spec = json::object();
  if (!node.provider_id.empty()) spec["providerID"] = node.provider_id;
  if (!node.taints.empty()) spec["taints"] = EncodeTaints(node.taints);
  if (node.unschedulable) spec["unschedulable"] = true;
  json status = {{"capacity", EncodeResources(node.capacity)},
                 {"allocatable", EncodeResources(node.allocatable)}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", std::move(meta)},
          {"spec", std::move(spec)},
          {"status", std::move(status)}};
}

namespace {

json EncodeAttribute(const model::DeviceAttribute& a) {
  switch (a.kind) {
    case model::DeviceAttribute::Kind::kInt:
      return {{"int", a.int_value}};
    case model::DeviceAttribute::Kind::kBool:
      return {{"bool", a.bool_value}};
    case model::DeviceAttribute::Kind::kString:
      return {{"string", a.text}};
    case model::DeviceAttribute::Kind::kVersion:
      return {{"version", a.text}};
  }
  return json::object();
}

json EncodeCounters(const model::Counters& counters) {
  json out = json::object();
  for (const auto& [name, q] : counters) out[name] = {{"value", q.ToString()}};
  return out;
}

}  // namespace

json EncodeResourceSlice(const model::ResourceSlice& slice) {
  json meta = {{"name", slice.meta.name}};
  if (!slice.meta.owner_references.empty()) {
    json refs = json::array();
    for (const auto& o : slice.meta.owner_references) {
      refs.push_back({{"apiVersion", o.api_version},
                      {"kind", o.kind},
                      {"name", o.name},
                      {"uid", o.uid},
                      {"controller", o.controller}});
    }
    meta["ownerReferences"] = std::move(refs);
  }
  json devices = json::array();
  for (const auto& d : slice.devices) {
    json dev = {{"name", d.name}};
    if (!d.attributes.empty()) {
      json attrs = json::object();
      for (const auto& [name, a] : d.attributes) attrs[name] = EncodeAttribute(a);
      dev["attributes"] = std::move(attrs);
    }
    if (!d.capacity.empty()) dev["capacity"] = EncodeCounters(d.capacity);
    if (!d.consumes_counters.empty()) {
      json uses = json::array();
      for (const auto& c : d.consumes_counters) {
        uses.push_back({{"counterSet", c.counter_set}, {"counters", EncodeCounters(c.counters)}});
      }
      dev["consumesCounters"] = std::move(uses);
    }
    devices.push_back(std::move(dev));
  }
  json spec = {{"driver", slice.driver},
               {"pool", {{"name", slice.pool}, {"generation", 1}, {"resourceSliceCount", 1}}},
               {"devices", std::move(devices)}};
  if (!slice.node_name.empty()) {
    spec["nodeName"] = slice.node_name;
  } else {
    spec["allNodes"] = true;
  }
  if (!slice.shared_counters.empty()) {
    json sets = json::array();
    for (const auto& s : slice.shared_counters) {
      sets.push_back({{"name", s.name}, {"counters", EncodeCounters(s.counters)}});
    }
    spec["sharedCounters"] = std::move(sets);
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", std::move(meta)},
          {"spec", std::move(spec)}};
}

}  // namespace tidepool::kube::codec
