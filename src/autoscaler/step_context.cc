#include "autoscaler/step_context.h"

namespace tidepool::autoscaler {

bool HasTaint(const model::Node& node, std::string_view key) {
  for (const model::Taint& t : node.taints)
    if (t.key == key) return true;
  return false;
}

// The node lifecycle controller removes node.kubernetes.io/not-ready a moment after Ready turns
// True, the cloud controller removes uninitialized, and CA's startup-taint prefix marks taints a
// node agent removes once it is set up. Pods cannot land on such a node yet, so it is upcoming.
bool HasStartupTaint(const model::Node& node) {
  for (const model::Taint& t : node.taints) {
    if (t.effect == model::TaintEffect::kPreferNoSchedule) continue;
    if (t.key == "node.kubernetes.io/not-ready" || t.key == "node.kubernetes.io/unreachable" ||
        t.key == "node.kubernetes.io/network-unavailable" ||
        t.key == "node.cloudprovider.kubernetes.io/uninitialized" ||
        t.key.starts_with("startup-taint.cluster-autoscaler.kubernetes.io/")) {
      return true;
    }
  }
  return false;
}

bool MustLeave(const model::Pod& pod) {
  return !pod.IsTerminal() && !pod.IsDaemonSetPod() && !pod.IsMirrorPod();
}

}  // namespace tidepool::autoscaler
