#include "kube/client/writes.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <random>
#include <thread>

namespace tidepool::kube {
namespace {

using Json = nlohmann::json;

std::string NodePath(const std::string& name) { return ObjectPath("v1", "nodes", "", name); }

// The string member `key` of `obj`, or "".
std::string StringAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// spec (created when missing) of a fetched object; an error when it is not a map.
Result<Json*> Spec(Json& obj, const std::string& what) {
  if (!obj.is_object()) return Fail(Error::Code::kInternal, "{}: expected an object", what);
  Json& spec = obj["spec"];
  if (spec.is_null()) spec = Json::object();
  if (!spec.is_object()) return Fail(Error::Code::kInternal, "{}: spec: expected a map", what);
  return &spec;
}

// RFC 3339 with whole seconds, as metav1.Time serialises.
std::string Seconds(Time t) { return FormatRfc3339(std::chrono::floor<std::chrono::seconds>(t)); }

std::string ResourceVersion(const Json& obj) {
  return obj.contains("metadata") ? StringAt(obj["metadata"], "resourceVersion") : "";
}

}  // namespace

Result<Json> UpdateWithRetry(ApiClient& client, const std::string& path,
                             const std::function<Result<bool>(Json&)>& mutate, int max_attempts) {
  std::optional<Error> last;
  for (int attempt = 1; attempt <= std::max(1, max_attempts); ++attempt) {
    TIDEPOOL_ASSIGN_OR_RETURN(Json obj, client.Get(path));
    if (ResourceVersion(obj).empty()) {
      return Fail(Error::Code::kInternal, "GET {}: metadata.resourceVersion: expected a value",
                  path);
    }
    TIDEPOOL_ASSIGN_OR_RETURN(bool changed, mutate(obj));
    if (!changed) return obj;
    auto written = client.Update(path, obj);
    if (written) return written;
    if (written.error().code() != Error::Code::kConflict) return written;
    spdlog::debug("conflict writing {} (attempt {} of {}), re-reading", path, attempt,
                  max_attempts);
    last = written.error();
    // A short pause with jitter, so two writers that keep colliding drift apart.
    if (attempt < max_attempts) {
      thread_local std::minstd_rand rng(std::random_device{}());
      std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt + rng() % 10));
    }
  }
  return std::unexpected(
      last->Wrap(fmt::format("still conflicting after {} attempts", max_attempts)));
}

Result<bool> AddTaint(ApiClient& client, const std::string& node, std::string_view key,
                      std::string_view value, std::string_view effect) {
  bool changed = false;
  std::string path = NodePath(node);
  auto result = UpdateWithRetry(client, path, [&](Json& obj) -> Result<bool> {
    changed = false;
    TIDEPOOL_ASSIGN_OR_RETURN(Json * spec, Spec(obj, "node " + node));
    Json& taints = (*spec)["taints"];
    if (taints.is_null()) taints = Json::array();
    if (!taints.is_array()) {
      return Fail(Error::Code::kInternal, "node {}: spec.taints: expected a list", node);
    }
    for (const auto& t : taints) {
      if (StringAt(t, "key") == key && StringAt(t, "effect") == effect) return false;
    }
    Json taint = {{"key", key}, {"effect", effect}};
    if (!value.empty()) taint["value"] = value;
    taints.push_back(std::move(taint));
    changed = true;
    return true;
  });
  if (!result)
    return std::unexpected(result.error().Wrap(fmt::format("add taint {} to node {}", key, node)));
  return changed;
}

Result<bool> RemoveTaint(ApiClient& client, const std::string& node, std::string_view key) {
  bool changed = false;
  std::string path = NodePath(node);
  auto result = UpdateWithRetry(client, path, [&](Json& obj) -> Result<bool> {
    changed = false;
    TIDEPOOL_ASSIGN_OR_RETURN(Json * spec, Spec(obj, "node " + node));
    auto it = spec->find("taints");
    if (it == spec->end() || !it->is_array()) return false;
    Json kept = Json::array();
    for (auto& t : *it) {
      if (StringAt(t, "key") != key) kept.push_back(std::move(t));
    }
    if (kept.size() == it->size()) return false;
    *it = std::move(kept);
    changed = true;
    return true;
  });
  if (!result) {
    return std::unexpected(
        result.error().Wrap(fmt::format("remove taint {} from node {}", key, node)));
  }
  return changed;
}

Result<bool> SetUnschedulable(ApiClient& client, const std::string& node, bool unschedulable) {
  bool changed = false;
  auto result = UpdateWithRetry(client, NodePath(node), [&](Json& obj) -> Result<bool> {
    changed = false;
    TIDEPOOL_ASSIGN_OR_RETURN(Json * spec, Spec(obj, "node " + node));
    auto it = spec->find("unschedulable");
    bool current = it != spec->end() && it->is_boolean() && it->get<bool>();
    if (current == unschedulable) return false;
    if (unschedulable) {
      (*spec)["unschedulable"] = true;
    } else {
      spec->erase("unschedulable");
    }
    changed = true;
    return true;
  });
  if (!result) {
    return std::unexpected(result.error().Wrap(
        fmt::format("{} node {}", unschedulable ? "cordon" : "uncordon", node)));
  }
  return changed;
}

Result<void> DeleteNode(ApiClient& client, const std::string& name, const std::string& uid) {
  auto result = client.Delete(NodePath(name), uid);
  if (!result && result.error().code() == Error::Code::kNotFound) return {};
  if (!result) return std::unexpected(result.error().Wrap(fmt::format("delete node {}", name)));
  return {};
}

Result<Json> CreateNode(ApiClient& client, const Json& node) {
  auto result = client.Create("/api/v1/nodes", node);
  if (!result) {
    std::string name = node.is_object() && node.contains("metadata")
                           ? StringAt(node["metadata"], "name")
                           : std::string();
    return std::unexpected(result.error().Wrap(fmt::format("create node {}", name)));
  }
  return result;
}

Result<bool> ApplyConfigMap(ApiClient& client, const std::string& ns, const std::string& name,
                            const std::map<std::string, std::string>& data) {
  std::string path = ObjectPath("v1", "configmaps", ns, name);
  Json want = Json::object();
  for (const auto& [k, v] : data) want[k] = v;
  std::optional<Error> last;
  for (int attempt = 1; attempt <= kDefaultWriteAttempts; ++attempt) {
    bool changed = false;
    auto updated = UpdateWithRetry(
        client, path,
        [&](Json& obj) -> Result<bool> {
          changed = false;
          auto it = obj.find("data");
          if (it != obj.end() && *it == want) return false;
          if (it == obj.end() && want.empty()) return false;
          obj["data"] = want;
          changed = true;
          return true;
        },
        kDefaultWriteAttempts);
    if (updated) return changed;
    if (updated.error().code() != Error::Code::kNotFound) {
      return std::unexpected(updated.error().Wrap(fmt::format("apply ConfigMap {}/{}", ns, name)));
    }
    Json object = {{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"metadata", {{"name", name}, {"namespace", ns}}},
                   {"data", want}};
    auto created = client.Create(CollectionPath("v1", "configmaps", ns), object);
    if (created) return true;
    if (created.error().code() != Error::Code::kConflict) {  // 409 AlreadyExists: raced
      return std::unexpected(created.error().Wrap(fmt::format("apply ConfigMap {}/{}", ns, name)));
    }
    last = created.error();
  }
  return std::unexpected(last->Wrap(fmt::format("apply ConfigMap {}/{}", ns, name)));
}

EventRecorder::EventRecorder(ApiClient& client, const Clock& clock, Options options)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      // Event names of two replicas (or a restarted one) in the same millisecond must differ.
      sequence_(std::random_device{}()) {}

size_t EventRecorder::created() const {
  std::lock_guard lock(mu_);
  return created_;
}

size_t EventRecorder::aggregated() const {
  std::lock_guard lock(mu_);
  return aggregated_;
}

Result<void> EventRecorder::RecordEvent(const ObjectRef& object, EventType type,
                                        std::string_view reason, std::string_view message) {
  // The API server limits an Event's message; keep it under 1 KiB as events.k8s.io requires.
  std::string text(message.substr(0, 1024));
  std::string key =
      fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", object.kind, object.namespace_,
                  object.name, object.uid, type == EventType::kWarning ? "W" : "N", reason, text);
  Time now = clock_.Now();
  std::lock_guard lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end() && now - it->second.last < options_.aggregation_window) {
    Entry& e = it->second;
    Json patch = {{"count", e.count + 1}, {"lastTimestamp", Seconds(now)}};
    auto patched = client_.Patch(ObjectPath("v1", "events", e.ns, e.name), patch);
    if (patched) {
      e.count += 1;
      e.last = now;
      lru_.splice(lru_.begin(), lru_, e.lru);
      ++aggregated_;
      return {};
    }
    if (patched.error().code() != Error::Code::kNotFound) {
      return std::unexpected(
          patched.error().Wrap(fmt::format("event {} on {} {}", reason, object.kind, object.name)));
    }
    // The Event expired (the API server's event TTL); start a new one.
  }
  return Create(key, object, type, reason, text, now);
}

Result<void> EventRecorder::Create(const std::string& key, const ObjectRef& object, EventType type,
                                   std::string_view reason, std::string_view message, Time now) {
  std::string ns = object.namespace_.empty() ? "default" : object.namespace_;
  // Unique per recorder and time; the object name part is cut so the whole stays a valid name.
  std::string base = object.name.substr(0, 200);
  std::string name = fmt::format(
      "{}.{:x}{:04x}", base,
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count(),
      ++sequence_ & 0xffff);
  Json involved = {
      {"kind", object.kind}, {"name", object.name}, {"apiVersion", object.api_version}};
  if (!object.namespace_.empty()) involved["namespace"] = object.namespace_;
  if (!object.uid.empty()) involved["uid"] = object.uid;
  Json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"involvedObject", std::move(involved)},
                {"reason", reason},
                {"message", message},
                {"type", type == EventType::kWarning ? "Warning" : "Normal"},
                {"source", {{"component", kEventComponent}}},
                {"reportingComponent", kEventComponent},
                {"firstTimestamp", Seconds(now)},
                {"lastTimestamp", Seconds(now)},
                {"count", 1}};
  if (!options_.reporting_instance.empty()) {
    event["reportingInstance"] = options_.reporting_instance;
  }
  auto created = client_.Create(CollectionPath("v1", "events", ns), event);
  if (!created) {
    return std::unexpected(
        created.error().Wrap(fmt::format("event {} on {} {}", reason, object.kind, object.name)));
  }
  ++created_;
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    lru_.erase(it->second.lru);
    cache_.erase(it);
  }
  lru_.push_front(key);
  cache_[key] = Entry{ns, name, 1, now, lru_.begin()};
  while (cache_.size() > options_.max_cached && !lru_.empty()) {
    cache_.erase(lru_.back());
    lru_.pop_back();
  }
  return {};
}

}  // namespace tidepool::kube
