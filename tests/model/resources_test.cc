#include "model/resources.h"

#include <gtest/gtest.h>

#include "model/pod.h"

namespace tidepool::model {
namespace {

Quantity Q(std::string_view s) { return *Quantity::Parse(s); }

TEST(Resources, InternsWellKnownAndExtendedNames) {
  EXPECT_EQ(InternResource("cpu"), kCpu);
  EXPECT_EQ(InternResource("memory"), kMemory);
  EXPECT_EQ(InternResource("pods"), kPods);
  ResourceId gpu = InternResource("nvidia.com/gpu");
  EXPECT_EQ(InternResource("nvidia.com/gpu"), gpu);
  EXPECT_EQ(gpu, kNvidiaGpuId);  // stored inline
  EXPECT_GE(InternResource("amd.com/gpu"), kNumBaseResources);
  EXPECT_EQ(ResourceName(gpu), "nvidia.com/gpu");
  EXPECT_TRUE(IsGpuResource(gpu));
  EXPECT_TRUE(IsGpuResource(InternResource("amd.com/gpu")));
  EXPECT_FALSE(IsGpuResource(InternResource("hugepages-2Mi")));
  EXPECT_FALSE(IsGpuResource(kCpu));
}

TEST(Resources, ArithmeticAndMax) {
  ResourceId gpu = InternResource("nvidia.com/gpu");
  Resources a, b;
  a.SetQuantity(kCpu, Q("1.5"));
  a.SetQuantity(kMemory, Q("1Gi"));
  b.SetQuantity(kCpu, Q("500m"));
  b.Set(gpu, 2);
  Resources sum = a + b;
  EXPECT_EQ(sum.cpu_milli(), 2000);
  EXPECT_EQ(sum.memory(), int64_t{1} << 30);
  EXPECT_EQ(sum.Get(gpu), 2);
  EXPECT_EQ(sum.gpus(), 2);
  Resources diff = sum - b;
  EXPECT_EQ(diff, a);  // a zero GPU entry left behind still compares equal
  Resources m = a;
  m.MaxWith(b);
  EXPECT_EQ(m.cpu_milli(), 1500);
  EXPECT_EQ(m.Get(gpu), 2);
  EXPECT_TRUE(Resources().IsZero());
  EXPECT_FALSE(m.IsZero());
}

TEST(Resources, ToStringUsesKubernetesQuantities) {
  Resources r;
  r.SetQuantity(kCpu, Q("1.5"));
  r.SetQuantity(kMemory, Q("4Gi"));
  r.Set(InternResource("nvidia.com/gpu"), 1);
  EXPECT_EQ(r.ToString(), "{cpu: 1500m, memory: 4Gi, nvidia.com/gpu: 1}");
}

Container C(std::string_view cpu, std::string_view mem, bool restartable = false) {
  Container c;
  c.requests.SetQuantity(kCpu, Q(cpu));
  c.requests.SetQuantity(kMemory, Q(mem));
  c.restartable = restartable;
  return c;
}

TEST(EffectiveRequests, SumOfContainersAndOnePodSlot) {
  Pod p;
  p.containers = {C("100m", "100Mi"), C("200m", "50Mi")};
  Resources r = EffectiveRequests(p);
  EXPECT_EQ(r.cpu_milli(), 300);
  EXPECT_EQ(r.memory(), 150 << 20);
  EXPECT_EQ(r.pods(), 1);
}

TEST(EffectiveRequests, NoRequestsStillTakesAPodSlot) {
  Pod p;
  p.containers.resize(2);
  Resources r = EffectiveRequests(p);
  EXPECT_EQ(r.cpu_milli(), 0);
  EXPECT_EQ(r.pods(), 1);
}

TEST(EffectiveRequests, InitContainerLargerThanApp) {
  Pod p;
  p.containers = {C("100m", "100Mi")};
  p.mutable_init_containers() = {C("2", "50Mi"), C("500m", "1Gi")};
  Resources r = EffectiveRequests(p);
  EXPECT_EQ(r.cpu_milli(), 2000);           // the first init container's cpu
  EXPECT_EQ(r.memory(), int64_t{1} << 30);  // the second init container's memory
}

TEST(EffectiveRequests, SidecarsAddToAppsAndToLaterInits) {
  Pod p;
  p.containers = {C("1", "1Gi")};
  // A sidecar, then a regular init container that runs next to it.
  p.mutable_init_containers() = {C("500m", "100Mi", /*restartable=*/true), C("2", "100Mi")};
  Resources r = EffectiveRequests(p);
  // Apps + sidecar = 1.5 cpu; init peak = 2 + 0.5 = 2.5 cpu.
  EXPECT_EQ(r.cpu_milli(), 2500);
  EXPECT_EQ(r.memory(), (int64_t{1} << 30) + (100 << 20));
}

TEST(EffectiveRequests, InitBeforeSidecarDoesNotCountIt) {
  Pod p;
  p.containers = {C("1", "1Gi")};
  p.mutable_init_containers() = {C("1200m", "100Mi"), C("500m", "100Mi", /*restartable=*/true)};
  Resources r = EffectiveRequests(p);
  EXPECT_EQ(r.cpu_milli(), 1500);  // apps + sidecar beats the lone 1.2 cpu init container
}

TEST(EffectiveRequests, OverheadIsAdded) {
  Pod p;
  p.containers = {C("1", "1Gi")};
  p.mutable_overhead().SetQuantity(kCpu, Q("250m"));
  EXPECT_EQ(EffectiveRequests(p).cpu_milli(), 1250);
}

}  // namespace
}  // namespace tidepool::model
