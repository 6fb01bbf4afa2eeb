#include "planner/scale_down_rules.h"

#include <fmt/format.h>

#include "planner/cluster.h"
#include "planner/disruption.h"
#include "sched/snapshot.h"

namespace tidepool::planner {
namespace {

constexpr std::string_view kKubeSystem = "kube-system";

double Ratio(int64_t requested, int64_t allocatable) {
  if (allocatable > 0) return static_cast<double>(requested) / static_cast<double>(allocatable);
  return requested > 0 ? 1.0 : 0.0;
}

bool AnnotationIs(const model::Pod& pod, std::string_view key, std::string_view value) {
  const std::string* v = pod.meta.Annotation(key);
  return v != nullptr && *v == value;
}

std::string AllowHint() { return fmt::format("annotate {}=true to allow", kSafeToEvictAnnotation); }

// The first volume that keeps data on the node, or nullptr.
const model::Volume* LocalStorageVolume(const model::Pod& pod) {
  for (const model::Volume& v : pod.volumes) {
    if (v.kind == model::Volume::Kind::kHostPath) return &v;
    if (v.kind == model::Volume::Kind::kEmptyDir && !v.empty_dir_in_memory) return &v;
  }
  return nullptr;
}

}  // namespace

// The snapshot's rule (what it sums in staying_requested) says which pods move.
DrainRole DrainRoleOf(const model::Pod& pod) {
  if (pod.IsTerminal()) return DrainRole::kIgnored;
  if (!sched::StaysOnDrain(pod)) return DrainRole::kMove;
  return pod.meta.deletion_timestamp ? DrainRole::kIgnored : DrainRole::kStays;
}

NodeUtilization ComputeUtilization(const model::Node& node, const model::Resources& moving,
                                   int64_t devices, int64_t devices_allocated) {
  int64_t cpu = moving.cpu_milli(), memory = moving.memory();
  int64_t gpus = moving.gpus() + devices_allocated;
  NodeUtilization u;
  const model::Resources& alloc = node.allocatable;
  int64_t gpu_alloc = alloc.gpus() + devices;
  if (gpu_alloc > 0) {
    u.gpu = true;
    u.resource = "gpu";
    u.gpu_requested = gpus;
    u.gpu_allocatable = gpu_alloc;
    u.value = Ratio(gpus, gpu_alloc);
    return u;
  }
  double c = Ratio(cpu, alloc.cpu_milli());
  double m = Ratio(memory, alloc.memory());
  u.value = c >= m ? c : m;
  u.resource = c >= m ? "cpu" : "memory";
  return u;
}

std::string DescribeUtilization(const NodeUtilization& u, double threshold) {
  bool below = u.value < threshold;
  if (u.gpu) {
    return below ? fmt::format("gpu utilization {}/{} < {}", u.gpu_requested, u.gpu_allocatable,
                               threshold)
                 : fmt::format("gpu utilization {}/{} >= threshold {}", u.gpu_requested,
                               u.gpu_allocatable, threshold);
  }
  return below ? fmt::format("utilization {:.2f} < {} ({})", u.value, threshold, u.resource)
               : fmt::format("utilization {:.2f} >= threshold {} ({})", u.value, threshold,
                             u.resource);
}

std::string ScaleDown::Detail() const {
  std::string out = DescribeUtilization(utilization, threshold);
  if (consolidation) out += "; " + DescribeVerdict(*consolidation);
  return out;
}

std::string Keep::Reason() const {
  if (waits_turn > 0) {
    return fmt::format(
        "not weighed in this pass: scaleDown.candidatesPerPass {} reached (it has its turn in a "
        "later pass)",
        waits_turn);
  }
  std::string words = text;
  if (verdict_says && consolidation) words += DescribeVerdict(*consolidation);
  if (!busy) return words;
  std::string out = DescribeUtilization(busy->utilization, busy->threshold);
  if (!words.empty()) out += "; " + words;
  return out;
}

std::string EvictionBlocker(const model::Pod& pod, bool covered_by_pdb, bool evict_training_pods) {
  bool annotated = !pod.meta.annotations.empty();
  if (annotated && AnnotationIs(pod, kDoNotDisruptAnnotation, "true")) {
    return fmt::format("pod {} is not evictable: annotated {}=true", pod.Key(),
                       kDoNotDisruptAnnotation);
  }
  if (annotated && AnnotationIs(pod, kSafeToEvictAnnotation, "false")) {
    return fmt::format("pod {} is not evictable: annotated {}=false", pod.Key(),
                       kSafeToEvictAnnotation);
  }
  if (annotated && AnnotationIs(pod, kSafeToEvictAnnotation, "true")) return "";
  const model::OwnerReference* owner = pod.meta.Controller();
  if (owner == nullptr) return fmt::format("pod {} has no controller (bare pod)", pod.Key());
  if (!evict_training_pods && pod.phase == model::PodPhase::kRunning && IsTrainingPod(pod)) {
    std::string gang = GangOf(pod);
    std::string what = gang.empty()
                           ? fmt::format("owned by {} {}", owner->kind, owner->name)
                           : fmt::format("owned by {} {}, gang {}", owner->kind, owner->name, gang);
    return fmt::format("pod {} is not evictable: running training pod ({}); {}", pod.Key(), what,
                       AllowHint());
  }
  if (const model::Volume* v = LocalStorageVolume(pod)) {
    std::string_view kind = v->kind == model::Volume::Kind::kHostPath ? "hostPath" : "emptyDir";
    return fmt::format("pod {} is not evictable: uses local storage ({} volume \"{}\"); {}",
                       pod.Key(), kind, v->name, AllowHint());
  }
  if (pod.meta.namespace_ == kKubeSystem && !covered_by_pdb) {
    return fmt::format(
        "pod {} is not evictable: kube-system pod without a PodDisruptionBudget; add a PDB or {}",
        pod.Key(), AllowHint());
  }
  return "";
}

bool MayBlockEviction(const model::Pod& pod) {
  if (!pod.meta.annotations.empty() && (pod.meta.Annotation(kDoNotDisruptAnnotation) != nullptr ||
                                        pod.meta.Annotation(kSafeToEvictAnnotation) != nullptr)) {
    return true;
  }
  return pod.meta.Controller() == nullptr || IsTrainingPod(pod) ||
         LocalStorageVolume(pod) != nullptr || pod.meta.namespace_ == kKubeSystem;
}

}  // namespace tidepool::planner
