// Tests of the Kubernetes object decoders (kube/codec/objects.h): the seed state, kubectl's
// JSON and YAML output, every field the model holds, and the shape of every error.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "kube/codec/objects.h"
#include "model/resources.h"

namespace tidepool::kube::codec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

// The one object of a YAML or JSON text (fails the test when there is not exactly one).
Json One(std::string_view text) {
  auto docs = ParseDocuments(text, "test.yaml");
  EXPECT_TRUE(docs.has_value()) << (docs ? "" : docs.error().message());
  if (!docs || docs->size() != 1) {
    ADD_FAILURE() << "expected one document";
    return Json::object();
  }
  return (*docs)[0];
}

model::Pod PodFrom(std::string_view yaml) {
  auto pod = DecodePod(One(yaml));
  EXPECT_TRUE(pod.has_value()) << (pod ? "" : pod.error().message());
  return pod ? *pod : model::Pod{};
}

std::string PodError(std::string_view yaml) {
  auto pod = DecodePod(One(yaml));
  if (pod) return "<no error>";
  EXPECT_EQ(pod.error().code(), Error::Code::kInvalidArgument);
  return pod.error().message();
}

model::Node NodeFrom(std::string_view yaml) {
  auto node = DecodeNode(One(yaml));
  EXPECT_TRUE(node.has_value()) << (node ? "" : node.error().message());
  return node ? *node : model::Node{};
}

Time T(std::string_view rfc3339) { return *ParseRfc3339(rfc3339); }

const model::ResourceId kGpu = model::InternResource(model::kNvidiaGpu);

// ---- the seed state ------------------------------------------------------------------------

class SeedStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto state = LoadStateFile(std::string(TIDEPOOL_SOURCE_DIR) + "/examples/seed/state.yaml");
    ASSERT_TRUE(state.has_value()) << state.error().message();
    state_ = std::move(*state);
  }
  const model::Pod& Pod(std::string_view name) {
    for (const auto& p : state_.pods)
      if (p.meta.name == name) return p;
    ADD_FAILURE() << "no pod " << name;
    static model::Pod none;
    return none;
  }
  ClusterState state_;
};

TEST_F(SeedStateTest, HoldsTheTwoPoolsNodesAndFourPods) {
  ASSERT_EQ(state_.nodes.size(), 2u);
  EXPECT_EQ(state_.pods.size(), 4u);
  EXPECT_TRUE(state_.pdbs.empty());
  EXPECT_TRUE(state_.daemon_sets.empty());
  EXPECT_TRUE(state_.ignored.empty());
  EXPECT_EQ(state_.nodes[0].name(), "k8s-cpupool-29744472-0");
  EXPECT_EQ(state_.nodes[1].name(), "k8s-gpupool-29744472-0");
}

TEST_F(SeedStateTest, CpuNode) {
  const model::Node& n = state_.nodes[0];
  EXPECT_EQ(*n.meta.Label("agentpool"), "cpupool");
  EXPECT_EQ(*n.meta.Label(model::kLabelInstanceType), "Standard_D2_v2");
  EXPECT_EQ(*n.meta.Label(model::kLabelHostname), "k8s-cpupool-29744472-0");
  EXPECT_EQ(*n.meta.Label(model::kLabelZone), "0");
  EXPECT_EQ(*n.meta.Label("kubernetes.io/role"), "agent");
  EXPECT_EQ(n.meta.uid, "b9d21873-9130-4d64-8fdf-89c58286ba6e");
  EXPECT_EQ(n.meta.resource_version, "1893");
  EXPECT_EQ(n.meta.creation_timestamp, T("2024-05-06T08:02:17Z"));
  EXPECT_EQ(*n.meta.Annotation("node.alpha.kubernetes.io/ttl"), "0");
  EXPECT_THAT(n.provider_id, StartsWith("azure:///subscriptions/"));
  EXPECT_THAT(n.provider_id, HasSubstr("/virtualMachines/k8s-cpupool-29744472-0"));
  EXPECT_TRUE(n.ready);
  EXPECT_FALSE(n.unschedulable);
  EXPECT_TRUE(n.taints.empty());
  EXPECT_EQ(n.capacity.cpu_milli(), 2000);
  EXPECT_EQ(n.capacity.memory(), 7LL << 30);
  EXPECT_EQ(n.allocatable.cpu_milli(), 1900);
  EXPECT_EQ(n.allocatable.memory(), 6264832LL * 1024);
  EXPECT_EQ(n.allocatable.pods(), 30);
  EXPECT_EQ(n.allocatable.Get(model::kEphemeralStorage), 28043041951LL);
  EXPECT_EQ(n.allocatable.gpus(), 0);
}

TEST_F(SeedStateTest, GpuNode) {
  const model::Node& n = state_.nodes[1];
  EXPECT_EQ(*n.meta.Label("agentpool"), "gpupool");
  EXPECT_EQ(*n.meta.Label("accelerator"), "nvidia");
  EXPECT_EQ(*n.meta.Label(model::kLabelInstanceType), "Standard_NC6");
  EXPECT_EQ(n.capacity.cpu_milli(), 6000);
  EXPECT_EQ(n.capacity.memory(), 56LL << 30);
  EXPECT_EQ(n.capacity.Get(kGpu), 1);
  EXPECT_EQ(n.allocatable.gpus(), 1);
  EXPECT_EQ(n.allocatable.cpu_milli(), 5900);
  EXPECT_TRUE(n.ready);
}

TEST_F(SeedStateTest, DaemonSetPods) {
  const model::Pod& p = Pod("kube-proxy-ghr3z");
  EXPECT_EQ(p.Key(), "kube-system/kube-proxy-ghr3z");
  EXPECT_TRUE(p.IsDaemonSetPod());
  EXPECT_EQ(p.meta.Controller()->name, "kube-proxy");
  EXPECT_EQ(p.meta.Controller()->api_version, "apps/v1");
  EXPECT_EQ(p.node_name, "k8s-cpupool-29744472-0");
  EXPECT_EQ(p.scheduler_name, "default-scheduler");
  EXPECT_TRUE(p.host_network);
  EXPECT_EQ(p.priority, 2000001000);
  EXPECT_EQ(p.priority_class_name(), "system-node-critical");
  EXPECT_EQ(p.phase, model::PodPhase::kRunning);
  EXPECT_EQ(p.requests.cpu_milli(), 100);
  EXPECT_EQ(p.requests.pods(), 1);
  ASSERT_TRUE(p.affinity().node_required.has_value());
  ASSERT_EQ(p.affinity().node_required->terms.size(), 1u);
  const auto& field = p.affinity().node_required->terms[0].match_fields;
  ASSERT_EQ(field.size(), 1u);
  EXPECT_EQ(field[0].key, "metadata.name");
  EXPECT_EQ(field[0].op, model::SelectorOp::kIn);
  EXPECT_THAT(field[0].values, ElementsAre("k8s-cpupool-29744472-0"));
  ASSERT_EQ(p.tolerations.size(), 10u);
  EXPECT_EQ(p.tolerations[0].key, "CriticalAddonsOnly");
  EXPECT_EQ(p.tolerations[0].op, model::TolerationOp::kExists);
  EXPECT_FALSE(p.tolerations[0].effect.has_value());
  EXPECT_EQ(p.tolerations[1].key, "");
  EXPECT_EQ(p.tolerations[1].effect, model::TaintEffect::kNoExecute);
  ASSERT_EQ(p.volumes.size(), 4u);
  EXPECT_EQ(p.volumes[0].kind, model::Volume::Kind::kOther);  // configMap
  EXPECT_EQ(p.volumes[1].kind, model::Volume::Kind::kHostPath);
  EXPECT_EQ(p.volumes[3].kind, model::Volume::Kind::kOther);  // projected token
  EXPECT_EQ(Pod("kube-proxy-x7k2p").node_name, "k8s-gpupool-29744472-0");
}

TEST_F(SeedStateTest, RunningTrainingPod) {
  const model::Pod& p = Pod("tensorflow-5d9f8b7c6d-8xq2v");
  EXPECT_EQ(p.meta.namespace_, "default");
  EXPECT_EQ(*p.meta.Label("app"), "tensorflow");
  ASSERT_NE(p.meta.Controller(), nullptr);
  EXPECT_EQ(p.meta.Controller()->kind, "ReplicaSet");
  EXPECT_EQ(p.meta.Controller()->uid, "a99f7efb-6b32-46c8-af5a-4a3c2482ad32");
  EXPECT_FALSE(p.IsDaemonSetPod());
  EXPECT_EQ(p.phase, model::PodPhase::kRunning);
  EXPECT_EQ(p.node_name, "k8s-gpupool-29744472-0");
  EXPECT_EQ(p.start_time, T("2024-05-06T09:12:05Z"));
  EXPECT_FALSE(p.unschedulable_condition);
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_EQ(p.containers[0].name, "tensorflow");
  EXPECT_EQ(p.containers[0].requests.Get(kGpu), 1);
  EXPECT_EQ(p.requests.gpus(), 1);
  EXPECT_EQ(p.requests.cpu_milli(), 0);
  EXPECT_EQ(p.priority, 0);
  ASSERT_EQ(p.tolerations.size(), 2u);
  EXPECT_EQ(p.tolerations[0].toleration_seconds, 300);
  ASSERT_EQ(p.volumes.size(), 4u);
  EXPECT_EQ(p.volumes[0].name, "bin");
  EXPECT_EQ(p.volumes[0].kind, model::Volume::Kind::kHostPath);
}

TEST_F(SeedStateTest, PendingTrainingPod) {
  const model::Pod& p = Pod("tensorflow-5d9f8b7c6d-k4lmn");
  EXPECT_EQ(p.phase, model::PodPhase::kPending);
  EXPECT_TRUE(p.unschedulable_condition);
  EXPECT_TRUE(p.node_name.empty());
  EXPECT_FALSE(p.start_time.has_value());
  EXPECT_EQ(*p.node_selector.find("accelerator"),
            (std::pair<const std::string, std::string>{"accelerator", "nvidia"}));
  EXPECT_EQ(p.requests.gpus(), 1);
  EXPECT_EQ(p.meta.creation_timestamp, T("2024-05-06T10:41:19Z"));
}

// ---- input forms ---------------------------------------------------------------------------

TEST(DecodeStateTest, JsonListAsKubectlPrintsIt) {
  constexpr std::string_view kJson = R"({
    "apiVersion": "v1",
    "items": [
      {"apiVersion": "v1", "kind": "Node",
       "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
       "spec": {"taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]},
       "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                  "allocatable": {"cpu": "3860m", "memory": "14Gi", "pods": "110"},
                  "conditions": [{"type": "Ready", "status": "True"}]}},
      {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web-1", "namespace": "default"},
       "spec": {"containers": [
         {"name": "c", "resources": {"requests": {"cpu": 0.25, "memory": 1048576}}}]},
       "status": {"phase": "Running"}},
      {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
       "metadata": {"name": "web", "namespace": "default"},
       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}},
      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm2"}}
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""}
  })";
  auto state = DecodeState(kJson, "state.json");
  ASSERT_TRUE(state.has_value()) << state.error().message();
  ASSERT_EQ(state->nodes.size(), 1u);
  ASSERT_EQ(state->pods.size(), 1u);
  ASSERT_EQ(state->pdbs.size(), 1u);
  EXPECT_EQ(state->ignored.at("ConfigMap"), 2);
  const model::Node& n = state->nodes[0];
  EXPECT_EQ(n.allocatable.cpu_milli(), 3860);
  EXPECT_EQ(n.allocatable.memory(), 14LL << 30);
  EXPECT_TRUE(n.ready);
  ASSERT_EQ(n.taints.size(), 1u);
  EXPECT_EQ(n.taints[0], (model::Taint{"sku", "gpu", model::TaintEffect::kNoSchedule}));
  EXPECT_EQ(state->pods[0].requests.cpu_milli(), 250);
  EXPECT_EQ(state->pods[0].requests.memory(), 1048576);
  EXPECT_EQ(state->pods[0].phase, model::PodPhase::kRunning);
  EXPECT_EQ(state->pdbs[0].min_available->value, 1);
}

TEST(DecodeStateTest, MultiDocumentYaml) {
  constexpr std::string_view kYaml = R"(# cluster state
---
apiVersion: v1
kind: Node
metadata: {name: n1}
---
---
# only a comment
---
apiVersion: v1
kind: Pod
metadata:
  name: p1
  namespace: ns
spec:
  containers:
  - name: c
    resources: {requests: {cpu: 1}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: monitoring
  uid: 11111111-2222-3333-4444-555555555555
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata:
      labels: {app: agent}
    spec:
      hostNetwork: true
      containers:
      - name: agent
        ports: [{containerPort: 9100}]
        resources: {requests: {cpu: 50m, memory: 64Mi}}
)";
  auto state = DecodeState(kYaml, "multi.yaml");
  ASSERT_TRUE(state.has_value()) << state.error().message();
  ASSERT_EQ(state->nodes.size(), 1u);
  ASSERT_EQ(state->pods.size(), 1u);
  ASSERT_EQ(state->daemon_sets.size(), 1u);
  EXPECT_EQ(state->nodes[0].name(), "n1");
  EXPECT_EQ(state->pods[0].Key(), "ns/p1");
  EXPECT_EQ(state->pods[0].requests.cpu_milli(), 1000);

  const model::DaemonSet& ds = state->daemon_sets[0];
  EXPECT_EQ(ds.meta.Key(), "monitoring/agent");
  const model::Pod& t = ds.pod_template;
  EXPECT_EQ(t.meta.namespace_, "monitoring");
  EXPECT_EQ(t.meta.name, "agent");
  EXPECT_EQ(*t.meta.Label("app"), "agent");
  EXPECT_TRUE(t.IsDaemonSetPod());
  EXPECT_EQ(t.meta.Controller()->uid, "11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(t.requests.cpu_milli(), 50);
  EXPECT_EQ(t.requests.memory(), 64LL << 20);
  EXPECT_EQ(t.requests.pods(), 1);
  // hostNetwork: the host port defaults to the container port.
  ASSERT_EQ(t.HostPorts().size(), 1u);
  EXPECT_EQ(t.HostPorts()[0].host_port, 9100);
  // The DaemonSet controller's tolerations: a node that is cordoned or under pressure still gets
  // the pod.
  model::Taint unschedulable{"node.kubernetes.io/unschedulable", "",
                             model::TaintEffect::kNoSchedule};
  model::Taint network{"node.kubernetes.io/network-unavailable", "",
                       model::TaintEffect::kNoSchedule};
  model::Taint other{"dedicated", "x", model::TaintEffect::kNoSchedule};
  EXPECT_EQ(model::FindUntoleratedTaint({unschedulable, network}, t.tolerations), nullptr);
  EXPECT_NE(model::FindUntoleratedTaint({other}, t.tolerations), nullptr);
}

TEST(DecodeStateTest, TypedListItemsGetTheListsKind) {
  constexpr std::string_view kJson = R"({"kind": "PodList", "apiVersion": "v1",
    "items": [{"metadata": {"name": "a", "namespace": "x"}}, {"metadata": {"name": "b"}}]})";
  auto state = DecodeState(kJson, "pods.json");
  ASSERT_TRUE(state.has_value()) << state.error().message();
  ASSERT_EQ(state->pods.size(), 2u);
  EXPECT_EQ(state->pods[1].meta.name, "b");
}

TEST(DecodeStateTest, UnknownFieldsAreIgnored) {
  constexpr std::string_view kYaml = R"(
apiVersion: v1
kind: Pod
metadata:
  name: p
  managedFields: [{manager: kubectl, fieldsV1: {f:spec: {}}}]
  futureField: 7
spec:
  containers:
  - name: c
    image: busybox
    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]
    resources: {requests: {cpu: 100m}, claims: [{name: gpu}]}
  newSpecField: {nested: [1, 2, {x: y}]}
status:
  resize: InProgress
  phase: Running
)";
  model::Pod p = PodFrom(kYaml);
  EXPECT_EQ(p.meta.name, "p");
  EXPECT_EQ(p.requests.cpu_milli(), 100);
  EXPECT_EQ(p.phase, model::PodPhase::kRunning);
}

TEST(DecodeStateTest, PdbVersionsAndForeignKinds) {
  constexpr std::string_view kYaml = R"(
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: old, namespace: a}
spec: {maxUnavailable: 1}
---
apiVersion: example.com/v1
kind: Node
metadata: {name: not-a-kubernetes-node}
---
apiVersion: v1
kind: Service
metadata: {name: svc}
)";
  auto state = DecodeState(kYaml, "x.yaml");
  ASSERT_TRUE(state.has_value()) << state.error().message();
  EXPECT_EQ(state->pdbs.size(), 1u);
  EXPECT_TRUE(state->nodes.empty());
  EXPECT_EQ(state->ignored.at("Service"), 1);
  EXPECT_EQ(state->ignored.at("Node (example.com/v1)"), 1);
}

TEST(DecodeStateTest, EmptyInputIsAnEmptyState) {
  auto state = DecodeState("# nothing here\n", "empty.yaml");
  ASSERT_TRUE(state.has_value());
  EXPECT_TRUE(state->nodes.empty());
  EXPECT_TRUE(state->pods.empty());
}

// ---- errors --------------------------------------------------------------------------------

TEST(DecodeErrorTest, WrongTypeNamesObjectAndPath) {
  constexpr std::string_view kYaml = R"(
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default}
spec:
  containers:
  - name: c
    resources:
      requests:
        cpu: lots
)";
  EXPECT_EQ(PodError(kYaml),
            "Pod default/web-1: spec.containers[0].resources.requests.cpu: expected a quantity, "
            "got \"lots\"");
  auto state = DecodeState(kYaml, "state.yaml");
  ASSERT_FALSE(state.has_value());
  EXPECT_EQ(state.error().code(), Error::Code::kInvalidArgument);
  EXPECT_EQ(state.error().message(),
            "state.yaml: Pod default/web-1: spec.containers[0].resources.requests.cpu: expected "
            "a quantity, got \"lots\"");
}

TEST(DecodeErrorTest, WrongTypesElsewhere) {
  EXPECT_EQ(PodError("kind: Pod\nmetadata: {name: p, labels: {topology.kubernetes.io/zone: 1}}"),
            "Pod p: metadata.labels[topology.kubernetes.io/zone]: expected a string, got 1");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {priority: high}"),
            "Pod p: spec.priority: expected an integer, got \"high\"");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {priority: 3000000000}"),
            "Pod p: spec.priority: expected a 32-bit integer, got 3000000000");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {containers: {}}"),
            "Pod p: spec.containers: expected an array, got {}");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {hostNetwork: 'yes'}"),
            "Pod p: spec.hostNetwork: expected true or false, got \"yes\"");
  EXPECT_EQ(PodError("metadata: {name: p, creationTimestamp: yesterday}"),
            "Pod p: metadata.creationTimestamp: expected an RFC 3339 time, got \"yesterday\"");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {containers: [{resources: {limits: "
                     "{nvidia.com/gpu: -1}}}]}"),
            "Pod p: spec.containers[0].resources.limits[nvidia.com/gpu]: expected a non-negative "
            "quantity, got -1");
  EXPECT_EQ(PodError("kind: Node\nmetadata: {name: p}"),
            "Pod p: kind: expected \"Pod\", got \"Node\"");
  EXPECT_EQ(PodError("metadata: [1]"), "Pod: metadata: expected an object, got [1]");
  auto not_object = DecodePod(Json::array({1, 2}));
  ASSERT_FALSE(not_object.has_value());
  EXPECT_EQ(not_object.error().message(), "Pod: expected an object, got [1,2]");
}

TEST(DecodeErrorTest, LongValuesAreShortenedInMessages) {
  std::string long_value(200, 'x');
  std::string message = PodError("metadata: {name: p}\nspec: {priority: " + long_value + "}");
  EXPECT_THAT(message, HasSubstr("got \"xxxx"));
  EXPECT_THAT(message, HasSubstr("..."));
  EXPECT_LT(message.size(), 150u);
}

TEST(DecodeErrorTest, BadEnumsListTheAllowedValues) {
  auto node = DecodeNode(
      One("kind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: a, effect: Sometimes}]}"));
  ASSERT_FALSE(node.has_value());
  EXPECT_EQ(node.error().message(),
            "Node n1: spec.taints[0].effect: expected one of \"NoSchedule\", "
            "\"PreferNoSchedule\", \"NoExecute\", got \"Sometimes\"");
  auto no_effect = DecodeNode(One("metadata: {name: n1}\nspec: {taints: [{key: a}]}"));
  ASSERT_FALSE(no_effect.has_value());
  EXPECT_THAT(no_effect.error().message(), HasSubstr("spec.taints[0].effect: expected one of"));
  EXPECT_THAT(no_effect.error().message(), HasSubstr("got nothing"));

  EXPECT_EQ(PodError("metadata: {name: p, namespace: ns}\nspec: {tolerations: [{key: a, "
                     "operator: Maybe}]}"),
            "Pod ns/p: spec.tolerations[0].operator: expected one of \"Equal\", \"Exists\", got "
            "\"Maybe\"");
  EXPECT_EQ(PodError("metadata: {name: p}\nstatus: {phase: Sleeping}"),
            "Pod p: status.phase: expected one of \"Pending\", \"Running\", \"Succeeded\", "
            "\"Failed\", \"Unknown\", got \"Sleeping\"");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {containers: [{ports: [{containerPort: 80, "
                     "protocol: HTTP}]}]}"),
            "Pod p: spec.containers[0].ports[0].protocol: expected one of \"TCP\", \"UDP\", "
            "\"SCTP\", got \"HTTP\"");
  // Gt and Lt belong to node selectors only.
  EXPECT_EQ(PodError(R"(
metadata: {name: p}
spec:
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector:
          matchExpressions: [{key: rank, operator: Gt, values: ["1"]}]
)"),
            "Pod p: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".labelSelector.matchExpressions[0].operator: expected one of \"In\", \"NotIn\", "
            "\"Exists\", \"DoesNotExist\", got \"Gt\"");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {topologySpreadConstraints: [{maxSkew: 1, "
                     "whenUnsatisfiable: Sometimes}]}"),
            "Pod p: spec.topologySpreadConstraints[0].whenUnsatisfiable: expected one of "
            "\"DoNotSchedule\", \"ScheduleAnyway\", got \"Sometimes\"");
}

TEST(DecodeErrorTest, MissingName) {
  EXPECT_EQ(PodError("kind: Pod\nmetadata: {namespace: default}"),
            "Pod: metadata.name: expected a non-empty string, got nothing");
  EXPECT_EQ(PodError("kind: Pod\nspec: {}"),
            "Pod: metadata.name: expected a non-empty string, got nothing");
  // In a state file the unnamed object is found by its position.
  auto state = DecodeState(R"(
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: a}}
- {apiVersion: v1, kind: Node, metadata: {labels: {x: y}}}
)",
                           "state.yaml");
  ASSERT_FALSE(state.has_value());
  EXPECT_EQ(state.error().message(),
            "state.yaml: document 1, items[1]: Node: metadata.name: expected a non-empty string, "
            "got nothing");
}

TEST(DecodeErrorTest, MissingKindNamesTheDocument) {
  auto state =
      DecodeState("kind: Node\nmetadata: {name: a}\n---\nmetadata: {name: b}\n", "state.yaml");
  ASSERT_FALSE(state.has_value());
  EXPECT_EQ(state.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(state.error().message(), StartsWith("state.yaml: document 2: missing \"kind\""));

  auto scalar = DecodeState("kind: Node\nmetadata: {name: a}\n---\nhello\n", "state.yaml");
  ASSERT_FALSE(scalar.has_value());
  EXPECT_EQ(scalar.error().message(), "state.yaml: document 2: expected an object, got \"hello\"");
}

TEST(DecodeErrorTest, MalformedYamlNamesTheLine) {
  auto state = DecodeState("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x: y\n", "bad.yaml");
  ASSERT_FALSE(state.has_value());
  EXPECT_EQ(state.error().code(), Error::Code::kInvalidArgument);
  EXPECT_EQ(state.error().message(),
            "bad.yaml: line 4, column 10: invalid YAML: illegal map value");

  auto later =
      DecodeState("kind: Node\nmetadata: {name: a}\n---\nkind: Pod\nspec: [a,\n", "two.yaml");
  ASSERT_FALSE(later.has_value());
  EXPECT_THAT(later.error().message(), StartsWith("two.yaml: line 6"));
  EXPECT_THAT(later.error().message(), HasSubstr("invalid YAML"));
}

TEST(DecodeErrorTest, MalformedJsonNamesTheLine) {
  auto state = DecodeState("{\"kind\": \"Pod\",\n \"metadata\": {\n  \"name\": }}", "bad.json");
  ASSERT_FALSE(state.has_value());
  EXPECT_EQ(state.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(state.error().message(), StartsWith("bad.json: invalid JSON: "));
  EXPECT_THAT(state.error().message(), HasSubstr("line 3"));
}

TEST(DecodeErrorTest, MissingAndUnreadableFiles) {
  auto missing = LoadStateFile("/nonexistent/dir/state.yaml");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), Error::Code::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("/nonexistent/dir/state.yaml"));
  auto missing_path = LoadStatePath("/nonexistent/state");
  ASSERT_FALSE(missing_path.has_value());
  EXPECT_THAT(missing_path.error().message(), HasSubstr("/nonexistent/state"));
  auto dir = LoadStateFile(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(dir.has_value());
  EXPECT_THAT(dir.error().message(), HasSubstr("is a directory"));
}

TEST(DecodeErrorTest, ErrorsInAFileNameTheFile) {
  auto dir = std::filesystem::temp_directory_path() / "tidepool_codec_bad_file";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "state.yaml")
      << "kind: Node\nmetadata: {name: n}\nspec: {unschedulable: 1}\n";
  auto state = LoadStateFile((dir / "state.yaml").string());
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(state.has_value());
  EXPECT_EQ(state.error().message(), (dir / "state.yaml").string() +
                                         ": Node n: spec.unschedulable: expected true or false, "
                                         "got 1");
}

// A state read from a pipe (`--state <(kubectl get pods -o json)`), which has no size: the same
// state as from the file.
TEST(DecodeErrorTest, AStateFromAPipeIsTheStateFromTheFile) {
  auto dir = std::filesystem::temp_directory_path() / "tidepool_codec_fifo";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "state.json").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string text =
      R"({"kind":"List","apiVersion":"v1","items":[{"kind":"Node","apiVersion":"v1",)"
      R"("metadata":{"name":"n1"}},{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p",)"
      R"("namespace":"default"},"spec":{"containers":[{"name":"c"}]}}]})";
  std::thread writer([&] { std::ofstream(fifo) << text; });
  auto state = LoadStateFile(fifo);
  writer.join();
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(state.has_value()) << state.error().message();
  ASSERT_EQ(state->nodes.size(), 1u);
  EXPECT_EQ(state->nodes[0].name(), "n1");
  ASSERT_EQ(state->pods.size(), 1u);
  EXPECT_EQ(state->pods[0].meta.name, "p");
}

// ---- quantities ----------------------------------------------------------------------------

TEST(QuantityDecodeTest, NumbersAndStrings) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  containers:
  - name: a
    resources: {requests: {cpu: 0.1, memory: 1e3, nvidia.com/gpu: 2, ephemeral-storage: "1Gi"}}
  - name: b
    resources: {requests: {cpu: 1, memory: 0.5Gi}}
  - name: c
    resources: {requests: {cpu: "0.3"}}
)");
  ASSERT_EQ(p.containers.size(), 3u);
  EXPECT_EQ(p.containers[0].requests.cpu_milli(), 100);
  EXPECT_EQ(p.containers[0].requests.memory(), 1000);
  EXPECT_EQ(p.containers[0].requests.Get(kGpu), 2);
  EXPECT_EQ(p.containers[0].requests.Get(model::kEphemeralStorage), 1LL << 30);
  EXPECT_EQ(p.containers[1].requests.cpu_milli(), 1000);
  EXPECT_EQ(p.containers[1].requests.memory(), 512LL << 20);
  EXPECT_EQ(p.containers[2].requests.cpu_milli(), 300);
  // 0.1 + 1 + 0.3 stays exact.
  EXPECT_EQ(p.requests.cpu_milli(), 1400);
}

TEST(QuantityDecodeTest, JsonNumbersAreExact) {
  auto pod = DecodePod(Json::parse(R"({"metadata": {"name": "p"}, "spec": {"containers": [
      {"resources": {"requests": {"cpu": 0.1}}}, {"resources": {"requests": {"cpu": 0.2}}},
      {"resources": {"requests": {"cpu": 0.0005, "memory": 1.5e9}}}]}})"));
  ASSERT_TRUE(pod.has_value()) << pod.error().message();
  EXPECT_EQ(pod->containers[0].requests.cpu_milli(), 100);
  EXPECT_EQ(pod->containers[1].requests.cpu_milli(), 200);
  EXPECT_EQ(pod->containers[2].requests.cpu_milli(), 1);  // 0.5m rounds up to 1m
  EXPECT_EQ(pod->containers[2].requests.memory(), 1500000000);
}

TEST(QuantityDecodeTest, NonQuantities) {
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {overhead: {cpu: true}}"),
            "Pod p: spec.overhead.cpu: expected a quantity, got true");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {overhead: {cpu: .inf}}"),
            "Pod p: spec.overhead.cpu: expected a quantity, got .inf");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {overhead: {memory: 1 Gi}}"),
            "Pod p: spec.overhead.memory: expected a quantity, got \"1 Gi\"");
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {overhead: {cpu: [1]}}"),
            "Pod p: spec.overhead.cpu: expected a quantity, got [1]");
}

TEST(QuantityDecodeTest, OverheadCounts) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  overhead: {cpu: 250m, memory: 120Mi}
  containers: [{resources: {requests: {cpu: 1}}}]
)");
  EXPECT_EQ(p.overhead().cpu_milli(), 250);
  EXPECT_EQ(p.overhead().memory(), 120LL << 20);
  EXPECT_EQ(p.requests.cpu_milli(), 1250);
}

TEST(QuantityDecodeTest, LimitsAreRequestsWhenRequestsAreAbsent) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  containers:
  - name: both
    resources:
      requests: {cpu: 250m}
      limits: {cpu: 2, memory: 1Gi, nvidia.com/gpu: 1}
  - name: limits-only
    resources:
      limits: {cpu: 500m}
  - name: explicit-zero
    resources:
      requests: {memory: 0}
      limits: {memory: 2Gi}
)");
  ASSERT_EQ(p.containers.size(), 3u);
  EXPECT_EQ(p.containers[0].requests.cpu_milli(), 250);  // the request wins over the limit
  EXPECT_EQ(p.containers[0].requests.memory(), 1LL << 30);
  EXPECT_EQ(p.containers[0].requests.Get(kGpu), 1);
  EXPECT_EQ(p.containers[1].requests.cpu_milli(), 500);
  EXPECT_EQ(p.containers[2].requests.memory(), 0);
  EXPECT_EQ(p.requests.cpu_milli(), 750);
  EXPECT_EQ(p.requests.gpus(), 1);
}

TEST(QuantityDecodeTest, BadLimitIsAnErrorEvenWhenARequestExists) {
  EXPECT_EQ(PodError("metadata: {name: p}\nspec: {containers: [{resources: {requests: {cpu: 1}, "
                     "limits: {cpu: much}}}]}"),
            "Pod p: spec.containers[0].resources.limits.cpu: expected a quantity, got \"much\"");
}

// ---- pod spec fields -----------------------------------------------------------------------

TEST(PodDecodeTest, InitContainersAndSidecars) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  initContainers:
  - name: proxy
    restartPolicy: Always
    resources: {requests: {cpu: 100m}}
  - name: download
    resources: {requests: {cpu: "1", memory: 2Gi}}
  containers:
  - name: train
    resources: {requests: {cpu: 500m, memory: 1Gi}}
)");
  ASSERT_EQ(p.init_containers().size(), 2u);
  EXPECT_EQ(p.init_containers()[0].name, "proxy");
  EXPECT_TRUE(p.init_containers()[0].restartable);
  EXPECT_FALSE(p.init_containers()[1].restartable);
  EXPECT_EQ(p.init_containers()[1].requests.memory(), 2LL << 30);
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_FALSE(p.containers[0].restartable);
  // The download runs next to the sidecar (1 + 0.1 cpu); the app with it needs 0.6.
  EXPECT_EQ(p.requests.cpu_milli(), 1100);
  EXPECT_EQ(p.requests.memory(), 2LL << 30);
}

TEST(PodDecodeTest, RestartPolicyOnAppContainersIsNotASidecar) {
  model::Pod p = PodFrom("metadata: {name: p}\nspec: {containers: [{restartPolicy: Always}]}");
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_FALSE(p.containers[0].restartable);
}

TEST(PodDecodeTest, NodeAffinityWithGtLtAndMatchFields) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: gpu-count, operator: Gt, values: ["2"]}
          - {key: gpu-count, operator: Lt, values: ["9"]}
          - {key: pool, operator: NotIn, values: [cpu, spot]}
        - matchFields:
          - {key: metadata.name, operator: In, values: [node-7]}
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: zone, operator: In, values: ["1"]}]}
)");
  ASSERT_TRUE(p.affinity().node_required.has_value());
  const auto& terms = p.affinity().node_required->terms;
  ASSERT_EQ(terms.size(), 2u);
  ASSERT_EQ(terms[0].match_expressions.size(), 3u);
  EXPECT_EQ(terms[0].match_expressions[0].op, model::SelectorOp::kGt);
  EXPECT_THAT(terms[0].match_expressions[0].values, ElementsAre("2"));
  EXPECT_EQ(terms[0].match_expressions[1].op, model::SelectorOp::kLt);
  EXPECT_EQ(terms[0].match_expressions[2].op, model::SelectorOp::kNotIn);
  EXPECT_THAT(terms[0].match_expressions[2].values, ElementsAre("cpu", "spot"));
  EXPECT_TRUE(terms[0].match_fields.empty());
  ASSERT_EQ(terms[1].match_fields.size(), 1u);
  EXPECT_EQ(terms[1].match_fields[0].key, "metadata.name");
  EXPECT_THAT(terms[1].match_fields[0].values, ElementsAre("node-7"));
  // The decoded selector behaves: gpu-count 4 matches term 0, node-7 matches term 1.
  EXPECT_TRUE(p.affinity().node_required->Matches({{"gpu-count", "4"}}, "other"));
  EXPECT_FALSE(p.affinity().node_required->Matches({{"gpu-count", "12"}}, "other"));
  EXPECT_TRUE(p.affinity().node_required->Matches({}, "node-7"));
}

TEST(PodDecodeTest, NoRequiredNodeAffinityMeansNone) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  nodeSelector: {disktype: ssd}
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution: []
)");
  EXPECT_FALSE(p.affinity().node_required.has_value());
  EXPECT_EQ(p.node_selector.at("disktype"), "ssd");
}

TEST(PodDecodeTest, PodAffinityTerms) {
  model::Pod p = PodFrom(R"(
metadata: {name: p, namespace: team-a}
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {job: resnet}}
        namespaces: [team-a, team-b]
        topologyKey: topology.kubernetes.io/zone
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchExpressions: [{key: app, operator: Exists}]
        namespaceSelector: {matchLabels: {tier: ml}}
        topologyKey: kubernetes.io/hostname
      - topologyKey: kubernetes.io/hostname
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        podAffinityTerm: {topologyKey: x}
)");
  ASSERT_EQ(p.affinity().pod_affinity_required.size(), 1u);
  const auto& a = p.affinity().pod_affinity_required[0];
  EXPECT_TRUE(a.has_label_selector);
  EXPECT_EQ(a.label_selector.match_labels.at("job"), "resnet");
  EXPECT_THAT(a.namespaces, ElementsAre("team-a", "team-b"));
  EXPECT_FALSE(a.namespace_selector.has_value());
  EXPECT_EQ(a.topology_key, "topology.kubernetes.io/zone");
  ASSERT_EQ(p.affinity().pod_anti_affinity_required.size(), 2u);
  const auto& anti = p.affinity().pod_anti_affinity_required[0];
  ASSERT_EQ(anti.label_selector.match_expressions.size(), 1u);
  EXPECT_EQ(anti.label_selector.match_expressions[0].op, model::SelectorOp::kExists);
  ASSERT_TRUE(anti.namespace_selector.has_value());
  EXPECT_EQ(anti.namespace_selector->match_labels.at("tier"), "ml");
  EXPECT_FALSE(p.affinity().pod_anti_affinity_required[1].has_label_selector);
  EXPECT_TRUE(p.has_required_affinity);
  EXPECT_TRUE(p.has_required_anti_affinity);
}

TEST(PodDecodeTest, Tolerations) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  tolerations:
  - operator: Exists
  - key: kubernetes.azure.com/scalesetpriority
    operator: Equal
    value: spot
    effect: NoSchedule
  - key: sku
    value: gpu
  - key: node.kubernetes.io/unreachable
    operator: ""
    effect: ""
  - key: node.kubernetes.io/not-ready
    operator: Exists
    effect: NoExecute
    tolerationSeconds: 30
)");
  ASSERT_EQ(p.tolerations.size(), 5u);
  EXPECT_EQ(p.tolerations[0].key, "");
  EXPECT_EQ(p.tolerations[0].op, model::TolerationOp::kExists);
  EXPECT_FALSE(p.tolerations[0].effect.has_value());
  EXPECT_TRUE(p.tolerations[0].Tolerates({"anything", "x", model::TaintEffect::kNoExecute}));
  EXPECT_EQ(p.tolerations[1].value, "spot");
  EXPECT_EQ(p.tolerations[1].effect, model::TaintEffect::kNoSchedule);
  EXPECT_EQ(p.tolerations[2].op, model::TolerationOp::kEqual);  // the default
  EXPECT_FALSE(p.tolerations[2].effect.has_value());
  EXPECT_EQ(p.tolerations[3].op, model::TolerationOp::kEqual);  // "" is Equal
  EXPECT_FALSE(p.tolerations[3].effect.has_value());            // "" is every effect
  EXPECT_FALSE(p.tolerations[2].toleration_seconds.has_value());
  EXPECT_EQ(p.tolerations[4].toleration_seconds, 30);
  EXPECT_EQ(p.tolerations[4].effect, model::TaintEffect::kNoExecute);
}

TEST(PodDecodeTest, TopologySpreadConstraintsWithDefaults) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  topologySpreadConstraints:
  - topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
  - maxSkew: 2
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector: {matchLabels: {app: web}}
    minDomains: 3
    nodeAffinityPolicy: Ignore
    nodeTaintsPolicy: Honor
    matchLabelKeys: [pod-template-hash]
)");
  ASSERT_EQ(p.topology_spread_constraints().size(), 2u);
  const auto& d = p.topology_spread_constraints()[0];
  EXPECT_EQ(d.max_skew, 1);
  EXPECT_EQ(d.topology_key, "topology.kubernetes.io/zone");
  EXPECT_EQ(d.when_unsatisfiable, model::WhenUnsatisfiable::kDoNotSchedule);
  EXPECT_FALSE(d.has_label_selector);
  EXPECT_FALSE(d.min_domains.has_value());
  EXPECT_EQ(d.node_affinity_policy, model::InclusionPolicy::kHonor);
  EXPECT_EQ(d.node_taints_policy, model::InclusionPolicy::kIgnore);
  EXPECT_TRUE(d.match_label_keys.empty());
  const auto& c = p.topology_spread_constraints()[1];
  EXPECT_EQ(c.max_skew, 2);
  EXPECT_EQ(c.when_unsatisfiable, model::WhenUnsatisfiable::kScheduleAnyway);
  EXPECT_TRUE(c.has_label_selector);
  EXPECT_EQ(c.label_selector.match_labels.at("app"), "web");
  EXPECT_EQ(c.min_domains, 3);
  EXPECT_EQ(c.node_affinity_policy, model::InclusionPolicy::kIgnore);
  EXPECT_EQ(c.node_taints_policy, model::InclusionPolicy::kHonor);
  EXPECT_THAT(c.match_label_keys, ElementsAre("pod-template-hash"));
}

TEST(PodDecodeTest, PortsAndHostNetwork) {
  model::Pod p = PodFrom(R"(
metadata: {name: p}
spec:
  containers:
  - ports:
    - {containerPort: 8080}
    - {containerPort: 53, hostPort: 5353, protocol: UDP, hostIP: 10.0.0.1}
)");
  ASSERT_EQ(p.containers[0].ports.size(), 2u);
  EXPECT_EQ(p.containers[0].ports[0].host_port, 0);
  EXPECT_EQ(p.containers[0].ports[0].protocol, "TCP");
  const auto& port = p.containers[0].ports[1];
  EXPECT_EQ(port.container_port, 53);
  EXPECT_EQ(port.host_port, 5353);
  EXPECT_EQ(port.protocol, "UDP");
  EXPECT_EQ(port.host_ip, "10.0.0.1");
  ASSERT_EQ(p.HostPorts().size(), 1u);

  model::Pod host = PodFrom(R"(
metadata: {name: p}
spec:
  hostNetwork: true
  initContainers: [{ports: [{containerPort: 9000}]}]
  containers: [{ports: [{containerPort: 10250}]}]
)");
  EXPECT_TRUE(host.host_network);
  EXPECT_EQ(host.containers[0].ports[0].host_port, 10250);
  EXPECT_EQ(host.init_containers()[0].ports[0].host_port, 9000);
}

TEST(PodDecodeTest, Volumes) {
  model::Pod p = PodFrom(R"(
metadata: {name: trainer}
spec:
  volumes:
  - {name: shm, emptyDir: {medium: Memory}}
  - {name: scratch, emptyDir: {}}
  - {name: dev, hostPath: {path: /dev}}
  - {name: data, persistentVolumeClaim: {claimName: imagenet}}
  - name: ckpt
    ephemeral:
      volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce]}}
  - {name: cfg, configMap: {name: cfg}}
)");
  using Kind = model::Volume::Kind;
  ASSERT_EQ(p.volumes.size(), 6u);
  EXPECT_EQ(p.volumes[0].kind, Kind::kEmptyDir);
  EXPECT_TRUE(p.volumes[0].empty_dir_in_memory);
  EXPECT_EQ(p.volumes[1].kind, Kind::kEmptyDir);
  EXPECT_FALSE(p.volumes[1].empty_dir_in_memory);
  EXPECT_EQ(p.volumes[2].kind, Kind::kHostPath);
  EXPECT_EQ(p.volumes[3].kind, Kind::kPersistentVolumeClaim);
  EXPECT_EQ(p.volumes[3].claim_name, "imagenet");
  EXPECT_EQ(p.volumes[4].kind, Kind::kPersistentVolumeClaim);
  EXPECT_EQ(p.volumes[4].claim_name, "trainer-ckpt");
  EXPECT_EQ(p.volumes[5].kind, Kind::kOther);
  EXPECT_EQ(p.volumes[5].name, "cfg");
}

// A pod that has none of the usually empty parts (model::PodExtras) decodes without them; one
// part present, even empty, gives the pod its extras.
TEST(PodDecodeTest, APlainPodCarriesNoExtras) {
  model::Pod plain = PodFrom(R"(
metadata: {name: plain, namespace: default}
spec:
  schedulerName: default-scheduler
  nodeSelector: {pool: cpu}
  containers: [{name: main, resources: {requests: {cpu: 100m}}}]
  initContainers: []
  topologySpreadConstraints: []
  affinity: null
status: {phase: Pending}
)");
  EXPECT_FALSE(plain.HasExtras());
  EXPECT_EQ(plain.requests.cpu_milli(), 100);
  model::Pod with = PodFrom(R"(
metadata: {name: with, namespace: default}
spec:
  containers: [{name: main}]
  priorityClassName: batch-low
)");
  EXPECT_TRUE(with.HasExtras());
  EXPECT_EQ(with.priority_class_name(), "batch-low");
}

// spec.schedulingGates: the names, in order; a gate without a name is an error at its path.
TEST(PodDecodeTest, SchedulingGates) {
  model::Pod p = PodFrom(R"(
metadata: {name: gated, namespace: default}
spec:
  containers: [{name: main}]
  schedulingGates: [{name: kueue.x-k8s.io/admission}, {name: example.com/quota}]
)");
  EXPECT_TRUE(p.SchedulingGated());
  EXPECT_EQ(p.scheduling_gates(),
            (std::vector<std::string>{"kueue.x-k8s.io/admission", "example.com/quota"}));
  EXPECT_FALSE(PodFrom("metadata: {name: open, namespace: default}\nspec: {schedulingGates: []}")
                   .SchedulingGated());
  EXPECT_EQ(PodError(R"(
apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: default}
spec:
  schedulingGates: [{name: a}, {}]
)"),
            "Pod default/gated: spec.schedulingGates[1].name: expected a non-empty gate name, "
            "got nothing");
  EXPECT_EQ(PodError(R"(
apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: default}
spec:
  schedulingGates: [kueue]
)"),
            "Pod default/gated: spec.schedulingGates[0]: expected an object, got \"kueue\"");
}

TEST(PodDecodeTest, MetadataAndStatus) {
  model::Pod p = PodFrom(R"(
metadata:
  name: worker-0
  namespace: ml
  uid: 0f0e0d0c-0b0a-0908-0706-050403020100
  resourceVersion: "42"
  creationTimestamp: "2024-01-02T03:04:05Z"
  deletionTimestamp: "2024-01-02T04:00:00.5+01:00"
  labels: {job: bert}
  annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: "false"}
  ownerReferences:
  - {apiVersion: kubeflow.org/v1, kind: PyTorchJob, name: bert, uid: u1}
  - {apiVersion: batch/v1, kind: Job, name: bert-j, uid: u2, controller: true}
spec:
  priority: -5
  priorityClassName: batch-low
  schedulerName: volcano
status:
  phase: Succeeded
  nominatedNodeName: node-3
  startTime: "2024-01-02T03:04:06Z"
  conditions:
  - {type: PodScheduled, status: "False", reason: SchedulerError}
)");
  EXPECT_EQ(p.meta.uid, "0f0e0d0c-0b0a-0908-0706-050403020100");
  EXPECT_EQ(p.meta.resource_version, "42");
  EXPECT_EQ(p.meta.creation_timestamp, T("2024-01-02T03:04:05Z"));
  EXPECT_EQ(p.meta.deletion_timestamp, T("2024-01-02T03:00:00.500Z"));
  EXPECT_EQ(*p.meta.Annotation("cluster-autoscaler.kubernetes.io/safe-to-evict"), "false");
  ASSERT_EQ(p.meta.owner_references.size(), 2u);
  EXPECT_FALSE(p.meta.owner_references[0].controller);
  EXPECT_EQ(p.meta.owner_references[0].kind, "PyTorchJob");
  EXPECT_EQ(p.meta.Controller()->name, "bert-j");
  EXPECT_EQ(p.priority, -5);
  EXPECT_EQ(p.PriorityOrZero(), -5);
  EXPECT_EQ(p.priority_class_name(), "batch-low");
  EXPECT_EQ(p.scheduler_name, "volcano");
  EXPECT_EQ(p.phase, model::PodPhase::kSucceeded);
  EXPECT_TRUE(p.IsTerminal());
  EXPECT_EQ(p.nominated_node_name(), "node-3");
  EXPECT_EQ(p.start_time, T("2024-01-02T03:04:06Z"));
  EXPECT_FALSE(p.unschedulable_condition);  // not reason Unschedulable

  model::Pod bare = PodFrom("metadata: {name: bare}");
  EXPECT_EQ(bare.phase, model::PodPhase::kPending);
  EXPECT_FALSE(bare.priority.has_value());
  EXPECT_TRUE(bare.meta.namespace_.empty());
  EXPECT_EQ(bare.requests.pods(), 1);
}

TEST(PodDecodeTest, NullIsAbsent) {
  model::Pod p = PodFrom(R"(
metadata: {name: p, labels: null, namespace: ~}
spec:
  nodeName: null
  containers:
  - name: c
    resources: {requests: {cpu: null, memory: 1Gi}, limits: null}
  tolerations: null
status: null
)");
  EXPECT_TRUE(p.meta.labels.empty());
  EXPECT_TRUE(p.node_name.empty());
  EXPECT_EQ(p.requests.cpu_milli(), 0);
  EXPECT_EQ(p.requests.memory(), 1LL << 30);
}

// ---- nodes ---------------------------------------------------------------------------------

TEST(NodeDecodeTest, AllocatableFallsBackToCapacity) {
  model::Node n = NodeFrom(R"(
metadata: {name: n}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "2"}
)");
  EXPECT_EQ(n.allocatable, n.capacity);
  EXPECT_EQ(n.allocatable.cpu_milli(), 8000);
  EXPECT_EQ(n.allocatable.gpus(), 2);
  EXPECT_FALSE(n.ready);  // no Ready condition

  model::Node with = NodeFrom(R"(
metadata: {name: n}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: 7800m, memory: 30Gi, pods: "110"}
)");
  EXPECT_EQ(with.allocatable.cpu_milli(), 7800);
  EXPECT_EQ(with.capacity.cpu_milli(), 8000);
}

TEST(NodeDecodeTest, SpecAndConditions) {
  model::Node n = NodeFrom(R"(
metadata: {name: aks-gpu-1, labels: {kubernetes.azure.com/agentpool: gpu}}
spec:
  unschedulable: true
  providerID: azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/\
    virtualMachineScaleSets/aks-gpu-1/virtualMachines/3
  taints:
  - {key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}
  - {key: ToBeDeletedByClusterAutoscaler, value: "1700000000", effect: NoSchedule}
  - {key: node.kubernetes.io/unreachable, effect: NoExecute, timeAdded: "2024-01-01T00:00:00Z"}
status:
  conditions:
  - {type: Ready, status: "False", reason: KubeletNotReady}
)");
  EXPECT_TRUE(n.unschedulable);
  EXPECT_THAT(n.provider_id, HasSubstr("virtualMachineScaleSets/aks-gpu-1"));
  ASSERT_EQ(n.taints.size(), 3u);
  EXPECT_EQ(n.taints[1].key, "ToBeDeletedByClusterAutoscaler");
  EXPECT_EQ(n.taints[1].value, "1700000000");
  EXPECT_EQ(n.taints[2].effect, model::TaintEffect::kNoExecute);
  EXPECT_EQ(n.taints[2].value, "");
  EXPECT_FALSE(n.ready);
  EXPECT_EQ(*n.meta.Label("kubernetes.azure.com/agentpool"), "gpu");
}

// ---- PodDisruptionBudgets ------------------------------------------------------------------

TEST(PdbDecodeTest, IntAndPercent) {
  auto pdb = DecodePdb(One(R"(
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: prod}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
status:
  currentHealthy: 3
  desiredHealthy: 2
  disruptionsAllowed: 1
  expectedPods: 3
  observedGeneration: 1
)"));
  ASSERT_TRUE(pdb.has_value()) << pdb.error().message();
  ASSERT_TRUE(pdb->min_available.has_value());
  EXPECT_EQ(pdb->min_available->value, 2);
  EXPECT_FALSE(pdb->min_available->percent);
  EXPECT_FALSE(pdb->max_unavailable.has_value());
  ASSERT_TRUE(pdb->selector.has_value());
  EXPECT_EQ(pdb->selector->match_labels.at("app"), "web");
  EXPECT_EQ(pdb->disruptions_allowed, 1);
  EXPECT_EQ(pdb->current_healthy, 3);
  EXPECT_EQ(pdb->desired_healthy, 2);
  EXPECT_EQ(pdb->expected_pods, 3);

  auto percent = DecodePdb(
      One("metadata: {name: p, namespace: n}\nspec: {maxUnavailable: \"25%\", selector: {}}"));
  ASSERT_TRUE(percent.has_value()) << percent.error().message();
  ASSERT_TRUE(percent->max_unavailable.has_value());
  EXPECT_EQ(percent->max_unavailable->value, 25);
  EXPECT_TRUE(percent->max_unavailable->percent);
  ASSERT_TRUE(percent->selector.has_value());  // empty selector: every pod of the namespace
  EXPECT_TRUE(percent->selector->IsEmpty());
  EXPECT_FALSE(percent->disruptions_allowed.has_value());

  auto no_selector = DecodePdb(One("metadata: {name: p}\nspec: {minAvailable: 100%}"));
  ASSERT_TRUE(no_selector.has_value()) << no_selector.error().message();
  EXPECT_FALSE(no_selector->selector.has_value());
  EXPECT_EQ(no_selector->min_available->value, 100);
  EXPECT_TRUE(no_selector->min_available->percent);
}

TEST(PdbDecodeTest, BadIntOrPercent) {
  for (std::string_view bad : {"\"5\"", "\"abc\"", "\"150%\"", "-1", "1.5", "true"}) {
    auto pdb =
        DecodePdb(One(fmt::format("metadata: {{name: p, namespace: n}}\nspec: "
                                  "{{minAvailable: {}}}",
                                  bad)));
    ASSERT_FALSE(pdb.has_value()) << bad;
    EXPECT_THAT(pdb.error().message(),
                StartsWith("PodDisruptionBudget n/p: spec.minAvailable: expected a non-negative "
                           "integer or a percentage such as \"50%\", got "))
        << bad;
  }
}

// ---- directories ---------------------------------------------------------------------------

TEST(LoadStatePathTest, DirectoryFilesInNameOrder) {
  auto dir = std::filesystem::temp_directory_path() / "tidepool_codec_state_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "sub.yaml");  // a directory: skipped
  std::ofstream(dir / "b-pods.yaml") << "kind: Pod\napiVersion: v1\nmetadata: {name: p2}\n";
  std::ofstream(dir / "a-nodes.json")
      << R"({"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n1"}}, )"
      << R"({"kind": "Pod", "metadata": {"name": "p1"}}]})";
  std::ofstream(dir / "c.yml") << "kind: Event\nmetadata: {name: e}\n";
  std::ofstream(dir / "notes.txt") << "not: [valid";
  auto state = LoadStatePath(dir.string());
  auto one_file = LoadStatePath((dir / "b-pods.yaml").string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(state.has_value()) << state.error().message();
  ASSERT_EQ(state->nodes.size(), 1u);
  ASSERT_EQ(state->pods.size(), 2u);
  EXPECT_EQ(state->pods[0].meta.name, "p1");
  EXPECT_EQ(state->pods[1].meta.name, "p2");
  EXPECT_EQ(state->ignored.at("Event"), 1);
  ASSERT_TRUE(one_file.has_value()) << one_file.error().message();
  EXPECT_EQ(one_file->pods.size(), 1u);
}

TEST(LoadStatePathTest, EmptyDirectoryIsAnError) {
  auto dir = std::filesystem::temp_directory_path() / "tidepool_codec_empty_dir";
  std::filesystem::create_directories(dir);
  auto state = LoadStatePath(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(state.has_value());
  EXPECT_THAT(state.error().message(), HasSubstr("no state files"));
}

}  // namespace
}  // namespace tidepool::kube::codec
