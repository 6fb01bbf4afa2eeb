#include "kube/client/leader.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

namespace tidepool::kube {
namespace {

using Json = nlohmann::json;

int64_t Millis(Time t) { return t.time_since_epoch().count(); }

std::string StringAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t IntAt(const Json& obj, const char* key, int64_t fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// What identifies one version of the lease's record; a change restarts the expiry clock.
std::string RecordOf(const Json& spec) {
  return fmt::format("{}|{}|{}|{}", StringAt(spec, "holderIdentity"), StringAt(spec, "acquireTime"),
                     StringAt(spec, "renewTime"), IntAt(spec, "leaseTransitions", 0));
}

int64_t Seconds(Duration d) {
  return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

}  // namespace

Result<void> ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  if (c.identity.empty()) return InvalidArgument("leader election: identity: expected a value");
  if (c.namespace_.empty() || c.name.empty()) {
    return InvalidArgument("leader election: expected a lease namespace and name");
  }
  if (!(c.lease_duration > c.renew_deadline)) {
    return InvalidArgument(
        "leader election: leaseDuration ({}) must be greater than renewDeadline ({})",
        FormatDuration(c.lease_duration), FormatDuration(c.renew_deadline));
  }
  if (!(c.renew_deadline > c.retry_period) || c.retry_period <= Duration::zero()) {
    return InvalidArgument(
        "leader election: renewDeadline ({}) must be greater than retryPeriod ({}) > 0",
        FormatDuration(c.renew_deadline), FormatDuration(c.retry_period));
  }
  return {};
}

std::string FormatMicroTime(Time t) {
  auto secs = std::chrono::floor<std::chrono::seconds>(t);
  std::string text = FormatRfc3339(secs);  // "...:05Z", UTC
  if (!text.empty() && text.back() == 'Z') text.pop_back();
  return fmt::format("{}.{:03d}000Z", text, (t - secs).count());
}

LeaderElector::LeaderElector(ApiClient& client, LeaderElectionConfig config, const Clock& clock)
    : client_(client), config_(std::move(config)), clock_(clock) {}

LeaderElector::~LeaderElector() { Stop(); }

std::string LeaderElector::LeasePath() const {
  return ObjectPath("coordination.k8s.io/v1", "leases", config_.namespace_, config_.name);
}

bool LeaderElector::IsLeader() const {
  if (!leader_.load()) return false;
  return Millis(clock_.Now()) - last_renew_ms_.load() < config_.renew_deadline.count();
}

std::string LeaderElector::Holder() const {
  std::lock_guard lock(mu_);
  return holder_;
}

Result<bool> LeaderElector::TryAcquireOrRenew() {
  // Each request gives up at the renew deadline, as client-go's renewals do: one that hung for the
  // client's request timeout (a connection dropped without a reset) kept the Lease lost for that
  // long after the API answered again.
  const std::string path = LeasePath();
  for (int attempt = 0; attempt < 2; ++attempt) {
    Time now = clock_.Now();
    auto got = client_.Get(path, config_.renew_deadline);
    if (!got && got.error().code() == Error::Code::kNotFound) {
      Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                    {"kind", "Lease"},
                    {"metadata", {{"name", config_.name}, {"namespace", config_.namespace_}}},
                    {"spec",
                     {{"holderIdentity", config_.identity},
                      {"leaseDurationSeconds", Seconds(config_.lease_duration)},
                      {"acquireTime", FormatMicroTime(now)},
                      {"renewTime", FormatMicroTime(now)},
                      {"leaseTransitions", 0}}}};
      auto created =
          client_.Create(CollectionPath("coordination.k8s.io/v1", "leases", config_.namespace_),
                         lease, config_.renew_deadline);
      if (created) {
        std::lock_guard lock(mu_);
        observed_record_ = RecordOf((*created)["spec"]);
        observed_at_ = now;
        holder_ = config_.identity;
        last_renew_ms_ = Millis(now);
        return true;
      }
      if (created.error().code() == Error::Code::kConflict) continue;  // someone was faster
      return std::unexpected(created.error());
    }
    if (!got) return std::unexpected(got.error());

    Json lease = std::move(*got);
    Json& spec = lease["spec"];
    if (spec.is_null()) spec = Json::object();
    if (!spec.is_object()) {
      return Fail(Error::Code::kInternal, "GET {}: spec: expected a map", path);
    }
    std::string holder = StringAt(spec, "holderIdentity");
    int64_t duration_s = IntAt(spec, "leaseDurationSeconds", Seconds(config_.lease_duration));
    {
      std::lock_guard lock(mu_);
      std::string record = RecordOf(spec);
      if (record != observed_record_) {
        observed_record_ = record;
        observed_at_ = now;
      }
      holder_ = holder;
      if (!holder.empty() && holder != config_.identity &&
          now < observed_at_ + std::chrono::seconds(duration_s)) {
        return false;  // held by someone else and not expired
      }
    }
    bool ours = holder == config_.identity;
    int64_t transitions = IntAt(spec, "leaseTransitions", 0);
    spec["holderIdentity"] = config_.identity;
    spec["leaseDurationSeconds"] = Seconds(config_.lease_duration);
    spec["renewTime"] = FormatMicroTime(now);
    if (!ours || StringAt(spec, "acquireTime").empty()) {
      spec["acquireTime"] = FormatMicroTime(now);
    }
    spec["leaseTransitions"] = ours ? transitions : transitions + 1;
    auto written = client_.Update(
        path, lease, config_.renew_deadline);  // metadata.resourceVersion: the precondition
    if (written) {
      std::lock_guard lock(mu_);
      observed_record_ = RecordOf((*written)["spec"]);
      observed_at_ = now;
      holder_ = config_.identity;
      last_renew_ms_ = Millis(now);
      return true;
    }
    if (written.error().code() != Error::Code::kConflict) {
      return std::unexpected(written.error());
    }
    // Someone else wrote the lease since our read: look again.
  }
  return false;
}

Result<void> LeaderElector::Release() {
  bool was_leader = leader_.exchange(false);
  const std::string path = LeasePath();
  auto got = client_.Get(path, config_.renew_deadline);
  if (!got) {
    return got.error().code() == Error::Code::kNotFound ? Result<void>()
                                                        : std::unexpected(got.error());
  }
  Json lease = std::move(*got);
  if (!lease.contains("spec") || StringAt(lease["spec"], "holderIdentity") != config_.identity) {
    return {};
  }
  Time now = clock_.Now();
  Json& spec = lease["spec"];
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["renewTime"] = FormatMicroTime(now);
  spec["acquireTime"] = FormatMicroTime(now);
  auto written = client_.Update(path, lease, config_.renew_deadline);
  if (!written) return std::unexpected(written.error().Wrap("release lease"));
  std::lock_guard lock(mu_);
  holder_.clear();
  if (was_leader) {
    spdlog::info("leader election: {} released lease {}/{}", config_.identity, config_.namespace_,
                 config_.name);
  }
  return {};
}

void LeaderElector::Start(Callback on_started_leading, Callback on_stopped_leading) {
  if (thread_.joinable()) return;
  on_started_ = std::move(on_started_leading);
  on_stopped_ = std::move(on_stopped_leading);
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  bool held = leader_.load();
  leader_ = false;
  if (held) {
    if (auto r = Release(); !r) {
      spdlog::warn("leader election: {}: could not release the lease: {}", config_.identity,
                   r.error().message());
    }
  }
}

void LeaderElector::AbandonForTesting() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  leader_ = false;
}

void LeaderElector::Run() {
  while (!stop_.load()) {
    auto result = TryAcquireOrRenew();
    if (stop_.load()) break;
    Time now = clock_.Now();
    bool was_leader = leader_.load();
    if (result && *result) {
      if (!was_leader) {
        leader_ = true;
        spdlog::info("leader election: {} acquired lease {}/{}", config_.identity,
                     config_.namespace_, config_.name);
        if (on_started_) on_started_();
      }
    } else if (was_leader) {
      bool taken = result.has_value();  // someone else holds it now
      bool expired = Millis(now) - last_renew_ms_.load() >= config_.renew_deadline.count();
      if (taken || expired) {
        leader_ = false;
        spdlog::warn("leader election: {} lost lease {}/{}: {}", config_.identity,
                     config_.namespace_, config_.name,
                     taken ? "held by " + Holder()
                           : "not renewed within " + FormatDuration(config_.renew_deadline) + " (" +
                                 result.error().message() + ")");
        if (on_stopped_) on_stopped_();
      } else {
        spdlog::warn("leader election: {}: renewing lease failed: {}", config_.identity,
                     result.error().message());
      }
    } else if (!result) {
      spdlog::debug("leader election: {}: {}", config_.identity, result.error().message());
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, config_.retry_period, [this] { return stop_.load(); });
  }
}

}  // namespace tidepool::kube
