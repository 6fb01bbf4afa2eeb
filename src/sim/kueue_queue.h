// Kueue's stand-in for gang jobs (SimConfig::queue_gangs): a gang job is held at its submit and
// admitted only once its capacity is provisioned, through the ProvisioningRequest API the live
// loop serves (docs/kueue.md), so the loop decides exactly as it would for Kueue.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/observation.h"
#include "base/time.h"
#include "model/provisioning_request.h"
#include "sim/event_queue.h"
#include "sim/workload.h"

namespace tidepool::sim {

// Kueue's default retryStrategy of a ProvisioningRequestConfig: a Failed request is replaced by a
// new one after 60 s, doubling up to 30 min, at most 3 times; then the job is rejected.
inline constexpr Duration kKueueRetryBase = std::chrono::seconds(60);
inline constexpr Duration kKueueRetryMax = std::chrono::minutes(30);
inline constexpr int kKueueRetryLimit = 3;

// Per held job: one best-effort-atomic request (and the PodTemplate of its pod) at a time, named
// "<job>-<attempt>". Provisioned=True: the job is admitted (a kAdmit event; its pods are made
// then, consuming the request). Failed=True: a kRequeue event after the backoff, or the job is
// rejected. A request leaves the observation once its job is admitted and its booking is over,
// or it failed.
class KueueQueue {
 public:
  KueueQueue(const Clock& clock, EventQueue& queue, WorldChanges& changes, const Workload& workload)
      : clock_(clock), queue_(queue), changes_(changes), workload_(workload) {}

  // Whether job `j` is held until provisioned: queue_gangs on, and a gang of two pods or more.
  bool Holds(int j, bool queue_gangs) const;
  // At the job's submit, and at a kRequeue: a new request for all of its pods.
  void Request(int j);
  // The request a job was admitted with ("" before its admission).
  const std::string& AdmittedWith(int j) const;

  // The loop's writes (SimCluster::SetProvisioningConditions): conditions merged as the API
  // server's status subresource would, transition times moving on a status change only.
  void SetConditions(std::string_view ns, std::string_view name,
                     const std::vector<model::Condition>& conditions);
  // Fills the observation's requests and templates; first forgets the retired requests (the
  // last view, which may point to them, is being replaced).
  void AddTo(autoscaler::Observation& obs);

  int64_t requests() const { return requests_; }
  int64_t failed() const { return failed_; }
  int64_t rejected() const { return rejected_; }

 private:
  struct Held {
    int job = 0;
    int attempt = 0;
    model::ProvisioningRequest request;
    model::PodTemplate pod_template;
    bool retired = false;  // done with; leaves at the next AddTo
  };
  void Retire(Held& h);

  const Clock& clock_;
  EventQueue& queue_;
  WorldChanges& changes_;
  const Workload& workload_;
  std::map<std::string, Held> open_;  // by request key: requests in the observation
  std::map<int, int> attempts_;       // per job: requests made so far
  std::map<int, std::string> admitted_;
  int64_t requests_ = 0;
  int64_t failed_ = 0;
  int64_t rejected_ = 0;
};

}  // namespace tidepool::sim
