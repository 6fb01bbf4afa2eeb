// ProvisioningRequest (autoscaling.x-k8s.io/v1) and PodTemplate (v1) from JSON, and the status
// conditions tidepool writes back on a request (through its status subresource).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "base/error.h"
#include "base/time.h"
#include "model/provisioning_request.h"

namespace tidepool::kube::codec {

// Errors name the object and the field path as DecodePod's do. Required, as the CRD's schema
// requires them: spec.provisioningClassName, spec.podSets (1 to 32 entries), each with
// podTemplateRef.name and a count of at least 1. spec.parameters are strings. Conditions of
// types tidepool does not know are skipped; a known one with a status other than True, False or
// Unknown is an error.
Result<model::ProvisioningRequest> DecodeProvisioningRequest(const nlohmann::json& obj);
// `template` is decoded as a pod (DecodePod's defaulting) in the PodTemplate's namespace, named
// after the PodTemplate unless it names itself; Finalize()d.
Result<model::PodTemplate> DecodePodTemplate(const nlohmann::json& obj);
// For a cache: a named PodTemplate that does not decode is kept with `error` set, so a request
// naming it can say what is wrong; only an object without namespace and name is an error.
Result<model::PodTemplate> DecodePodTemplateOrInvalid(const nlohmann::json& obj);

// Sets condition `c` in obj.status.conditions (a ProvisioningRequest as JSON), as the
// apimachinery helper does: lastTransitionTime moves to `now` only when the status changes,
// observedGeneration is metadata.generation. Returns false when the condition was already
// exactly so (nothing to write). Other conditions are left as they are.
bool ApplyCondition(nlohmann::json& obj, const model::Condition& c, Time now);

}  // namespace tidepool::kube::codec
