#include "sim/kueue_queue.h"

#include <fmt/format.h>

#include <algorithm>

#include "autoscaler/backoff.h"

namespace tidepool::sim {

using model::ProvisioningCondition;

bool KueueQueue::Holds(int j, bool queue_gangs) const {
  return queue_gangs && workload_.job(j).spec->MultiPodGang();
}

void KueueQueue::Request(int j) {
  const SimJob& job = workload_.job(j);
  const JobSpec& spec = *job.spec;
  const int attempt = ++attempts_[j];
  Held h;
  h.job = j;
  h.attempt = attempt;
  h.pod_template.meta.name = spec.id;
  h.pod_template.meta.namespace_ = spec.namespace_;
  h.pod_template.pod = MakePod(spec, 0, clock_.Now());
  h.pod_template.pod.meta.name = spec.id;
  model::ProvisioningRequest& r = h.request;
  r.meta.name = fmt::format("{}-{}", spec.id, attempt);
  r.meta.namespace_ = spec.namespace_;
  r.meta.uid = r.meta.namespace_ + "/" + r.meta.name;
  r.meta.creation_timestamp = clock_.Now();
  r.class_name = std::string(model::kBestEffortAtomicClass);
  r.provisioning_class = model::ProvisioningClass::kBestEffortAtomic;
  r.pod_sets.push_back({spec.id, spec.replicas});
  open_.emplace(r.Key(), std::move(h));
  ++requests_;
  changes_.Changed();
  changes_.step_needed = true;
}

const std::string& KueueQueue::AdmittedWith(int j) const {
  static const std::string kNone;
  auto it = admitted_.find(j);
  return it == admitted_.end() ? kNone : it->second;
}

void KueueQueue::SetConditions(std::string_view ns, std::string_view name,
                               const std::vector<model::Condition>& conditions) {
  auto it = open_.find(fmt::format("{}/{}", ns, name));
  // Retired: the write of a request Kueue no longer has.
  if (it == open_.end() || it->second.retired) return;
  model::ProvisioningRequest& r = it->second.request;
  const Time now = clock_.Now();
  for (const model::Condition& c : conditions) r.SetCondition(c, now);
  changes_.Changed();
  const int j = it->second.job;
  if (r.Is(ProvisioningCondition::kFailed)) {
    ++failed_;
    const int attempt = it->second.attempt;
    Retire(it->second);
    if (admitted_.contains(j)) return;
    if (attempt > kKueueRetryLimit) {
      ++rejected_;
      return;
    }
    queue_.Push(now + autoscaler::DoublingDelay(kKueueRetryBase, kKueueRetryMax, attempt - 1),
                EventKind::kRequeue, j);
    return;
  }
  if (r.Is(ProvisioningCondition::kProvisioned) && !admitted_.contains(j)) {
    admitted_[j] = r.meta.name;
    queue_.Push(now, EventKind::kAdmit, j);
  }
  if (r.Is(ProvisioningCondition::kBookingExpired)) Retire(it->second);
}

void KueueQueue::Retire(Held& h) {
  h.retired = true;
  changes_.Changed();
}

void KueueQueue::AddTo(autoscaler::Observation& obs) {
  std::erase_if(open_, [](const auto& e) { return e.second.retired; });
  obs.provisioning_requests.clear();
  obs.pod_templates.clear();
  for (const auto& [key, h] : open_) {
    obs.provisioning_requests.push_back(&h.request);
    obs.pod_templates.push_back(&h.pod_template);
  }
}

}  // namespace tidepool::sim
