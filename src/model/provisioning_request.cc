#include "model/provisioning_request.h"

#include <algorithm>

namespace tidepool::model {
namespace {

constexpr std::pair<ProvisioningCondition, std::string_view> kConditionNames[] = {
    {ProvisioningCondition::kAccepted, "Accepted"},
    {ProvisioningCondition::kProvisioned, "Provisioned"},
    {ProvisioningCondition::kFailed, "Failed"},
    {ProvisioningCondition::kBookingExpired, "BookingExpired"},
    {ProvisioningCondition::kCapacityRevoked, "CapacityRevoked"},
};

}  // namespace

ProvisioningClass ProvisioningClassOf(std::string_view class_name) {
  if (class_name == kCheckCapacityClass) return ProvisioningClass::kCheckCapacity;
  if (class_name == kBestEffortAtomicClass) return ProvisioningClass::kBestEffortAtomic;
  return ProvisioningClass::kOther;
}

std::string_view ProvisioningClassLabel(ProvisioningClass c) {
  switch (c) {
    case ProvisioningClass::kCheckCapacity:
      return "check_capacity";
    case ProvisioningClass::kBestEffortAtomic:
      return "best_effort_atomic";
    case ProvisioningClass::kOther:
      return "other";
  }
  return "other";
}

std::string_view ProvisioningOutcomeLabel(const Condition& c) {
  const bool yes = c.status == ConditionStatus::kTrue;
  switch (c.type) {
    case ProvisioningCondition::kAccepted:
      return yes ? "accepted" : "other";
    case ProvisioningCondition::kProvisioned:
      return yes ? "provisioned" : "waiting";
    case ProvisioningCondition::kFailed:
      return yes ? "failed" : "other";
    case ProvisioningCondition::kBookingExpired:
      return yes ? "booking_expired" : "other";
    case ProvisioningCondition::kCapacityRevoked:
      return "other";
  }
  return "other";
}

std::string_view ProvisioningConditionName(ProvisioningCondition type) {
  for (const auto& [t, name] : kConditionNames)
    if (t == type) return name;
  return "?";
}

std::optional<ProvisioningCondition> ProvisioningConditionFrom(std::string_view name) {
  for (const auto& [t, n] : kConditionNames)
    if (n == name) return t;
  return std::nullopt;
}

std::string_view ConditionStatusName(ConditionStatus status) {
  switch (status) {
    case ConditionStatus::kTrue:
      return "True";
    case ConditionStatus::kFalse:
      return "False";
    case ConditionStatus::kUnknown:
      return "Unknown";
  }
  return "?";
}

const Condition* ProvisioningRequest::Find(ProvisioningCondition type) const {
  for (const Condition& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

void ProvisioningRequest::SetCondition(Condition c, Time now) {
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [&](const Condition& x) { return x.type == c.type; });
  const bool same_status = it != conditions.end() && it->status == c.status;
  c.last_transition = same_status ? it->last_transition : std::optional(now);
  if (it == conditions.end()) {
    conditions.push_back(std::move(c));
  } else {
    *it = std::move(c);
  }
}

}  // namespace tidepool::model
