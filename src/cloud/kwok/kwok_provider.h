// The kwok provider: tidepool's local cloud. It "boots" a pool's nodes by creating Node objects
// (managed by kwok's fake kubelet) in the API server after the pool's boot delay.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/time.h"
#include "cloud/provider.h"
#include "kube/client/api_client.h"
#include "model/pool.h"

namespace tidepool::cloud::kwok {

inline constexpr std::string_view kProviderIdPrefix = "kwok://";
inline constexpr std::string_view kKwokNodeAnnotation = "kwok.x-k8s.io/node";
inline constexpr Duration kDefaultBootDelay = std::chrono::seconds(5);

struct KwokOptions {
  // Where the provider keeps the machines it is "booting" (a ConfigMap), so a restarted
  // controller neither loses them nor asks for them again.
  std::string state_namespace = "kube-system";
  std::string state_configmap = "tidepool-kwok-provider";
  uint64_t seed = 0;  // node name suffixes; 0: from std::random_device
  // The Nodes as the controller's node informer has them. When set, Refresh counts the pools'
  // nodes from it instead of LISTing them from the API server on every pass (the controller
  // reads that cache anyway); nodes the provider created that the cache does not show yet are
  // counted until it does. Unset: a LIST per Refresh.
  std::function<std::vector<std::shared_ptr<const model::Node>>()> list_nodes;
};

// CloudProvider over the Kubernetes API (see cloud/provider.h for the contract).
//  - IncreaseSize records `delta` machines as booting (persisted before it returns) with a due
//    time of now + boot delay (pool.bootDelay, else provider.bootDelay, else 5 s); a background
//    thread creates each Node when it is due: name `<pool>-<random>`, providerID
//    `kwok://<name>`, the template's labels plus tidepool.dev/pool and kubernetes.io/hostname,
//    taints, capacity, allocatable and the annotation kwok.x-k8s.io/node=fake.
//  - Pools in provider.unavailablePools are out of stock: IncreaseSize fails with kUnavailable
//    and Refresh reports the stockout.
//  - DeleteNode deletes the Node object; DecreaseTargetSize drops the newest booting machines.
//  - Pools with scaleDown.mode deallocate (MachineStopper): StopNode records the node as stopped
//    (persisted) and then deletes its Node object; IncreaseSize restarts stopped nodes first
//    (the most recently stopped first): each becomes a booting machine of the same name, due
//    after the pool's restartDelay (default a fifth of its boot delay), and only the rest are
//    new. DeleteStopped forgets the longest-stopped ones. A stopped node whose Node object still
//    exists (a restart between the save and the delete) is not counted as stopped; stopping it
//    again completes the stop.
//  - target = booting machines + the pool's Nodes (providerID kwok://, label tidepool.dev/pool),
//    plus Nodes just created that options.list_nodes does not show yet.
// Thread-safe; the background thread stops in Stop() or the destructor.
class KwokProvider final : public CloudProvider, public MachineStopper {
 public:
  // Reads the persisted booting machines (a missing ConfigMap is an empty state) and starts
  // the background thread.
  static Result<std::unique_ptr<KwokProvider>> Create(const model::AutoscalerConfig& config,
                                                      kube::ApiClient& api, const Clock& clock,
                                                      KwokOptions options = {});
  ~KwokProvider() override;
  void Stop();

  std::string_view Name() const override { return "kwok"; }
  Result<std::vector<PoolSize>> Refresh(Time now) override;
  Result<void> IncreaseSize(const std::string& pool, int delta, Time now) override;
  Result<void> DecreaseTargetSize(const std::string& pool, int delta, Time now) override;
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time now) override;
  std::string PoolOf(const model::Node& node) const override;
  Result<void> StopNode(const std::string& pool, const model::Node& node, Time now) override;
  Result<void> DeleteStopped(const std::string& pool, int count, Time now) override;

  // The Node object the provider creates for `pool` under `name` (exposed for tests).
  Result<nlohmann::json> NodeObject(const std::string& pool, const std::string& name) const;
  // Publishes the ResourceSlices of the pool's template.devices for a node just created (`node`
  // is the API server's answer), as the node's DRA drivers would: one per driver, pool named
  // after the node, owned by the Node so they go with it. A slice that exists already counts as
  // published. False when one could not be written (logged); called unlocked.
  bool PublishSlices(const model::Pool& pool, const nlohmann::json& node);

 private:
  struct Booting {
    std::string name;
    Time due{};
  };
  struct Stopped {
    std::string name;
    Time at{};  // when it was stopped
  };
  // What the state ConfigMap holds, per pool.
  struct Stored {
    std::map<std::string, std::vector<Booting>> booting;
    std::map<std::string, std::vector<Stopped>> stopped;  // oldest first
  };

  KwokProvider(const model::AutoscalerConfig& config, kube::ApiClient& api, const Clock& clock,
               KwokOptions options);
  Result<void> Load();
  // The machines in a state ConfigMap, per pool (pools no longer configured are dropped).
  Result<Stored> ParseState(const nlohmann::json& cm) const;
  // Writes booting_ to the ConfigMap (create, or update with the last resourceVersion); a
  // kConflict when someone else wrote it since (see AfterFailedSaveLocked).
  Result<void> PersistLocked();
  // Called after the caller has rolled its change back. On a conflict (a killed predecessor's
  // write that landed after our Load, a deposed leader, a person) reads the stored state: its
  // resourceVersion, so the next save can succeed, and the machines it lists that booting_
  // does not, which are adopted (they were requested; Refresh counts them, the thread boots
  // them), so the caller's retry does not ask for them twice.
  void AfterFailedSaveLocked(const Error& error);
  void Run();
  // Publishes the slices of unpublished_ (unlocking around each node); false when one failed.
  // AdoptUnpublishedLocked: the listed nodes of pools with devices (name -> pool, uid) that are
  // not known to have their slices go to unpublished_.
  void AdoptUnpublishedLocked(
      const std::map<std::string, std::pair<std::string, std::string>>& devices);
  bool PublishDueSlicesLocked(std::unique_lock<std::mutex>& lock);
  Duration BootDelay(const model::Pool& pool) const;
  Duration RestartDelay(const model::Pool& pool) const;
  // Deallocate pools: moves up to `delta` stopped nodes to booting (due at `due`); returns how
  // many.
  int RestartLocked(const std::string& pool, int delta, Time due);
  bool Unavailable(const std::string& pool) const;

  model::AutoscalerConfig config_;
  kube::ApiClient& api_;
  const Clock& clock_;
  KwokOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<Booting>> booting_;  // pool -> oldest first
  std::map<std::string, std::vector<Stopped>> stopped_;  // pool -> oldest first
  // Nodes whose ResourceSlices could not be published yet, retried by Run like a failed create
  // (a driver keeps publishing until it can): name -> (pool, the Node as created). Dropped when
  // the node is deleted or stopped.
  std::map<std::string, std::pair<std::string, nlohmann::json>> unpublished_;
  // Nodes whose slices this process published (or found there). A node of a pool with devices
  // that Refresh lists and that is in neither set, say one created before a restart that came
  // between the Node and its slices, is added to unpublished_.
  std::set<std::string> published_;
  // Nodes created, not yet seen through options_.list_nodes: name -> (pool, created at).
  std::map<std::string, std::pair<std::string, Time>> unseen_;
  std::string state_rv_;  // resourceVersion of the state ConfigMap ("" when absent)
  std::mt19937_64 rng_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tidepool::cloud::kwok
