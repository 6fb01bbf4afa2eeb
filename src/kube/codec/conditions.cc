#include "kube/codec/conditions.h"

namespace tidepool::kube::codec::decode_detail {
namespace {

constexpr EnumName<model::ConditionStatus> kStatusNames[] = {
    {"True", model::ConditionStatus::kTrue},
    {"False", model::ConditionStatus::kFalse},
    {"Unknown", model::ConditionStatus::kUnknown},
};

}  // namespace

Result<void> DecodeConditionFields(const Json& item, const FieldPath& path, ConditionFields& out) {
  TIDEPOOL_RETURN_IF_ERROR(ReadEnum(item, "status", path, kStatusNames, out.status));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(item, "reason", path, out.reason));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(item, "message", path, out.message));
  return ReadTime(item, "lastTransitionTime", path, out.last_transition);
}

bool SetCondition(Json& conditions, std::string_view type, const ConditionFields& c,
                  const Json& generation, Time now) {
  if (!conditions.is_array()) conditions = Json::array();
  const std::string status(model::ConditionStatusName(c.status));
  Json* found = nullptr;
  for (Json& existing : conditions)
    if (existing.is_object() && existing.value("type", "") == type) found = &existing;
  if (found == nullptr) {
    found = &conditions.emplace_back(Json::object());
    (*found)["type"] = type;
  } else if (found->value("status", "") == status && found->value("reason", "") == c.reason &&
             found->value("message", "") == c.message &&
             found->value("observedGeneration", Json(0)) == generation) {
    return false;
  }
  if (found->value("status", "") != status || !found->contains("lastTransitionTime")) {
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

}  // namespace tidepool::kube::codec::decode_detail
