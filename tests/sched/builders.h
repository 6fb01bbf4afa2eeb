// Terse builders for Pods, Nodes and small clusters in sched/ tests, so each test reads as the
// scenario it checks. Test-only; a candidate for a shared test util if other layers want them.
#pragma once

#include <deque>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"
#include "model/node.h"
#include "model/pod.h"
#include "model/quantity.h"
#include "model/resources.h"
#include "model/selector.h"
#include "sched/snapshot.h"
#include "tests/testing/values.h"

namespace tidepool::sched::testing {

using tidepool::testing::Res;
using tidepool::testing::ResourceList;

inline model::SelectorRequirement Req(std::string key, model::SelectorOp op,
                                      std::vector<std::string> values = {}) {
  return {std::move(key), op, std::move(values)};
}

// A pod (anti-)affinity term selecting pods with all of `match_labels`.
inline model::PodAffinityTerm Term(std::string topology_key, model::Labels match_labels,
                                   std::vector<std::string> namespaces = {}) {
  model::PodAffinityTerm t;
  t.topology_key = std::move(topology_key);
  t.label_selector.match_labels = std::move(match_labels);
  t.has_label_selector = true;
  t.namespaces = std::move(namespaces);
  return t;
}

// A DoNotSchedule spread constraint selecting pods with all of `match_labels`.
inline model::TopologySpreadConstraint SpreadOn(std::string topology_key, int32_t max_skew,
                                                model::Labels match_labels) {
  model::TopologySpreadConstraint c;
  c.topology_key = std::move(topology_key);
  c.max_skew = max_skew;
  c.label_selector.match_labels = std::move(match_labels);
  c.has_label_selector = true;
  return c;
}

class PodBuilder {
 public:
  explicit PodBuilder(std::string name, std::string ns = "default") {
    pod_.meta.name = std::move(name);
    pod_.meta.namespace_ = std::move(ns);
    pod_.phase = model::PodPhase::kPending;
    pod_.containers.push_back({.name = "main"});
  }
  // Requests of the (first) app container.
  PodBuilder& Requests(ResourceList list) {
    pod_.containers[0].requests = Res(list);
    return *this;
  }
  PodBuilder& AddContainer(ResourceList list) {
    pod_.containers.push_back(
        {.name = "c" + std::to_string(pod_.containers.size()), .requests = Res(list)});
    return *this;
  }
  PodBuilder& InitContainer(ResourceList list) {
    pod_.mutable_init_containers().push_back(
        {.name = "init" + std::to_string(pod_.init_containers().size()), .requests = Res(list)});
    return *this;
  }
  PodBuilder& Label(std::string key, std::string value) {
    pod_.meta.labels[std::move(key)] = std::move(value);
    return *this;
  }
  PodBuilder& NodeName(std::string name) {
    pod_.node_name = std::move(name);
    return *this;
  }
  PodBuilder& NodeSelector(std::string key, std::string value) {
    pod_.node_selector[std::move(key)] = std::move(value);
    return *this;
  }
  // Adds an ORed term to the required node affinity.
  PodBuilder& NodeAffinityTerm(std::vector<model::SelectorRequirement> expressions,
                               std::vector<model::SelectorRequirement> fields = {}) {
    if (!pod_.affinity().node_required) pod_.mutable_affinity().node_required.emplace();
    pod_.mutable_affinity().node_required->terms.push_back(
        {std::move(expressions), std::move(fields)});
    return *this;
  }
  PodBuilder& Tolerate(std::string key, model::TolerationOp op, std::string value = "",
                       std::optional<model::TaintEffect> effect = std::nullopt) {
    pod_.tolerations.push_back({std::move(key), op, std::move(value), effect, std::nullopt});
    return *this;
  }
  PodBuilder& HostPort(int32_t port, std::string protocol = "TCP", std::string ip = "") {
    pod_.containers[0].ports.push_back({.container_port = port,
                                        .host_port = port,
                                        .protocol = std::move(protocol),
                                        .host_ip = std::move(ip)});
    return *this;
  }
  PodBuilder& Affinity(model::PodAffinityTerm term) {
    pod_.mutable_affinity().pod_affinity_required.push_back(std::move(term));
    return *this;
  }
  PodBuilder& AntiAffinity(model::PodAffinityTerm term) {
    pod_.mutable_affinity().pod_anti_affinity_required.push_back(std::move(term));
    return *this;
  }
  PodBuilder& Spread(model::TopologySpreadConstraint c) {
    pod_.mutable_topology_spread_constraints().push_back(std::move(c));
    return *this;
  }
  PodBuilder& Phase(model::PodPhase phase) {
    pod_.phase = phase;
    return *this;
  }
  PodBuilder& DaemonSet(std::string name) {
    pod_.meta.owner_references.push_back(
        {"apps/v1", "DaemonSet", name, "uid-" + name, /*controller=*/true});
    return *this;
  }
  PodBuilder& Mirror() {
    pod_.meta.annotations["kubernetes.io/config.mirror"] = "hash";
    return *this;
  }
  PodBuilder& Terminating() {
    pod_.meta.deletion_timestamp = Time{};
    return *this;
  }
  model::Pod Build() {
    model::Pod p = pod_;
    p.Finalize();
    return p;
  }

 private:
  model::Pod pod_;
};

class NodeBuilder {
 public:
  // A ready node with allocatable {cpu: 4, memory: 16Gi, pods: 110} and a hostname label.
  explicit NodeBuilder(std::string name) {
    node_.meta.name = name;
    node_.meta.labels[std::string(model::kLabelHostname)] = name;
    node_.ready = true;
    Allocatable({{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}});
  }
  NodeBuilder& Allocatable(ResourceList list) {
    node_.allocatable = Res(list);
    node_.capacity = node_.allocatable;
    return *this;
  }
  NodeBuilder& Label(std::string key, std::string value) {
    node_.meta.labels[std::move(key)] = std::move(value);
    return *this;
  }
  NodeBuilder& Zone(std::string zone) {
    return Label(std::string(model::kLabelZone), std::move(zone));
  }
  NodeBuilder& NoLabel(std::string_view key) {
    node_.meta.labels.erase(std::string(key));
    return *this;
  }
  NodeBuilder& Taint(std::string key, std::string value, model::TaintEffect effect) {
    node_.taints.push_back({std::move(key), std::move(value), effect});
    return *this;
  }
  NodeBuilder& Unschedulable() {
    node_.unschedulable = true;
    return *this;
  }
  model::Node Build() const { return node_; }

 private:
  model::Node node_;
};

// Owns the nodes and pods a snapshot points at (deques keep addresses stable).
class TestCluster {
 public:
  NodeIndex AddNode(model::Node node) {
    nodes_.push_back(std::move(node));
    auto r = snapshot_.AddNode(&nodes_.back());
    TIDEPOOL_CHECK_MSG(r.has_value(), "AddNode failed in test");
    return *r;
  }
  const model::Pod* AddPod(model::Pod pod, std::string_view node_name) {
    const model::Pod* p = Keep(std::move(pod));
    auto r = snapshot_.AddPod(p, node_name);
    TIDEPOOL_CHECK_MSG(r.has_value(), "AddPod failed in test");
    return p;
  }
  // Keeps a pod alive without placing it.
  const model::Pod* Keep(model::Pod pod) {
    pods_.push_back(std::move(pod));
    return &pods_.back();
  }
  const model::Node* KeepNode(model::Node node) {
    nodes_.push_back(std::move(node));
    return &nodes_.back();
  }
  NodeIndex Index(std::string_view name) const { return snapshot_.FindNode(name); }
  ClusterSnapshot& snapshot() { return snapshot_; }

 private:
  std::deque<model::Node> nodes_;
  std::deque<model::Pod> pods_;
  ClusterSnapshot snapshot_;  // declared last: destroyed first
};

}  // namespace tidepool::sched::testing
