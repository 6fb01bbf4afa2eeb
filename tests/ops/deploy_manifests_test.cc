// Structural checks of the committed manifests (deploy/manifests/, rendered from the Helm chart):
// the AutoscalerConfig in the ConfigMap loads, the RBAC rules are exactly the verbs the controller
// uses, and the Deployment runs hardened with probes, leader election and the ops endpoint.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kube/config/autoscaler_config.h"

namespace tidepool::ops {
namespace {

using Rules = std::map<std::string, std::set<std::string>>;  // "group/resource" -> verbs

std::vector<YAML::Node> LoadManifests(const std::string& name) {
  std::string path = std::string(TIDEPOOL_SOURCE_DIR) + "/deploy/manifests/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  std::vector<YAML::Node> docs;
  for (const YAML::Node& d : YAML::LoadAll(text.str()))
    if (d.IsMap()) docs.push_back(d);
  return docs;
}

YAML::Node Find(const std::vector<YAML::Node>& docs, const std::string& kind) {
  for (const auto& d : docs)
    if (d["kind"].as<std::string>() == kind) return d;
  ADD_FAILURE() << "no " << kind;
  return YAML::Node();
}

Rules RulesOf(const YAML::Node& role) {
  Rules r;
  for (const auto& rule : role["rules"]) {
    EXPECT_FALSE(rule["resourceNames"]) << "unexpected resourceNames";
    EXPECT_FALSE(rule["nonResourceURLs"]) << "unexpected nonResourceURLs";
    for (const auto& g : rule["apiGroups"])
      for (const auto& res : rule["resources"])
        for (const auto& v : rule["verbs"]) {
          std::string key = g.as<std::string>() + "/" + res.as<std::string>();
          EXPECT_TRUE(r[key].insert(v.as<std::string>()).second) << "verb listed twice: " << key;
        }
  }
  return r;
}

Rules ExpectedClusterRules(bool kwok) {
  Rules r = {
      {"/pods", {"get", "list", "watch"}},
      {"/pods/eviction", {"create"}},
      {"/nodes", {"get", "list", "watch", "patch", "update", "delete"}},
      {"policy/poddisruptionbudgets", {"list", "watch"}},
      {"apps/daemonsets", {"list", "watch"}},
      {"/events", {"create", "patch"}},
      {"events.k8s.io/events", {"create", "patch"}},
      {"scheduling.x-k8s.io/podgroups", {"list", "watch"}},
      {"autoscaling.x-k8s.io/provisioningrequests", {"list", "watch"}},
      {"autoscaling.x-k8s.io/provisioningrequests/status", {"get", "update"}},
      {"/podtemplates", {"list", "watch"}},
      {"autoscaling.x-k8s.io/capacitybuffers", {"list", "watch"}},
      {"autoscaling.x-k8s.io/capacitybuffers/status", {"get", "update"}},
      {"apps/deployments", {"list", "watch"}},
      {"resource.k8s.io/deviceclasses", {"list", "watch"}},
      {"resource.k8s.io/resourceclaims", {"list", "watch"}},
      {"resource.k8s.io/resourceclaimtemplates", {"list", "watch"}},
      {"resource.k8s.io/resourceslices", {"list", "watch"}},
  };
  if (kwok) r["/nodes"].insert("create");
  if (kwok) r["resource.k8s.io/resourceslices"].insert("create");
  return r;
}

std::vector<std::string> Strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const auto& n : list) out.push_back(n.as<std::string>());
  return out;
}

struct Variant {
  std::string file;
  bool kwok;
  int replicas;
};

class DeployManifestsTest : public ::testing::TestWithParam<Variant> {};

TEST_P(DeployManifestsTest, ConfigMapHoldsALoadableConfig) {
  auto docs = LoadManifests(GetParam().file);
  YAML::Node cm = Find(docs, "ConfigMap");
  ASSERT_TRUE(cm["data"]["config.yaml"]);
  auto config = kube::config::ParseAutoscalerConfig(cm["data"]["config.yaml"].as<std::string>(),
                                                    GetParam().file + ":config.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  EXPECT_EQ(config->provider.type == "kwok", GetParam().kwok);
  EXPECT_GE(config->pools.size(), 3u);
}

TEST_P(DeployManifestsTest, RbacIsExactlyTheControllersVerbs) {
  auto docs = LoadManifests(GetParam().file);
  EXPECT_EQ(RulesOf(Find(docs, "ClusterRole")), ExpectedClusterRules(GetParam().kwok));
  Rules role = {{"/configmaps", {"get", "create", "update", "patch"}},
                {"coordination.k8s.io/leases", {"get", "create", "update"}}};
  YAML::Node r = Find(docs, "Role");
  EXPECT_EQ(RulesOf(r), role);
  EXPECT_EQ(r["metadata"]["namespace"].as<std::string>(), "kube-system");
  // Both bindings name the ServiceAccount the Deployment runs as.
  std::string sa = Find(docs, "ServiceAccount")["metadata"]["name"].as<std::string>();
  for (const char* kind : {"ClusterRoleBinding", "RoleBinding"}) {
    YAML::Node b = Find(docs, kind);
    ASSERT_EQ(b["subjects"].size(), 1u) << kind;
    EXPECT_EQ(b["subjects"][0]["kind"].as<std::string>(), "ServiceAccount");
    EXPECT_EQ(b["subjects"][0]["name"].as<std::string>(), sa);
    EXPECT_EQ(b["subjects"][0]["namespace"].as<std::string>(), "kube-system");
  }
  for (const auto& d : docs) EXPECT_NE(d["kind"].as<std::string>(), "Secret");
}

TEST_P(DeployManifestsTest, DeploymentIsHardenedAndProbed) {
  auto docs = LoadManifests(GetParam().file);
  YAML::Node dep = Find(docs, "Deployment");
  EXPECT_EQ(dep["spec"]["replicas"].as<int>(), GetParam().replicas);
  YAML::Node pod = dep["spec"]["template"]["spec"];
  EXPECT_EQ(pod["priorityClassName"].as<std::string>(), "system-cluster-critical");
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(),
            Find(docs, "ServiceAccount")["metadata"]["name"].as<std::string>());
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_EQ(pod["securityContext"]["runAsUser"].as<int>(), 65532);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
  ASSERT_EQ(pod["containers"].size(), 1u);
  YAML::Node c = pod["containers"][0];
  EXPECT_TRUE(c["securityContext"]["readOnlyRootFilesystem"].as<bool>());
  EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>());
  EXPECT_EQ(Strings(c["securityContext"]["capabilities"]["drop"]), std::vector<std::string>{"ALL"});
  std::vector<std::string> args = Strings(c["args"]);
  ASSERT_GE(args.size(), 4u);
  EXPECT_EQ(args[0], "run");
  EXPECT_EQ(args[1], "--config=/etc/tidepool/config.yaml");
  EXPECT_EQ(args[2], "--listen=:8085");
  EXPECT_EQ(args[3], "--leader-elect");
  EXPECT_EQ(c["ports"][0]["name"].as<std::string>(), "http");
  EXPECT_EQ(c["ports"][0]["containerPort"].as<int>(), 8085);
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"].as<std::string>(), "http");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  EXPECT_TRUE(c["resources"]["requests"]["cpu"]);
  EXPECT_TRUE(c["resources"]["requests"]["memory"]);
  EXPECT_TRUE(c["resources"]["limits"]["memory"]);
  // The config volume is the ConfigMap above, mounted read-only where --config points.
  std::string cm = Find(docs, "ConfigMap")["metadata"]["name"].as<std::string>();
  bool mounted = false;
  for (const auto& v : pod["volumes"]) {
    if (v["name"].as<std::string>() == "config") {
      EXPECT_EQ(v["configMap"]["name"].as<std::string>(), cm);
    }
  }
  for (const auto& m : c["volumeMounts"]) {
    if (m["name"].as<std::string>() == "config") {
      mounted = true;
      EXPECT_EQ(m["mountPath"].as<std::string>(), "/etc/tidepool");
      EXPECT_TRUE(m["readOnly"].as<bool>());
    }
  }
  EXPECT_TRUE(mounted);
  // The Service and the PodDisruptionBudget select the Deployment's pods.
  YAML::Node labels = dep["spec"]["template"]["metadata"]["labels"];
  YAML::Node svc = Find(docs, "Service");
  for (const auto& kv : svc["spec"]["selector"]) {
    EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  }
  EXPECT_EQ(svc["spec"]["ports"][0]["port"].as<int>(), 8085);
  EXPECT_EQ(svc["spec"]["ports"][0]["targetPort"].as<std::string>(), "http");
  YAML::Node pdb = Find(docs, "PodDisruptionBudget");
  for (const auto& kv : pdb["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, DeployManifestsTest,
                         ::testing::Values(Variant{"tidepool.yaml", false, 2},
                                           Variant{"tidepool-kwok.yaml", true, 1}),
                         [](const auto& info) { return info.param.kwok ? "kwok" : "aks"; });

}  // namespace
}  // namespace tidepool::ops
