// Tests of the CapacityBuffer and Deployment decoders and of the status writer
// (kube/codec/capacity_buffer.h): the API's objects, what its schema refuses, and a round trip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kube/codec/capacity_buffer.h"
#include "kube/codec/objects.h"
#include "model/resources.h"

namespace tidepool::kube::codec {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using model::BufferConditionType;
using model::ConditionStatus;

Json One(std::string_view text) {
  auto docs = ParseDocuments(text, "test.yaml");
  EXPECT_TRUE(docs.has_value()) << (docs ? "" : docs.error().message());
  if (!docs || docs->size() != 1) return Json::object();
  return (*docs)[0];
}

constexpr std::string_view kBuffer = R"(
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata:
  name: gpu-room
  namespace: team-a
  uid: 9a1
  generation: 2
  creationTimestamp: "2026-11-25T10:00:00Z"
spec:
  provisioningStrategy: buffer.x-k8s.io/active-capacity
  podTemplateRef: {name: gpu-pod}
  replicas: 2
  limits: {nvidia.com/gpu: "8", cpu: 0}
status:
  podTemplateRef: {name: gpu-pod}
  replicas: 2
  podTemplateGeneration: 1
  conditions:
  - {type: ReadyForProvisioning, status: "True", reason: Resolved, message: ok,
     lastTransitionTime: "2026-11-25T10:00:01Z", observedGeneration: 2}
  - {type: SomeoneElses, status: Maybe, reason: X, message: "",
     lastTransitionTime: "2026-11-25T10:00:01Z"}
)";

std::string BufferError(std::string_view yaml) {
  auto b = DecodeCapacityBuffer(One(yaml));
  if (b) return "<no error>";
  EXPECT_EQ(b.error().code(), Error::Code::kInvalidArgument);
  return b.error().message();
}

TEST(CapacityBufferCodecTest, DecodesSpecAndStatus) {
  auto b = DecodeCapacityBuffer(One(kBuffer));
  ASSERT_TRUE(b.has_value()) << b.error().message();
  EXPECT_EQ(b->Key(), "team-a/gpu-room");
  EXPECT_EQ(b->meta.generation, 2);
  EXPECT_TRUE(b->Served());
  EXPECT_EQ(b->pod_template, "gpu-pod");
  EXPECT_FALSE(b->scalable_ref.has_value());
  EXPECT_EQ(b->replicas, 2);
  EXPECT_FALSE(b->percentage.has_value());
  ASSERT_TRUE(b->limits.has_value());
  EXPECT_EQ(b->limits->Get(model::InternResource("nvidia.com/gpu")), 8);
  EXPECT_THAT(b->limited,
              ::testing::UnorderedElementsAre(model::kCpu, model::InternResource("nvidia.com/gpu")))
      << "a limit of 0 is a limit";
  EXPECT_EQ(b->status.pod_template, "gpu-pod");
  EXPECT_EQ(b->status.replicas, 2);
  EXPECT_EQ(b->status.pod_template_generation, 1);
  ASSERT_EQ(b->status.conditions.size(), 1u) << "another controller's condition is skipped";
  EXPECT_EQ(b->status.conditions[0].type, BufferConditionType::kReadyForProvisioning);
  EXPECT_EQ(b->status.conditions[0].status, ConditionStatus::kTrue);
}

TEST(CapacityBufferCodecTest, ScalableRefAndTheDefaultStrategy) {
  auto b = DecodeCapacityBuffer(One(R"(
kind: CapacityBuffer
metadata: {name: web-room, namespace: web}
spec:
  scalableRef: {apiGroup: apps, kind: Deployment, name: web}
  percentage: 20
)"));
  ASSERT_TRUE(b.has_value()) << b.error().message();
  EXPECT_EQ(b->strategy, model::kActiveCapacityStrategy);
  ASSERT_TRUE(b->scalable_ref.has_value());
  EXPECT_EQ(b->scalable_ref->api_group, "apps");
  EXPECT_EQ(b->scalable_ref->kind, "Deployment");
  EXPECT_EQ(b->scalable_ref->name, "web");
  EXPECT_EQ(b->percentage, 20);
  EXPECT_FALSE(b->limits.has_value());
  EXPECT_TRUE(b->status.conditions.empty());
}

// The error of buffer n/b with these lines after its metadata.
std::string ErrorOf(std::string_view rest) {
  return BufferError("kind: CapacityBuffer\nmetadata: {name: b, namespace: n}\n" +
                     std::string(rest));
}

TEST(CapacityBufferCodecTest, WhatTheSchemaRefusesIsAnErrorNamingTheField) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("spec"));
  EXPECT_THAT(ErrorOf("spec: {podTemplateRef: {name: t}, scalableRef: {kind: Deployment, name: d}, "
                      "replicas: 1}"),
              HasSubstr("CapacityBuffer n/b: spec: podTemplateRef and scalableRef are both set"));
  EXPECT_THAT(ErrorOf("spec: {podTemplateRef: {name: t}}"),
              HasSubstr("podTemplateRef is set without replicas or limits"));
  EXPECT_THAT(ErrorOf("spec: {podTemplateRef: {name: \"\"}, replicas: 1}"),
              HasSubstr("spec.podTemplateRef.name"));
  EXPECT_THAT(ErrorOf("spec: {scalableRef: {name: d}}"), HasSubstr("spec.scalableRef.kind"));
  EXPECT_THAT(ErrorOf("spec: {podTemplateRef: {name: t}, replicas: -1}"),
              HasSubstr("spec.replicas: expected an integer of at least 0"));
  EXPECT_THAT(ErrorOf("spec: {scalableRef: {kind: Deployment, name: d}, percentage: ten}"),
              HasSubstr("spec.percentage"));
  EXPECT_THAT(ErrorOf("spec: {podTemplateRef: {name: t}, limits: {cpu: lots}}"),
              HasSubstr("spec.limits.cpu"));
  EXPECT_THAT(ErrorOf("spec: {podTemplateRef: {name: t}, replicas: 1}\n"
                      "status: {conditions: [{type: Provisioning, status: Perhaps}]}"),
              HasSubstr("status.conditions[0].status"));
}

TEST(CapacityBufferCodecTest, StatusRoundTripWritesOnlyWhatChanged) {
  Json obj = One(kBuffer);
  model::BufferStatus s;
  s.pod_template = "gpu-pod";
  s.replicas = 2;
  s.pod_template_generation = 4;
  s.conditions.push_back({BufferConditionType::kReadyForProvisioning, ConditionStatus::kTrue,
                          "Resolved", "2 pod(s) of PodTemplate team-a/gpu-pod: replicas 2"});
  s.conditions.push_back({BufferConditionType::kProvisioning, ConditionStatus::kTrue,
                          "FitsExistingCapacity", "room for all 2 pod(s)"});
  const Time now = *ParseRfc3339("2026-11-25T10:05:00.700Z");
  EXPECT_TRUE(ApplyBufferStatus(obj, s, now));
  EXPECT_FALSE(ApplyBufferStatus(obj, s, now + std::chrono::minutes(1))) << "nothing new";
  const Json& conditions = obj["status"]["conditions"];
  ASSERT_EQ(conditions.size(), 3u) << "the other controller's condition stays";
  EXPECT_EQ(conditions[0]["lastTransitionTime"], "2026-11-25T10:00:01Z")
      << "the status of Ready did not change: its transition time stays";
  EXPECT_EQ(conditions[2]["type"], "Provisioning");
  EXPECT_EQ(conditions[2]["lastTransitionTime"], "2026-11-25T10:05:00Z");
  EXPECT_EQ(conditions[2]["observedGeneration"], 2);

  auto back = DecodeCapacityBuffer(obj);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->status, s);

  // Unset fields are removed.
  s.replicas.reset();
  s.pod_template.clear();
  s.pod_template_generation.reset();
  EXPECT_TRUE(ApplyBufferStatus(obj, s, now));
  EXPECT_FALSE(obj["status"].contains("replicas"));
  EXPECT_FALSE(obj["status"].contains("podTemplateRef"));
  EXPECT_FALSE(obj["status"].contains("podTemplateGeneration"));
}

TEST(DeploymentCodecTest, ReplicasAndTemplate) {
  auto d = DecodeDeployment(One(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer, namespace: ml}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers:
      - name: main
        resources: {requests: {cpu: "2", nvidia.com/gpu: "1"}}
)"));
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->replicas, 3);
  EXPECT_EQ(d->pod.meta.namespace_, "ml");
  EXPECT_EQ(d->pod.requests.Get(model::InternResource("nvidia.com/gpu")), 1);
  EXPECT_EQ(d->pod.requests.cpu_milli(), 2000);

  auto one = DecodeDeployment(One("kind: Deployment\nmetadata: {name: d, namespace: n}\n"));
  ASSERT_TRUE(one.has_value()) << one.error().message();
  EXPECT_EQ(one->replicas, 1) << "the API's default";

  auto bad = DecodeDeploymentOrInvalid(One(R"(
kind: Deployment
metadata: {name: d, namespace: n}
spec: {replicas: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: x}}}]}}}
)"));
  ASSERT_TRUE(bad.has_value());
  EXPECT_THAT(bad->error, HasSubstr("spec.template.spec.containers[0].resources.requests.cpu"));
}

}  // namespace
}  // namespace tidepool::kube::codec
