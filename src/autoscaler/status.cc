#include "autoscaler/status.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "autoscaler/buffers.h"

namespace tidepool::autoscaler {

std::string FormatWarm(const PoolStatus& p) {
  std::vector<std::string> parts;
  if (p.warm_spare_nodes > 0) parts.push_back(fmt::format("spareNodes {}", p.warm_spare_nodes));
  if (p.warm_stopped_nodes > 0) {
    parts.push_back(fmt::format("stoppedNodes {}", p.warm_stopped_nodes));
  }
  if (!p.warm_headroom.empty()) parts.push_back(fmt::format("headroom {}", p.warm_headroom));
  if (p.warm_predictive) {
    std::string predicted =
        p.warm_predicted_at
            ? fmt::format("predicted {:.1f} at {} (confidence {:.2f})", p.warm_predicted,
                          FormatRfc3339(*p.warm_predicted_at), p.warm_confidence)
            : std::string("nothing predicted");
    parts.push_back(fmt::format("demand {:.1f}, {}, pre-warmed {}, spend ${:.2f}/${:.2f} per 24h",
                                p.warm_demand, predicted, p.warm_prewarm_nodes, p.warm_spend_24h,
                                p.warm_max_cost_per_day));
  }
  std::string out = fmt::format("{}", fmt::join(parts, "; "));
  if (!p.warm_reason.empty()) out += fmt::format(" — {}", p.warm_reason);
  return out;
}

std::string FormatBuffer(const BufferStatusLine& b) {
  std::string out = ShownBuffer(b.buffer) + ": ";
  out += b.replicas ? fmt::format("{} pod(s) of {}", *b.replicas, b.source)
                    : std::string("not resolved");
  out += "; ReadyForProvisioning " + b.ready;
  if (!b.provisioning.empty()) out += "; Provisioning " + b.provisioning;
  return out;
}

KeptNodes NoKeptNodes() {
  static const KeptNodes none = std::make_shared<const std::vector<planner::Keep>>();
  return none;
}

UnschedulablePods NoUnschedulablePods() {
  static const UnschedulablePods none =
      std::make_shared<const std::vector<planner::Unschedulable>>();
  return none;
}

std::string FormatStatus(const Status& s) {
  std::string out;
  out += fmt::format("last step: {}\n", s.last_step ? FormatRfc3339(*s.last_step) : "never");
  out += fmt::format("pending pods: {}{}\n", s.pending_pods,
                     s.batch_open_since ? fmt::format(" (scale-up batch open since {})",
                                                      FormatRfc3339(*s.batch_open_since))
                                        : "");
  if (s.gated_pods > 0)
    out += fmt::format("held by scheduling gates: {} (no scale-up until the gates are removed)\n",
                       s.gated_pods);
  out += "pools:\n";
  for (const PoolStatus& p : s.pools) {
    out += fmt::format("  {}: min {} max {} target {} registered {} ready {} upcoming {}", p.name,
                       p.min, p.max, p.target, p.registered, p.ready, p.upcoming);
    if (p.stockout) out += " stockout";
    if (p.backoff_until) {
      out +=
          fmt::format(" backoff until {} ({})", FormatRfc3339(*p.backoff_until), p.backoff_reason);
    }
    out += "\n";
    if (p.deallocate) {
      out += fmt::format("    stopped: {} of maxStopped {}{}\n", p.stopped, p.max_stopped,
                         p.stopped_reason.empty() ? "" : "; last: " + p.stopped_reason);
    }
    if (p.warm) out += "    warm: " + FormatWarm(p) + "\n";
  }
  if (s.last_scale_up) {
    const ScaleUpRecord& u = *s.last_scale_up;
    out += fmt::format("last scale-up: {} pool {} {}->{} for {} pod(s): {}\n",
                       FormatRfc3339(u.time), u.pool, u.from, u.to, u.pods.size(), u.reason);
  }
  if (s.last_scale_down) {
    const ScaleDownRecord& d = *s.last_scale_down;
    out += fmt::format("last scale-down: {} node {} (pool {}) {}: {}\n", FormatRfc3339(d.time),
                       d.node, d.pool, d.outcome, d.reason);
  }
  for (const RemovalStatus& r : s.removals) {
    out += fmt::format("removing: {} (pool {}) {} since {}, {} pod(s) left\n", r.node, r.pool,
                       r.phase, FormatRfc3339(r.started), r.pods_left);
  }
  for (const UnneededNode& u : s.unneeded) {
    out += fmt::format("unneeded: {} since {}", u.node, FormatRfc3339(u.since));
    if (u.waiting) {
      out += fmt::format(", waits for the checkpoint of pod {} at {}", u.waiting->pod,
                         FormatRfc3339(u.waiting->at));
    }
    out += "\n";
  }
  for (const BufferStatusLine& b : s.buffers) out += "capacity " + FormatBuffer(b) + "\n";
  return out;
}

}  // namespace tidepool::autoscaler
