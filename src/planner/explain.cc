#include "planner/explain.h"

#include <fmt/format.h>

#include "sched/fit.h"

namespace tidepool::planner {

std::string ExplainReason(const model::Pod& pod, const model::Pool& pool,
                          const std::string& reason) {
  const model::Node& t = pool.template_node;
  if (reason.find("untolerated taint") != std::string::npos) {
    if (const model::Taint* taint = model::FindUntoleratedTaint(t.taints, pod.tolerations)) {
      return fmt::format(
          "pool {} lacks a toleration for taint {}={}:{} (the pod needs a toleration for it, "
          "or use a pool without the taint)",
          pool.name, taint->key, taint->value, model::TaintEffectName(taint->effect));
    }
  }
  if (reason.find("node affinity/selector") != std::string::npos) {
    std::string want;
    for (const auto& [k, v] : pod.node_selector) {
      const std::string* have = t.meta.Label(k);
      if (have == nullptr || *have != v) {
        want += fmt::format("{}{}={} (pool has {})", want.empty() ? "" : ", ", k, v,
                            have ? *have : std::string("no such label"));
      }
    }
    if (want.empty()) want = "its required node affinity";
    return fmt::format("pool {} does not match the pod's node selector/affinity: {}", pool.name,
                       want);
  }
  if (reason.starts_with("Insufficient ") || reason == "Too many pods") {
    return fmt::format(
        "a new node of pool {} is too small: {} (pod requests {}, node allocatable {})", pool.name,
        reason, pod.requests.ToString(), t.allocatable.ToString());
  }
  if (reason.find(" at max ") != std::string::npos) {
    return fmt::format("{} (raise pools[{}].max to allow more nodes)", reason, pool.name);
  }
  if (reason.find("in backoff until") != std::string::npos) {
    return reason +
           " (a recent scale-up of this pool failed or timed out; other pools are tried "
           "meanwhile)";
  }
  if (reason.starts_with("cluster limit maxNodes")) return reason + " (raise limits.maxNodes)";
  if (reason.starts_with("cluster limit ")) {
    std::string res = reason.substr(14, reason.find(' ', 14) - 14);
    return fmt::format("{} (raise limits.{})", reason, res);
  }
  return reason;
}

}  // namespace tidepool::planner
