// The loop's side of the CapacityBuffer API (docs/capacity-buffers.md): each buffer's copies of
// its pod planned as pending pods, so a scale-up makes their room and scale-down keeps it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "autoscaler/buffers.h"
#include "autoscaler/status.h"
#include "autoscaler/step_context.h"
#include "autoscaler/timers.h"

namespace tidepool::autoscaler {

// Serves buffers of the strategy buffer.x-k8s.io/active-capacity (others are left alone). The
// copies exist only inside the loop: they are pending pods in the planner's input (the youngest,
// so real pods of the same priority are placed first), get no pod Events, and are placed on the
// nodes that stay in the scale-down simulation, so the nodes holding a buffer's room are not
// unneeded. A deleted buffer has no copies: its room is unneeded like any other. The buffer's
// status (replicas, the ReadyForProvisioning and Provisioning conditions) is written when it
// differs from what is observed; all state that matters lives there, so a restarted loop carries
// on.
class BufferTracker {
 public:
  // Before the pending pods are observed: resolves every served buffer, adds its copies to
  // ctx.base.pods (ctx.buffer_pods, ctx.buffer_keys) and decides ReadyForProvisioning.
  void Prepare(StepContext& ctx);
  // After the scale-up: Provisioning from what the plan (ctx.plan, when one was made) did for
  // each buffer's copies; then the status writes and Events.
  void Conclude(StepContext& ctx);

  void AddDigest(Digest& d) const;
  void FillStatus(Status& s) const;

 private:
  struct Step {
    ResolvedBuffer resolved;
    std::optional<model::BufferCondition> provisioning;  // decided in this Step, if a plan ran
    std::vector<std::string> pools;                      // pools a scale-up grew for its copies
  };
  // Provisioning for one ready buffer of at least one copy from the plan; Events for what
  // changed.
  void Decide(StepContext& ctx, Step& s, const planner::ScaleUpPlan& plan);
  void Tell(StepContext& ctx, const std::string& key, EventReason reason, std::string message,
            bool warning, std::string pool = "");
  void Write(StepContext& ctx, const Step& s);

  std::vector<Step> steps_;  // this Step's buffers, in key order
  // Per buffer key: the status written and not observed yet; the last Event message told; the
  // last status decided (for the status page and explain).
  std::map<std::string, model::BufferStatus, std::less<>> sent_;
  std::map<std::string, std::string, std::less<>> told_;
  std::map<std::string, BufferStatusLine, std::less<>> shown_;
};

}  // namespace tidepool::autoscaler
