// The Azure CloudProviders (azure-vmss: VM scale sets; aks: AKS agent pools; azure-vms:
// availability-set VMs) and their factory.
// Shared here: options, pending long-running operations, stockout memory, serving from cache.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "cloud/azure/arm.h"
#include "cloud/azure/auth.h"
#include "cloud/azure/settings.h"
#include "cloud/provider.h"
#include "model/pool.h"
#include "net/http.h"

namespace tidepool::cloud::azure {

// Answers "has the Node of this machine joined the cluster?" from the controller's informer
// cache: true when a Node whose spec.providerID equals `provider_id` (compare case-insensitively:
// Azure and the kubelet disagree on the resource group's case) exists.
using NodeJoined = std::function<bool(std::string_view provider_id)>;

struct Options {
  const Clock* clock = nullptr;           // nullptr: the wall clock
  Sleeper sleep;                          // empty: really sleep (only ArmClient::Wait sleeps)
  EnvLookup env;                          // empty: the process environment
  std::shared_ptr<net::HttpClient> http;  // empty: a new client using the system CA store
  // Without it, DecreaseTargetSize takes "provisioning not Succeeded" (VMSS) or "machine count
  // above the API's" (AKS) as "not joined", which misses machines that booted but never
  // registered. The controller should always set it.
  NodeJoined node_joined;
  // Told of every request to ARM (metrics); empty: nobody.
  ArmObserver arm_observer;
};

// Common behaviour of both providers (CloudProvider's contract, plus):
//  - Refresh polls each pending long-running operation that is due (one request each, no
//    waiting) and reads each pool. A pool that cannot be read because ARM throttles or is
//    unreachable is reported from its last successful read; without one, Refresh fails.
//  - Stockouts: a failed instance, a failed operation or a synchronous ARM error classified by
//    IsStockoutError marks the pool stocked out for AzureSettings::stockout_hold; Refresh reports
//    it (PoolSize.stockout, the ARM code and message as the reason) and IncreaseSize refuses with
//    kUnavailable until then.
//  - No call blocks on a long-running operation; Refresh follows them.
//  - IncreaseSize / DecreaseTargetSize: an unknown pool is kNotFound, a delta <= 0
//    kInvalidArgument, an increase past the pool's max kInvalidArgument (WithinMax); the
//    providers only do the pool-type-specific part (Grow / Shrink).
// Thread-safety: one calling thread (the controller's acting thread); no background threads.
class AzureProvider : public CloudProvider {
 public:
  ~AzureProvider() override;

  Result<std::vector<PoolSize>> Refresh(Time now) final;
  Result<void> IncreaseSize(const std::string& pool, int delta, Time now) final;
  Result<void> DecreaseTargetSize(const std::string& pool, int delta, Time now) final;

  // Pools Azure has but the config does not name: tagged scale sets (azure-vmss discovery) or
  // agent pools with maxCount or a `max` tag (aks), with templates from the SKU table and tags
  // (node_template.h). They become pools of this provider: later Refresh calls report them
  // after the configured ones and the other calls accept their names. Items that cannot be made
  // into a pool (no max, unknown VM size) are skipped with a warning.
  virtual Result<std::vector<model::Pool>> DiscoverPools(Time now) = 0;

  const ArmClient& arm() const { return *arm_; }
  const AzureSettings& settings() const { return settings_; }
  // Pending long-running operations of a pool (tests, status); of one kind ("scale", "stop").
  size_t pending_operations(const std::string& pool) const;
  size_t pending_operations(const std::string& pool, std::string_view kind) const;

  // What the factory wires in; owned by the provider.
  struct Deps {
    std::unique_ptr<RealClock> owned_clock;
    const Clock* clock = nullptr;
    std::shared_ptr<net::HttpClient> http;
    std::unique_ptr<TokenSource> tokens;
    std::unique_ptr<ArmClient> arm;
    NodeJoined node_joined;
    EnvLookup env;  // for the storage token source (secrets read at each fetch)
    // Tokens for Azure Storage (kStorageResource), made by StorageTokens() on first use.
    std::unique_ptr<TokenSource> storage_tokens;
  };

 protected:
  AzureProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps);

  struct PendingOp {
    Operation op;
    std::string kind;  // "scale", "delete", "start", "stop", ...: for logs and pending_operations
  };
  struct PoolState {
    std::vector<PendingOp> ops;
    std::string stockout_reason;
    std::optional<Time> stockout_until;
    std::optional<PoolSize> last;
  };

  // Per provider: read one pool (called by Refresh after the pending operations were polled).
  // nullopt leaves the pool out of this Refresh (it has no cloud resource yet).
  virtual Result<std::optional<PoolSize>> RefreshPool(const model::Pool& pool, Time now) = 0;
  // Per provider: work before the pools are read (discovery). Default: nothing.
  virtual Result<void> BeforeRefresh(Time now);
  // Per provider: IncreaseSize once the pool is known, delta > 0 and no stockout is held.
  virtual Result<void> Grow(const model::Pool& pool, int delta, Time now) = 0;
  // Per provider: DecreaseTargetSize once the pool is known and delta > 0.
  virtual Result<void> Shrink(const model::Pool& pool, int delta, Time now) = 0;
  // current + delta when that stays within the pool's max; else kInvalidArgument
  // "<provider>: pool P: C + D would pass the pool's max M (expected at most N more)".
  Result<int> WithinMax(const model::Pool& pool, int current, int delta) const;

  const model::Pool* FindPool(std::string_view name) const;
  Result<const model::Pool*> RequirePool(std::string_view name) const;
  PoolState& State(const std::string& pool) { return state_[pool]; }
  void AddPool(model::Pool pool);
  const std::vector<model::Pool>& pools() const { return pools_; }

  void Track(const std::string& pool, Operation op, std::string kind);
  void NoteStockout(const std::string& pool, std::string reason, Time now);
  // The stockout reason while held, else nullopt.
  std::optional<std::string> Stockout(const std::string& pool, Time now);
  // kUnavailable "pool X: no capacity: <reason>" when stocked out.
  Result<void> CheckNotStockedOut(const std::string& pool, Time now);
  // An ARM failure of a write: notes a stockout when the code says so, returns the error.
  Error WriteFailed(const std::string& pool, const ArmResponse& r, Time now);

  // The HTTP client shared with ARM and the token sources.
  net::HttpClient& http() const { return *deps_->http; }
  // A token source like the ARM one (same provider.auth) but for the Azure Storage audience,
  // created on the first call. Its tokens never go to ARM, nor ARM's to storage.
  Result<TokenSource*> StorageTokens();

  AzureSettings settings_;
  const Clock* clock_;
  NodeJoined node_joined_;
  ArmClient* arm_;

 private:
  void PollOperations(const std::string& pool, Time now);
  // Logs a finished operation; a failure with a capacity code marks a stockout.
  void OperationDone(const std::string& pool, const Operation& op, const OperationResult& r,
                     Time now);

  std::vector<model::Pool> pools_;
  std::map<std::string, PoolState> state_;
  std::unique_ptr<Deps> deps_;
};

// Builds the provider of config.provider.type ("azure-vmss", "aks" or "azure-vms") from
// config.provider settings (settings.h; errors name the key, e.g. "provider.subscriptionId:
// required for azure-vmss") and config.pools. Nothing is sent to Azure until the first call.
Result<std::unique_ptr<AzureProvider>> NewAzureProvider(const model::AutoscalerConfig& config,
                                                        Options options);

// The same, as the controller's CloudProvider.
Result<std::unique_ptr<CloudProvider>> MakeAzureProvider(const model::AutoscalerConfig& config,
                                                         Options options);

}  // namespace tidepool::cloud::azure
