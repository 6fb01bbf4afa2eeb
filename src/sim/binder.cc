#include "sim/binder.h"

#include <algorithm>
#include <set>

#include "base/check.h"
#include "base/name_map.h"
#include "sched/fit.h"
#include "sched/snapshot.h"
#include "sim/units.h"

namespace tidepool::sim {
namespace {

// One binding pass over the cluster model (the joined nodes and their pods), whose snapshot each
// bind updates: a started pod is set in the model like any other change.
class Pass {
 public:
  Pass(ScoringPolicy policy, SimCloud& cloud, Workload& workload, sched::ClusterModel& model)
      : most_(policy == ScoringPolicy::kMostAllocated),
        workload_(workload),
        model_(model),
        snap_(model.snapshot()),
        by_name_(model.NodesByName()) {
    // The instance behind each snapshot slot; nodes are tried in name order, as the joined
    // nodes are listed, so that ties go to the same node whatever the slots' order.
    instance_.assign(snap_.NodeSlots(), -1);
    // Both in name order, each name once: one walk, one comparison per step.
    const auto& joined = cloud.joined();
    auto it = joined.begin();
    for (sched::NodeIndex i : by_name_) {
      TIDEPOOL_CHECK(SeekName(it, joined.end(), snap_.Get(i).node->name()));
      instance_[i] = it->second;
      ++it;
    }
  }

  // Binds the pending pods of one job, [k, end) of `pending`.
  void BindJob(const std::vector<int>& pending, size_t k, size_t end) {
    const SimJob& job = workload_.job(workload_.pod(pending[k]).job);
    if (failed_shapes_.contains(job.shape)) return;
    if (job.spec->gang) {
      BindGang(pending, k, end);
    } else {
      BindEach(pending, k, end);
    }
  }

 private:
  // The best-scoring node the pod fits, or kNoNode.
  sched::NodeIndex BestNode(const model::Pod& pod) const {
    sched::FitChecker checker(pod, snap_);
    sched::NodeIndex best = sched::kNoNode;
    double best_score = -1;
    for (sched::NodeIndex i : by_name_) {
      const sched::NodeInfo& info = snap_.Get(i);
      if (!checker.Fits(i)) continue;
      double score = Score(info, pod);
      if (score > best_score) {
        best_score = score;
        best = i;
      }
    }
    return best;
  }

  double Score(const sched::NodeInfo& info, const model::Pod& pod) const {
    double sum = 0;
    int n = 0;
    for (model::ResourceId r : {model::kCpu, model::kMemory, GpuId(), GpuMilliId()}) {
      int64_t alloc = info.allocatable.Get(r);
      if (alloc <= 0) continue;
      double used = static_cast<double>(info.requested.Get(r) + pod.requests.Get(r)) / alloc;
      sum += most_ ? used : 1 - used;
      ++n;
    }
    return n == 0 ? 0 : sum / n;
  }

  // Starts the pod on the node; the model places it there.
  void Start(int pod, sched::NodeIndex i) {
    workload_.StartPod(pod, instance_[i], snap_.Get(i).node->name());
  }

  void BindGang(const std::vector<int>& pending, size_t k, size_t end) {
    const int j = workload_.pod(pending[k]).job;
    std::vector<std::pair<int, sched::NodeIndex>> placed;
    {
      // Each member where the ones before it were placed; taken back, then started for real.
      sched::ClusterModel::Layer layer(model_);
      for (size_t x = k; x < end; ++x) {
        const model::Pod& pod = *workload_.pod(pending[x]).pod;
        sched::NodeIndex i = BestNode(pod);
        if (i == sched::kNoNode) {
          failed_shapes_.insert(workload_.job(j).shape);
          return;
        }
        TIDEPOOL_CHECK(snap_.AddPod(&pod, i).has_value());
        placed.emplace_back(pending[x], i);
      }
    }
    for (auto [pod, i] : placed) Start(pod, i);
    const SimJob& job = workload_.job(j);
    if (job.started_once == job.spec->replicas) workload_.StartGang(j);
  }

  void BindEach(const std::vector<int>& pending, size_t k, size_t end) {
    for (size_t x = k; x < end; ++x) {
      const model::Pod& pod = *workload_.pod(pending[x]).pod;
      sched::NodeIndex i = BestNode(pod);
      if (i == sched::kNoNode) {
        failed_shapes_.insert(workload_.job(workload_.pod(pending[x]).job).shape);
        return;
      }
      Start(pending[x], i);
    }
  }

  const bool most_;
  Workload& workload_;
  sched::ClusterModel& model_;
  sched::ClusterSnapshot& snap_;
  const std::vector<sched::NodeIndex> by_name_;  // live slots in name order
  std::vector<int> instance_;                    // per slot
  std::set<std::string> failed_shapes_;
};

}  // namespace

void Binder::Bind() {
  std::vector<int> pending;
  for (int pod : workload_.active())
    if (workload_.pod(pod).state == PodState::kPending) pending.push_back(pod);
  if (pending.empty() || cloud_.joined().empty()) return;
  Pass pass(policy_, cloud_, workload_, model_);
  for (size_t k = 0; k < pending.size();) {
    int j = workload_.pod(pending[k]).job;
    size_t end = k;
    while (end < pending.size() && workload_.pod(pending[end]).job == j) ++end;
    pass.BindJob(pending, k, end);
    k = end;
  }
  // A gang is one job: a restarted gang whose members all run again starts its clock.
  for (int p : pending) {
    const int j = workload_.pod(p).job;
    const SimJob& job = workload_.job(j);
    if (!job.spec->gang || job.gang_running) continue;
    bool all = std::all_of(job.pods.begin(), job.pods.end(),
                           [&](int m) { return workload_.pod(m).state == PodState::kRunning; });
    if (all) workload_.StartGang(j);
  }
}

}  // namespace tidepool::sim
