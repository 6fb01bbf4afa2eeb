// Trace input for the simulator: the native CSV of docs/simulator.md and the Alibaba GPU cluster
// trace (cluster-trace-gpu-v2023), both read into one list of jobs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "model/pod.h"
#include "model/resources.h"

namespace tidepool::sim {

// The node label a job's gpu_model constrains (nodeSelector / In requirement).
inline constexpr std::string_view kGpuModelLabel = "gpu-model";

// With GPU sharing, the resource GPU shares are counted in: thousandths of a GPU. A sharing pod
// requests only this; a whole-GPU pod requests nvidia.com/gpu and 1000 of this per GPU, so
// shares and whole GPUs on one node never add up to more than its GPUs (shares are packed per
// node as a fluid amount, not per physical GPU).
inline constexpr std::string_view kGpuMilliResource = "tidepool.dev/gpu-milli";

struct TraceOptions {
  // Alibaba `gpu_milli` < 1000 (a share of one GPU): off, the pod takes a whole GPU; on, it
  // requests `gpu_milli` of kGpuMilliResource (SimConfig::gpu_sharing).
  bool gpu_sharing = false;
};

// One job of a trace: `replicas` pods with the same per-replica requests.
struct JobSpec {
  std::string id;
  Duration submit{};    // offset from the start of the trace
  Duration duration{};  // run time once running (all pods for a gang, each pod otherwise)
  int replicas = 1;
  model::Resources requests;            // per replica: cpu, memory, nvidia.com/gpu
  std::vector<std::string> gpu_models;  // allowed values of kGpuModelLabel; empty: any node
  bool gang = false;
  std::string namespace_ = "default";
  int32_t priority = 0;
  // Tolerates the kubernetes.azure.com/scalesetpriority=spot taint (Alibaba: qos BE).
  bool spot = false;
  int line = 0;            // line in the trace file (0 for generated jobs)
  bool never_ran = false;  // Alibaba: the pod was never scheduled in the original cluster
  // A pod observed in a cluster (sim/observed_workload.h): the job's one replica is a copy of it,
  // so its placement (node selector, affinity, tolerations, priority) and containers are the
  // pod's own; `requests` are its effective requests. Null for trace jobs.
  std::shared_ptr<const model::Pod> observed;

  // A gang of two pods or more: what SimConfig::queue_gangs holds and Summary's gang counts cover.
  bool MultiPodGang() const { return gang && replicas > 1; }
};

// Which format a trace is in, from its header line.
enum class TraceFormat { kNative, kAlibaba };

// Parses a trace from CSV text; `source` (the file name) prefixes errors, which name the line
// and the column ("trace.csv:7: column cpu: expected a Kubernetes quantity, got \"x\"").
// The format is detected from the header. Jobs come back sorted by (submit, line).
Result<std::vector<JobSpec>> ParseTrace(std::string_view text, std::string_view source,
                                        const TraceOptions& options = {});

// Reads and parses the file at `path`.
Result<std::vector<JobSpec>> LoadTrace(const std::string& path, const TraceOptions& options = {});

}  // namespace tidepool::sim
