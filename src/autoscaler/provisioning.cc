#include "autoscaler/provisioning.h"

#include <fmt/format.h>

#include <charconv>

#include "planner/cluster.h"

namespace tidepool::autoscaler {

using model::ProvisioningCondition;

std::optional<Time> BookingEnd(const model::ProvisioningRequest& request, Duration booking) {
  const model::Condition* c = request.Find(ProvisioningCondition::kProvisioned);
  if (c == nullptr || c->status != model::ConditionStatus::kTrue || !c->last_transition) {
    return std::nullopt;
  }
  return *c->last_transition + booking;
}

ProvisioningStage StageOf(const model::ProvisioningRequest& request, Time now, Duration booking) {
  if (request.Is(ProvisioningCondition::kFailed) ||
      request.Is(ProvisioningCondition::kBookingExpired) ||
      request.Is(ProvisioningCondition::kCapacityRevoked)) {
    return ProvisioningStage::kDone;
  }
  if (request.Is(ProvisioningCondition::kProvisioned)) {
    std::optional<Time> end = BookingEnd(request, booking);
    // Without a transition time the booking is taken to start now: it never runs out early.
    return end && now >= *end ? ProvisioningStage::kBookingOver : ProvisioningStage::kBooked;
  }
  if (request.Find(ProvisioningCondition::kAccepted) == nullptr) return ProvisioningStage::kNew;
  return ProvisioningStage::kPending;
}

const std::string* ValidUntilSeconds(const model::ProvisioningRequest& request) {
  return request.provisioning_class == model::ProvisioningClass::kBestEffortAtomic
             ? request.Parameter(model::kValidUntilSecondsParameter)
             : nullptr;
}

Result<Duration> RetryWindow(const model::ProvisioningRequest& request) {
  const std::string* text = ValidUntilSeconds(request);
  if (text == nullptr) return kRequestExpiry;
  int64_t seconds = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), seconds);
  // Up to ten years: beyond that it means "forever" and would overflow the clock.
  constexpr int64_t kMaxSeconds = int64_t{10} * 366 * 24 * 3600;
  if (text->empty() || ec != std::errc() || end != text->data() + text->size() || seconds < 0 ||
      seconds > kMaxSeconds) {
    return Fail(Error::Code::kInvalidArgument,
                "spec.parameters.{}: expected a whole number of seconds from 0 to {}, got \"{}\"",
                model::kValidUntilSecondsParameter, kMaxSeconds, *text);
  }
  return std::chrono::seconds(seconds);
}

PodTemplates IndexTemplates(const std::vector<const model::PodTemplate*>& templates) {
  PodTemplates out;
  for (const model::PodTemplate* t : templates) out.emplace(t->meta.Key(), t);
  return out;
}

namespace {

std::string PodName(const model::ProvisioningRequest& request, size_t set, int i) {
  return fmt::format("{}:{}-{}", request.meta.name, set, i);
}

model::Pod CopyOf(const model::PodTemplate& t, const model::ProvisioningRequest& request,
                  size_t set, int i) {
  model::Pod pod = t.pod;
  pod.meta.name = PodName(request, set, i);
  pod.meta.namespace_ = request.meta.namespace_;
  pod.meta.uid.clear();
  pod.meta.owner_references.clear();
  pod.meta.creation_timestamp = request.meta.creation_timestamp;
  pod.meta.deletion_timestamp.reset();
  // A ':' no label value may hold: no real pod-group of the namespace can share the gang.
  pod.meta.labels["scheduling.x-k8s.io/pod-group"] = "provisioning-request:" + request.meta.name;
  pod.meta.annotations.erase(std::string(planner::kGangSizeAnnotation));
  pod.meta.annotations[std::string(kProvisioningRequestAnnotation)] = request.Key();
  pod.meta.annotations[std::string(planner::kSafeToEvictAnnotation)] = "false";
  pod.node_name.clear();
  pod.ClearNomination();
  pod.Finalize();  // its owner references and annotations changed
  // The request asks room for the pods as they will run: a template's gate (Kueue's admission
  // gate on the pods it queues) holds the real pods until then, not the request.
  pod.ClearSchedulingGates();
  pod.phase = model::PodPhase::kPending;
  return pod;
}

}  // namespace

Result<std::vector<model::Pod>> ExpandPods(const model::ProvisioningRequest& request,
                                           const PodTemplates& templates) {
  std::vector<model::Pod> pods;
  for (size_t s = 0; s < request.pod_sets.size(); ++s) {
    const model::PodSet& set = request.pod_sets[s];
    std::string key = request.meta.namespace_ + "/" + set.template_name;
    auto it = templates.find(key);
    if (it == templates.end()) {
      return Fail(Error::Code::kNotFound, "podSets[{}]: PodTemplate {} not found", s, key);
    }
    if (!it->second->error.empty()) {
      return Fail(Error::Code::kInvalidArgument, "podSets[{}]: PodTemplate {} is malformed: {}", s,
                  key, it->second->error);
    }
    for (int i = 0; i < set.count; ++i) pods.push_back(CopyOf(*it->second, request, s, i));
  }
  return pods;
}

bool IsPodOf(std::string_view pod_key, const model::ProvisioningRequest& request) {
  for (size_t s = 0; s < request.pod_sets.size(); ++s) {
    for (int i = 0; i < request.pod_sets[s].count; ++i) {
      if (pod_key == request.meta.namespace_ + "/" + PodName(request, s, i)) return true;
    }
  }
  return false;
}

Consumers IndexConsumers(const std::vector<const model::Pod*>& pods) {
  Consumers out;
  for (const model::Pod* p : pods) {
    const std::string* name = p->meta.Annotation(model::kConsumeProvisioningRequestAnnotation);
    if (name != nullptr && !p->meta.deletion_timestamp) {
      out[p->meta.namespace_ + "/" + *name].push_back(p);
    }
  }
  return out;
}

}  // namespace tidepool::autoscaler
