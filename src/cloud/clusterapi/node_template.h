// The node a Cluster API node group would add, for scaling from zero: from the Cluster
// Autoscaler's capacity annotations, else from the infrastructure template's status.
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "cloud/clusterapi/node_group.h"
#include "model/node.h"
#include "model/resources.h"

namespace tidepool::cloud::clusterapi {

inline constexpr std::string_view kCapacityPrefix = "capacity.cluster-autoscaler.kubernetes.io/";
inline constexpr std::string_view kDefaultGpuResource = "nvidia.com/gpu";

// What an InfraMachineTemplate publishes (status.capacity, status.nodeInfo), when it does.
struct InfraStatus {
  model::Resources capacity;
  std::vector<model::ResourceId> set;  // the ids status.capacity lists
  std::string architecture;            // status.nodeInfo.architecture, e.g. "amd64"
  std::string operating_system;        // status.nodeInfo.operatingSystem, e.g. "linux"
};

// Reads an InfraMachineTemplate's status; errors name the template and the field.
Result<std::optional<InfraStatus>> ParseInfraStatus(const nlohmann::json& tmpl);

// The template node of `group` named for pool `pool`: resources from the annotations cpu, memory,
// ephemeral-disk, maxPods, gpu-type + gpu-count (each overriding the infrastructure's
// status.capacity), labels "k=v,k2=v2" and taints "k=v:Effect,..." from the annotations,
// kubernetes.io/arch and /os from status.nodeInfo, and tidepool.dev/pool. Allocatable equals
// capacity. Errors name the group and the annotation; cpu and memory must be known.
Result<model::Node> TemplateNode(const NodeGroup& group, const InfraStatus* infra,
                                 const std::string& pool);

}  // namespace tidepool::cloud::clusterapi
