// FitResult's words: kube-scheduler's reason for each failing filter, made only on failure.
#include <string>
#include <string_view>

#include "sched/fit_detail.h"

namespace tidepool::sched {
namespace fit_detail {
namespace {

constexpr std::string_view kReasonUnschedulable = "node(s) were unschedulable";
constexpr std::string_view kReasonNodeName = "node(s) didn't match the requested node name";
constexpr std::string_view kReasonNodeAffinity =
    "node(s) didn't match Pod's node affinity/selector";
constexpr std::string_view kReasonNodePorts =
    "node(s) didn't have free ports for the requested pod ports";
constexpr std::string_view kReasonTooManyPods = "Too many pods";
constexpr std::string_view kReasonSpread = "node(s) didn't match pod topology spread constraints";
constexpr std::string_view kReasonSpreadMissingLabel =
    "node(s) didn't match pod topology spread constraints (missing required label)";
constexpr std::string_view kReasonAffinity = "node(s) didn't match pod affinity rules";
constexpr std::string_view kReasonAntiAffinity = "node(s) didn't match pod anti-affinity rules";
constexpr std::string_view kReasonExistingAntiAffinity =
    "node(s) didn't satisfy existing pods anti-affinity rules";

}  // namespace

FitResult MakeFailure(const Verdict& v) {
  FitResult r;
  r.code = v.code;
  switch (v.code) {
    case FitCode::kFits:
      break;
    case FitCode::kNodeUnschedulable:
      r.reason = kReasonUnschedulable;
      break;
    case FitCode::kNodeName:
      r.reason = kReasonNodeName;
      break;
    case FitCode::kTaintToleration: {
      constexpr std::string_view kPrefix = "node(s) had untolerated taint ";
      std::string taint = v.taint->ToString();
      r.reason.reserve(kPrefix.size() + taint.size());
      r.reason = kPrefix;
      r.reason += taint;
      break;
    }
    case FitCode::kNodeAffinity:
      r.reason = kReasonNodeAffinity;
      break;
    case FitCode::kNodePorts:
      r.reason = kReasonNodePorts;
      break;
    case FitCode::kNodeResources:
      r.resource = v.resource;
      if (v.resource == model::kPods) {
        r.reason = kReasonTooManyPods;
      } else {
        constexpr std::string_view kPrefix = "Insufficient ";
        std::string_view name = model::ResourceName(v.resource);
        r.reason.reserve(kPrefix.size() + name.size());
        r.reason = kPrefix;
        r.reason += name;
      }
      break;
    case FitCode::kTopologySpreadMissingLabel:
      r.reason = kReasonSpreadMissingLabel;
      break;
    case FitCode::kTopologySpread:
      r.reason = kReasonSpread;
      break;
    case FitCode::kPodAffinity:
      r.reason = kReasonAffinity;
      r.pod_affinity_unresolvable = v.affinity_unresolvable;
      break;
    case FitCode::kPodAntiAffinity:
      r.reason = kReasonAntiAffinity;
      break;
    case FitCode::kExistingAntiAffinity:
      r.reason = kReasonExistingAntiAffinity;
      break;
    case FitCode::kDynamicResources:
      r.reason = "cannot allocate all claims";  // FitChecker adds the details
      break;
  }
  return r;
}

}  // namespace fit_detail

bool FitResult::unresolvable() const {
  switch (code) {
    case FitCode::kNodeUnschedulable:
    case FitCode::kNodeName:
    case FitCode::kTaintToleration:
    case FitCode::kNodeAffinity:
    case FitCode::kTopologySpreadMissingLabel:
      return true;
    case FitCode::kPodAffinity:
      return pod_affinity_unresolvable;
    case FitCode::kDynamicResources:
      return claims_unresolvable;
    case FitCode::kFits:
    case FitCode::kNodePorts:
    case FitCode::kNodeResources:
    case FitCode::kTopologySpread:
    case FitCode::kPodAntiAffinity:
    case FitCode::kExistingAntiAffinity:
      return false;
  }
  return false;
}

}  // namespace tidepool::sched
