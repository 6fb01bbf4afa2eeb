// CapacityBuffer (autoscaling.x-k8s.io/v1beta1) and apps/v1 Deployment from JSON, and the status
// tidepool writes back on a buffer (through its status subresource).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "base/error.h"
#include "base/time.h"
#include "model/capacity_buffer.h"

namespace tidepool::kube::codec {

// Errors name the object and the field path as DecodePod's do, for what the CRD's schema
// refuses: a spec that is missing or names both podTemplateRef and scalableRef, a podTemplateRef
// without replicas or limits, a reference without its name (or a scalableRef without its kind),
// negative replicas or percentage, a malformed limits quantity. Status conditions of types
// tidepool does not write are skipped.
Result<model::CapacityBuffer> DecodeCapacityBuffer(const nlohmann::json& obj);
// spec.replicas (default 1) and spec.template, decoded as a pod in the Deployment's namespace.
Result<model::Deployment> DecodeDeployment(const nlohmann::json& obj);
// For a cache: a named Deployment whose template does not decode is kept with `error` set, so a
// buffer naming it can say what is wrong; only an object without namespace and name is an error.
Result<model::Deployment> DecodeDeploymentOrInvalid(const nlohmann::json& obj);

// Sets `status` in obj.status (a CapacityBuffer as JSON): podTemplateRef, replicas and
// podTemplateGeneration as given (removed when unset), each condition as the apimachinery helper
// does (lastTransitionTime moves to `now` only when its status changes; observedGeneration is
// metadata.generation). Conditions of other types are left as they are. Returns false when the
// status was already exactly so (nothing to write).
bool ApplyBufferStatus(nlohmann::json& obj, const model::BufferStatus& status, Time now);

}  // namespace tidepool::kube::codec
