#include "sim/workload.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "planner/cluster.h"
#include "planner/disruption.h"
#include "sim/simulator.h"
#include "sim/units.h"

namespace tidepool::sim {
namespace {

constexpr std::string_view kSpotTaintKey = "kubernetes.azure.com/scalesetpriority";
constexpr std::string_view kPodGroupLabel = "scheduling.x-k8s.io/pod-group";

void AddPlacement(const JobSpec& job, model::Pod& p) {
  if (job.spot) {
    model::Toleration t;
    t.key = kSpotTaintKey;
    t.value = "spot";
    t.effect = model::TaintEffect::kNoSchedule;
    p.tolerations.push_back(std::move(t));
  }
  if (job.gpu_models.size() == 1) {
    p.node_selector.emplace(kGpuModelLabel, job.gpu_models.front());
  } else if (job.gpu_models.size() > 1) {
    model::NodeSelectorTerm term;
    term.match_expressions.push_back(
        {std::string(kGpuModelLabel), model::SelectorOp::kIn, job.gpu_models});
    p.mutable_affinity().node_required = model::NodeSelector{{std::move(term)}};
  }
}

// The pod a job observed in a cluster replays: a copy of it, submitted and not bound, without
// what belonged to its run there (node, status, checkpoint time).
model::Pod ReplayPod(const model::Pod& observed, Time submit) {
  model::Pod p = observed;
  p.meta.creation_timestamp = submit;
  p.meta.annotations.erase(std::string(planner::kLastCheckpointAnnotation));
  p.node_name.clear();
  p.ClearNomination();
  p.phase = model::PodPhase::kPending;
  p.unschedulable_condition = false;
  p.start_time.reset();
  if (!p.resource_claim_statuses().empty()) p.mutable_resource_claim_statuses().clear();
  return p;
}

}  // namespace

model::Pod MakePod(const JobSpec& job, int r, Time submit,
                   std::optional<Duration> checkpoint_every) {
  if (job.observed) {
    model::Pod p = ReplayPod(*job.observed, submit);
    if (checkpoint_every) {
      p.meta.annotations.emplace(planner::kCheckpointIntervalAnnotation,
                                 FormatDuration(*checkpoint_every));
    }
    p.Finalize();
    return p;
  }
  model::Pod p;
  p.meta.name = fmt::format("{}-{}", job.id, r);
  p.meta.namespace_ = job.namespace_;
  p.meta.uid = fmt::format("{}/{}", job.namespace_, p.meta.name);
  p.meta.creation_timestamp = submit;
  p.meta.owner_references.push_back({"batch/v1", "Job", job.id, job.namespace_ + "/" + job.id,
                                     /*controller=*/true});
  if (job.gang) {
    p.meta.labels.emplace(kPodGroupLabel, job.id);
    p.meta.annotations.emplace(planner::kGangSizeAnnotation, std::to_string(job.replicas));
  }
  if (checkpoint_every) {
    p.meta.annotations.emplace(planner::kCheckpointIntervalAnnotation,
                               FormatDuration(*checkpoint_every));
  }
  model::Container c;
  c.name = "main";
  c.requests = job.requests;
  p.containers.push_back(std::move(c));
  AddPlacement(job, p);
  if (job.priority != 0) p.priority = job.priority;
  p.phase = model::PodPhase::kPending;
  p.Finalize();
  return p;
}

Workload::Workload(const SimInput& in, const Clock& clock, EventQueue& queue, WorldChanges& changes)
    : in_(in), clock_(clock), queue_(queue), changes_(changes) {}

Time Workload::Load() {
  Time last_submit = in_.start;
  jobs_.reserve(in_.jobs.size());
  for (const JobSpec& spec : in_.jobs) {
    SimJob job;
    job.spec = &spec;
    job.submit = in_.start + spec.submit;
    last_submit = std::max(last_submit, job.submit);
    // An observed pod's placement is its own: it shares its shape with no other job.
    job.shape = fmt::format("{}|{}|{}|{}|{}|{}", spec.requests.ToString(),
                            fmt::join(spec.gpu_models, ","), spec.spot, spec.priority,
                            spec.namespace_, spec.observed ? spec.observed->Key() : std::string());
    int j = static_cast<int>(jobs_.size());
    for (int r = 0; r < spec.replicas; ++r) {  // the model::Pod is made at submit
      SimPod p;
      p.job = j;
      job.pods.push_back(static_cast<int>(pods_.size()));
      pods_.push_back(std::move(p));
    }
    jobs_.push_back(std::move(job));
    queue_.Push(jobs_.back().submit, EventKind::kSubmit, j);
  }
  return last_submit;
}

void Workload::Submit(int j, const std::string& consume) {
  SimJob& job = jobs_[j];
  int r = 0;
  for (int pod : job.pods) {
    SimPod& p = pods_[pod];
    // Pods exist from their submit to their job's end, so memory follows the active jobs.
    p.pod = std::make_shared<model::Pod>(MakePod(
        *job.spec, r++, consume.empty() ? job.submit : clock_.Now(), in_.sim.checkpoint_every));
    if (!consume.empty()) {
      p.pod->meta.annotations[std::string(model::kConsumeProvisioningRequestAnnotation)] = consume;
    }
    changes_.SetPod(p.pod);
    index_.emplace(p.pod->Key(), pod);
    p.state = PodState::kPending;
    active_.insert(pod);
    ++pending_;
  }
  changes_.Changed();
  changes_.bind_dirty = changes_.step_needed = true;
}

void Workload::StartPod(int pod, int node, const std::string& node_name) {
  const Time now = clock_.Now();
  SimPod& p = pods_[pod];
  SimJob& job = jobs_[p.job];
  p.state = PodState::kRunning;
  p.node = node;
  p.started = now;
  p.pod->node_name = node_name;
  p.pod->phase = model::PodPhase::kRunning;
  p.pod->start_time = now;
  changes_.SetPod(p.pod);
  if (p.drained_at) {
    drain_wait_max_ = std::max(drain_wait_max_, now - *p.drained_at);
    p.drained_at.reset();
  }
  on_node_[node].insert(pod);
  --pending_;
  changes_.Changed();
  if (!p.ever_started) {
    p.ever_started = true;
    if (++job.started_once == job.spec->replicas) job.all_running_at = now;
  }
  if (!job.spec->gang) {
    ++p.gen;
    queue_.Push(now + (job.spec->duration - p.kept), EventKind::kPodFinish, pod, p.gen);
  }
}

void Workload::StartGang(int j) {
  SimJob& job = jobs_[j];
  job.gang_running = true;
  job.run_start = clock_.Now();
  ++job.gen;
  queue_.Push(clock_.Now() + (job.spec->duration - job.kept), EventKind::kJobFinish, j, job.gen);
}

void Workload::StopPod(int pod, bool evicted) {
  SimPod& p = pods_[pod];
  SimJob& job = jobs_[p.job];
  if (p.state != PodState::kRunning) return;
  Duration ran = clock_.Now() - p.started;
  gpu_ms_used_ += static_cast<double>(ran.count()) * GpuShare(job.spec->requests);
  on_node_[p.node].erase(pod);
  changes_.Changed();
  p.node = -1;
  p.pod->node_name.clear();
  p.pod->start_time.reset();
  ++p.gen;  // cancels a pending finish
  changes_.bind_dirty = true;
  if (evicted) p.pod->phase = model::PodPhase::kPending;
  changes_.SetPod(p.pod);
  if (!evicted) return;
  p.state = PodState::kPending;
  ++pending_;
  changes_.step_needed = true;
  if (!job.spec->gang) {
    if (in_.sim.checkpoint_every) {
      Duration total = p.kept + ran;
      p.kept = total - total % *in_.sim.checkpoint_every;
    } else {
      p.kept = Duration{};
    }
  }
}

void Workload::EvictPod(int pod, bool spot) {
  SimPod& p = pods_[pod];
  if (p.state != PodState::kRunning) return;
  ++evictions_;
  if (spot) ++spot_evictions_;
  SimJob& job = jobs_[p.job];
  const double share = GpuShare(job.spec->requests);
  if (!job.spec->gang) {
    const Duration ran = clock_.Now() - p.started;
    const Duration done = p.kept + ran;
    StopPod(pod, /*evicted=*/true);
    Restarted({p.pod->Key(), clock_.Now(), ran, done - p.kept, share, spot});
    return;
  }
  // A distributed job fails as a whole when one worker goes: every member restarts.
  if (job.gang_running) {
    const Duration ran = clock_.Now() - job.run_start;
    const Duration total = job.kept + ran;
    job.kept = in_.sim.checkpoint_every ? total - total % *in_.sim.checkpoint_every : Duration{};
    job.gang_running = false;
    ++job.gen;
    Restarted({pods_[pod].pod->Key(), clock_.Now(), ran, total - job.kept,
               share * static_cast<double>(job.pods.size()), spot});
  }
  for (int m : job.pods) StopPod(m, /*evicted=*/true);
}

void Workload::Restarted(const Loss& loss) {
  gpu_ms_lost_ += static_cast<double>(loss.lost.count()) * loss.gpus;
  ++restarts_;
  losses_.push_back(loss);
}

void Workload::EvictAllOn(int node, bool spot) {
  auto it = on_node_.find(node);
  if (it == on_node_.end()) return;
  for (int pod : std::vector<int>(it->second.begin(), it->second.end())) EvictPod(pod, spot);
}

void Workload::FinishPod(int pod) {
  SimPod& p = pods_[pod];
  StopPod(pod, /*evicted=*/false);
  p.state = PodState::kDone;
  p.pod->phase = model::PodPhase::kSucceeded;
  changes_.SetPod(p.pod);
  active_.erase(pod);
  // No Step at once: for the live controller a bound pod's change is not urgent (its reader wakes
  // the loop for pods waiting for a node and for nodes), so the loop sees it at its next wakeup.
  SimJob& job = jobs_[p.job];
  changes_.Changed();
  if (++job.done == job.spec->replicas) {
    job.completed_at = clock_.Now();
    ++jobs_done_;
    for (int m : job.pods) {  // the job is over: its pods go away
      index_.erase(pods_[m].pod->Key());
      changes_.DeletePod(*pods_[m].pod);
      pods_[m].pod.reset();
    }
  }
}

void Workload::OnPodFinish(int pod, uint64_t gen) {
  if (pods_[pod].gen == gen && pods_[pod].state == PodState::kRunning) FinishPod(pod);
}

void Workload::OnJobFinish(int j, uint64_t gen) {
  SimJob& job = jobs_[j];
  if (job.gen != gen || !job.gang_running) return;
  job.gang_running = false;
  for (int m : job.pods) FinishPod(m);
}

Result<void> Workload::Evict(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end() || pods_[it->second].state != PodState::kRunning) {
    return Fail(Error::Code::kNotFound, "pod {} is not running", key);
  }
  const int pod = it->second;
  const SimJob& job = jobs_[pods_[pod].job];
  EvictPod(pod, /*spot=*/false);
  // Every pod the eviction sent back to pending (a gang's members too) waits from now.
  for (int m : job.spec->gang ? job.pods : std::vector<int>{pod})
    if (pods_[m].state == PodState::kPending) pods_[m].drained_at = clock_.Now();
  return {};
}

const std::set<int>& Workload::PodsOn(int node) const {
  static const std::set<int> kNone;
  auto it = on_node_.find(node);
  return it == on_node_.end() ? kNone : it->second;
}

std::vector<std::string> Workload::RunningOn(int node) const {
  std::vector<std::string> keys;
  for (int pod : PodsOn(node)) keys.push_back(pods_[pod].pod->Key());
  return keys;
}

void Workload::StopAll() {
  for (int pod : active_) StopPod(pod, false);
}

}  // namespace tidepool::sim
