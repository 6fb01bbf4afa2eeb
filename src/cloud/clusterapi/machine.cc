#include "cloud/clusterapi/machine.h"

#include <fmt/format.h>

namespace tidepool::cloud::clusterapi {

using nlohmann::json;

namespace {

std::string Str(const json& obj, std::string_view key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& Member(const json& obj, std::string_view key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// v1beta1 keeps failureReason/failureMessage in status; v1beta2 under status.deprecated.v1beta1.
std::string Failure(const json& status) {
  const json& old = Member(Member(status, "deprecated"), "v1beta1");
  for (const json* s : {&status, &old}) {
    std::string reason = Str(*s, "failureReason");
    std::string message = Str(*s, "failureMessage");
    if (!reason.empty() || !message.empty()) {
      return fmt::format("{}: {}", reason.empty() ? "Failed" : reason, message);
    }
  }
  if (Str(status, "phase") == "Failed") return "Failed: the Machine's phase is Failed";
  return {};
}

}  // namespace

Result<Machine> ParseMachine(const json& obj) {
  const json& meta = Member(obj, "metadata");
  Machine m;
  m.namespace_ = Str(meta, "namespace");
  m.name = Str(meta, "name");
  if (m.name.empty()) return InvalidArgument("a Machine without metadata.name");
  m.uid = Str(meta, "uid");
  m.resource_version = Str(meta, "resourceVersion");
  if (std::string ts = Str(meta, "creationTimestamp"); !ts.empty()) {
    auto t = ParseRfc3339(ts);
    if (!t) {
      return InvalidArgument("Machine {}/{}: metadata.creationTimestamp: {}", m.namespace_, m.name,
                             t.error().message());
    }
    m.created = *t;
  }
  m.deleting = !Str(meta, "deletionTimestamp").empty();
  const json& annotations = Member(meta, "annotations");
  m.marked = annotations.is_object() && annotations.contains(kDeleteMachineAnnotation);
  m.marked_by_tidepool =
      annotations.is_object() && annotations.contains(kMarkedByTidepoolAnnotation);
  const json& labels = Member(meta, "labels");
  m.deployment_name = Str(labels, "cluster.x-k8s.io/deployment-name");
  m.set_name = Str(labels, "cluster.x-k8s.io/set-name");
  m.pool_name = Str(labels, "cluster.x-k8s.io/pool-name");
  m.provider_id = Str(Member(obj, "spec"), "providerID");
  const json& status = Member(obj, "status");
  m.node_name = Str(Member(status, "nodeRef"), "name");
  m.phase = Str(status, "phase");
  m.failure = Failure(status);
  return m;
}

}  // namespace tidepool::cloud::clusterapi
