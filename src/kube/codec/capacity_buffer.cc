#include "kube/codec/capacity_buffer.h"

#include <nlohmann/json.hpp>

#include "kube/codec/conditions.h"
#include "kube/codec/decode_common.h"

namespace tidepool::kube::codec {
namespace {

using decode_detail::DecodeMeta;
using decode_detail::DecodeObject;
using decode_detail::DecodePodObject;
using decode_detail::ForEachItem;

Result<void> ReadName(const Json& obj, std::string_view key, const FieldPath& path,
                      std::string_view what, std::string& out) {
  TIDEPOOL_RETURN_IF_ERROR(ReadString(obj, key, path, out));
  if (out.empty()) return std::unexpected(TypeError(path.Key(key), what, Find(obj, key)));
  return {};
}

Result<void> ReadNonNegative(const Json& obj, std::string_view key, const FieldPath& path,
                             std::optional<int32_t>& out) {
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(obj, key, path, out));
  if (out && *out < 0) {
    return std::unexpected(TypeError(path.Key(key), "an integer of at least 0", Find(obj, key)));
  }
  return {};
}

Result<void> DecodeLimits(const Json& spec, const FieldPath& path, model::CapacityBuffer& b) {
  const Json* limits = Find(spec, "limits");
  if (limits == nullptr) return {};
  if (!limits->is_object()) {
    return std::unexpected(TypeError(path.Key("limits"), "a map of resource quantities", limits));
  }
  model::Resources amounts;
  TIDEPOOL_RETURN_IF_ERROR(ReadResourceList(spec, "limits", path, amounts));
  for (const auto& [name, value] : limits->items()) {
    b.limited.push_back(model::InternResource(name));
  }
  b.limits = std::move(amounts);
  return {};
}

Result<void> DecodeSpec(const Json& spec, const FieldPath& path, model::CapacityBuffer& b) {
  TIDEPOOL_RETURN_IF_ERROR(ReadString(spec, "provisioningStrategy", path, b.strategy));
  if (const Json* ref = Find(spec, "podTemplateRef"); ref != nullptr) {
    TIDEPOOL_ASSIGN_OR_RETURN(const Json* r, ReadObject(spec, "podTemplateRef", path));
    TIDEPOOL_RETURN_IF_ERROR(ReadName(*r, "name", path.Key("podTemplateRef"),
                                      "the name of a PodTemplate", b.pod_template));
  }
  if (const Json* ref = Find(spec, "scalableRef"); ref != nullptr) {
    TIDEPOOL_ASSIGN_OR_RETURN(const Json* r, ReadObject(spec, "scalableRef", path));
    FieldPath p = path.Key("scalableRef");
    model::ScalableRef& s = b.scalable_ref.emplace();
    TIDEPOOL_RETURN_IF_ERROR(ReadString(*r, "apiGroup", p, s.api_group));
    TIDEPOOL_RETURN_IF_ERROR(ReadName(*r, "kind", p, "a kind, e.g. \"Deployment\"", s.kind));
    TIDEPOOL_RETURN_IF_ERROR(ReadName(*r, "name", p, "the name of the object", s.name));
  }
  if (!b.pod_template.empty() && b.scalable_ref) {
    return std::unexpected(FieldError(path,
                                      "podTemplateRef and scalableRef are both set; "
                                      "expected one of them"));
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadNonNegative(spec, "replicas", path, b.replicas));
  TIDEPOOL_RETURN_IF_ERROR(ReadNonNegative(spec, "percentage", path, b.percentage));
  TIDEPOOL_RETURN_IF_ERROR(DecodeLimits(spec, path, b));
  if (!b.pod_template.empty() && !b.replicas && !b.limits) {
    return std::unexpected(
        FieldError(path, "podTemplateRef is set without replicas or limits; expected either"));
  }
  return {};
}

Result<void> DecodeStatus(const Json& obj, const FieldPath& root, model::BufferStatus& s) {
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* status, ReadObject(obj, "status", root));
  FieldPath path = root.Key("status");
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* ref, ReadObject(*status, "podTemplateRef", path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*ref, "name", path.Key("podTemplateRef"), s.pod_template));
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(*status, "replicas", path, s.replicas));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadInt64(*status, "podTemplateGeneration", path, s.pod_template_generation));
  return ForEachItem(*status, "conditions", path, [&](const Json& c, const FieldPath& p) {
    return decode_detail::DecodeCondition(c, p, model::BufferConditionFrom, s.conditions);
  });
}

// Sets or removes obj[key]; true when that changed obj.
bool SetMember(Json& obj, const char* key, const Json* value) {
  if (value == nullptr) return obj.erase(key) > 0;
  if (obj.contains(key) && obj[key] == *value) return false;
  obj[key] = *value;
  return true;
}

}  // namespace

Result<model::CapacityBuffer> DecodeCapacityBuffer(const nlohmann::json& obj) {
  return DecodeObject<model::CapacityBuffer>(
      "CapacityBuffer", obj, [&](model::CapacityBuffer& b) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, b.meta));
        const Json* spec = Find(obj, "spec");
        if (spec == nullptr) {
          return std::unexpected(TypeError(root.Key("spec"), "the buffer's spec", spec));
        }
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* s, ReadObject(obj, "spec", root));
        TIDEPOOL_RETURN_IF_ERROR(DecodeSpec(*s, root.Key("spec"), b));
        return DecodeStatus(obj, root, b.status);
      });
}

Result<model::Deployment> DecodeDeployment(const nlohmann::json& obj) {
  return DecodeObject<model::Deployment>(
      "Deployment", obj, [&](model::Deployment& d) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, d.meta));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
        FieldPath spec_path = root.Key("spec");
        TIDEPOOL_RETURN_IF_ERROR(ReadInt32(*spec, "replicas", spec_path, d.replicas));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* tmpl, ReadObject(*spec, "template", spec_path));
        d.pod.meta.name = d.meta.name;
        TIDEPOOL_RETURN_IF_ERROR(DecodePodObject(*tmpl, spec_path.Key("template"), d.pod));
        d.pod.meta.namespace_ = d.meta.namespace_;
        d.pod.Finalize();
        return {};
      });
}

Result<model::Deployment> DecodeDeploymentOrInvalid(const nlohmann::json& obj) {
  return decode_detail::KeepInvalid(DecodeDeployment(obj), obj);
}

bool ApplyBufferStatus(nlohmann::json& obj, const model::BufferStatus& s, Time now) {
  Json& status = obj["status"];
  if (!status.is_object()) status = Json::object();
  bool changed = false;
  const Json ref = {{"name", s.pod_template}};
  changed = SetMember(status, "podTemplateRef", s.pod_template.empty() ? nullptr : &ref) || changed;
  const Json replicas = s.replicas ? Json(*s.replicas) : Json();
  changed = SetMember(status, "replicas", s.replicas ? &replicas : nullptr) || changed;
  const Json generation_of_template =
      s.pod_template_generation ? Json(*s.pod_template_generation) : Json();
  changed = SetMember(status, "podTemplateGeneration",
                      s.pod_template_generation ? &generation_of_template : nullptr) ||
            changed;
  const Json generation = obj["metadata"].value("generation", Json(0));
  for (const model::BufferCondition& c : s.conditions) {
    changed = decode_detail::SetCondition(status["conditions"], model::BufferConditionName(c.type),
                                          {.status = c.status,
                                           .reason = c.reason,
                                           .message = c.message,
                                           .last_transition = c.last_transition},
                                          generation, now) ||
              changed;
  }
  return changed;
}

}  // namespace tidepool::kube::codec
