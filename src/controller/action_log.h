// What the controller does with each carried-out action's outcome: a log line for failures and
// the counters of tidepool_metrics (scale-ups, evictions, scale-downs and their failures).
#pragma once

#include "actuator/actuator.h"
#include "ops/tidepool_metrics.h"

namespace tidepool::controller {

class ActionLog : public actuator::Listener {
 public:
  explicit ActionLog(ops::TidepoolMetrics* metrics) : metrics_(metrics) {}

  void Carried(const autoscaler::Action& action, const std::string* pod,
               const Result<void>& result) override;
  void SideFailure(const Error& error) override;

 private:
  ops::TidepoolMetrics* metrics_;  // borrowed; null: no metrics
};

}  // namespace tidepool::controller
