// The clusterapi provider's pure parts: node groups and Machines read from v1beta2 and v1beta1
// JSON, the scale-from-zero template from annotations and the infrastructure's status, node groups
// into pools, and the settings. The provider against a real Cluster API:
// tests/e2e/clusterapi_test.sh.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cloud/clusterapi/discovery.h"
#include "cloud/clusterapi/machine.h"
#include "cloud/clusterapi/node_group.h"
#include "cloud/clusterapi/node_template.h"
#include "cloud/clusterapi/settings.h"
#include "model/resources.h"

namespace tidepool::cloud::clusterapi {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const model::ResourceId kGpu = model::InternResource("nvidia.com/gpu");

json Md(std::string name, json annotations, int replicas = 0) {
  return json{{"apiVersion", "cluster.x-k8s.io/v1beta2"},
              {"kind", "MachineDeployment"},
              {"metadata",
               {{"name", std::move(name)},
                {"namespace", "ml"},
                {"uid", "u-1"},
                {"annotations", std::move(annotations)}}},
              {"spec",
               {{"clusterName", "prod"},
                {"replicas", replicas},
                {"template",
                 {{"spec",
                   {{"infrastructureRef",
                     {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                      {"kind", "AWSMachineTemplate"},
                      {"name", "gpu-template"}}}}}}}}}};
}

json Sized(int min, int max, json more = json::object()) {
  more[std::string(kMinSizeAnnotation)] = std::to_string(min);
  more[std::string(kMaxSizeAnnotation)] = std::to_string(max);
  return more;
}

NodeGroup GroupOf(const json& obj, GroupKind kind = GroupKind::kMachineDeployment) {
  auto g = ParseNodeGroup(obj, kind);
  EXPECT_TRUE(g) << g.error().message();
  EXPECT_TRUE(g && *g);
  return g && *g ? **g : NodeGroup{};
}

std::string ErrorOf(const json& obj, GroupKind kind = GroupKind::kMachineDeployment) {
  auto g = ParseNodeGroup(obj, kind);
  EXPECT_FALSE(g);
  return g ? "" : g.error().message();
}

TEST(ClusterApiNodeGroup, ReadsSizesReplicasAndTheInfrastructureRef) {
  NodeGroup g = GroupOf(Md("gpu", Sized(1, 5), 2));
  EXPECT_EQ(g.Describe(), "MachineDeployment ml/gpu");
  EXPECT_EQ(g.min, 1);
  EXPECT_EQ(g.max, 5);
  EXPECT_EQ(g.replicas, 2);
  EXPECT_EQ(g.cluster_name, "prod");
  ASSERT_TRUE(g.infrastructure);
  EXPECT_EQ(g.infrastructure->api_group, "infrastructure.cluster.x-k8s.io");
  EXPECT_EQ(g.infrastructure->kind, "AWSMachineTemplate");
}

TEST(ClusterApiNodeGroup, V1beta1InfrastructureRefGivesItsGroupFromApiVersion) {
  json md = Md("gpu", Sized(0, 3));
  md["spec"]["template"]["spec"]["infrastructureRef"] = {
      {"apiVersion", "infrastructure.cluster.x-k8s.io/v1beta1"},
      {"kind", "VSphereMachineTemplate"},
      {"name", "t"}};
  NodeGroup g = GroupOf(md);
  ASSERT_TRUE(g.infrastructure);
  EXPECT_EQ(g.infrastructure->api_group, "infrastructure.cluster.x-k8s.io");
  EXPECT_EQ(g.infrastructure->api_version, "infrastructure.cluster.x-k8s.io/v1beta1");
}

TEST(ClusterApiNodeGroup, WithoutSizeAnnotationsOrOwnedByADeploymentItIsNoGroup) {
  auto plain = ParseNodeGroup(Md("web", json::object()), GroupKind::kMachineDeployment);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(*plain);

  json ms = Md("gpu-abc12", Sized(0, 3));
  ms["kind"] = "MachineSet";
  ms["metadata"]["ownerReferences"] =
      json::array({{{"kind", "MachineDeployment"}, {"name", "gpu"}}});
  auto owned = ParseNodeGroup(ms, GroupKind::kMachineSet);
  ASSERT_TRUE(owned);
  EXPECT_FALSE(*owned);

  ms["metadata"].erase("ownerReferences");
  EXPECT_EQ(GroupOf(ms, GroupKind::kMachineSet).Describe(), "MachineSet ml/gpu-abc12");
}

TEST(ClusterApiNodeGroup, BadSizesNameTheObjectAndTheAnnotation) {
  EXPECT_THAT(ErrorOf(Md("gpu", Sized(4, 2))),
              AllOf(HasSubstr("MachineDeployment ml/gpu"),
                    HasSubstr("min size 4 is greater than max size 2")));
  json only_max = {{std::string(kMaxSizeAnnotation), "3"}};
  EXPECT_THAT(ErrorOf(Md("gpu", only_max)),
              AllOf(HasSubstr("node-group-max-size is set but"), HasSubstr("min-size is not")));
  json words = {{std::string(kMinSizeAnnotation), "zero"}, {std::string(kMaxSizeAnnotation), "3"}};
  EXPECT_THAT(ErrorOf(Md("gpu", words)), AllOf(HasSubstr("node-group-min-size: \"zero\""),
                                               HasSubstr("expected a non-negative integer")));
}

TEST(ClusterApiNodeGroup, MachinePoolKeepsItsProviderIds) {
  json mp = Md("pool", Sized(0, 10));
  mp["kind"] = "MachinePool";
  mp["spec"]["providerIDList"] = {"aws:///us-east-1a/i-1", "aws:///us-east-1a/i-2"};
  EXPECT_THAT(GroupOf(mp, GroupKind::kMachinePool).provider_ids,
              ElementsAre("aws:///us-east-1a/i-1", "aws:///us-east-1a/i-2"));
}

json Capacity(json more) {
  json a = Sized(0, 5);
  for (auto& [k, v] : more.items()) a[std::string(kCapacityPrefix) + k] = v;
  return a;
}

TEST(ClusterApiTemplate, AnnotationsGiveResourcesLabelsAndTaints) {
  NodeGroup g =
      GroupOf(Md("gpu", Capacity({{"cpu", "8"},
                                  {"memory", "64Gi"},
                                  {"ephemeral-disk", "100Gi"},
                                  {"maxPods", "58"},
                                  {"gpu-type", "nvidia.com/gpu"},
                                  {"gpu-count", "2"},
                                  {"labels", "team=ml, zone=b"},
                                  {"taints", "gpu=true:NoSchedule,spot:PreferNoSchedule"}})));
  auto node = TemplateNode(g, nullptr, "gpu");
  ASSERT_TRUE(node) << node.error().message();
  EXPECT_EQ(node->capacity.cpu_milli(), 8000);
  EXPECT_EQ(node->capacity.memory(), int64_t{64} << 30);
  EXPECT_EQ(node->capacity.pods(), 58);
  EXPECT_EQ(node->capacity.Get(model::InternResource("ephemeral-storage")), int64_t{100} << 30);
  EXPECT_EQ(node->allocatable.Get(kGpu), 2);
  EXPECT_EQ(*node->meta.Label("team"), "ml");
  EXPECT_EQ(*node->meta.Label("zone"), "b");
  EXPECT_EQ(*node->meta.Label(model::kLabelPool), "gpu");
  ASSERT_EQ(node->taints.size(), 2u);
  EXPECT_EQ(node->taints[0].key, "gpu");
  EXPECT_EQ(node->taints[0].value, "true");
  EXPECT_EQ(node->taints[0].effect, model::TaintEffect::kNoSchedule);
  EXPECT_EQ(node->taints[1].key, "spot");
  EXPECT_EQ(node->taints[1].value, "");
  EXPECT_EQ(node->taints[1].effect, model::TaintEffect::kPreferNoSchedule);
}

TEST(ClusterApiTemplate, InfrastructureStatusFillsWhatTheAnnotationsLeaveOut) {
  auto infra = ParseInfraStatus(
      json{{"kind", "TestenvMachineTemplate"},
           {"metadata", {{"name", "t"}, {"namespace", "ml"}}},
           {"status",
            {{"capacity", {{"cpu", "16"}, {"memory", "128Gi"}, {"nvidia.com/gpu", "4"}}},
             {"nodeInfo", {{"architecture", "arm64"}, {"operatingSystem", "linux"}}}}}});
  ASSERT_TRUE(infra) << infra.error().message();
  ASSERT_TRUE(*infra);
  // The annotation wins over the status for cpu; the rest comes from the status.
  NodeGroup g = GroupOf(Md("gpu", Capacity({{"cpu", "15"}})));
  auto node = TemplateNode(g, &**infra, "gpu");
  ASSERT_TRUE(node) << node.error().message();
  EXPECT_EQ(node->capacity.cpu_milli(), 15000);
  EXPECT_EQ(node->capacity.memory(), int64_t{128} << 30);
  EXPECT_EQ(node->capacity.Get(kGpu), 4);
  EXPECT_EQ(node->capacity.pods(), 110);
  EXPECT_EQ(*node->meta.Label("kubernetes.io/arch"), "arm64");
  EXPECT_EQ(*node->meta.Label("kubernetes.io/os"), "linux");
}

TEST(ClusterApiTemplate, UnusableAnnotationsAreErrorsNamingThem) {
  auto error = [](json capacity) {
    auto node = TemplateNode(GroupOf(Md("gpu", Capacity(std::move(capacity)))), nullptr, "gpu");
    EXPECT_FALSE(node);
    return node ? "" : node.error().message();
  };
  EXPECT_THAT(error({{"cpu", "lots"}, {"memory", "1Gi"}}),
              AllOf(HasSubstr("MachineDeployment ml/gpu"),
                    HasSubstr("capacity.cluster-autoscaler.kubernetes.io/cpu: \"lots\"")));
  EXPECT_THAT(error({{"cpu", "8"}, {"memory", "1Gi"}, {"gpu-count", "two"}}),
              HasSubstr("gpu-count: \"two\" (expected a non-negative integer)"));
  EXPECT_THAT(error({{"cpu", "8"}, {"memory", "1Gi"}, {"labels", "team"}}),
              HasSubstr("labels: \"team\" is not key=value"));
  EXPECT_THAT(error({{"cpu", "8"}, {"memory", "1Gi"}, {"taints", "gpu=true:Sometimes"}}),
              HasSubstr("taints: \"gpu=true:Sometimes\""));
  EXPECT_THAT(error({{"cpu", "8"}}),
              AllOf(HasSubstr("no cpu or memory known"), HasSubstr("status.capacity")));
}

TEST(ClusterApiTemplate, GpuCountWithoutTypeIsNvidia) {
  auto node = TemplateNode(
      GroupOf(Md("gpu", Capacity({{"cpu", "8"}, {"memory", "8Gi"}, {"gpu-count", "1"}}))), nullptr,
      "gpu");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->capacity.Get(kGpu), 1);
}

Candidate Cand(std::string name, int min, int max, std::string ns = "ml") {
  json md = Md(std::move(name), Capacity({{"cpu", "8"}, {"memory", "32Gi"}, {"gpu-count", "1"}}));
  md["metadata"]["namespace"] = std::move(ns);
  md["metadata"]["annotations"][std::string(kMinSizeAnnotation)] = std::to_string(min);
  md["metadata"]["annotations"][std::string(kMaxSizeAnnotation)] = std::to_string(max);
  return Candidate{GroupOf(md), std::nullopt};
}

TEST(ClusterApiPools, EachUsableGroupIsAPoolWithTheConfigsSettings) {
  model::AutoscalerConfig base;
  model::Pool spot;
  spot.name = "gpu-spot";
  spot.capacity_type = model::CapacityType::kSpot;
  spot.price_per_hour = 0.9;
  spot.priority = 10;
  spot.instance_type = "p3.2xlarge";
  base.pools.push_back(spot);

  Discovery d = BuildPools(base, {Cand("gpu-spot", 0, 4), Cand("gpu", 1, 3)}, {});
  EXPECT_THAT(d.problems, IsEmpty());
  ASSERT_EQ(d.config.pools.size(), 2u);
  const model::Pool& p = d.config.pools[0];
  EXPECT_EQ(p.name, "gpu-spot");
  EXPECT_EQ(p.min, 0);
  EXPECT_EQ(p.max, 4);
  EXPECT_EQ(p.capacity_type, model::CapacityType::kSpot);
  EXPECT_EQ(p.priority, 10);
  EXPECT_EQ(*p.template_node.meta.Label(model::kLabelInstanceType), "p3.2xlarge");
  EXPECT_EQ(d.config.pools[1].name, "gpu");
  EXPECT_EQ(d.config.pools[1].capacity_type, model::CapacityType::kOnDemand);
  EXPECT_EQ(d.config.pools[1].min, 1);
  EXPECT_EQ(d.groups.at("gpu").Describe(), "MachineDeployment ml/gpu");
}

TEST(ClusterApiPools, ClashingAndUnusableGroupsAreReportedAndLeftOut) {
  model::AutoscalerConfig base;
  model::Pool orphan;
  orphan.name = "old-pool";
  base.pools.push_back(orphan);
  model::Pool warm;
  warm.name = "gpu";
  warm.warm.spare_nodes = 5;
  base.pools.push_back(warm);

  Candidate no_cpu = Cand("cpu-only", 0, 2);
  no_cpu.group.annotations.erase(std::string(kCapacityPrefix) + "cpu");
  Discovery d = BuildPools(
      base, {Cand("gpu", 0, 3), Cand("gpu", 0, 3, "other"), Cand("gpu.v2", 0, 3), no_cpu},
      {"earlier problem"});
  ASSERT_EQ(d.config.pools.size(), 1u);
  EXPECT_EQ(d.config.pools[0].warm.spare_nodes, 0);
  EXPECT_THAT(
      d.problems,
      ElementsAre(
          "earlier problem",
          HasSubstr("pools[gpu].warm.spareNodes 5 is more than the node group's max size 3"),
          AllOf(HasSubstr("MachineDeployment other/gpu"),
                HasSubstr("MachineDeployment ml/gpu has the same name")),
          HasSubstr("MachineDeployment ml/gpu.v2: its name is not usable as a pool name"),
          AllOf(HasSubstr("MachineDeployment ml/cpu-only"), HasSubstr("no cpu or memory known")),
          HasSubstr("pools[old-pool]: no usable node group of that name")));
}

TEST(ClusterApiMachine, ReadsNodeGroupNodeAndFailureFromEitherVersion) {
  json v1beta2 = {
      {"metadata",
       {{"name", "gpu-abc-x1"},
        {"namespace", "ml"},
        {"uid", "m-1"},
        {"resourceVersion", "42"},
        {"creationTimestamp", "2026-11-25T10:00:00Z"},
        {"labels",
         {{"cluster.x-k8s.io/deployment-name", "gpu"}, {"cluster.x-k8s.io/set-name", "gpu-abc"}}},
        {"annotations", {{std::string(kDeleteMachineAnnotation), ""}}}}},
      {"spec", {{"providerID", "aws:///us-east-1a/i-1"}}},
      {"status",
       {{"phase", "Failed"},
        {"nodeRef", {{"name", "ip-10-0-0-1"}}},
        {"deprecated",
         {{"v1beta1",
           {{"failureReason", "InsufficientCapacity"}, {"failureMessage", "no p3"}}}}}}}};
  auto m = ParseMachine(v1beta2);
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->deployment_name, "gpu");
  EXPECT_EQ(m->set_name, "gpu-abc");
  EXPECT_EQ(m->provider_id, "aws:///us-east-1a/i-1");
  EXPECT_EQ(m->node_name, "ip-10-0-0-1");
  EXPECT_TRUE(m->Joined());
  EXPECT_EQ(m->failure, "InsufficientCapacity: no p3");
  EXPECT_TRUE(m->marked);
  EXPECT_FALSE(m->marked_by_tidepool);

  json v1beta1 = {{"metadata", {{"name", "m2"}, {"namespace", "ml"}, {"deletionTimestamp", "x"}}},
                  {"status", {{"failureReason", "CreateError"}, {"failureMessage", "quota"}}}};
  auto old = ParseMachine(v1beta1);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->failure, "CreateError: quota");
  EXPECT_TRUE(old->deleting);
  EXPECT_FALSE(old->Joined());

  json bad_time = {
      {"metadata", {{"name", "m3"}, {"namespace", "ml"}, {"creationTimestamp", "noon"}}}};
  auto bad = ParseMachine(bad_time);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr("Machine ml/m3: metadata.creationTimestamp"));
}

TEST(ClusterApiSettings, KnownKeysAndClearErrors) {
  auto s = ParseSettings({{"namespace", "ml"},
                          {"labelSelector", "autoscale=true"},
                          {"clusterName", "prod"},
                          {"apiVersion", "v1beta1"}});
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->namespace_, "ml");
  EXPECT_EQ(s->label_selector, "autoscale=true");
  EXPECT_EQ(s->api_version, "v1beta1");

  auto unknown = ParseSettings({{"subscriptionId", "x"}});
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message(), AllOf(HasSubstr("provider.subscriptionId: unknown key"),
                                               HasSubstr("managementKubeconfig")));
  auto version = ParseSettings({{"apiVersion", "v1alpha4"}});
  ASSERT_FALSE(version);
  EXPECT_THAT(version.error().message(), HasSubstr("expected v1beta2 or v1beta1"));
  auto context = ParseSettings({{"managementContext", "mgmt"}});
  ASSERT_FALSE(context);
  EXPECT_THAT(context.error().message(), HasSubstr("without provider.managementKubeconfig"));
}

}  // namespace
}  // namespace tidepool::cloud::clusterapi
