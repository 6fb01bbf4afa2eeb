// CapacityBuffers as the loop reads them: each buffer resolved into its pod, the number of copies
// and the ReadyForProvisioning condition that says how (or why not), and the copies themselves.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/provisioning.h"
#include "model/capacity_buffer.h"
#include "model/pod.h"

namespace tidepool::autoscaler {

// The annotation on the pods a buffer stands for: the buffer's "namespace/name".
inline constexpr std::string_view kCapacityBufferAnnotation = "tidepool.dev/capacity-buffer";

// How status, logs and explain name a buffer: "buffer/<namespace/name>".
inline std::string ShownBuffer(std::string_view buffer_key) {
  return "buffer/" + std::string(buffer_key);
}

using Deployments = std::map<std::string, const model::Deployment*, std::less<>>;  // by key
Deployments IndexDeployments(const std::vector<const model::Deployment*>& deployments);

// ReadyForProvisioning reasons tidepool writes.
inline constexpr std::string_view kBufferResolved = "Resolved";
inline constexpr std::string_view kBufferPodTemplateNotFound = "PodTemplateNotFound";
inline constexpr std::string_view kBufferInvalidPodTemplate = "InvalidPodTemplate";
inline constexpr std::string_view kBufferScalableRefNotFound = "ScalableRefNotFound";
inline constexpr std::string_view kBufferUnsupportedScalableRef = "UnsupportedScalableRef";
inline constexpr std::string_view kBufferResolutionFailed = "ResolutionFailed";

// One buffer resolved in one Step.
struct ResolvedBuffer {
  const model::CapacityBuffer* buffer = nullptr;
  bool ready = false;
  model::BufferCondition ready_condition;  // ReadyForProvisioning, True or False with the why
  std::string pod_template;                // status.podTemplateRef ("" for a scalableRef)
  std::optional<int64_t> template_generation;
  std::optional<int32_t> replicas;  // status.replicas; unset when not ready
  std::string source;               // where the pod comes from: "PodTemplate ns/name", ...
  std::vector<model::Pod> pods;     // the copies, pending
};

// The copies are `replicas` copies of the pod, pending, named "<buffer>:buffer-<i>" (no real pod
// can be named so), in the buffer's namespace, created when the buffer was (BufferTracker stamps
// them with the Step's time, so they are planned after real pods), annotated with
// kCapacityBufferAnnotation. Supported scalableRefs: apps/v1 Deployment; any other is
// UnsupportedScalableRef, which names what is supported.
ResolvedBuffer ResolveBuffer(const model::CapacityBuffer& buffer, const PodTemplates& templates,
                             const Deployments& deployments);

}  // namespace tidepool::autoscaler
