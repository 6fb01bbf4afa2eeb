// Node templates for pools found in Azure rather than named in the config: a scale set's SKU plus
// the Cluster Autoscaler's node-template tags, or an AKS agent pool profile.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/error.h"
#include "model/node.h"
#include "model/pool.h"

namespace tidepool::cloud::azure {

// Tags the Cluster Autoscaler reads from scale sets (and tidepool with it).
inline constexpr std::string_view kTagAutoscalerEnabled = "k8s.io_cluster-autoscaler_enabled";
inline constexpr std::string_view kTagAutoscalerClusterPrefix = "k8s.io_cluster-autoscaler_";
inline constexpr std::string_view kTagLabelPrefix =
    "k8s.io_cluster-autoscaler_node-template_label_";
inline constexpr std::string_view kTagTaintPrefix =
    "k8s.io_cluster-autoscaler_node-template_taint_";
inline constexpr std::string_view kTagResourcesPrefix =
    "k8s.io_cluster-autoscaler_node-template_resources_";
inline constexpr std::string_view kTagMin = "min";
inline constexpr std::string_view kTagMax = "max";
inline constexpr std::string_view kTagPoolName = "poolName";                 // aks-engine, old AKS
inline constexpr std::string_view kTagAksPoolName = "aks-managed-poolName";  // AKS
// tidepool's own: the DRA driver the pool's nodes publish their GPUs with ("gpu.nvidia.com"). The
// template then has the size's GPUs as devices of that driver (sku_devices.h), not as
// nvidia.com/gpu.
inline constexpr std::string_view kTagDraDriver = "tidepool-dra-driver";

// Labels Azure puts on nodes, which templates predict.
inline constexpr std::string_view kLabelAgentPool = "kubernetes.azure.com/agentpool";
inline constexpr std::string_view kLabelLegacyAgentPool = "agentpool";
inline constexpr std::string_view kLabelScaleSetPriority = "kubernetes.azure.com/scalesetpriority";
inline constexpr std::string_view kLabelAccelerator = "kubernetes.azure.com/accelerator";
// The GPU model, with the label name the simulator's traces select on.
inline constexpr std::string_view kLabelGpuModel = "gpu-model";

// Decodes a tag name suffix the way the Cluster Autoscaler does: '_' stands for '/', "~2" for
// '_' ("kubernetes.azure.com_scalesetpriority" -> "kubernetes.azure.com/scalesetpriority").
std::string DecodeTagKey(std::string_view encoded);

// A pool built from a scale set (ARM JSON of Microsoft.Compute/virtualMachineScaleSets): name
// `pool_name`, min/max from the `min`/`max` tags (max required: kInvalidArgument without it),
// capacity type from properties.priority (Spot/Low -> spot), instance type and capacity from the
// SKU table (a size it does not know is kNotFound unless the resources tags give cpu and
// memory), labels (tidepool.dev/pool, instance type, agentpool from poolName, spot and GPU
// labels) and taints from the node-template tags; GPUs as devices with the kTagDraDriver tag.
Result<model::Pool> PoolFromScaleSet(const std::string& pool_name, const nlohmann::json& scale_set);

// A pool built from an AKS agent pool (ARM JSON of managedClusters/agentPools): vmSize via the
// SKU table, maxPods, nodeLabels, nodeTaints ("key=value:Effect"), Spot priority (label and
// AKS's kubernetes.azure.com/scalesetpriority=spot:NoSchedule taint), spotMaxPrice as the price
// when positive; min/max from minCount/maxCount, else the agent pool's `min`/`max` tags (max
// required); GPUs as devices with the kTagDraDriver tag.
Result<model::Pool> PoolFromAgentPool(const std::string& pool_name,
                                      const nlohmann::json& agent_pool);

}  // namespace tidepool::cloud::azure
