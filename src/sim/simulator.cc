#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <unordered_map>

#include "planner/cluster.h"
#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::sim {
namespace {

using autoscaler::Action;

constexpr std::string_view kSpotTaintKey = "kubernetes.azure.com/scalesetpriority";
constexpr std::string_view kPodGroupLabel = "scheduling.x-k8s.io/pod-group";

double Hours(Duration d) { return std::chrono::duration<double, std::ratio<3600>>(d).count(); }

const model::ResourceId& GpuId() {
  static const model::ResourceId id = model::InternResource(model::kNvidiaGpu);
  return id;
}

const model::ResourceId& GpuMilliId() {
  static const model::ResourceId id = model::InternResource(kGpuMilliResource);
  return id;
}

// GPUs a pod's requests occupy: whole GPUs, or shares (kGpuMilliResource) in GPU units.
double GpuShare(const model::Resources& r) {
  int64_t milli = r.Get(GpuMilliId());
  return milli > 0 ? static_cast<double>(milli) / 1000 : static_cast<double>(r.Get(GpuId()));
}

// The config the simulated world runs: with GPU sharing, every GPU pool's template advertises
// kGpuMilliResource (1000 per GPU), as a sharing device plugin would.
model::AutoscalerConfig WorldConfig(const SimInput& in) {
  model::AutoscalerConfig c = in.config;
  if (!in.sim.gpu_sharing) return c;
  for (model::Pool& pool : c.pools) {
    model::Node& t = pool.template_node;
    int64_t gpus = t.capacity.Get(GpuId());
    if (gpus <= 0) continue;
    t.capacity.Set(GpuMilliId(), gpus * 1000);
    if (!t.allocatable.IsZero()) {
      t.allocatable.Set(GpuMilliId(), t.allocatable.Get(GpuId()) * 1000);
    }
  }
  return c;
}

// Digest of the actions of a run (Summary::action_digest).
void MixDigest(uint64_t& h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

model::Resources Allocatable(const model::Node& n) {
  return n.allocatable.IsZero() ? n.capacity : n.allocatable;
}

// Builds the pod of replica `r` of `job`.
model::Pod MakePod(const JobSpec& job, int r, Time submit) {
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
  model::Container c;
  c.name = "main";
  c.requests = job.requests;
  p.containers.push_back(std::move(c));
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
    p.affinity.node_required = model::NodeSelector{{std::move(term)}};
  }
  if (job.priority != 0) p.priority = job.priority;
  p.phase = model::PodPhase::kPending;
  p.Finalize();
  return p;
}

class Simulator {
 public:
  explicit Simulator(const SimInput& in)
      : in_(in), config_(WorldConfig(in)), loop_(config_, in.loop_options), rng_(in.sim.seed) {}

  Result<Summary> Run();

 private:
  enum class EventKind {
    kSubmit,
    kNodeBoot,
    kPodFinish,
    kJobFinish,
    kSpotNotice,
    kSpotKill,
    kStockoutEnd
  };
  struct Event {
    Time at;
    uint64_t seq;
    EventKind kind;
    int index;  // job, node, pod or pool index
    uint64_t gen;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  struct SimNode {
    std::string name;
    int pool = 0;
    Time requested{};
    std::optional<Time> end;  // deleted / cancelled / reclaimed
    bool joined = false;
    std::unique_ptr<model::Node> node;  // once joined
    std::set<int> pods;
    bool alive() const { return !end.has_value(); }
  };
  enum class PodState { kNotSubmitted, kPending, kRunning, kDone };
  struct SimPod {
    std::unique_ptr<model::Pod> pod;
    int job = 0;
    PodState state = PodState::kNotSubmitted;
    int node = -1;
    Time started{};
    Duration kept{};  // checkpointed progress (non-gang)
    uint64_t gen = 0;
    bool ever_started = false;
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
    std::string shape;  // binder memo key
  };
  struct SimPool {
    const model::Pool* pool = nullptr;
    const PoolSimConfig* sim = nullptr;
    DurationRange boot;
    int target = 0;
    int waiting = 0;         // target raised during a stockout: no instance yet
    std::vector<int> nodes;  // alive instances
    int next_id = 0;
    int64_t gpus = 0;
  };

  // Something the loop observes changed (a node, a pod, a taint, a pool's target).
  void Changed() { ++version_; }
  void Push(Time at, EventKind kind, int index, uint64_t gen = 0) {
    queue_.push({at, seq_++, kind, index, gen});
  }
  bool InStockout(const SimPool& p, Time t) const {
    if (p.sim == nullptr) return false;
    for (const auto& [a, b] : p.sim->stockouts)
      if (t >= in_.start + a && t < in_.start + b) return true;
    return false;
  }
  int CreateInstance(int pool, Time now, bool ready_now);
  void EndInstance(int node, Time now);
  void JoinNode(int node, Time now);
  void HandleEvent(const Event& e);
  void Submit(int job);
  void StartPod(int pod, int node);
  // Takes a running pod off its node; `evicted`: it goes pending again (progress per checkpoint).
  void StopPod(int pod, bool evicted);
  void EvictPod(int pod, bool spot);
  void FinishPod(int pod);
  void Bind();
  const autoscaler::Observation& Observe();
  // Adds a timeline point when nodes or pending pods changed; `last`: always (the end of the run).
  void RecordTimeline(bool last = false);
  void Execute(const std::vector<Action>& actions);
  void StepLoop();
  bool Finished() const;
  double CostAt(Time t) const;
  std::string CheckInvariants();
  Summary Summarize();

  const SimInput& in_;
  const model::AutoscalerConfig config_;  // WorldConfig(in_)
  autoscaler::Autoscaler loop_;
  std::mt19937_64 rng_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t seq_ = 0;
  Time now_{};

  std::vector<SimPool> pools_;
  std::map<std::string, int, std::less<>> pool_index_;
  std::vector<SimNode> nodes_;
  std::map<std::string, int, std::less<>> joined_;  // alive joined nodes by name
  std::vector<SimPod> pods_;
  std::unordered_map<std::string, int> pod_index_;  // by namespace/name
  std::set<int> active_pods_;                       // pending or running
  std::vector<SimJob> jobs_;
  int64_t jobs_done_ = 0;

  bool bind_dirty_ = false;
  bool step_needed_ = false;
  // Observation::version: bumped by every change the loop could see; the last observation is
  // reused while it stands.
  uint64_t version_ = 1;
  autoscaler::Observation obs_;
  uint64_t obs_version_ = 0;
  std::vector<std::tuple<int, int, bool>> obs_pools_;  // target, registered, stockout per pool
  int64_t pending_pods_ = 0;
  uint64_t timeline_version_ = 0;
  double timeline_cost_ = 0;
  Time timeline_at_{};
  Summary s_;
  double gpu_ms_used_ = 0;  // GPU-milliseconds of running pods
  double last_cost_ = 0;
  std::string violation_;
};

int Simulator::CreateInstance(int pool, Time now, bool ready_now) {
  SimPool& p = pools_[pool];
  SimNode n;
  n.name = fmt::format("{}-{:05d}", p.pool->name, p.next_id++);
  n.pool = pool;
  n.requested = now;
  int idx = static_cast<int>(nodes_.size());
  nodes_.push_back(std::move(n));
  p.nodes.push_back(idx);
  int& peak = s_.peak_nodes[p.pool->name];
  peak = std::max(peak, static_cast<int>(p.nodes.size()));
  Changed();
  if (ready_now) {
    JoinNode(idx, now);
  } else {
    std::uniform_int_distribution<int64_t> d(p.boot.lo.count(), p.boot.hi.count());
    Push(now + Duration(d(rng_)), EventKind::kNodeBoot, idx);
  }
  return idx;
}

void Simulator::JoinNode(int idx, Time now) {
  SimNode& n = nodes_[idx];
  if (!n.alive() || n.joined) return;
  const SimPool& p = pools_[n.pool];
  auto node = std::make_unique<model::Node>(p.pool->template_node);
  node->meta.name = n.name;
  node->meta.uid = n.name;
  node->meta.labels[std::string(model::kLabelPool)] = p.pool->name;
  node->meta.labels[std::string(model::kLabelHostname)] = n.name;
  if (!p.pool->instance_type.empty()) {
    node->meta.labels[std::string(model::kLabelInstanceType)] = p.pool->instance_type;
  }
  node->meta.creation_timestamp = now;
  node->provider_id = "sim://" + n.name;
  node->allocatable = Allocatable(*node);
  node->ready = true;
  n.node = std::move(node);
  n.joined = true;
  joined_.emplace(n.name, idx);
  Changed();
  if (p.sim != nullptr && p.sim->evictions_per_node_hour > 0) {
    std::exponential_distribution<double> d(p.sim->evictions_per_node_hour);
    double hours = d(rng_);
    if (hours < 24.0 * 365 * 10) {
      Push(now + Duration(static_cast<int64_t>(hours * 3600e3)), EventKind::kSpotNotice, idx);
    }
  }
  bind_dirty_ = step_needed_ = true;
}

void Simulator::EndInstance(int idx, Time now) {
  SimNode& n = nodes_[idx];
  if (!n.alive()) return;
  for (int pod : std::vector<int>(n.pods.begin(), n.pods.end())) EvictPod(pod, false);
  n.end = now;
  SimPool& p = pools_[n.pool];
  std::erase(p.nodes, idx);
  if (n.joined) joined_.erase(n.name);
  n.node.reset();
  Changed();
  bind_dirty_ = step_needed_ = true;
}

void Simulator::Submit(int j) {
  SimJob& job = jobs_[j];
  int r = 0;
  for (int pod : job.pods) {
    SimPod& p = pods_[pod];
    // Pods exist from their submit to their job's end, so memory follows the active jobs.
    p.pod = std::make_unique<model::Pod>(MakePod(*job.spec, r++, job.submit));
    pod_index_.emplace(p.pod->Key(), pod);
    p.state = PodState::kPending;
    active_pods_.insert(pod);
    ++pending_pods_;
  }
  Changed();
  bind_dirty_ = step_needed_ = true;
}

void Simulator::StartPod(int pod, int node) {
  SimPod& p = pods_[pod];
  SimJob& job = jobs_[p.job];
  p.state = PodState::kRunning;
  p.node = node;
  p.started = now_;
  p.pod->node_name = nodes_[node].name;
  p.pod->phase = model::PodPhase::kRunning;
  p.pod->start_time = now_;
  nodes_[node].pods.insert(pod);
  --pending_pods_;
  Changed();
  if (!p.ever_started) {
    p.ever_started = true;
    if (++job.started_once == job.spec->replicas) job.all_running_at = now_;
  }
  if (!job.spec->gang) {
    ++p.gen;
    Push(now_ + (job.spec->duration - p.kept), EventKind::kPodFinish, pod, p.gen);
  }
}

void Simulator::StopPod(int pod, bool evicted) {
  SimPod& p = pods_[pod];
  SimJob& job = jobs_[p.job];
  if (p.state != PodState::kRunning) return;
  Duration ran = now_ - p.started;
  gpu_ms_used_ += static_cast<double>(ran.count()) * GpuShare(job.spec->requests);
  nodes_[p.node].pods.erase(pod);
  Changed();
  p.node = -1;
  p.pod->node_name.clear();
  p.pod->start_time.reset();
  ++p.gen;  // cancels a pending finish
  bind_dirty_ = true;
  if (!evicted) return;
  p.state = PodState::kPending;
  p.pod->phase = model::PodPhase::kPending;
  ++pending_pods_;
  step_needed_ = true;
  if (!job.spec->gang) {
    if (in_.sim.checkpoint_every) {
      Duration total = p.kept + ran;
      p.kept = total - total % *in_.sim.checkpoint_every;
    } else {
      p.kept = Duration{};
    }
  }
}

void Simulator::EvictPod(int pod, bool spot) {
  SimPod& p = pods_[pod];
  if (p.state != PodState::kRunning) return;
  ++s_.evictions;
  if (spot) ++s_.spot_evictions;
  SimJob& job = jobs_[p.job];
  if (job.spec->gang) {
    // A distributed job fails as a whole when one worker goes: every member restarts.
    if (job.gang_running) {
      Duration total = job.kept + (now_ - job.run_start);
      job.kept = in_.sim.checkpoint_every ? total - total % *in_.sim.checkpoint_every : Duration{};
      job.gang_running = false;
      ++job.gen;
    }
    for (int m : job.pods) StopPod(m, /*evicted=*/true);
  } else {
    StopPod(pod, /*evicted=*/true);
  }
}

void Simulator::FinishPod(int pod) {
  SimPod& p = pods_[pod];
  StopPod(pod, /*evicted=*/false);
  p.state = PodState::kDone;
  p.pod->phase = model::PodPhase::kSucceeded;
  active_pods_.erase(pod);
  step_needed_ = true;
  SimJob& job = jobs_[p.job];
  Changed();
  if (++job.done == job.spec->replicas) {
    job.completed_at = now_;
    ++jobs_done_;
    for (int m : job.pods) {  // the job is over: its pods go away
      pod_index_.erase(pods_[m].pod->Key());
      pods_[m].pod.reset();
    }
  }
}

void Simulator::HandleEvent(const Event& e) {
  ++s_.sim_events;
  switch (e.kind) {
    case EventKind::kSubmit:
      Submit(e.index);
      break;
    case EventKind::kNodeBoot:
      JoinNode(e.index, now_);
      break;
    case EventKind::kPodFinish:
      if (pods_[e.index].gen == e.gen && pods_[e.index].state == PodState::kRunning) {
        FinishPod(e.index);
      }
      break;
    case EventKind::kJobFinish: {
      SimJob& job = jobs_[e.index];
      if (job.gen != e.gen || !job.gang_running) break;
      job.gang_running = false;
      for (int m : job.pods) FinishPod(m);
      break;
    }
    case EventKind::kSpotNotice:
      if (nodes_[e.index].alive())
        Push(now_ + in_.sim.eviction_notice, EventKind::kSpotKill, e.index);
      break;
    case EventKind::kSpotKill: {
      SimNode& n = nodes_[e.index];
      if (!n.alive()) break;
      for (int pod : std::vector<int>(n.pods.begin(), n.pods.end())) EvictPod(pod, true);
      --pools_[n.pool].target;
      EndInstance(e.index, now_);
      break;
    }
    case EventKind::kStockoutEnd: {
      SimPool& p = pools_[e.index];
      if (InStockout(p, now_)) break;
      for (; p.waiting > 0; --p.waiting) CreateInstance(e.index, now_, false);
      step_needed_ = true;
      break;
    }
  }
}

void Simulator::Bind() {
  if (!bind_dirty_) return;
  bind_dirty_ = false;
  bool any_pending = false;
  for (int pod : active_pods_) {
    if (pods_[pod].state == PodState::kPending) {
      any_pending = true;
      break;
    }
  }
  if (!any_pending || joined_.empty()) return;
  sched::ClusterSnapshot snap;
  std::vector<int> slot_node;  // snapshot index -> node index
  for (const auto& [name, idx] : joined_) {
    const SimNode& n = nodes_[idx];
    auto i = snap.AddNode(n.node.get());
    if (!i) continue;
    slot_node.push_back(idx);
    for (int pod : n.pods) (void)snap.AddPod(pods_[pod].pod.get(), *i);
  }
  const bool most = in_.sim.scheduler == ScoringPolicy::kMostAllocated;
  auto best_node = [&](const model::Pod& pod) -> sched::NodeIndex {
    sched::FitChecker checker(pod, snap);
    sched::NodeIndex best = sched::kNoNode;
    double best_score = -1;
    for (sched::NodeIndex i = 0; i < snap.NodeSlots(); ++i) {
      const sched::NodeInfo& info = snap.Get(i);
      if (info.removed || !checker.Check(i).fits()) continue;
      double sum = 0;
      int n = 0;
      for (model::ResourceId r : {model::kCpu, model::kMemory, GpuId(), GpuMilliId()}) {
        int64_t alloc = info.allocatable.Get(r);
        if (alloc <= 0) continue;
        double used = static_cast<double>(info.requested.Get(r) + pod.requests.Get(r)) / alloc;
        sum += most ? used : 1 - used;
        ++n;
      }
      double score = n == 0 ? 0 : sum / n;
      if (score > best_score) {
        best_score = score;
        best = i;
      }
    }
    return best;
  };
  std::set<std::string> failed_shapes;
  std::vector<int> pending;
  for (int pod : active_pods_)
    if (pods_[pod].state == PodState::kPending) pending.push_back(pod);
  for (size_t k = 0; k < pending.size();) {
    int j = pods_[pending[k]].job;
    size_t end = k;
    while (end < pending.size() && pods_[pending[end]].job == j) ++end;
    SimJob& job = jobs_[j];
    if (failed_shapes.contains(job.shape)) {
      k = end;
      continue;
    }
    if (job.spec->gang) {
      snap.Fork();
      std::vector<std::pair<int, int>> placed;
      bool ok = true;
      for (size_t x = k; x < end && ok; ++x) {
        const model::Pod& pod = *pods_[pending[x]].pod;
        sched::NodeIndex i = best_node(pod);
        if (i == sched::kNoNode) {
          ok = false;
        } else {
          (void)snap.AddPod(&pod, i);
          placed.emplace_back(pending[x], slot_node[i]);
        }
      }
      if (ok) {
        snap.Commit();
        for (auto [pod, node] : placed) StartPod(pod, node);
        if (job.started_once == job.spec->replicas) {
          job.gang_running = true;
          job.run_start = now_;
          ++job.gen;
          Push(now_ + (job.spec->duration - job.kept), EventKind::kJobFinish, j, job.gen);
        }
      } else {
        snap.Revert();
        failed_shapes.insert(job.shape);
      }
    } else {
      for (size_t x = k; x < end; ++x) {
        const model::Pod& pod = *pods_[pending[x]].pod;
        sched::NodeIndex i = best_node(pod);
        if (i == sched::kNoNode) {
          failed_shapes.insert(job.shape);
          break;
        }
        (void)snap.AddPod(&pod, i);
        StartPod(pending[x], slot_node[i]);
      }
    }
    k = end;
  }
  // A gang is one job: StartPod above only reports the first start of each member.
  for (size_t k = 0; k < pending.size(); ++k) {
    SimJob& job = jobs_[pods_[pending[k]].job];
    if (!job.spec->gang || job.gang_running) continue;
    bool all = std::all_of(job.pods.begin(), job.pods.end(),
                           [&](int p) { return pods_[p].state == PodState::kRunning; });
    if (all) {  // restarted gang whose members all run again
      job.gang_running = true;
      job.run_start = now_;
      ++job.gen;
      Push(now_ + (job.spec->duration - job.kept), EventKind::kJobFinish, pods_[pending[k]].job,
           job.gen);
    }
  }
}

const autoscaler::Observation& Simulator::Observe() {
  // Stockout windows open without an event: compare what the provider would report.
  bool pools_changed = obs_pools_.size() != pools_.size();
  obs_pools_.resize(pools_.size());
  for (size_t i = 0; i < pools_.size(); ++i) {
    const SimPool& p = pools_[i];
    std::tuple<int, int, bool> now{p.target, static_cast<int>(p.nodes.size()), InStockout(p, now_)};
    if (obs_pools_[i] != now) {
      obs_pools_[i] = now;
      pools_changed = true;
    }
  }
  if (pools_changed) Changed();
  if (obs_version_ == version_) return obs_;
  obs_version_ = version_;
  autoscaler::Observation& obs = obs_;
  obs.version = version_;
  obs.nodes.clear();
  obs.nodes.reserve(joined_.size());
  for (const auto& [name, idx] : joined_) obs.nodes.push_back(nodes_[idx].node.get());
  obs.pods.clear();
  obs.pods.reserve(active_pods_.size());
  for (int pod : active_pods_) obs.pods.push_back(pods_[pod].pod.get());
  obs.pools.clear();
  for (size_t i = 0; i < pools_.size(); ++i) {
    autoscaler::PoolObservation po;
    po.pool = pools_[i].pool->name;
    std::tie(po.target, po.registered, po.stockout) = obs_pools_[i];
    if (po.stockout) po.stockout_reason = "simulated stockout window";
    obs.pools.push_back(std::move(po));
  }
  return obs;
}

void Simulator::RecordTimeline(bool last) {
  if (!in_.record_timeline) return;
  Timeline& tl = s_.timeline;
  if (tl.points.empty()) {
    for (const SimPool& p : pools_) tl.pools.push_back(p.pool->name);
  } else {
    // Billing since the last point, at the node counts of the last point.
    double last_rate = 0;
    const TimelinePoint& last = tl.points.back();
    for (size_t i = 0; i < pools_.size(); ++i) {
      last_rate += last.nodes[i] * pools_[i].pool->price_per_hour;
    }
    timeline_cost_ += last_rate * Hours(now_ - timeline_at_);
  }
  timeline_at_ = now_;
  if (timeline_version_ == version_ && !tl.points.empty() && !last) return;
  timeline_version_ = version_;
  TimelinePoint pt;
  pt.hours = Hours(now_ - in_.start);
  for (const SimPool& p : pools_) pt.nodes.push_back(static_cast<int>(p.nodes.size()));
  pt.pending = pending_pods_;
  pt.cost = timeline_cost_;
  if (!last && !tl.points.empty() && tl.points.back().nodes == pt.nodes &&
      tl.points.back().pending == pt.pending) {
    return;
  }
  if (!tl.points.empty() && tl.points.back().hours == pt.hours) {
    tl.points.back() = std::move(pt);  // several changes in one instant: keep the last
  } else {
    tl.points.push_back(std::move(pt));
  }
}

void Simulator::Execute(const std::vector<Action>& actions) {
  for (const Action& a : actions) {
    auto pool_it = pool_index_.find(a.pool);
    switch (a.kind) {
      case Action::Kind::kIncreasePool: {
        if (pool_it == pool_index_.end() || a.count <= 0) {
          loop_.OnIncreaseResult(a.pool, a.count,
                                 InvalidArgument("unknown pool or count \"{}\"", a.pool), now_);
          break;
        }
        SimPool& p = pools_[pool_it->second];
        if (p.target + a.count > p.pool->max) {
          if (in_.sim.check_invariants && violation_.empty()) {
            violation_ =
                fmt::format("{}: pool {} asked to grow to {} above its max {}", FormatRfc3339(now_),
                            p.pool->name, p.target + a.count, p.pool->max);
          }
          loop_.OnIncreaseResult(
              a.pool, a.count,
              InvalidArgument("pool {} would exceed its max size {}", p.pool->name, p.pool->max),
              now_);
          break;
        }
        p.target += a.count;
        s_.scale_ups += a.count;
        if (InStockout(p, now_)) {
          p.waiting += a.count;
        } else {
          for (int i = 0; i < a.count; ++i) CreateInstance(pool_it->second, now_, false);
        }
        loop_.OnIncreaseResult(a.pool, a.count, {}, now_);
        break;
      }
      case Action::Kind::kDecreaseTarget: {
        if (pool_it == pool_index_.end()) break;
        SimPool& p = pools_[pool_it->second];
        int left = a.count;
        int w = std::min(left, p.waiting);
        p.waiting -= w;
        left -= w;
        int cancelled = w;
        for (int k = static_cast<int>(p.nodes.size()) - 1; k >= 0 && left > 0; --k) {
          int idx = p.nodes[k];
          if (nodes_[idx].joined) continue;
          EndInstance(idx, now_);
          --left;
          ++cancelled;
        }
        p.target -= cancelled;
        loop_.OnDecreaseResult(a.pool, a.count, {}, now_);
        break;
      }
      case Action::Kind::kTaintNode:
      case Action::Kind::kMarkCandidate:
      case Action::Kind::kUnmarkCandidate:
      case Action::Kind::kUntaintNode: {
        auto it = joined_.find(a.node);
        bool taint = a.kind == Action::Kind::kTaintNode;
        if (it == joined_.end()) {
          if (taint) {
            loop_.OnTaintResult(a.node, Fail(Error::Code::kNotFound, "node {} not found", a.node),
                                now_);
          }
          break;
        }
        model::Node& node = *nodes_[it->second].node;
        bool candidate =
            a.kind == Action::Kind::kMarkCandidate || a.kind == Action::Kind::kUnmarkCandidate;
        model::Taint t{
            std::string(candidate ? planner::kDeletionCandidateTaint : planner::kToBeDeletedTaint),
            fmt::format("{}", now_.time_since_epoch().count() / 1000),
            candidate ? model::TaintEffect::kPreferNoSchedule : model::TaintEffect::kNoSchedule};
        std::erase_if(node.taints, [&](const model::Taint& x) { return x.key == t.key; });
        Changed();
        if (taint || a.kind == Action::Kind::kMarkCandidate) node.taints.push_back(t);
        if (!taint) bind_dirty_ = true;
        if (taint) loop_.OnTaintResult(a.node, {}, now_);
        break;
      }
      case Action::Kind::kEvictPods:
        for (const std::string& key : a.pods) {
          auto it = pod_index_.find(key);
          if (it == pod_index_.end() || pods_[it->second].state != PodState::kRunning ||
              nodes_[pods_[it->second].node].name != a.node) {
            loop_.OnEvictResult(
                a.node, key, Fail(Error::Code::kNotFound, "pod {} not on {}", key, a.node), now_);
            continue;
          }
          EvictPod(it->second, false);
          loop_.OnEvictResult(a.node, key, {}, now_);
        }
        break;
      case Action::Kind::kDeleteNode: {
        auto it = joined_.find(a.node);
        if (it == joined_.end()) {
          loop_.OnDeleteResult(a.node, Fail(Error::Code::kNotFound, "node {} not found", a.node),
                               now_);
          break;
        }
        int idx = it->second;
        --pools_[nodes_[idx].pool].target;
        EndInstance(idx, now_);
        ++s_.scale_downs;
        loop_.OnDeleteResult(a.node, {}, now_);
        break;
      }
      case Action::Kind::kEvent:
        ++s_.loop_events;
        break;
    }
  }
}

void Simulator::StepLoop() {
  for (int guard = 0; guard < 50; ++guard) {
    step_needed_ = false;
    std::vector<Action> actions = loop_.Step(Observe(), now_);
    ++s_.steps;
    for (const Action& a : actions) {
      MixDigest(s_.action_digest, static_cast<uint64_t>(now_.time_since_epoch().count()));
      MixDigest(s_.action_digest, std::hash<std::string>()(autoscaler::DescribeAction(a)));
    }
    Execute(actions);
    Bind();
    if (loop_.NextWakeup() > now_ && !step_needed_) return;
  }
}

bool Simulator::Finished() const {
  if (jobs_done_ < static_cast<int64_t>(jobs_.size())) return false;
  if (in_.stop_when_jobs_done) return true;
  for (const SimPool& p : pools_) {
    if (p.waiting > 0 || static_cast<int>(p.nodes.size()) > std::max(0, p.pool->min)) return false;
  }
  return true;
}

double Simulator::CostAt(Time t) const {
  double cost = 0;
  for (const SimNode& n : nodes_) {
    Time end = n.end.value_or(t);
    cost += Hours(end - n.requested) * pools_[n.pool].pool->price_per_hour;
  }
  return cost;
}

std::string Simulator::CheckInvariants() {
  std::string at = FormatRfc3339(now_);
  for (const SimPool& p : pools_) {
    if (p.target > p.pool->max || static_cast<int>(p.nodes.size()) > p.pool->max) {
      return fmt::format("{}: pool {} has target {} and {} instances, above its max {}", at,
                         p.pool->name, p.target, p.nodes.size(), p.pool->max);
    }
  }
  for (int pod : active_pods_) {
    const SimPod& p = pods_[pod];
    if (p.state != PodState::kRunning) continue;
    const SimNode& n = nodes_[p.node];
    if (!n.alive() || !n.joined || !n.node->ready) {
      return fmt::format("{}: pod {} runs on node {} which is not ready", at, p.pod->Key(), n.name);
    }
  }
  for (const SimJob& job : jobs_) {
    if (!job.spec->gang || job.completed_at) continue;
    int running = 0;
    for (int m : job.pods) running += pods_[m].state == PodState::kRunning;
    if (running != 0 && running != job.spec->replicas) {
      return fmt::format("{}: gang job {} has {} of {} members running", at, job.spec->id, running,
                         job.spec->replicas);
    }
    if (running != 0) {
      Time first = pods_[job.pods.front()].started;
      for (int m : job.pods) {
        if (pods_[m].started != first) {
          return fmt::format("{}: gang job {} members started at different times", at,
                             job.spec->id);
        }
      }
    }
  }
  int64_t pending = 0;
  for (int pod : active_pods_) pending += pods_[pod].state == PodState::kPending;
  if (pending != pending_pods_) {
    return fmt::format("{}: {} pods pending, counted {}", at, pending, pending_pods_);
  }
  double cost = CostAt(now_);
  if (cost + 1e-9 < last_cost_) {
    return fmt::format("{}: cost went down from {} to {}", at, last_cost_, cost);
  }
  last_cost_ = cost;
  return {};
}

Summary Simulator::Summarize() {
  Summary& s = s_;
  RecordTimeline(/*last=*/true);  // close the timeline at the end of the run
  for (int pod : active_pods_) StopPod(pod, false);  // accounts GPU time up to the end
  for (SimNode& n : nodes_) {
    Time end = n.end.value_or(now_);
    const SimPool& p = pools_[n.pool];
    double h = Hours(end - n.requested);
    s.node_hours[p.pool->name] += h;
    s.pool_cost[p.pool->name] += h * p.pool->price_per_hour;
    s.cost += h * p.pool->price_per_hour;
    s.gpu_hours_paid += h * static_cast<double>(p.gpus);
  }
  for (const SimPool& p : pools_) {
    s.node_hours.try_emplace(p.pool->name, 0.0);
    s.pool_cost.try_emplace(p.pool->name, 0.0);
  }
  s.gpu_hours_used = gpu_ms_used_ / 3600e3;
  std::vector<double> waits;
  std::vector<double> gpu_waits;
  std::map<std::string, std::vector<double>> gpu_waits_by_namespace;
  for (const SimJob& job : jobs_) {
    const bool gpu = job.spec->requests.gpus() > 0;
    if (gpu) ++s.gpu_jobs;
    if (gpu && job.all_running_at) {
      double w = std::chrono::duration<double>(*job.all_running_at - job.submit).count();
      gpu_waits.push_back(w);
      gpu_waits_by_namespace[job.spec->namespace_].push_back(w);
    }
    ++s.jobs;
    if (job.completed_at) {
      ++s.jobs_completed;
    } else {
      ++s.jobs_unfinished;
    }
    if (job.spec->never_ran) ++s.jobs_never_ran_in_trace;
    if (job.all_running_at) {
      waits.push_back(std::chrono::duration<double>(*job.all_running_at - job.submit).count());
    } else {
      ++s.jobs_never_started;
    }
  }
  std::sort(waits.begin(), waits.end());
  s.waits = waits;
  auto pct = [&](double q) {
    if (waits.empty()) return 0.0;
    size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(waits.size())));
    return waits[std::clamp<size_t>(rank, 1, waits.size()) - 1];
  };
  s.wait_p50 = pct(0.5);
  s.wait_p95 = pct(0.95);
  auto p95 = [](std::vector<double>& v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  };
  s.wait_p95_gpu = p95(gpu_waits);
  for (auto& [ns, w] : gpu_waits_by_namespace) s.wait_p95_gpu_by_namespace[ns] = p95(w);
  s.wait_max = waits.empty() ? 0 : waits.back();
  s.lower_bound_cost = LowerBoundCost(config_, in_.jobs, &s.lower_bound_jobs_excluded);
  for (const SimPool& p : pools_) s.peak_nodes.try_emplace(p.pool->name, 0);
  s.simulated_hours = Hours(now_ - in_.start);
  return s;
}

Result<Summary> Simulator::Run() {
  for (const auto& [name, _] : in_.sim.pools) {
    if (config_.FindPool(name) == nullptr) {
      return InvalidArgument("simulation config: pools.{}: no pool of that name in the config",
                             name);
    }
  }
  now_ = in_.start;
  for (const model::Pool& pool : config_.pools) {
    SimPool p;
    p.pool = &pool;
    if (auto it = in_.sim.pools.find(pool.name); it != in_.sim.pools.end()) p.sim = &it->second;
    p.gpus = Allocatable(pool.template_node).gpus();
    p.boot = p.gpus > 0 ? in_.sim.gpu_boot_delay : in_.sim.cpu_boot_delay;
    if (p.sim && p.sim->boot_delay) p.boot = *p.sim->boot_delay;
    pool_index_.emplace(pool.name, static_cast<int>(pools_.size()));
    pools_.push_back(std::move(p));
  }
  for (size_t i = 0; i < pools_.size(); ++i) {
    SimPool& p = pools_[i];
    p.target = std::max(0, p.pool->min);
    for (int k = 0; k < p.target; ++k) CreateInstance(static_cast<int>(i), now_, true);
    if (p.sim) {
      for (const auto& [a, b] : p.sim->stockouts) Push(in_.start + b, EventKind::kStockoutEnd, i);
    }
  }
  Time last_submit = in_.start;
  jobs_.reserve(in_.jobs.size());
  for (const JobSpec& spec : in_.jobs) {
    SimJob job;
    job.spec = &spec;
    job.submit = in_.start + spec.submit;
    last_submit = std::max(last_submit, job.submit);
    job.shape =
        fmt::format("{}|{}|{}|{}|{}", spec.requests.ToString(), fmt::join(spec.gpu_models, ","),
                    spec.spot, spec.priority, spec.namespace_);
    int j = static_cast<int>(jobs_.size());
    for (int r = 0; r < spec.replicas; ++r) {  // the model::Pod is made at submit
      SimPod p;
      p.job = j;
      job.pods.push_back(static_cast<int>(pods_.size()));
      pods_.push_back(std::move(p));
    }
    jobs_.push_back(std::move(job));
    Push(jobs_.back().submit, EventKind::kSubmit, j);
  }
  const Time horizon = last_submit + in_.horizon_after_last_submit;
  constexpr Time kNever = Time::max();
  step_needed_ = true;
  while (true) {
    Time next_event = queue_.empty() ? kNever : queue_.top().at;
    Time wake = std::max(loop_.NextWakeup(), now_);
    Time t = step_needed_ ? now_ : std::min(next_event, wake);
    if (t > horizon) {
      s_.hit_horizon = true;
      now_ = horizon;
      break;
    }
    now_ = t;
    while (!queue_.empty() && queue_.top().at <= now_) {
      Event e = queue_.top();
      queue_.pop();
      HandleEvent(e);
    }
    Bind();
    if (step_needed_ || loop_.NextWakeup() <= now_) StepLoop();
    step_needed_ = false;
    RecordTimeline();
    if (in_.sim.check_invariants) {
      if (violation_.empty()) violation_ = CheckInvariants();
      if (!violation_.empty())
        return Fail(Error::Code::kInternal, "invariant violated: {}", violation_);
    }
    if (Finished()) break;
  }
  return Summarize();
}

}  // namespace

Time SimInput::DefaultStart() {
  using namespace std::chrono;
  return time_point_cast<milliseconds>(sys_days{year{2026} / January / 1});
}

double LowerBoundCost(const model::AutoscalerConfig& config, const std::vector<JobSpec>& jobs,
                      int64_t* excluded) {
  double total = 0;
  int64_t skipped = 0;
  std::map<std::string, double> memo;  // shape -> cheapest price per replica-hour
  for (const JobSpec& job : jobs) {
    std::string shape =
        fmt::format("{}|{}|{}", job.requests.ToString(), fmt::join(job.gpu_models, ","), job.spot);
    auto it = memo.find(shape);
    if (it == memo.end()) {
      model::Pod pod = MakePod(job, 0, Time{});
      double best = std::numeric_limits<double>::infinity();
      for (const model::Pool& pool : config.pools) {
        model::Node node = pool.template_node;
        node.meta.name = pool.name + "-template";
        node.meta.labels[std::string(model::kLabelPool)] = pool.name;
        node.meta.labels[std::string(model::kLabelHostname)] = node.meta.name;
        model::Resources alloc = Allocatable(node);
        node.allocatable = alloc;
        if (!sched::CheckNodeStatic(pod, node).fits()) continue;
        if (!sched::CheckResources(pod, alloc, model::Resources()).fits()) continue;
        double frac = 0;
        for (model::ResourceId r : {model::kCpu, model::kMemory, GpuId(), GpuMilliId()}) {
          int64_t a = alloc.Get(r);
          if (a > 0) frac = std::max(frac, static_cast<double>(job.requests.Get(r)) / a);
        }
        best = std::min(best, frac * pool.price_per_hour);
      }
      it = memo.emplace(shape, best).first;
    }
    if (std::isinf(it->second)) {
      ++skipped;
      continue;
    }
    total += it->second * job.replicas * Hours(job.duration);
  }
  if (excluded) *excluded = skipped;
  return total;
}

Result<Summary> RunSimulation(const SimInput& input) {
  Simulator sim(input);
  return sim.Run();
}

}  // namespace tidepool::sim
