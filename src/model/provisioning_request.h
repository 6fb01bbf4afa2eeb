// ProvisioningRequest (autoscaling.x-k8s.io/v1) and PodTemplate (v1): what Kueue and other
// queueing systems ask an autoscaler for, and the pods each request stands for.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/time.h"
#include "model/meta.h"
#include "model/pod.h"

namespace tidepool::model {

// A v1 PodTemplate: the pod a request's pod set is made of (template.spec and its metadata).
struct PodTemplate {
  ObjectMeta meta;
  Pod pod;  // template, finalized; its namespace is the PodTemplate's, its name the template's
  // Non-empty for a PodTemplate that did not decode: what is wrong with it (then `pod` is empty).
  std::string error;
};

// spec.provisioningClassName, as far as tidepool serves it.
enum class ProvisioningClass {
  kCheckCapacity,     // check-capacity.autoscaling.x-k8s.io: is the room there? never scales
  kBestEffortAtomic,  // best-effort-atomic-scale-up.autoscaling.x-k8s.io: all pod sets or none
  kOther,             // any other class: another autoscaler's, left alone
};
inline constexpr std::string_view kCheckCapacityClass = "check-capacity.autoscaling.x-k8s.io";
inline constexpr std::string_view kBestEffortAtomicClass =
    "best-effort-atomic-scale-up.autoscaling.x-k8s.io";
ProvisioningClass ProvisioningClassOf(std::string_view class_name);
// The metrics' `class` label: "check_capacity", "best_effort_atomic", "other".
std::string_view ProvisioningClassLabel(ProvisioningClass c);

// The condition types of a ProvisioningRequest's status that tidepool reads and writes.
enum class ProvisioningCondition {
  kAccepted,
  kProvisioned,
  kFailed,
  kBookingExpired,
  kCapacityRevoked,
};
std::string_view ProvisioningConditionName(ProvisioningCondition type);
std::optional<ProvisioningCondition> ProvisioningConditionFrom(std::string_view name);

enum class ConditionStatus { kTrue, kFalse, kUnknown };
std::string_view ConditionStatusName(ConditionStatus status);

struct Condition {
  ProvisioningCondition type = ProvisioningCondition::kAccepted;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::string reason;
  std::string message;
  std::optional<Time> last_transition;
};

// The metrics' `outcome` label of a condition tidepool writes: "accepted" (Accepted=True),
// "provisioned" (Provisioned=True), "waiting" (Provisioned=False), "failed" (Failed=True),
// "booking_expired" (BookingExpired=True), "other" for anything else.
std::string_view ProvisioningOutcomeLabel(const Condition& c);

// spec.podSets[]: `count` pods made from the PodTemplate `template_name` (same namespace).
struct PodSet {
  std::string template_name;
  int32_t count = 0;
};

// The annotation a pod carries to consume the capacity booked for a request (its name, in the
// pod's namespace).
inline constexpr std::string_view kConsumeProvisioningRequestAnnotation =
    "autoscaling.x-k8s.io/consume-provisioning-request";
// spec.parameters keys tidepool reads.
inline constexpr std::string_view kNoRetryParameter = "noRetry";
inline constexpr std::string_view kValidUntilSecondsParameter = "ValidUntilSeconds";

struct ProvisioningRequest {
  ObjectMeta meta;
  std::string class_name;
  ProvisioningClass provisioning_class = ProvisioningClass::kOther;
  std::vector<PodSet> pod_sets;
  std::map<std::string, std::string, std::less<>> parameters;
  // Conditions of the types above, in status order; others are not kept.
  std::vector<Condition> conditions;

  std::string Key() const { return meta.Key(); }
  const Condition* Find(ProvisioningCondition type) const;
  // Sets `c` in place of the condition of its type (appended when there is none), as the status
  // subresource does (kube/codec ApplyCondition on the JSON): the transition time moves to `now`
  // only when the status changes. For the simulated API server and tests.
  void SetCondition(Condition c, Time now);
  bool Is(ProvisioningCondition type) const {  // the condition is there and True
    const Condition* c = Find(type);
    return c != nullptr && c->status == ConditionStatus::kTrue;
  }
  // The parameter's value, or nullptr.
  const std::string* Parameter(std::string_view key) const {
    auto it = parameters.find(key);
    return it == parameters.end() ? nullptr : &it->second;
  }
};

}  // namespace tidepool::model
