// The loop's side of the ProvisioningRequest API (docs/kueue.md): conditions from what the planner
// finds, booked capacity held for the pods that consume it, atomic requests planned as gangs.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autoscaler/options.h"
#include "autoscaler/pool_tracker.h"
#include "autoscaler/provisioning.h"
#include "autoscaler/step_context.h"
#include "autoscaler/timers.h"
#include "model/pool.h"
#include "planner/cluster.h"

namespace tidepool::autoscaler {

// Serves requests of the classes check-capacity and best-effort-atomic-scale-up; requests of any
// other class are left alone (another autoscaler may serve them). All state that matters lives
// in the requests' conditions, so a restarted loop carries on where the last one stopped; the
// tracker only remembers what it wrote and has not observed yet, so it writes it once.
class ProvisioningTracker {
 public:
  ProvisioningTracker(const model::AutoscalerConfig& config, const LoopOptions& options,
                      PoolTracker& pools)
      : config_(config), options_(options), pools_(pools) {}

  // First in a Step, after the pools' failures are handled: an atomic request whose scale-up
  // failed in one of its pools (a refused increase, a stockout, nodes that did not register) is
  // rolled back: every pool it grew gives back its share of the nodes not registered yet
  // (DecreaseTarget), and the request is Failed with the pool and why. Kueue retries it whole
  // with a new request; nothing of it is retried as a partial.
  void RollBack(StepContext& ctx);

  // Before the scale-up is planned; `in` is the scale-up's planner input (nodes, upcoming nodes,
  // backoffs). Decides what needs no scale-up: Accepted; check-capacity's answer (room on
  // existing and upcoming nodes); Provisioned for an atomic request whose capacity has
  // registered; BookingExpired; Failed for a request whose PodTemplate is missing or malformed.
  // Changes ctx.base.pods: booked capacity is held by placeholder pods bound to the nodes that
  // have the room, atomic requests still waiting become pending gangs, and pending pods that
  // consume a served request are left out (they must not trigger a second scale-up).
  void Prepare(StepContext& ctx, const planner::PlannerInput& in);
  // After the scale-up: what the plan (ctx.plan, when one was made) did for the atomic requests
  // still waiting (a scale-up, or why none can serve them); then the condition writes and Events.
  void Conclude(StepContext& ctx);

  void AddTimers(Timers& t) const;
  void AddDigest(Digest& d) const;

 private:
  // A request in this Step and the pods it stands for (minus those consumed, when booked).
  struct Served {
    const model::ProvisioningRequest* request = nullptr;
    std::vector<model::Pod> pods;
  };
  // An atomic request waiting as a pending gang in this Step, by its pods' keys.
  struct Waiting {
    const model::ProvisioningRequest* request = nullptr;
    std::set<std::string, std::less<>> keys;
  };
  // Conditions and Events decided for one request in this Step.
  struct Write {
    const model::ProvisioningRequest* request = nullptr;
    std::vector<model::Condition> conditions;
    std::vector<Event> events;
  };

  // One Prepare's lookups, and the pending consuming pods to leave out of the scale-up.
  struct Index {
    PodTemplates templates;
    Consumers consumers;
    std::set<const model::Pod*> hidden;
  };
  // The pools an atomic request's scale-up grew (its share of each IncreasePool) and when.
  struct Grown {
    Time at{};
    std::map<std::string, int, std::less<>> pools;
  };

  // Sorts one request into `booked`, `check` or `atomic`, or decides it outright.
  void Classify(StepContext& ctx, const model::ProvisioningRequest& r, Index& index,
                std::vector<Served>& booked, std::vector<Served>& check,
                std::vector<Served>& atomic);
  // Fails a request with a malformed ValidUntilSeconds, or one that is waiting past its retry
  // window (RetryWindow); true when it did.
  bool Expired(const StepContext& ctx, const model::ProvisioningRequest& r);
  void TemplateProblem(const StepContext& ctx, const model::ProvisioningRequest& r,
                       const Error& error);
  // Booked requests keep the room they have on existing and upcoming nodes, first.
  void HoldBooked(StepContext& ctx, const planner::PlannerInput& in, std::vector<Served>& booked);
  // Check-capacity requests on existing and upcoming nodes, after the booked room and beside the
  // atomic requests waiting.
  void CheckCapacity(StepContext& ctx, const planner::PlannerInput& in, std::vector<Served>& check,
                     const std::vector<Served>& atomic);
  // Atomic requests on registered nodes; those that do not fit wait as pending gangs.
  void CheckRegistered(StepContext& ctx, const planner::PlannerInput& in,
                       std::vector<Served>& atomic);
  // The plan's verdict on an atomic request's gang that no pool can take whole.
  void Unserved(const Waiting& w, const planner::Unschedulable& u);
  // Remembers what the plan grew for a waiting request; the words for its condition.
  std::vector<std::string> RecordGrowth(const StepContext& ctx, const Waiting& w);
  // Rolls back one request's scale-up after `pool` failed.
  void RollBackOne(StepContext& ctx, const model::ProvisioningRequest& r, const Grown& g,
                   const std::string& pool, const PoolFailure& failure);
  // Failed=True written for `r` and not observed yet: it is done with.
  bool FailedUnobserved(const model::ProvisioningRequest& r) const;
  // A planner input that may place pods on what is there but add no node; `pods` are the bound
  // pods of ctx.base.pods, the booked room held on upcoming nodes, and `extra`.
  planner::PlannerInput NoGrowth(const StepContext& ctx, const planner::PlannerInput& in,
                                 const std::vector<Served>& extra) const;
  // Holds the room the plan found for s's pods: bound to registered nodes, pending otherwise.
  void Hold(StepContext& ctx, Served& s, const planner::ScaleUpPlan& plan);
  void Want(const model::ProvisioningRequest& r, model::Condition c,
            std::optional<Event> event = std::nullopt);
  void Flush(StepContext& ctx);
  void Deadline(Time t) { deadline_ = deadline_ ? std::min(*deadline_, t) : t; }

  const model::AutoscalerConfig& config_;
  const LoopOptions& options_;
  PoolTracker& pools_;
  // Atomic requests whose scale-up is on its way, by key, until they are Provisioned, rolled back
  // or gone. Not kept across a restart: then a failed pool leaves the request waiting (its
  // backoff, then a new plan) within its retry window.
  std::map<std::string, Grown, std::less<>> grown_;
  // Per request key: the conditions written and not observed yet.
  std::map<std::string, std::vector<model::Condition>, std::less<>> sent_;
  // This Step: the atomic requests waiting as pending gangs, the writes, the next deadline.
  std::vector<Waiting> waiting_;
  std::map<std::string, Write, std::less<>> writes_;
  std::optional<Time> deadline_;
};

}  // namespace tidepool::autoscaler
