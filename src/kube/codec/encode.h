// Encoding model values back into Kubernetes JSON: what a provider needs to create a Node from a
// pool template, and taints/resources for patches.
#pragma once

#include <nlohmann/json.hpp>

#include "model/node.h"
#include "model/resources.h"

namespace tidepool::kube::codec {

// {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1", ...}: cpu in milli-units, every other
// resource in whole units, each in Kubernetes' canonical quantity form.
nlohmann::json EncodeResources(const model::Resources& resources);

// [{"key": ..., "value": ..., "effect": ...}], value left out when empty.
nlohmann::json EncodeTaints(const std::vector<model::Taint>& taints);

// A v1 Node object for POST: metadata (name, labels, annotations), spec (providerID, taints,
// unschedulable) and status (capacity, allocatable). Readiness is the kubelet's to report.
nlohmann::json EncodeNode(const model::Node& node);

}  // namespace tidepool::kube::codec
