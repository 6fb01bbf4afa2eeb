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

}  // namespace tidepool::kube::codec
