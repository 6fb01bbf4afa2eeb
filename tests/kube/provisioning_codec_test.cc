// Tests of the ProvisioningRequest and PodTemplate decoders and of the condition writer
// (kube/codec/provisioning.h): Kueue's objects, every required field, and the shape of errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kube/codec/objects.h"
#include "kube/codec/provisioning.h"
#include "model/resources.h"

namespace tidepool::kube::codec {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using model::ConditionStatus;
using model::ProvisioningCondition;

Json One(std::string_view text) {
  auto docs = ParseDocuments(text, "test.yaml");
  EXPECT_TRUE(docs.has_value()) << (docs ? "" : docs.error().message());
  if (!docs || docs->size() != 1) return Json::object();
  return (*docs)[0];
}

// What Kueue v0.17 creates for a Job of 4 pods behind a best-effort-atomic admission check.
constexpr std::string_view kRequest = R"(
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata:
  name: job-train-1a2b3-prov-1
  namespace: team-a
  uid: 6f1c
  resourceVersion: "812"
  generation: 1
  creationTimestamp: "2026-11-25T10:00:00Z"
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  parameters: {noRetry: "true", ValidUntilSeconds: "600"}
  podSets:
  - podTemplateRef: {name: ppt-job-train-1a2b3-prov-1-main}
    count: 4
  - podTemplateRef: {name: ppt-job-train-1a2b3-prov-1-driver}
    count: 1
status:
  conditions:
  - {type: Accepted, status: "True", reason: Accepted, message: ok,
     lastTransitionTime: "2026-11-25T10:00:01Z"}
  - {type: SomethingElse, status: Sure, reason: X, message: "",
     lastTransitionTime: "2026-11-25T10:00:01Z"}
  - {type: Provisioned, status: "False", reason: CapacityIsNotFound, message: waiting,
     lastTransitionTime: "2026-11-25T10:00:02Z"}
)";

std::string RequestError(std::string_view yaml) {
  auto pr = DecodeProvisioningRequest(One(yaml));
  if (pr) return "<no error>";
  EXPECT_EQ(pr.error().code(), Error::Code::kInvalidArgument);
  return pr.error().message();
}

TEST(ProvisioningRequestCodecTest, DecodesKueuesRequest) {
  auto pr = DecodeProvisioningRequest(One(kRequest));
  ASSERT_TRUE(pr.has_value()) << pr.error().message();
  EXPECT_EQ(pr->Key(), "team-a/job-train-1a2b3-prov-1");
  EXPECT_EQ(pr->meta.resource_version, "812");
  EXPECT_EQ(pr->provisioning_class, model::ProvisioningClass::kBestEffortAtomic);
  ASSERT_EQ(pr->pod_sets.size(), 2u);
  EXPECT_EQ(pr->pod_sets[0].template_name, "ppt-job-train-1a2b3-prov-1-main");
  EXPECT_EQ(pr->pod_sets[0].count, 4);
  EXPECT_EQ(pr->pod_sets[1].count, 1);
  ASSERT_NE(pr->Parameter("noRetry"), nullptr);
  EXPECT_EQ(*pr->Parameter("noRetry"), "true");
  EXPECT_EQ(pr->Parameter("missing"), nullptr);
  // The unknown condition type is skipped, not an error (its status is not ours to judge).
  ASSERT_EQ(pr->conditions.size(), 2u);
  EXPECT_TRUE(pr->Is(ProvisioningCondition::kAccepted));
  EXPECT_FALSE(pr->Is(ProvisioningCondition::kProvisioned));
  ASSERT_NE(pr->Find(ProvisioningCondition::kProvisioned), nullptr);
  EXPECT_EQ(pr->Find(ProvisioningCondition::kProvisioned)->reason, "CapacityIsNotFound");
  EXPECT_EQ(pr->Find(ProvisioningCondition::kFailed), nullptr);
}

TEST(ProvisioningRequestCodecTest, ClassesTidepoolDoesNotServeAreKeptAsOther) {
  std::string yaml(kRequest);
  yaml.replace(yaml.find("best-effort-atomic-scale-up"), 27, "queued-provisioning.gke.io  ");
  auto pr = DecodeProvisioningRequest(One(yaml));
  ASSERT_TRUE(pr.has_value()) << pr.error().message();
  EXPECT_EQ(pr->provisioning_class, model::ProvisioningClass::kOther);
  EXPECT_EQ(model::ProvisioningClassOf("check-capacity.autoscaling.x-k8s.io"),
            model::ProvisioningClass::kCheckCapacity);
}

TEST(ProvisioningRequestCodecTest, MalformedRequestsSayWhatWhereAndWhatWasExpected) {
  EXPECT_EQ(RequestError(R"(
kind: ProvisioningRequest
metadata: {name: r, namespace: ns}
spec: {podSets: [{podTemplateRef: {name: t}, count: 1}]})"),
            "ProvisioningRequest ns/r: spec.provisioningClassName: expected a class name, got "
            "nothing");
  EXPECT_EQ(RequestError(R"(
kind: ProvisioningRequest
metadata: {name: r, namespace: ns}
spec: {provisioningClassName: c, podSets: []})"),
            "ProvisioningRequest ns/r: spec.podSets: expected a list of 1 to 32 pod sets, got []");
  EXPECT_EQ(RequestError(R"(
kind: ProvisioningRequest
metadata: {name: r, namespace: ns}
spec: {provisioningClassName: c, podSets: [{podTemplateRef: {name: t}, count: 0}]})"),
            "ProvisioningRequest ns/r: spec.podSets[0].count: expected an integer of at least 1, "
            "got 0");
  EXPECT_EQ(RequestError(R"(
kind: ProvisioningRequest
metadata: {name: r, namespace: ns}
spec: {provisioningClassName: c, podSets: [{podTemplateRef: {}, count: 2}]})"),
            "ProvisioningRequest ns/r: spec.podSets[0].podTemplateRef.name: expected the name of "
            "a PodTemplate, got nothing");
  EXPECT_THAT(RequestError(R"(
kind: ProvisioningRequest
metadata: {name: r, namespace: ns}
spec: {provisioningClassName: c, podSets: [{podTemplateRef: {name: t}, count: 1}]}
status: {conditions: [{type: Provisioned, status: Maybe}]})"),
              HasSubstr("status.conditions[0].status: expected one of \"True\", \"False\", "
                        "\"Unknown\", got \"Maybe\""));
  EXPECT_THAT(RequestError(R"(
kind: ProvisioningRequest
metadata: {name: r, namespace: ns}
spec: {provisioningClassName: c, parameters: {noRetry: [1]},
       podSets: [{podTemplateRef: {name: t}, count: 1}]})"),
              HasSubstr("spec.parameters"));
}

TEST(PodTemplateCodecTest, DecodesTheTemplateAsAPodOfItsNamespace) {
  auto pt = DecodePodTemplate(One(R"(
apiVersion: v1
kind: PodTemplate
metadata: {name: ppt-main, namespace: team-a}
template:
  metadata: {labels: {app: train}}
  spec:
    nodeSelector: {pool: gpu}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    containers:
    - name: c
      image: x
      resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: 2, memory: 4Gi}}
)"));
  ASSERT_TRUE(pt.has_value()) << pt.error().message();
  EXPECT_EQ(pt->meta.Key(), "team-a/ppt-main");
  EXPECT_EQ(pt->pod.meta.namespace_, "team-a");
  EXPECT_EQ(pt->pod.meta.name, "ppt-main");
  ASSERT_NE(pt->pod.meta.Label("app"), nullptr);
  EXPECT_EQ(pt->pod.node_selector.at("pool"), "gpu");
  ASSERT_EQ(pt->pod.tolerations.size(), 1u);
  // A limit without a request is the request (the API server's defaulting).
  EXPECT_EQ(pt->pod.requests.Get(model::InternResource(model::kNvidiaGpu)), 1);
  EXPECT_EQ(pt->pod.requests.Get(model::kCpu), 2000);
}

TEST(PodTemplateCodecTest, MalformedTemplatesNameTheField) {
  auto pt = DecodePodTemplate(One(R"(
kind: PodTemplate
metadata: {name: ppt, namespace: ns}
template: {spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}})"));
  ASSERT_FALSE(pt.has_value());
  EXPECT_THAT(pt.error().message(),
              HasSubstr("PodTemplate ns/ppt: template.spec.containers[0].resources.requests.cpu"));
}

TEST(PodTemplateCodecTest, ACacheKeepsAMalformedTemplateWithItsError) {
  auto pt = DecodePodTemplateOrInvalid(One(R"(
kind: PodTemplate
metadata: {name: ppt, namespace: ns}
template: {spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}})"));
  ASSERT_TRUE(pt.has_value());
  EXPECT_EQ(pt->meta.Key(), "ns/ppt");
  EXPECT_THAT(pt->error, HasSubstr("template.spec.containers[0].resources.requests.cpu"));
  auto good = DecodePodTemplateOrInvalid(One(R"(
kind: PodTemplate
metadata: {name: ppt, namespace: ns}
template: {spec: {containers: [{name: c}]}})"));
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(good->error, "");
  EXPECT_FALSE(DecodePodTemplateOrInvalid(One("kind: PodTemplate\nmetadata: {namespace: ns}\n"))
                   .has_value());
}

TEST(ProvisioningStateTest, AStateFileCarriesRequestsAndTemplates) {
  auto state = DecodeState(R"(
apiVersion: v1
kind: PodTemplate
metadata: {name: ppt, namespace: ns}
template: {spec: {containers: [{name: c}]}}
---
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: r, namespace: ns}
spec: {provisioningClassName: c, podSets: [{podTemplateRef: {name: ppt}, count: 2}]}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: ProvisioningRequest
metadata: {name: old, namespace: ns}
spec: {}
)",
                           "state.yaml");
  ASSERT_TRUE(state.has_value()) << state.error().message();
  ASSERT_EQ(state->pod_templates.size(), 1u);
  ASSERT_EQ(state->provisioning_requests.size(), 1u);
  EXPECT_EQ(state->provisioning_requests[0].Key(), "ns/r");
  EXPECT_EQ(state->ignored.at("ProvisioningRequest (autoscaling.x-k8s.io/v1beta1)"), 1);
  auto bad = DecodeState(R"(
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: r, namespace: ns}
spec: {podSets: []}
)",
                         "state.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("state.yaml: ProvisioningRequest ns/r: spec."));
}

model::Condition Cond(ProvisioningCondition type, ConditionStatus status, std::string reason) {
  return {.type = type, .status = status, .reason = std::move(reason), .message = "m"};
}

TEST(ApplyConditionTest, TransitionTimeMovesOnlyWhenTheStatusChanges) {
  Json obj = One(kRequest);
  Time t1 = *ParseRfc3339("2026-11-25T10:05:00.250Z");
  ASSERT_TRUE(ApplyCondition(
      obj, Cond(ProvisioningCondition::kProvisioned, ConditionStatus::kTrue, "CapacityIsFound"),
      t1));
  const Json& conds = obj["status"]["conditions"];
  ASSERT_EQ(conds.size(), 3u);  // replaced in place, the unknown type kept
  EXPECT_EQ(conds[2]["status"], "True");
  EXPECT_EQ(conds[2]["reason"], "CapacityIsFound");
  EXPECT_EQ(conds[2]["lastTransitionTime"], "2026-11-25T10:05:00Z");
  EXPECT_EQ(conds[2]["observedGeneration"], 1);
  EXPECT_EQ(conds[1]["type"], "SomethingElse");

  // The same condition again: nothing to write.
  EXPECT_FALSE(ApplyCondition(
      obj, Cond(ProvisioningCondition::kProvisioned, ConditionStatus::kTrue, "CapacityIsFound"),
      t1 + std::chrono::minutes(1)));
  // A new reason with the same status keeps the transition time.
  ASSERT_TRUE(ApplyCondition(
      obj, Cond(ProvisioningCondition::kProvisioned, ConditionStatus::kTrue, "Other"),
      t1 + std::chrono::minutes(2)));
  EXPECT_EQ(conds[2]["lastTransitionTime"], "2026-11-25T10:05:00Z");
  // A new type is appended with its own transition time.
  ASSERT_TRUE(ApplyCondition(
      obj, Cond(ProvisioningCondition::kBookingExpired, ConditionStatus::kTrue, "BookingExpired"),
      t1 + std::chrono::minutes(10)));
  ASSERT_EQ(conds.size(), 4u);
  EXPECT_EQ(conds[3]["type"], "BookingExpired");
  EXPECT_EQ(conds[3]["lastTransitionTime"], "2026-11-25T10:15:00Z");
}

TEST(ApplyConditionTest, AnObjectWithoutStatusGetsAConditionsList) {
  Json obj = {{"metadata", {{"name", "r"}}}, {"spec", Json::object()}};
  ASSERT_TRUE(ApplyCondition(
      obj, Cond(ProvisioningCondition::kAccepted, ConditionStatus::kTrue, "Accepted"),
      *ParseRfc3339("2026-11-25T10:00:00Z")));
  ASSERT_EQ(obj["status"]["conditions"].size(), 1u);
  EXPECT_EQ(obj["status"]["conditions"][0]["observedGeneration"], 0);
  auto back = DecodeProvisioningRequest(
      Json{{"kind", "ProvisioningRequest"},
           {"metadata", {{"name", "r"}}},
           {"spec",
            {{"provisioningClassName", "c"},
             {"podSets", {{{"podTemplateRef", {{"name", "t"}}}, {"count", 1}}}}}},
           {"status", obj["status"]}});
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_TRUE(back->Is(ProvisioningCondition::kAccepted));
}

}  // namespace
}  // namespace tidepool::kube::codec
