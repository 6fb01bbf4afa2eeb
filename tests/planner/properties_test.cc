// Property tests of the planners over randomly generated clusters (seeded, thousands of cases):
// limits, PDB budgets, non-movable pods and template fit hold for every plan, whatever the input.
//
// Each case is generated from one seed. The oracles below are written from the rules as users
// read them (docs/configuration.md, docs/annotations.md), not from the planner's code, so a
// planner bug shows up as a disagreement. A failing case is shrunk greedily (pods, PDBs,
// DaemonSets, nodes, pools removed one at a time while the property still fails) and printed
// with its seed.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/daemonset.h"
#include "model/node.h"
#include "model/pdb.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/cluster.h"
#include "planner/disruption.h"
#include "planner/made_up_node.h"
#include "planner/plan_json.h"
#include "planner/scale_down.h"
#include "planner/scale_down_memo.h"
#include "planner/scale_down_run.h"
#include "planner/scale_up.h"
#include "planner/slot_pools.h"
#include "sched/cluster_model.h"
#include "sched/fit.h"
#include "sched/snapshot.h"
#include "tests/testing/values.h"

namespace tidepool::planner {
namespace {

using model::Pod;
using tidepool::testing::At;
using tidepool::testing::Res;

constexpr std::string_view kSpotKey = "kubernetes.azure.com/scalesetpriority";
constexpr std::string_view kApp = "app";

model::ResourceId GpuId() { return model::InternResource(model::kNvidiaGpu); }

// Everything one case plans over, owned by value so a case can be copied and shrunk.
struct Case {
  uint64_t seed = 0;
  model::AutoscalerConfig config;
  std::vector<model::Node> nodes;
  std::vector<Pod> pods;
  std::vector<model::PodDisruptionBudget> pdbs;
  std::vector<model::DaemonSet> daemon_sets;
  std::map<std::string, int, std::less<>> upcoming;
  std::map<std::string, Time, std::less<>> backoff_until;
  Time now{};
  bool rate_limit = true;
  bool may_remove_all = true;  // else only nodes whose name ends in an even digit

  // Pointers into this case; valid until the case changes.
  PlannerInput Input() const {
    PlannerInput in;
    in.config = &config;
    for (const auto& n : nodes) in.nodes.push_back(&n);
    for (const auto& p : pods) in.pods.push_back(&p);
    for (const auto& b : pdbs) in.pdbs.push_back(&b);
    for (const auto& d : daemon_sets) in.daemon_sets.push_back(&d);
    in.upcoming = upcoming;
    in.backoff_until = backoff_until;
    in.now = now;
    return in;
  }
};

// ---- Generation ------------------------------------------------------------------------------

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int>(v.size()) - 1))];
  }

 private:
  std::mt19937_64 rng_;
};

struct PoolKind {
  std::string kind;
  std::string cpu, memory, gpus;
};

const std::vector<PoolKind>& PoolKinds() {
  static const std::vector<PoolKind> kinds = {{"cpu", "4", "16Gi", "0"},
                                              {"cpu-big", "16", "64Gi", "0"},
                                              {"gpu", "6", "56Gi", "1"},
                                              {"heavy", "24", "448Gi", "4"}};
  return kinds;
}

const Time kNow = At("2026-03-01T12:00:00Z");

void AddOwner(Pod& p, std::string kind, std::string api_version = "apps/v1") {
  p.meta.owner_references.push_back({std::move(api_version), std::move(kind),
                                     "owner-" + p.meta.name, "owner-uid-" + p.meta.name, true});
}

// A pending or bound pod with random requests and scheduling constraints. Bound pods get the
// eviction-relevant attributes (owner kinds, annotations, volumes) at random.
Pod RandomPod(Gen& g, int index, bool bound) {
  Pod p;
  p.meta.name = fmt::format("p{}", index);
  p.meta.namespace_ = g.Pick<std::string>({"default", "default", "team-a", "kube-system"});
  p.meta.uid = "uid-" + p.meta.name;
  p.meta.labels[std::string(kApp)] = g.Pick<std::string>({"a", "b", "c"});
  int gpus = g.Chance(0.3) ? g.Pick<int>({1, 1, 2, 4}) : 0;
  std::string cpu = g.Pick<std::string>({"100m", "500m", "1", "2", "3", "6", "12"});
  std::string memory = g.Pick<std::string>({"128Mi", "1Gi", "4Gi", "12Gi", "40Gi"});
  p.containers.push_back({.name = "main", .requests = Res({{"cpu", cpu}, {"memory", memory}})});
  if (gpus > 0) p.containers[0].requests.Set(GpuId(), gpus);
  if (g.Chance(0.2)) {
    p.node_selector["pool-kind"] = PoolKinds()[static_cast<size_t>(g.Int(0, 3))].kind;
  }
  if (g.Chance(0.4)) {
    p.tolerations.push_back({std::string(kSpotKey), model::TolerationOp::kEqual, "spot",
                             model::TaintEffect::kNoSchedule, std::nullopt});
  }
  if (g.Chance(0.1)) p.priority = g.Pick<int>({-20, -10, 100});
  if (g.Chance(0.08)) {
    model::PodAffinityTerm t;
    t.topology_key = std::string(model::kLabelHostname);
    t.label_selector.match_labels[std::string(kApp)] = p.meta.labels[std::string(kApp)];
    t.has_label_selector = true;
    p.mutable_affinity().pod_anti_affinity_required.push_back(std::move(t));
  }
  int owner = g.Int(0, 9);
  if (owner <= 4) {
    AddOwner(p, "ReplicaSet");
  } else if (owner == 5) {
    AddOwner(p, "StatefulSet");
  } else if (owner == 6) {
    AddOwner(p, "Job", "batch/v1");
  } else if (owner == 7) {
    AddOwner(p, "PyTorchJob", "kubeflow.org/v1");
  }  // else: a bare pod
  if (g.Chance(0.08)) {
    p.meta.labels["scheduling.x-k8s.io/pod-group"] = g.Pick<std::string>({"g1", "g2"});
  }
  if (bound) {
    p.phase =
        g.Chance(0.9)
            ? model::PodPhase::kRunning
            : g.Pick<model::PodPhase>({model::PodPhase::kPending, model::PodPhase::kSucceeded});
    if (g.Chance(0.05)) p.meta.deletion_timestamp = Time{};
    // Training pods: most have a start time (consolidation weighs them), some checkpoint.
    if (g.Chance(0.85)) p.start_time = kNow - std::chrono::minutes(g.Int(0, 600));
    if (g.Chance(0.3)) {
      p.meta.annotations[std::string(kCheckpointIntervalAnnotation)] =
          g.Pick<std::string>({"10m", "1h", "bogus"});
    }
    if (g.Chance(0.1)) {
      p.meta.annotations[std::string(kSafeToEvictAnnotation)] = g.Chance(0.5) ? "true" : "false";
    }
    if (g.Chance(0.05)) p.meta.annotations[std::string(kDoNotDisruptAnnotation)] = "true";
    if (g.Chance(0.05)) p.meta.annotations["kubernetes.io/config.mirror"] = "x";
    if (g.Chance(0.1)) {
      model::Volume v;
      v.name = "scratch";
      int kind = g.Int(0, 3);
      v.kind = kind == 0   ? model::Volume::Kind::kHostPath
               : kind == 3 ? model::Volume::Kind::kPersistentVolumeClaim
                           : model::Volume::Kind::kEmptyDir;
      v.empty_dir_in_memory = kind == 2;
      p.volumes.push_back(v);
    }
  }
  return p;
}

Case Generate(uint64_t seed) {
  Gen g(seed);
  Case c;
  c.seed = seed;
  c.now = kNow;
  c.rate_limit = g.Chance(0.5);
  c.may_remove_all = g.Chance(0.7);
  auto& cfg = c.config;
  cfg.scale_up.expanders = g.Pick<std::vector<std::string>>(
      {{"priority", "least-waste"}, {"least-waste"}, {"price"}, {"most-pods"}, {"random"}});
  cfg.scale_up.max_nodes_per_scale_up = g.Chance(0.3) ? g.Int(1, 4) : 1000;
  cfg.scale_down.max_empty_bulk_delete = g.Int(1, 10);
  cfg.scale_down.max_non_empty_per_pool = g.Int(1, 3);
  cfg.scale_down.consolidation.replace = true;  // off by default; on here so it is exercised

  int npools = g.Int(1, 5);
  for (int i = 0; i < npools; ++i) {
    const PoolKind& kind = g.Pick(PoolKinds());
    model::Pool& pool = cfg.pools.emplace_back();
    pool.name = fmt::format("{}-{}", kind.kind, i);
    pool.min = g.Chance(0.7) ? 0 : g.Int(1, 2);
    pool.max = pool.min + g.Int(0, 6);
    pool.priority = g.Int(0, 3) * 10;
    pool.price_per_hour = g.Int(1, 20) / 4.0;
    bool spot = g.Chance(0.4);
    pool.capacity_type = spot ? model::CapacityType::kSpot : model::CapacityType::kOnDemand;
    model::Node& t = pool.template_node;
    t.meta.name = "template-" + pool.name;
    t.meta.labels[std::string(model::kLabelPool)] = pool.name;
    t.meta.labels["pool-kind"] = kind.kind;
    if (spot) t.taints.push_back({std::string(kSpotKey), "spot", model::TaintEffect::kNoSchedule});
    t.capacity = Res({{"cpu", kind.cpu}, {"memory", kind.memory}, {"pods", "110"}});
    if (kind.gpus != "0") t.capacity.Set(GpuId(), std::stoi(kind.gpus));
    t.allocatable = t.capacity;
    t.ready = true;
    if (g.Chance(0.2)) c.upcoming[pool.name] = g.Int(1, 2);
    if (g.Chance(0.1)) c.backoff_until[pool.name] = c.now + std::chrono::minutes(5);
  }

  // Nodes: per pool up to max + 1 (a pool may already be over its max), plus unmanaged ones.
  int node_index = 0;
  for (const model::Pool& pool : cfg.pools) {
    int n = g.Int(0, pool.max + 1);
    for (int k = 0; k < n; ++k) {
      model::Node node = pool.template_node;
      node.meta.name = fmt::format("n{}", node_index++);
      node.meta.labels[std::string(model::kLabelHostname)] = node.meta.name;
      node.meta.creation_timestamp =
          c.now - (g.Chance(0.85) ? std::chrono::hours(1) : std::chrono::minutes(2));
      node.ready = g.Chance(0.95);
      if (g.Chance(0.05)) node.unschedulable = true;
      if (g.Chance(0.05)) {
        node.taints.push_back(
            {std::string(kToBeDeletedTaint), "1", model::TaintEffect::kNoSchedule});
      }
      if (g.Chance(0.05)) node.meta.annotations[std::string(kScaleDownDisabledAnnotation)] = "true";
      c.nodes.push_back(std::move(node));
    }
  }
  for (int k = g.Int(0, 2); k > 0; --k) {
    model::Node node;
    node.meta.name = fmt::format("n{}", node_index++);
    node.meta.labels[std::string(model::kLabelHostname)] = node.meta.name;
    node.meta.creation_timestamp = c.now - std::chrono::hours(5);
    node.capacity = Res({{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}});
    node.allocatable = node.capacity;
    node.ready = true;
    c.nodes.push_back(std::move(node));
  }

  // Bound pods that fit their node (by resources; constraints of bound pods do not matter).
  int pod_index = 0;
  for (const model::Node& node : c.nodes) {
    model::Resources used;
    for (int k = g.Int(0, 4); k > 0; --k) {
      Pod p = RandomPod(g, pod_index++, /*bound=*/true);
      if (g.Chance(0.15)) {  // a DaemonSet pod
        p.meta.owner_references.clear();
        AddOwner(p, "DaemonSet");
      }
      p.node_name = node.meta.name;
      p.Finalize();
      model::Resources after = used;
      after += p.requests;
      bool fits = true;
      p.requests.ForEach([&](model::ResourceId id, int64_t) {
        if (after.Get(id) > node.allocatable.Get(id)) fits = false;
      });
      if (!fits) continue;
      used = after;
      c.pods.push_back(std::move(p));
    }
  }
  for (int k = g.Int(0, 16); k > 0; --k) {
    Pod p = RandomPod(g, pod_index++, /*bound=*/false);
    if (g.Chance(0.1)) p.meta.annotations[std::string(kGangSizeAnnotation)] = "3";
    p.Finalize();
    c.pods.push_back(std::move(p));
  }

  for (int k = g.Int(0, 2); k > 0; --k) {
    model::DaemonSet& ds = c.daemon_sets.emplace_back();
    ds.meta.name = fmt::format("ds{}", k);
    ds.meta.namespace_ = "kube-system";
    Pod& t = ds.pod_template;
    t.meta.name = ds.meta.name;
    t.meta.namespace_ = "kube-system";
    AddOwner(t, "DaemonSet");
    t.containers.push_back(
        {.name = "agent", .requests = Res({{"cpu", "200m"}, {"memory", "256Mi"}})});
    if (g.Chance(0.5)) t.node_selector["pool-kind"] = g.Pick<std::string>({"gpu", "heavy"});
    if (g.Chance(0.5))
      t.tolerations.push_back({"", model::TolerationOp::kExists, "", std::nullopt, std::nullopt});
    t.Finalize();
  }

  for (int k = g.Int(0, 3); k > 0; --k) {
    model::PodDisruptionBudget& b = c.pdbs.emplace_back();
    b.meta.name = fmt::format("pdb{}", k);
    b.meta.namespace_ = g.Pick<std::string>({"default", "team-a", "kube-system"});
    b.selector = model::LabelSelector{};
    if (g.Chance(0.9))
      b.selector->match_labels[std::string(kApp)] = g.Pick<std::string>({"a", "b", "c"});
    int form = g.Int(0, 4);
    if (form == 0) {
      b.disruptions_allowed = g.Int(0, 2);
    } else if (form == 1) {
      b.min_available = model::IntOrPercent{g.Int(0, 3), false};
    } else if (form == 2) {
      b.max_unavailable = model::IntOrPercent{g.Int(0, 2), false};
    } else if (form == 3) {
      b.min_available = model::IntOrPercent{g.Pick<int>({30, 50, 80}), true};
    } else {
      b.max_unavailable = model::IntOrPercent{g.Pick<int>({10, 34, 50}), true};
    }
  }

  // Cluster limits, sometimes tight.
  if (g.Chance(0.4)) {
    int total = static_cast<int>(c.nodes.size());
    for (const auto& [pool, n] : c.upcoming) total += n;
    cfg.limits.max_nodes = total + g.Int(-1, 4);
  }
  for (model::ResourceId id : {model::kCpu, model::kMemory, GpuId()}) {
    if (!g.Chance(0.3)) continue;
    model::Resources cap;
    for (const auto& n : c.nodes) cap += n.capacity;
    int64_t have = cap.Get(id);
    int64_t unit = id == model::kCpu ? 8000 : id == model::kMemory ? (int64_t{64} << 30) : 2;
    cfg.limits.resources.Set(id, std::max<int64_t>(0, have + unit * g.Int(-1, 4)));
    cfg.limits.limited.push_back(id);
  }
  return c;
}

// ---- Oracles ---------------------------------------------------------------------------------

// Human-readable summary of a case, for failures.
std::string Describe(const Case& c) {
  std::string out =
      fmt::format("seed {} (rate_limit {}, may_remove_all {}, maxNodesPerScaleUp {})\n", c.seed,
                  c.rate_limit, c.may_remove_all, c.config.scale_up.max_nodes_per_scale_up);
  if (c.config.limits.max_nodes)
    out += fmt::format("limits.maxNodes {}\n", *c.config.limits.max_nodes);
  for (model::ResourceId id : c.config.limits.limited) {
    out += fmt::format("limits.{} {}\n", model::ResourceName(id),
                       model::FormatAmount(id, c.config.limits.resources.Get(id)));
  }
  for (const auto& p : c.config.pools) {
    out += fmt::format("pool {} min {} max {} upcoming {} taints {} cpu {} gpu {}\n", p.name, p.min,
                       p.max, c.upcoming.contains(p.name) ? c.upcoming.at(p.name) : 0,
                       p.template_node.taints.size(), p.template_node.capacity.cpu_milli(),
                       p.template_node.capacity.gpus());
  }
  for (const auto& n : c.nodes) {
    const std::string* pool = n.meta.Label(model::kLabelPool);
    out += fmt::format("node {} pool {} ready {} unsched {} taints {}\n", n.meta.name,
                       pool ? *pool : "-", n.ready, n.unschedulable, n.taints.size());
  }
  for (const auto& p : c.pods) {
    std::string owner = p.meta.Controller() ? p.meta.Controller()->kind : "none";
    std::string ann;
    for (const auto& [k, v] : p.meta.annotations) ann += " " + k + "=" + v;
    out += fmt::format("pod {} node {} phase {} owner {} cpu {}m gpu {} labels app={}{}{}\n",
                       p.Key(), p.node_name.empty() ? "-" : p.node_name, static_cast<int>(p.phase),
                       owner, p.requests.cpu_milli(), p.requests.gpus(),
                       p.meta.labels.contains("app") ? p.meta.labels.at("app") : "", ann,
                       p.volumes.empty() ? "" : " volumes");
  }
  for (const auto& b : c.pdbs) {
    out += fmt::format("pdb {} allowed {} minAvailable {}{} maxUnavailable {}{}\n", b.meta.Key(),
                       b.disruptions_allowed ? std::to_string(*b.disruptions_allowed) : "-",
                       b.min_available ? std::to_string(b.min_available->value) : "-",
                       b.min_available && b.min_available->percent ? "%" : "",
                       b.max_unavailable ? std::to_string(b.max_unavailable->value) : "-",
                       b.max_unavailable && b.max_unavailable->percent ? "%" : "");
  }
  return out;
}

std::string PoolLabel(const model::Node& n) {
  const std::string* p = n.meta.Label(model::kLabelPool);
  return p ? *p : "";
}

// Disruptions a PDB allows, as the disruption controller computes them.
int32_t Allowed(const model::PodDisruptionBudget& b, const std::vector<Pod>& pods) {
  if (b.disruptions_allowed) return std::max(0, *b.disruptions_allowed);
  int32_t expected = 0, healthy = 0;
  for (const Pod& p : pods) {
    if (p.IsTerminal() || !b.Selects(p.meta)) continue;
    ++expected;
    if (p.phase == model::PodPhase::kRunning && !p.meta.deletion_timestamp) ++healthy;
  }
  int32_t desired = 0;
  if (b.max_unavailable) {
    const auto& m = *b.max_unavailable;
    int32_t unavailable = m.percent ? (expected * m.value + 99) / 100 : m.value;
    desired = expected - unavailable;
  } else if (b.min_available) {
    const auto& m = *b.min_available;
    desired = m.percent ? (expected * m.value + 99) / 100 : m.value;
  }
  return std::max(0, healthy - desired);
}

bool Annotated(const Pod& p, std::string_view key, std::string_view value) {
  const std::string* v = p.meta.Annotation(key);
  return v != nullptr && *v == value;
}

// Why draining may not move `p` (a pod on a node the plan removes), or "" when it may. Written
// from the documented rules (docs/annotations.md, "Pods (read)").
std::string NotMovable(const Pod& p, const std::vector<model::PodDisruptionBudget>& pdbs) {
  if (p.IsTerminal() || p.meta.deletion_timestamp) return "";  // holds nothing
  if (p.IsDaemonSetPod() || p.IsMirrorPod()) return "";        // goes with the node
  if (Annotated(p, kDoNotDisruptAnnotation, "true")) return "do-not-disrupt";
  if (Annotated(p, kSafeToEvictAnnotation, "false")) return "safe-to-evict=false";
  if (Annotated(p, kSafeToEvictAnnotation, "true")) return "";
  const model::OwnerReference* owner = p.meta.Controller();
  if (owner == nullptr) return "bare pod";
  bool training = p.meta.labels.contains("scheduling.x-k8s.io/pod-group") || owner->kind == "Job" ||
                  owner->api_version.starts_with("kubeflow.org/");
  // A running training pod moves only when consolidation says it pays (CheckConsolidation).
  if (training && p.phase == model::PodPhase::kRunning && !p.start_time) {
    return "running training pod without a start time";
  }
  if (training && p.phase == model::PodPhase::kRunning &&
      Annotated(p, kCheckpointIntervalAnnotation, "bogus")) {
    return "running training pod with a malformed checkpoint interval";
  }
  for (const model::Volume& v : p.volumes) {
    if (v.kind == model::Volume::Kind::kHostPath) return "hostPath volume";
    if (v.kind == model::Volume::Kind::kEmptyDir && !v.empty_dir_in_memory) return "emptyDir";
  }
  if (p.meta.namespace_ == "kube-system") {
    bool covered = std::any_of(pdbs.begin(), pdbs.end(), [&](const auto& b) {
      return b.meta.namespace_ == p.meta.namespace_ && b.Selects(p.meta);
    });
    if (!covered) return "kube-system pod without a PDB";
  }
  return "";
}

// A removal that evicts running training pods: consolidation's verdict says it pays, with
// savings less the destinations' extension above safety x work lost, within node price x
// maxHorizon, and never below safety x runtime x the price of what a pod without checkpoint
// information holds.
std::string CheckConsolidation(const Case& c, const ScaleDown& sd, const model::Node& node) {
  const model::ConsolidationConfig& cfg = c.config.scale_down.consolidation;
  std::vector<const Pod*> training;
  for (const Pod& p : c.pods) {
    if (p.node_name != sd.node || p.phase != model::PodPhase::kRunning ||
        p.meta.deletion_timestamp || !IsTrainingPod(p) || p.IsDaemonSetPod() || p.IsMirrorPod() ||
        Annotated(p, kSafeToEvictAnnotation, "true")) {
      continue;
    }
    training.push_back(&p);
  }
  if (training.empty()) return "";
  if (!sd.consolidation) return "node " + sd.node + " evicts training pods without a verdict";
  const ConsolidationVerdict& v = *sd.consolidation;
  if (v.decision != ConsolidationDecision::kPays || v.extension < 0 ||
      !(v.savings - v.extension > cfg.safety_factor * v.work_lost)) {
    return fmt::format("node {} removed although consolidation {}: savings {} work lost {}",
                       sd.node, ConsolidationDecisionName(v.decision), v.savings, v.work_lost);
  }
  double price = c.config.FindPool(PoolLabel(node))->price_per_hour;
  double hours = std::chrono::duration<double, std::ratio<3600>>(cfg.max_horizon).count();
  if (v.savings > price * hours + 1e-9) return "node " + sd.node + " saves beyond maxHorizon";
  for (const Pod* p : training) {
    if (p->meta.Annotation(kCheckpointIntervalAnnotation) != nullptr) continue;
    double ran = std::chrono::duration<double, std::ratio<3600>>(c.now - *p->start_time).count();
    int64_t node_gpus = node.allocatable.Get(GpuId()), pod_gpus = p->requests.Get(GpuId());
    double share = pod_gpus > 0 && node_gpus > 0
                       ? static_cast<double>(pod_gpus) / static_cast<double>(node_gpus)
                       : std::max(static_cast<double>(p->requests.cpu_milli()) /
                                      static_cast<double>(node.allocatable.cpu_milli()),
                                  static_cast<double>(p->requests.memory()) /
                                      static_cast<double>(node.allocatable.memory()));
    if (v.savings + 1e-9 < cfg.safety_factor * ran * price * std::min(1.0, share)) {
      return fmt::format("node {}: pod {} ran {:.2f}h without checkpoints, evicted for {} saved",
                         sd.node, p->Key(), ran, v.savings);
    }
  }
  return "";
}

// A replace move: one node of a cheaper pool, which may grow (not in backoff, below its max with
// every replacement of the plan), takes pods of the node that it holds by their total requests,
// all of them evicted. One new node for several nodes (a replacement group): every member is
// removed by the plan with the same pool, the new node is cheaper than all of them together, and it
// holds the replaced pods of all of them; it counts once.
std::string CheckReplacement(const Case& c, const ScaleDownPlan& plan, const ScaleDown& sd,
                             const model::Pool& pool, std::map<std::string, int>& replacements) {
  if (sd.replacement_pool.empty()) {
    return sd.replacement_pods.empty() && sd.replacement_group.empty()
               ? ""
               : "node " + sd.node + " has replacement pods or a group only";
  }
  const model::Pool* to = c.config.FindPool(sd.replacement_pool);
  if (to == nullptr) return "node " + sd.node + " replaced by unknown pool " + sd.replacement_pool;
  std::vector<const ScaleDown*> members = {&sd};
  double price = pool.price_per_hour;
  if (!sd.replacement_group.empty()) {
    if (sd.replacement_group.size() < 2) return "node " + sd.node + " in a group of one";
    members.clear();
    price = 0;
    for (const std::string& name : sd.replacement_group) {
      auto m = std::find_if(plan.scale_downs.begin(), plan.scale_downs.end(),
                            [&](const ScaleDown& o) { return o.node == name; });
      if (m == plan.scale_downs.end() || m->replacement_group != sd.replacement_group ||
          m->replacement_pool != sd.replacement_pool) {
        return fmt::format("node {}: group member {} not removed with the same group and pool",
                           sd.node, name);
      }
      const model::Pool* mp = c.config.FindPool(m->pool);
      if (mp == nullptr) return "group member " + name + " of unknown pool";
      price += mp->price_per_hour;
      members.push_back(&*m);
    }
    if (sd.replacement_group.front() != sd.node) return "";  // the group checked at its first
  }
  if (to->price_per_hour >= price) {
    return fmt::format("node {} (${}/h with its group) replaced by pool {} at ${}/h", sd.node,
                       price, to->name, to->price_per_hour);
  }
  if (auto it = c.backoff_until.find(to->name); it != c.backoff_until.end() && it->second > c.now) {
    return "node " + sd.node + " replaced by pool " + to->name + " in backoff";
  }
  int size =
      ++replacements[to->name] + (c.upcoming.contains(to->name) ? c.upcoming.at(to->name) : 0);
  for (const auto& n : c.nodes) {
    bool deleting = std::any_of(n.taints.begin(), n.taints.end(),
                                [](const auto& t) { return t.key == kToBeDeletedTaint; });
    if (PoolLabel(n) == to->name && !deleting) ++size;
  }
  if (size > to->max)
    return fmt::format("pool {} grows past its max {} by replacements", to->name, to->max);
  model::Resources need;
  for (const ScaleDown* m : members) {
    if (m->replacement_pods.empty()) return "node " + m->node + " replaced for no pod";
    for (const std::string& key : m->replacement_pods) {
      if (std::find(m->evict.begin(), m->evict.end(), key) == m->evict.end()) {
        return "node " + m->node + ": replacement pod " + key + " not evicted";
      }
      for (const Pod& p : c.pods)
        if (p.Key() == key) need += p.requests;
    }
  }
  const model::Resources& have = to->template_node.allocatable;
  for (model::ResourceId id : {model::kCpu, model::kMemory, GpuId()}) {
    if (need.Get(id) > have.Get(id)) {
      return fmt::format("node {}: its replacement of pool {} holds {} {}, its pods need {}",
                         sd.node, to->name, model::FormatAmount(id, have.Get(id)),
                         model::ResourceName(id), model::FormatAmount(id, need.Get(id)));
    }
  }
  return "";
}

// Checks every scale-down property; returns "" or what failed.
// Every live node of a snapshot with its requests and pods, in name order.
std::string RenderSnapshot(const sched::ClusterSnapshot& s) {
  std::map<std::string, std::string> nodes;
  for (sched::NodeIndex i = 0; i < s.NodeSlots(); ++i) {
    const sched::NodeInfo& info = s.Get(i);
    if (info.removed) continue;
    std::vector<std::string> pods;
    for (const Pod* p : info.pods) pods.push_back(p->Key());
    std::sort(pods.begin(), pods.end());
    nodes[info.node->name()] = fmt::format("{:p} {} [{}]", static_cast<const void*>(info.node),
                                           info.requested.ToString(), fmt::join(pods, " "));
  }
  std::string out;
  for (const auto& [name, line] : nodes) out += name + ": " + line + "\n";
  return out;
}

std::string CheckScaleDown(const Case& c) {
  PlannerInput in = c.Input();
  ScaleDownOptions options;
  options.rate_limit = c.rate_limit;
  if (!c.may_remove_all) {
    options.may_remove = [](const model::Node& n) { return (n.meta.name.back() - '0') % 2 == 0; };
  }
  ScaleDownPlan plan = ScaleDownPlanner().Plan(in, options);

  std::map<std::string, const model::Node*> node_by_name;
  for (const auto& n : c.nodes) node_by_name.emplace(n.meta.name, &n);
  std::set<std::string> removed;
  std::map<std::string, int> removed_per_pool;
  std::map<std::string, std::vector<std::string>> evicted_from;
  std::set<std::string> moving_to_nodes_left;  // evicted, and not onto a replacement
  std::map<std::string, int> replacements;     // new nodes per pool
  for (const ScaleDown& sd : plan.scale_downs) {
    if (!removed.insert(sd.node).second) return "node " + sd.node + " removed twice";
    auto it = node_by_name.find(sd.node);
    if (it == node_by_name.end()) return "removes unknown node " + sd.node;
    const model::Node& node = *it->second;
    std::string pool = PoolLabel(node);
    const model::Pool* cfg_pool = c.config.FindPool(pool);
    if (cfg_pool == nullptr) return "removes unmanaged node " + sd.node;
    if (sd.pool != pool) return "node " + sd.node + " reported in pool " + sd.pool;
    for (const auto& t : node.taints) {
      if (t.key == kToBeDeletedTaint) return "removes node " + sd.node + " already being deleted";
    }
    if (const std::string* v = node.meta.Annotation(kScaleDownDisabledAnnotation);
        v != nullptr && *v == "true") {
      return "removes node " + sd.node + " annotated scale-down-disabled";
    }
    if (*node.meta.creation_timestamp + c.config.scale_down.delay_after_add > c.now) {
      return "removes node " + sd.node + " younger than delayAfterAdd";
    }
    if (!c.may_remove_all && !options.may_remove(node)) {
      return "removes node " + sd.node + " that may_remove refused";
    }
    ++removed_per_pool[pool];
    // Non-movable pods, and every pod that must move is listed for eviction.
    std::set<std::string> evict(sd.evict.begin(), sd.evict.end());
    for (const Pod& p : c.pods) {
      if (p.node_name != sd.node) continue;
      if (std::string why = NotMovable(p, c.pdbs); !why.empty()) {
        return fmt::format("removes node {} holding non-movable pod {} ({})", sd.node, p.Key(),
                           why);
      }
      bool must_move =
          !p.IsTerminal() && !p.meta.deletion_timestamp && !p.IsDaemonSetPod() && !p.IsMirrorPod();
      if (must_move != evict.contains(p.Key())) {
        return fmt::format("node {}: pod {} {} in the eviction list", sd.node, p.Key(),
                           must_move ? "missing" : "wrongly");
      }
    }
    if (evict.size() != sd.evict.size()) return "node " + sd.node + ": duplicate evictions";
    if (std::string why = CheckConsolidation(c, sd, node); !why.empty()) return why;
    if (std::string why = CheckReplacement(c, plan, sd, *cfg_pool, replacements); !why.empty()) {
      return why;
    }
    std::set<std::string> replaced(sd.replacement_pods.begin(), sd.replacement_pods.end());
    for (const std::string& key : sd.evict) {
      evicted_from[key].push_back(sd.node);
      if (!replaced.contains(key)) moving_to_nodes_left.insert(key);
    }
  }
  // Pool minimums: counting nodes that are not already being deleted.
  for (const auto& [pool, n] : removed_per_pool) {
    int have = 0;
    for (const auto& node : c.nodes) {
      bool deleting = std::any_of(node.taints.begin(), node.taints.end(),
                                  [](const auto& t) { return t.key == kToBeDeletedTaint; });
      if (PoolLabel(node) == pool && !deleting) ++have;
    }
    int min = c.config.FindPool(pool)->min;
    if (have - n < min)
      return fmt::format("pool {} goes from {} to {} nodes, below min {}", pool, have, have - n,
                         min);
  }
  // PDBs, counted over the whole plan.
  for (const auto& b : c.pdbs) {
    int32_t allowed = Allowed(b, c.pods);
    int32_t planned = 0;
    for (const Pod& p : c.pods) {
      if (p.meta.namespace_ == b.meta.namespace_ && b.Selects(p.meta) &&
          evicted_from.contains(p.Key()))
        ++planned;
    }
    if (planned > allowed) {
      return fmt::format("PDB {} allows {} disruption(s), the plan evicts {}", b.meta.Key(),
                         allowed, planned);
    }
  }
  // The removed nodes' pods fit, by total free resources, on the ready schedulable nodes left.
  model::Resources free, moving;
  for (const auto& node : c.nodes) {
    bool deleting = std::any_of(node.taints.begin(), node.taints.end(),
                                [](const auto& t) { return t.key == kToBeDeletedTaint; });
    if (removed.contains(node.meta.name) || !node.ready || node.unschedulable || deleting) continue;
    free += node.allocatable;
    for (const Pod& p : c.pods)
      if (p.node_name == node.meta.name && !p.IsTerminal()) free -= p.requests;
  }
  for (const Pod& p : c.pods)
    if (moving_to_nodes_left.contains(p.Key())) moving += p.requests;
  for (model::ResourceId id : {model::kCpu, model::kMemory, GpuId()}) {
    if (moving.Get(id) > 0 && moving.Get(id) > free.Get(id)) {
      return fmt::format("evicted pods need {} {} but the nodes left have {} free",
                         model::FormatAmount(id, moving.Get(id)), model::ResourceName(id),
                         model::FormatAmount(id, free.Get(id)));
    }
  }
  return "";
}

// Checks every scale-up property; returns "" or what failed.
std::string CheckScaleUp(const Case& c) {
  PlannerInput in = c.Input();
  ScaleUpPlan plan = ScaleUpPlanner().Plan(in);
  const auto& cfg = c.config;

  std::map<std::string, const Pod*> pod_by_key;
  for (const Pod& p : c.pods) pod_by_key.emplace(p.Key(), &p);

  // The cluster as the scale-up starts from: registered nodes and their pods.
  sched::ClusterSnapshot snapshot;
  for (const auto& n : c.nodes) (void)snapshot.AddNode(&n);
  for (const Pod& p : c.pods)
    if (!p.node_name.empty() && !p.IsTerminal()) (void)snapshot.AddPod(&p, p.node_name);

  int total_nodes = 0, total_added = 0;
  model::Resources capacity;
  for (const auto& n : c.nodes) {
    if (n.meta.deletion_timestamp) continue;
    ++total_nodes;
    capacity += n.capacity;
  }
  for (const auto& [pool, k] : c.upcoming) {
    total_nodes += k;
    for (int i = 0; i < k; ++i) capacity += cfg.FindPool(pool)->template_node.capacity;
  }
  std::set<model::ResourceId> grown;  // limited resources some added node has
  std::set<std::string> planned;
  for (const ScaleUp& up : plan.scale_ups) {
    const model::Pool* pool = cfg.FindPool(up.pool);
    if (pool == nullptr) return "scale-up of unknown pool " + up.pool;
    if (up.add <= 0) return fmt::format("pool {}: add {}", up.pool, up.add);
    if (c.backoff_until.contains(up.pool)) return "pool " + up.pool + " grows while in backoff";
    int current = c.upcoming.contains(up.pool) ? c.upcoming.at(up.pool) : 0;
    for (const auto& n : c.nodes)
      if (!n.meta.deletion_timestamp && PoolLabel(n) == up.pool) ++current;
    if (current + up.add > pool->max) {
      return fmt::format("pool {} has {} nodes (with upcoming), adds {}, max {}", up.pool, current,
                         up.add, pool->max);
    }
    total_added += up.add;
    for (int i = 0; i < up.add; ++i) capacity += pool->template_node.capacity;
    for (model::ResourceId id : cfg.limits.limited)
      if (pool->template_node.capacity.Get(id) > 0) grown.insert(id);

    // Every pod said to go on the new nodes fits the template by sched/, with its DaemonSets.
    const model::Node& tmpl = pool->template_node;
    std::vector<const Pod*> ds = DaemonSetPodsFor(tmpl, in.daemon_sets);
    model::Resources ds_requests;
    for (const Pod* d : ds) ds_requests += d->requests;
    model::Resources sum;
    for (int i = 0; i < up.add; ++i) sum += ds_requests;
    for (const std::string& key : up.pods) {
      auto it = pod_by_key.find(key);
      if (it == pod_by_key.end()) return "scale-up for unknown pod " + key;
      const Pod& p = *it->second;
      if (!IsPendingForScaleUp(p, cfg.scale_up.expendable_priority_cutoff)) {
        return "scale-up for pod " + key + " that is not pending (or expendable)";
      }
      if (!planned.insert(key).second) return "pod " + key + " in two scale-ups";
      sched::FitChecker checker(p, snapshot);
      sched::FitResult r = checker.CheckTemplate(tmpl, ds_requests, static_cast<int>(ds.size()));
      if (!r.fits()) {
        return fmt::format("pod {} planned on pool {} does not fit its template: {}", key, up.pool,
                           r.reason);
      }
      sum += p.requests;
    }
    // Together, the pods and DaemonSets fit the added nodes' allocatable.
    for (model::ResourceId id : {model::kCpu, model::kMemory, GpuId()}) {
      if (sum.Get(id) > tmpl.allocatable.Get(id) * up.add) {
        return fmt::format("pool {}: {} new node(s) get {} {} of requests", up.pool, up.add,
                           model::FormatAmount(id, sum.Get(id)), model::ResourceName(id));
      }
    }
  }
  if (total_added > 0 && cfg.limits.max_nodes &&
      total_nodes + total_added > *cfg.limits.max_nodes) {
    return fmt::format("cluster grows to {} nodes, limits.maxNodes {}", total_nodes + total_added,
                       *cfg.limits.max_nodes);
  }
  for (model::ResourceId id : grown) {
    if (capacity.Get(id) > cfg.limits.resources.Get(id)) {
      return fmt::format("cluster {} grows to {}, limit {}", model::ResourceName(id),
                         model::FormatAmount(id, capacity.Get(id)),
                         model::FormatAmount(id, cfg.limits.resources.Get(id)));
    }
  }
  if (total_added > cfg.scale_up.max_nodes_per_scale_up) {
    return fmt::format("one pass adds {} nodes, maxNodesPerScaleUp {}", total_added,
                       cfg.scale_up.max_nodes_per_scale_up);
  }
  // Gangs are all or nothing: no scale-up for a gang with a member left unschedulable.
  std::set<std::string> unschedulable;
  for (const auto& u : plan.unschedulable) unschedulable.insert(u.pod);
  std::map<std::string, std::pair<int, int>> gangs;  // gang -> (planned, unschedulable)
  for (const Pod& p : c.pods) {
    std::string gang = GangOf(p);
    if (gang.empty() || !IsPendingForScaleUp(p, cfg.scale_up.expendable_priority_cutoff)) continue;
    if (planned.contains(p.Key())) ++gangs[gang].first;
    if (unschedulable.contains(p.Key())) ++gangs[gang].second;
  }
  for (const auto& [gang, counts] : gangs) {
    if (counts.first > 0 && counts.second > 0) {
      return fmt::format("gang {}: {} member(s) get new nodes while {} are unschedulable", gang,
                         counts.first, counts.second);
    }
  }
  // A gang member that fits existing room is on a registered or an upcoming node, never on a node
  // the pass adds (for another gang: that member is one of its scale-up's pods).
  std::set<std::string> registered;
  for (const auto& n : c.nodes) registered.insert(n.meta.name);
  for (const auto& [pod, node] : plan.gang_nodes) {
    if (!registered.contains(node) && !node.starts_with(kUpcomingNodePrefix))
      return fmt::format("gang member {} fits existing room on {}, a node the pass adds", pod,
                         node);
  }
  // Every pending pod is accounted for exactly once.
  std::set<std::string> fits(plan.fits_existing.begin(), plan.fits_existing.end());
  for (const Pod& p : c.pods) {
    if (!IsPendingForScaleUp(p, cfg.scale_up.expendable_priority_cutoff)) continue;
    int n = planned.contains(p.Key()) + unschedulable.contains(p.Key()) + fits.contains(p.Key());
    if (n != 1) return fmt::format("pending pod {} appears {} times in the plan", p.Key(), n);
  }
  return "";
}

// Removes parts of a failing case while it still fails; returns the smallest found.
Case Shrink(Case c, const std::function<std::string(const Case&)>& check) {
  bool progress = true;
  while (progress) {
    progress = false;
    auto try_erase = [&](auto member) {
      auto& v = c.*member;
      for (size_t i = 0; i < v.size();) {
        Case smaller = c;
        auto& sv = smaller.*member;
        sv.erase(sv.begin() + static_cast<long>(i));
        if (!check(smaller).empty()) {
          c = std::move(smaller);
          progress = true;
        } else {
          ++i;
        }
      }
    };
    try_erase(&Case::pods);
    try_erase(&Case::pdbs);
    try_erase(&Case::daemon_sets);
    try_erase(&Case::nodes);
  }
  return c;
}

constexpr uint64_t kBaseSeed = 20260301;
constexpr int kCases = 5000;

void RunProperty(const char* name, const std::function<std::string(const Case&)>& check) {
  int failures = 0;
  for (int i = 0; i < kCases && failures < 3; ++i) {
    Case c = Generate(kBaseSeed + static_cast<uint64_t>(i));
    std::string why = check(c);
    if (why.empty()) continue;
    ++failures;
    Case small = Shrink(c, check);
    ADD_FAILURE() << name << " property failed for seed " << c.seed << ": " << why
                  << "\nshrunk case: " << check(small) << "\n"
                  << Describe(small);
  }
}

TEST(PlannerProperties, ScaleUpRespectsLimitsAndTemplates) {
  RunProperty("scale-up", CheckScaleUp);
}

TEST(PlannerProperties, ScaleDownRespectsPdbsAndNonMovablePods) {
  RunProperty("scale-down", CheckScaleDown);
}

// A run's second pass (the unneeded nodes Plan lists after its rate-limited pass) finds what a
// fresh run's unrestricted pass removes: a pass leaves nothing behind for the next, such as the
// pods it moved onto a node.
std::string CheckSecondPassIsFresh(const Case& c) {
  PlannerInput in = c.Input();
  ScaleDownOptions limited;
  if (!c.may_remove_all) {
    limited.may_remove = [](const model::Node& n) { return (n.meta.name.back() - '0') % 2 == 0; };
  }
  std::vector<std::string> unneeded;
  ScaleDownPlanner().Plan(in, limited, &unneeded);
  ScaleDownOptions all;
  all.rate_limit = false;
  std::vector<std::string> fresh;
  for (const ScaleDown& sd : ScaleDownPlanner().Plan(in, all).scale_downs) fresh.push_back(sd.node);
  if (unneeded == fresh) return "";
  return fmt::format("second pass: {}; fresh pass: {}", fmt::join(unneeded, " "),
                     fmt::join(fresh, " "));
}

TEST(PlannerProperties, ARunsSecondPassFindsWhatAFreshPassFinds) {
  RunProperty("second pass", CheckSecondPassIsFresh);
}

// A run whose pass may remove only some nodes reads a candidate's pods when the pass reaches it
// (RunOptions::pods_when_reached). It removes what a run that read them all up front removes, with
// the same evictions, and says the same of every node the pass may remove.
std::string CheckPodsWhenReached(const Case& c) {
  PlannerInput in = c.Input();
  const std::function<bool(const model::Node&)> even = [](const model::Node& n) {
    return (n.meta.name.back() - '0') % 2 == 0;
  };
  scale_down_detail::PassOptions pass;
  pass.rate_limit = c.rate_limit;
  pass.may_remove = &even;
  auto render = [&](bool when_reached) {
    scale_down_detail::ScaleDownRun run(in, {.pods_when_reached = when_reached});
    ScaleDownPlan plan = run.RunPass(pass).plan;
    std::string out;
    for (const ScaleDown& sd : plan.scale_downs)
      out += fmt::format("remove {} [{}]\n", sd.node, fmt::join(sd.evict, " "));
    for (const Keep& k : plan.keep) {
      const model::Node* node = nullptr;
      for (const model::Node& n : c.nodes)
        if (n.meta.name == k.node) node = &n;
      if (node != nullptr && even(*node)) out += fmt::format("keep {}: {}\n", k.node, k.Reason());
    }
    return out;
  };
  std::string eager = render(false), lazy = render(true);
  if (eager == lazy) return "";
  return "read up front:\n" + eager + "read when reached:\n" + lazy;
}

TEST(PlannerProperties, PodsReadWhenReachedDecideAsPodsReadUpFront) {
  RunProperty("pods read when reached", CheckPodsWhenReached);
}

// A case as a driver's cluster model holds it, and two inputs on it: `forked` carries the model,
// `built` does not. The inputs see some nodes otherwise than the model holds them, as the loop's
// do: a copy with the deletion taint, one left out (gone), and now and then a node the model does
// not know (a pass then builds its own snapshot). The model got its nodes in a random order, and
// some twice (a changed node moves to a new slot), so its slots are not the input's order.
struct ModelledCase {
  Case c;
  sched::ClusterModel model;
  std::deque<model::Node> copies;
  PlannerInput built, forked;
  RuntimeHints hints;  // both inputs', learned between passes (ApplyRandomDeltas)
};

std::unique_ptr<ModelledCase> Modelled(const Case& original) {
  Gen g(original.seed ^ 0x5eedull);
  auto m = std::make_unique<ModelledCase>();
  // Some pods keep away from their app per pool, so that pods on nodes the input leaves out
  // would change where others may go if the pass kept those nodes.
  m->c = original;
  for (Pod& p : m->c.pods) {
    if (!g.Chance(0.15)) continue;
    model::PodAffinityTerm t;
    t.topology_key = std::string(model::kLabelPool);
    t.label_selector.match_labels[std::string(kApp)] = p.meta.labels[std::string(kApp)];
    t.has_label_selector = true;
    p.mutable_affinity().pod_anti_affinity_required.push_back(std::move(t));
    p.Finalize();
  }
  // The case owns its objects; the model only points at them.
  auto borrow = [](const auto* object) { return sched::ClusterModel::Borrow(object); };
  m->built = m->c.Input();
  m->built.runtime_hints = &m->hints;
  m->forked = m->built;
  auto tainted = [&](const model::Node& n) -> const model::Node* {
    model::Node& copy = m->copies.emplace_back(n);
    copy.taints.push_back({std::string(kToBeDeletedTaint), "", model::TaintEffect::kNoSchedule});
    return &copy;
  };
  m->forked.nodes.clear();
  std::vector<const model::Node*> held;
  bool unknown = g.Chance(0.1);  // the model misses the first node
  for (const model::Node& n : m->c.nodes) {
    // Adopted: the model holds the node with the deletion taint, the input sees it without.
    const model::Node* h = g.Chance(0.1) ? tainted(n) : &n;
    if (!std::exchange(unknown, false)) held.push_back(h);
    if (g.Chance(0.1)) continue;  // gone: the model has it, the input leaves it out
    // Being removed: the input sees a copy with the deletion taint.
    m->forked.nodes.push_back(h == &n && g.Chance(0.15) ? tainted(n) : &n);
  }
  for (size_t i = held.size(); i > 1; --i) {
    std::swap(held[i - 1], held[static_cast<size_t>(g.Int(0, static_cast<int>(i) - 1))]);
  }
  for (const model::Node* n : held) {
    TIDEPOOL_CHECK(m->model.SetNode(borrow(n)).has_value());
    if (g.Chance(0.1)) TIDEPOOL_CHECK(m->model.SetNode(borrow(n)).has_value());
  }
  for (const Pod& p : m->c.pods) TIDEPOOL_CHECK(m->model.SetPod(borrow(&p)).has_value());
  m->built.nodes = m->forked.nodes;
  m->forked.model = &m->model;
  m->forked.unbound = m->model.Unbound();  // as the loop takes them, in key order
  return m;
}

// A planning pass that forks the model plans what one that builds its snapshot plans (`plan`
// renders the plan), and leaves the model as it found it.
std::string PlansBothWaysAlike(ModelledCase& m,
                               const std::function<std::string(const PlannerInput&)>& plan) {
  const std::string before = RenderSnapshot(m.model.snapshot());
  std::string want = plan(m.built);
  std::string got = plan(m.forked);
  if (got != want) return "forked the model:\n" + got + "\nbuilt a snapshot:\n" + want;
  if (m.model.snapshot().Depth() != 0) return "the pass left a layer of the model open";
  if (RenderSnapshot(m.model.snapshot()) != before) return "the pass changed the model";
  return "";
}

std::string CheckScaleDownOnTheModel(const Case& original) {
  std::unique_ptr<ModelledCase> m = Modelled(original);
  ScaleDownOptions options;
  options.rate_limit = m->c.rate_limit;
  return PlansBothWaysAlike(*m, [&](const PlannerInput& in) {
    return PlanToJson({}, ScaleDownPlanner().Plan(in, options)).dump(1);
  });
}

TEST(PlannerProperties, ScaleDownOnTheClusterModelPlansWhatABuiltSnapshotPlans) {
  RunProperty("scale-down on the model", CheckScaleDownOnTheModel);
}

// Deltas between two passes, as a driver feeds them: pods moved to another node, finished,
// unbound or deleted; nodes changed (a new slot); a runtime learned for an owner, and time going
// on, within the weigh minute or past it (delayAfterAdd and the training pods' verdicts change
// with them, and the memo keeps those only for one weigh minute and version of the hints).
void ApplyRandomDeltas(Gen& g, ModelledCase& m) {
  auto borrow = [](const auto* object) { return sched::ClusterModel::Borrow(object); };
  const int changes = g.Int(0, 4);
  for (int k = 0; k < changes && !m.c.pods.empty(); ++k) {
    Pod& pod = m.c.pods[static_cast<size_t>(g.Int(0, static_cast<int>(m.c.pods.size()) - 1))];
    const int what = g.Int(0, 4);
    if (what == 0 && !m.c.nodes.empty()) {
      pod.node_name =
          m.c.nodes[static_cast<size_t>(g.Int(0, static_cast<int>(m.c.nodes.size()) - 1))].name();
    } else if (what == 1) {
      pod.phase = model::PodPhase::kSucceeded;
    } else if (what == 2) {
      pod.node_name.clear();
    } else if (what == 3) {
      const model::Node* node = m.model.FindNode(pod.node_name);
      if (node != nullptr) TIDEPOOL_CHECK(m.model.SetNode(borrow(node)).has_value());
      continue;
    } else {
      // Deleted: gone from the model and both inputs (its object stays in the case, unread).
      if (m.model.FindPod(pod.meta.namespace_, pod.meta.name) == nullptr) continue;
      TIDEPOOL_CHECK(m.model.DeletePod(pod.meta.namespace_, pod.meta.name).has_value());
      for (PlannerInput* in : {&m.built, &m.forked}) std::erase(in->pods, &pod);
      continue;
    }
    if (m.model.FindPod(pod.meta.namespace_, pod.meta.name) == nullptr) continue;
    TIDEPOOL_CHECK(m.model.SetPod(borrow(&pod)).has_value());
  }
  m.forked.unbound = m.model.Unbound();
  std::vector<const Pod*> weighed;  // the pods whose horizon a learned runtime may set
  for (const Pod& p : m.c.pods)
    if (ConsolidationWeighs(p) && !RuntimeOwnerKey(p).empty()) weighed.push_back(&p);
  if (!weighed.empty() && g.Chance(0.6)) {
    const Pod& pod = *weighed[static_cast<size_t>(g.Int(0, static_cast<int>(weighed.size()) - 1))];
    m.hints.Set(RuntimeOwnerKey(pod), std::chrono::minutes(g.Int(1, 900)));
  }
  const Duration later = std::chrono::seconds(g.Int(0, 20 * 60));
  m.built.now += later;
  m.forked.now += later;
}

// Scale-up and scale-down on the model, with the memo and the slots' pools kept across passes,
// plan, pass after pass, what passes on a built snapshot plan, while deltas change some nodes
// between passes (and the second pass of a round, as the loop's, finds every node as the first
// left it).
std::string CheckScaleDownWithAMemo(const Case& original) {
  std::unique_ptr<ModelledCase> m = Modelled(original);
  ScaleDownMemo memo;
  m->forked.scale_down_memo = &memo;
  SlotPools slot_pools;
  m->forked.slot_pools = &slot_pools;
  Gen g(original.seed ^ 0x3e30ull);
  ScaleDownOptions options;
  options.rate_limit = m->c.rate_limit;
  auto plan = [&](const PlannerInput& in) {
    ScaleUpPlan up = ScaleUpPlanner().Plan(in);
    return PlanToJson(up, ScaleDownPlanner().Plan(in, options)).dump(1);
  };
  for (int round = 0; round < 4; ++round) {
    if (round > 0) ApplyRandomDeltas(g, *m);
    for (int pass = 0; pass < 2; ++pass) {
      if (std::string why = PlansBothWaysAlike(*m, plan); !why.empty()) {
        return fmt::format("round {}, pass {}: {}", round, pass, why);
      }
    }
  }
  return "";
}

TEST(PlannerProperties, ScaleDownWithAMemoAcrossDeltasPlansWhatAFreshPassPlans) {
  RunProperty("scale-down with a memo", CheckScaleDownWithAMemo);
}

// The memo keeps a node's facts only while the model's stamp of its slot stays, and forgets
// everything every kFullPassEvery passes and when the model is compacted.
TEST(ScaleDownMemo, KeepsWhileTheStampStaysAndForgetsOnSchedule) {
  Case c;
  c.config.pools.emplace_back().name = "p";
  for (int i = 0; i < 2; ++i) {
    model::Node& n = c.nodes.emplace_back();
    n.meta.name = fmt::format("n{}", i);
  }
  Pod& pod = c.pods.emplace_back();
  pod.meta.name = "a";
  pod.meta.namespace_ = "default";
  pod.node_name = "n0";
  pod.phase = model::PodPhase::kRunning;
  pod.Finalize();
  auto borrow = [](const auto* object) { return sched::ClusterModel::Borrow(object); };
  sched::ClusterModel model;
  for (const model::Node& n : c.nodes) ASSERT_TRUE(model.SetNode(borrow(&n)).has_value());
  ASSERT_TRUE(model.SetPod(borrow(&pod)).has_value());
  const sched::NodeIndex n0 = model.snapshot().FindNode("n0");
  const sched::NodeIndex n1 = model.snapshot().FindNode("n1");

  ScaleDownMemo memo;
  memo.Begin(model, c.config);
  ScaleDownMemo::Node* kept = memo.Keep(n0, &c.nodes[0]);
  ASSERT_NE(kept, nullptr);
  kept->own_read = true;
  ASSERT_NE(memo.Keep(n1, &c.nodes[1]), nullptr);
  EXPECT_EQ(memo.Keep(sched::NodeIndex{99}, &c.nodes[1]), nullptr);  // not the model's slot
  memo.Begin(model, c.config);
  ASSERT_NE(memo.Find(n0, &c.nodes[0]), nullptr);
  EXPECT_TRUE(memo.Find(n0, &c.nodes[0])->own_read);
  EXPECT_EQ(memo.Find(n0, &c.nodes[1]), nullptr);  // another object in the slot

  // The pod moves: both nodes' stamps change.
  pod.node_name = "n1";
  ASSERT_TRUE(model.SetPod(borrow(&pod)).has_value());
  EXPECT_EQ(memo.Find(n0, &c.nodes[0]), nullptr);
  EXPECT_EQ(memo.Find(n1, &c.nodes[1]), nullptr);
  ASSERT_NE(memo.Keep(n0, &c.nodes[0]), nullptr);
  EXPECT_NE(memo.Find(n0, &c.nodes[0]), nullptr);

  // The safety net: the pass after kFullPassEvery passes starts from nothing.
  while (memo.passes() < ScaleDownMemo::kFullPassEvery) memo.Begin(model, c.config);
  EXPECT_NE(memo.Find(n0, &c.nodes[0]), nullptr);
  memo.Begin(model, c.config);
  EXPECT_EQ(memo.passes(), 1u);
  EXPECT_EQ(memo.Find(n0, &c.nodes[0]), nullptr);

  // Another config forgets everything too.
  ASSERT_NE(memo.Keep(n0, &c.nodes[0]), nullptr);
  model::AutoscalerConfig other = c.config;
  memo.Begin(model, other);
  EXPECT_EQ(memo.Find(n0, &c.nodes[0]), nullptr);
}

// A kept slot holds what the pass read of the node object, and a model made where another one was
// (the same address, the same slots and stamps) is another model: the memo forgets the first's.
TEST(ScaleDownMemo, KeepsTheNodesFactsAndTellsModelsAtTheSameAddressApart) {
  model::AutoscalerConfig config;
  model::Node node;
  node.meta.name = "n0";
  node.ready = false;
  node.allocatable.Set(model::kCpu, 4000);
  std::optional<sched::ClusterModel> model;  // emplace() reuses the storage: the same address
  model.emplace();
  ASSERT_TRUE(model->SetNode(sched::ClusterModel::Borrow(&node)).has_value());
  const sched::ClusterModel* first = &*model;
  ScaleDownMemo memo;
  memo.Begin(*model, config);
  ScaleDownMemo::Node* kept = memo.Keep(0, &node);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->node_facts.name, "n0");
  EXPECT_FALSE(kept->node_facts.destination);  // not ready
  EXPECT_EQ(kept->node_facts.cpu, 4000);
  memo.Begin(*model, config);
  EXPECT_NE(memo.Find(0, &node), nullptr);

  // The same object, changed, in a new model that takes the old one's place.
  node.ready = true;
  model.reset();
  model.emplace();
  ASSERT_EQ(&*model, first);
  ASSERT_TRUE(model->SetNode(sched::ClusterModel::Borrow(&node)).has_value());
  memo.Begin(*model, config);
  EXPECT_EQ(memo.Find(0, &node), nullptr);
  kept = memo.Keep(0, &node);
  ASSERT_NE(kept, nullptr);
  EXPECT_TRUE(kept->node_facts.destination);
}

// The same for scale-up, whose walks over the nodes go in input order (Pass::SlotAt), wherever
// the model keeps them; the new nodes are compared one by one, with their pods.
std::string CheckScaleUpOnTheModel(const Case& original) {
  std::unique_ptr<ModelledCase> m = Modelled(original);
  ScaleUpOptions options;
  options.list_new_nodes = true;
  return PlansBothWaysAlike(*m, [&](const PlannerInput& in) {
    ScaleUpPlan plan = ScaleUpPlanner().Plan(in, options);
    std::string out = PlanToJson(plan, {}).dump(1);
    for (const NewNode& n : plan.new_nodes) {
      out += "\n" + n.pool + ": " + fmt::format("{}", fmt::join(n.pods, " "));
    }
    return out;
  });
}

TEST(PlannerProperties, ScaleUpOnTheClusterModelPlansWhatABuiltSnapshotPlans) {
  RunProperty("scale-up on the model", CheckScaleUpOnTheModel);
}

// The generator produces the situations the properties are about (otherwise they would pass
// vacuously): scale-ups, removals with evictions, PDB-covered evictions, limits that bind.
TEST(PlannerProperties, GeneratorCoversTheInterestingCases) {
  int ups = 0, removals = 0, evictions = 0, pdb_evictions = 0, limit_reasons = 0, blocked = 0;
  int consolidated = 0, not_paying = 0, replaced = 0;
  for (int i = 0; i < 500; ++i) {
    Case c = Generate(kBaseSeed + static_cast<uint64_t>(i));
    PlannerInput in = c.Input();
    ScaleUpPlan up = ScaleUpPlanner().Plan(in);
    ups += static_cast<int>(up.scale_ups.size());
    for (const auto& u : up.unschedulable)
      for (const auto& [pool, r] : u.reasons)
        if (r.kind == ReasonKind::kPoolMax || r.kind == ReasonKind::kClusterMaxNodes ||
            r.kind == ReasonKind::kClusterResource)
          ++limit_reasons;
    ScaleDownPlan down = ScaleDownPlanner().Plan(in);
    removals += static_cast<int>(down.scale_downs.size());
    for (const auto& sd : down.scale_downs) {
      evictions += static_cast<int>(sd.evict.size());
      if (sd.consolidation) ++consolidated;
      if (!sd.replacement_pool.empty()) ++replaced;
      for (const std::string& key : sd.evict)
        for (const Pod& p : c.pods)
          if (p.Key() == key)
            for (const auto& b : c.pdbs)
              if (b.meta.namespace_ == p.meta.namespace_ && b.Selects(p.meta)) ++pdb_evictions;
    }
    for (const auto& k : down.keep)
      if (k.Reason().find("not evictable") != std::string::npos) ++blocked;
    for (const auto& k : down.keep)
      if (k.consolidation && k.consolidation->decision != ConsolidationDecision::kPays)
        ++not_paying;
  }
  EXPECT_GT(ups, 40);
  EXPECT_GT(removals, 100);
  EXPECT_GT(evictions, 50);
  EXPECT_GT(pdb_evictions, 5);
  EXPECT_GT(limit_reasons, 20);
  EXPECT_GT(blocked, 50);
  EXPECT_GT(consolidated, 10);
  EXPECT_GT(not_paying, 10);
  EXPECT_GT(replaced, 10);
  std::cout << fmt::format(
      "500 cases: {} scale-ups, {} limit reasons, {} removals, {} evictions "
      "({} under a PDB), {} nodes kept for a non-evictable pod, {} consolidated, {} kept as "
      "consolidation does not pay (yet), {} replaced by a cheaper pool's node\n",
      ups, limit_reasons, removals, evictions, pdb_evictions, blocked, consolidated, not_paying,
      replaced);
}

// One new node for several nodes is rare in random clusters (the nodes' pods must fit nowhere and
// together on one cheaper node): the scale-down property's cases hold some, planned without rate
// limits as the loop plans which nodes are unneeded.
TEST(PlannerProperties, GeneratorMakesReplacementGroups) {
  int groups = 0;
  ScaleDownOptions all;
  all.rate_limit = false;
  for (int i = 0; i < kCases; ++i) {
    Case c = Generate(kBaseSeed + static_cast<uint64_t>(i));
    for (const auto& sd : ScaleDownPlanner().Plan(c.Input(), all).scale_downs)
      if (!sd.replacement_group.empty() && sd.replacement_group.front() == sd.node) ++groups;
  }
  EXPECT_GE(groups, 3);
  std::cout << fmt::format("{} cases: {} replacement groups\n", kCases, groups);
}

// Regression (found by the scale-up property, seed 20260393): maxNodesPerScaleUp bounded each
// pool's estimate, not the pass, so two pools could each add up to the limit in one pass.
TEST(PlannerProperties, MaxNodesPerScaleUpBoundsTheWholePass) {
  Case c;
  c.now = At("2026-03-01T12:00:00Z");
  c.config.scale_up.max_nodes_per_scale_up = 1;
  for (const char* name : {"cpu", "gpu"}) {
    model::Pool& pool = c.config.pools.emplace_back();
    pool.name = name;
    pool.max = 5;
    pool.template_node.meta.labels[std::string(model::kLabelPool)] = name;
    pool.template_node.meta.labels["pool-kind"] = name;
    pool.template_node.capacity = Res({{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}});
    pool.template_node.allocatable = pool.template_node.capacity;
    pool.template_node.ready = true;
  }
  for (const char* kind : {"cpu", "gpu"}) {
    Pod p;
    p.meta.name = std::string("pending-") + kind;
    p.meta.namespace_ = "default";
    AddOwner(p, "ReplicaSet");
    p.node_selector["pool-kind"] = kind;
    p.containers.push_back({.name = "main", .requests = Res({{"cpu", "1"}})});
    p.Finalize();
    c.pods.push_back(std::move(p));
  }
  ScaleUpPlan plan = ScaleUpPlanner().Plan(c.Input());
  int added = 0;
  for (const ScaleUp& up : plan.scale_ups) added += up.add;
  EXPECT_EQ(added, 1);
  ASSERT_EQ(plan.unschedulable.size(), 1u);
  EXPECT_EQ(CheckScaleUp(c), "");
}

}  // namespace
}  // namespace tidepool::planner
