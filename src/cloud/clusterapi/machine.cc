#include "cloud/clusterapi/machine.h"

#include <fmt/format.h>

#include "cloud/json_fields.h"

namespace tidepool::cloud::clusterapi {

using nlohmann::json;

namespace {

// v1beta1 keeps failureReason/failureMessage in status; v1beta2 under status.deprecated.v1beta1.
std::string Failure(const json& status) {
  const json& old = ObjectField(ObjectField(status, "deprecated"), "v1beta1");
  for (const json* s : {&status, &old}) {
    std::string reason = StringField(*s, "failureReason");
    std::string message = StringField(*s, "failureMessage");
    if (!reason.empty() || !message.empty()) {
      return fmt::format("{}: {}", reason.empty() ? "Failed" : reason, message);
    }
  }
  if (StringField(status, "phase") == "Failed") return "Failed: the Machine's phase is Failed";
  return {};
}

}  // namespace

Result<Machine> ParseMachine(const json& obj) {
  const json& meta = ObjectField(obj, "metadata");
  Machine m;
  m.namespace_ = StringField(meta, "namespace");
  m.name = StringField(meta, "name");
  if (m.name.empty()) return InvalidArgument("a Machine without metadata.name");
  m.uid = StringField(meta, "uid");
  m.resource_version = StringField(meta, "resourceVersion");
  if (std::string ts = StringField(meta, "creationTimestamp"); !ts.empty()) {
    auto t = ParseRfc3339(ts);
    if (!t) {
      return InvalidArgument("Machine {}/{}: metadata.creationTimestamp: {}", m.namespace_, m.name,
                             t.error().message());
    }
    m.created = *t;
  }
  m.deleting = !StringField(meta, "deletionTimestamp").empty();
  const json& annotations = ObjectField(meta, "annotations");
  m.marked = annotations.contains(kDeleteMachineAnnotation);
  m.marked_by_tidepool = annotations.contains(kMarkedByTidepoolAnnotation);
  const json& labels = ObjectField(meta, "labels");
  m.deployment_name = StringField(labels, "cluster.x-k8s.io/deployment-name");
  m.set_name = StringField(labels, "cluster.x-k8s.io/set-name");
  m.pool_name = StringField(labels, "cluster.x-k8s.io/pool-name");
  m.provider_id = StringField(ObjectField(obj, "spec"), "providerID");
  const json& status = ObjectField(obj, "status");
  m.node_name = StringField(ObjectField(status, "nodeRef"), "name");
  m.phase = StringField(status, "phase");
  m.failure = Failure(status);
  return m;
}

}  // namespace tidepool::cloud::clusterapi
