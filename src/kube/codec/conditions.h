// metav1.Condition as the status writers and decoders share it (ProvisioningRequests,
// CapacityBuffers): one status.conditions[] item read, one set as apimachinery's helper does.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "kube/codec/decode_common.h"
#include "model/provisioning_request.h"

namespace tidepool::kube::codec::decode_detail {

// The fields of one condition but its type (read by the caller): status (True, False or
// Unknown; anything else is an error naming the field), reason, message, lastTransitionTime.
struct ConditionFields {
  model::ConditionStatus status = model::ConditionStatus::kUnknown;
  std::string reason;
  std::string message;
  std::optional<Time> last_transition;
};
Result<void> DecodeConditionFields(const Json& item, const FieldPath& path, ConditionFields& out);

// One status.conditions[] item appended to `out` as a C (a struct of type, status, reason,
// message, last_transition) when `type_from` knows its type; another controller's condition
// (type_from returns nullopt) is skipped.
template <typename C, typename TypeFrom>
Result<void> DecodeCondition(const Json& item, const FieldPath& path, TypeFrom&& type_from,
                             std::vector<C>& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(item, path));
  std::string type;
  TIDEPOOL_RETURN_IF_ERROR(ReadString(item, "type", path, type));
  auto known = type_from(type);
  if (!known) return {};
  ConditionFields f;
  TIDEPOOL_RETURN_IF_ERROR(DecodeConditionFields(item, path, f));
  out.push_back({.type = *known,
                 .status = f.status,
                 .reason = std::move(f.reason),
                 .message = std::move(f.message),
                 .last_transition = f.last_transition});
  return {};
}

// Sets the condition `type` in `conditions` (a JSON array of an object's status), as
// apimachinery's SetStatusCondition does: lastTransitionTime moves to `c.last_transition` (else
// `now`, second precision) only when the status changes, observedGeneration is `generation`.
// Returns false when the condition was already exactly so.
bool SetCondition(Json& conditions, std::string_view type, const ConditionFields& c,
                  const Json& generation, Time now);

// For a cache that keeps what it cannot decode: `decoded` as it is when it succeeded or `obj`
// has no name; else a T with the object's name and namespace and `error` set to why.
template <typename T>
Result<T> KeepInvalid(Result<T> decoded, const Json& obj) {
  if (decoded || !HasName(obj)) return decoded;
  T invalid;
  const Json& md = *Find(obj, "metadata");
  invalid.meta.name = md["name"].template get<std::string>();
  if (const Json* ns = Find(md, "namespace"); ns != nullptr && ns->is_string()) {
    invalid.meta.namespace_ = ns->template get<std::string>();
  }
  invalid.error = decoded.error().message();
  return invalid;
}

}  // namespace tidepool::kube::codec::decode_detail
