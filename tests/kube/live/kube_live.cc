// kube_live: the Kubernetes client against the real API server of testenv/ (etcd,
// kube-apiserver, scheduler, controller-manager, kwok). ctest brings one testenv up for the whole
// binary (fixture kube_testenv, see CMakeLists.txt) and passes the kubeconfig path file in
// TIDEPOOL_KUBE_LIVE_KUBECONFIG_FILE; each test works in a namespace of its own.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kube/client/api_client.h"
#include "kube/client/client_config.h"
#include "kube/client/informer.h"
#include "kube/client/leader.h"
#include "kube/client/writes.h"
#include "net/http.h"
#include "tests/kube/live/live_test.h"

namespace tidepool::kube {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using SteadyClock = std::chrono::steady_clock;

using live::CompactEtcd;
using live::KubeconfigPath;
using live::LiveTest;
using live::WaitFor;

// Collects watch events from a background Watch until stopped.
class WatchCollector {
 public:
  WatchCollector(ApiClient& client, std::string collection, std::string rv) {
    thread_ = std::thread([this, &client, collection, rv] {
      result_ = client.Watch(
          collection, rv,
          [this](const WatchEvent& e) {
            std::lock_guard lock(mu_);
            if (e.type != WatchEvent::Type::kBookmark) {
              static constexpr const char* kNames[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK",
                                                       "ERROR"};
              events_.push_back(std::string(kNames[static_cast<int>(e.type)]) + " " +
                                e.object["metadata"].value("name", "") + " " +
                                e.object.value("data", Json::object()).value("v", ""));
            }
            cv_.notify_all();
            return true;
          },
          &cancel_, seconds(60));
    });
  }
  ~WatchCollector() {
    cancel_ = true;
    thread_.join();
  }
  bool WaitForCount(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(30), [&] { return events_.size() >= n; });
  }
  std::vector<std::string> Events() {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  std::atomic<bool> cancel_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
  Result<void> result_;
  std::thread thread_;
};

TEST_F(LiveTest, ListPaginatesAndWatchSeesAddModifyDelete) {
  for (int i = 0; i < 23; ++i) {
    auto r = client_->Create(ConfigMaps(), ConfigMap("cm-" + std::to_string(i), "x"));
    ASSERT_TRUE(r) << r.error().message();
  }
  // kube-root-ca.crt is published into every namespace; wait for it so the count is stable.
  ASSERT_TRUE(WaitFor([&] {
    return client_->Get(ObjectPath("v1", "configmaps", ns_, "kube-root-ca.crt")).has_value();
  }));
  auto first = client_->List(ConfigMaps(), 10);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->items.size(), 10u);
  EXPECT_FALSE(first->continue_token.empty());
  EXPECT_FALSE(first->resource_version.empty());
  auto all = client_->ListAll(ConfigMaps(), 10);
  ASSERT_TRUE(all) << all.error().message();
  EXPECT_EQ(all->items.size(), 24u);  // 23 + kube-root-ca.crt
  EXPECT_TRUE(all->continue_token.empty());
  std::set<std::string> names;
  for (const auto& item : all->items) names.insert(item["metadata"]["name"].get<std::string>());
  EXPECT_EQ(names.size(), 24u);

  WatchCollector watch(*client_, ConfigMaps(), all->resource_version);
  ASSERT_TRUE(client_->Create(ConfigMaps(), ConfigMap("watched", "1")));
  ASSERT_TRUE(
      client_->Patch(ObjectPath("v1", "configmaps", ns_, "watched"), {{"data", {{"v", "2"}}}}));
  ASSERT_TRUE(client_->Delete(ObjectPath("v1", "configmaps", ns_, "watched")));
  ASSERT_TRUE(watch.WaitForCount(3));
  EXPECT_THAT(watch.Events(),
              ElementsAre("ADDED watched 1", "MODIFIED watched 2", "DELETED watched 2"));
}

TEST_F(LiveTest, WatchFromACompactedResourceVersionIsExpired) {
  auto first = client_->Create(Events(), Event("a", "1"));
  ASSERT_TRUE(first);
  std::string rv = (*first)["metadata"]["resourceVersion"];
  ASSERT_TRUE(client_->Create(Events(), Event("b", "1")));
  ASSERT_TRUE(client_->Create(Events(), Event("c", "1")));
  ASSERT_NO_FATAL_FAILURE(CompactEtcd());  // keeps only the latest revision (c's)
  auto r = client_->Watch(
      Events(), rv, [](const WatchEvent&) { return true; }, nullptr, seconds(5));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kExpired) << r.error().message();
}

TEST_F(LiveTest, GetErrorsMapToCodes) {
  auto missing = client_->Get(ObjectPath("v1", "configmaps", ns_, "nope"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Error::Code::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("GET /api/v1/namespaces/" + ns_ +
                                                   "/configmaps/nope: 404 Not Found: "
                                                   "configmaps \"nope\" not found"));
  ASSERT_TRUE(client_->Create(ConfigMaps(), ConfigMap("dup", "1")));
  auto dup = client_->Create(ConfigMaps(), ConfigMap("dup", "1"));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code(), Error::Code::kConflict);
  auto invalid = client_->Create(ConfigMaps(), ConfigMap("Not_A_Name", "1"));
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().code(), Error::Code::kInvalidArgument);
  auto stale = client_->Delete(ObjectPath("v1", "configmaps", ns_, "dup"), "", "1");
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), Error::Code::kConflict);
}

TEST_F(LiveTest, InformerResumesAfterACutAndRelistsAfterGone) {
  std::atomic<int> decoded{0};
  RawInformer informer(*client_,
                       InformerOptions{.collection = Events(), .name = "events", .page_size = 3},
                       [&](const Json& j) -> Result<Json> {
                         ++decoded;
                         if (j["metadata"].value("name", "").starts_with("bad")) {
                           return InvalidArgument("bad object {}", j["metadata"].value("name", ""));
                         }
                         return j;
                       });
  std::mutex mu;
  std::vector<std::string> changes;
  informer.SetChangeCallback([&](ChangeType type, const std::string& key) {
    std::lock_guard lock(mu);
    changes.push_back(std::string(type == ChangeType::kAdded      ? "+"
                                  : type == ChangeType::kModified ? "~"
                                                                  : "-") +
                      key);
  });
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(client_->Create(Events(), Event("pre-" + std::to_string(i), "x")));
  }
  ASSERT_TRUE(client_->Create(Events(), Event("bad-1", "x")));
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(seconds(30)));
  auto has = [&](const std::string& name) { return informer.Get(ns_ + "/" + name) != nullptr; };
  ASSERT_TRUE(has("pre-6"));
  EXPECT_FALSE(has("bad-1"));
  EXPECT_EQ(informer.Stats().decode_errors, 1u);
  EXPECT_EQ(informer.Stats().lists, 1u);

  // Watch: add, modify, delete, and a bad object arriving by watch is skipped.
  ASSERT_TRUE(client_->Create(Events(), Event("live", "1")));
  ASSERT_TRUE(WaitFor([&] { return has("live"); }));
  ASSERT_TRUE(client_->Create(Events(), Event("bad-2", "x")));
  ASSERT_TRUE(client_->Patch(ObjectPath("v1", "events", ns_, "live"), {{"message", "2"}}));
  ASSERT_TRUE(WaitFor([&] { return (*informer.Get(ns_ + "/live"))["message"] == "2"; }));
  EXPECT_EQ(informer.Stats().decode_errors, 2u);
  ASSERT_TRUE(client_->Delete(ObjectPath("v1", "events", ns_, "pre-0")));
  ASSERT_TRUE(WaitFor([&] { return !has("pre-0"); }));
  {
    std::lock_guard lock(mu);
    EXPECT_THAT(changes, testing::Contains("+" + ns_ + "/live"));
    EXPECT_THAT(changes, testing::Contains("~" + ns_ + "/live"));
    EXPECT_THAT(changes, testing::Contains("-" + ns_ + "/pre-0"));
  }

  // A cut stream resumes from the last resourceVersion: no relist, nothing missed.
  informer.InterruptWatchForTesting();
  ASSERT_TRUE(client_->Create(Events(), Event("after-cut", "1")));
  // The cut is asynchronous: the old stream may deliver the new object before it ends, so wait
  // for both (a watch that never reconnects still fails here).
  ASSERT_TRUE(WaitFor([&] { return has("after-cut") && informer.Stats().reconnects >= 1; }));
  EXPECT_EQ(informer.Stats().relists, 0u);

  // Disconnected while etcd is compacted past our resourceVersion (Events have no watch cache in
  // the API server, so the watch goes to etcd): 410, relist, the cache replaced. What changed
  // meanwhile (a delete the watch never delivered) is reconciled by the relist.
  std::string old_rv = informer.ResourceVersion();
  ASSERT_TRUE(client_->Delete(ObjectPath("v1", "events", ns_, "pre-1")));
  ASSERT_TRUE(client_->Create(Events(), Event("after-gone", "1")));
  ASSERT_NO_FATAL_FAILURE(CompactEtcd());
  informer.ResumeFromForTesting(old_rv);
  ASSERT_TRUE(WaitFor([&] { return informer.Stats().relists >= 1 && has("after-gone"); }));
  EXPECT_FALSE(has("pre-1"));
  EXPECT_TRUE(has("after-cut"));
  EXPECT_EQ(informer.Stats().lists, 2u);

  // A relist that finds the objects the cache holds leaves its count of changes (a reader's view
  // keeps its version); the next change moves it.
  uint64_t count = informer.Changes();
  const int decodes = decoded.load();
  informer.ResumeFromForTesting(old_rv);
  ASSERT_TRUE(WaitFor([&] { return informer.Stats().relists >= 2; }));
  EXPECT_EQ(informer.Changes(), count);
  // Only the objects written since the cache read them are decoded again: here the undecodable
  // ones, which the cache does not hold.
  EXPECT_EQ(decoded.load(), decodes + 2);
  auto counted = informer.CountedSnapshot();
  EXPECT_EQ(counted.changes, count);
  EXPECT_EQ(counted.items.size(), informer.Size());
  ASSERT_TRUE(client_->Create(Events(), Event("after-relist", "1")));
  ASSERT_TRUE(WaitFor([&] { return has("after-relist"); }));
  EXPECT_EQ(informer.Changes(), count + 1);

  // Snapshot agrees with a fresh list (minus the undecodable objects).
  auto all = client_->ListAll(Events());
  ASSERT_TRUE(all);
  ASSERT_TRUE(WaitFor([&] { return informer.Size() + 2 == all->items.size(); }));
  std::vector<std::string> snapshot;
  for (const auto& cm : informer.Snapshot()) snapshot.push_back((*cm)["metadata"]["name"]);
  EXPECT_TRUE(std::is_sorted(snapshot.begin(), snapshot.end()));
  informer.Stop();
  EXPECT_FALSE(informer.ResourceVersion().empty());
}

TEST_F(LiveTest, TypedInformersDecodeModelObjects) {
  auto nodes = MakeNodeInformer(*client_);
  auto pods = MakePodInformer(*client_);
  std::atomic<int> pod_changes{0};
  pods->SetChangeCallback([&](ChangeType, const std::string& key) {
    if (key.starts_with(ns_ + "/")) ++pod_changes;
  });
  nodes->Start();
  pods->Start();
  auto pdbs = MakePdbInformer(*client_);
  auto daemonsets = MakeDaemonSetInformer(*client_);
  pdbs->Start();
  daemonsets->Start();
  ASSERT_TRUE(nodes->WaitForSync(seconds(30)));
  ASSERT_TRUE(pods->WaitForSync(seconds(30)));
  ASSERT_TRUE(pdbs->WaitForSync(seconds(30)));
  ASSERT_TRUE(daemonsets->WaitForSync(seconds(30)));

  std::string node = CreateTestNode("n", /*kwok=*/true);
  ASSERT_TRUE(WaitFor([&] {
    auto n = nodes->Get(node);
    return n != nullptr && n->ready;
  })) << "kwok did not make the node Ready";
  EXPECT_EQ(*nodes->Get(node)->meta.Label("kube-live"), ns_);

  ASSERT_TRUE(client_->Create(CollectionPath("v1", "pods", ns_), Pod("p", node, "a")));
  ASSERT_TRUE(WaitFor([&] {
    auto p = pods->Get(ns_ + "/p");
    return p != nullptr && p->phase == model::PodPhase::kRunning;
  }));
  EXPECT_GE(pod_changes.load(), 2);  // added, then modified to Running
  EXPECT_EQ(nodes->Stats().decode_errors, 0u);
  EXPECT_EQ(pods->Stats().decode_errors, 0u);
}

// A kubelet rewrites its node's status every few minutes (conditions' lastHeartbeatTime) with
// nothing a decoded Node holds: the informer keeps the object it handed out and counts no change,
// so a quiet cluster stays quiet to the controller. A change it decodes (a label) is one.
TEST_F(LiveTest, NodeStatusHeartbeatsAreNoChangeToTheInformer) {
  auto nodes = MakeNodeInformer(*client_);
  std::atomic<int> notified{0};
  nodes->SetChangeCallback([&](ChangeType, const std::string& key) {
    if (key.starts_with(ns_)) ++notified;
  });
  nodes->Start();
  ASSERT_TRUE(nodes->WaitForSync(seconds(30)));
  // kwok plays the kubelet (Ready, the node's lease); once the node is Ready and untainted, only
  // this test writes what the informer decodes.
  std::string node = CreateTestNode("beat", /*kwok=*/true);
  ASSERT_TRUE(WaitFor([&] {
    auto n = nodes->Get(node);
    return n != nullptr && n->ready && n->taints.empty();
  })) << "kwok did not make the node Ready";
  std::this_thread::sleep_for(seconds(1));
  const std::shared_ptr<const model::Node> seen = nodes->Get(node);
  const uint64_t changes = nodes->Changes();
  const uint64_t unchanged = nodes->Stats().unchanged;
  notified = 0;

  // What a kubelet's heartbeat writes: the Ready condition's lastHeartbeatTime (strategic merge by
  // condition type, as the kubelet patches it).
  const std::string status = ObjectPath("v1", "nodes", "", node) + "/status";
  for (int beat = 1; beat <= 3; ++beat) {
    Json ready = {{"type", "Ready"},
                  {"lastHeartbeatTime",
                   FormatRfc3339(std::chrono::floor<seconds>(RealClock().Now() + seconds(beat)))}};
    auto written = client_->Patch(status, {{"status", {{"conditions", Json::array({ready})}}}},
                                  PatchType::kStrategicMerge);
    ASSERT_TRUE(written) << written.error().message();
  }
  ASSERT_TRUE(WaitFor([&] { return nodes->Stats().unchanged >= unchanged + 3; }))
      << "the informer saw " << nodes->Stats().unchanged - unchanged << " of 3 heartbeats";
  EXPECT_EQ(nodes->Changes(), changes);
  EXPECT_EQ(nodes->Get(node), seen) << "the object handed out is kept";
  EXPECT_EQ(notified.load(), 0);

  // A relist from a resourceVersion the watch cache no longer holds finds the same node.
  nodes->ResumeFromForTesting("1");
  ASSERT_TRUE(WaitFor([&] { return nodes->Stats().relists >= 1; }));
  EXPECT_EQ(nodes->Changes(), changes);
  EXPECT_EQ(nodes->Get(node), seen);

  ASSERT_TRUE(client_->Patch(ObjectPath("v1", "nodes", "", node),
                             {{"metadata", {{"labels", {{"pool", "gpu"}}}}}}));
  ASSERT_TRUE(WaitFor([&] { return nodes->Get(node)->meta.Label("pool") != nullptr; }));
  EXPECT_EQ(nodes->Changes(), changes + 1);
  EXPECT_NE(nodes->Get(node), seen);
  EXPECT_EQ(notified.load(), 1);
  nodes->Stop();
}

TEST_F(LiveTest, PodGroupInformerIsSyncedEmptyWithoutTheCrdAndPicksItUp) {
  auto informer =
      MakePodGroupInformer(*client_, InformerOptions{.absent_recheck = milliseconds(500)});
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(seconds(30)));
  EXPECT_FALSE(informer->Present());
  EXPECT_EQ(informer->Size(), 0u);

  Json crd = Json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
    "spec": {"group": "scheduling.x-k8s.io", "scope": "Namespaced",
      "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup"},
      "versions": [{"name": "v1alpha1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object",
          "x-kubernetes-preserve-unknown-fields": true}}}]}})");
  std::string crd_path =
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.x-k8s.io";
  auto created = client_->Create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
  ASSERT_TRUE(created) << created.error().message();
  std::string group_path = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/" + ns_ + "/podgroups";
  Json group = {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                {"kind", "PodGroup"},
                {"metadata", {{"name", "gang"}, {"namespace", ns_}}},
                {"spec", {{"minMember", 4}}}};
  ASSERT_TRUE(WaitFor([&] { return client_->Create(group_path, group).has_value(); }));
  ASSERT_TRUE(WaitFor([&] { return informer->Get(ns_ + "/gang") != nullptr; }));
  EXPECT_TRUE(informer->Present());
  EXPECT_EQ((*informer->Get(ns_ + "/gang"))["spec"]["minMember"], 4);
  informer->Stop();
  ASSERT_TRUE(client_->Delete(crd_path));
}

TEST_F(LiveTest, TaintsAndCordonAreIdempotent) {
  std::string node = CreateTestNode("t", /*kwok=*/false);
  std::string value = TaintTimestamp(RealClock().Now());
  auto count = [&](std::string_view key) {
    auto n = client_->Get(ObjectPath("v1", "nodes", "", node));
    EXPECT_TRUE(n);
    int c = 0;
    for (const auto& t : (*n)["spec"].value("taints", Json::array())) c += t["key"] == key;
    return c;
  };
  auto added = AddTaint(*client_, node, kToBeDeletedTaint, value, kNoSchedule);
  ASSERT_TRUE(added) << added.error().message();
  EXPECT_TRUE(*added);
  added = AddTaint(*client_, node, kToBeDeletedTaint, "later", kNoSchedule);
  ASSERT_TRUE(added);
  EXPECT_FALSE(*added);
  EXPECT_EQ(count(kToBeDeletedTaint), 1);
  auto n = client_->Get(ObjectPath("v1", "nodes", "", node));
  for (const auto& t : (*n)["spec"]["taints"]) {
    if (t["key"] == kToBeDeletedTaint) {
      EXPECT_EQ(t["value"], value);  // the first time is kept
      EXPECT_EQ(t["effect"], "NoSchedule");
    }
  }
  ASSERT_TRUE(AddTaint(*client_, node, kDeletionCandidateTaint, value, kPreferNoSchedule));
  EXPECT_EQ(count(kDeletionCandidateTaint), 1);

  auto removed = RemoveTaint(*client_, node, kToBeDeletedTaint);
  ASSERT_TRUE(removed);
  EXPECT_TRUE(*removed);
  removed = RemoveTaint(*client_, node, kToBeDeletedTaint);
  ASSERT_TRUE(removed);
  EXPECT_FALSE(*removed);
  EXPECT_EQ(count(kToBeDeletedTaint), 0);
  EXPECT_EQ(count(kDeletionCandidateTaint), 1);

  auto cordoned = SetUnschedulable(*client_, node, true);
  ASSERT_TRUE(cordoned) << cordoned.error().message();
  EXPECT_TRUE(*cordoned);
  EXPECT_FALSE(*SetUnschedulable(*client_, node, true));
  EXPECT_EQ((*client_->Get(ObjectPath("v1", "nodes", "", node)))["spec"]["unschedulable"], true);
  EXPECT_TRUE(*SetUnschedulable(*client_, node, false));
  EXPECT_FALSE(*SetUnschedulable(*client_, node, false));
  EXPECT_FALSE(
      (*client_->Get(ObjectPath("v1", "nodes", "", node)))["spec"].contains("unschedulable"));

  auto missing = AddTaint(*client_, ns_ + "-missing", kToBeDeletedTaint, value, kNoSchedule);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Error::Code::kNotFound);
}

TEST_F(LiveTest, ReadModifyWriteRetriesOnConcurrentModification) {
  std::string node = CreateTestNode("c", /*kwok=*/false);
  std::string path = ObjectPath("v1", "nodes", "", node);
  int calls = 0;
  // The first time, someone else changes the node between our read and our write.
  auto result = UpdateWithRetry(*client_, path, [&](Json& obj) -> Result<bool> {
    if (++calls == 1) {
      auto other = client_->Patch(path, {{"metadata", {{"labels", {{"other", "writer"}}}}}});
      EXPECT_TRUE(other) << other.error().message();
    }
    obj["metadata"]["labels"]["ours"] = "yes";
    return true;
  });
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(calls, 2);
  auto fresh = client_->Get(path);
  EXPECT_EQ((*fresh)["metadata"]["labels"]["other"], "writer");  // not overwritten
  EXPECT_EQ((*fresh)["metadata"]["labels"]["ours"], "yes");

  // Someone always faster: bounded, then kConflict.
  calls = 0;
  auto hopeless = UpdateWithRetry(*client_, path, [&](Json& obj) -> Result<bool> {
    std::string label = fmt::format("w{}", ++calls);
    EXPECT_TRUE(client_->Patch(path, {{"metadata", {{"labels", {{"other", label}}}}}}));
    obj["metadata"]["labels"]["ours"] = "again";
    return true;
  });
  ASSERT_FALSE(hopeless);
  EXPECT_EQ(hopeless.error().code(), Error::Code::kConflict);
  EXPECT_EQ(calls, kDefaultWriteAttempts);
  EXPECT_THAT(hopeless.error().message(), HasSubstr("still conflicting after 5 attempts"));

  // Taints under a concurrent label writer: every taint lands, none is lost.
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; !done; ++i) {
      (void)client_->Patch(path, {{"metadata", {{"labels", {{"churn", std::to_string(i)}}}}}});
      std::this_thread::sleep_for(milliseconds(100));  // a busy but not hostile writer
    }
  });
  for (int i = 0; i < 5; ++i) {
    auto r = AddTaint(*client_, node, "kube-live/t" + std::to_string(i), "", kNoSchedule);
    EXPECT_TRUE(r) << r.error().message();
  }
  done = true;
  writer.join();
  auto tainted = client_->Get(path);
  int ours = 0;
  for (const auto& t : (*tainted)["spec"]["taints"]) {
    ours += t["key"].get<std::string>().starts_with("kube-live/t");
  }
  EXPECT_EQ(ours, 5);
}

TEST_F(LiveTest, DeleteNodeChecksTheUid) {
  std::string node = CreateTestNode("d", /*kwok=*/false);
  auto obj = client_->Get(ObjectPath("v1", "nodes", "", node));
  ASSERT_TRUE(obj);
  std::string uid = (*obj)["metadata"]["uid"];
  auto wrong = DeleteNode(*client_, node, "00000000-0000-0000-0000-000000000000");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), Error::Code::kConflict);
  EXPECT_TRUE(client_->Get(ObjectPath("v1", "nodes", "", node)));
  ASSERT_TRUE(DeleteNode(*client_, node, uid));
  EXPECT_TRUE(DeleteNode(*client_, node, uid));  // already gone: ok
  ASSERT_TRUE(WaitFor([&] {
    auto g = client_->Get(ObjectPath("v1", "nodes", "", node));
    return !g && g.error().code() == Error::Code::kNotFound;
  }));
}

TEST_F(LiveTest, EvictionHonoursPodDisruptionBudgets) {
  std::string node = CreateTestNode("e", /*kwok=*/true);
  std::string pods = CollectionPath("v1", "pods", ns_);
  for (const char* name : {"guarded-1", "guarded-2", "free"}) {
    std::string app = std::string(name).starts_with("guarded") ? "guarded" : "free";
    auto r = client_->Create(pods, Pod(name, node, app));
    ASSERT_TRUE(r) << r.error().message();
  }
  for (const char* name : {"guarded-1", "guarded-2", "free"}) {
    ASSERT_TRUE(WaitFor([&] { return PodPhase(name) == "Running"; })) << name;
  }
  Json pdb = {
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"name", "guard"}, {"namespace", ns_}}},
      {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "guarded"}}}}}}}};
  ASSERT_TRUE(client_->Create(CollectionPath("policy/v1", "poddisruptionbudgets", ns_), pdb));
  std::string pdb_path = ObjectPath("policy/v1", "poddisruptionbudgets", ns_, "guard");
  ASSERT_TRUE(WaitFor([&] {
    auto p = client_->Get(pdb_path);
    return p && (*p)["status"].value("currentHealthy", 0) == 2 &&
           (*p)["status"].value("disruptionsAllowed", 0) == 1;
  })) << "the disruption controller did not compute the PDB status";

  // Not covered by a PDB: evicted.
  ASSERT_TRUE(client_->Evict(ns_, "free"));
  // One of the two guarded pods may go...
  auto first = client_->Evict(ns_, "guarded-1");
  ASSERT_TRUE(first) << first.error().message();
  // ...the other would break minAvailable: 429, kThrottled, with the server's reason.
  auto refused = client_->Evict(ns_, "guarded-2");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), Error::Code::kThrottled);
  EXPECT_THAT(refused.error().message(), HasSubstr("disruption budget"));
  EXPECT_THAT(refused.error().message(),
              HasSubstr("POST /api/v1/namespaces/" + ns_ + "/pods/guarded-2/eviction: 429"));
  // The evicted pods go away (kwok plays the kubelet), the refused one keeps running.
  ASSERT_TRUE(WaitFor([&] { return PodPhase("free") == "Gone"; }));
  ASSERT_TRUE(WaitFor([&] { return PodPhase("guarded-1") == "Gone"; }));
  EXPECT_EQ(PodPhase("guarded-2"), "Running");
  auto gone = client_->Evict(ns_, "free");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), Error::Code::kNotFound);
}

TEST_F(LiveTest, EventsAreCreatedAndAggregated) {
  RealClock clock;
  EventRecorder recorder(*client_, clock, {.reporting_instance = "kube-live-test"});
  ASSERT_TRUE(client_->Create(ConfigMaps(), ConfigMap("anchor", "1")));  // something to point at
  ObjectRef pod{.kind = "Pod", .namespace_ = ns_, .name = "trainer-0", .uid = "uid-123"};
  auto r = recorder.RecordEvent(pod, EventType::kNormal, "TriggeredScaleUp",
                                "pod triggered scale-up: [{gpu-spot 0->1 (max: 20)}]");
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_TRUE(recorder.RecordEvent(pod, EventType::kNormal, "TriggeredScaleUp",
                                   "pod triggered scale-up: [{gpu-spot 0->1 (max: 20)}]"));
  ASSERT_TRUE(recorder.RecordEvent(pod, EventType::kWarning, "NotTriggerScaleUp",
                                   "pod didn't trigger scale-up: 1 max node group size reached"));
  EXPECT_EQ(recorder.created(), 2u);
  EXPECT_EQ(recorder.aggregated(), 1u);

  auto events = client_->ListAll(CollectionPath("v1", "events", ns_));
  ASSERT_TRUE(events);
  ASSERT_EQ(events->items.size(), 2u);
  bool seen_up = false;
  for (const auto& e : events->items) {
    EXPECT_EQ(e["involvedObject"]["kind"], "Pod");
    EXPECT_EQ(e["involvedObject"]["name"], "trainer-0");
    EXPECT_EQ(e["involvedObject"]["namespace"], ns_);
    EXPECT_EQ(e["involvedObject"]["uid"], "uid-123");
    EXPECT_EQ(e["source"]["component"], "tidepool");
    EXPECT_EQ(e["reportingComponent"], "tidepool");
    EXPECT_EQ(e["reportingInstance"], "kube-live-test");
    if (e["reason"] == "TriggeredScaleUp") {
      seen_up = true;
      EXPECT_EQ(e["count"], 2);
      EXPECT_EQ(e["type"], "Normal");
      EXPECT_FALSE(e.value("firstTimestamp", "").empty());
    } else {
      EXPECT_EQ(e["type"], "Warning");
      EXPECT_EQ(e["count"], 1);
    }
  }
  EXPECT_TRUE(seen_up);

  // A node's event goes to "default".
  std::string node = ns_ + "-evnode";
  ASSERT_TRUE(recorder.RecordEvent({.kind = "Node", .name = node}, EventType::kNormal, "ScaleDown",
                                   "node removed by tidepool"));
  auto in_default = client_->ListAll(CollectionPath("v1", "events", "default"));
  ASSERT_TRUE(in_default);
  int found = 0;
  for (const auto& e : in_default->items) {
    if (e["involvedObject"]["name"] == node) {
      ++found;
      EXPECT_FALSE(e["involvedObject"].contains("namespace"));
      EXPECT_EQ(e["reason"], "ScaleDown");
    }
  }
  EXPECT_EQ(found, 1);
}

TEST_F(LiveTest, ApplyConfigMapCreatesUpdatesAndKeepsOtherFields) {
  auto r = ApplyConfigMap(*client_, ns_, "tidepool-status", {{"status", "v1"}, {"pools", "a"}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(*r);
  EXPECT_FALSE(
      *ApplyConfigMap(*client_, ns_, "tidepool-status", {{"status", "v1"}, {"pools", "a"}}));
  std::string path = ObjectPath("v1", "configmaps", ns_, "tidepool-status");
  ASSERT_TRUE(client_->Patch(path, {{"metadata", {{"labels", {{"team", "infra"}}}}}}));
  EXPECT_TRUE(*ApplyConfigMap(*client_, ns_, "tidepool-status", {{"status", "v2"}}));
  auto cm = client_->Get(path);
  ASSERT_TRUE(cm);
  EXPECT_EQ((*cm)["data"], Json({{"status", "v2"}}));
  EXPECT_EQ((*cm)["metadata"]["labels"]["team"], "infra");
  auto bad = ApplyConfigMap(*client_, ns_ + "-no-such-namespace", "x", {{"a", "b"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), Error::Code::kNotFound);
}

LeaderElectionConfig Election(const std::string& ns, const std::string& identity) {
  return {.namespace_ = ns,
          .name = "tidepool",
          .identity = identity,
          .lease_duration = seconds(4),
          .renew_deadline = seconds(3),
          .retry_period = milliseconds(500)};
}

TEST_F(LiveTest, LeaderElectionOneLeadsTheOtherTakesOver) {
  RealClock clock;
  ApiClient client_a(*config_), client_b(*config_);
  LeaderElector a(client_a, Election(ns_, "replica-a"), clock);
  LeaderElector b(client_b, Election(ns_, "replica-b"), clock);
  ASSERT_TRUE(ValidateLeaderElectionConfig(a.config()));
  std::atomic<int> a_started{0}, b_started{0}, a_stopped{0};
  a.Start([&] { ++a_started; }, [&] { ++a_stopped; });
  ASSERT_TRUE(WaitFor([&] { return a.IsLeader(); }, seconds(10)));
  b.Start([&] { ++b_started; }, [] {});
  // For a while (several lease durations), b never leads while a renews.
  auto until = SteadyClock::now() + seconds(6);
  while (SteadyClock::now() < until) {
    ASSERT_FALSE(a.IsLeader() && b.IsLeader());
    ASSERT_FALSE(b.IsLeader());
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(b.Holder(), "replica-a");
  auto lease = client_->Get(ObjectPath("coordination.k8s.io/v1", "leases", ns_, "tidepool"));
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "replica-a");
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 4);
  int transitions = (*lease)["spec"].value("leaseTransitions", 0);

  // a stops renewing (a crash: no release). b takes over once the lease has expired: not
  // before lease_duration after a's last renewal, and within lease_duration + 2 retries.
  auto abandoned = SteadyClock::now();
  a.AbandonForTesting();
  EXPECT_FALSE(a.IsLeader());
  ASSERT_TRUE(WaitFor([&] { return b.IsLeader(); }, seconds(4) + milliseconds(1000) + seconds(2)));
  auto took = SteadyClock::now() - abandoned;
  EXPECT_GE(took, seconds(4) - milliseconds(500) - milliseconds(100));
  EXPECT_EQ(b_started.load(), 1);
  EXPECT_EQ(a_stopped.load(), 0);  // abandoned, not lost
  lease = client_->Get(ObjectPath("coordination.k8s.io/v1", "leases", ns_, "tidepool"));
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ((*lease)["spec"].value("leaseTransitions", 0), transitions + 1);

  // A clean stop releases: a new elector takes over at its next attempt, long before the
  // lease would have expired.
  LeaderElector c(*client_, Election(ns_, "replica-c"), clock);
  c.Start({}, {});
  std::this_thread::sleep_for(milliseconds(700));
  EXPECT_FALSE(c.IsLeader());
  auto stopped = SteadyClock::now();
  b.Stop();
  EXPECT_FALSE(b.IsLeader());
  ASSERT_TRUE(WaitFor([&] { return c.IsLeader(); }, seconds(4)));
  EXPECT_LT(SteadyClock::now() - stopped, seconds(4));
  c.Stop();
  EXPECT_EQ(a_started.load(), 1);
}

TEST_F(LiveTest, LeaderStopsAtOnceWhenSomeoneElseHoldsTheLease) {
  RealClock clock;
  LeaderElector a(*client_, Election(ns_, "replica-a"), clock);
  std::atomic<int> lost{0};
  a.Start({}, [&] { ++lost; });
  ASSERT_TRUE(WaitFor([&] { return a.IsLeader(); }, seconds(10)));
  std::string path = ObjectPath("coordination.k8s.io/v1", "leases", ns_, "tidepool");
  // An intruder writes itself in as holder (e.g. an operator moving leadership by hand).
  auto hijacked = UpdateWithRetry(*client_, path, [&](Json& lease) -> Result<bool> {
    lease["spec"]["holderIdentity"] = "intruder";
    lease["spec"]["renewTime"] = FormatMicroTime(clock.Now());
    return true;
  });
  ASSERT_TRUE(hijacked) << hijacked.error().message();
  ASSERT_TRUE(WaitFor([&] { return lost.load() == 1; }, seconds(3)));
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(a.Holder(), "intruder");
  a.Stop();  // not leading: the intruder's lease is left alone
  auto lease = client_->Get(path);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "intruder");
}

TEST_F(LiveTest, TokensNeverAppearInErrors) {
  // A real service-account token (TokenRequest), for a user with no permissions.
  ASSERT_TRUE(client_->Create(
      CollectionPath("v1", "serviceaccounts", ns_),
      {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "nobody"}}}}));
  auto request = client_->Create(ObjectPath("v1", "serviceaccounts", ns_, "nobody") + "/token",
                                 {{"apiVersion", "authentication.k8s.io/v1"},
                                  {"kind", "TokenRequest"},
                                  {"spec", {{"expirationSeconds", 600}}}});
  ASSERT_TRUE(request) << request.error().message();
  std::string token = (*request)["status"]["token"];
  ASSERT_GT(token.size(), 20u);

  ClientConfig with_token;
  with_token.server = config_->server;
  with_token.tls.ca_pem = config_->tls.ca_pem;
  with_token.token = token;
  ApiClient sa(with_token);
  auto forbidden = sa.List("/api/v1/nodes", 5);
  ASSERT_FALSE(forbidden);
  EXPECT_EQ(forbidden.error().code(), Error::Code::kPermissionDenied);
  EXPECT_THAT(forbidden.error().message(), HasSubstr("403 Forbidden"));
  EXPECT_THAT(forbidden.error().message(), HasSubstr("system:serviceaccount:" + ns_ + ":nobody"));
  EXPECT_THAT(forbidden.error().message(), Not(HasSubstr(token)));
  auto watch = sa.Watch(
      "/api/v1/pods", "", [](const WatchEvent&) { return true; }, nullptr, seconds(2));
  ASSERT_FALSE(watch);
  EXPECT_THAT(watch.error().message(), Not(HasSubstr(token)));

  with_token.token = token + "tampered";
  ApiClient bad(with_token);
  auto unauthorized = bad.Get("/api/v1/namespaces/" + ns_);
  ASSERT_FALSE(unauthorized);
  EXPECT_EQ(unauthorized.error().code(), Error::Code::kPermissionDenied);
  EXPECT_THAT(unauthorized.error().message(), HasSubstr("401 Unauthorized"));
  EXPECT_THAT(unauthorized.error().message(), Not(HasSubstr(token)));

  // TLS is verified: without the CA the server's certificate is refused.
  ClientConfig no_ca = with_token;
  no_ca.tls.ca_pem.clear();
  ApiClient unverified(no_ca);
  auto tls = unverified.Get("/version");
  ASSERT_FALSE(tls);
  EXPECT_EQ(tls.error().code(), Error::Code::kUnavailable);
  EXPECT_THAT(tls.error().message(), Not(HasSubstr(token)));
}

}  // namespace
}  // namespace tidepool::kube
