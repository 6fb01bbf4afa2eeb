// `tidepool explain provreq/NS/NAME`: what the decision loop would do with one ProvisioningRequest
// of a state file, and why (docs/kueue.md); and the loop's Observation of a state file.
#pragma once

#include <string_view>

#include "autoscaler/observation.h"
#include "base/time.h"
#include "kube/codec/objects.h"
#include "model/pool.h"

namespace tidepool::cli {

// The state file's objects as the loop sees the informers' (no provider view: every pool has
// exactly its registered nodes).
autoscaler::Observation ObservationOf(const kube::codec::ClusterState& state);

// Prints the request's class and conditions, then what two passes of a fresh loop a batch
// window apart would write on it and which pools they would grow for it. `key` is
// "namespace/name". Returns 0, or 1 when the state has no such request.
int ExplainProvisioningRequest(const model::AutoscalerConfig& config,
                               const kube::codec::ClusterState& state, Time now,
                               std::string_view key);

}  // namespace tidepool::cli
