#include "kube/client/informer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "kube/codec/capacity_buffer.h"
#include "kube/codec/dra.h"
#include "kube/codec/objects.h"
#include "kube/codec/provisioning.h"

namespace tidepool::kube {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::string StringAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const Json& Metadata(const Json& obj) {
  static const Json kEmpty = Json::object();
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find("metadata");
  return it != obj.end() && it->is_object() ? *it : kEmpty;
}

// "namespace/name" or "name", as model::ObjectMeta::Key() says.
std::string KeyOf(const Json& obj) {
  const Json& meta = Metadata(obj);
  std::string ns = StringAt(meta, "namespace");
  std::string name = StringAt(meta, "name");
  return ns.empty() ? name : ns + "/" + name;
}

std::string RvOf(const Json& obj) { return StringAt(Metadata(obj), "resourceVersion"); }

}  // namespace

InformerBase::InformerBase(ApiClient& client, InformerOptions options, Decoder decoder)
    : client_(client),
      options_(std::move(options)),
      decoder_(std::move(decoder)),
      seed_(std::hash<std::string>{}(options_.collection) ^
            static_cast<uint64_t>(SteadyClock::now().time_since_epoch().count())) {
  if (options_.name.empty()) options_.name = options_.collection;
}

InformerBase::~InformerBase() { Stop(); }

void InformerBase::SetChangeCallback(ChangeCallback callback) { on_change_ = std::move(callback); }

void InformerBase::SetMarker(std::function<void(const std::string& key)> marker) {
  marker_ = std::move(marker);
}

void InformerBase::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  cancel_watch_ = false;
  recovery_listener_ = client_.AddRecoveryListener([this] {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  });
  thread_ = std::thread([this] { Run(); });
}

void InformerBase::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cancel_watch_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (recovery_listener_ != 0) {
    client_.RemoveRecoveryListener(recovery_listener_);
    recovery_listener_ = 0;
  }
}

bool InformerBase::WaitForSync(Duration timeout) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return synced_.load() || stop_.load(); });
  return synced_.load();
}

std::string InformerBase::ResourceVersion() const {
  std::lock_guard lock(mu_);
  return resource_version_;
}

InformerStats InformerBase::Stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

size_t InformerBase::Size() const {
  std::lock_guard lock(mu_);
  return cache_.size();
}

void InformerBase::InterruptWatchForTesting() { cancel_watch_ = true; }

void InformerBase::ResumeFromForTesting(const std::string& resource_version) {
  {
    std::lock_guard lock(mu_);
    resume_from_ = resource_version;
  }
  cancel_watch_ = true;
}

std::vector<InformerBase::Decoded> InformerBase::SnapshotErased(uint64_t& changes) const {
  std::lock_guard lock(mu_);
  changes = cache_.changes();
  std::vector<Decoded> out;
  out.reserve(cache_.size());
  for (const auto& [key, item] : cache_.items()) out.push_back(item.value);
  return out;
}

std::shared_ptr<const InformerCache::Items> InformerBase::ListErased(uint64_t& changes) const {
  std::lock_guard lock(mu_);
  changes = cache_.changes();
  return cache_.List();
}

uint64_t InformerBase::Changes() const {
  std::lock_guard lock(mu_);
  return cache_.changes();
}

std::optional<InformerBase::Item> InformerBase::CachedItem(const std::string& key) const {
  std::lock_guard lock(mu_);
  const Item* item = cache_.Find(key);
  return item != nullptr ? std::optional<Item>(*item) : std::nullopt;
}

InformerBase::Decoded InformerBase::GetErased(const std::string& key) const {
  std::lock_guard lock(mu_);
  const Item* item = cache_.Find(key);
  return item == nullptr ? nullptr : item->value;
}

bool InformerBase::Sleep(Duration d) {
  std::unique_lock lock(mu_);
  if (cv_.wait_for(lock, d, [this] { return stop_.load() || woken_; }) && woken_ && !stop_) {
    spdlog::info("informer {}: the API server answers again; reconnecting now", options_.name);
  }
  return !stop_.load();
}

void InformerBase::Notify(ChangeType type, const std::string& key) {
  if (on_change_) on_change_(type, key);
}

void InformerBase::MarkAbsent() {
  std::vector<std::string> gone;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, item] : cache_.items()) {
      gone.push_back(key);
      Mark(key);
    }
    cache_.Replace({});
    resource_version_.clear();
    if (present_.exchange(false) || !synced_) {
      spdlog::info("informer {}: not served by the API server (404), treating as absent",
                   options_.name);
    }
    synced_ = true;
  }
  cv_.notify_all();
  for (const auto& key : gone) Notify(ChangeType::kDeleted, key);
}

void InformerBase::Run() {
  Duration backoff = options_.backoff_initial;
  auto grow = [&] { backoff = std::min(backoff * 2, options_.backoff_max); };
  bool need_list = true;
  // A recovery seen before this attempt's failure says nothing about it: forget it.
  auto attempt = [this] {
    std::lock_guard lock(mu_);
    woken_ = false;
  };
  while (!stop_) {
    attempt();
    if (need_list) {
      auto listed = ListAndReplace();
      if (stop_) break;
      if (!listed) {
        if (options_.optional && listed.error().code() == Error::Code::kNotFound) {
          MarkAbsent();
          if (!Sleep(options_.absent_recheck)) break;
          continue;
        }
        spdlog::warn("informer {}: list failed: {}; retrying in {}", options_.name,
                     listed.error().message(), FormatDuration(backoff));
        if (!Sleep(backoff)) break;
        grow();
        continue;
      }
      present_ = true;
      need_list = false;
    }
    bool healthy = false;
    bool error_event = false;
    attempt();
    auto watched = WatchOnce(healthy, error_event);
    if (stop_) break;
    if (healthy) backoff = options_.backoff_initial;
    if (watched) {
      // The server ended the stream (timeoutSeconds): watch again at once, unless streams keep
      // ending before anything arrives.
      if (!healthy) {
        if (!Sleep(backoff)) break;
        grow();
      }
      continue;
    }
    const Error& error = watched.error();
    if (error.code() == Error::Code::kExpired) {
      spdlog::info("informer {}: {}; relisting", options_.name, error.message());
      need_list = true;
      continue;
    }
    if (options_.optional && error.code() == Error::Code::kNotFound) {
      need_list = true;  // the CRD went away; the list will say so
      continue;
    }
    if (error_event && error.code() != Error::Code::kThrottled) {
      // The server took the watch and then ended it with an error of its own, typically one
      // tied to where the watch started (a kube-apiserver without watch cache whose etcd was
      // compacted at the revision right after ours answers 500 "PrevKv=nil" for the deleted
      // object there). Resuming from the same resourceVersion would fail the same way for as
      // long as that revision stays where it is, on a cache that no longer changes: relist, as
      // client-go's reflector does.
      spdlog::warn("informer {}: {}; relisting in {}", options_.name, error.message(),
                   FormatDuration(backoff));
      need_list = true;
      if (!Sleep(backoff)) break;
      grow();
      continue;
    }
    {
      std::lock_guard lock(mu_);
      ++stats_.reconnects;
    }
    spdlog::warn("informer {}: watch failed: {}; resuming from resourceVersion {} in {}",
                 options_.name, error.message(), ResourceVersion(), FormatDuration(backoff));
    if (!Sleep(backoff)) break;
    grow();
  }
}

Result<void> InformerBase::ListAndReplace() {
  TIDEPOOL_ASSIGN_OR_RETURN(ListPage page,
                            client_.ListAll(options_.collection, options_.page_size));
  std::map<std::string, Item> fresh;
  uint64_t decode_errors = 0;
  for (const auto& obj : page.items) {
    std::string key = KeyOf(obj);
    std::string rv = RvOf(obj);
    std::optional<Item> cached = CachedItem(key);
    if (cached && cached->resource_version == rv) {
      fresh[key] = std::move(*cached);  // not written since: the object already handed out
      continue;
    }
    auto decoded = decoder_(obj, cached ? cached->value : nullptr);
    if (!decoded) {
      ++decode_errors;
      spdlog::warn("informer {}: skipping {}: {}", options_.name, key, decoded.error().message());
      continue;
    }
    fresh[key] = Item{std::move(*decoded), std::move(rv)};
  }
  std::vector<std::pair<ChangeType, std::string>> changes;
  {
    std::lock_guard lock(mu_);
    // Only this thread writes the cache: what CachedItem read for each key is still there.
    for (const auto& [key, item] : fresh) {
      const Item* old = cache_.Find(key);
      if (old == nullptr) {
        changes.emplace_back(ChangeType::kAdded, key);
      } else if (old->value != item.value) {
        changes.emplace_back(ChangeType::kModified, key);
      } else if (old->resource_version != item.resource_version) {
        ++stats_.unchanged;  // written, but the decoder handed back the cached object
      }
    }
    for (const auto& [key, item] : cache_.items()) {
      if (!fresh.contains(key)) changes.emplace_back(ChangeType::kDeleted, key);
    }
    for (const auto& change : changes) Mark(change.second);
    cache_.Replace(std::move(fresh));
    resource_version_ = page.resource_version;
    stats_.decode_errors += decode_errors;
    if (stats_.lists > 0) ++stats_.relists;
    ++stats_.lists;
    synced_ = true;
  }
  cv_.notify_all();
  spdlog::debug("informer {}: listed {} objects at resourceVersion {}", options_.name,
                page.items.size(), page.resource_version);
  for (const auto& [type, key] : changes) Notify(type, key);
  return {};
}

std::string InformerBase::WatchStart() {
  std::lock_guard lock(mu_);
  if (resume_from_) {
    resource_version_ = std::move(*resume_from_);
    resume_from_.reset();
  }
  return resource_version_;
}

Result<void> InformerBase::WatchOnce(bool& healthy, bool& error_event) {
  auto start = SteadyClock::now();
  std::mt19937_64 rng(seed_++);
  auto jitter = std::uniform_real_distribution<double>(1.0, 2.0)(rng);
  auto timeout = std::chrono::duration_cast<Duration>(options_.watch_timeout * jitter);
  bool got_event = false;
  auto result = client_.Watch(
      options_.collection, WatchStart(),
      [&](const WatchEvent& event) {
        got_event = true;
        Apply(event);
        return !stop_.load();
      },
      &cancel_watch_, timeout, &error_event);
  healthy = got_event || SteadyClock::now() - start >= options_.healthy_after;
  bool interrupted = cancel_watch_.exchange(false);
  if (stop_) return {};
  if (result && interrupted) {
    return Fail(Error::Code::kUnavailable, "watch {} interrupted", options_.collection);
  }
  return result;
}

void InformerBase::Apply(const WatchEvent& event) {
  std::string rv = RvOf(event.object);
  if (event.type == WatchEvent::Type::kBookmark) {
    if (!rv.empty()) {
      std::lock_guard lock(mu_);
      resource_version_ = rv;
    }
    return;
  }
  std::string key = KeyOf(event.object);
  std::optional<ChangeType> change;
  if (event.type == WatchEvent::Type::kDeleted) {
    std::lock_guard lock(mu_);
    if (cache_.Erase(key)) change = ChangeType::kDeleted;
    if (change) Mark(key);
    if (!rv.empty()) resource_version_ = rv;
    ++stats_.events;
  } else {
    const Decoded previous = GetErased(key);
    auto decoded = decoder_(event.object, previous);
    std::lock_guard lock(mu_);
    if (!rv.empty()) resource_version_ = rv;
    ++stats_.events;
    if (!decoded) {
      ++stats_.decode_errors;
      spdlog::warn("informer {}: skipping {}: {}", options_.name, key, decoded.error().message());
      if (cache_.Erase(key)) change = ChangeType::kDeleted;
    } else if (previous != nullptr && *decoded == previous) {
      // Only this thread writes the cache: `previous` is still what the key holds.
      cache_.Restamp(key, rv);
      ++stats_.unchanged;
    } else {
      bool inserted = cache_.Set(key, Item{std::move(*decoded), rv});
      change = inserted ? ChangeType::kAdded : ChangeType::kModified;
    }
    if (change) Mark(key);
  }
  if (change) Notify(*change, key);
}

namespace {

InformerOptions Tuned(InformerOptions tune, std::string collection, std::string name,
                      bool optional = false) {
  tune.collection = std::move(collection);
  tune.name = std::move(name);
  tune.optional = optional;
  return tune;
}

}  // namespace

std::unique_ptr<PodInformer> MakePodInformer(ApiClient& client, InformerOptions tune) {
  return std::make_unique<PodInformer>(client, Tuned(std::move(tune), "/api/v1/pods", "pods"),
                                       [](const Json& j) { return codec::DecodePod(j); });
}

std::unique_ptr<NodeInformer> MakeNodeInformer(ApiClient& client, InformerOptions tune) {
  return std::make_unique<NodeInformer>(client, Tuned(std::move(tune), "/api/v1/nodes", "nodes"),
                                        [](const Json& j) { return codec::DecodeNode(j); });
}

std::unique_ptr<PdbInformer> MakePdbInformer(ApiClient& client, InformerOptions tune) {
  return std::make_unique<PdbInformer>(
      client,
      Tuned(std::move(tune), "/apis/policy/v1/poddisruptionbudgets", "poddisruptionbudgets"),
      [](const Json& j) { return codec::DecodePdb(j); });
}

std::unique_ptr<DaemonSetInformer> MakeDaemonSetInformer(ApiClient& client, InformerOptions tune) {
  return std::make_unique<DaemonSetInformer>(
      client, Tuned(std::move(tune), "/apis/apps/v1/daemonsets", "daemonsets"),
      [](const Json& j) { return codec::DecodeDaemonSet(j); });
}

std::unique_ptr<ProvisioningRequestInformer> MakeProvisioningRequestInformer(ApiClient& client,
                                                                             InformerOptions tune) {
  return std::make_unique<ProvisioningRequestInformer>(
      client,
      Tuned(std::move(tune), "/apis/autoscaling.x-k8s.io/v1/provisioningrequests",
            "provisioningrequests", /*optional=*/true),
      [](const Json& j) { return codec::DecodeProvisioningRequest(j); });
}

std::unique_ptr<PodTemplateInformer> MakePodTemplateInformer(ApiClient& client,
                                                             InformerOptions tune) {
  return std::make_unique<PodTemplateInformer>(
      client, Tuned(std::move(tune), "/api/v1/podtemplates", "podtemplates"),
      [](const Json& j) { return codec::DecodePodTemplateOrInvalid(j); });
}

std::unique_ptr<CapacityBufferInformer> MakeCapacityBufferInformer(ApiClient& client,
                                                                   InformerOptions tune) {
  return std::make_unique<CapacityBufferInformer>(
      client,
      Tuned(std::move(tune), "/apis/autoscaling.x-k8s.io/v1beta1/capacitybuffers",
            "capacitybuffers", /*optional=*/true),
      [](const Json& j) { return codec::DecodeCapacityBuffer(j); });
}

std::unique_ptr<DeploymentInformer> MakeDeploymentInformer(ApiClient& client,
                                                           InformerOptions tune) {
  return std::make_unique<DeploymentInformer>(
      client, Tuned(std::move(tune), "/apis/apps/v1/deployments", "deployments"),
      [](const Json& j) { return codec::DecodeDeploymentOrInvalid(j); });
}

std::unique_ptr<DeviceClassInformer> MakeDeviceClassInformer(ApiClient& client,
                                                             InformerOptions tune) {
  return std::make_unique<DeviceClassInformer>(
      client,
      Tuned(std::move(tune), "/apis/resource.k8s.io/v1/deviceclasses", "deviceclasses",
            /*optional=*/true),
      [](const Json& j) { return codec::DecodeDeviceClass(j); });
}

std::unique_ptr<ResourceClaimInformer> MakeResourceClaimInformer(ApiClient& client,
                                                                 InformerOptions tune) {
  return std::make_unique<ResourceClaimInformer>(
      client,
      Tuned(std::move(tune), "/apis/resource.k8s.io/v1/resourceclaims", "resourceclaims",
            /*optional=*/true),
      [](const Json& j) { return codec::DecodeResourceClaim(j); });
}

std::unique_ptr<ResourceClaimTemplateInformer> MakeResourceClaimTemplateInformer(
    ApiClient& client, InformerOptions tune) {
  return std::make_unique<ResourceClaimTemplateInformer>(
      client,
      Tuned(std::move(tune), "/apis/resource.k8s.io/v1/resourceclaimtemplates",
            "resourceclaimtemplates", /*optional=*/true),
      [](const Json& j) { return codec::DecodeResourceClaimTemplate(j); });
}

std::unique_ptr<ResourceSliceInformer> MakeResourceSliceInformer(ApiClient& client,
                                                                 InformerOptions tune) {
  return std::make_unique<ResourceSliceInformer>(
      client,
      Tuned(std::move(tune), "/apis/resource.k8s.io/v1/resourceslices", "resourceslices",
            /*optional=*/true),
      [](const Json& j) { return codec::DecodeResourceSlice(j); });
}

std::unique_ptr<RawInformer> MakePodGroupInformer(ApiClient& client, InformerOptions tune) {
  return std::make_unique<RawInformer>(
      client,
      Tuned(std::move(tune), "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", "podgroups",
            /*optional=*/true),
      [](const Json& j) -> Result<Json> { return j; });
}

}  // namespace tidepool::kube
