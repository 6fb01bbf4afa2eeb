#include "sim/simulator.h"

#include <fmt/format.h>

#include "actuator/actuator.h"
#include "sim/binder.h"
#include "sim/event_queue.h"
#include "sim/invariants.h"
#include "sim/ledger.h"
#include "sim/sim_cloud.h"
#include "sim/sim_cluster.h"
#include "sim/units.h"
#include "sim/workload.h"

namespace tidepool::sim {
namespace {

// SimInput::on_progress is called every this many rounds of the event loop.
constexpr uint64_t kProgressRounds = 4096;

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

// The run: a simulated cloud, cluster, binder, workload and ledger around the shipped decision
// loop, whose actions are carried out by the shipped actuator.
class Simulator {
 public:
  Simulator(const SimInput& in, std::string_view run_name)
      : in_(in), run_name_(run_name), config_(WorldConfig(in)) {
    // With --check-invariants, passes on the cluster model are checked against a built snapshot.
    changes_.cluster.SetVerify(in.sim.check_invariants);
  }

  Result<Summary> Run();

 private:
  Result<void> CheckPoolNames() const;
  void HandleEvent(const SimEvent& e);
  void Bind();
  void StepLoop();
  bool Finished() const;
  void ReportProgress(Time last_submit, bool finished) const;
  // The first invariant violated (SimConfig::check_invariants), or "".
  std::string Violation();

  const SimInput& in_;
  const std::string_view run_name_;
  const model::AutoscalerConfig config_;  // WorldConfig(in_)
  ManualClock clock_{in_.start};
  EventQueue queue_;
  WorldChanges changes_;
  Workload workload_{in_, clock_, queue_, changes_};
  SimCloud cloud_{in_, config_, clock_, queue_, changes_, workload_};
  KueueQueue kueue_{clock_, queue_, changes_, workload_};
  SimCluster cluster_{clock_, changes_, cloud_, workload_, kueue_};
  Binder binder_{in_.sim.scheduler, cloud_, workload_, changes_.cluster};
  Ledger ledger_{in_, config_, cloud_, workload_};
  autoscaler::Autoscaler loop_{config_, in_.loop_options};
  actuator::Actuator actuator_{cloud_, cluster_, clock_};
  Summary s_;  // the loop's counters until the ledger sums up the rest
  double last_cost_ = 0;
};

Result<void> Simulator::CheckPoolNames() const {
  for (const auto& [name, _] : in_.sim.pools) {
    if (config_.FindPool(name) == nullptr) {
      return InvalidArgument("simulation config: pools.{}: no pool of that name in the config",
                             name);
    }
  }
  return {};
}

void Simulator::HandleEvent(const SimEvent& e) {
  ++s_.sim_events;
  switch (e.kind) {
    case EventKind::kSubmit:
      if (kueue_.Holds(e.index, in_.sim.queue_gangs)) {
        kueue_.Request(e.index);
      } else {
        workload_.Submit(e.index);
      }
      break;
    case EventKind::kAdmit:
      workload_.Submit(e.index, kueue_.AdmittedWith(e.index));
      break;
    case EventKind::kRequeue:
      kueue_.Request(e.index);
      break;
    case EventKind::kNodeBoot:
      cloud_.OnBoot(e.index);
      break;
    case EventKind::kPodFinish:
      workload_.OnPodFinish(e.index, e.gen);
      break;
    case EventKind::kJobFinish:
      workload_.OnJobFinish(e.index, e.gen);
      break;
    case EventKind::kSpotNotice:
      cloud_.OnSpotNotice(e.index);
      break;
    case EventKind::kSpotKill:
      cloud_.OnSpotKill(e.index);
      break;
    case EventKind::kStockoutEnd:
      cloud_.OnStockoutEnd(e.index);
      break;
  }
}

void Simulator::Bind() {
  if (!changes_.bind_dirty) return;
  changes_.bind_dirty = false;
  binder_.Bind();
}

void Simulator::StepLoop() {
  const Time now = clock_.Now();
  for (int guard = 0; guard < 50; ++guard) {
    changes_.step_needed = false;
    const autoscaler::Observation& obs = cluster_.Observe();
    std::vector<autoscaler::Action> actions = loop_.Step(obs, now);
    ++s_.steps;
    for (const autoscaler::Action& a : actions) {
      MixDigest(s_.action_digest, static_cast<uint64_t>(now.time_since_epoch().count()));
      MixDigest(s_.action_digest, std::hash<std::string>()(autoscaler::DescribeAction(a)));
    }
    actuator_.Carry(actions, obs, loop_);
    Bind();
    if (loop_.NextWakeup() > now && !changes_.step_needed) return;
  }
}

bool Simulator::Finished() const {
  if (workload_.jobs_done() < static_cast<int64_t>(in_.jobs.size())) return false;
  if (in_.stop_when_jobs_done) return true;
  for (const SimPool& p : cloud_.pools()) {
    if (p.waiting > 0 || static_cast<int>(p.nodes.size()) > std::max(0, p.pool->min)) return false;
  }
  return true;
}

std::string Simulator::Violation() {
  if (!cloud_.violation().empty()) return cloud_.violation();
  return CheckInvariants(clock_.Now(), cloud_, workload_, ledger_.CostAt(clock_.Now()), last_cost_);
}

void Simulator::ReportProgress(Time last_submit, bool finished) const {
  if (!in_.on_progress) return;
  in_.on_progress(Progress{.run = run_name_,
                           .jobs_done = workload_.jobs_done(),
                           .jobs = static_cast<int64_t>(in_.jobs.size()),
                           .simulated = clock_.Now() - in_.start,
                           .trace_span = last_submit - in_.start,
                           .finished = finished});
}

Result<Summary> Simulator::Run() {
  TIDEPOOL_RETURN_IF_ERROR(CheckPoolNames());
  cloud_.Start();
  const Time last_submit = workload_.Load();
  const Time horizon = last_submit + in_.horizon_after_last_submit;
  changes_.step_needed = true;
  for (uint64_t round = 1;; ++round) {
    if (round % kProgressRounds == 0) ReportProgress(last_submit, false);
    const Time now = clock_.Now();
    Time next_event = queue_.Empty() ? Time::max() : queue_.NextAt();
    Time wake = std::max(loop_.NextWakeup(), now);
    Time t = changes_.step_needed ? now : std::min(next_event, wake);
    if (t > horizon) {
      s_.hit_horizon = true;
      clock_.Set(horizon);
      break;
    }
    clock_.Set(t);
    while (!queue_.Empty() && queue_.NextAt() <= t) HandleEvent(queue_.Pop());
    Bind();
    if (changes_.step_needed || loop_.NextWakeup() <= t) StepLoop();
    changes_.step_needed = false;
    ledger_.RecordTimeline(t, changes_.version);
    if (in_.sim.check_invariants) {
      std::string v = Violation();
      if (!v.empty()) return Fail(Error::Code::kInternal, "invariant violated: {}", v);
    }
    if (Finished()) break;
  }
  ledger_.RecordTimeline(clock_.Now(), changes_.version, /*last=*/true);
  ReportProgress(last_submit, true);
  workload_.StopAll();  // accounts GPU time up to the end
  s_.loop_events = cluster_.events();
  s_.provisioning_requests = kueue_.requests();
  s_.provisioning_requests_failed = kueue_.failed();
  s_.jobs_rejected = kueue_.rejected();
  return ledger_.Summarize(clock_.Now(), std::move(s_));
}

}  // namespace

Time SimInput::DefaultStart() {
  using namespace std::chrono;
  return time_point_cast<milliseconds>(sys_days{year{2026} / January / 1});
}

Result<Summary> RunSimulation(const SimInput& input, std::string_view run_name) {
  Simulator sim(input, run_name);
  return sim.Run();
}

}  // namespace tidepool::sim
