// Typed access to the management cluster's Cluster API objects: node groups, Machines, the scale
// subresource, infrastructure templates, the delete-machine mark. One version per process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "cloud/clusterapi/machine.h"
#include "cloud/clusterapi/node_group.h"
#include "cloud/clusterapi/node_template.h"
#include "cloud/clusterapi/settings.h"
#include "kube/client/api_client.h"

namespace tidepool::cloud::clusterapi {

// A node group's scale subresource as read: the replicas and the resourceVersion that guards
// the write of new replicas.
struct Scale {
  int32_t replicas = 0;
  std::string resource_version;
};

class ClusterApi {
 public:
  // Picks the version (settings.api_version, else the one the server prefers); an error when
  // the server serves no cluster.x-k8s.io API, saying which cluster was asked.
  static Result<ClusterApi> Connect(kube::ApiClient& api, const Settings& settings);

  const std::string& version() const { return version_; }
  const Settings& settings() const { return settings_; }

  // Every object of `kind` within the settings' namespace and label selector; MachinePools not
  // served (the feature off) are an empty list.
  Result<std::vector<nlohmann::json>> ListGroups(GroupKind kind);
  Result<std::vector<nlohmann::json>> ListMachines();
  // The group's infrastructure template's status (nullopt: no template, or it publishes none).
  Result<std::optional<InfraStatus>> InfraStatusOf(const NodeGroup& group);

  Result<Scale> GetScale(const NodeGroup& group);
  // PUT of the scale subresource with `read`'s resourceVersion: kConflict when the group changed
  // since, and then nothing changed.
  Result<void> SetScale(const NodeGroup& group, const Scale& read, int32_t replicas);

  // Adds (or removes) the delete-machine annotation and tidepool's own; Mark is guarded by the
  // Machine's uid (a Machine recreated under the same name is not marked). Unmark of a Machine
  // already gone is success.
  Result<void> Mark(const Machine& machine, Time now);
  Result<void> Unmark(const Machine& machine);

 private:
  ClusterApi(kube::ApiClient& api, Settings settings, std::string version)
      : api_(&api), settings_(std::move(settings)), version_(std::move(version)) {}
  std::string GroupVersion() const;
  std::string Collection(std::string_view resource) const;
  std::string GroupPath(const NodeGroup& group) const;

  kube::ApiClient* api_;
  Settings settings_;
  std::string version_;
};

}  // namespace tidepool::cloud::clusterapi
