// Tests of the DynamicResources filter (sched/dra/dra_state.h through FitChecker and
// ClusterSnapshot): node-local slices, ExactCount and All, firstAvailable, matchAttribute,
// claims allocated in the cluster, shared claims, per-pod claims from templates, partitionable
// devices, template nodes, the words of each failure, and fork/revert of allocations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <string>

#include "kube/codec/objects.h"
#include "sched/dra/dra_state.h"
#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::sched {
namespace {

using ::testing::HasSubstr;

// Two nodes with two GPUs each: on n1 on different PCIe roots, on n2 on one; n3 has none.
constexpr std::string_view kWorld = R"yaml(
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {kubernetes.io/hostname: n3}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: device.driver == 'gpu.example.com'}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: bad.example.com}
spec:
  selectors: [{cel: {expression: "device.attributes.exists(a, true)"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec:
  driver: gpu.example.com
  pool: {name: n1}
  nodeName: n1
  devices:
  - name: gpu-0
    attributes: {productName: {string: A100}, pcieRoot: {string: a}}
    capacity: {memory: {value: 80Gi}}
  - name: gpu-1
    attributes: {productName: {string: A100}, pcieRoot: {string: b}}
    capacity: {memory: {value: 80Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-gpus}
spec:
  driver: gpu.example.com
  pool: {name: n2}
  nodeName: n2
  devices:
  - name: gpu-0
    attributes: {productName: {string: T4}, pcieRoot: {string: a}}
    capacity: {memory: {value: 16Gi}}
  - name: gpu-1
    attributes: {productName: {string: T4}, pcieRoot: {string: a}}
    capacity: {memory: {value: 16Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: big-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          selectors:
          - cel: {expression: 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: pair, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpus, exactly: {deviceClassName: gpu.example.com, count: 2}}]
      constraints: [{matchAttribute: gpu.example.com/pcieRoot}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: all, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpus, exactly: {deviceClassName: gpu.example.com, allocationMode: All}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: h100-or-any, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - name: h100
          deviceClassName: gpu.example.com
          selectors:
          - cel: {expression: 'device.attributes["gpu.example.com"].productName == "H100"'}
        - {name: any, deviceClassName: gpu.example.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: bad, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: bad.example.com}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared, namespace: ml}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
)yaml";

class DraTest : public ::testing::Test {
 protected:
  void SetUp() override { Load(""); }

  void Load(std::string_view extra) {
    auto state = kube::codec::DecodeState(std::string(kWorld) + std::string(extra), "world.yaml");
    ASSERT_TRUE(state.has_value()) << state.error().message();
    state_ = std::move(*state);
    dra_ = std::make_unique<DraState>(state_.dra);
    snap_ = std::make_unique<ClusterSnapshot>();
    snap_->AttachDra(dra_.get());
    for (const auto& n : state_.nodes) ASSERT_TRUE(snap_->AddNode(&n).has_value());
  }

  // A pod in ml with one claim entry: a template name, or "claim:<name>" for a named claim.
  const model::Pod& Pod(std::string name, std::string claim) {
    model::Pod& p = pods_.emplace_back();
    p.meta.name = std::move(name);
    p.meta.namespace_ = "ml";
    model::PodResourceClaim rc{.name = "gpu"};
    if (claim.starts_with("claim:")) {
      rc.claim_name = claim.substr(6);
    } else {
      rc.template_name = claim;
    }
    p.mutable_resource_claims().push_back(rc);
    p.Finalize();
    return p;
  }

  NodeIndex N(std::string_view name) { return snap_->FindNode(name); }
  FitResult Check(const model::Pod& p, std::string_view node) {
    return FitChecker(p, *snap_).Check(N(node));
  }
  bool FitsOn(const model::Pod& p, std::string_view node) { return Check(p, node).fits(); }
  void Place(const model::Pod& p, std::string_view node) {
    ASSERT_TRUE(snap_->AddPod(&p, N(node)).has_value());
  }

  kube::codec::ClusterState state_;
  std::unique_ptr<DraState> dra_;
  std::unique_ptr<ClusterSnapshot> snap_;
  std::deque<model::Pod> pods_;
};

TEST_F(DraTest, PerPodClaimsTakeDevicesUntilNoneAreFree) {
  const model::Pod& a = Pod("a", "one-gpu");
  const model::Pod& b = Pod("b", "one-gpu");
  const model::Pod& c = Pod("c", "one-gpu");
  EXPECT_TRUE(FitsOn(a, "n1"));
  Place(a, "n1");
  EXPECT_TRUE(FitsOn(b, "n1"));
  Place(b, "n1");
  FitResult r = Check(c, "n1");
  EXPECT_EQ(r.code, FitCode::kDynamicResources);
  EXPECT_FALSE(r.unresolvable());
  EXPECT_EQ(r.reason,
            "cannot allocate all claims: claim gpu (template one-gpu): request \"gpu\": needs 1 "
            "device, 2 match, 0 free");
  EXPECT_TRUE(FitsOn(c, "n2"));
  FitResult none = Check(c, "n3");
  EXPECT_THAT(none.reason, HasSubstr("the node has no devices"));
  EXPECT_EQ(dra_->UseOf(state_.nodes[0]).allocated, 2);
  EXPECT_EQ(dra_->UseOf(state_.nodes[0]).devices, 2);
}

TEST_F(DraTest, RevertFreesTheDevicesAPlacementTook) {
  const model::Pod& a = Pod("a", "one-gpu");
  const model::Pod& b = Pod("b", "one-gpu");
  const model::Pod& c = Pod("c", "one-gpu");
  snap_->Fork();
  Place(a, "n1");
  Place(b, "n1");
  EXPECT_FALSE(FitsOn(c, "n1"));
  snap_->Revert();
  EXPECT_TRUE(FitsOn(c, "n1"));
  EXPECT_EQ(dra_->UseOf(state_.nodes[0]).allocated, 0);
  snap_->Fork();
  Place(a, "n1");
  snap_->Commit();
  EXPECT_EQ(dra_->UseOf(state_.nodes[0]).allocated, 1);
}

TEST_F(DraTest, SelectorNamesWhatNoDeviceSatisfies) {
  const model::Pod& p = Pod("p", "big-gpu");
  EXPECT_TRUE(FitsOn(p, "n1"));
  FitResult r = Check(p, "n2");
  EXPECT_EQ(r.reason,
            "cannot allocate all claims: claim gpu (template big-gpu): request \"gpu\": no device "
            "matches selector device.capacity[\"gpu.example.com\"].memory.compareTo("
            "quantity(\"40Gi\")) >= 0");
}

TEST_F(DraTest, MatchAttributeNeedsDevicesSharingTheValue) {
  const model::Pod& p = Pod("p", "pair");
  EXPECT_TRUE(FitsOn(p, "n2"));
  FitResult r = Check(p, "n1");
  EXPECT_THAT(r.reason, HasSubstr("claim gpu (template pair): no free devices that share the "
                                  "attribute gpu.example.com/pcieRoot"));
}

TEST_F(DraTest, AllModeTakesEveryMatchingDeviceAndNeedsThemFree) {
  const model::Pod& all = Pod("all", "all");
  const model::Pod& one = Pod("one", "one-gpu");
  EXPECT_TRUE(FitsOn(all, "n1"));
  Place(one, "n1");
  EXPECT_THAT(Check(all, "n1").reason, HasSubstr("needs all 2 devices matching, 2 match, 1 free"));
  Place(all, "n2");
  EXPECT_EQ(dra_->UseOf(state_.nodes[1]).allocated, 2);
}

TEST_F(DraTest, FirstAvailableFallsThroughToTheNextAlternative) {
  const model::Pod& p = Pod("p", "h100-or-any");
  EXPECT_TRUE(FitsOn(p, "n1"));
  Place(p, "n1");
  EXPECT_EQ(dra_->UseOf(state_.nodes[0]).allocated, 1);
  // Another pod of the same template gets a claim of its own.
  EXPECT_TRUE(FitsOn(Pod("p2", "h100-or-any"), "n1"));
  FitResult r = Check(Pod("q", "h100-or-any"), "n3");
  EXPECT_THAT(r.reason, HasSubstr("no devices"));
}

TEST_F(DraTest, UnsupportedSelectorOrMissingObjectsFitNowhere) {
  FitResult bad = Check(Pod("p", "bad"), "n1");
  EXPECT_TRUE(bad.unresolvable());
  EXPECT_THAT(bad.reason,
              HasSubstr("claim gpu (template bad): request \"gpu\" (device class "
                        "\"bad.example.com\"): CEL expression \"device.attributes.exists(a, "
                        "true)\" at position 18: unsupported function \"exists\""));
  FitResult missing = Check(Pod("q", "nope"), "n1");
  EXPECT_TRUE(missing.unresolvable());
  EXPECT_THAT(missing.reason, HasSubstr("resourceclaimtemplate \"ml/nope\" not found"));
  EXPECT_THAT(Check(Pod("r", "claim:gone"), "n1").reason,
              HasSubstr("resourceclaim \"ml/gone\" not found"));
}

TEST_F(DraTest, SharedClaimPinsItsUsersToTheNodeItWasAllocatedOn) {
  const model::Pod& a = Pod("a", "claim:shared");
  const model::Pod& b = Pod("b", "claim:shared");
  Place(a, "n2");
  EXPECT_TRUE(FitsOn(b, "n2"));
  EXPECT_THAT(Check(b, "n1").reason, HasSubstr("claim ml/shared: allocated on another node"));
  Place(b, "n2");
  EXPECT_EQ(dra_->UseOf(state_.nodes[1]).allocated, 1);  // one device, two users
  // Both users leave: the claim is deallocated, and may go elsewhere.
  ASSERT_TRUE(snap_->RemovePod(&a, N("n2")).has_value());
  EXPECT_FALSE(FitsOn(a, "n1"));
  ASSERT_TRUE(snap_->RemovePod(&b, N("n2")).has_value());
  EXPECT_TRUE(FitsOn(a, "n1"));
  EXPECT_EQ(dra_->UseOf(state_.nodes[1]).allocated, 0);
}

TEST_F(DraTest, ClaimsAllocatedInTheClusterHoldTheirDevices) {
  Load(R"(
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: taken, namespace: ml}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
status:
  allocation:
    devices:
      results: [{request: gpu, driver: gpu.example.com, pool: n1, device: gpu-0}]
    nodeSelector:
      nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]
)");
  EXPECT_EQ(dra_->UseOf(state_.nodes[0]).allocated, 1);
  const model::Pod& user = Pod("user", "claim:taken");
  EXPECT_TRUE(FitsOn(user, "n1"));
  EXPECT_FALSE(FitsOn(user, "n2"));
  const model::Pod& pair = Pod("pair", "all");
  EXPECT_FALSE(FitsOn(pair, "n1"));
  EXPECT_EQ(dra_->ForeignClaimsOn(state_.nodes[0], {}), std::vector<std::string>{"ml/taken"});
  EXPECT_TRUE(dra_->ForeignClaimsOn(state_.nodes[0], {&user}).empty());
}

TEST_F(DraTest, PartitionsOfOneDeviceExcludeEachOtherThroughSharedCounters) {
  Load(R"(
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n3-mig}
spec:
  driver: gpu.example.com
  pool: {name: n3}
  nodeName: n3
  sharedCounters: [{name: gpu-0, counters: {memory: {value: 80Gi}}}]
  devices:
  - name: gpu-0-full
    attributes: {productName: {string: A100}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 80Gi}}}]
  - name: gpu-0-mig-a
    attributes: {productName: {string: A100-MIG}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]
  - name: gpu-0-mig-b
    attributes: {productName: {string: A100-MIG}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpus, exactly: {deviceClassName: gpu.example.com, count: 2}}]
)");
  const model::Pod& a = Pod("a", "one-gpu");
  const model::Pod& b = Pod("b", "one-gpu");
  Place(a, "n3");  // the first device in slice order: the whole GPU
  EXPECT_EQ(dra_->UseOf(state_.nodes[2]).allocated, 1);
  EXPECT_FALSE(FitsOn(b, "n3"));
  snap_->Fork();
  ASSERT_TRUE(snap_->RemovePod(&a, N("n3")).has_value());
  EXPECT_TRUE(FitsOn(b, "n3"));
  snap_->Revert();
  EXPECT_FALSE(FitsOn(b, "n3"));
  // Two devices: the whole GPU first, then no partition fits beside it; the search backtracks to
  // the two partitions (40Gi + 40Gi of 80Gi).
  const model::Pod& two = Pod("two", "two");
  ASSERT_TRUE(snap_->RemovePod(&a, N("n3")).has_value());
  EXPECT_TRUE(FitsOn(two, "n3"));
  Place(two, "n3");
  EXPECT_EQ(dra_->UseOf(state_.nodes[2]).allocated, 2);
  EXPECT_FALSE(FitsOn(b, "n3"));
}

TEST_F(DraTest, TemplateNodesHaveDevicesOfTheirOwn) {
  model::ResourceSlice slice;
  slice.driver = "gpu.example.com";
  slice.pool = "template";
  slice.node_name = "template";
  for (std::string name : {"gpu-0", "gpu-1"}) {
    model::Device d;
    d.name = name;
    d.attributes["gpu.example.com/pcieRoot"] = {.kind = model::DeviceAttribute::Kind::kString,
                                                .text = "x"};
    slice.devices.push_back(d);
  }
  std::vector<model::ResourceSlice> slices{slice};
  model::Node t1 = state_.nodes[2];
  t1.meta.name = "new-1";
  model::Node t2 = t1;
  t2.meta.name = "new-2";
  dra_->AddTemplateNode(&t1, &slices);
  dra_->AddTemplateNode(&t2, &slices);
  ASSERT_TRUE(snap_->AddNode(&t1).has_value());
  ASSERT_TRUE(snap_->AddNode(&t2).has_value());
  const model::Pod& p = Pod("p", "pair");
  const model::Pod& q = Pod("q", "pair");
  FitChecker checker(p, *snap_);
  EXPECT_TRUE(checker.CheckTemplate(t1, {}, 0).fits());
  Place(p, "new-1");
  EXPECT_FALSE(FitsOn(q, "new-1"));
  EXPECT_TRUE(FitsOn(q, "new-2"));
}

TEST_F(DraTest, RemovingANodeReleasesItsPodsClaims) {
  const model::Pod& a = Pod("a", "claim:shared");
  const model::Pod& b = Pod("b", "claim:shared");
  Place(a, "n1");
  EXPECT_FALSE(FitsOn(b, "n2"));
  snap_->Fork();
  ASSERT_TRUE(snap_->RemoveNode("n1").has_value());
  EXPECT_TRUE(FitsOn(b, "n2"));
  snap_->Revert();
  EXPECT_FALSE(FitsOn(b, "n2"));
  EXPECT_EQ(dra_->UseOf(state_.nodes[0]).allocated, 1);
}

TEST(DraWithoutStateTest, PodsWithClaimsFitNowhere) {
  model::Node n;
  n.meta.name = "n";
  n.allocatable.Set(model::kPods, 10);
  ClusterSnapshot snap;
  ASSERT_TRUE(snap.AddNode(&n).has_value());
  model::Pod p;
  p.meta.name = "p";
  p.mutable_resource_claims().push_back({.name = "gpu", .template_name = "t"});
  p.Finalize();
  FitResult r = FitChecker(p, snap).Check(0);
  EXPECT_EQ(r.code, FitCode::kDynamicResources);
  EXPECT_THAT(r.reason, HasSubstr("no devices are known"));
}

}  // namespace
}  // namespace tidepool::sched
