#include "cloud/kwok/kwok_provider.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "base/kill_point.h"
#include "kube/codec/encode.h"

namespace tidepool::cloud::kwok {

using nlohmann::json;

namespace {

constexpr std::string_view kNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";
constexpr Duration kCreateRetry = std::chrono::seconds(2);
constexpr Duration kUnseenTtl = std::chrono::minutes(1);

// One machine of the state: {"name": ..., "<time_key>": RFC 3339}.
Result<std::pair<std::string, Time>> ParseStateItem(const json& item, std::string_view time_key,
                                                    std::string_view where, std::string_view pool) {
  const std::string key(time_key);
  if (!item.is_object() || !item.contains("name") || !item["name"].is_string() ||
      !item.contains(key) || !item[key].is_string()) {
    return InvalidArgument("{}: pool {}: expected {{\"name\": ..., \"{}\": ...}}, got {}", where,
                           pool, key, item.dump());
  }
  auto t = ParseRfc3339(item[key].get<std::string>());
  if (!t) return std::unexpected(t.error().Wrap(std::string(where)));
  return std::pair{item["name"].get<std::string>(), *t};
}

}  // namespace

KwokProvider::KwokProvider(const model::AutoscalerConfig& config, kube::ApiClient& api,
                           const Clock& clock, KwokOptions options)
    : config_(config),
      api_(api),
      clock_(clock),
      options_(std::move(options)),
      rng_(options_.seed != 0 ? options_.seed : std::random_device{}()) {}

Result<std::unique_ptr<KwokProvider>> KwokProvider::Create(const model::AutoscalerConfig& config,
                                                           kube::ApiClient& api, const Clock& clock,
                                                           KwokOptions options) {
  std::unique_ptr<KwokProvider> p(new KwokProvider(config, api, clock, std::move(options)));
  TIDEPOOL_RETURN_IF_ERROR(p->Load());
  p->thread_ = std::thread([raw = p.get()] { raw->Run(); });
  return p;
}

KwokProvider::~KwokProvider() { Stop(); }

void KwokProvider::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Duration KwokProvider::BootDelay(const model::Pool& pool) const {
  return pool.boot_delay.value_or(config_.provider.boot_delay.value_or(kDefaultBootDelay));
}

Duration KwokProvider::RestartDelay(const model::Pool& pool) const {
  return pool.restart_delay.value_or(BootDelay(pool) / 5);
}

bool KwokProvider::Unavailable(const std::string& pool) const {
  const auto& u = config_.provider.unavailable_pools;
  return std::find(u.begin(), u.end(), pool) != u.end();
}

Result<void> KwokProvider::Load() {
  const std::string path =
      kube::ObjectPath("v1", "configmaps", options_.state_namespace, options_.state_configmap);
  auto cm = api_.Get(path);
  // A transient failure at start (429, 5xx, a dropped connection) is retried for a while
  // rather than ending the process: found by the fault-proxy e2e test (tests/e2e/fault_proxy.sh).
  auto delay = std::chrono::milliseconds(200);
  for (int attempt = 1; !cm && attempt < 8 &&
                        (cm.error().code() == Error::Code::kThrottled ||
                         cm.error().code() == Error::Code::kUnavailable);
       ++attempt) {
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(3000));
    cm = api_.Get(path);
  }
  if (!cm) {
    if (cm.error().code() == Error::Code::kNotFound) return {};
    return std::unexpected(cm.error().Wrap("kwok provider: reading its state"));
  }
  auto stored = ParseState(*cm);
  if (!stored) return std::unexpected(stored.error());
  std::lock_guard lock(mu_);
  state_rv_ = cm->value("/metadata/resourceVersion"_json_pointer, std::string());
  booting_ = std::move(stored->booting);
  stopped_ = std::move(stored->stopped);
  return {};
}

Result<KwokProvider::Stored> KwokProvider::ParseState(const json& cm) const {
  Stored out;
  auto data = cm.value("/data/state"_json_pointer, std::string());
  if (data.empty()) return out;
  json state = json::parse(data, nullptr, /*allow_exceptions=*/false);
  const std::string where = fmt::format("kwok provider: ConfigMap {}/{} key state",
                                        options_.state_namespace, options_.state_configmap);
  if (!state.is_object() || !state.contains("pools") || !state["pools"].is_object()) {
    return InvalidArgument("{}: expected {{\"pools\": {{...}}}}, got {}", where,
                           data.substr(0, 200));
  }
  for (const auto& [pool, items] : state["pools"].items()) {
    if (config_.FindPool(pool) == nullptr) {
      spdlog::warn("{}: pool {} is not in the config any more; forgetting its {} booting nodes",
                   where, pool, items.size());
      continue;
    }
    for (const auto& item : items) {
      TIDEPOOL_ASSIGN_OR_RETURN(auto b, ParseStateItem(item, "due", where, pool));
      out.booting[pool].push_back({std::move(b.first), b.second});
    }
  }
  if (!state.contains("stopped")) return out;  // written before stopped nodes existed
  if (!state["stopped"].is_object()) {
    return InvalidArgument("{}: expected \"stopped\" to be an object, got {}", where,
                           state["stopped"].dump());
  }
  for (const auto& [pool, items] : state["stopped"].items()) {
    if (config_.FindPool(pool) == nullptr) continue;  // not configured any more
    for (const auto& item : items) {
      TIDEPOOL_ASSIGN_OR_RETURN(auto st, ParseStateItem(item, "at", where, pool));
      out.stopped[pool].push_back({std::move(st.first), st.second});
    }
  }
  return out;
}

void KwokProvider::AfterFailedSaveLocked(const Error& error) {
  if (error.code() == Error::Code::kNotFound) state_rv_.clear();  // deleted: create it again
  if (error.code() != Error::Code::kConflict) return;
  auto cm = api_.Get(
      kube::ObjectPath("v1", "configmaps", options_.state_namespace, options_.state_configmap));
  if (!cm) {
    spdlog::warn("kwok provider: re-reading its state after a conflict: {}", cm.error().message());
    return;
  }
  auto stored = ParseState(*cm);
  if (!stored) {
    spdlog::warn("{}", stored.error().message());
    return;
  }
  state_rv_ = cm->value("/metadata/resourceVersion"_json_pointer, std::string());
  for (auto& [pool, items] : stored->stopped) {
    auto& ours = stopped_[pool];
    for (auto& st : items) {
      auto same = [&](const Stopped& o) { return o.name == st.name; };
      if (std::find_if(ours.begin(), ours.end(), same) == ours.end()) ours.push_back(std::move(st));
    }
  }
  for (auto& [pool, items] : stored->booting) {
    auto& ours = booting_[pool];
    for (auto& b : items) {
      auto same = [&](const Booting& o) { return o.name == b.name; };
      if (std::find_if(ours.begin(), ours.end(), same) != ours.end()) continue;
      spdlog::warn(
          "kwok provider: adopting machine {} of pool {}, written to its state by "
          "someone else",
          b.name, pool);
      ours.push_back(std::move(b));
    }
  }
  cv_.notify_all();
}

Result<void> KwokProvider::PersistLocked() {
  json pools = json::object();
  for (const auto& [pool, items] : booting_) {
    if (items.empty()) continue;
    json arr = json::array();
    for (const auto& b : items) arr.push_back({{"name", b.name}, {"due", FormatRfc3339(b.due)}});
    pools[pool] = std::move(arr);
  }
  json stopped = json::object();
  for (const auto& [pool, items] : stopped_) {
    if (items.empty()) continue;
    json arr = json::array();
    for (const auto& st : items) arr.push_back({{"name", st.name}, {"at", FormatRfc3339(st.at)}});
    stopped[pool] = std::move(arr);
  }
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", options_.state_configmap},
               {"namespace", options_.state_namespace},
               {"labels", {{"app.kubernetes.io/managed-by", "tidepool"}}}}},
             {"data", {{"state", json{{"pools", pools}, {"stopped", stopped}}.dump()}}}};
  Result<json> written;
  if (state_rv_.empty()) {
    // A 409 (created since our Load) is a conflict like a stale resourceVersion.
    written = api_.Create(kube::CollectionPath("v1", "configmaps", options_.state_namespace), cm);
  } else {
    cm["metadata"]["resourceVersion"] = state_rv_;
    written = api_.Update(
        kube::ObjectPath("v1", "configmaps", options_.state_namespace, options_.state_configmap),
        cm);
  }
  if (!written) return std::unexpected(written.error().Wrap("kwok provider: saving its state"));
  state_rv_ = written->value("/metadata/resourceVersion"_json_pointer, std::string());
  return {};
}

Result<json> KwokProvider::NodeObject(const std::string& pool, const std::string& name) const {
  const model::Pool* p = config_.FindPool(pool);
  if (p == nullptr) return Fail(Error::Code::kNotFound, "kwok provider: no pool {}", pool);
  model::Node node = p->template_node;
  node.meta.name = name;
  node.meta.labels[std::string(model::kLabelPool)] = pool;
  node.meta.labels[std::string(model::kLabelHostname)] = name;
  node.meta.labels["type"] = "kwok";
  if (!p->instance_type.empty()) {
    node.meta.labels.emplace(std::string(model::kLabelInstanceType), p->instance_type);
  }
  node.meta.annotations[std::string(kKwokNodeAnnotation)] = "fake";
  node.provider_id = std::string(kProviderIdPrefix) + name;
  node.ready = false;
  return kube::codec::EncodeNode(node);
}

bool KwokProvider::PublishSlices(const model::Pool& pool, const json& node) {
  std::string name = node.value("/metadata/name"_json_pointer, std::string());
  std::string uid = node.value("/metadata/uid"_json_pointer, std::string());
  bool ok = true;
  for (model::ResourceSlice slice : pool.device_slices) {
    slice.meta.name = name + "-" + slice.driver;
    slice.pool = name;
    slice.node_name = name;
    slice.meta.owner_references = {{"v1", "Node", name, uid, false}};
    auto r = api_.Create(kube::CollectionPath("resource.k8s.io/v1", "resourceslices"),
                         kube::codec::EncodeResourceSlice(slice));
    if (!r && r.error().code() != Error::Code::kConflict) {
      spdlog::warn("kwok provider: publishing the {} devices of node {} (retried in {}): {}",
                   slice.driver, name, FormatDuration(kCreateRetry), r.error().message());
      ok = false;
    }
  }
  return ok;
}

void KwokProvider::AdoptUnpublishedLocked(
    const std::map<std::string, std::pair<std::string, std::string>>& devices) {
  std::erase_if(published_, [&](const std::string& name) { return !devices.contains(name); });
  bool adopted = false;
  for (const auto& [name, pool_uid] : devices) {
    if (published_.contains(name) || unpublished_.contains(name)) continue;
    json node = {{"metadata", {{"name", name}, {"uid", pool_uid.second}}}};
    unpublished_[name] = {pool_uid.first, std::move(node)};
    adopted = true;
  }
  if (adopted) cv_.notify_all();
}

bool KwokProvider::PublishDueSlicesLocked(std::unique_lock<std::mutex>& lock) {
  bool ok = true;
  auto due = unpublished_;
  for (const auto& [name, entry] : due) {
    const model::Pool* p = config_.FindPool(entry.first);
    lock.unlock();
    const bool published = p == nullptr || PublishSlices(*p, entry.second);
    lock.lock();
    if (published) {
      unpublished_.erase(name);
      published_.insert(name);
    } else {
      ok = false;
    }
  }
  return ok;
}

Result<std::vector<PoolSize>> KwokProvider::Refresh(Time now) {
  std::map<std::string, int> nodes;
  std::set<std::string> seen;
  std::map<std::string, std::pair<std::string, std::string>> devices;  // name -> pool, uid
  auto count = [&](const std::string& name, const std::string* pool, std::string_view pid,
                   bool deleting, const std::string& uid) {
    if (!pid.starts_with(kProviderIdPrefix) || deleting || pool == nullptr) return;
    ++nodes[*pool];
    seen.insert(name);
    const model::Pool* p = config_.FindPool(*pool);
    if (p != nullptr && !p->device_slices.empty()) devices[name] = {*pool, uid};
  };
  if (options_.list_nodes) {
    for (const auto& n : options_.list_nodes()) {
      count(n->name(), n->meta.Label(model::kLabelPool), n->provider_id,
            n->meta.deletion_timestamp.has_value(), n->meta.uid);
    }
  } else {
    TIDEPOOL_ASSIGN_OR_RETURN(auto list,
                              api_.ListAll(kube::CollectionPath("v1", "nodes") +
                                           "?labelSelector=" + net::UrlEncode(model::kLabelPool)));
    for (const auto& n : list.items) {
      auto labels = n.value("/metadata/labels"_json_pointer, json::object());
      std::string pool = labels.value(std::string(model::kLabelPool), std::string());
      count(n.value("/metadata/name"_json_pointer, std::string()), &pool,
            n.value("/spec/providerID"_json_pointer, std::string()),
            !n.value("/metadata/deletionTimestamp"_json_pointer, std::string()).empty(),
            n.value("/metadata/uid"_json_pointer, std::string()));
    }
  }
  std::lock_guard lock(mu_);
  AdoptUnpublishedLocked(devices);
  // A node created a moment ago that the cache does not show yet still counts; one the cache
  // never shows (deleted by someone else before it got there) is forgotten after a while.
  for (auto it = unseen_.begin(); it != unseen_.end();) {
    if (seen.contains(it->first) || now - it->second.second > kUnseenTtl) {
      it = unseen_.erase(it);
    } else {
      ++nodes[it->second.first];
      ++it;
    }
  }
  std::vector<PoolSize> out;
  for (const auto& pool : config_.pools) {
    PoolSize s;
    s.pool = pool.name;
    auto it = booting_.find(pool.name);
    int booting = it == booting_.end() ? 0 : static_cast<int>(it->second.size());
    s.instances = nodes[pool.name] + booting;
    s.target = s.instances;
    for (const Stopped& st : stopped_[pool.name]) {
      if (!seen.contains(st.name)) ++s.stopped;  // else its stop did not finish
    }
    if (Unavailable(pool.name)) {
      s.stockout = true;
      s.stockout_reason = "no capacity: the pool is in provider.unavailablePools";
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<void> KwokProvider::IncreaseSize(const std::string& pool, int delta, Time now) {
  const model::Pool* p = config_.FindPool(pool);
  if (p == nullptr) return Fail(Error::Code::kNotFound, "kwok provider: no pool {}", pool);
  if (delta <= 0) return InvalidArgument("kwok provider: pool {}: increase by {}", pool, delta);
  if (Unavailable(pool)) {
    return Fail(Error::Code::kUnavailable,
                "kwok provider: pool {}: no capacity (listed in provider.unavailablePools)", pool);
  }
  std::unique_lock lock(mu_);
  auto& items = booting_[pool];
  const size_t before = items.size();
  auto stopped_before = stopped_[pool];
  int restarted =
      p->scale_down.Deallocates() ? RestartLocked(pool, delta, now + RestartDelay(*p)) : 0;
  Time due = now + BootDelay(*p);
  for (int i = restarted; i < delta; ++i) {
    std::string name = pool + "-";
    for (int k = 0; k < 5; ++k) name.push_back(kNameAlphabet[rng_() % kNameAlphabet.size()]);
    items.push_back({std::move(name), due});
  }
  ReachKillPoint(KillPoint::kKwokBeforeSave);
  if (auto r = PersistLocked(); !r) {
    items.resize(before);
    stopped_[pool] = std::move(stopped_before);
    AfterFailedSaveLocked(r.error());
    return r;
  }
  ReachKillPoint(KillPoint::kKwokSaved);
  lock.unlock();
  cv_.notify_all();
  return {};
}

Result<void> KwokProvider::DecreaseTargetSize(const std::string& pool, int delta, Time) {
  if (config_.FindPool(pool) == nullptr) {
    return Fail(Error::Code::kNotFound, "kwok provider: no pool {}", pool);
  }
  std::lock_guard lock(mu_);
  auto& items = booting_[pool];
  if (delta <= 0 || delta > static_cast<int>(items.size())) {
    return InvalidArgument(
        "kwok provider: pool {}: cannot cancel {} nodes, only {} have not joined yet", pool, delta,
        items.size());
  }
  auto saved = items;
  items.resize(items.size() - delta);
  if (auto r = PersistLocked(); !r) {
    items = std::move(saved);
    AfterFailedSaveLocked(r.error());
    return r;
  }
  return {};
}

Result<void> KwokProvider::DeleteNode(const std::string& pool, const model::Node& node, Time) {
  {
    std::lock_guard lock(mu_);
    auto& items = booting_[pool];
    auto& stopped = stopped_[pool];
    auto booting = std::find_if(items.begin(), items.end(),
                                [&](const Booting& b) { return b.name == node.name(); });
    // A stop a restart interrupted (kwok-stop-saved) that is now a deletion: forget it too.
    auto was_stopped = std::find_if(stopped.begin(), stopped.end(),
                                    [&](const Stopped& st) { return st.name == node.name(); });
    if (booting != items.end() || was_stopped != stopped.end()) {
      auto saved_items = items;
      auto saved_stopped = stopped;
      if (booting != items.end()) items.erase(booting);
      if (was_stopped != stopped.end()) stopped.erase(was_stopped);
      if (auto r = PersistLocked(); !r) {
        items = std::move(saved_items);
        stopped = std::move(saved_stopped);
        AfterFailedSaveLocked(r.error());
        return r;
      }
    }
    unseen_.erase(node.name());
    unpublished_.erase(node.name());
    published_.erase(node.name());
  }
  auto r = api_.Delete(kube::ObjectPath("v1", "nodes", "", node.name()), node.meta.uid);
  if (!r && r.error().code() != Error::Code::kNotFound) {
    return std::unexpected(r.error().Wrap("kwok provider: deleting node " + node.name()));
  }
  return {};
}

int KwokProvider::RestartLocked(const std::string& pool, int delta, Time due) {
  auto& stopped = stopped_[pool];
  int n = std::min(delta, static_cast<int>(stopped.size()));
  for (int i = 0; i < n; ++i) {
    booting_[pool].push_back({std::move(stopped.back().name), due});  // most recently stopped
    stopped.pop_back();
  }
  return n;
}

Result<void> KwokProvider::StopNode(const std::string& pool, const model::Node& node, Time now) {
  const model::Pool* p = config_.FindPool(pool);
  if (p == nullptr) return Fail(Error::Code::kNotFound, "kwok provider: no pool {}", pool);
  if (!p->scale_down.Deallocates()) {
    return InvalidArgument("kwok provider: pool {}: scaleDown.mode is delete; not stopping node {}",
                           pool, node.name());
  }
  {
    std::lock_guard lock(mu_);
    auto& stopped = stopped_[pool];
    auto same = [&](const Stopped& st) { return st.name == node.name(); };
    if (std::find_if(stopped.begin(), stopped.end(), same) == stopped.end()) {
      // Recorded before the Node goes: a restart in between finds it stopped, not lost.
      stopped.push_back({node.name(), now});
      if (auto r = PersistLocked(); !r) {
        stopped.pop_back();
        AfterFailedSaveLocked(r.error());
        return r;
      }
    }
    unseen_.erase(node.name());
    unpublished_.erase(node.name());
    published_.erase(node.name());
  }
  ReachKillPoint(KillPoint::kKwokStopSaved);
  auto r = api_.Delete(kube::ObjectPath("v1", "nodes", "", node.name()), node.meta.uid);
  if (!r && r.error().code() != Error::Code::kNotFound) {
    return std::unexpected(r.error().Wrap("kwok provider: stopping node " + node.name()));
  }
  spdlog::info("kwok provider: node {} of pool {} stopped", node.name(), pool);
  return {};
}

Result<void> KwokProvider::DeleteStopped(const std::string& pool, int count, Time) {
  if (config_.FindPool(pool) == nullptr) {
    return Fail(Error::Code::kNotFound, "kwok provider: no pool {}", pool);
  }
  if (count <= 0) {
    return InvalidArgument("kwok provider: pool {}: delete {} stopped nodes (expected > 0)", pool,
                           count);
  }
  std::lock_guard lock(mu_);
  auto& stopped = stopped_[pool];
  auto saved = stopped;
  stopped.erase(stopped.begin(), stopped.begin() + std::min<size_t>(count, stopped.size()));
  if (auto r = PersistLocked(); !r) {
    stopped = std::move(saved);
    AfterFailedSaveLocked(r.error());
    return r;
  }
  return {};
}

std::string KwokProvider::PoolOf(const model::Node& node) const {
  if (!node.provider_id.starts_with(kProviderIdPrefix)) return "";
  const std::string* pool = node.meta.Label(model::kLabelPool);
  if (pool == nullptr || config_.FindPool(*pool) == nullptr) return "";
  return *pool;
}

void KwokProvider::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    // The earliest due machine, if any.
    std::optional<Time> next;
    for (const auto& [pool, items] : booting_) {
      for (const auto& b : items) {
        if (!next || b.due < *next) next = b.due;
      }
    }
    Time now = clock_.Now();
    if (!unpublished_.empty()) next = now;  // retry those slices now (failures wait below)
    if (!next || *next > now) {
      if (next) {
        cv_.wait_for(lock, *next - now);
      } else {
        cv_.wait(lock);
      }
      continue;
    }
    // Create every due node; each one leaves the booting list only once its Node exists.
    std::vector<std::pair<std::string, std::string>> due;  // pool, name
    for (const auto& [pool, items] : booting_) {
      for (const auto& b : items) {
        if (b.due <= now) due.emplace_back(pool, b.name);
      }
    }
    bool failed = false;
    for (const auto& [pool, name] : due) {
      auto obj = NodeObject(pool, name);
      if (!obj) continue;
      lock.unlock();
      auto created = api_.Create(kube::CollectionPath("v1", "nodes"), *obj);
      lock.lock();
      if (!created && created.error().code() != Error::Code::kConflict) {
        spdlog::warn("kwok provider: creating node {}: {}", name, created.error().message());
        failed = true;
        continue;
      }
      ReachKillPoint(KillPoint::kKwokNodeCreated);
      spdlog::info("kwok provider: node {} of pool {} is up", name, pool);
      if (const model::Pool* p = config_.FindPool(pool);
          p != nullptr && created && !p->device_slices.empty()) {
        unpublished_[name] = {pool, *created};
      }
      auto& items = booting_[pool];
      std::erase_if(items, [&](const Booting& b) { return b.name == name; });
      if (options_.list_nodes) unseen_[name] = {pool, clock_.Now()};
    }
    if (auto r = PersistLocked(); !r) {
      spdlog::warn("{}", r.error().message());
      AfterFailedSaveLocked(r.error());
      failed = true;
    }
    if (!PublishDueSlicesLocked(lock)) failed = true;
    if (failed && !stop_) cv_.wait_for(lock, kCreateRetry);
  }
}

}  // namespace tidepool::cloud::kwok
