#include "cloud/clusterapi/discovery.h"

#include <fmt/format.h>

#include <algorithm>

#include "kube/config/yaml_reader.h"

namespace tidepool::cloud::clusterapi {

namespace {

constexpr GroupKind kKinds[] = {GroupKind::kMachineDeployment, GroupKind::kMachineSet,
                                GroupKind::kMachinePool};

// Settings the config adds to a node group's pool; size and template stay the group's.
model::Pool Merge(const model::Pool* configured, const NodeGroup& g, model::Node tmpl) {
  model::Pool pool = configured != nullptr ? *configured : model::Pool{};
  pool.name = g.name;
  pool.min = g.min;
  pool.max = g.max;
  pool.template_node = std::move(tmpl);
  if (!pool.instance_type.empty()) {
    pool.template_node.meta.labels[std::string(model::kLabelInstanceType)] = pool.instance_type;
  }
  return pool;
}

// The config's warm capacity checked against the shape the group gave (the loader could not).
std::optional<std::string> WarmProblem(const model::Pool& pool) {
  if (pool.warm.spare_nodes > pool.max) {
    return fmt::format("pools[{}].warm.spareNodes {} is more than the node group's max size {}",
                       pool.name, pool.warm.spare_nodes, pool.max);
  }
  for (model::ResourceId id : pool.warm.headroom_set) {
    if (pool.template_node.allocatable.Get(id) <= 0) {
      return fmt::format(
          "pools[{}].warm.headroom asks for {}, which the node group's nodes do "
          "not have",
          pool.name, model::ResourceName(id));
    }
  }
  return std::nullopt;
}

}  // namespace

Discovery BuildPools(const model::AutoscalerConfig& base, const std::vector<Candidate>& candidates,
                     std::vector<std::string> problems) {
  Discovery d;
  d.config = base;
  d.config.pools.clear();
  for (const Candidate& c : candidates) {
    const NodeGroup& g = c.group;
    if (!kube::config::IsDns1123Label(g.name)) {
      problems.push_back(fmt::format(
          "{}: its name is not usable as a pool name (expected at most 63 lowercase letters, "
          "digits and '-'); left out",
          g.Describe()));
      continue;
    }
    if (auto it = d.groups.find(g.name); it != d.groups.end()) {
      problems.push_back(fmt::format(
          "{}: {} has the same name and became pool {}; left out (limit the node groups with "
          "provider.namespace or provider.labelSelector)",
          g.Describe(), it->second.Describe(), g.name));
      continue;
    }
    auto tmpl = TemplateNode(g, c.infra ? &*c.infra : nullptr, g.name);
    if (!tmpl) {
      problems.push_back(tmpl.error().message() + "; left out");
      continue;
    }
    model::Pool pool = Merge(base.FindPool(g.name), g, std::move(*tmpl));
    if (auto warm = WarmProblem(pool)) {
      problems.push_back(*warm + "; the pool keeps no warm capacity");
      pool.warm = {};
    }
    d.groups.emplace(pool.name, g);
    d.config.pools.push_back(std::move(pool));
  }
  for (const model::Pool& p : base.pools) {
    if (d.groups.count(p.name) == 0) {
      problems.push_back(
          fmt::format("pools[{}]: no usable node group of that name (expected a MachineDeployment, "
                      "MachineSet or MachinePool with the cluster-api-autoscaler-node-group size "
                      "annotations); its settings are unused",
                      p.name));
    }
  }
  d.problems = std::move(problems);
  return d;
}

Result<Discovery> Discover(ClusterApi& api, const model::AutoscalerConfig& base) {
  std::vector<Candidate> candidates;
  std::vector<std::string> problems;
  for (GroupKind kind : kKinds) {
    TIDEPOOL_ASSIGN_OR_RETURN(auto objects, api.ListGroups(kind));
    std::vector<Candidate> of_kind;
    for (const auto& obj : objects) {
      auto g = ParseNodeGroup(obj, kind);
      if (!g) {
        problems.push_back(g.error().message() + "; left out");
        continue;
      }
      if (!*g) continue;
      Candidate c{std::move(**g), std::nullopt};
      auto infra = api.InfraStatusOf(c.group);
      if (!infra) {
        if (infra.error().code() != Error::Code::kInvalidArgument) {
          return std::unexpected(infra.error());
        }
        problems.push_back(infra.error().message());
      } else {
        c.infra = std::move(*infra);
      }
      of_kind.push_back(std::move(c));
    }
    std::sort(of_kind.begin(), of_kind.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.group.namespace_, a.group.name) <
             std::tie(b.group.namespace_, b.group.name);
    });
    for (auto& c : of_kind) candidates.push_back(std::move(c));
  }
  return BuildPools(base, candidates, std::move(problems));
}

}  // namespace tidepool::cloud::clusterapi
