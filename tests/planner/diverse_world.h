// Pools of one shape each and pods of Karpenter's diverse mix (generic, zone or hostname spread,
// zone affinity to their own value, hostname anti-affinity), for the scale-up property tests.
#pragma once

#include <fmt/format.h>

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/daemonset.h"
#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_up.h"
#include "tests/testing/values.h"

namespace tidepool::planner::testing {

// A pending pod of ReplicaSet "rs" asking for `cpu` and `memory`.
inline model::Pod Pending(std::string name, const std::string& cpu,
                          const std::string& memory = "1Gi") {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "default";
  p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", "rs", "rs-uid", true});
  p.containers.push_back(
      {.name = "main", .requests = tidepool::testing::Res({{"cpu", cpu}, {"memory", memory}})});
  p.Finalize();
  return p;
}

// Nodes added per pool.
inline std::map<std::string, int> Adds(const ScaleUpPlan& plan) {
  std::map<std::string, int> adds;
  for (const auto& u : plan.scale_ups) adds[u.pool] = u.add;
  return adds;
}

// A pool of one shape in `zone`, max 100.
inline model::Pool Shape(std::string name, const std::string& cpu, const std::string& memory,
                         double price, const std::string& zone = "z1") {
  model::Pool p;
  p.name = std::move(name);
  p.max = 100;
  p.price_per_hour = price;
  p.instance_type = "type-" + p.name;
  model::Node& t = p.template_node;
  t.meta.name = "template-" + p.name;
  t.meta.labels[std::string(model::kLabelPool)] = p.name;
  t.meta.labels[std::string(model::kLabelInstanceType)] = p.instance_type;
  t.meta.labels[std::string(model::kLabelZone)] = zone;
  t.capacity = tidepool::testing::Res({{"cpu", cpu}, {"memory", memory}, {"pods", "110"}});
  t.allocatable = t.capacity;
  t.ready = true;
  return p;
}

// What a diverse pod asks besides its requests.
enum class DiverseKind {
  kGeneric,
  kZoneSpread,      // my-label=<value>, maxSkew over zones
  kHostnameSpread,  // my-label=<value>, maxSkew over nodes
  kZoneAffinity,    // aff=<value>, required zone affinity to its own value
  kAntiAffinity,    // app=nginx, required hostname anti-affinity against app=nginx
};

inline model::Pod DiversePod(std::string name, DiverseKind kind, const std::string& value,
                             const std::string& cpu, const std::string& memory, int max_skew = 1,
                             const std::string& owner_uid = "rs-uid") {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "default";
  p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", "rs", owner_uid, true});
  p.containers.push_back(
      {.name = "main", .requests = tidepool::testing::Res({{"cpu", cpu}, {"memory", memory}})});
  model::LabelSelector sel;
  if (kind == DiverseKind::kZoneSpread || kind == DiverseKind::kHostnameSpread) {
    p.meta.labels["my-label"] = value;
    sel.match_labels["my-label"] = value;
    model::TopologySpreadConstraint c;
    c.topology_key =
        std::string(kind == DiverseKind::kZoneSpread ? model::kLabelZone : model::kLabelHostname);
    c.max_skew = max_skew;
    c.label_selector = sel;
    c.has_label_selector = true;
    p.mutable_topology_spread_constraints().push_back(c);
  } else if (kind == DiverseKind::kZoneAffinity || kind == DiverseKind::kAntiAffinity) {
    const bool affinity = kind == DiverseKind::kZoneAffinity;
    const std::string key = affinity ? "aff" : "app";
    p.meta.labels[key] = affinity ? value : "nginx";
    sel.match_labels[key] = p.meta.labels[key];
    model::PodAffinityTerm t;
    t.topology_key = std::string(affinity ? model::kLabelZone : model::kLabelHostname);
    t.label_selector = sel;
    t.has_label_selector = true;
    (affinity ? p.mutable_affinity().pod_affinity_required
              : p.mutable_affinity().pod_anti_affinity_required)
        .push_back(t);
  }
  p.Finalize();
  return p;
}

// Pools, pending pods and DaemonSets, planned with the options given (and the new nodes listed).
struct World {
  model::AutoscalerConfig config;
  std::deque<model::Pod> pods;
  std::vector<model::DaemonSet> daemon_sets;

  ScaleUpPlan Plan(ScaleUpOptions options = {}) const {
    PlannerInput in;
    in.config = &config;
    for (const model::Pod& p : pods) in.pods.push_back(&p);
    for (const model::DaemonSet& d : daemon_sets) in.daemon_sets.push_back(&d);
    options.list_new_nodes = true;
    return ScaleUpPlanner().Plan(in, options);
  }
};

// One to three zones of one to three random shapes each (2-16 cpus, 4 GiB a cpu, 0.9-1.1 a cpu
// an hour), each pool's max 1-8, binding at times; drawn with `pick(n)` in [0, n).
template <typename Pick>
void AddRandomPools(World& w, Pick&& pick) {
  const std::vector<std::string> cpus = {"2", "4", "8", "16"};
  int zones = 1 + pick(3), shapes = 1 + pick(3);
  for (int z = 0; z < zones; ++z) {
    for (int s = 0; s < shapes; ++s) {
      int c = pick(4);
      w.config.pools.push_back(Shape(fmt::format("z{}s{}", z, s), cpus[c],
                                     fmt::format("{}Gi", 4 << c), (1 << c) * (0.9 + 0.1 * pick(3)),
                                     fmt::format("z{}", z)));
      w.config.pools.back().max = 1 + pick(pick(2) ? 3 : 8);
    }
  }
}

// Up to `max_pods` random pods of every diverse kind (values a..c, cpu 250m-3, memory 512Mi-6Gi,
// maxSkew 1-2, four owners), drawn with `pick(n)` in [0, n); returns how many have a spread
// constraint.
template <typename Pick>
int AddRandomDiversePods(World& w, Pick&& pick, int max_pods = 40) {
  int spread = 0;
  int pods = 1 + pick(max_pods);
  for (int i = 0; i < pods; ++i) {
    std::string value(1, static_cast<char>('a' + pick(3)));
    auto kind = static_cast<DiverseKind>(pick(5));
    std::string cpu = std::vector<std::string>{"250m", "1", "1500m", "3"}[pick(4)];
    std::string memory = std::vector<std::string>{"512Mi", "2Gi", "6Gi"}[pick(3)];
    int max_skew = 1 + pick(2);
    w.pods.push_back(DiversePod("p" + std::to_string(i), kind, value, cpu, memory, max_skew,
                                "rs-" + std::to_string(pick(4))));
    if (kind == DiverseKind::kZoneSpread || kind == DiverseKind::kHostnameSpread) ++spread;
  }
  return spread;
}

// A plan as lines (pool, nodes added, pods; then the unschedulable pods), to compare two plans.
inline std::string RenderPlan(const ScaleUpPlan& plan) {
  std::string out;
  for (const auto& u : plan.scale_ups) {
    out += u.pool + " +" + std::to_string(u.add) + " [";
    for (const auto& p : u.pods) out += p + " ";
    out += "]\n";
  }
  for (const auto& u : plan.unschedulable) out += "unschedulable " + u.pod + "\n";
  return out;
}

}  // namespace tidepool::planner::testing
