// Node groups into pools: the Cluster API node groups found at startup become tidepool's pools,
// with the settings the config adds by name (capacity type, price, priority, warm capacity).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cloud/clusterapi/cluster_api.h"
#include "cloud/clusterapi/node_group.h"
#include "cloud/clusterapi/node_template.h"
#include "model/pool.h"

namespace tidepool::cloud::clusterapi {

// A node group as found, with its infrastructure template's status when it has one.
struct Candidate {
  NodeGroup group;
  std::optional<InfraStatus> infra;
};

struct Discovery {
  model::AutoscalerConfig config;           // `base` with one pool per usable node group
  std::map<std::string, NodeGroup> groups;  // by pool name
  // One line per node group or config pool left out, naming it and why; the rest work.
  std::vector<std::string> problems;
};

// Pure: pool name = the group's name (a DNS-1123 label; a second group of the same name, in
// another namespace or of another kind, is left out and reported); template from the group
// (TemplateNode); min and max from its annotations; everything else from base.pools[name] when
// the config has that pool. Candidates are taken in the order given (Discover sorts them).
Discovery BuildPools(const model::AutoscalerConfig& base, const std::vector<Candidate>& candidates,
                     std::vector<std::string> problems);

// Lists the node groups (MachineDeployments, then MachineSets not owned by one, then
// MachinePools; each by namespace and name), reads their infrastructure templates and builds the
// pools. Errors: the API could not be read. A group that cannot be used is a problem, not an
// error.
Result<Discovery> Discover(ClusterApi& api, const model::AutoscalerConfig& base);

}  // namespace tidepool::cloud::clusterapi
