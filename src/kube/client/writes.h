// The writes the controller makes to the cluster (taints, cordon, node create/delete, Events,
// the status ConfigMap), each safe against a stale cache: read fresh, change, write with the
// resourceVersion precondition, and on 409 read again and retry.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/error.h"
#include "base/time.h"
#include "kube/client/api_client.h"
#include "model/node.h"

namespace tidepool::kube {

// The taint names (model/node.h), under kube:: for the writes' callers.
using model::kDeletionCandidateTaint;
using model::kToBeDeletedTaint;
inline constexpr std::string_view kNoSchedule = "NoSchedule";
inline constexpr std::string_view kPreferNoSchedule = "PreferNoSchedule";
inline constexpr std::string_view kNoExecute = "NoExecute";
// Events' source.component and reportingComponent.
inline constexpr std::string_view kEventComponent = "tidepool";

// How often a conflicting (409) read-modify-write is tried in all before giving up with the
// last kConflict error.
inline constexpr int kDefaultWriteAttempts = 5;

// Read-modify-write of one object: GETs `path`, calls `mutate` on the fresh object, and when it
// returns true PUTs the object back (its metadata.resourceVersion is the precondition). On 409
// the whole cycle is repeated after a short jittered pause (10 ms x attempt), at most
// `max_attempts` times. `mutate` returning false means "no
// change needed": nothing is written. Returns the object as stored (the PUT's response, or the
// GET's when unchanged). `mutate` may be called several times and must be idempotent; its
// error is returned as is. Errors of the GET (kNotFound, ...) are returned as is.
Result<nlohmann::json> UpdateWithRetry(ApiClient& client, const std::string& path,
                                       const std::function<Result<bool>(nlohmann::json&)>& mutate,
                                       int max_attempts = kDefaultWriteAttempts);

// Adds the taint key=value:effect to the node. Idempotent: a taint with the same key and effect
// that is already there is left as it is (its value too, so the first "since" time is kept).
// Returns true when the node was changed.
Result<bool> AddTaint(ApiClient& client, const std::string& node, std::string_view key,
                      std::string_view value, std::string_view effect);
// Removes every taint with this key (any effect). Removing one that is gone is ok (false).
Result<bool> RemoveTaint(ApiClient& client, const std::string& node, std::string_view key);
// Cordon (true) / uncordon (false) via spec.unschedulable. True when the node was changed.
Result<bool> SetUnschedulable(ApiClient& client, const std::string& node, bool unschedulable);
using model::TaintTimestamp;  // the taint value, unix seconds (model/node.h)

// Deletes the node only if its uid is still `uid` (empty: any), so a node re-created under the
// same name is never removed by mistake (that is a kConflict). Already gone is ok.
Result<void> DeleteNode(ApiClient& client, const std::string& name, const std::string& uid);
// Creates a Node object (a v1 Node as JSON); returns it as stored. Already existing is kConflict.
Result<nlohmann::json> CreateNode(ApiClient& client, const nlohmann::json& node);

// Creates or updates the ConfigMap ns/name so that its `data` is exactly `data` (other fields,
// labels and annotations are kept). Safe against concurrent writers (409 retried). Returns true
// when something was written.
Result<bool> ApplyConfigMap(ApiClient& client, const std::string& ns, const std::string& name,
                            const std::map<std::string, std::string>& data);

// What an Event is about.
struct ObjectRef {
  std::string kind;        // "Pod", "Node"
  std::string namespace_;  // "" for cluster-scoped objects (the Event goes to "default")
  std::string name;
  std::string uid;  // "" when not known
  std::string api_version = "v1";
};

enum class EventType { kNormal, kWarning };

// Records core/v1 Events the way client-go's recorder does, with aggregation: the same event
// (object, type, reason, message) again within `aggregation_window` of the last one bumps
// `count` and `lastTimestamp` of the existing Event (PATCH) instead of creating another. The
// cache of recent events is bounded (least recently recorded dropped first) and in memory only.
//
// Thread-safe (one mutex, held across the HTTP call so the same event is never created twice).
// Failures are returned, never retried here; callers usually log and move on.
class EventRecorder {
 public:
  struct Options {
    std::string reporting_instance;  // e.g. the pod name; "" leaves it out
    Duration aggregation_window = std::chrono::minutes(5);
    size_t max_cached = 4096;
  };

  // `client` and `clock` must outlive the recorder.
  EventRecorder(ApiClient& client, const Clock& clock, Options options);
  EventRecorder(ApiClient& client, const Clock& clock) : EventRecorder(client, clock, Options{}) {}

  Result<void> RecordEvent(const ObjectRef& object, EventType type, std::string_view reason,
                           std::string_view message);

  // Events created and aggregated (count bumped) so far; for tests and metrics.
  size_t created() const;
  size_t aggregated() const;

 private:
  struct Entry {
    std::string ns;
    std::string name;  // of the Event object
    int64_t count = 0;
    Time last{};
    std::list<std::string>::iterator lru;
  };

  Result<void> Create(const std::string& key, const ObjectRef& object, EventType type,
                      std::string_view reason, std::string_view message, Time now);

  ApiClient& client_;
  const Clock& clock_;
  Options options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_;
  std::list<std::string> lru_;  // front = most recent
  uint64_t sequence_ = 0;
  size_t created_ = 0;
  size_t aggregated_ = 0;
};

}  // namespace tidepool::kube
