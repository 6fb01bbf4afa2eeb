// CapacityBuffer (autoscaling.x-k8s.io/v1beta1): spare capacity asked for as a number of copies of
// a pod, and the apps/v1 Deployments a buffer may take its pod and size from
// (docs/capacity-buffers.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "model/meta.h"
#include "model/pod.h"
#include "model/provisioning_request.h"
#include "model/resources.h"

namespace tidepool::model {

// spec.provisioningStrategy that tidepool serves (the API's default); buffers of any other
// strategy are another controller's and are left alone.
inline constexpr std::string_view kActiveCapacityStrategy = "buffer.x-k8s.io/active-capacity";

// spec.scalableRef: an object with a scale subresource in the buffer's namespace.
struct ScalableRef {
  std::string api_group;  // "" for the core group
  std::string kind;
  std::string name;
};

// The condition types of a buffer's status that tidepool writes.
enum class BufferConditionType {
  kReadyForProvisioning,  // the pod and the number of copies are resolved
  kProvisioning,          // the copies have room (or a scale-up is making it)
};
std::string_view BufferConditionName(BufferConditionType type);
std::optional<BufferConditionType> BufferConditionFrom(std::string_view name);

struct BufferCondition {
  BufferConditionType type = BufferConditionType::kReadyForProvisioning;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::string reason;  // CamelCase, as metav1.Condition requires
  std::string message;
  std::optional<Time> last_transition;
  friend bool operator==(const BufferCondition& a, const BufferCondition& b) {
    return a.type == b.type && a.status == b.status && a.reason == b.reason &&
           a.message == b.message;  // the transition time is the API server's business
  }
};

// What tidepool writes in a buffer's status (and reads back to write only what changed).
struct BufferStatus {
  std::string pod_template;  // status.podTemplateRef.name; "" when none (e.g. a scalableRef)
  std::optional<int32_t> replicas;
  std::optional<int64_t> pod_template_generation;
  std::vector<BufferCondition> conditions;  // of the types above, in status order
  const BufferCondition* Find(BufferConditionType type) const;
  friend bool operator==(const BufferStatus&, const BufferStatus&) = default;
};

struct CapacityBuffer {
  ObjectMeta meta;  // meta.generation is metadata.generation
  std::string strategy = std::string(kActiveCapacityStrategy);
  std::string pod_template;  // spec.podTemplateRef.name; "" when not set
  std::optional<ScalableRef> scalable_ref;
  std::optional<int32_t> replicas;
  std::optional<int32_t> percentage;
  std::optional<Resources> limits;  // spec.limits (a ResourceList); nullopt when not set
  std::vector<ResourceId> limited;  // the resources spec.limits names, also those set to 0
  BufferStatus status;

  std::string Key() const { return meta.Key(); }
  bool Served() const { return strategy == kActiveCapacityStrategy; }
};

// An apps/v1 Deployment as a buffer's scalableRef reads it: its replicas and its pod template.
struct Deployment {
  ObjectMeta meta;
  int32_t replicas = 1;  // spec.replicas (the API's default 1)
  Pod pod;               // spec.template, finalized, in the Deployment's namespace
  // Non-empty for a Deployment whose template did not decode: what is wrong with it.
  std::string error;
};

// How many copies a buffer asks for, from what the copy requests and, for a scalableRef, the
// scalable's replicas (nullopt for a podTemplateRef).
struct BufferReplicas {
  int32_t replicas = 0;
  bool capped_by_limits = false;  // spec.limits lowered (or alone set) the number
  std::string words;              // how it was found, e.g. "replicas 4, capped to 2 by limits"
};
// The API's rules: `percentage` of the scalable's replicas, rounded up, at least 1 when both are
// positive; with `replicas` too, the smaller of the two; `limits` caps the number at the copies
// whose total request fits within every limited resource the pod requests (a limit on a
// resource the pod does not request caps nothing); with neither replicas nor percentage, as many
// copies as the limits allow (none without limits). Error (kInvalidArgument): `percentage` on a
// buffer without a scalableRef.
Result<BufferReplicas> ResolveBufferReplicas(const CapacityBuffer& buffer, const Resources& request,
                                             std::optional<int32_t> scalable_replicas);

}  // namespace tidepool::model
