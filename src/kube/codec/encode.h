// Encoding model values back into Kubernetes JSON: what a provider needs to create a Node from a
// pool template, and taints/resources for patches.
#pragma once

#include <nlohmann/json.hpp>

#include "model/dra.h"
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

// A resource.k8s.io/v1 ResourceSlice for POST, as a DRA driver publishes its devices: metadata
// (name, owner references), spec (driver, pool with generation 1 of 1 slice, nodeName or
// allNodes, devices with their attributes and capacity, shared counters). Attribute and capacity
// names stay fully qualified, which the API accepts.
nlohmann::json EncodeResourceSlice(const model::ResourceSlice& slice);

}  // namespace tidepool::kube::codec
