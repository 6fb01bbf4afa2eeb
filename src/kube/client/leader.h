// Leader election on a coordination.k8s.io/v1 Lease, so that of several tidepool replicas
// exactly one acts; the semantics follow client-go's leaderelection package.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "base/error.h"
#include "base/time.h"
#include "kube/client/api_client.h"

namespace tidepool::kube {

struct LeaderElectionConfig {
  std::string namespace_ = "kube-system";
  std::string name = "tidepool";
  std::string identity;  // unique per replica, e.g. the pod name; required
  // How long a lease is valid after its last renewal, as other replicas see it (they measure it
  // on their own clock from when they saw the lease change, never from the holder's timestamps).
  Duration lease_duration = std::chrono::seconds(15);
  // The leader stops leading when it has not renewed for this long. Must be < lease_duration.
  Duration renew_deadline = std::chrono::seconds(10);
  // Pause between acquire or renew attempts. Must be < renew_deadline.
  Duration retry_period = std::chrono::seconds(2);
};

// Checks identity is set and retry_period < renew_deadline < lease_duration (kInvalidArgument).
Result<void> ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

// MicroTime as the API server writes it: "2026-11-22T01:40:05.123000Z".
std::string FormatMicroTime(Time t);

// Acquires the Lease when it is absent, released (no holder) or expired; renews it every
// retry_period with the resourceVersion precondition while holding it.
//
// IsLeader() is what the controller checks before every action: it turns false at once when a
// renewal finds another holder, and in any case once renew_deadline has passed since the last
// successful renewal (even while a renewal request is still hanging), which is before any other
// replica can take over (lease_duration). on_stopped_leading runs on the elector's thread right
// after the loss is noticed; on_started_leading when the lease is acquired.
//
// Thread-safety: Start/Stop from one owner thread; IsLeader/Holder from any thread.
// TryAcquireOrRenew/Release are for tests and must not be mixed with a running Start().
// `client` and `clock` must outlive the elector.
class LeaderElector {
 public:
  using Callback = std::function<void()>;

  LeaderElector(ApiClient& client, LeaderElectionConfig config, const Clock& clock);
  ~LeaderElector();  // Stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Starts the background loop. Callbacks may be empty.
  void Start(Callback on_started_leading, Callback on_stopped_leading);
  // Ends the loop; when leading, stops leading at once (on_stopped_leading is NOT called: the
  // caller knows) and releases the lease (holder cleared) so another replica takes over at its
  // next attempt instead of after lease_duration. Returns within about retry_period plus one
  // request.
  void Stop();

  // For tests: ends the loop without releasing the lease, as a crash would; IsLeader() turns
  // false and no callback runs.
  void AbandonForTesting();

  bool IsLeader() const;
  // The holder seen last ("" when none or not yet known).
  std::string Holder() const;
  const LeaderElectionConfig& config() const { return config_; }

  // One attempt: true when this elector holds the lease afterwards. Errors are transport or
  // API errors other than a lost race.
  Result<bool> TryAcquireOrRenew();
  // Gives the lease up if this elector holds it.
  Result<void> Release();

 private:
  void Run();
  std::string LeasePath() const;

  ApiClient& client_;
  LeaderElectionConfig config_;
  const Clock& clock_;
  Callback on_started_;
  Callback on_stopped_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string observed_record_;  // holder/acquire/renew/transitions as last seen
  Time observed_at_{};           // local time that record was first seen
  std::string holder_;
  std::atomic<bool> leader_{false};
  std::atomic<int64_t> last_renew_ms_{0};  // clock_ time of the last successful renewal
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tidepool::kube
