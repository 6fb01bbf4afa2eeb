#include "model/pod.h"

namespace tidepool::model {

Resources EffectiveRequests(const Pod& pod) {
  // Sidecars (restartable init containers) run alongside the app containers, so they add to
  // the app total; a regular init container runs alone next to the sidecars started before it.
  Resources sidecars;
  Resources init_peak;
  for (const auto& c : pod.init_containers()) {
    if (c.restartable) {
      sidecars += c.requests;
      init_peak.MaxWith(sidecars);
    } else {
      init_peak.MaxWith(c.requests + sidecars);
    }
  }
  Resources total;
  for (const auto& c : pod.containers) total += c.requests;
  total += sidecars;
  total.MaxWith(init_peak);
  total += pod.overhead();
  total.Set(kPods, 1);
  return total;
}

void Pod::Finalize() {
  requests = EffectiveRequests(*this);
  has_required_anti_affinity = !affinity().pod_anti_affinity_required.empty();
  has_required_affinity = !affinity().pod_affinity_required.empty();
  scheduling_gated = !scheduling_gates().empty();
  belongs_to_node = IsDaemonSetPod() || IsMirrorPod();
}

bool Pod::IsDaemonSetPod() const {
  const OwnerReference* c = meta.Controller();
  // As a view: kinds of another length differ without comparing bytes.
  return c != nullptr && c->kind == std::string_view("DaemonSet");
}

bool Pod::IsMirrorPod() const { return meta.annotations.contains("kubernetes.io/config.mirror"); }

std::vector<ContainerPort> Pod::HostPorts() const {
  std::vector<ContainerPort> out;
  for (const auto* list : {&init_containers(), &containers})
    for (const auto& c : *list)
      for (const auto& p : c.ports)
        if (p.host_port != 0) out.push_back(p);
  return out;
}

}  // namespace tidepool::model
