// Scale-down tests' cluster builder: pools, nodes, pods and PDBs built in code, and helpers that
// read a ScaleDownPlan (scale_down_test.cc, consolidation_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/quantity.h"
#include "planner/scale_down.h"
#include "sched/cluster_model.h"
#include "tests/testing/values.h"

namespace tidepool::planner::scale_down_testing {

using tidepool::testing::At;
using tidepool::testing::Res;
using tidepool::testing::ResourceList;

// A cluster under construction: pools, nodes, pods and PDBs with stable addresses.
class Cluster {
 public:
  Cluster() {
    now_ = At("2026-01-01T12:00:00Z");
    AddPool("cpupool", 0);
  }

  model::AutoscalerConfig& config() { return config_; }
  Time now() const { return now_; }

  model::Pool& AddPool(std::string name, int32_t min, int32_t max = 100) {
    model::Pool& p = config_.pools.emplace_back();
    p.name = std::move(name);
    p.min = min;
    p.max = max;
    return p;
  }

  // A ready node of `pool` ("" for unmanaged), created an hour ago, with room for 110 pods.
  model::Node& AddNode(std::string name, std::string pool = "cpupool",
                       ResourceList alloc = {{"cpu", "4"}, {"memory", "16Gi"}}) {
    model::Node& n = nodes_.emplace_back();
    n.meta.name = std::move(name);
    n.meta.labels[std::string(model::kLabelHostname)] = n.meta.name;
    if (!pool.empty()) n.meta.labels[std::string(model::kLabelPool)] = pool;
    n.meta.creation_timestamp = now_ - std::chrono::hours(1);
    n.allocatable = Res(alloc);
    n.allocatable.Set(model::kPods, 110);
    n.capacity = n.allocatable;
    n.ready = true;
    return n;
  }

  // A running pod bound to `node`, owned by ReplicaSet "rs-<name>" unless changed.
  model::Pod& AddPod(std::string name, std::string node, ResourceList requests = {{"cpu", "500m"}},
                     std::string ns = "default") {
    model::Pod& p = pods_.emplace_back();
    p.meta.name = std::move(name);
    p.meta.namespace_ = std::move(ns);
    p.meta.uid = "uid-" + p.meta.namespace_ + "-" + p.meta.name;
    p.meta.owner_references.push_back(
        {"apps/v1", "ReplicaSet", "rs-" + p.meta.name, "rs-uid-" + p.meta.name, true});
    p.node_name = std::move(node);
    p.phase = model::PodPhase::kRunning;
    p.containers.push_back({.name = "main", .requests = Res(requests)});
    return p;
  }

  model::Pod& AddDaemonSetPod(std::string name, std::string node) {
    model::Pod& p = AddPod(std::move(name), std::move(node), {{"cpu", "100m"}});
    p.meta.owner_references = {{"apps/v1", "DaemonSet", "ds", "ds-uid", true}};
    return p;
  }

  model::PodDisruptionBudget& AddPdb(std::string name, model::Labels selector,
                                     std::string ns = "default") {
    model::PodDisruptionBudget& b = pdbs_.emplace_back();
    b.meta.name = std::move(name);
    b.meta.namespace_ = std::move(ns);
    b.selector = model::LabelSelector{.match_labels = std::move(selector)};
    return b;
  }

  PlannerInput Input() {
    PlannerInput in;
    in.config = &config_;
    in.now = now_;
    for (model::Pod& p : pods_) {
      p.Finalize();
      in.pods.push_back(&p);
    }
    for (const model::Node& n : nodes_) in.nodes.push_back(&n);
    for (const model::PodDisruptionBudget& b : pdbs_) in.pdbs.push_back(&b);
    return in;
  }

  ScaleDownPlan Plan(const ScaleDownOptions& options = {},
                     std::vector<std::string>* unneeded = nullptr) {
    return ScaleDownPlanner().Plan(Input(), options, unneeded);
  }

  // The plan of a pass that forks a cluster model holding the cluster, as the loop plans, rather
  // than one that builds its own snapshot.
  ScaleDownPlan PlanOnModel(const ScaleDownOptions& options = {}) {
    PlannerInput in = Input();
    sched::ClusterModel model;
    for (const model::Node* n : in.nodes)
      EXPECT_TRUE(model.SetNode(sched::ClusterModel::Borrow(n)).has_value());
    for (const model::Pod* p : in.pods)
      EXPECT_TRUE(model.SetPod(sched::ClusterModel::Borrow(p)).has_value());
    in.model = &model;
    in.unbound = model.Unbound();
    return ScaleDownPlanner().Plan(in, options);
  }

 private:
  model::AutoscalerConfig config_;
  Time now_;
  std::deque<model::Node> nodes_;
  std::deque<model::Pod> pods_;
  std::deque<model::PodDisruptionBudget> pdbs_;
};

inline ScaleDownOptions NoRateLimit() {
  ScaleDownOptions o;
  o.rate_limit = false;
  return o;
}

inline std::vector<std::string> Removed(const ScaleDownPlan& plan) {
  std::vector<std::string> out;
  for (const auto& sd : plan.scale_downs) out.push_back(sd.node);
  return out;
}

inline const ScaleDown* Removal(const ScaleDownPlan& plan, std::string_view node) {
  for (const auto& sd : plan.scale_downs)
    if (sd.node == node) return &sd;
  return nullptr;
}

// The Keep reason for `node`, or "<not kept>" / "<kept twice>".
inline std::string KeepReason(const ScaleDownPlan& plan, std::string_view node) {
  std::string out = "<not kept>";
  int n = 0;
  for (const auto& k : plan.keep) {
    if (k.node == node) {
      out = k.Reason();
      ++n;
    }
  }
  return n > 1 ? "<kept twice>" : out;
}

inline std::string Render(const ScaleDownPlan& plan) {
  std::string out;
  for (const auto& sd : plan.scale_downs) {
    out += "remove " + sd.node + " " + sd.pool + " " +
           (sd.kind == RemovalKind::kEmpty ? "empty" : "underutilized") + " [" + sd.Detail() + "]";
    for (const auto& p : sd.evict) out += " " + p;
    out += "\n";
  }
  for (const auto& k : plan.keep) out += "keep " + k.node + ": " + k.Reason() + "\n";
  return out;
}

using Names = std::vector<std::string>;

}  // namespace tidepool::planner::scale_down_testing
