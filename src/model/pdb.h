// PodDisruptionBudget (policy/v1): which pods it covers and how many may be disrupted.
// The planner counts every eviction it plans against these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/meta.h"
#include "model/selector.h"

namespace tidepool::model {

// intstr.IntOrString as used by minAvailable/maxUnavailable: an integer or "N%".
struct IntOrPercent {
  int32_t value = 0;
  bool percent = false;
  friend bool operator==(const IntOrPercent&, const IntOrPercent&) = default;

  // Resolves against a total as Kubernetes' GetScaledValueFromIntOrPercent does: percentages
  // round up when round_up is set (minAvailable uses round up, maxUnavailable as well).
  int32_t Resolve(int32_t total, bool round_up) const;
};

struct PodDisruptionBudget {
  ObjectMeta meta;
  // A PDB whose selector is absent selects nothing; an empty selector selects every pod in the
  // namespace (policy/v1 semantics).
  std::optional<LabelSelector> selector;
  std::optional<IntOrPercent> min_available;
  std::optional<IntOrPercent> max_unavailable;

  // status, when present (the controller-computed view)
  std::optional<int32_t> disruptions_allowed;
  std::optional<int32_t> current_healthy;
  std::optional<int32_t> desired_healthy;
  std::optional<int32_t> expected_pods;

  bool Selects(const ObjectMeta& pod) const;
  friend bool operator==(const PodDisruptionBudget&, const PodDisruptionBudget&) = default;
};

}  // namespace tidepool::model
