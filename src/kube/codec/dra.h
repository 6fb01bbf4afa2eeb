// DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice (resource.k8s.io/v1) from
// JSON, the objects of Dynamic Resource Allocation that scheduling reads (model/dra.h).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "base/error.h"
#include "model/dra.h"

namespace tidepool::kube::codec {

// Errors name the object and the field path as DecodePod's do. What the API server requires is
// required here too: a request has exactly one of `exactly` and `firstAvailable`, an
// `exactly` (and every alternative) names a deviceClassName, allocationMode is ExactCount
// (count >= 1, default 1) or All, a selector has cel.expression, a device attribute has exactly
// one of int, bool, string and version, a slice names its driver and pool and has exactly one of
// nodeName, nodeSelector and allNodes. Attribute and capacity names without a domain get the
// driver's (model::QualifiedName). CEL expressions are kept as text; sched/cel compiles them.
Result<model::DeviceClass> DecodeDeviceClass(const nlohmann::json& obj);
Result<model::ResourceClaim> DecodeResourceClaim(const nlohmann::json& obj);
Result<model::ResourceClaimTemplate> DecodeResourceClaimTemplate(const nlohmann::json& obj);
Result<model::ResourceSlice> DecodeResourceSlice(const nlohmann::json& obj);

}  // namespace tidepool::kube::codec
