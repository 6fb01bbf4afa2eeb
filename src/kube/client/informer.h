// Informers: a local cache of one resource kept current by list + watch (paginated list, watch
// from its resourceVersion with bookmarks, relist on 410 and, after a backoff, on any other
// ERROR event but 429 that ends a watch; resume with backoff on a cut stream or failed request).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/shared_list.h"
#include "base/time.h"
#include "kube/client/api_client.h"
#include "kube/client/informer_cache.h"
#include "model/capacity_buffer.h"
#include "model/daemonset.h"
#include "model/dra.h"
#include "model/node.h"
#include "model/pdb.h"
#include "model/pod.h"
#include "model/provisioning_request.h"

namespace tidepool::kube {

struct InformerOptions {
  std::string collection;  // "/api/v1/pods"
  std::string name;        // for logs: "pods"
  int page_size = 500;
  // Each watch asks the server to end it after a random time in [timeout, 2 * timeout), as
  // client-go does, so that all informers do not reconnect at once.
  Duration watch_timeout = std::chrono::minutes(5);
  // Reconnect backoff after a failed list or watch: initial, doubled per failure, capped; back to
  // initial after a healthy stream (one that delivered an event or lasted `healthy_after`).
  Duration backoff_initial = std::chrono::milliseconds(200);
  // Capped low so the cache is current again within seconds of the API server coming back
  // (each informer retries a dead server about every 4 s: a few requests per second in all).
  Duration backoff_max = std::chrono::seconds(4);
  Duration healthy_after = std::chrono::seconds(10);
  // For a resource that may not exist (a CRD): a 404 on list means "absent": the informer is
  // synced with an empty cache and lists again after `absent_recheck`.
  bool optional = false;
  Duration absent_recheck = std::chrono::minutes(5);
};

enum class ChangeType { kAdded, kModified, kDeleted };

// Counters for metrics; monotonic.
struct InformerStats {
  uint64_t lists = 0;          // successful full lists (the first one included)
  uint64_t relists = 0;        // lists after the first (410 Gone, ERROR events, CRD re-checks)
  uint64_t reconnects = 0;     // watches resumed after an error or a cut stream
  uint64_t decode_errors = 0;  // objects skipped because they did not decode
  uint64_t events = 0;         // watch events applied (bookmarks not counted)
  // Watch events and relisted objects that decoded to what the cache held, but for their
  // resourceVersion (Informer<T>): not a change.
  uint64_t unchanged = 0;
};

// The type-erased machinery behind Informer<T>. Use Informer<T>.
//
// Thread-safety: Start/Stop from one owner thread; everything else from any thread. One
// background thread per informer does the I/O; callbacks run on it, outside the cache lock
// (they may read the informer, and must not block for long).
class InformerBase {
 public:
  using Decoded = std::shared_ptr<const void>;
  // Decodes an object; `previous` is what the cache holds under its key (null: nothing), and is
  // handed back when the object holds nothing else (a write that changed nothing decoded).
  using Decoder = std::function<Result<Decoded>(const nlohmann::json&, const Decoded& previous)>;
  using ChangeCallback = std::function<void(ChangeType, const std::string& key)>;

  InformerBase(ApiClient& client, InformerOptions options, Decoder decoder);
  virtual ~InformerBase();  // stops
  InformerBase(const InformerBase&) = delete;
  InformerBase& operator=(const InformerBase&) = delete;

  // Set before Start. Called for every change of the cache: watch events, and the differences a
  // relist makes, key "namespace/name" or "name". A write that left the decoded object as it was
  // (Informer<T>) is none.
  void SetChangeCallback(ChangeCallback callback);
  // Set before Start. Called with the key of every change too, but while the cache lock is held,
  // before any Snapshot can see the change: a reader that records the keys knows that every
  // change a later Snapshot holds was recorded before it. It must be quick, must not block and
  // must not call into the informer.
  void SetMarker(std::function<void(const std::string& key)> marker);

  void Start();
  // Returns within about a second (an open watch notices the cancel flag); idempotent.
  void Stop();

  // True once the first list has been applied (also for an absent optional resource).
  bool HasSynced() const { return synced_.load(); }
  // Waits until HasSynced or the timeout; returns HasSynced().
  bool WaitForSync(Duration timeout) const;
  // For an optional resource: false while the list says 404.
  bool Present() const { return present_.load(); }
  // The resourceVersion the cache reflects (the last list, event or bookmark).
  std::string ResourceVersion() const;
  InformerStats Stats() const;
  size_t Size() const;
  // How many times the cache changed (InformerCache::changes): it moves with every add, change
  // and delete, and with a relist only when the relist found one.
  uint64_t Changes() const;
  const InformerOptions& options() const { return options_; }

  // For tests: cuts the open watch stream (as a network failure would); the informer resumes
  // from its last resourceVersion.
  void InterruptWatchForTesting();
  // For tests: as above, and the next watch starts from `resource_version` (an old one forces the
  // server's 410 Gone and so a relist), even if the old stream delivers events before it ends.
  void ResumeFromForTesting(const std::string& resource_version);

 protected:
  // The objects, and in `changes` the cache's count of changes (InformerCache::changes) read with
  // them under the same lock.
  std::vector<Decoded> SnapshotErased(uint64_t& changes) const;
  std::shared_ptr<const InformerCache::Items> ListErased(uint64_t& changes) const;
  Decoded GetErased(const std::string& key) const;

 private:
  using Item = InformerCache::Item;
  void Run();
  // An optional resource the server does not serve (404): empties the cache, reports every
  // item deleted and counts as synced.
  void MarkAbsent();
  // A list decodes only the objects written since the cache read them.
  Result<void> ListAndReplace();
  // The cache's item under `key` (its object and resourceVersion), if any.
  std::optional<Item> CachedItem(const std::string& key) const;
  // The resourceVersion the next watch starts from: the last one seen, or ResumeFromForTesting's.
  std::string WatchStart();
  // `error_event`: the server ended the stream with an ERROR event (see ApiClient::Watch).
  Result<void> WatchOnce(bool& healthy, bool& error_event);
  void Apply(const WatchEvent& event);
  // Sleeps up to `d`, or until Stop or the API server is seen reachable again after being
  // unreachable (ApiClient's recovery listeners); returns false when stopping.
  bool Sleep(Duration d);
  void Notify(ChangeType type, const std::string& key);
  void Mark(const std::string& key) {  // with mu_ held
    if (marker_) marker_(key);
  }

  ApiClient& client_;
  uint64_t recovery_listener_ = 0;  // ApiClient::AddRecoveryListener
  bool woken_ = false;              // the API server came back: end the backoff now (mu_)
  InformerOptions options_;
  Decoder decoder_;
  ChangeCallback on_change_;
  std::function<void(const std::string&)> marker_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  InformerCache cache_;
  std::string resource_version_;
  std::optional<std::string> resume_from_;  // ResumeFromForTesting, taken by the next watch
  InformerStats stats_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> cancel_watch_{false};
  std::atomic<bool> synced_{false};
  std::atomic<bool> present_{true};
  std::thread thread_;
  uint64_t seed_;
};

// A read of an informer's cache with its count of changes at that instant: two reads of one
// informer with the same count hold the same objects.
template <typename L>
struct Counted {
  L items;
  uint64_t changes = 0;
};

// An informer whose cache holds decoded T values (model::Pod, model::Node, ... or the raw
// nlohmann::json). An object that fails to decode is logged with its name and the reason,
// counted in Stats().decode_errors and left out of the cache (a stale version is removed); the
// informer keeps running. A write that changes nothing a T holds but its resourceVersion (a
// kubelet's node status heartbeat; model::SameButVersion) is no change: the cache keeps the
// object it handed out, with the resourceVersion it was decoded with, and counts it in
// Stats().unchanged; the cache's own resourceVersion moves on.
template <typename T>
class Informer : public InformerBase {
 public:
  using DecodeFn = std::function<Result<T>(const nlohmann::json&)>;

  Informer(ApiClient& client, InformerOptions options, DecodeFn decode)
      : InformerBase(client, std::move(options),
                     [decode = std::move(decode)](const nlohmann::json& obj,
                                                  const Decoded& previous) -> Result<Decoded> {
                       TIDEPOOL_ASSIGN_OR_RETURN(T value, decode(obj));
                       if constexpr (requires { model::SameButVersion(value, value); }) {
                         if (previous != nullptr &&
                             model::SameButVersion(*static_cast<const T*>(previous.get()), value))
                           return previous;
                       }
                       return std::static_pointer_cast<const void>(
                           std::make_shared<const T>(std::move(value)));
                     }) {}

  // A consistent copy of the cache at one instant (objects in key order). The objects are
  // immutable and shared: holding the snapshot is cheap and never blocks the informer.
  std::vector<std::shared_ptr<const T>> Snapshot() const { return CountedSnapshot().items; }
  // The same in O(1): the cache's own list, shared until the next change after this call.
  SharedList<T> List() const { return CountedList().items; }
  // Snapshot() and List() with the count of changes they reflect.
  Counted<std::vector<std::shared_ptr<const T>>> CountedSnapshot() const {
    Counted<std::vector<std::shared_ptr<const T>>> out;
    auto erased = SnapshotErased(out.changes);
    out.items.reserve(erased.size());
    for (auto& v : erased) out.items.push_back(std::static_pointer_cast<const T>(std::move(v)));
    return out;
  }
  Counted<SharedList<T>> CountedList() const {
    Counted<SharedList<T>> out;
    out.items = SharedList<T>(ListErased(out.changes));
    return out;
  }
  // The object with this key ("namespace/name" or "name"), or null.
  std::shared_ptr<const T> Get(const std::string& key) const {
    return std::static_pointer_cast<const T>(GetErased(key));
  }
};

using PodInformer = Informer<model::Pod>;
using NodeInformer = Informer<model::Node>;
using PdbInformer = Informer<model::PodDisruptionBudget>;
using DaemonSetInformer = Informer<model::DaemonSet>;
using RawInformer = Informer<nlohmann::json>;
using ProvisioningRequestInformer = Informer<model::ProvisioningRequest>;
using PodTemplateInformer = Informer<model::PodTemplate>;
using CapacityBufferInformer = Informer<model::CapacityBuffer>;
using DeploymentInformer = Informer<model::Deployment>;
using DeviceClassInformer = Informer<model::DeviceClass>;
using ResourceClaimInformer = Informer<model::ResourceClaim>;
using ResourceClaimTemplateInformer = Informer<model::ResourceClaimTemplate>;
using ResourceSliceInformer = Informer<model::ResourceSlice>;

// The informers the controller runs, with the codec's decoders and their collections. `tune`
// overrides timing (page size, backoff); its collection, name and optional are ignored.
std::unique_ptr<PodInformer> MakePodInformer(ApiClient& client, InformerOptions tune = {});
std::unique_ptr<NodeInformer> MakeNodeInformer(ApiClient& client, InformerOptions tune = {});
std::unique_ptr<PdbInformer> MakePdbInformer(ApiClient& client, InformerOptions tune = {});
std::unique_ptr<DaemonSetInformer> MakeDaemonSetInformer(ApiClient& client,
                                                         InformerOptions tune = {});
// scheduling.x-k8s.io/v1alpha1 PodGroups (coscheduling), kept as JSON; optional (absent when
// the CRD is not installed).
std::unique_ptr<RawInformer> MakePodGroupInformer(ApiClient& client, InformerOptions tune = {});
// autoscaling.x-k8s.io/v1 ProvisioningRequests; optional (absent when the CRD is not
// installed). PodTemplates (v1), which their pod sets name.
std::unique_ptr<ProvisioningRequestInformer> MakeProvisioningRequestInformer(
    ApiClient& client, InformerOptions tune = {});
std::unique_ptr<PodTemplateInformer> MakePodTemplateInformer(ApiClient& client,
                                                             InformerOptions tune = {});
// autoscaling.x-k8s.io/v1beta1 CapacityBuffers; optional (absent when the CRD is not installed).
// apps/v1 Deployments, which their scalableRefs may name (only their replicas and templates).
std::unique_ptr<CapacityBufferInformer> MakeCapacityBufferInformer(ApiClient& client,
                                                                   InformerOptions tune = {});
std::unique_ptr<DeploymentInformer> MakeDeploymentInformer(ApiClient& client,
                                                           InformerOptions tune = {});
// Dynamic Resource Allocation (resource.k8s.io/v1, docs/dra.md); optional (absent on clusters
// that do not serve the API).
std::unique_ptr<DeviceClassInformer> MakeDeviceClassInformer(ApiClient& client,
                                                             InformerOptions tune = {});
std::unique_ptr<ResourceClaimInformer> MakeResourceClaimInformer(ApiClient& client,
                                                                 InformerOptions tune = {});
std::unique_ptr<ResourceClaimTemplateInformer> MakeResourceClaimTemplateInformer(
    ApiClient& client, InformerOptions tune = {});
std::unique_ptr<ResourceSliceInformer> MakeResourceSliceInformer(ApiClient& client,
                                                                 InformerOptions tune = {});

}  // namespace tidepool::kube
