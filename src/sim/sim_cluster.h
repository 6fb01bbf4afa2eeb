// The simulated cluster as the decision loop sees and writes it: the Observation built from the
// simulated cloud and workload, and the actuator's writes (taints, evictions, Events) on them.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "actuator/cluster_writer.h"
#include "autoscaler/observation.h"
#include "sim/event_queue.h"
#include "sim/kueue_queue.h"
#include "sim/sim_cloud.h"
#include "sim/workload.h"

namespace tidepool::sim {

class SimCluster final : public actuator::ClusterWriter {
 public:
  SimCluster(const Clock& clock, WorldChanges& changes, SimCloud& cloud, Workload& workload,
             KueueQueue& kueue)
      : clock_(clock), changes_(changes), cloud_(cloud), workload_(workload), kueue_(kueue) {}

  // The loop's view now. Rebuilt only when something it shows changed (WorldChanges::version);
  // valid until the next call.
  const autoscaler::Observation& Observe();

  // actuator::ClusterWriter. A NoSchedule taint makes no room; any other taint change may
  // change where pending pods go, so the binder runs again.
  Result<void> AddTaint(const std::string& node, const model::Taint& taint) override;
  Result<void> RemoveTaint(const std::string& node, const std::string& key) override;
  Result<void> Evict(const std::string& ns, const std::string& name) override;
  Result<void> DeleteNode(const std::string& name, const std::string& uid) override;
  Result<void> RecordEvent(const actuator::EventSpec& event) override;
  Result<std::vector<std::string>> PodsOnNode(const std::string& node) override;
  // The requests of gang jobs Kueue's stand-in holds (SimConfig::queue_gangs).
  Result<void> SetProvisioningConditions(const std::string& ns, const std::string& name,
                                         const std::vector<model::Condition>& c) override {
    kueue_.SetConditions(ns, name, c);
    return {};
  }
  // The simulated world has no CapacityBuffers.
  Result<void> SetCapacityBufferStatus(const std::string&, const std::string&,
                                       const model::BufferStatus&) override {
    return {};
  }

  int64_t events() const { return events_; }

 private:
  const Clock& clock_;
  WorldChanges& changes_;
  SimCloud& cloud_;
  Workload& workload_;
  KueueQueue& kueue_;
  autoscaler::Observation obs_;
  uint64_t obs_version_ = 0;
  // target, registered, stockout, stopped per pool
  std::vector<std::tuple<int, int, bool, int>> obs_pools_;
  int64_t events_ = 0;  // Kubernetes Events the loop emitted (counted, not kept)
};

}  // namespace tidepool::sim
