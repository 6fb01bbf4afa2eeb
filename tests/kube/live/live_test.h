// The fixture of the kube_live tests (the Kubernetes client and the controller's reader against
// the real API server of testenv/): a kubeconfig from ctest's kube_testenv fixture and a
// namespace of each test's own, with helpers for the objects the tests create.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/time.h"
#include "kube/client/api_client.h"
#include "kube/client/client_config.h"
#include "kube/client/writes.h"
#include "net/http.h"

namespace tidepool::kube::live {

using Json = nlohmann::json;

// Polls `cond` every 50 ms until it holds or `timeout` passes; returns whether it held.
inline bool WaitFor(const std::function<bool()>& cond,
                    Duration timeout = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

inline std::string KubeconfigPath() {
  const char* direct = std::getenv("TIDEPOOL_KUBE_LIVE_KUBECONFIG");
  if (direct != nullptr && *direct != '\0') return direct;
  const char* file = std::getenv("TIDEPOOL_KUBE_LIVE_KUBECONFIG_FILE");
  if (file == nullptr || *file == '\0') return "";
  std::ifstream in(file);
  std::string path;
  std::getline(in, path);
  return path;
}

// Compacts testenv's etcd (its v3 JSON gateway; the endpoint is in the state directory's `env`
// file, next to the kubeconfig) at the current revision, so that watches from an old
// resourceVersion get 410 Gone from the API server, as after its periodic compaction.
inline void CompactEtcd() {
  std::string env_path =
      std::filesystem::path(KubeconfigPath()).parent_path().append("env").string();
  std::ifstream env(env_path);
  ASSERT_TRUE(env) << "cannot read " << env_path;
  std::string line, etcd;
  while (std::getline(env, line)) {
    if (line.starts_with("TESTENV_ETCD=")) etcd = line.substr(13);
  }
  ASSERT_FALSE(etcd.empty()) << "no TESTENV_ETCD in " << env_path;
  net::HttpClient http;
  auto range = http.Send(
      {.method = "POST", .url = etcd + "/v3/kv/range", .body = R"({"key":"AA==","limit":1})"});
  ASSERT_TRUE(range && range->status == 200) << (range ? range->body : range.error().message());
  std::string revision = Json::parse(range->body)["header"]["revision"];
  auto compacted = http.Send({.method = "POST",
                              .url = etcd + "/v3/kv/compaction",
                              .body = Json({{"revision", revision}, {"physical", true}}).dump()});
  ASSERT_TRUE(compacted && compacted->status == 200)
      << (compacted ? compacted->body : compacted.error().message());
}

class LiveTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string path = KubeconfigPath();
    if (path.empty()) return;
    auto config = LoadKubeconfig(path);
    ASSERT_TRUE(config) << config.error().message();
    config_ = new ClientConfig(*config);
  }
  static void TearDownTestSuite() {
    delete config_;
    config_ = nullptr;
  }

  void SetUp() override {
    if (config_ == nullptr) {
      if (std::getenv("TIDEPOOL_KUBE_LIVE_KUBECONFIG_FILE") != nullptr) {
        FAIL() << "TIDEPOOL_KUBE_LIVE_KUBECONFIG_FILE is set but names no kubeconfig (testenv "
                  "fixture failed?)";
      }
      GTEST_SKIP() << "no testenv: run through ctest (fixture kube_testenv) or set "
                      "TIDEPOOL_KUBE_LIVE_KUBECONFIG";
    }
    client_ = std::make_unique<ApiClient>(*config_);
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string lower;
    for (char c : test) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      }
    }
    std::mt19937 rng(std::random_device{}());
    ns_ = "kl-" + lower.substr(0, 40) + "-" + std::to_string(rng() % 100000);
    auto created = client_->Create(
        "/api/v1/namespaces",
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created) << created.error().message();
  }

  void TearDown() override {
    for (const auto& node : nodes_) (void)client_->Delete(ObjectPath("v1", "nodes", "", node));
    if (client_ && !ns_.empty()) {
      (void)client_->Delete(ObjectPath("v1", "namespaces", "", ns_));
    }
  }

  Json ConfigMap(const std::string& name, const std::string& value) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", ns_}}},
            {"data", {{"v", value}}}};
  }
  std::string ConfigMaps() const { return CollectionPath("v1", "configmaps", ns_); }
  // A core/v1 Event (the API server keeps no watch cache for Events: watches go to etcd).
  Json Event(const std::string& name, const std::string& message) {
    return {{"apiVersion", "v1"},
            {"kind", "Event"},
            {"metadata", {{"name", name}, {"namespace", ns_}}},
            {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"namespace", ns_}}},
            {"reason", "Test"},
            {"message", message},
            {"type", "Normal"}};
  }
  std::string Events() const { return CollectionPath("v1", "events", ns_); }

  // A Node named after the test namespace; kwok-managed (Ready, runs pods) when `kwok`.
  std::string CreateTestNode(const std::string& suffix, bool kwok) {
    std::string name = ns_ + "-" + suffix;
    Json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", name}, {"labels", {{"kube-live", ns_}}}}},
                 {"status",
                  {{"capacity", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
                   {"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}}}}};
    if (kwok) node["metadata"]["annotations"] = {{"kwok.x-k8s.io/node", "fake"}};
    auto created = CreateNode(*client_, node);
    EXPECT_TRUE(created) << created.error().message();
    nodes_.push_back(name);
    return name;
  }

  Json Pod(const std::string& name, const std::string& node, const std::string& app) {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns_}, {"labels", {{"app", app}}}}},
            {"spec",
             {{"nodeName", node},
              {"containers",
               {{{"name", "main"},
                 {"image", "busybox"},
                 {"resources", {{"requests", {{"cpu", "100m"}}}}}}}}}}};
  }

  std::string PodPhase(const std::string& name) {
    auto pod = client_->Get(ObjectPath("v1", "pods", ns_, name));
    if (!pod) return pod.error().code() == Error::Code::kNotFound ? "Gone" : "";
    return (*pod)["status"].value("phase", "");
  }

  static inline ClientConfig* config_ = nullptr;
  std::unique_ptr<ApiClient> client_;
  std::string ns_;
  std::vector<std::string> nodes_;
};

}  // namespace tidepool::kube::live
