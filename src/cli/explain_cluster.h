// `tidepool explain --cluster`: the state's pods replayed from an empty cluster on the config's
// pools with least- and most-allocated scoring, and what a MostAllocated profile would save.
#pragma once

#include <string>

#include "base/time.h"
#include "kube/codec/objects.h"
#include "sim/simulator.h"

namespace tidepool::cli {

// `settings`: the config's pools and simulated world (LoadSimSettings). Prints the advice as
// text or JSON (`output`), the KubeSchedulerConfiguration only when MostAllocated saves. Returns
// the exit code: 0, or 2 for a pod that cannot be read (the error names it and the field) or a
// failed replay.
int ExplainCluster(const sim::SimInput& settings, const kube::codec::ClusterState& state, Time now,
                   const std::string& output);

}  // namespace tidepool::cli
