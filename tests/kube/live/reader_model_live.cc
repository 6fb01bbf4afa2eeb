// The controller's reader keeps its cluster model from the real API server's watches: after cut
// watches, a 410 relist during a burst of changes, and a restart, the model holds exactly what a
// fresh LIST holds (every node and pod at the listed resourceVersion, and the pods placed on each
// node), and a model fed while no pass read it catches up in one Sync.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube_adapters.h"
#include "kube/codec/objects.h"
#include "tests/kube/live/live_test.h"

namespace tidepool::kube::live {
namespace {

class ReaderModelTest : public LiveTest {
 protected:
  // Every difference between the reader's model (synced now) and a fresh LIST, in words.
  std::vector<std::string> Differences(controller::InformerClusterReader& reader) {
    sched::ClusterModel* model = reader.SyncModel(reader.Snapshot());
    if (model == nullptr) return {"the reader hands out no model"};
    auto nodes = client_->ListAll("/api/v1/nodes");
    auto pods = client_->ListAll("/api/v1/pods");
    if (!nodes || !pods) return {"list failed"};
    std::vector<std::string> out;
    std::map<std::string, std::set<std::string>> placed;  // node -> pod keys
    for (const Json& item : nodes->items) {
      auto node = codec::DecodeNode(item);
      if (!node) return {node.error().message()};
      placed[node->name()];
      const model::Node* known = model->FindNode(node->name());
      // In content: a write that changed nothing decoded leaves the informer's older object.
      if (known == nullptr || !model::SameButVersion(*known, *node)) {
        out.push_back("node " + node->name());
      }
    }
    for (const Json& item : pods->items) {
      auto pod = codec::DecodePod(item);
      if (!pod) return {pod.error().message()};
      const model::Pod* known = model->FindPod(pod->meta.namespace_, pod->meta.name);
      if (known == nullptr || !model::SameButVersion(*known, *pod)) {
        out.push_back("pod " + pod->meta.Key());
      }
      auto node = placed.find(pod->node_name);
      if (node != placed.end() && !pod->IsTerminal()) node->second.insert(pod->meta.Key());
    }
    if (model->NodeCount() != nodes->items.size()) out.push_back("node count");
    if (model->PodCount() != pods->items.size()) out.push_back("pod count");
    for (sched::NodeIndex i : model->NodesByName()) {
      const sched::NodeInfo& info = model->snapshot().Get(i);
      std::set<std::string> on;
      for (const model::Pod* pod : info.pods) on.insert(pod->meta.Key());
      if (on != placed[info.node->name()]) out.push_back("pods on " + info.node->name());
    }
    return out;
  }

  // Waits until the model matches a fresh LIST; false (and the last differences) after 30 s.
  ::testing::AssertionResult Matches(controller::InformerClusterReader& reader) {
    std::vector<std::string> last;
    if (WaitFor([&] { return (last = Differences(reader)).empty(); })) {
      return ::testing::AssertionSuccess();
    }
    auto failure = ::testing::AssertionFailure() << "the model differs from a fresh LIST:";
    for (const std::string& d : last) failure << " " << d << ";";
    return failure;
  }

  std::string Pods() const { return CollectionPath("v1", "pods", ns_); }
  Result<Json> CreatePod(const std::string& name, const std::string& node) {
    return client_->Create(Pods(), Pod(name, node, "model"));
  }
  Result<void> DeletePod(const std::string& name) {
    return client_->Delete(ObjectPath("v1", "pods", ns_, name));
  }
  Result<void> DeleteNodeNamed(const std::string& name) {
    return client_->Delete(ObjectPath("v1", "nodes", "", name));
  }
};

TEST_F(ReaderModelTest, ModelMatchesAFreshListThroughCutsRelistsAndRestarts) {
  std::vector<std::string> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(CreateTestNode("m" + std::to_string(i), true));
  // Nine pods bound by name, three left to kube-scheduler.
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(CreatePod("p" + std::to_string(i), i < 9 ? nodes[i % 3] : ""));
  }
  controller::InformerClusterReader reader(*client_);
  reader.Start();
  ASSERT_TRUE(WaitFor([&] { return reader.HasSynced(); }));
  ASSERT_TRUE(Matches(reader)) << "after the first list";

  // Watches cut (a network failure): what changes meanwhile comes with the resumed watch.
  reader.pods().InterruptWatchForTesting();
  reader.nodes().InterruptWatchForTesting();
  ASSERT_TRUE(DeletePod("p0"));
  ASSERT_TRUE(DeletePod("p9"));
  ASSERT_TRUE(CreatePod("cut", nodes[1]));
  ASSERT_TRUE(client_->Patch(ObjectPath("v1", "nodes", "", nodes[2]),
                             {{"metadata", {{"labels", {{"cut", "yes"}}}}}}));
  nodes.push_back(CreateTestNode("m3", true));
  ASSERT_TRUE(Matches(reader)) << "after cut watches";
  EXPECT_GE(reader.pods().Stats().reconnects, 1u);

  // Both watches resume from a resourceVersion etcd has compacted away (410 Gone) while pods come
  // and go: the relists report what differs, and the model follows. The old streams keep
  // delivering the burst until they end; the resumed watches still start from "1".
  ASSERT_NO_FATAL_FAILURE(CompactEtcd());
  std::thread burst([&] {
    for (int i = 0; i < 20; ++i) {
      EXPECT_TRUE(CreatePod("burst" + std::to_string(i), nodes[i % 4]));
      if (i % 2 == 0 && i < 16) {
        EXPECT_TRUE(DeletePod("p" + std::to_string(1 + i / 2)));
      }
    }
  });
  auto relisted = [&](InformerBase& informer) {
    informer.ResumeFromForTesting("1");
    return WaitFor([&] { return informer.Stats().relists >= 1; });
  };
  EXPECT_TRUE(relisted(reader.pods()));
  EXPECT_TRUE(relisted(reader.nodes()));
  ASSERT_TRUE(DeleteNodeNamed(nodes[0]));
  burst.join();
  ASSERT_TRUE(Matches(reader)) << "after 410 relists";

  // A restart (or another replica taking the lead) builds the same model from its first list.
  controller::InformerClusterReader restarted(*client_);
  restarted.Start();
  ASSERT_TRUE(WaitFor([&] { return restarted.HasSynced(); }));
  ASSERT_TRUE(Matches(restarted)) << "after a restart";

  // While no pass reads it (a replica that does not lead), changes are only marked; the next Sync
  // applies them all: here a node gone under its pods, and pods the scheduler binds.
  ASSERT_TRUE(DeleteNodeNamed(nodes[1]));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(CreatePod("late" + std::to_string(i), ""));
  ASSERT_TRUE(WaitFor([&] {
    auto listed = client_->ListAll("/api/v1/pods");
    return listed && reader.pods().Size() == listed->items.size() &&
           reader.nodes().Get(nodes[1]) == nullptr;
  }));
  ASSERT_TRUE(Matches(reader)) << "after changes no pass read";
  restarted.Stop();
  reader.Stop();
}

// The reader's views are versioned by the caches' counts of changes: while pods come and go, the
// version never goes back, two views with one version hold the same objects, and a change shows in
// the version of the first view that holds it.
TEST_F(ReaderModelTest, ViewsWithOneVersionHoldTheSameObjects) {
  std::string node = CreateTestNode("v0", true);
  ASSERT_TRUE(CreatePod("before", node));
  controller::InformerClusterReader reader(*client_);
  reader.Start();
  ASSERT_TRUE(WaitFor([&] { return reader.HasSynced(); }));

  // Every object of a view with its resourceVersion, in the view's order.
  auto spell = [](const controller::ClusterView& v) {
    std::string out;
    for (const model::Node& n : v.nodes) out += n.name() + "@" + n.meta.resource_version + " ";
    for (const model::Pod& p : v.pods) out += p.meta.Key() + "@" + p.meta.resource_version + " ";
    return out;
  };
  std::map<uint64_t, std::string> seen;  // version -> the objects of its first view
  uint64_t last = 0;
  auto read = [&] {
    controller::ClusterView v = reader.Snapshot();
    EXPECT_NE(v.version, 0u);
    EXPECT_GE(v.version, last) << "the version went back";
    last = v.version;
    auto [it, first] = seen.emplace(v.version, spell(v));
    if (!first) {
      EXPECT_EQ(it->second, spell(v)) << "two views of version " << v.version;
    }
    return v;
  };
  controller::ClusterView before = read();
  std::atomic<bool> done{false};
  std::thread burst([&] {
    for (int i = 0; i < 15; ++i) {
      EXPECT_TRUE(CreatePod("burst" + std::to_string(i), i % 2 == 0 ? node : ""));
      if (i % 3 == 0) {
        EXPECT_TRUE(DeletePod("burst" + std::to_string(i)));
      }
    }
    done = true;
  });
  while (!done) read();
  burst.join();
  EXPECT_GE(seen.size(), 2u);

  // A change reaches the version with the object.
  ASSERT_TRUE(CreatePod("after", node));
  std::string key = ns_ + "/after";
  ASSERT_TRUE(WaitFor([&] {
    controller::ClusterView v = read();
    return std::any_of(v.pods.begin(), v.pods.end(),
                       [&](const model::Pod& p) { return p.meta.Key() == key; });
  }));
  EXPECT_GT(last, before.version);
  reader.Stop();
}

}  // namespace
}  // namespace tidepool::kube::live
