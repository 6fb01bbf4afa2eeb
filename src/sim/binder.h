// The simulated kube-scheduler: binds pending pods to joined nodes with the real filters
// (sched/) and a least- or most-allocated score; a gang binds whole or not at all.
#pragma once

#include "sched/cluster_model.h"
#include "sim/sim_cloud.h"
#include "sim/sim_config.h"
#include "sim/workload.h"

namespace tidepool::sim {

class Binder {
 public:
  Binder(ScoringPolicy policy, SimCloud& cloud, Workload& workload, sched::ClusterModel& model)
      : policy_(policy), cloud_(cloud), workload_(workload), model_(model) {}

  // Binds what fits, in job order (the order pods were submitted). A job shape that failed to
  // fit is not tried again in the same pass.
  void Bind();

 private:
  ScoringPolicy policy_;
  SimCloud& cloud_;
  Workload& workload_;
  sched::ClusterModel& model_;  // the joined nodes and their pods
};

}  // namespace tidepool::sim
