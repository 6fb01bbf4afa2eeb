#include "planner/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <tuple>

#include "model/key_order.h"

namespace tidepool::planner {

PoolNames::PoolNames(const model::AutoscalerConfig& config) {
  by_name_.reserve(config.pools.size());
  for (const model::Pool& p : config.pools) by_name_.emplace(p.name, &p);
}

namespace {

// PoolOf with any name lookup: FindPool or PoolNames::Find.
// `lasting`, when given, is set to whether the answer came without the provider's mapping.
template <typename FindFn>
const model::Pool* PoolOfWith(const model::Node& node, const PlannerInput& input,
                              const FindFn& find, bool* lasting = nullptr) {
  if (lasting != nullptr) *lasting = true;
  if (const std::string* name = node.meta.Label(model::kLabelPool)) return find(*name);
  for (std::string_view label : {kAksAgentPoolLabel, kAgentPoolLabel}) {
    if (const std::string* name = node.meta.Label(label)) {
      if (const model::Pool* p = find(*name)) return p;
    }
  }
  if (input.provider_pool_of) {
    if (lasting != nullptr) *lasting = false;
    std::string name = input.provider_pool_of(node);
    if (!name.empty()) return find(name);
  }
  return nullptr;
}

}  // namespace

const model::Pool* PoolOf(const model::Node& node, const PlannerInput& input,
                          const PoolNames& pools) {
  return PoolOfWith(node, input, [&](std::string_view name) { return pools.Find(name); });
}

const model::Pool* PoolOf(const model::Node& node, const PlannerInput& input,
                          const PoolNames& pools, bool* lasting) {
  return PoolOfWith(
      node, input, [&](std::string_view name) { return pools.Find(name); }, lasting);
}

const model::Pool* PoolOf(const model::Node& node, const PlannerInput& input) {
  return PoolOfWith(node, input,
                    [&](std::string_view name) { return input.config->FindPool(name); });
}

namespace {

// IsPendingForScaleUp without its gate check.
bool WaitsForScaleUp(const model::Pod& pod, int32_t expendable_priority_cutoff) {
  return pod.WaitsForNode() && !pod.meta.deletion_timestamp && !pod.IsDaemonSetPod() &&
         !pod.IsMirrorPod() && pod.PriorityOrZero() >= expendable_priority_cutoff;
}

}  // namespace

bool IsPendingForScaleUp(const model::Pod& pod, int32_t expendable_priority_cutoff) {
  return !pod.SchedulingGated() && WaitsForScaleUp(pod, expendable_priority_cutoff);
}

bool IsHeldBySchedulingGates(const model::Pod& pod, int32_t expendable_priority_cutoff) {
  return pod.SchedulingGated() && WaitsForScaleUp(pod, expendable_priority_cutoff);
}

std::vector<const model::Pod*> UnboundPods(const PlannerInput& input) {
  if (input.unbound) return *input.unbound;
  std::vector<const model::Pod*> out;
  for (const model::Pod* pod : input.pods)
    if (pod->WaitsForNode()) out.push_back(pod);
  return out;
}

void SortForScheduling(std::vector<const model::Pod*>& pods) {
  // The cluster model lists pods in key order, the queue's last tie-break: a stable sort by
  // priority and age is then the whole order, and no key is built.
  auto by_key = [](const model::Pod* a, const model::Pod* b) {
    return model::CompareKeys(a->meta, b->meta) < 0;
  };
  if (std::is_sorted(pods.begin(), pods.end(), by_key)) {
    auto before = [](const model::Pod* a, const model::Pod* b) {
      const int32_t pa = a->PriorityOrZero(), pb = b->PriorityOrZero();
      if (pa != pb) return pa > pb;
      return a->meta.creation_timestamp.value_or(Time{}) <
             b->meta.creation_timestamp.value_or(Time{});
    };
    if (!std::is_sorted(pods.begin(), pods.end(), before))
      std::stable_sort(pods.begin(), pods.end(), before);
    return;
  }
  struct Item {
    int32_t priority;
    Time created;
    std::string key;
    const model::Pod* pod;
  };
  std::vector<Item> items;
  items.reserve(pods.size());
  for (const model::Pod* p : pods)
    items.push_back(
        {p->PriorityOrZero(), p->meta.creation_timestamp.value_or(Time{}), p->Key(), p});
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(b.priority, a.created, a.key) < std::tie(a.priority, b.created, b.key);
  });
  for (size_t i = 0; i < items.size(); ++i) pods[i] = items[i].pod;
}

std::optional<int> DeclaredGangSize(const model::Pod& pod) {
  const std::string* v = pod.meta.Annotation(kGangSizeAnnotation);
  int n = 0;
  if (v == nullptr || std::from_chars(v->data(), v->data() + v->size(), n).ec != std::errc{} ||
      n < 1) {
    return std::nullopt;
  }
  return n;
}

GangName FindGang(const model::Pod& pod) {
  // One walk over the labels instead of a lookup per key: scale-down asks this of every pod of
  // every candidate node.
  const std::string* group = nullptr;
  const std::string* kubeflow = nullptr;
  const std::string* jobset = nullptr;
  for (const auto& [key, value] : pod.meta.labels) {
    if (key == "scheduling.x-k8s.io/pod-group") {
      group = &value;
    } else if (key == "training.kubeflow.org/job-name") {
      kubeflow = &value;
    } else if (key == "jobset.sigs.k8s.io/jobset-name") {
      jobset = &value;
    }
  }
  if (group != nullptr) return {"pod-group", group};
  const std::string* volcano =
      pod.meta.annotations.empty() ? nullptr : pod.meta.Annotation("scheduling.k8s.io/group-name");
  if (volcano != nullptr) return {"volcano", volcano};
  if (kubeflow != nullptr) return {"kubeflow", kubeflow};
  if (jobset != nullptr) return {"jobset", jobset};
  return {};
}

std::string GangOf(const model::Pod& pod, const GangName& gang) {
  if (gang.name == nullptr) return "";
  return fmt::format("{}/{}:{}", pod.meta.namespace_, gang.kind, *gang.name);
}

std::string GangOf(const model::Pod& pod) { return GangOf(pod, FindGang(pod)); }

bool InGang(const model::Pod& pod) { return FindGang(pod).name != nullptr; }

bool IsTrainingPod(const model::Pod& pod) {
  if (InGang(pod)) return true;
  const model::OwnerReference* c = pod.meta.Controller();
  if (c == nullptr) return false;
  if (c->kind == "Job" || c->kind == "JobSet" || c->kind == "PyTorchJob" || c->kind == "TFJob" ||
      c->kind == "MPIJob") {
    return true;
  }
  return c->api_version.starts_with("kubeflow.org/");
}

std::vector<const model::Pod*> DaemonSetPodsFor(const model::Node& node,
                                                const std::vector<const model::DaemonSet*>& sets) {
  std::vector<const model::Pod*> out;
  for (const model::DaemonSet* ds : sets) {
    const model::Pod& p = ds->pod_template;
    bool selector_ok = true;
    for (const auto& [k, v] : p.node_selector) {
      const std::string* have = node.meta.Label(k);
      if (have == nullptr || *have != v) {
        selector_ok = false;
        break;
      }
    }
    if (!selector_ok) continue;
    if (p.affinity().node_required &&
        !p.affinity().node_required->Matches(node.labels(), node.name())) {
      continue;
    }
    if (model::FindUntoleratedTaint(node.taints, p.tolerations) != nullptr) continue;
    out.push_back(&p);
  }
  return out;
}

std::string JoinKeys(const std::vector<const model::Pod*>& pods, size_t max_names) {
  std::string out;
  for (size_t i = 0; i < pods.size() && i < max_names; ++i) {
    if (i) out += ", ";
    out += pods[i]->Key();
  }
  if (pods.size() > max_names) out += fmt::format(" and {} more", pods.size() - max_names);
  return out;
}

}  // namespace tidepool::planner
