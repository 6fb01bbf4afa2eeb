#include "kube/codec/provisioning.h"

#include <nlohmann/json.hpp>

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

constexpr EnumName<model::ConditionStatus> kStatusNames[] = {
    {"True", model::ConditionStatus::kTrue},
    {"False", model::ConditionStatus::kFalse},
    {"Unknown", model::ConditionStatus::kUnknown},
};

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

Result<void> DecodeCondition(const Json& item, const FieldPath& path,
                             model::ProvisioningRequest& pr) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(item, path));
  std::string type;
  TIDEPOOL_RETURN_IF_ERROR(ReadString(item, "type", path, type));
  std::optional<model::ProvisioningCondition> known = model::ProvisioningConditionFrom(type);
  if (!known) return {};  // another controller's condition
  model::Condition c;
  c.type = *known;
  TIDEPOOL_RETURN_IF_ERROR(ReadEnum(item, "status", path, kStatusNames, c.status));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(item, "reason", path, c.reason));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(item, "message", path, c.message));
  TIDEPOOL_RETURN_IF_ERROR(ReadTime(item, "lastTransitionTime", path, c.last_transition));
  pr.conditions.push_back(std::move(c));
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
        return ForEachItem(
            *status, "conditions", status_path,
            [&](const Json& c, const FieldPath& p) { return DecodeCondition(c, p, pr); });
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
  auto pt = DecodePodTemplate(obj);
  if (pt || !decode_detail::HasName(obj)) return pt;
  model::PodTemplate invalid;
  const Json& md = *Find(obj, "metadata");
  invalid.meta.name = md["name"].get<std::string>();
  if (const Json* ns = Find(md, "namespace"); ns != nullptr && ns->is_string()) {
    invalid.meta.namespace_ = ns->get<std::string>();
  }
  invalid.error = pt.error().message();
  return invalid;
}

bool ApplyCondition(nlohmann::json& obj, const model::Condition& c, Time now) {
  Json& conditions = obj["status"]["conditions"];
  if (!conditions.is_array()) conditions = Json::array();
  const std::string type(model::ProvisioningConditionName(c.type));
  const std::string status(model::ConditionStatusName(c.status));
  Json* found = nullptr;
  for (Json& existing : conditions)
    if (existing.is_object() && existing.value("type", "") == type) found = &existing;
  Json generation = obj["metadata"].value("generation", Json(0));
  if (found == nullptr) {
    found = &conditions.emplace_back(Json::object());
    (*found)["type"] = type;
  } else if (found->value("status", "") == status && found->value("reason", "") == c.reason &&
             found->value("message", "") == c.message &&
             found->value("observedGeneration", Json(0)) == generation) {
    return false;
  }
  if (found->value("status", "") != status) {
    // metav1.Time has second precision.
    (*found)["lastTransitionTime"] =
        FormatRfc3339(std::chrono::floor<std::chrono::seconds>(c.last_transition.value_or(now)));
  }
  (*found)["status"] = status;
  (*found)["reason"] = c.reason;
  (*found)["message"] = c.message;
  (*found)["observedGeneration"] = generation;
  return true;
}

}  // namespace tidepool::kube::codec
