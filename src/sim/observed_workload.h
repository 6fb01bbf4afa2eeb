// The workload observed in a cluster state as simulator jobs (`tidepool explain --cluster`): each
// pod one job that arrives when it was created and runs as long as consolidation expects it to.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "model/pod.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace tidepool::sim {

// Why a pod of the state is not part of the workload.
enum class SkipReason {
  kFinished,           // Succeeded or Failed
  kDaemonSetOrStatic,  // comes with every node, not with the workload
  kUnboundSystem,      // kube-system pod bound to no node
  kNoRequests,         // no cpu, memory or GPU requests: it takes no room
  kResourceClaims,     // Dynamic Resource Allocation: the replay's nodes have no devices
  kNoRuntimeKnown,     // no tidepool.dev/expected-runtime and nothing run yet to go by
};
// "finished", "daemonSetOrStatic", ...: the JSON key.
std::string_view SkipReasonKey(SkipReason r);
// "finished (Succeeded or Failed)" and the like, for people.
std::string_view SkipReasonText(SkipReason r);

struct SkippedPod {
  std::string pod;  // namespace/name
  SkipReason reason = SkipReason::kFinished;
};

struct ObservedWorkload {
  Time start{};  // the earliest arrival: JobSpec::submit is the offset from it
  std::vector<JobSpec> jobs;
  int running = 0;  // jobs from running pods
  int pending = 0;  // jobs from pending pods (they arrive at `now`)
  std::vector<SkippedPod> skipped;
};

// One job per pod (JobSpec::observed, one replica, ordered by arrival): arrival at its
// creationTimestamp (startTime when it has none; never after `now`), pending pods at `now`. A
// running pod (phase Running, or bound with a startTime) runs for what it ran since its
// startTime plus its expected remaining runtime as consolidation estimates it
// (planner::ExpectedRemaining, nothing learned); a pending pod for its
// tidepool.dev/expected-runtime. Errors name the pod and the field: a running pod without
// status.startTime, a malformed annotation.
Result<ObservedWorkload> ObservedWorkloadOf(const std::vector<model::Pod>& pods, Time now);

// `base` made to replay `w`: its jobs from w.start, run until they are all done, with a horizon
// long enough for the longest of them to wait a day and still finish.
SimInput ReplayInput(const SimInput& base, ObservedWorkload w);

}  // namespace tidepool::sim
