#include "cli/explain_provreq.h"

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <vector>

#include "autoscaler/loop.h"
#include "autoscaler/provisioning.h"

namespace tidepool::cli {
namespace {

std::string Describe(const model::Condition& c) {
  return fmt::format("{}={} {}: {}", model::ProvisioningConditionName(c.type),
                     model::ConditionStatusName(c.status), c.reason, c.message);
}

}  // namespace

autoscaler::Observation ObservationOf(const kube::codec::ClusterState& state) {
  autoscaler::Observation obs;
  for (const auto& n : state.nodes) obs.nodes.push_back(&n);
  for (const auto& x : state.pods) obs.pods.push_back(&x);
  for (const auto& x : state.pdbs) obs.pdbs.push_back(&x);
  for (const auto& x : state.daemon_sets) obs.daemon_sets.push_back(&x);
  for (const auto& x : state.provisioning_requests) obs.provisioning_requests.push_back(&x);
  for (const auto& x : state.pod_templates) obs.pod_templates.push_back(&x);
  for (const auto& x : state.capacity_buffers) obs.capacity_buffers.push_back(&x);
  for (const auto& x : state.deployments) obs.deployments.push_back(&x);
  return obs;
}

int ExplainProvisioningRequest(const model::AutoscalerConfig& config,
                               const kube::codec::ClusterState& state, Time now,
                               std::string_view key) {
  const model::ProvisioningRequest* r = nullptr;
  for (const auto& x : state.provisioning_requests)
    if (x.Key() == key) r = &x;
  if (r == nullptr) {
    std::cout << "no ProvisioningRequest " << key << " in the state\n";
    return 1;
  }
  int pods = 0;
  for (const model::PodSet& s : r->pod_sets) pods += s.count;
  std::cout << fmt::format("ProvisioningRequest {}: class {}, {} pod set(s), {} pod(s)\n", key,
                           r->class_name, r->pod_sets.size(), pods);
  for (const model::Condition& c : r->conditions) std::cout << "  now: " << Describe(c) << "\n";
  if (r->provisioning_class == model::ProvisioningClass::kOther) {
    std::cout << "tidepool does not serve this class: it leaves the request alone (another "
                 "autoscaler may serve it)\n";
    return 0;
  }
  autoscaler::Autoscaler loop(config);
  const autoscaler::Observation obs = ObservationOf(state);
  std::vector<autoscaler::Action> actions = loop.Step(obs, now);
  for (auto& a : loop.Step(obs, now + config.scale_up.batch_max)) actions.push_back(std::move(a));
  std::map<model::ProvisioningCondition, model::Condition> wants;  // the last write of each type
  std::vector<std::string> grows;
  for (const autoscaler::Action& action : actions) {
    if (const auto* u = std::get_if<autoscaler::UpdateProvisioningRequest>(&action)) {
      if (u->ns != r->meta.namespace_ || u->name != r->meta.name) continue;
      for (const model::Condition& c : u->conditions) wants[c.type] = c;
    } else if (const auto* up = std::get_if<autoscaler::IncreasePool>(&action)) {
      for (const std::string& pod : up->pods) {
        if (!autoscaler::IsPodOf(pod, *r)) continue;
        grows.push_back(fmt::format("{} +{}", up->pool, up->count));
        break;
      }
    }
  }
  for (const auto& [type, c] : wants) std::cout << "would set: " << Describe(c) << "\n";
  for (const std::string& g : grows) std::cout << "would grow: " << g << "\n";
  if (wants.empty() && grows.empty()) {
    std::cout << "would change nothing: the conditions above stand\n";
  }
  return 0;
}

}  // namespace tidepool::cli
