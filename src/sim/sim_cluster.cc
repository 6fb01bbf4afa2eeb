#include "sim/sim_cluster.h"

namespace tidepool::sim {

const autoscaler::Observation& SimCluster::Observe() {
  // Stockout windows open without an event: compare what the provider would report.
  const std::vector<SimPool>& pools = cloud_.pools();
  bool pools_changed = obs_pools_.size() != pools.size();
  obs_pools_.resize(pools.size());
  for (size_t i = 0; i < pools.size(); ++i) {
    const SimPool& p = pools[i];
    std::tuple<int, int, bool, int> now{p.target, static_cast<int>(p.nodes.size()),
                                        cloud_.InStockout(p, clock_.Now()),
                                        static_cast<int>(p.stopped.size())};
    if (obs_pools_[i] != now) {
      obs_pools_[i] = now;
      pools_changed = true;
    }
  }
  if (pools_changed) changes_.Changed();
  if (obs_version_ == changes_.version) return obs_;
  obs_version_ = changes_.version;
  cloud_.ReleaseEnded();  // the last view, which may point to them, is replaced here
  autoscaler::Observation& obs = obs_;
  obs.version = changes_.version;
  obs.model = &changes_.cluster;
  obs.nodes.clear();
  obs.nodes.reserve(cloud_.joined().size());
  for (const auto& [name, idx] : cloud_.joined()) {
    obs.nodes.push_back(cloud_.instance(idx).node.get());
  }
  obs.pods.clear();
  obs.pods.reserve(workload_.active().size());
  for (int pod : workload_.active()) obs.pods.push_back(workload_.pod(pod).pod.get());
  kueue_.AddTo(obs);
  obs.pools.clear();
  for (size_t i = 0; i < pools.size(); ++i) {
    autoscaler::PoolObservation po;
    po.pool = pools[i].pool->name;
    std::tie(po.target, po.registered, po.stockout, po.stopped) = obs_pools_[i];
    if (po.stockout) po.stockout_reason = std::string(kStockoutReason);
    obs.pools.push_back(std::move(po));
  }
  return obs;
}

Result<void> SimCluster::AddTaint(const std::string& node, const model::Taint& taint) {
  SimInstance* n = cloud_.Joined(node);
  if (n == nullptr) return Fail(Error::Code::kNotFound, "node {} not found", node);
  std::erase_if(n->node->taints, [&](const model::Taint& x) { return x.key == taint.key; });
  changes_.Changed();
  n->node->taints.push_back(taint);
  changes_.SetNode(n->node);
  if (taint.effect != model::TaintEffect::kNoSchedule) changes_.bind_dirty = true;
  return {};
}

Result<void> SimCluster::RemoveTaint(const std::string& node, const std::string& key) {
  SimInstance* n = cloud_.Joined(node);
  if (n == nullptr) return Fail(Error::Code::kNotFound, "node {} not found", node);
  std::erase_if(n->node->taints, [&](const model::Taint& x) { return x.key == key; });
  changes_.SetNode(n->node);
  changes_.Changed();
  changes_.bind_dirty = true;
  return {};
}

Result<void> SimCluster::Evict(const std::string& ns, const std::string& name) {
  return workload_.Evict(ns.empty() ? name : ns + "/" + name);
}

Result<void> SimCluster::DeleteNode(const std::string&, const std::string&) {
  return {};  // the simulated cloud removed the instance and its Node together
}

Result<void> SimCluster::RecordEvent(const actuator::EventSpec&) {
  ++events_;
  return {};
}

Result<std::vector<std::string>> SimCluster::PodsOnNode(const std::string& node) {
  auto it = cloud_.joined().find(node);
  if (it == cloud_.joined().end()) return std::vector<std::string>{};
  return workload_.RunningOn(it->second);
}

}  // namespace tidepool::sim
