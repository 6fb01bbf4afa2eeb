// Small helpers every room of the simulator uses: the GPU resources (whole GPUs, or GPU shares
// with GPU sharing) and a node's allocatable resources (hours of a duration: base/time.h).
#pragma once

#include <chrono>

#include "base/time.h"
#include "model/node.h"
#include "model/resources.h"
#include "sim/trace.h"

namespace tidepool::sim {

inline const model::ResourceId& GpuId() {
  static const model::ResourceId id = model::InternResource(model::kNvidiaGpu);
  return id;
}

inline const model::ResourceId& GpuMilliId() {
  static const model::ResourceId id = model::InternResource(kGpuMilliResource);
  return id;
}

// GPUs a pod's requests occupy: whole GPUs, or shares (kGpuMilliResource) in GPU units.
inline double GpuShare(const model::Resources& r) {
  int64_t milli = r.Get(GpuMilliId());
  return milli > 0 ? static_cast<double>(milli) / 1000 : static_cast<double>(r.Get(GpuId()));
}

inline model::Resources Allocatable(const model::Node& n) {
  return n.allocatable.IsZero() ? n.capacity : n.allocatable;
}

}  // namespace tidepool::sim
