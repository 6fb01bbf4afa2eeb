// Tests of the resource.k8s.io/v1 decoders (kube/codec/dra.h) and of DRA objects in state files:
// every field the model holds, the defaults, and errors that name the object and the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "kube/codec/dra.h"
#include "kube/codec/objects.h"

namespace tidepool::kube::codec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;
using model::DeviceAttribute;

Json One(std::string_view text) {
  auto docs = ParseDocuments(text, "test.yaml");
  EXPECT_TRUE(docs.has_value()) << (docs ? "" : docs.error().message());
  if (!docs || docs->size() != 1) return Json::object();
  return (*docs)[0];
}

template <typename T>
std::string ErrorOf(const Result<T>& r) {
  return r ? "<no error>" : r.error().message();
}

constexpr std::string_view kSlice = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-0-slice}
spec:
  driver: gpu.nvidia.com
  pool: {name: gpu-0, generation: 3, resourceSliceCount: 1}
  nodeName: gpu-0
  sharedCounters:
  - name: gpu-0-counters
    counters: {memory: {value: 80Gi}}
  devices:
  - name: gpu-0
    attributes:
      productName: {string: NVIDIA A100-SXM4-80GB}
      index: {int: 0}
      driverVersion: {version: 550.54.15}
      example.com/pcieRoot: {string: pci0000:00}
      mig: {bool: false}
    capacity:
      memory: {value: 80Gi}
  - name: gpu-0-mig-1g
    consumesCounters:
    - counterSet: gpu-0-counters
      counters: {memory: {value: 10Gi}}
)";

TEST(DraCodecTest, SliceWithQualifiedNamesAndCounters) {
  auto s = DecodeResourceSlice(One(kSlice));
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->driver, "gpu.nvidia.com");
  EXPECT_EQ(s->pool, "gpu-0");
  EXPECT_EQ(s->pool_generation, 3);
  EXPECT_EQ(s->node_name, "gpu-0");
  ASSERT_EQ(s->devices.size(), 2u);
  const auto& attrs = s->devices[0].attributes;
  EXPECT_EQ(attrs.at("gpu.nvidia.com/productName").text, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(attrs.at("gpu.nvidia.com/index").kind, DeviceAttribute::Kind::kInt);
  EXPECT_EQ(attrs.at("gpu.nvidia.com/driverVersion").kind, DeviceAttribute::Kind::kVersion);
  EXPECT_EQ(attrs.at("example.com/pcieRoot").text, "pci0000:00");
  EXPECT_FALSE(attrs.at("gpu.nvidia.com/mig").bool_value);
  EXPECT_EQ(s->devices[0].capacity.at("gpu.nvidia.com/memory"), *model::Quantity::Parse("80Gi"));
  ASSERT_EQ(s->shared_counters.size(), 1u);
  EXPECT_EQ(s->shared_counters[0].counters.at("memory"), *model::Quantity::Parse("80Gi"));
  ASSERT_EQ(s->devices[1].consumes_counters.size(), 1u);
  EXPECT_EQ(s->devices[1].consumes_counters[0].counter_set, "gpu-0-counters");
  EXPECT_TRUE(s->AvailableOn({}, "gpu-0"));
  EXPECT_FALSE(s->AvailableOn({}, "gpu-1"));
}

TEST(DraCodecTest, SliceNodeSelectorAndAllNodes) {
  auto sel = DecodeResourceSlice(One(R"(
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d.example.com
  pool: {name: p}
  nodeSelector:
    nodeSelectorTerms: [{matchExpressions: [{key: rack, operator: In, values: [r1]}]}]
)"));
  ASSERT_TRUE(sel.has_value()) << sel.error().message();
  EXPECT_TRUE(sel->AvailableOn({{"rack", "r1"}}, "n"));
  EXPECT_FALSE(sel->AvailableOn({{"rack", "r2"}}, "n"));
  auto all = DecodeResourceSlice(
      One("kind: ResourceSlice\nmetadata: {name: s}\nspec: {driver: d, pool: {name: p}, "
          "allNodes: true}\n"));
  ASSERT_TRUE(all.has_value());
  EXPECT_TRUE(all->AvailableOn({}, "any"));
}

TEST(DraCodecTest, SliceErrorsNameObjectAndField) {
  EXPECT_THAT(ErrorOf(DecodeResourceSlice(
                  One("kind: ResourceSlice\nmetadata: {name: s}\nspec: {driver: d, pool: {name: "
                      "p}}\n"))),
              HasSubstr("ResourceSlice s: spec: expected exactly one of nodeName, nodeSelector "
                        "and allNodes"));
  EXPECT_THAT(ErrorOf(DecodeResourceSlice(One(R"(
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  pool: {name: p}
  allNodes: true
  devices: [{name: x, attributes: {a: {int: 1, string: two}}}]
)"))),
              HasSubstr("ResourceSlice s: spec.devices[0].attributes.a: expected exactly one of "
                        "int, bool, string and version"));
  EXPECT_THAT(ErrorOf(DecodeResourceSlice(One(R"(
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  pool: {name: p}
  allNodes: true
  devices: [{name: x, capacity: {memory: {value: lots}}}]
)"))),
              HasSubstr("spec.devices[0].capacity.memory.value: expected a quantity"));
}

TEST(DraCodecTest, ClaimWithRequestsConstraintsAllocation) {
  auto c = DecodeResourceClaim(One(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pair, namespace: ml}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.example.com
        count: 2
        selectors:
        - cel: {expression: 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'}
    - name: nic
      firstAvailable:
      - {name: fast, deviceClassName: nic.example.com, allocationMode: All}
      - {name: slow, deviceClassName: nic-slow.example.com}
    constraints:
    - requests: [gpus]
      matchAttribute: gpu.example.com/pcieRoot
status:
  allocation:
    devices:
      results:
      - {request: gpus, driver: gpu.example.com, pool: n1, device: gpu-0}
    nodeSelector:
      nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]
  reservedFor: [{resource: pods, name: trainer-0, uid: u1}]
)"));
  ASSERT_TRUE(c.has_value()) << c.error().message();
  ASSERT_EQ(c->spec.requests.size(), 2u);
  const auto& gpus = c->spec.requests[0];
  ASSERT_TRUE(gpus.exactly.has_value());
  EXPECT_EQ(gpus.exactly->device_class_name, "gpu.example.com");
  EXPECT_EQ(gpus.exactly->count, 2);
  EXPECT_EQ(gpus.exactly->selectors.size(), 1u);
  const auto& nic = c->spec.requests[1];
  EXPECT_FALSE(nic.exactly.has_value());
  ASSERT_EQ(nic.first_available.size(), 2u);
  EXPECT_EQ(nic.first_available[0].mode, model::AllocationMode::kAll);
  EXPECT_EQ(nic.first_available[1].count, 1);
  ASSERT_EQ(c->spec.constraints.size(), 1u);
  EXPECT_EQ(c->spec.constraints[0].match_attribute, "gpu.example.com/pcieRoot");
  EXPECT_THAT(c->spec.constraints[0].requests, ElementsAre("gpus"));
  ASSERT_TRUE(c->allocation.has_value());
  EXPECT_EQ(c->allocation->devices[0].device, "gpu-0");
  ASSERT_TRUE(c->allocation->node_selector.has_value());
  EXPECT_TRUE(c->allocation->node_selector->Matches({}, "n1"));
  ASSERT_EQ(c->reserved_for.size(), 1u);
  EXPECT_EQ(c->reserved_for[0].name, "trainer-0");
}

TEST(DraCodecTest, ClaimErrors) {
  EXPECT_THAT(
      ErrorOf(DecodeResourceClaim(
          One("kind: ResourceClaim\nmetadata: {name: c, namespace: ns}\nspec: {devices: {requests: "
              "[{name: r}]}}\n"))),
      HasSubstr("ResourceClaim ns/c: spec.devices.requests[0]: expected exactly one of exactly "
                "and firstAvailable"));
  EXPECT_THAT(
      ErrorOf(DecodeResourceClaim(
          One("kind: ResourceClaim\nmetadata: {name: c, namespace: ns}\nspec: {devices: {requests: "
              "[{name: r, exactly: {deviceClassName: g, allocationMode: Some}}]}}\n"))),
      HasSubstr("spec.devices.requests[0].exactly.allocationMode: expected one of"));
  EXPECT_THAT(
      ErrorOf(DecodeResourceClaim(
          One("kind: ResourceClaim\nmetadata: {name: c, namespace: ns}\nspec: {devices: {requests: "
              "[{name: r, exactly: {deviceClassName: g, count: 0}}]}}\n"))),
      HasSubstr("spec.devices.requests[0].exactly.count: expected a count of at least 1"));
  EXPECT_THAT(
      ErrorOf(DecodeResourceClaim(
          One("kind: ResourceClaim\nmetadata: {name: c, namespace: ns}\nspec: {devices: {requests: "
              "[{name: r, exactly: {selectors: []}}]}}\n"))),
      HasSubstr("spec.devices.requests[0].exactly.deviceClassName: expected the name of a "
                "DeviceClass"));
}

TEST(DraCodecTest, TemplateAndClass) {
  auto t = DecodeResourceClaimTemplate(One(R"(
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
)"));
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->spec.requests.size(), 1u);
  EXPECT_EQ(t->spec.requests[0].exactly->count, 1);
  auto dc = DecodeDeviceClass(One(R"(
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: device.driver == "gpu.example.com"}}]
)"));
  ASSERT_TRUE(dc.has_value()) << dc.error().message();
  EXPECT_THAT(dc->selectors, ElementsAre("device.driver == \"gpu.example.com\""));
  EXPECT_THAT(ErrorOf(DecodeDeviceClass(
                  One("kind: DeviceClass\nmetadata: {name: g}\nspec: {selectors: [{cel: {}}]}\n"))),
              HasSubstr("DeviceClass g: spec.selectors[0].cel.expression: expected a CEL "
                        "expression"));
}

TEST(DraCodecTest, PodResourceClaimsAndStatuses) {
  auto pod = DecodePod(One(R"(
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers: [{name: c, resources: {claims: [{name: gpu}]}}]
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: one-gpu}
  - {name: shared, resourceClaimName: pair}
status:
  resourceClaimStatuses: [{name: gpu, resourceClaimName: p-gpu-x7k2q}]
)"));
  ASSERT_TRUE(pod.has_value()) << pod.error().message();
  ASSERT_EQ(pod->resource_claims().size(), 2u);
  EXPECT_EQ(pod->resource_claims()[0].template_name, "one-gpu");
  EXPECT_EQ(pod->resource_claims()[1].claim_name, "pair");
  ASSERT_EQ(pod->resource_claim_statuses().size(), 1u);
  EXPECT_EQ(pod->resource_claim_statuses()[0].claim_name, "p-gpu-x7k2q");
  EXPECT_THAT(
      ErrorOf(DecodePod(One("kind: Pod\nmetadata: {name: p}\nspec: {resourceClaims: [{name: g, "
                            "resourceClaimName: a, resourceClaimTemplateName: b}]}\n"))),
      HasSubstr("Pod p: spec.resourceClaims[0]: expected exactly one of "
                "resourceClaimName and resourceClaimTemplateName"));
}

TEST(DraCodecTest, StateReadsDraKinds) {
  std::string text = std::string(kSlice) + R"(
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
---
apiVersion: resource.k8s.io/v1beta1
kind: DeviceClass
metadata: {name: old}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: t, namespace: ml}
spec: {spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.example.com}}]}}}
)";
  auto state = DecodeState(text, "state.yaml");
  ASSERT_TRUE(state.has_value()) << state.error().message();
  EXPECT_EQ(state->dra.slices.size(), 1u);
  EXPECT_EQ(state->dra.device_classes.size(), 1u);
  EXPECT_EQ(state->dra.claim_templates.size(), 1u);
  EXPECT_EQ(state->ignored.at("DeviceClass (resource.k8s.io/v1beta1)"), 1);
  auto bad = DecodeState(
      "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {}\n",
      "state.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(),
              HasSubstr("state.yaml: ResourceSlice s: spec.driver: expected a driver name"));
}

}  // namespace
}  // namespace tidepool::kube::codec
