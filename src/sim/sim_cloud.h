// The simulated cloud: a cloud::CloudProvider whose pools create instances that join after a boot
// delay, bill per second, run out of capacity in stockout windows and lose spot instances.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cloud/provider.h"
#include "model/node.h"
#include "model/pool.h"
#include "sim/event_queue.h"
#include "sim/sim_config.h"
#include "sim/units.h"
#include "sim/workload.h"

namespace tidepool::sim {

// Why a pool reports no capacity inside one of its stockout windows.
inline constexpr std::string_view kStockoutReason = "simulated stockout window";

struct SimInstance {
  std::string name;
  int pool = 0;
  Time requested{};
  std::optional<Time> end;  // deleted / cancelled / reclaimed
  bool joined = false;
  std::shared_ptr<model::Node> node;  // once joined
  // Stopped (scaleDown.mode deallocate): since when, and for how long in earlier stops.
  std::optional<Time> stopped_since;
  Duration stopped_for{};
  bool alive() const { return !end.has_value(); }
  // Hours stopped by `t` (billed at the pool's stopped price).
  double StoppedHours(Time t) const {
    Duration d = stopped_for;
    if (stopped_since) d += end.value_or(t) - *stopped_since;
    return Hours(d);
  }
  // Hours billed at the pool's price by `t`: from the request to the end, or to `t` while alive,
  // less the hours stopped.
  double BilledHours(Time t) const { return Hours(end.value_or(t) - requested) - StoppedHours(t); }
};

struct SimPool {
  const model::Pool* pool = nullptr;
  const PoolSimConfig* sim = nullptr;
  DurationRange boot;
  DurationRange restart;  // a stopped instance's start to joined
  double stopped_price_per_hour = 0;
  int target = 0;
  int waiting = 0;           // target raised during a stockout: no instance yet
  std::vector<int> nodes;    // alive instances, not stopped
  std::vector<int> stopped;  // stopped instances, oldest stop first
  int next_id = 0;
  int64_t gpus = 0;
};

// Pools are the config's, in its order. Instances are never forgotten (the ledger bills them);
// a Node object of an ended instance lives until the next observation is built (ReleaseEnded),
// as the live API server's objects outlive a read. Time is the simulator's clock.
// Pools with scaleDown.mode deallocate: StopNode ends the node (its pods evicted) but keeps the
// instance, billed at the stopped price; growing restarts stopped instances (the most recently
// stopped first, after the pool's restart delay) before creating new ones, also when a
// stockout ends; DeleteStopped ends the longest-stopped ones.
class SimCloud final : public cloud::CloudProvider, public cloud::MachineStopper {
 public:
  SimCloud(const SimInput& in, const model::AutoscalerConfig& config, const Clock& clock,
           EventQueue& queue, WorldChanges& changes, Workload& workload);

  // The pools at their minimum size, ready at the start, and their stockout windows' ends.
  void Start();

  // cloud::CloudProvider.
  std::string_view Name() const override { return "simulated"; }
  Result<std::vector<cloud::PoolSize>> Refresh(Time now) override;
  Result<void> IncreaseSize(const std::string& pool, int delta, Time now) override;
  Result<void> DecreaseTargetSize(const std::string& pool, int delta, Time now) override;
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time now) override;
  std::string PoolOf(const model::Node&) const override { return ""; }  // nodes carry the label
  Result<void> StopNode(const std::string& pool, const model::Node& node, Time now) override;
  Result<void> DeleteStopped(const std::string& pool, int count, Time now) override;

  // Event handlers.
  void OnBoot(int instance);
  void OnSpotNotice(int instance);
  void OnSpotKill(int instance);
  void OnStockoutEnd(int pool);

  bool InStockout(const SimPool& p, Time t) const;
  // The joined, alive instance of that name, or nullptr.
  SimInstance* Joined(const std::string& name);
  const std::map<std::string, int, std::less<>>& joined() const { return joined_; }
  const std::vector<SimPool>& pools() const { return pools_; }
  const std::vector<SimInstance>& instances() const { return instances_; }
  const SimInstance& instance(int i) const { return instances_[i]; }
  // Drops the Node objects of instances ended since the last call.
  void ReleaseEnded() { ended_.clear(); }

  int64_t scale_ups() const { return scale_ups_; }
  int64_t scale_downs() const { return scale_downs_; }
  const std::map<std::string, int>& peak_nodes() const { return peak_nodes_; }
  // The first impossible request the loop made (a pool asked to grow above its max), or "".
  const std::string& violation() const { return violation_; }

 private:
  int CreateInstance(int pool, bool ready_now);
  // Brings `count` instances to the pool: restarts stopped ones first (deallocate pools), then
  // creates.
  void Grow(int pool, int count);
  void JoinNode(int instance);
  void EndInstance(int instance);

  const SimInput& in_;
  const model::AutoscalerConfig& config_;
  const Clock& clock_;
  EventQueue& queue_;
  WorldChanges& changes_;
  Workload& workload_;
  std::mt19937_64 rng_;
  std::vector<SimPool> pools_;
  std::map<std::string, int, std::less<>> pool_index_;
  std::vector<SimInstance> instances_;
  std::map<std::string, int, std::less<>> joined_;  // alive joined instances by name
  std::vector<std::shared_ptr<model::Node>> ended_;
  int64_t scale_ups_ = 0;
  int64_t scale_downs_ = 0;
  std::map<std::string, int> peak_nodes_;
  std::string violation_;
};

}  // namespace tidepool::sim
