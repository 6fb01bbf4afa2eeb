// A write that changes nothing a decoded object holds (model::SameButVersion): a kubelet's node
// status heartbeat, a pod's condition or container status. The informers keep the object they
// handed out for such writes, so a quiet cluster stays quiet to the controller; any field a
// decoder reads must make the objects differ.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/codec/objects.h"
#include "model/meta.h"

namespace tidepool::kube {
namespace {

using Json = nlohmann::json;

Json NodeJson() {
  return Json::parse(R"({
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "aks-gpu-1", "uid": "u-1", "resourceVersion": "10",
                 "creationTimestamp": "2026-01-01T00:00:00Z",
                 "labels": {"agentpool": "gpu", "kubernetes.io/hostname": "aks-gpu-1"},
                 "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
    "spec": {"providerID": "azure:///vmss/gpu/0",
             "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]},
    "status": {
      "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"},
      "allocatable": {"cpu": "7800m", "memory": "30Gi", "pods": "110", "nvidia.com/gpu": "1"},
      "conditions": [
        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-01-01T00:05:00Z",
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:05:00Z",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}],
      "images": [{"names": ["mcr.microsoft.com/pause:3.9"], "sizeBytes": 1}]}})");
}

Json PodJson() {
  return Json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "ml", "uid": "p-1", "resourceVersion": "20",
                 "labels": {"job": "train"},
                 "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                                      "uid": "j-1", "controller": true}]},
    "spec": {"nodeName": "aks-gpu-1", "priority": 100,
             "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu",
                              "effect": "NoSchedule"}],
             "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
               {"labelSelector": {"matchLabels": {"job": "train"}},
                "topologyKey": "kubernetes.io/hostname"}]}},
             "containers": [{"name": "main", "image": "trainer",
                             "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}}]},
    "status": {"phase": "Running", "startTime": "2026-01-01T00:01:00Z",
               "conditions": [{"type": "Ready", "status": "True"}],
               "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0}]}})");
}

// Decodes `before` and `after` (a later write of the same object) and says whether the second
// holds what the first does; the second's resourceVersion must come back as it was written.
template <typename Decode>
bool Same(Decode decode, const Json& before, Json after) {
  after["metadata"]["resourceVersion"] = "99";
  auto a = decode(before);
  auto b = decode(after);
  EXPECT_TRUE(a.has_value() && b.has_value());
  if (!a || !b) return false;
  const bool same = model::SameButVersion(*a, *b);
  EXPECT_EQ(b->meta.resource_version, "99");
  return same;
}

TEST(UnchangedWriteTest, ANodeStatusHeartbeatDecodesTheSame) {
  Json beat = NodeJson();
  for (Json& c : beat["status"]["conditions"]) c["lastHeartbeatTime"] = "2026-01-01T00:10:00Z";
  beat["status"]["images"].push_back({{"names", {"trainer:2"}}, {"sizeBytes", 2}});
  EXPECT_TRUE(Same(codec::DecodeNode, NodeJson(), beat));
}

TEST(UnchangedWriteTest, EveryNodeFieldTidepoolReadsIsAChange) {
  const std::vector<std::pair<std::string, std::function<void(Json&)>>> changes = {
      {"label", [](Json& n) { n["metadata"]["labels"]["pool"] = "other"; }},
      {"annotation",
       [](Json& n) {
         n["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/scale-down-disabled"] =
             "true";
       }},
      {"deletion", [](Json& n) { n["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"; }},
      {"taint",
       [](Json& n) {
         n["spec"]["taints"].push_back(
             {{"key", "ToBeDeletedByClusterAutoscaler"}, {"value", "1"}, {"effect", "NoSchedule"}});
       }},
      {"cordon", [](Json& n) { n["spec"]["unschedulable"] = true; }},
      {"allocatable", [](Json& n) { n["status"]["allocatable"]["nvidia.com/gpu"] = "0"; }},
      {"not ready", [](Json& n) { n["status"]["conditions"][1]["status"] = "False"; }},
      {"provider id", [](Json& n) { n["spec"]["providerID"] = "azure:///vmss/gpu/1"; }},
      {"uid (recreated)", [](Json& n) { n["metadata"]["uid"] = "u-2"; }},
  };
  for (const auto& [what, change] : changes) {
    Json after = NodeJson();
    change(after);
    EXPECT_FALSE(Same(codec::DecodeNode, NodeJson(), after)) << what;
  }
}

TEST(UnchangedWriteTest, APodStatusUpdateTidepoolDoesNotReadDecodesTheSame) {
  Json after = PodJson();
  after["status"]["conditions"][0]["status"] = "False";  // a readiness probe failed
  after["status"]["containerStatuses"][0]["restartCount"] = 3;
  after["status"]["podIP"] = "10.0.0.7";
  EXPECT_TRUE(Same(codec::DecodePod, PodJson(), after));
}

TEST(UnchangedWriteTest, EveryPodFieldTidepoolReadsIsAChange) {
  const std::vector<std::pair<std::string, std::function<void(Json&)>>> changes = {
      {"phase", [](Json& p) { p["status"]["phase"] = "Succeeded"; }},
      {"node", [](Json& p) { p["spec"]["nodeName"] = "aks-gpu-2"; }},
      {"label", [](Json& p) { p["metadata"]["labels"]["step"] = "2"; }},
      {"checkpoint annotation",
       [](Json& p) {
         p["metadata"]["annotations"] = {{"tidepool.dev/last-checkpoint", "2026-01-01T00:30:00Z"}};
       }},
      {"deletion", [](Json& p) { p["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"; }},
      {"anti-affinity (an extra)",
       [](Json& p) {
         p["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
          [0]["topologyKey"] = "topology.kubernetes.io/zone";
       }},
      {"nomination (an extra)", [](Json& p) { p["status"]["nominatedNodeName"] = "aks-gpu-3"; }},
      {"unschedulable",
       [](Json& p) {
         p["status"]["conditions"].push_back(
             {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}});
       }},
      {"requests",
       [](Json& p) { p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"; }},
  };
  for (const auto& [what, change] : changes) {
    Json after = PodJson();
    change(after);
    EXPECT_FALSE(Same(codec::DecodePod, PodJson(), after)) << what;
  }
}

Json DaemonSetJson() {
  return Json::parse(R"({
    "apiVersion": "apps/v1", "kind": "DaemonSet",
    "metadata": {"name": "gpu-driver", "namespace": "kube-system", "uid": "d-1",
                 "resourceVersion": "30", "generation": 2},
    "spec": {"selector": {"matchLabels": {"app": "gpu-driver"}},
             "template": {"metadata": {"labels": {"app": "gpu-driver"}},
                          "spec": {"nodeSelector": {"gpu": "true"},
                                   "containers": [{"name": "driver", "image": "driver:1",
                                                   "resources": {"requests": {"cpu": "100m"}}}]}}},
    "status": {"currentNumberScheduled": 4, "desiredNumberScheduled": 4, "numberReady": 4,
               "observedGeneration": 2}})");
}

Json PdbJson() {
  return Json::parse(R"({
    "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "ml", "uid": "b-1", "resourceVersion": "40",
                 "generation": 1},
    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
    "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2,
               "expectedPods": 3, "observedGeneration": 1}})");
}

// A DaemonSet's status moves with its pods' readiness (numberReady); tidepool reads its template.
TEST(UnchangedWriteTest, ADaemonSetStatusWriteDecodesTheSameItsTemplateDoesNot) {
  Json status = DaemonSetJson();
  status["status"]["numberReady"] = 3;
  status["status"]["numberUnavailable"] = 1;
  EXPECT_TRUE(Same(codec::DecodeDaemonSet, DaemonSetJson(), status));
  Json requests = DaemonSetJson();
  requests["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1";
  EXPECT_FALSE(Same(codec::DecodeDaemonSet, DaemonSetJson(), requests));
  Json selector = DaemonSetJson();
  selector["spec"]["template"]["spec"]["nodeSelector"]["gpu"] = "false";
  EXPECT_FALSE(Same(codec::DecodeDaemonSet, DaemonSetJson(), selector));
}

// A PDB's status is the disruption controller's: what it says of the pods is a change; a write of
// its conditions alone is not.
TEST(UnchangedWriteTest, APdbWriteIsAChangeWhenItsBudgetOrSpecMoves) {
  Json conditions = PdbJson();
  conditions["status"]["conditions"] = Json::array(
      {{{"type", "DisruptionAllowed"}, {"status", "True"}, {"reason", "SufficientPods"}}});
  EXPECT_TRUE(Same(codec::DecodePdb, PdbJson(), conditions));
  Json allowed = PdbJson();
  allowed["status"]["disruptionsAllowed"] = 0;
  EXPECT_FALSE(Same(codec::DecodePdb, PdbJson(), allowed));
  Json spec = PdbJson();
  spec["spec"]["minAvailable"] = "50%";
  EXPECT_FALSE(Same(codec::DecodePdb, PdbJson(), spec));
}

TEST(UnchangedWriteTest, APodWithoutExtrasEqualsOneWhoseExtrasAreEmpty) {
  model::Pod plain;
  plain.meta.name = "p";
  model::Pod written = plain;
  written.mutable_priority_class_name();  // allocates the extras, leaves them empty
  ASSERT_TRUE(written.HasExtras());
  EXPECT_TRUE(model::SameButVersion(plain, written));
  written.mutable_priority_class_name() = "high";
  EXPECT_FALSE(model::SameButVersion(plain, written));
}

}  // namespace
}  // namespace tidepool::kube
