#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "kube/config/autoscaler_config.h"
#include "kube/config/yaml_reader.h"
#include "model/pool.h"
#include "model/quantity.h"
#include "model/resources.h"

namespace tidepool::kube::config {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::StartsWith;

constexpr std::string_view kSource = "config.yaml";

Result<model::AutoscalerConfig> Parse(std::string_view yaml) {
  return ParseAutoscalerConfig(yaml, kSource);
}

// The error message of a config that must not parse.
std::string ErrorOf(std::string_view yaml) {
  auto r = Parse(yaml);
  EXPECT_FALSE(r) << "parsed without error:\n" << yaml;
  if (r) return "";
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
  return r.error().message();
}

// Parses a config that must be valid.
model::AutoscalerConfig MustParse(std::string_view yaml) {
  auto r = Parse(yaml);
  EXPECT_TRUE(r) << (r ? "" : r.error().message());
  return r ? *r : model::AutoscalerConfig();
}

int64_t Amount(const model::Resources& r, std::string_view name) {
  return r.Get(model::InternResource(name));
}

// Lines 1-2 of every inline config below.
#define HEADER "apiVersion: tidepool.dev/v1alpha1\nkind: AutoscalerConfig\n"
// A valid pool list; five lines.
#define ONE_POOL    \
  "pools:\n"        \
  "  - name: cpu\n" \
  "    max: 3\n"    \
  "    template:\n" \
  "      capacity: {cpu: 2, memory: 4Gi}\n"

// ---------------------------------------------------------------------------------------------
// Valid configs

TEST(AutoscalerConfig, FullConfigRoundTrips) {
  std::string path = std::string(TIDEPOOL_SOURCE_DIR) + "/tests/kube/testdata/config/full.yaml";
  auto r = LoadAutoscalerConfig(path);
  ASSERT_TRUE(r) << r.error().message();
  const model::AutoscalerConfig& c = *r;

  EXPECT_EQ(c.provider.type, "kwok");
  EXPECT_EQ(c.provider.boot_delay, seconds(30));
  EXPECT_THAT(c.provider.unavailable_pools, ElementsAre("gpu-heavy-spot"));
  EXPECT_THAT(c.provider.settings, IsEmpty());

  EXPECT_EQ(c.limits.max_nodes, 500);
  EXPECT_EQ(c.limits.resources.cpu_milli(), 4'000'000);
  EXPECT_EQ(c.limits.resources.memory(), int64_t{16} << 40);
  EXPECT_EQ(Amount(c.limits.resources, "nvidia.com/gpu"), 256);
  EXPECT_THAT(c.limits.limited,
              ElementsAre(model::kCpu, model::kMemory, model::InternResource("nvidia.com/gpu")));

  EXPECT_THAT(c.scale_up.expanders, ElementsAre("price", "least-waste", "random"));
  EXPECT_EQ(c.scale_up.provision_timeout, minutes(20));
  EXPECT_EQ(c.scale_up.backoff_initial, minutes(1));
  EXPECT_EQ(c.scale_up.backoff_max, minutes(90));
  EXPECT_EQ(c.scale_up.expendable_priority_cutoff, -20);
  EXPECT_EQ(c.scale_up.batch_idle, seconds(2));
  EXPECT_EQ(c.scale_up.batch_max, seconds(15));
  EXPECT_EQ(c.scale_up.max_nodes_per_scale_up, 50);
  EXPECT_EQ(c.scale_up.random_seed, 42u);
  EXPECT_EQ(c.scale_up.booking_time, minutes(20));

  EXPECT_FALSE(c.scale_down.enabled);
  EXPECT_DOUBLE_EQ(c.scale_down.utilization_threshold, 0.25);
  EXPECT_DOUBLE_EQ(c.scale_down.gpu_utilization_threshold, 0.75);
  EXPECT_EQ(c.scale_down.unneeded_time, minutes(5));
  EXPECT_EQ(c.scale_down.delay_after_add, seconds(450));
  EXPECT_EQ(c.scale_down.max_empty_bulk_delete, 3);
  EXPECT_EQ(c.scale_down.max_non_empty_per_pool, 2);
  EXPECT_EQ(c.scale_down.candidates_per_pass, 250);
  EXPECT_TRUE(c.scale_down.mark_candidates);
  EXPECT_EQ(c.scale_down.max_pod_eviction_time, seconds(90));
  EXPECT_EQ(c.scan_interval, seconds(15));

  ASSERT_EQ(c.pools.size(), 2u);
  const model::Pool& cpu = c.pools[0];
  EXPECT_EQ(cpu.name, "cpu");
  EXPECT_EQ(cpu.min, 1);
  EXPECT_EQ(cpu.max, 10);
  EXPECT_EQ(cpu.capacity_type, model::CapacityType::kOnDemand);
  EXPECT_DOUBLE_EQ(cpu.price_per_hour, 0.1);
  EXPECT_EQ(cpu.priority, 10);
  EXPECT_EQ(cpu.instance_type, "Standard_D2_v2");
  EXPECT_EQ(cpu.provision_timeout, std::nullopt);
  EXPECT_EQ(cpu.boot_delay, std::nullopt);
  EXPECT_THAT(cpu.template_node.meta.labels,
              ElementsAre(Pair("node.kubernetes.io/instance-type", "Standard_D2_v2"),
                          Pair("pool", "cpu"), Pair("tidepool.dev/pool", "cpu")));
  EXPECT_EQ(cpu.template_node.capacity.cpu_milli(), 2000);
  EXPECT_EQ(cpu.template_node.capacity.memory(), int64_t{7} << 30);
  EXPECT_EQ(cpu.template_node.capacity.pods(), 110);  // the default
  EXPECT_EQ(cpu.template_node.allocatable, cpu.template_node.capacity);
  EXPECT_THAT(cpu.template_node.taints, IsEmpty());

  const model::Pool& gpu = c.pools[1];
  EXPECT_EQ(gpu.name, "gpu-heavy-spot");
  EXPECT_EQ(gpu.min, 0);
  EXPECT_EQ(gpu.max, 20);
  EXPECT_EQ(gpu.capacity_type, model::CapacityType::kSpot);
  EXPECT_DOUBLE_EQ(gpu.price_per_hour, 0.9);
  EXPECT_EQ(gpu.priority, 100);
  EXPECT_EQ(gpu.provision_timeout, minutes(25));
  EXPECT_EQ(gpu.boot_delay, minutes(2));
  const model::Node& node = gpu.template_node;
  EXPECT_EQ(node.name(), "template-gpu-heavy-spot");
  EXPECT_TRUE(node.ready);
  EXPECT_FALSE(node.unschedulable);
  EXPECT_THAT(
      node.meta.labels,
      ElementsAre(Pair("gpu", "true"), Pair("node.kubernetes.io/instance-type", "Standard_NC6s_v3"),
                  Pair("pool", "gpu-heavy"), Pair("tidepool.dev/pool", "gpu-heavy-spot")));
  ASSERT_EQ(node.taints.size(), 1u);
  EXPECT_EQ(node.taints[0], (model::Taint{"kubernetes.azure.com/scalesetpriority", "spot",
                                          model::TaintEffect::kNoSchedule}));
  EXPECT_EQ(node.capacity.cpu_milli(), 6000);
  EXPECT_EQ(node.capacity.memory(), int64_t{112} << 30);
  EXPECT_EQ(node.capacity.gpus(), 1);
  EXPECT_EQ(node.capacity.pods(), 110);
  // Allocatable lists cpu, memory and pods; the GPU falls back to capacity.
  EXPECT_EQ(node.allocatable.cpu_milli(), 5840);
  EXPECT_EQ(node.allocatable.memory(), int64_t{100} << 30);
  EXPECT_EQ(node.allocatable.pods(), 100);
  EXPECT_EQ(node.allocatable.gpus(), 1);
  EXPECT_EQ(c.FindPool("gpu-heavy-spot"), &gpu);
}

TEST(AutoscalerConfig, AbsentSectionsKeepDefaults) {
  model::AutoscalerConfig c = MustParse(HEADER ONE_POOL);
  const model::AutoscalerConfig d;
  EXPECT_EQ(c.provider.type, "kwok");
  EXPECT_EQ(c.provider.boot_delay, std::nullopt);
  EXPECT_THAT(c.provider.unavailable_pools, IsEmpty());
  EXPECT_EQ(c.limits.max_nodes, std::nullopt);
  EXPECT_THAT(c.limits.limited, IsEmpty());
  EXPECT_TRUE(c.limits.resources.IsZero());
  EXPECT_EQ(c.scale_up.expanders, d.scale_up.expanders);
  EXPECT_THAT(c.scale_up.expanders, ElementsAre("priority", "least-waste"));
  EXPECT_EQ(c.scale_up.provision_timeout, minutes(15));
  EXPECT_EQ(c.scale_up.backoff_initial, d.scale_up.backoff_initial);
  EXPECT_EQ(c.scale_up.backoff_max, d.scale_up.backoff_max);
  EXPECT_EQ(c.scale_up.expendable_priority_cutoff, d.scale_up.expendable_priority_cutoff);
  EXPECT_EQ(c.scale_up.batch_idle, d.scale_up.batch_idle);
  EXPECT_EQ(c.scale_up.batch_max, d.scale_up.batch_max);
  EXPECT_EQ(c.scale_up.max_nodes_per_scale_up, d.scale_up.max_nodes_per_scale_up);
  EXPECT_EQ(c.scale_up.random_seed, d.scale_up.random_seed);
  EXPECT_EQ(c.scale_up.booking_time, minutes(10));
  EXPECT_TRUE(c.scale_up.balance_zones);
  EXPECT_EQ(c.scale_down.enabled, d.scale_down.enabled);
  EXPECT_EQ(c.scale_down.utilization_threshold, d.scale_down.utilization_threshold);
  EXPECT_EQ(c.scale_down.gpu_utilization_threshold, d.scale_down.gpu_utilization_threshold);
  EXPECT_EQ(c.scale_down.unneeded_time, minutes(10));
  EXPECT_EQ(c.scale_down.delay_after_add, d.scale_down.delay_after_add);
  EXPECT_EQ(c.scale_down.max_empty_bulk_delete, d.scale_down.max_empty_bulk_delete);
  EXPECT_EQ(c.scale_down.max_non_empty_per_pool, d.scale_down.max_non_empty_per_pool);
  EXPECT_EQ(c.scale_down.candidates_per_pass, 100);
  EXPECT_FALSE(c.scale_down.mark_candidates);
  EXPECT_EQ(c.scale_down.max_pod_eviction_time, d.scale_down.max_pod_eviction_time);
  EXPECT_EQ(c.scan_interval, seconds(10));

  ASSERT_EQ(c.pools.size(), 1u);
  const model::Pool& p = c.pools[0];
  EXPECT_EQ(p.min, 0);
  EXPECT_EQ(p.max, 3);
  EXPECT_EQ(p.capacity_type, model::CapacityType::kOnDemand);
  EXPECT_EQ(p.price_per_hour, 0);
  EXPECT_EQ(p.priority, 0);
  EXPECT_EQ(p.instance_type, "");
  // Without instanceType there is no instance-type label.
  EXPECT_THAT(p.template_node.meta.labels, ElementsAre(Pair("tidepool.dev/pool", "cpu")));
  EXPECT_EQ(p.template_node.allocatable, p.template_node.capacity);
}

TEST(AutoscalerConfig, EmptySectionsKeepDefaults) {
  model::AutoscalerConfig c =
      MustParse(HEADER "provider:\nlimits:\nscaleUp: {}\nscaleDown:\n" ONE_POOL);
  EXPECT_EQ(c.provider.type, "kwok");
  EXPECT_THAT(c.scale_up.expanders, ElementsAre("priority", "least-waste"));
  EXPECT_TRUE(c.scale_down.enabled);
}

TEST(AutoscalerConfig, QuantitiesAreExactAndAcceptNumbersAndStrings) {
  model::AutoscalerConfig c = MustParse(HEADER
                                        "limits: {cpu: 0.1, memory: 1e3}\n"
                                        "pools:\n"
                                        "  - name: small\n"
                                        "    max: 1\n"
                                        "    template:\n"
                                        "      capacity: {cpu: 0.3, memory: \"512Mi\", pods: 8}\n");
  EXPECT_EQ(c.limits.resources.cpu_milli(), 100);
  EXPECT_EQ(c.limits.resources.memory(), 1000);
  const model::Node& n = c.pools[0].template_node;
  EXPECT_EQ(n.capacity.cpu_milli(), 300);
  EXPECT_EQ(n.capacity.memory(), 512 << 20);
  EXPECT_EQ(n.capacity.pods(), 8);
}

TEST(AutoscalerConfig, SpotPoolGetsNoImplicitTaint) {
  model::AutoscalerConfig c = MustParse(HEADER
                                        "pools:\n"
                                        "  - name: spot\n"
                                        "    max: 3\n"
                                        "    capacityType: spot\n"
                                        "    template:\n"
                                        "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_EQ(c.pools[0].capacity_type, model::CapacityType::kSpot);
  EXPECT_THAT(c.pools[0].template_node.taints, IsEmpty());
}

TEST(AutoscalerConfig, AzureProviderKeepsSettingsAsDottedText) {
  model::AutoscalerConfig c =
      MustParse(HEADER
                "provider:\n"
                "  type: azure-vmss\n"
                "  subscriptionId: 0000-1111\n"
                "  resourceGroup: rg-ml\n"
                "  armEndpoint: https://management.azure.com\n"
                "  auth: {method: clientSecret, clientId: abc, tenant: {id: t1}}\n"
                "  unavailablePools: [cpu]\n" ONE_POOL);
  EXPECT_EQ(c.provider.type, "azure-vmss");
  EXPECT_THAT(c.provider.unavailable_pools, ElementsAre("cpu"));
  EXPECT_THAT(
      c.provider.settings,
      ElementsAre(Pair("armEndpoint", "https://management.azure.com"), Pair("auth.clientId", "abc"),
                  Pair("auth.method", "clientSecret"), Pair("auth.tenant.id", "t1"),
                  Pair("resourceGroup", "rg-ml"), Pair("subscriptionId", "0000-1111")));
}

TEST(AutoscalerConfig, SeedExampleLoads) {
  std::string path = std::string(TIDEPOOL_SOURCE_DIR) + "/examples/seed/config.yaml";
  auto r = LoadAutoscalerConfig(path);
  ASSERT_TRUE(r) << r.error().message();
  std::vector<std::string> names;
  for (const auto& p : r->pools) names.push_back(p.name);
  EXPECT_THAT(names,
              ElementsAre("cpupool", "gpupool", "gpupool-spot", "gpuheavy", "gpuheavy-spot"));
  EXPECT_THAT(r->scale_up.expanders, ElementsAre("priority", "least-waste"));
  EXPECT_EQ(r->limits.max_nodes, 50);
  EXPECT_EQ(Amount(r->limits.resources, "nvidia.com/gpu"), 32);

  const model::Pool* cpu = r->FindPool("cpupool");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->min, 1);
  EXPECT_EQ(cpu->template_node.capacity.cpu_milli(), 2000);
  EXPECT_EQ(cpu->template_node.capacity.memory(), int64_t{7} << 30);
  EXPECT_EQ(cpu->template_node.capacity.gpus(), 0);

  const model::Pool* spot = r->FindPool("gpupool-spot");
  ASSERT_NE(spot, nullptr);
  EXPECT_EQ(spot->capacity_type, model::CapacityType::kSpot);
  EXPECT_GT(spot->priority, r->FindPool("gpupool")->priority);
  EXPECT_LT(spot->price_per_hour, r->FindPool("gpupool")->price_per_hour);
  EXPECT_THAT(spot->template_node.taints,
              ElementsAre(model::Taint{"kubernetes.azure.com/scalesetpriority", "spot",
                                       model::TaintEffect::kNoSchedule}));
  EXPECT_EQ(spot->template_node.capacity.gpus(), 1);

  const model::Pool* heavy = r->FindPool("gpuheavy");
  ASSERT_NE(heavy, nullptr);
  EXPECT_EQ(heavy->template_node.capacity.gpus(), 4);
  EXPECT_EQ(*heavy->template_node.meta.Label("gpu-size"), "heavy");
  EXPECT_THAT(heavy->template_node.taints, IsEmpty());
}

// ---------------------------------------------------------------------------------------------
// Unknown keys

TEST(AutoscalerConfigErrors, UnknownTopLevelKey) {
  std::string e = ErrorOf(HEADER "simulations: {seed: 1}\n" ONE_POOL);
  EXPECT_THAT(e, StartsWith("config.yaml:3: simulations: unknown key (expected one of: "));
  EXPECT_THAT(e, HasSubstr("scaleUp"));
  EXPECT_THAT(e, HasSubstr("did you mean \"simulation\"?"));
}

// `simulation:` belongs to sim/ (tests/sim checks its keys): the loader keeps the subtree with its
// position and checks only that it is a map; plan and run ignore it.
TEST(AutoscalerConfig, SimulationSectionIsKeptForSim) {
  auto file =
      ParseConfigFile(HEADER "simulation: {seed: 1, notASimKey: 2}\n" ONE_POOL, "config.yaml");
  ASSERT_TRUE(file.has_value()) << file.error().message();
  ASSERT_TRUE(file->simulation.has_value());
  EXPECT_EQ(file->simulation->line, 3);
  EXPECT_EQ(file->simulation->path, "simulation");
  EXPECT_EQ(file->simulation->source, "config.yaml");
  EXPECT_TRUE(file->simulation->value().IsMap());
  EXPECT_EQ(file->config.pools.size(), 1u);
  EXPECT_EQ(MustParse(HEADER "simulation:\n" ONE_POOL).pools.size(), 1u);
  EXPECT_EQ(MustParse(HEADER "simulation: {seed: 1, notASimKey: 2}\n" ONE_POOL).pools.size(), 1u);
  EXPECT_THAT(ErrorOf(HEADER "simulation: [1]\n" ONE_POOL),
              StartsWith("config.yaml:3: simulation: expected a map of simulation settings, got"));
}

TEST(AutoscalerConfigErrors, UnknownNestedKeySuggestsTheClosest) {
  std::string e = ErrorOf(HEADER
                          "scaleUp:\n"
                          "  provisionTimeout: 15m\n"
                          "  expandrs: [priority]\n" ONE_POOL);
  EXPECT_THAT(e, StartsWith("config.yaml:5: scaleUp.expandrs: unknown key (expected one of: "
                            "expanders, provisionTimeout, backoff, "));
  EXPECT_THAT(e, HasSubstr("did you mean \"expanders\"?"));
}

TEST(AutoscalerConfigErrors, UnknownKeyInPool) {
  std::string e = ErrorOf(HEADER ONE_POOL
                          "  - name: gpu\n"  // line 8
                          "    max: 3\n"
                          "    burst: {size: 1}\n"  // line 10
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_THAT(e, StartsWith("config.yaml:10: pools[1].burst: unknown key"));
}

TEST(AutoscalerConfigErrors, UnknownKeyInTemplateCapacityIsAResourceButTaintKeysAreChecked) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: gpu\n"
                          "    max: 3\n"
                          "    template:\n"
                          "      taints:\n"
                          "        - {key: sku, value: gpu, efect: NoSchedule}\n"  // line 8
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_THAT(e, StartsWith("config.yaml:8: pools[0].template.taints[0].efect: unknown key"));
  EXPECT_THAT(e, HasSubstr("did you mean \"effect\"?"));
}

TEST(AutoscalerConfigErrors, UnknownKwokProviderKey) {
  std::string e = ErrorOf(HEADER "provider: {type: kwok, subscriptionId: x}\n" ONE_POOL);
  EXPECT_THAT(e, StartsWith("config.yaml:3: provider.subscriptionId: unknown key (expected one "
                            "of: type, bootDelay, unavailablePools)"));
}

TEST(AutoscalerConfigErrors, DuplicateKey) {
  std::string e = ErrorOf(HEADER
                          "scanInterval: 10s\n"
                          "scanInterval: 20s\n" ONE_POOL);
  EXPECT_THAT(e, StartsWith("config.yaml:4: scanInterval: duplicate key (first given on line 3)"));
}

// ---------------------------------------------------------------------------------------------
// Wrong types

TEST(AutoscalerConfigErrors, StringForInteger) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    max: \"10\"\n"  // line 5
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_EQ(e, "config.yaml:5: pools[0].max: expected a non-negative integer, got \"10\"");
}

TEST(AutoscalerConfigErrors, WordForInteger) {
  std::string e = ErrorOf(HEADER ONE_POOL
                          "  - name: gpu\n"
                          "    min: 0\n"
                          "    max: ten\n"  // line 10
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_EQ(e, "config.yaml:10: pools[1].max: expected a non-negative integer, got \"ten\"");
}

TEST(AutoscalerConfigErrors, FractionOrOverflowForInteger) {
  EXPECT_THAT(ErrorOf(HEADER "scaleUp: {maxNodesPerScaleUp: 1.5}\n" ONE_POOL),
              StartsWith("config.yaml:3: scaleUp.maxNodesPerScaleUp: expected a positive integer, "
                         "got 1.5"));
  EXPECT_THAT(ErrorOf(HEADER "limits: {maxNodes: 99999999999}\n" ONE_POOL),
              StartsWith("config.yaml:3: limits.maxNodes: expected a non-negative integer (at most "
                         "2147483647), got 99999999999"));
}

TEST(AutoscalerConfigErrors, NegativeCandidatesPerPass) {
  EXPECT_THAT(ErrorOf(HEADER "scaleDown: {candidatesPerPass: -1}\n" ONE_POOL),
              StartsWith("config.yaml:3: scaleDown.candidatesPerPass: expected a non-negative "
                         "integer (0: every candidate)"));
}

TEST(AutoscalerConfigErrors, EmptyValueIsNotADefault) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    max:\n"  // line 5
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_EQ(e, "config.yaml:5: pools[0].max: expected a non-negative integer, got nothing");
}

TEST(AutoscalerConfigErrors, MapForExpanders) {
  std::string e = ErrorOf(HEADER
                          "scaleUp:\n"
                          "  expanders: {priority: 1}\n" ONE_POOL);
  EXPECT_EQ(e, "config.yaml:4: scaleUp.expanders: expected a list, got a map");
}

TEST(AutoscalerConfigErrors, ScalarForSection) {
  std::string e = ErrorOf(HEADER "scaleDown: fast\n" ONE_POOL);
  EXPECT_EQ(e, "config.yaml:3: scaleDown: expected a map of scale-down settings, got \"fast\"");
}

TEST(AutoscalerConfigErrors, QuotedBoolean) {
  std::string e = ErrorOf(HEADER "scaleDown: {enabled: \"yes\"}\n" ONE_POOL);
  EXPECT_EQ(e, "config.yaml:3: scaleDown.enabled: expected true or false, got \"yes\"");
}

TEST(AutoscalerConfig, MarkCandidatesIsOffUnlessTurnedOn) {
  EXPECT_FALSE(MustParse(HEADER ONE_POOL).scale_down.mark_candidates);
  EXPECT_TRUE(
      MustParse(HEADER "scaleDown: {markCandidates: true}\n" ONE_POOL).scale_down.mark_candidates);
  EXPECT_EQ(ErrorOf(HEADER "scaleDown: {markCandidates: on}\n" ONE_POOL),
            "config.yaml:3: scaleDown.markCandidates: expected true or false, got \"on\"");
}

TEST(AutoscalerConfig, BalanceZonesCanBeTurnedOff) {
  EXPECT_FALSE(
      MustParse(HEADER "scaleUp: {balanceZones: false}\n" ONE_POOL).scale_up.balance_zones);
  EXPECT_EQ(ErrorOf(HEADER "scaleUp: {balanceZones: 1}\n" ONE_POOL),
            "config.yaml:3: scaleUp.balanceZones: expected true or false, got 1");
}

TEST(AutoscalerConfigErrors, RootIsNotAMap) {
  EXPECT_EQ(ErrorOf("- a\n- b\n"),
            "config.yaml:1: expected a map (an AutoscalerConfig), got a list");
}

// ---------------------------------------------------------------------------------------------
// Values

TEST(AutoscalerConfigErrors, MinGreaterThanMax) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    min: 5\n"  // line 5
                          "    max: 3\n"
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_THAT(e, StartsWith("config.yaml:5: pools[0].min: min 5 is greater than max 3"));
}

TEST(AutoscalerConfigErrors, NegativePrice) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    max: 3\n"
                          "    pricePerHour: -0.5\n"  // line 6
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_EQ(e, "config.yaml:6: pools[0].pricePerHour: expected a non-negative number, got -0.5");
}

TEST(AutoscalerConfigErrors, UnknownExpander) {
  std::string e = ErrorOf(HEADER
                          "scaleUp:\n"
                          "  expanders:\n"
                          "    - priority\n"
                          "    - cheapest\n" ONE_POOL);  // line 6
  EXPECT_EQ(e,
            "config.yaml:6: scaleUp.expanders[1]: expected one of \"priority\", \"least-waste\", "
            "\"price\", \"most-pods\", \"random\", got \"cheapest\"");
}

TEST(AutoscalerConfigErrors, DuplicateOrNoExpanders) {
  EXPECT_THAT(
      ErrorOf(HEADER "scaleUp: {expanders: [price, price]}\n" ONE_POOL),
      StartsWith("config.yaml:3: scaleUp.expanders[1]: expander \"price\" is listed twice"));
  EXPECT_THAT(ErrorOf(HEADER "scaleUp: {expanders: []}\n" ONE_POOL),
              StartsWith("config.yaml:3: scaleUp.expanders: expected at least one expander, got an "
                         "empty list"));
}

TEST(AutoscalerConfigErrors, DuplicatePoolNames) {
  std::string e = ErrorOf(HEADER ONE_POOL
                          "  - name: cpu\n"  // line 8
                          "    max: 3\n"
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_EQ(e,
            "config.yaml:8: pools[1].name: duplicate pool name \"cpu\" (already used by "
            "pools[0])");
}

TEST(AutoscalerConfigErrors, InvalidPoolName) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: GPU_Pool\n"
                          "    max: 3\n"
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_THAT(e, StartsWith("config.yaml:4: pools[0].name: expected a pool name: lowercase"));
  EXPECT_THAT(e, HasSubstr("got \"GPU_Pool\""));
}

TEST(AutoscalerConfigErrors, BadTaintEffect) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: gpu\n"
                          "    max: 3\n"
                          "    template:\n"
                          "      taints:\n"
                          "        - key: sku\n"
                          "          value: gpu\n"
                          "          effect: NoScheduleButReally\n"  // line 10
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_EQ(e,
            "config.yaml:10: pools[0].template.taints[0].effect: expected one of \"NoSchedule\", "
            "\"PreferNoSchedule\", \"NoExecute\", got \"NoScheduleButReally\"");
}

TEST(AutoscalerConfigErrors, BadCapacityType) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    max: 3\n"
                          "    capacityType: preemptible\n"  // line 6
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_EQ(e,
            "config.yaml:6: pools[0].capacityType: expected one of \"on-demand\", \"spot\", got "
            "\"preemptible\"");
}

TEST(AutoscalerConfigErrors, BadQuantity) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    max: 3\n"
                          "    template:\n"
                          "      capacity:\n"
                          "        cpu: lots\n"  // line 8
                          "        memory: 4Gi\n");
  EXPECT_THAT(e, StartsWith("config.yaml:8: pools[0].template.capacity.cpu: invalid quantity "
                            "\"lots\""));
}

TEST(AutoscalerConfigErrors, BadResourceQuantityPathUsesBrackets) {
  std::string e = ErrorOf(HEADER
                          "limits:\n"
                          "  nvidia.com/gpu: -4\n" ONE_POOL);
  EXPECT_EQ(e, "config.yaml:4: limits[nvidia.com/gpu]: expected a non-negative quantity, got -4");
}

TEST(AutoscalerConfigErrors, UnknownResourceName) {
  // Any resource may be limited, so a misspelt maxNodes would otherwise pass as one.
  EXPECT_THAT(ErrorOf(HEADER "limits: {MaxNodes: 3}\n" ONE_POOL),
              StartsWith("config.yaml:3: limits.MaxNodes: unknown resource name"));
  EXPECT_THAT(ErrorOf(HEADER "limits: {MaxNodes: 3}\n" ONE_POOL),
              HasSubstr("did you mean \"maxNodes\"?"));
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: gpu\n"
                          "    max: 3\n"
                          "    template:\n"
                          "      capacity: {cpu: 6, memory: 56Gi, gpu: 1}\n");  // line 7
  EXPECT_THAT(e,
              StartsWith("config.yaml:7: pools[0].template.capacity.gpu: unknown resource name"));
  EXPECT_THAT(e, HasSubstr("did you mean \"nvidia.com/gpu\"?"));
}

TEST(AutoscalerConfigErrors, EmptyListItems) {
  EXPECT_THAT(ErrorOf(HEADER "pools:\n  -\n"),
              StartsWith("config.yaml:3: pools[0]: expected a pool (a map with name, min, max, "
                         "template, ...), got nothing"));
  EXPECT_THAT(ErrorOf(HEADER "pools:\n  - cpu\n"),
              StartsWith("config.yaml:4: pools[0]: expected a pool (a map with name, min, max, "
                         "template, ...), got \"cpu\""));
}

TEST(AutoscalerConfigErrors, MissingCpuInCapacity) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    max: 3\n"
                          "    template:\n"
                          "      capacity: {memory: 4Gi}\n");  // line 7
  EXPECT_THAT(e, StartsWith("config.yaml:7: pools[0].template.capacity.cpu: required key is "
                            "missing"));
}

TEST(AutoscalerConfigErrors, MissingTemplateOrMax) {
  EXPECT_THAT(ErrorOf(HEADER "pools:\n  - {name: cpu, max: 2}\n"),
              StartsWith("config.yaml:4: pools[0].template: required key is missing"));
  EXPECT_THAT(
      ErrorOf(HEADER "pools:\n  - {name: cpu, template: {capacity: {cpu: 1, memory: 1Gi}}}\n"),
      StartsWith("config.yaml:4: pools[0].max: required key is missing"));
}

TEST(AutoscalerConfigErrors, AllocatableAboveCapacity) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    max: 3\n"
                          "    template:\n"
                          "      capacity: {cpu: 2, memory: 4Gi}\n"
                          "      allocatable: {cpu: 2500m}\n");  // line 8
  EXPECT_THAT(e, StartsWith("config.yaml:8: pools[0].template.allocatable.cpu: 2500m is more than "
                            "the capacity (2)"));
}

TEST(AutoscalerConfigErrors, TemplateLabelContradictsPoolName) {
  std::string e = ErrorOf(HEADER
                          "pools:\n"
                          "  - name: cpu\n"
                          "    max: 3\n"
                          "    template:\n"
                          "      labels:\n"
                          "        tidepool.dev/pool: gpu\n"  // line 8
                          "      capacity: {cpu: 2, memory: 4Gi}\n");
  EXPECT_THAT(e,
              StartsWith("config.yaml:8: pools[0].template.labels[tidepool.dev/pool]: is \"gpu\" "
                         "but tidepool sets it to \"cpu\""));
}

TEST(AutoscalerConfigErrors, BadDuration) {
  EXPECT_THAT(
      ErrorOf(HEADER "scaleUp:\n  provisionTimeout: 15\n" ONE_POOL),
      StartsWith("config.yaml:4: scaleUp.provisionTimeout: invalid duration \"15\": missing "
                 "unit"));
  EXPECT_THAT(ErrorOf(HEADER "scanInterval: soon\n" ONE_POOL),
              StartsWith("config.yaml:3: scanInterval: invalid duration \"soon\""));
  EXPECT_EQ(ErrorOf(HEADER "scanInterval: 0s\n" ONE_POOL),
            "config.yaml:3: scanInterval: expected a positive duration, got \"0s\"");
}

TEST(AutoscalerConfigErrors, BackoffInitialAboveMax) {
  std::string e = ErrorOf(HEADER
                          "scaleUp:\n"
                          "  backoff:\n"
                          "    initial: 45m\n"  // line 5; max defaults to 30m
                          ONE_POOL);
  EXPECT_THAT(e, StartsWith("config.yaml:5: scaleUp.backoff.initial: initial backoff 45m is longer "
                            "than the maximum 30m"));
}

TEST(AutoscalerConfigErrors, BookingTimeMustBeAPositiveDuration) {
  EXPECT_EQ(ErrorOf(HEADER "scaleUp:\n  provisioningRequests: {bookingTime: 0s}\n" ONE_POOL),
            "config.yaml:4: scaleUp.provisioningRequests.bookingTime: expected a positive "
            "duration, got \"0s\"");
  EXPECT_THAT(ErrorOf(HEADER "scaleUp:\n  provisioningRequests: {bookingTime: 600}\n" ONE_POOL),
              StartsWith("config.yaml:4: scaleUp.provisioningRequests.bookingTime: invalid "
                         "duration \"600\": missing unit"));
  EXPECT_THAT(ErrorOf(HEADER "scaleUp:\n  provisioningRequests: {booking: 5m}\n" ONE_POOL),
              AllOf(StartsWith("config.yaml:4: scaleUp.provisioningRequests.booking: unknown key"),
                    HasSubstr("bookingTime")));
  EXPECT_THAT(ErrorOf(HEADER "scaleUp:\n  provisioningRequests: 10m\n" ONE_POOL),
              StartsWith("config.yaml:4: scaleUp.provisioningRequests: expected a map "
                         "{bookingTime}"));
}

TEST(AutoscalerConfigErrors, ThresholdsOutOfRange) {
  EXPECT_EQ(ErrorOf(HEADER "scaleDown:\n"
                           "  utilizationThreshold: 1.5\n" ONE_POOL),
            "config.yaml:4: scaleDown.utilizationThreshold: expected a number between 0 and 1, "
            "got 1.5");
  EXPECT_EQ(ErrorOf(HEADER "scaleDown:\n"
                           "  enabled: true\n"
                           "  gpuUtilizationThreshold: -0.1\n" ONE_POOL),
            "config.yaml:5: scaleDown.gpuUtilizationThreshold: expected a number between 0 and 1, "
            "got -0.1");
}

// ---------------------------------------------------------------------------------------------
// Document-level

TEST(AutoscalerConfigErrors, MissingApiVersion) {
  std::string e = ErrorOf("# a comment\nkind: AutoscalerConfig\n" ONE_POOL);
  EXPECT_EQ(e,
            "config.yaml:2: apiVersion: required key is missing (expected "
            "\"tidepool.dev/v1alpha1\")");
}

TEST(AutoscalerConfigErrors, MissingKind) {
  std::string e = ErrorOf("apiVersion: tidepool.dev/v1alpha1\n" ONE_POOL);
  EXPECT_EQ(e, "config.yaml:1: kind: required key is missing (expected \"AutoscalerConfig\")");
}

TEST(AutoscalerConfigErrors, WrongApiVersionOrKind) {
  EXPECT_EQ(
      ErrorOf("apiVersion: tidepool.dev/v1\nkind: AutoscalerConfig\n" ONE_POOL),
      "config.yaml:1: apiVersion: expected \"tidepool.dev/v1alpha1\", got \"tidepool.dev/v1\"");
  // A state file given as --config: the kind says so before any unknown key.
  EXPECT_EQ(ErrorOf("apiVersion: tidepool.dev/v1alpha1\nkind: List\nitems: []\n"),
            "config.yaml:2: kind: expected \"AutoscalerConfig\", got \"List\"");
}

TEST(AutoscalerConfigErrors, EmptyFile) {
  EXPECT_EQ(ErrorOf(""), "config.yaml: the document is empty (expected an AutoscalerConfig)");
  EXPECT_EQ(ErrorOf("# nothing but a comment\n"),
            "config.yaml: the document is empty (expected an AutoscalerConfig)");
  EXPECT_EQ(ErrorOf("---\n"), "config.yaml: the document is empty (expected an AutoscalerConfig)");
}

TEST(AutoscalerConfigErrors, YamlSyntaxError) {
  std::string e = ErrorOf(HEADER
                          "scaleUp:\n"
                          "  expanders: [priority, least-waste\n"
                          "scaleDown: {}\n");
  EXPECT_THAT(e, StartsWith("config.yaml:5: invalid YAML at column "));
  EXPECT_THAT(e, HasSubstr("end of sequence flow not found"));
  // Bad indentation.
  EXPECT_THAT(ErrorOf(HEADER "scaleUp:\n  batchIdle: 1s\n batchMax: 2s\n"),
              StartsWith("config.yaml:5: invalid YAML at column "));
}

TEST(AutoscalerConfigErrors, TwoDocuments) {
  EXPECT_EQ(ErrorOf(HEADER ONE_POOL "---\n" HEADER),
            "config.yaml:9: expected a single YAML document (an AutoscalerConfig), found a second "
            "one");
}

TEST(AutoscalerConfigErrors, NoPools) {
  EXPECT_THAT(ErrorOf(HEADER), StartsWith("config.yaml:1: pools: required key is missing"));
  EXPECT_EQ(ErrorOf(HEADER "pools: []\n"),
            "config.yaml:3: pools: expected at least one pool, got an empty list");
}

TEST(AutoscalerConfigErrors, MissingFile) {
  auto r = LoadAutoscalerConfig("/nonexistent/tidepool/config.yaml");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("\"/nonexistent/tidepool/config.yaml\""));
  EXPECT_THAT(r.error().message(), HasSubstr("No such file or directory"));
}

TEST(AutoscalerConfigErrors, DirectoryIsNotAConfigFile) {
  std::string dir = std::string(TIDEPOOL_SOURCE_DIR) + "/tests/kube/testdata/config";
  auto r = LoadAutoscalerConfig(dir);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr(dir));
}

TEST(AutoscalerConfigErrors, FileErrorsNameTheFile) {
  std::string path = std::string(TIDEPOOL_SOURCE_DIR) + "/tests/kube/testdata/config/bad-max.yaml";
  auto r = LoadAutoscalerConfig(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            path + ":14: pools[1].max: expected a non-negative integer, got \"ten\"");
}

TEST(AutoscalerConfigErrors, UnavailablePoolMustExist) {
  std::string e = ErrorOf(HEADER
                          "provider:\n"
                          "  unavailablePools:\n"
                          "    - cpu\n"
                          "    - gpu-spot\n" ONE_POOL);  // line 6
  EXPECT_EQ(e,
            "config.yaml:6: provider.unavailablePools[1]: no pool named \"gpu-spot\" (expected "
            "one of: cpu)");
}

TEST(AutoscalerConfigErrors, UnknownProviderType) {
  EXPECT_THAT(ErrorOf(HEADER "provider: {type: gce}\n" ONE_POOL),
              StartsWith("config.yaml:3: provider.type: expected one of \"kwok\", \"azure-vmss\", "
                         "\"aks\", \"azure-vms\", \"clusterapi\", got \"gce\""));
}

// ---------------------------------------------------------------------------------------------
// Name syntax helpers

TEST(YamlReader, NameSyntax) {
  EXPECT_TRUE(IsDns1123Label("gpu-heavy-spot"));
  EXPECT_FALSE(IsDns1123Label("-gpu"));
  EXPECT_FALSE(IsDns1123Label("Gpu"));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_TRUE(IsQualifiedName("nvidia.com/gpu"));
  EXPECT_TRUE(IsQualifiedName("node.kubernetes.io/instance-type"));
  EXPECT_TRUE(IsQualifiedName("hugepages-2Mi"));
  EXPECT_FALSE(IsQualifiedName("Bad Key"));
  EXPECT_FALSE(IsQualifiedName("/gpu"));
  EXPECT_FALSE(IsQualifiedName("Example.com/gpu"));
  EXPECT_TRUE(IsLabelValue(""));
  EXPECT_TRUE(IsLabelValue("Standard_NC6s_v3"));
  EXPECT_FALSE(IsLabelValue("a b"));
  EXPECT_EQ(JoinPath("", "pools"), "pools");
  EXPECT_EQ(JoinPath("limits", "nvidia.com/gpu"), "limits[nvidia.com/gpu]");
}

}  // namespace
}  // namespace tidepool::kube::config

// --- Warm capacity (pools[].warm) ------------------------------------------------------------

namespace tidepool::kube::config {
namespace {

#define GPU_POOL_WITH(warm)                                             \
  HEADER                                                                \
  "pools:\n"                                                            \
  "  - name: gpu\n" /* line 4 */                                        \
  "    max: 4\n"                                                        \
  "    pricePerHour: 3\n"                                               \
  "    template:\n"                                                     \
  "      capacity: {cpu: \"8\", memory: 64Gi, nvidia.com/gpu: \"2\"}\n" \
  "    warm:\n" /* line 9 */ warm

TEST(WarmConfigTest, ParsesSpareHeadroomAndPredictive) {
  auto c = ParseAutoscalerConfig(GPU_POOL_WITH("      spareNodes: 1\n"
                                               "      headroom: {nvidia.com/gpu: \"4\"}\n"
                                               "      predictive:\n"
                                               "        enabled: true\n"
                                               "        horizon: 45m\n"
                                               "        maxCostPerDay: 20\n"
                                               "        waitValuePerGpuHour: 6.5\n"),
                                 "config.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  const model::WarmConfig& w = c->pools[0].warm;
  EXPECT_EQ(w.spare_nodes, 1);
  ASSERT_EQ(w.headroom_set.size(), 1u);
  EXPECT_EQ(w.headroom.gpus(), 4);
  EXPECT_TRUE(w.predictive.enabled);
  EXPECT_EQ(w.predictive.horizon, std::chrono::minutes(45));
  EXPECT_DOUBLE_EQ(w.predictive.max_cost_per_day, 20);
  EXPECT_DOUBLE_EQ(w.predictive.wait_value_per_gpu_hour, 6.5);
  EXPECT_TRUE(w.Any());
}

TEST(WarmConfigTest, AbsentMeansNone) {
  auto c = ParseAutoscalerConfig(HEADER ONE_POOL, "config.yaml");
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->pools[0].warm.Any());
}

TEST(WarmConfigTest, ErrorsNameTheKey) {
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      spare: 1\n")),
              StartsWith("config.yaml:10: pools[0].warm.spare: unknown key"));
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      spareNodes: -1\n")),
              HasSubstr("pools[0].warm.spareNodes: expected a non-negative integer"));
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      spareNodes: 5\n")),
              HasSubstr("pools[0].warm.spareNodes: 5 spare nodes is more than the pool's max 4"));
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      headroom: {example.com/fpga: \"1\"}\n")),
              HasSubstr("pools[0].warm.headroom[example.com/fpga]: the pool's nodes have no "
                        "example.com/fpga"));
  EXPECT_THAT(
      ErrorOf(GPU_POOL_WITH("      headroom: {nvidia.com/gpu: \"-1\"}\n")),
      HasSubstr("pools[0].warm.headroom[nvidia.com/gpu]: expected a non-negative quantity"));
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      predictive: {enabled: true}\n")),
              HasSubstr("pools[0].warm.predictive.enabled: predictive pre-warming is enabled "
                        "without a budget (expected maxCostPerDay > 0)"));
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      predictive: {enabled: true, maxCostPerDay: -3}\n")),
              HasSubstr("pools[0].warm.predictive.maxCostPerDay: expected a non-negative number"));
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      predictive: {horizn: 1h}\n")),
              HasSubstr("pools[0].warm.predictive.horizn: unknown key"));
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      predictive: {horizon: 48h}\n")),
              HasSubstr("pools[0].warm.predictive.horizon: expected a duration of at most 24h"));
  EXPECT_THAT(ErrorOf(GPU_POOL_WITH("      [1]\n")), HasSubstr("pools[0].warm: expected a map"));
}

#undef GPU_POOL_WITH

// --- Stopped machines (pools[].scaleDown) ------------------------------------------------------

#define POOL_ON(provider, scale_down)                   \
  HEADER "provider: {type: " provider                   \
         "}\n"                                          \
         "pools:\n"                                     \
         "  - name: gpu\n"                              \
         "    max: 4\n"                                 \
         "    template:\n"                              \
         "      capacity: {cpu: \"8\", memory: 64Gi}\n" \
         "    scaleDown: " scale_down "\n"

TEST(PoolScaleDownConfigTest, DeallocateWithAndWithoutMaxStopped) {
  auto c = ParseAutoscalerConfig(POOL_ON("kwok", "{mode: deallocate, maxStopped: 2}"), "c.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->pools[0].scale_down.mode, model::ScaleDownMode::kDeallocate);
  EXPECT_EQ(c->pools[0].scale_down.max_stopped, 2);
  auto d = ParseAutoscalerConfig(POOL_ON("kwok", "{mode: deallocate}"), "c.yaml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->pools[0].scale_down.max_stopped, 4) << "defaults to the pool's max";
  auto e = ParseAutoscalerConfig(HEADER ONE_POOL, "c.yaml");
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->pools[0].scale_down.Deallocates());
}

TEST(PoolScaleDownConfigTest, AvailabilitySetVmPoolsMayDeallocate) {
  auto c =
      ParseAutoscalerConfig(POOL_ON("azure-vms", "{mode: deallocate, maxStopped: 3}"), "c.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_TRUE(c->pools[0].scale_down.Deallocates());
  EXPECT_EQ(c->pools[0].scale_down.max_stopped, 3);
}

TEST(PoolScaleDownConfigTest, AksAgentPoolsMayDeallocate) {
  auto c = ParseAutoscalerConfig(POOL_ON("aks", "{mode: deallocate, maxStopped: 3}"), "c.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->pools[0].scale_down.mode, model::ScaleDownMode::kDeallocate);
  EXPECT_EQ(c->pools[0].scale_down.max_stopped, 3);
}

TEST(PoolScaleDownConfigTest, ErrorsNameTheKeyAndWhatWasExpected) {
  EXPECT_THAT(ErrorOf(POOL_ON("kwok", "{mode: hibernate}")),
              HasSubstr("pools[0].scaleDown.mode: expected one of \"delete\", \"deallocate\", "
                        "got \"hibernate\""));
  EXPECT_THAT(ErrorOf(POOL_ON("kwok", "{mode: deallocate, maxStopped: -1}")),
              HasSubstr("pools[0].scaleDown.maxStopped: expected a non-negative integer"));
  EXPECT_THAT(ErrorOf(POOL_ON("kwok", "{maxStopped: 2}")),
              HasSubstr("pools[0].scaleDown.maxStopped: maxStopped applies to mode deallocate "
                        "only"));
  EXPECT_THAT(ErrorOf(POOL_ON("kwok", "{mode: deallocate, max: 2}")),
              HasSubstr("pools[0].scaleDown.max: unknown key"));
  EXPECT_THAT(
      ErrorOf(HEADER "provider: {type: clusterapi, namespace: training}\n"
                     "pools:\n"
                     "  - {name: gpu, scaleDown: {mode: deallocate}}\n"),
      HasSubstr("pools[0].scaleDown.mode: provider.type clusterapi cannot stop machines (mode "
                "deallocate works with kwok, azure-vmss, azure-vms, aks; expected mode delete)"));
}

// warm.stoppedNodes: a stock of stopped machines, within maxStopped, in a deallocate pool.
TEST(PoolScaleDownConfigTest, StoppedNodesNeedDeallocateAndFitMaxStopped) {
  auto c = ParseAutoscalerConfig(
      POOL_ON("kwok", "{mode: deallocate, maxStopped: 3}\n    warm: {stoppedNodes: 2}"), "c.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->pools[0].warm.stopped_nodes, 2);
  EXPECT_TRUE(c->pools[0].warm.Any());
  EXPECT_THAT(ErrorOf(POOL_ON("kwok", "{mode: delete}\n    warm: {stoppedNodes: 1}")),
              HasSubstr("pools[0].warm.stoppedNodes: stoppedNodes keeps stopped machines, which "
                        "needs the pool's scaleDown.mode deallocate"));
  EXPECT_THAT(
      ErrorOf(POOL_ON("kwok", "{mode: deallocate, maxStopped: 1}\n    warm: {stoppedNodes: 2}")),
      HasSubstr("pools[0].warm.stoppedNodes: 2 stopped nodes is more than scaleDown.maxStopped 1 "
                "(expected at most maxStopped)"));
  EXPECT_THAT(ErrorOf(POOL_ON("kwok", "{mode: deallocate}\n    warm: {stoppedNodes: -2}")),
              HasSubstr("pools[0].warm.stoppedNodes: expected a non-negative integer"));
}

#undef POOL_ON

// Cluster API: the pools are node groups; `pools:` only adds settings to them by name.
TEST(AutoscalerConfig, ClusterApiPoolsAreOptionalAndAddSettingsByName) {
  auto none = Parse(R"(apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {type: clusterapi, namespace: training, managementKubeconfig: /etc/mgmt/kubeconfig}
)");
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_THAT(none->pools, IsEmpty());
  EXPECT_THAT(none->provider.settings,
              ElementsAre(Pair("managementKubeconfig", "/etc/mgmt/kubeconfig"),
                          Pair("namespace", "training")));

  auto some = Parse(R"(apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {type: clusterapi}
pools:
- {name: gpu-spot, capacityType: spot, pricePerHour: 1.2, priority: 10, warm: {spareNodes: 1}}
)");
  ASSERT_TRUE(some) << some.error().message();
  ASSERT_EQ(some->pools.size(), 1u);
  EXPECT_EQ(some->pools[0].capacity_type, model::CapacityType::kSpot);
  EXPECT_EQ(some->pools[0].priority, 10);
  EXPECT_EQ(some->pools[0].warm.spare_nodes, 1);  // checked against the group's max later
}

TEST(AutoscalerConfigErrors, ClusterApiPoolRefusesWhatTheNodeGroupSays) {
  for (std::string_view key : {"min: 1", "max: 3", "template: {capacity: {cpu: 1, memory: 1Gi}}"}) {
    std::string yaml = fmt::format(R"(apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {{type: clusterapi}}
pools:
- name: gpu
  {}
)",
                                   key);
    EXPECT_THAT(ErrorOf(yaml),
                AllOf(HasSubstr("config.yaml:6"), HasSubstr("comes from the node group"),
                      HasSubstr("cluster-api-autoscaler-node-group")))
        << key;
  }
}

TEST(AutoscalerConfigErrors, OtherProvidersStillNeedPools) {
  EXPECT_THAT(ErrorOf(R"(apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {type: kwok}
)"),
              HasSubstr("pools"));
}

}  // namespace
}  // namespace tidepool::kube::config

namespace tidepool::kube::config {
namespace {

constexpr std::string_view kDevicePool = R"(
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
pools:
- name: a100
  max: 4
  template:
    capacity: {cpu: "8", memory: 64Gi}
    devices:
    - driver: gpu.example.com
      count: 2
      attributes:
        productName: NVIDIA A100-SXM4-80GB
        index: 0
        mig: false
        example.com/pcieRoot: pci0
        driverVersion: {version: 550.54.15}
      capacity: {memory: 80Gi}
    - {driver: nic.example.com}
)";

TEST(AutoscalerConfigDevices, TemplateDevicesBecomeSlicesOfTheTemplateNode) {
  model::AutoscalerConfig c = MustParse(kDevicePool);
  const model::Pool& p = c.pools[0];
  ASSERT_EQ(p.devices.size(), 2u);
  const auto& attrs = p.devices[0].attributes;
  using Kind = model::DeviceAttribute::Kind;
  EXPECT_EQ(attrs.at("gpu.example.com/productName").text, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(attrs.at("gpu.example.com/index").kind, Kind::kInt);
  EXPECT_EQ(attrs.at("gpu.example.com/mig").kind, Kind::kBool);
  EXPECT_EQ(attrs.at("example.com/pcieRoot").text, "pci0");
  EXPECT_EQ(attrs.at("gpu.example.com/driverVersion").kind, Kind::kVersion);
  EXPECT_EQ(p.devices[0].capacity.at("gpu.example.com/memory"), *model::Quantity::Parse("80Gi"));
  EXPECT_EQ(p.devices[1].count, 1);
  ASSERT_EQ(p.device_slices.size(), 2u);
  EXPECT_EQ(p.device_slices[0].driver, "gpu.example.com");
  EXPECT_EQ(p.device_slices[0].node_name, p.template_node.meta.name);
  ASSERT_EQ(p.device_slices[0].devices.size(), 2u);
  EXPECT_EQ(p.device_slices[0].devices[1].name, "gpu-1");
  EXPECT_EQ(p.device_slices[1].devices[0].name, "nic-0");
}

TEST(AutoscalerConfigDevices, ErrorsNameTheKey) {
  auto with = [](std::string_view devices) {
    return ErrorOf(std::string(R"(
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
pools:
- name: p
  max: 4
  template:
    capacity: {cpu: "8", memory: 64Gi}
    devices: )") + std::string(devices) +
                   "\n");
  };
  EXPECT_THAT(with("[{count: 2}]"), HasSubstr("pools[0].template.devices[0].driver: required key"));
  EXPECT_THAT(with("[{driver: g.example.com, count: 0}]"),
              HasSubstr("pools[0].template.devices[0].count: expected an integer from 1 to 1024"));
  EXPECT_THAT(with("[{driver: g.example.com, colour: red}]"),
              HasSubstr("pools[0].template.devices[0].colour"));
  EXPECT_THAT(with("[{driver: g.example.com, capacity: {memory: lots}}]"),
              HasSubstr("pools[0].template.devices[0].capacity.memory"));
  EXPECT_THAT(with("[{driver: g.example.com, attributes: {v: {semver: 1}}}]"),
              HasSubstr("pools[0].template.devices[0].attributes.v.semver"));
}

TEST(PoolScaleDownConfigTest, RestartDelayNeedsADeallocatePool) {
  const std::string pool =
      "pools:\n"
      "  - name: gpu\n"
      "    max: 4\n"
      "    template:\n"
      "      capacity: {cpu: \"8\", memory: 64Gi}\n";
  auto c = ParseAutoscalerConfig(
      HEADER + pool + "    scaleDown: {mode: deallocate}\n    restartDelay: 20s\n", "c.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->pools[0].restart_delay, std::chrono::seconds(20));
  EXPECT_THAT(ErrorOf(HEADER + pool + "    restartDelay: 20s\n"),
              HasSubstr("pools[0].restartDelay: restartDelay applies to pools with scaleDown.mode "
                        "deallocate"));
}

}  // namespace
}  // namespace tidepool::kube::config
