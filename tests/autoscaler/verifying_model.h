// A driver's cluster model of what an observation holds, in its debug mode: every scale-up and
// scale-down pass that forks it is also planned on a snapshot built from the loop's input, and
// the test stops, printing both plans, on any difference (sched::ClusterModel::SetVerify).
#pragma once

#include <memory>

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

}  // namespace tidepool::autoscaler::testing
