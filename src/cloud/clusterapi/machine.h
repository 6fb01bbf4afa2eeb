// A Cluster API Machine as the provider needs it: which node group owns it, its node, whether it
// failed, is being deleted or is marked for deletion. Read from v1beta2 or v1beta1 JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "base/time.h"

namespace tidepool::cloud::clusterapi {

// The MachineSet controller deletes Machines carrying this annotation first when it scales down.
inline constexpr std::string_view kDeleteMachineAnnotation = "cluster.x-k8s.io/delete-machine";
// Set beside it by tidepool, so a restarted tidepool knows which marks are its own.
inline constexpr std::string_view kMarkedByTidepoolAnnotation = "tidepool.dev/delete-machine";

struct Machine {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
  Time created{};
  std::string provider_id;  // spec.providerID ("" until the infrastructure sets it)
  std::string node_name;    // status.nodeRef.name ("" until its Node joined)
  std::string phase;        // status.phase: Pending, Provisioning, Provisioned, Running, ...
  std::string failure;      // "reason: message" when the Machine failed, else ""
  bool deleting = false;    // metadata.deletionTimestamp set
  bool marked = false;      // carries kDeleteMachineAnnotation
  bool marked_by_tidepool = false;
  // The node group, from the labels Cluster API puts on its Machines: cluster.x-k8s.io/
  // deployment-name, set-name and pool-name ("" when absent).
  std::string deployment_name;
  std::string set_name;
  std::string pool_name;

  bool Joined() const { return !node_name.empty(); }
  bool Failed() const { return !failure.empty(); }
};

// Errors name the object and the field.
Result<Machine> ParseMachine(const nlohmann::json& obj);

}  // namespace tidepool::cloud::clusterapi
