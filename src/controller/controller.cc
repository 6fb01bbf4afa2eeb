#include "controller/controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "controller/action_log.h"

namespace tidepool::controller {

using autoscaler::Action;

namespace {

constexpr Duration kMaxRefreshBackoff = std::chrono::seconds(30);

}  // namespace

Controller::Controller(const model::AutoscalerConfig& config, ClusterReader& reader,
                       ClusterWriter& writer, cloud::CloudProvider& provider, const Clock& clock,
                       ControllerOptions options)
    : config_(config),
      reader_(reader),
      writer_(writer),
      provider_(provider),
      clock_(clock),
      options_(std::move(options)) {
  reader_.SetOnChange([this](bool urgent) {
    if (urgent) Notify();
  });
}

void Controller::Notify() {
  {
    std::lock_guard lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

std::optional<autoscaler::Status> Controller::Status() const {
  std::lock_guard lock(mu_);
  return status_;
}

PassReport Controller::LastPass() const {
  std::lock_guard lock(mu_);
  return last_pass_;
}

Result<void> Controller::Run(const std::atomic<bool>& stop) {
  Time deadline = clock_.Now() + options_.sync_timeout;
  while (!reader_.HasSynced()) {
    if (stop) return {};
    if (clock_.Now() >= deadline) {
      return Fail(Error::Code::kUnavailable,
                  "the cluster caches did not finish listing within {}; is the API server "
                  "reachable and may tidepool list pods, nodes, PDBs, DaemonSets and "
                  "PodTemplates and Deployments?",
                  FormatDuration(options_.sync_timeout));
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop.load(); });
  }
  spdlog::info("caches synced; {} pools configured, provider {}", config_.pools.size(),
               provider_.Name());

  std::optional<Time> last_pass;
  while (!stop) {
    Time now = clock_.Now();
    RunOnce(now);
    last_pass = now;

    Time next = now + config_.scan_interval;
    if (loop_) next = std::min(next, loop_->NextWakeup());
    if (refresh_retry_at_) next = std::min(next, *refresh_retry_at_);
    next = std::max(next, now + options_.min_pass_interval);

    std::unique_lock lock(mu_);
    while (!stop) {
      Time t = clock_.Now();
      if (t >= next) break;
      if (notified_ && t >= *last_pass + options_.min_pass_interval) break;
      Duration wait = next - t;
      if (notified_) wait = std::min<Duration>(wait, *last_pass + options_.min_pass_interval - t);
      // Wake at least every 250 ms to notice `stop` (it is a plain atomic, not a signal).
      cv_.wait_for(lock, std::min<Duration>(wait, std::chrono::milliseconds(250)));
    }
    notified_ = false;
  }
  if (loop_ && Leading()) SaveWarmState(clock_.Now(), /*force=*/true);
  return {};
}

PassReport& Controller::Finish(PassReport& r) {
  r.duration = std::chrono::duration_cast<Duration>(clock_.Now() - r.time);
  if (options_.metrics != nullptr) {
    options_.metrics->SetLeader(loop_ != nullptr);
    if (r.acted) {
      options_.metrics->ObserveLoopDuration(std::chrono::duration<double>(r.duration).count());
    }
    if (loop_) options_.metrics->Update(loop_->GetStatus(), config_);
  }
  std::lock_guard lock(mu_);
  last_pass_ = r;
  if (loop_) status_ = loop_->GetStatus();
  return r;
}

namespace {

void Skip(PassReport& report, SkipReason why, std::string words) {
  report.skip = why;
  report.skipped_because = std::move(words);
}

}  // namespace

bool Controller::MayAct(PassReport& report, Time now) {
  if (!Leading()) {
    if (loop_) spdlog::warn("lost leadership: stopped acting");
    loop_.reset();
    sizes_.reset();
    Skip(report, SkipReason::kNotLeader, "not the leader");
    return false;
  }
  if (!reader_.HasSynced()) {
    Skip(report, SkipReason::kNotSynced, "caches not synced");
    return false;
  }
  if (refresh_retry_at_ && now < *refresh_retry_at_) {
    Skip(report, SkipReason::kWaitingForProvider, "waiting to retry the provider");
    return false;
  }
  return true;
}

std::optional<std::vector<cloud::PoolSize>> Controller::RefreshProvider(PassReport& report,
                                                                        Time now) {
  auto sizes = provider_.Refresh(now);
  if (!sizes) {
    refresh_backoff_ = refresh_backoff_ == Duration{}
                           ? options_.refresh_retry
                           : std::min(refresh_backoff_ * 2, kMaxRefreshBackoff);
    refresh_retry_at_ = now + refresh_backoff_;
    spdlog::warn("provider {}: refresh failed, no decisions until it answers (retry in {}): {}",
                 provider_.Name(), FormatDuration(refresh_backoff_), sizes.error().message());
    Skip(report, SkipReason::kProviderRefreshFailed,
         "provider refresh failed: " + sizes.error().message());
    return std::nullopt;
  }
  refresh_retry_at_.reset();
  refresh_backoff_ = {};
  return std::move(*sizes);
}

std::optional<std::vector<cloud::PoolSize>> Controller::ProviderView(PassReport& report, Time now,
                                                                     const ClusterView& view) {
  if (!sizes_ || now - sizes_at_ >= config_.scan_interval) {
    sizes_ = RefreshProvider(report, now);
    sizes_at_ = now;
    if (sizes_) provider_epoch_.Refreshed(*sizes_, view, provider_);
  }
  return sizes_;
}

autoscaler::Observation ObservationOf(const ClusterView& view) {
  autoscaler::Observation obs;
  obs.nodes.reserve(view.nodes.size());
  for (const model::Node& n : view.nodes) obs.nodes.push_back(&n);
  obs.pods.reserve(view.pods.size());
  for (const model::Pod& p : view.pods) obs.pods.push_back(&p);
  for (const auto& p : view.pdbs) obs.pdbs.push_back(p.get());
  for (const auto& d : view.daemon_sets) obs.daemon_sets.push_back(d.get());
  for (const auto& r : view.provisioning_requests) obs.provisioning_requests.push_back(r.get());
  for (const auto& t : view.pod_templates) obs.pod_templates.push_back(t.get());
  for (const auto& b : view.capacity_buffers) obs.capacity_buffers.push_back(b.get());
  for (const auto& d : view.deployments) obs.deployments.push_back(d.get());
  obs.dra = view.dra.get();
  return obs;
}

autoscaler::Observation Controller::Observe(const ClusterView& view,
                                            const std::vector<cloud::PoolSize>& sizes) const {
  autoscaler::Observation obs = ObservationOf(view);
  for (const auto& s : sizes) {
    obs.pools.push_back({s.pool, s.target, s.instances, s.stockout, s.stockout_reason, s.stopped});
  }
  obs.provider_pool_of = [this](const model::Node& n) { return provider_.PoolOf(n); };
  obs.version = VersionOf(view);
  return obs;
}

uint64_t Controller::VersionOf(const ClusterView& view) const {
  // Both parts only grow: the same sum means the same view and the same provider answers.
  return view.version != 0 ? view.version + provider_epoch_.value() : 0;
}

PassReport Controller::RunOnce(Time now) {
  PassReport report;
  report.time = now;
  if (!MayAct(report, now)) return Finish(report);
  ClusterView view = reader_.Snapshot();
  sched::ClusterModel* model = reader_.SyncModel(view);  // the view's nodes and pods, exactly
  auto sizes = ProviderView(report, now, view);
  if (!sizes) return Finish(report);
  if (!loop_) {
    spdlog::info("acting as leader: rebuilding state from the cluster and the provider");
    loop_ = std::make_unique<autoscaler::Autoscaler>(config_, options_.loop);
    LoadWarmState();
  }
  autoscaler::Observation obs;
  if (const uint64_t version = VersionOf(view); loop_->Unchanged(version, now)) {
    obs.version = version;  // the Step skips it: its objects are not listed
  } else {
    obs = Observe(view, *sizes);
    obs.model = model;
  }
  const uint64_t skipped_before = loop_->skipped_steps();
  report.actions = loop_->Step(obs, now);
  report.acted = true;
  report.unchanged = loop_->skipped_steps() != skipped_before;
  if (report.unchanged && options_.metrics != nullptr) options_.metrics->RecordUnchangedStep();
  Act(report, obs);
  // What tidepool asked of the provider (or any action, or a lost lead) is read back next pass.
  if (!report.actions.empty() || !loop_) sizes_.reset();
  if (loop_) {
    PublishStatus(now);
    SaveWarmState(now, /*force=*/false);
  }
  return Finish(report);
}

void Controller::Act(PassReport& report, const autoscaler::Observation& obs) {
  auto log = [&](const Action& a) {
    if (const auto* e = std::get_if<autoscaler::Event>(&a)) {
      spdlog::info("{} {} {}: {}", autoscaler::EventReasonName(e->reason),
                   autoscaler::EventObjectKind(e->object_kind), e->object, e->message);
    } else {
      spdlog::info("{}{}", options_.dry_run ? "dry run, not doing: " : "",
                   autoscaler::DescribeAction(a));
    }
  };
  if (options_.dry_run) {
    for (const Action& a : report.actions) log(a);
    return;
  }
  ActionLog action_log(options_.metrics);
  actuator::Actuator actuator(provider_, writer_, clock_, &action_log);
  actuator.Carry(report.actions, obs, *loop_, [&](const Action& a) {
    if (!Leading()) {
      spdlog::warn("lost leadership in the middle of a pass: dropping the remaining actions");
      loop_.reset();
      report.skip = SkipReason::kLostLeadership;
      report.skipped_because = "lost leadership";
      return false;
    }
    log(a);
    return true;
  });
}

void Controller::LoadWarmState() {
  last_warm_state_.clear();
  last_warm_save_.reset();
  if (!loop_->HasPredictive()) return;
  auto state = writer_.ReadWarmState();
  if (!state) {
    spdlog::warn("warm capacity: cannot read the learned state, starting afresh: {}",
                 state.error().message());
    return;
  }
  if (!state->has_value()) {
    spdlog::info("warm capacity: no learned state yet, starting afresh");
    return;
  }
  auto imported = loop_->ImportWarmState(**state);
  if (!imported) {
    spdlog::warn("warm capacity: the saved state is not usable, starting afresh: {}",
                 imported.error().message());
    return;
  }
  last_warm_state_ = **state;
  spdlog::info("warm capacity: loaded the learned demand profiles");
}

void Controller::SaveWarmState(Time now, bool force) {
  if (options_.dry_run || !loop_->HasPredictive()) return;
  if (!force && last_warm_save_ && now < *last_warm_save_ + options_.warm_state_interval) return;
  std::string text = loop_->ExportWarmState();
  last_warm_save_ = now;
  if (text == last_warm_state_) return;
  auto r = writer_.WriteWarmState(text);
  if (!r) {
    spdlog::warn("warm capacity: saving the learned state: {}", r.error().message());
    return;
  }
  last_warm_state_ = std::move(text);
}

void Controller::PublishStatus(Time now) {
  if (options_.dry_run) return;
  if (last_status_write_ && now < *last_status_write_ + options_.status_interval) return;
  std::string text = autoscaler::FormatStatus(loop_->GetStatus());
  if (text == last_status_text_) return;
  auto r = writer_.WriteStatus(text);
  if (!r) {
    spdlog::warn("writing the status ConfigMap: {}", r.error().message());
    return;
  }
  last_status_text_ = std::move(text);
  last_status_write_ = now;
}

}  // namespace tidepool::controller
