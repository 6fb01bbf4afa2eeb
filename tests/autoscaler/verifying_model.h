// A driver's cluster model of what an observation holds, in its debug mode: every scale-up and
// scale-down pass that forks it is also planned on a snapshot built from the loop's input, and
// the test stops, printing both plans, on any difference (sched::ClusterModel::SetVerify).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "autoscaler/observation.h"
#include "sched/cluster_model.h"

namespace tidepool::autoscaler::testing {

// The observation must outlive the model (it borrows the objects).
inline std::unique_ptr<sched::ClusterModel> VerifyingModel(const Observation& obs) {
  auto model = std::make_unique<sched::ClusterModel>();
  model->SetVerify(true);
  for (const model::Node* n : obs.nodes) (void)model->SetNode(sched::ClusterModel::Borrow(n));
  for (const model::Pod* p : obs.pods) (void)model->SetPod(sched::ClusterModel::Borrow(p));
  return model;
}

// Brings a model kept from Step to Step to what `obs` holds, as a driver's deltas would, and
// points `obs` at the model's objects: every object is set again as a copy (a node set again keeps
// its name, as a watch's update does), and the nodes and pods no longer observed are deleted.
// `pods`: the pod keys the model holds, kept between calls.
inline void Resync(sched::ClusterModel& model, Observation& obs, std::set<std::string>& pods) {
  std::set<std::string> names;
  for (const model::Node* n : obs.nodes) {
    names.insert(n->name());
    (void)model.SetNode(std::make_shared<const model::Node>(*n));
  }
  std::vector<std::string> gone;
  for (sched::NodeIndex i : model.NodesByName()) {
    const std::string& name = model.snapshot().Get(i).node->name();
    if (!names.contains(name)) gone.push_back(name);
  }
  for (const std::string& name : gone) (void)model.DeleteNode(name);
  std::set<std::string> keys;
  for (const model::Pod* p : obs.pods) {
    keys.insert(p->Key());
    (void)model.SetPod(std::make_shared<const model::Pod>(*p));
  }
  for (const std::string& key : pods) {
    if (keys.contains(key)) continue;
    const size_t slash = key.find('/');
    (void)model.DeletePod(key.substr(0, slash), key.substr(slash + 1));
  }
  pods = std::move(keys);
  obs.nodes.clear();
  for (sched::NodeIndex i : model.NodesByName()) obs.nodes.push_back(model.snapshot().Get(i).node);
  for (const model::Pod*& p : obs.pods) p = model.FindPod(p->meta.namespace_, p->meta.name);
}

}  // namespace tidepool::autoscaler::testing
