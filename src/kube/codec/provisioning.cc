#include "kube/codec/provisioning.h"

#include <nlohmann/json.hpp>

#include "kube/codec/conditions.h"
#include "kube/codec/decode_common.h"

namespace tidepool::kube::codec {
namespace {

using decode_detail::DecodeMeta;
using decode_detail::DecodeObject;
using decode_detail::DecodePodObject;
using decode_detail::ExpectObject;
using decode_detail::ForEachItem;

// The API server's limit on spec.podSets.
constexpr size_t kMaxPodSets = 32;

Result<void> DecodePodSet(const Json& item, const FieldPath& path, model::PodSet& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(item, path));
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* ref, ReadObject(item, "podTemplateRef", path));
  FieldPath ref_path = path.Key("podTemplateRef");
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*ref, "name", ref_path, out.template_name));
  if (out.template_name.empty()) {
    return std::unexpected(
        TypeError(ref_path.Key("name"), "the name of a PodTemplate", Find(*ref, "name")));
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(item, "count", path, out.count));
  if (out.count < 1) {
    return std::unexpected(
        TypeError(path.Key("count"), "an integer of at least 1", Find(item, "count")));
  }
  return {};
}

Result<void> DecodeSpec(const Json& spec, const FieldPath& path, model::ProvisioningRequest& pr) {
  TIDEPOOL_RETURN_IF_ERROR(ReadString(spec, "provisioningClassName", path, pr.class_name));
  if (pr.class_name.empty()) {
    return std::unexpected(TypeError(path.Key("provisioningClassName"), "a class name",
                                     Find(spec, "provisioningClassName")));
  }
  pr.provisioning_class = model::ProvisioningClassOf(pr.class_name);
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* sets, ReadArray(spec, "podSets", path));
  if (sets->empty() || sets->size() > kMaxPodSets) {
    return std::unexpected(
        TypeError(path.Key("podSets"), "a list of 1 to 32 pod sets", Find(spec, "podSets")));
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "podSets", path, [&](const Json& item, const FieldPath& p) {
        return DecodePodSet(item, p, pr.pod_sets.emplace_back());
      }));
  model::Labels parameters;
  TIDEPOOL_RETURN_IF_ERROR(ReadStringMap(spec, "parameters", path, parameters));
  pr.parameters.insert(parameters.begin(), parameters.end());
  return {};
}

}  // namespace

Result<model::ProvisioningRequest> DecodeProvisioningRequest(const nlohmann::json& obj) {
  return DecodeObject<model::ProvisioningRequest>(
      "ProvisioningRequest", obj, [&](model::ProvisioningRequest& pr) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, pr.meta));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
        TIDEPOOL_RETURN_IF_ERROR(DecodeSpec(*spec, root.Key("spec"), pr));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* status, ReadObject(obj, "status", root));
        FieldPath status_path = root.Key("status");
        return ForEachItem(*status, "conditions", status_path,
                           [&](const Json& c, const FieldPath& p) {
                             return decode_detail::DecodeCondition(
                                 c, p, model::ProvisioningConditionFrom, pr.conditions);
                           });
      });
}

Result<model::PodTemplate> DecodePodTemplate(const nlohmann::json& obj) {
  return DecodeObject<model::PodTemplate>(
      "PodTemplate", obj, [&](model::PodTemplate& pt) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, pt.meta));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* tmpl, ReadObject(obj, "template", root));
        pt.pod.meta.name = pt.meta.name;
        TIDEPOOL_RETURN_IF_ERROR(DecodePodObject(*tmpl, root.Key("template"), pt.pod));
        pt.pod.meta.namespace_ = pt.meta.namespace_;
        pt.pod.Finalize();
        return {};
      });
}

Result<model::PodTemplate> DecodePodTemplateOrInvalid(const nlohmann::json& obj) {
  return decode_detail::KeepInvalid(DecodePodTemplate(obj), obj);
}

bool ApplyCondition(nlohmann::json& obj, const model::Condition& c, Time now) {
  return decode_detail::SetCondition(obj["status"]["conditions"],
                                     model::ProvisioningConditionName(c.type),
                                     {.status = c.status,
                                      .reason = c.reason,
                                      .message = c.message,
                                      .last_transition = c.last_transition},
                                     obj["metadata"].value("generation", Json(0)), now);
}

}  // namespace tidepool::kube::codec
