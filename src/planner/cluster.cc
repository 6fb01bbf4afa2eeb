#include "planner/cluster.h"

#include <fmt/format.h>

#include <charconv>

namespace tidepool::planner {

const model::Pool* PoolOf(const model::Node& node, const PlannerInput& input) {
  const model::AutoscalerConfig& config = *input.config;
  if (const std::string* name = node.meta.Label(model::kLabelPool)) {
    return config.FindPool(*name);
  }
  for (std::string_view label : {kAksAgentPoolLabel, kAgentPoolLabel}) {
    if (const std::string* name = node.meta.Label(label)) {
      if (const model::Pool* p = config.FindPool(*name)) return p;
    }
  }
  if (input.provider_pool_of) {
    std::string name = input.provider_pool_of(node);
    if (!name.empty()) return config.FindPool(name);
  }
  return nullptr;
}

bool IsPendingForScaleUp(const model::Pod& pod, int32_t expendable_priority_cutoff) {
  return pod.node_name.empty() && !pod.meta.deletion_timestamp && !pod.IsTerminal() &&
         !pod.IsDaemonSetPod() && !pod.IsMirrorPod() &&
         pod.PriorityOrZero() >= expendable_priority_cutoff;
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

std::string GangOf(const model::Pod& pod) {
  const std::string& ns = pod.meta.namespace_;
  if (const std::string* g = pod.meta.Label("scheduling.x-k8s.io/pod-group")) {
    return fmt::format("{}/pod-group:{}", ns, *g);
  }
  if (const std::string* g = pod.meta.Annotation("scheduling.k8s.io/group-name")) {
    return fmt::format("{}/volcano:{}", ns, *g);
  }
  if (const std::string* g = pod.meta.Label("training.kubeflow.org/job-name")) {
    return fmt::format("{}/kubeflow:{}", ns, *g);
  }
  if (const std::string* g = pod.meta.Label("jobset.sigs.k8s.io/jobset-name")) {
    return fmt::format("{}/jobset:{}", ns, *g);
  }
  return "";
}

bool IsTrainingPod(const model::Pod& pod) {
  if (!GangOf(pod).empty()) return true;
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
    if (p.affinity.node_required &&
        !p.affinity.node_required->Matches(node.labels(), node.name())) {
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
