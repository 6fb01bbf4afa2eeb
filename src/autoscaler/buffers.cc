#include "autoscaler/buffers.h"

#include <fmt/format.h>

namespace tidepool::autoscaler {

Deployments IndexDeployments(const std::vector<const model::Deployment*>& deployments) {
  Deployments out;
  for (const model::Deployment* d : deployments) out.emplace(d->meta.Key(), d);
  return out;
}

namespace {

model::BufferCondition Ready(bool ok, std::string_view reason, std::string message) {
  return {.type = model::BufferConditionType::kReadyForProvisioning,
          .status = ok ? model::ConditionStatus::kTrue : model::ConditionStatus::kFalse,
          .reason = std::string(reason),
          .message = std::move(message)};
}

model::Pod CopyOf(const model::Pod& pod, const model::CapacityBuffer& b, int i) {
  model::Pod copy = pod;
  copy.meta.name = fmt::format("{}:buffer-{}", b.meta.name, i);
  copy.meta.namespace_ = b.meta.namespace_;
  copy.meta.uid.clear();
  copy.meta.owner_references.clear();
  copy.meta.creation_timestamp = b.meta.creation_timestamp;
  copy.meta.deletion_timestamp.reset();
  copy.meta.annotations[std::string(kCapacityBufferAnnotation)] = b.Key();
  copy.node_name.clear();
  copy.ClearNomination();
  copy.ClearSchedulingGates();  // room for the pods as they run, gated or not when created
  copy.phase = model::PodPhase::kPending;
  copy.Finalize();  // its owner references and annotations changed
  return copy;
}

// The pod of the buffer's reference and, for a scalableRef, the scalable's replicas; or why not
// (`out.ready_condition` set False).
const model::Pod* FindPod(const model::CapacityBuffer& b, const PodTemplates& templates,
                          const Deployments& deployments, ResolvedBuffer& out,
                          std::optional<int32_t>& scalable_replicas) {
  const std::string& ns = b.meta.namespace_;
  if (!b.pod_template.empty()) {
    std::string key = ns + "/" + b.pod_template;
    auto it = templates.find(key);
    if (it == templates.end()) {
      out.ready_condition =
          Ready(false, kBufferPodTemplateNotFound, fmt::format("PodTemplate {} not found", key));
      return nullptr;
    }
    if (!it->second->error.empty()) {
      out.ready_condition =
          Ready(false, kBufferInvalidPodTemplate,
                fmt::format("PodTemplate {} is malformed: {}", key, it->second->error));
      return nullptr;
    }
    out.pod_template = b.pod_template;
    if (it->second->meta.generation > 0) out.template_generation = it->second->meta.generation;
    out.source = "PodTemplate " + key;
    return &it->second->pod;
  }
  if (!b.scalable_ref) {
    out.ready_condition = Ready(false, kBufferResolutionFailed,
                                "neither spec.podTemplateRef nor spec.scalableRef is set");
    return nullptr;
  }
  const model::ScalableRef& ref = *b.scalable_ref;
  if (ref.api_group != "apps" || ref.kind != "Deployment") {
    out.ready_condition = Ready(
        false, kBufferUnsupportedScalableRef,
        fmt::format("scalableRef {}{}{} {}: tidepool supports a podTemplateRef or a scalableRef "
                    "to an apps Deployment only",
                    ref.api_group, ref.api_group.empty() ? "" : "/", ref.kind, ref.name));
    return nullptr;
  }
  std::string key = ns + "/" + ref.name;
  auto it = deployments.find(key);
  if (it == deployments.end()) {
    out.ready_condition =
        Ready(false, kBufferScalableRefNotFound, fmt::format("Deployment {} not found", key));
    return nullptr;
  }
  if (!it->second->error.empty()) {
    out.ready_condition = Ready(
        false, kBufferResolutionFailed,
        fmt::format("Deployment {} has a malformed pod template: {}", key, it->second->error));
    return nullptr;
  }
  scalable_replicas = it->second->replicas;
  out.source = "Deployment " + key;
  return &it->second->pod;
}

}  // namespace

ResolvedBuffer ResolveBuffer(const model::CapacityBuffer& b, const PodTemplates& templates,
                             const Deployments& deployments) {
  ResolvedBuffer out;
  out.buffer = &b;
  std::optional<int32_t> scalable_replicas;
  const model::Pod* pod = FindPod(b, templates, deployments, out, scalable_replicas);
  if (pod == nullptr) return out;
  auto n = model::ResolveBufferReplicas(b, pod->requests, scalable_replicas);
  if (!n) {
    out.ready_condition = Ready(false, kBufferResolutionFailed, n.error().message());
    return out;
  }
  out.ready = true;
  out.replicas = n->replicas;
  out.ready_condition = Ready(
      true, kBufferResolved, fmt::format("{} pod(s) of {}: {}", n->replicas, out.source, n->words));
  out.pods.reserve(static_cast<size_t>(n->replicas));
  for (int i = 0; i < n->replicas; ++i) out.pods.push_back(CopyOf(*pod, b, i));
  return out;
}

}  // namespace tidepool::autoscaler
