// The simulated workload: the trace's jobs and their pods, from submission through running,
// eviction (progress kept to the last checkpoint) and completion. Gangs run and fail as a whole.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "model/pod.h"
#include "sim/event_queue.h"
#include "sim/sim_config.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace tidepool::sim {

struct SimInput;

enum class PodState { kNotSubmitted, kPending, kRunning, kDone };

struct SimPod {
  std::shared_ptr<model::Pod> pod;  // from submit to its job's end
  int job = 0;
  PodState state = PodState::kNotSubmitted;
  int node = -1;  // the instance it runs on
  Time started{};
  Duration kept{};  // checkpointed progress (non-gang)
  uint64_t gen = 0;
  bool ever_started = false;
  std::optional<Time> drained_at;  // evicted through the API (a drain), pending again since
};

struct SimJob {
  const JobSpec* spec = nullptr;
  Time submit{};
  std::vector<int> pods;
  int done = 0;
  int started_once = 0;
  std::optional<Time> all_running_at;
  std::optional<Time> completed_at;
  // Gang progress.
  bool gang_running = false;
  Time run_start{};
  Duration kept{};
  uint64_t gen = 0;
  std::string shape;  // jobs of one shape fit or fail to fit alike (the binder's memo key)
};

// Builds the pod of replica `r` of `job` (a copy of JobSpec::observed when set). `checkpoint_every`
// (the simulation's checkpointEvery) is announced on the pod as tidepool.dev/checkpoint-interval,
// as a training job would, unless the observed pod announces its own.
model::Pod MakePod(const JobSpec& job, int r, Time submit,
                   std::optional<Duration> checkpoint_every = std::nullopt);

class Workload {
 public:
  Workload(const SimInput& in, const Clock& clock, EventQueue& queue, WorldChanges& changes);

  // Creates the jobs (their pods are made at submit) and queues the submissions; returns the
  // last submit time.
  Time Load();
  // The job's pods are made, pending; with `consume`, they consume that ProvisioningRequest (a
  // job KueueQueue admitted) and are created now rather than at the job's submit.
  void Submit(int job, const std::string& consume = "");
  void StartPod(int pod, int node, const std::string& node_name);
  // A gang whose members all run: its clock starts (or restarts after an eviction).
  void StartGang(int job);
  // Event handlers; stale generations are ignored.
  void OnPodFinish(int pod, uint64_t gen);
  void OnJobFinish(int job, uint64_t gen);
  // Evicts every pod running on instance `node` (it ends, or is reclaimed when `spot`).
  void EvictAllOn(int node, bool spot);
  // An eviction through the API: kNotFound unless the pod runs.
  Result<void> Evict(const std::string& key);
  // "namespace/name" of the pods running on instance `node`.
  std::vector<std::string> RunningOn(int node) const;
  // Stops every running pod at the end of the run, accounting its GPU time.
  void StopAll();

  const std::set<int>& active() const { return active_; }  // pending or running pods
  const std::set<int>& PodsOn(int node) const;
  const SimPod& pod(int i) const { return pods_[i]; }
  const SimJob& job(int i) const { return jobs_[i]; }
  const std::vector<SimJob>& jobs() const { return jobs_; }
  int64_t pending() const { return pending_; }
  int64_t jobs_done() const { return jobs_done_; }
  double gpu_ms_used() const { return gpu_ms_used_; }
  // GPU-milliseconds of progress thrown away by evictions (run since the last checkpoint, by
  // every pod of a gang that restarts), and the restarts: an evicted pod, or a gang as a whole.
  double gpu_ms_lost() const { return gpu_ms_lost_; }
  int64_t restarts() const { return restarts_; }
  // Every restart, in order; their GpuHours() add up to gpu_ms_lost().
  const std::vector<Loss>& losses() const { return losses_; }
  int64_t evictions() const { return evictions_; }
  int64_t spot_evictions() const { return spot_evictions_; }
  // The longest a pod evicted by a drain (not a spot reclaim) waited before it ran again.
  Duration drain_wait_max() const { return drain_wait_max_; }

 private:
  // Takes a running pod off its node; `evicted`: it goes pending again (progress per checkpoint).
  void StopPod(int pod, bool evicted);
  void EvictPod(int pod, bool spot);
  // Counts a restart and the work it lost.
  void Restarted(const Loss& loss);
  void FinishPod(int pod);

  const SimInput& in_;
  const Clock& clock_;
  EventQueue& queue_;
  WorldChanges& changes_;
  std::vector<SimJob> jobs_;
  std::vector<SimPod> pods_;
  std::unordered_map<std::string, int> index_;      // by namespace/name, while submitted
  std::set<int> active_;                            // pending or running
  std::unordered_map<int, std::set<int>> on_node_;  // running pods per instance
  int64_t pending_ = 0;
  int64_t jobs_done_ = 0;
  double gpu_ms_used_ = 0;  // GPU-milliseconds of running pods
  double gpu_ms_lost_ = 0;  // GPU-milliseconds of progress evictions threw away
  int64_t restarts_ = 0;
  std::vector<Loss> losses_;
  int64_t evictions_ = 0;
  int64_t spot_evictions_ = 0;
  Duration drain_wait_max_{};
};

}  // namespace tidepool::sim
