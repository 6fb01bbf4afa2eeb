#include "planner/disruption.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>

#include "planner/cluster.h"

namespace tidepool::planner {
namespace {

double Ratio(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// The share of `node` the pod holds: its GPUs of the node's GPUs when it requests any, else the
// larger of its cpu and memory shares.
double ShareOf(const model::Pod& pod, const model::Node& node) {
  const model::Resources& r = pod.requests;
  const model::Resources& a = node.allocatable;
  if (r.gpus() > 0 && a.gpus() > 0) return std::min(1.0, Ratio(r.gpus(), a.gpus()));
  return std::min(1.0,
                  std::max(Ratio(r.cpu_milli(), a.cpu_milli()), Ratio(r.memory(), a.memory())));
}

Error AnnotationError(std::string_view key, std::string_view value, std::string_view expected) {
  return Error(Error::Code::kInvalidArgument,
               fmt::format("annotation {}=\"{}\" is not {}", key, value, expected));
}

Result<std::optional<Duration>> DurationAnnotation(const model::Pod& pod, std::string_view key) {
  const std::string* v = pod.meta.Annotation(key);
  if (v == nullptr) return std::optional<Duration>{};
  Result<Duration> d = ParseDuration(*v);
  if (!d || *d <= Duration::zero()) {
    return std::unexpected(AnnotationError(key, *v, "a positive duration (e.g. 30m)"));
  }
  return std::optional<Duration>(*d);
}

int GangSize(const model::Pod& pod) { return InGang(pod) ? DeclaredGangSize(pod).value_or(1) : 1; }

// Unsaved progress and the time to the next checkpoint, from the pod's annotations.
Result<void> ReadProgress(const model::Pod& pod, Time start, Time now, PodDisruption& out) {
  const Duration elapsed = std::max(Duration::zero(), now - start);
  TIDEPOOL_ASSIGN_OR_RETURN(std::optional<Duration> interval,
                            DurationAnnotation(pod, kCheckpointIntervalAnnotation));
  std::optional<Time> last;
  if (const std::string* v = pod.meta.Annotation(kLastCheckpointAnnotation)) {
    Result<Time> t = ParseRfc3339(*v);
    if (!t) {
      return std::unexpected(AnnotationError(kLastCheckpointAnnotation, *v,
                                             "an RFC 3339 time (e.g. 2026-11-26T10:00:00Z)"));
    }
    if (*t > start) last = std::min(*t, now);  // an older checkpoint belongs to an earlier run
  }
  if (last) {
    out.progress = ProgressBasis::kLastCheckpoint;
    out.unsaved = now - *last;
    if (interval) out.next_checkpoint = std::max(Duration::zero(), *interval - out.unsaved);
  } else if (interval) {
    out.progress = ProgressBasis::kCheckpointInterval;
    out.unsaved = elapsed % *interval;
    out.next_checkpoint = *interval - out.unsaved;
  } else {
    out.progress = ProgressBasis::kElapsed;
    out.unsaved = elapsed;
  }
  return {};
}

}  // namespace

Time WeighTime(Time now) { return std::chrono::floor<std::chrono::minutes>(now); }
Time NextWeighTime(Time now) { return WeighTime(now) + std::chrono::minutes(1); }

void RuntimeHints::Set(const std::string& owner, Duration runtime) {
  static std::atomic<uint64_t> last_version{0};
  by_owner_[owner] = runtime;
  version_ = ++last_version;
}

const Duration* RuntimeHints::Find(const std::string& owner) const {
  auto it = by_owner_.find(owner);
  return it == by_owner_.end() ? nullptr : &it->second;
}

std::string_view CronJobOf(const model::Pod& pod, const model::OwnerReference& job) {
  if (job.kind != "Job" || job.api_version != "batch/v1" || !pod.meta.creation_timestamp) return {};
  const std::string_view name = job.name;
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return {};
  const std::string_view digits = name.substr(dash + 1);
  int64_t minute = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), minute);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.size() < 8) return {};
  // The pod comes at or after its run's scheduled minute: the same minute, or later when the Job
  // was held (suspended until a queue admitted it) or a pod was retried.
  const Time scheduled{std::chrono::minutes(minute)};
  const Time created = std::chrono::floor<std::chrono::minutes>(*pod.meta.creation_timestamp);
  if (created < scheduled || created - scheduled > kCronJobRunSpread) return {};
  return name.substr(0, dash);
}

std::string RuntimeOwnerKey(const model::Pod& pod) {
  const model::OwnerReference* c = pod.meta.Controller();
  if (c == nullptr) return "";
  std::string_view kind = c->kind, name = c->name;
  if (std::string_view cron = CronJobOf(pod, *c); !cron.empty()) {
    kind = "CronJob";
    name = cron;
  }
  const std::string& ns = pod.meta.namespace_;
  std::string key;
  key.reserve(ns.size() + kind.size() + name.size() + 2);
  key.append(ns).append(1, '/').append(kind).append(1, '/').append(name);
  return key;
}

bool DeclaresRestartable(const model::Pod& pod) {
  const std::string* v = pod.meta.Annotation(kRestartableAnnotation);
  return v != nullptr && *v == "true";
}

bool ConsolidationWeighs(const model::Pod& pod) {
  return pod.phase == model::PodPhase::kRunning && IsTrainingPod(pod) && !DeclaresRestartable(pod);
}

std::string_view ProgressBasisName(ProgressBasis b) {
  switch (b) {
    case ProgressBasis::kLastCheckpoint:
      return "since its last checkpoint";
    case ProgressBasis::kCheckpointInterval:
      return "since its last checkpoint by interval";
    case ProgressBasis::kElapsed:
      return "no checkpoint information: all of its runtime";
  }
  return "";
}

std::string_view HorizonBasisName(HorizonBasis b) {
  switch (b) {
    case HorizonBasis::kAnnotated:
      return "annotated expected runtime";
    case HorizonBasis::kLearned:
      return "runtime learned for its owner";
    case HorizonBasis::kElapsed:
      return "as long again as it has run";
  }
  return "";
}

std::string_view ConsolidationDecisionName(ConsolidationDecision d) {
  switch (d) {
    case ConsolidationDecision::kPays:
      return "pays";
    case ConsolidationDecision::kDoesNotPay:
      return "does-not-pay";
    case ConsolidationDecision::kWaitForCheckpoint:
      return "wait-for-checkpoint";
  }
  return "";
}

Result<RemainingRuntime> ExpectedRemaining(const model::Pod& pod, Duration elapsed,
                                           const RuntimeHints* hints) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::optional<Duration> expected,
                            DurationAnnotation(pod, kExpectedRuntimeAnnotation));
  RemainingRuntime out;
  out.basis = HorizonBasis::kAnnotated;
  if (!expected && hints != nullptr && !hints->empty()) {
    if (const Duration* learned = hints->Find(RuntimeOwnerKey(pod))) {
      expected = *learned;
      out.basis = HorizonBasis::kLearned;
    }
  }
  if (expected && *expected > elapsed) {
    out.remaining = *expected - elapsed;
  } else {
    out.basis = HorizonBasis::kElapsed;
    out.remaining = elapsed;
  }
  return out;
}

Result<PodDisruption> DisruptionOf(const model::Pod& pod, const model::Node& node,
                                   double node_price, const model::ConsolidationConfig& config,
                                   const RuntimeHints* hints, Time now) {
  if (!pod.start_time) {
    return Fail(Error::Code::kInvalidArgument,
                "running without status.startTime, so the work an eviction throws away is "
                "unknown");
  }
  PodDisruption d;
  d.pod = &pod;
  d.gang_size = GangSize(pod);
  const double share = ShareOf(pod, node);
  d.holds_per_hour = node_price * share * d.gang_size;
  d.gpus = static_cast<double>(pod.requests.gpus()) * d.gang_size;
  TIDEPOOL_RETURN_IF_ERROR(ReadProgress(pod, *pod.start_time, now, d));
  const Duration elapsed = std::max(Duration::zero(), now - *pod.start_time);
  TIDEPOOL_ASSIGN_OR_RETURN(RemainingRuntime left, ExpectedRemaining(pod, elapsed, hints));
  d.horizon_basis = left.basis;
  d.remaining = std::min(left.remaining, config.max_horizon);
  return d;
}

namespace {

// Price of the work lost when the pods are evicted `after` from now, assuming the pods with a
// known next checkpoint reach it by then (waits beyond their next checkpoint are not weighed).
double WorkLost(const std::vector<PodDisruption>& pods, Duration after, Duration restart) {
  double lost = 0;
  for (const PodDisruption& p : pods) {
    Duration unsaved = p.unsaved + after;
    if (p.next_checkpoint && after >= *p.next_checkpoint) unsaved = after - *p.next_checkpoint;
    lost += Hours(unsaved + restart) * p.holds_per_hour;
  }
  return lost;
}

}  // namespace

ConsolidationVerdict Weigh(const std::vector<PodDisruption>& pods, bool other_pods,
                           double node_price, const model::ConsolidationConfig& config,
                           const ReplacementPrice* replacement) {
  ConsolidationVerdict v;
  v.node_price_per_hour = node_price;
  if (replacement != nullptr) {
    v.replacement_pool = replacement->pool;
    v.replacement_price_per_hour = replacement->price_per_hour;
    node_price -= replacement->price_per_hour;  // what the move saves per hour
  }
  v.safety_factor = config.safety_factor;
  v.training_pods = static_cast<int>(pods.size());
  v.horizon = other_pods ? config.max_horizon : Duration::zero();
  for (const PodDisruption& p : pods) {
    v.horizon = std::max(v.horizon, p.remaining);
    v.gpu_hours_lost += Hours(p.unsaved) * p.gpus;
  }
  v.savings = node_price * Hours(v.horizon);
  v.work_lost = WorkLost(pods, Duration::zero(), config.restart_delay);
  const double net_now = v.savings - config.safety_factor * v.work_lost;

  // Waiting for the latest near checkpoint: the node runs that much longer, the work lost shrinks.
  const PodDisruption* waited = nullptr;
  for (const PodDisruption& p : pods) {
    if (p.next_checkpoint && *p.next_checkpoint < v.horizon &&
        (waited == nullptr || *p.next_checkpoint > *waited->next_checkpoint)) {
      waited = &p;
    }
  }
  if (waited != nullptr) {
    const Duration wait = *waited->next_checkpoint;
    const double lost_after = WorkLost(pods, wait, config.restart_delay);
    const double net_after =
        v.savings - node_price * Hours(wait) - config.safety_factor * lost_after;
    if (net_after > std::max(net_now, 0.0)) {
      v.decision = ConsolidationDecision::kWaitForCheckpoint;
      v.wait = wait;
      v.waiting_for = waited->pod->Key();
      v.work_lost_after_wait = lost_after;
      return v;
    }
  }
  v.decision = net_now > 0 ? ConsolidationDecision::kPays : ConsolidationDecision::kDoesNotPay;
  return v;
}

bool Pays(const ConsolidationVerdict& v) {
  if (v.decision == ConsolidationDecision::kWaitForCheckpoint) {
    // Evicting right after the checkpoint: the node runs until then, for what the move saves.
    double waiting = (v.node_price_per_hour - v.replacement_price_per_hour) * Hours(v.wait);
    return v.savings - waiting - v.extension > v.safety_factor * v.work_lost_after_wait;
  }
  return v.savings - v.extension > v.safety_factor * v.work_lost;
}

std::string DescribeVerdict(const ConsolidationVerdict& v) {
  std::string numbers = fmt::format(
      "saves ${:.2f} over {} against ${:.2f} of work lost ({:.2f} GPU-h unsaved, {} training "
      "pod(s), restarts included) x safety {}",
      v.savings, FormatDuration(std::chrono::floor<std::chrono::minutes>(v.horizon)), v.work_lost,
      v.gpu_hours_lost, v.training_pods, v.safety_factor);
  if (v.extension > 0) {
    numbers +=
        fmt::format(", less ${:.2f} for the nodes its pods move to running longer", v.extension);
  }
  if (!v.replacement_pool.empty()) {
    numbers = fmt::format("replacing the ${:.2f}/h node with one of pool {} at ${:.2f}/h {}",
                          v.node_price_per_hour, v.replacement_pool, v.replacement_price_per_hour,
                          numbers);
  }
  switch (v.decision) {
    case ConsolidationDecision::kPays:
      return "consolidation pays: " + numbers;
    case ConsolidationDecision::kDoesNotPay:
      return "consolidation does not pay: " + numbers;
    case ConsolidationDecision::kWaitForCheckpoint:
      return fmt::format("consolidation waits {} for the checkpoint of pod {}: {}",
                         FormatDuration(std::chrono::ceil<std::chrono::seconds>(v.wait)),
                         v.waiting_for, numbers);
  }
  return numbers;
}

}  // namespace tidepool::planner
