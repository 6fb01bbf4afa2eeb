#include "controller/controller.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "kube/client/writes.h"

namespace tidepool::controller {

using autoscaler::Action;

namespace {

constexpr Duration kMaxRefreshBackoff = std::chrono::seconds(30);

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

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
                  "reachable and may tidepool list pods, nodes, PDBs and DaemonSets?",
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

PassReport Controller::RunOnce(Time now) {
  PassReport report;
  report.time = now;
  auto finish = [&](PassReport& r) {
    r.duration = std::chrono::duration_cast<Duration>(clock_.Now() - now);
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
  };

  if (!Leading()) {
    if (loop_) spdlog::warn("lost leadership: stopped acting");
    loop_.reset();
    report.skipped_because = "not the leader";
    return finish(report);
  }
  if (!reader_.HasSynced()) {
    report.skipped_because = "caches not synced";
    return finish(report);
  }
  if (refresh_retry_at_ && now < *refresh_retry_at_) {
    report.skipped_because = "waiting to retry the provider";
    return finish(report);
  }

  ClusterView view = reader_.Snapshot();
  auto sizes = provider_.Refresh(now);
  if (!sizes) {
    refresh_backoff_ = refresh_backoff_ == Duration{}
                           ? options_.refresh_retry
                           : std::min(refresh_backoff_ * 2, kMaxRefreshBackoff);
    refresh_retry_at_ = now + refresh_backoff_;
    spdlog::warn("provider {}: refresh failed, no decisions until it answers (retry in {}): {}",
                 provider_.Name(), FormatDuration(refresh_backoff_), sizes.error().message());
    report.skipped_because = "provider refresh failed: " + sizes.error().message();
    return finish(report);
  }
  refresh_retry_at_.reset();
  refresh_backoff_ = {};

  if (!loop_) {
    spdlog::info("acting as leader: rebuilding state from the cluster and the provider");
    loop_ = std::make_unique<autoscaler::Autoscaler>(config_, options_.loop);
    LoadWarmState();
  }

  autoscaler::Observation obs;
  obs.nodes.reserve(view.nodes.size());
  for (const auto& n : view.nodes) obs.nodes.push_back(n.get());
  obs.pods.reserve(view.pods.size());
  for (const auto& p : view.pods) obs.pods.push_back(p.get());
  for (const auto& p : view.pdbs) obs.pdbs.push_back(p.get());
  for (const auto& d : view.daemon_sets) obs.daemon_sets.push_back(d.get());
  for (const auto& s : *sizes) {
    obs.pools.push_back({s.pool, s.target, s.instances, s.stockout, s.stockout_reason});
  }
  obs.provider_pool_of = [this](const model::Node& n) { return provider_.PoolOf(n); };

  report.actions = loop_->Step(obs, now);
  report.acted = true;
  for (const Action& a : report.actions) {
    if (!Leading()) {
      spdlog::warn("lost leadership in the middle of a pass: dropping the remaining actions");
      loop_.reset();
      report.skipped_because = "lost leadership";
      break;
    }
    Carry(a, view, clock_.Now());
  }
  if (loop_) {
    PublishStatus(now);
    SaveWarmState(now, /*force=*/false);
  }
  return finish(report);
}

void Controller::Carry(const Action& a, const ClusterView& view, Time now) {
  if (a.kind == Action::Kind::kEvent) {
    spdlog::info("{} {} {}: {}", a.reason, a.object_kind, a.object, a.message);
  } else {
    spdlog::info("{}{}", options_.dry_run ? "dry run, not doing: " : "",
                 autoscaler::DescribeAction(a));
  }
  if (options_.dry_run) return;

  auto find_node = [&](const std::string& name) -> const model::Node* {
    for (const auto& n : view.nodes)
      if (n->name() == name) return n.get();
    return nullptr;
  };
  auto log_failure = [&](const Result<void>& r) {
    if (!r) {
      spdlog::warn("{} failed: {}", autoscaler::ActionKindName(a.kind), r.error().message());
    }
  };

  switch (a.kind) {
    case Action::Kind::kIncreasePool: {
      auto r = provider_.IncreaseSize(a.pool, a.count, now);
      log_failure(r);
      if (r && options_.metrics != nullptr) {
        options_.metrics->RecordScaleUp(a.pool, "pending_pods", a.count);
      }
      loop_->OnIncreaseResult(a.pool, a.count, r, clock_.Now());
      break;
    }
    case Action::Kind::kDecreaseTarget: {
      auto r = provider_.DecreaseTargetSize(a.pool, a.count, now);
      log_failure(r);
      loop_->OnDecreaseResult(a.pool, a.count, r, clock_.Now());
      break;
    }
    case Action::Kind::kTaintNode: {
      auto r = writer_.AddTaint(a.node, {std::string(model::kToBeDeletedTaint),
                                         kube::TaintTimestamp(now),
                                         model::TaintEffect::kNoSchedule});
      // The plan came from the informer cache, which may lag (a cut watch, a slow API server).
      // With the taint on, no new pod can land; now read the node's pods fresh and go on only
      // if nothing is there that the plan did not see. Otherwise take the taint off again and
      // report the failure, so the loop rolls the removal back.
      if (r) r = VerifyNodePods(a.node, view);
      log_failure(r);
      loop_->OnTaintResult(a.node, r, clock_.Now());
      break;
    }
    case Action::Kind::kMarkCandidate: {
      auto r = writer_.AddTaint(a.node, {std::string(model::kDeletionCandidateTaint),
                                         kube::TaintTimestamp(now),
                                         model::TaintEffect::kPreferNoSchedule});
      log_failure(r);
      break;
    }
    case Action::Kind::kUnmarkCandidate:
      log_failure(writer_.RemoveTaint(a.node, std::string(model::kDeletionCandidateTaint)));
      break;
    case Action::Kind::kUntaintNode:
      log_failure(writer_.RemoveTaint(a.node, std::string(model::kToBeDeletedTaint)));
      break;
    case Action::Kind::kEvictPods:
      for (const std::string& pod : a.pods) {
        auto [ns, name] = SplitKey(pod);
        auto r = writer_.Evict(ns, name);
        if (!r && r.error().code() != Error::Code::kNotFound) {
          spdlog::info("eviction of {} from {} refused: {}", pod, a.node, r.error().message());
        }
        if (options_.metrics != nullptr) {
          options_.metrics->RecordEviction(ops::EvictionResultOf(r));
        }
        loop_->OnEvictResult(a.node, pod, r, clock_.Now());
      }
      break;
    case Action::Kind::kDeleteNode: {
      const model::Node* node = find_node(a.node);
      Result<void> r;
      if (node == nullptr) {
        r = {};  // gone already
      } else {
        r = provider_.DeleteNode(a.pool, *node, now);
        if (r) {
          auto gone = writer_.DeleteNode(node->name(), node->meta.uid);
          if (!gone) {
            spdlog::warn("node {}: machine deleted, Node object not: {}", a.node,
                         gone.error().message());
          }
        }
      }
      log_failure(r);
      if (r && options_.metrics != nullptr) {
        options_.metrics->RecordScaleDown(
            a.pool, a.reason.find("empty") != std::string::npos ? "empty" : "underutilized");
      }
      loop_->OnDeleteResult(a.node, r, clock_.Now());
      break;
    }
    case Action::Kind::kEvent: {
      if (a.reason == "ScaleDownFailed" && options_.metrics != nullptr) {
        const model::Node* n = find_node(a.object);
        std::string pool = n != nullptr ? provider_.PoolOf(*n) : "";
        if (pool.empty() && n != nullptr) {
          if (const std::string* l = n->meta.Label(model::kLabelPool)) pool = *l;
        }
        options_.metrics->RecordScaleDownFailure(pool);
      }
      EventSpec e;
      e.object_kind = a.object_kind;
      auto [ns, name] = SplitKey(a.object);
      e.ns = ns;
      e.name = name;
      if (a.object_kind == "Pod") {
        for (const auto& p : view.pods) {
          if (p->meta.namespace_ == ns && p->meta.name == name) {
            e.uid = p->meta.uid;
            break;
          }
        }
      } else if (const model::Node* n = find_node(name)) {
        e.uid = n->meta.uid;
      }
      e.reason = a.reason;
      e.message = a.message;
      e.warning = a.warning;
      log_failure(writer_.RecordEvent(e));
      break;
    }
  }
}

Result<void> Controller::VerifyNodePods(const std::string& node, const ClusterView& view) {
  std::set<std::string> known;
  for (const auto& p : view.pods) {
    if (p->node_name == node && !p->IsTerminal() && !p->IsDaemonSetPod() && !p->IsMirrorPod()) {
      known.insert(p->meta.Key());
    }
  }
  auto fresh = writer_.PodsOnNode(node);
  Result<void> verdict;
  if (!fresh) {
    verdict = std::unexpected(fresh.error().Wrap("node " + node + ": reading its pods"));
  } else {
    for (const std::string& pod : *fresh) {
      if (!known.contains(pod)) {
        verdict = Fail(Error::Code::kConflict,
                       "node {}: pod {} runs there but was not in the cache the plan was made "
                       "from; not removing the node on stale data",
                       node, pod);
        break;
      }
    }
  }
  if (!verdict) {
    auto undo = writer_.RemoveTaint(node, std::string(model::kToBeDeletedTaint));
    if (!undo) spdlog::warn("node {}: removing the taint again: {}", node, undo.error().message());
  }
  return verdict;
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
