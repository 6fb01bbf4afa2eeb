// A Cluster API node group: a MachineDeployment, MachineSet or MachinePool that carries the
// Cluster Autoscaler's min/max size annotations, read from its JSON (v1beta2 or v1beta1).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace tidepool::cloud::clusterapi {

inline constexpr std::string_view kMinSizeAnnotation =
    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
inline constexpr std::string_view kMaxSizeAnnotation =
    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";

enum class GroupKind { kMachineDeployment, kMachineSet, kMachinePool };
std::string_view KindName(GroupKind kind);      // "MachineDeployment", ...
std::string_view ResourceName(GroupKind kind);  // "machinedeployments", ...

// spec.template.spec.infrastructureRef: v1beta2 names the group, v1beta1 the group/version.
struct InfraRef {
  std::string api_group;
  std::string api_version;  // v1beta1 only ("group/version"); "" otherwise
  std::string kind;
  std::string name;
};

struct NodeGroup {
  GroupKind kind = GroupKind::kMachineDeployment;
  std::string namespace_;
  std::string name;
  std::string uid;
  int32_t min = 0;
  int32_t max = 0;
  int32_t replicas = 0;  // spec.replicas (absent: 0)
  std::string cluster_name;
  std::map<std::string, std::string> annotations;
  std::optional<InfraRef> infrastructure;
  std::vector<std::string> provider_ids;  // MachinePool: spec.providerIDList

  // "MachineDeployment ns/name", for messages.
  std::string Describe() const;
};

// The node group `obj` (of `kind`) is, or nullopt when it is not one: it has neither size
// annotation, or it is a MachineSet owned by a MachineDeployment (the deployment is the group).
// Errors name the object and the annotation: a size that is not a non-negative integer, only
// one of the two, or min > max.
Result<std::optional<NodeGroup>> ParseNodeGroup(const nlohmann::json& obj, GroupKind kind);

}  // namespace tidepool::cloud::clusterapi
