// ModelFeed: whatever the informers report, in whatever order and from whatever thread, the model
// a Sync hands out holds exactly the view it was given (nodes, pods, and the pods placed on each
// node); what changed after the view comes at the next Sync; a delta the model refuses hands out
// no model until it is applied.
#include "controller/model_feed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/client/informer_cache.h"
#include "tests/sched/builders.h"

namespace tidepool::controller {
namespace {

using sched::testing::NodeBuilder;
using sched::testing::PodBuilder;

// An informer cache pair (the informers' own kube::InformerCache): objects by key, each change
// marked in the feed under the cache's lock, as an informer's marker does; a view is the caches'
// shared lists, as an informer's List gives them.
class Caches {
 public:
  Caches()
      : feed_([this](const std::string& key) { return Find<model::Pod>(pods_, key); },
              [this](const std::string& name) { return Find<model::Node>(nodes_, name); }) {}

  void SetNode(NodeBuilder b) {
    auto node = std::make_shared<const model::Node>(b.Build());
    std::string name = node->name();
    std::lock_guard lock(mu_);
    nodes_.Set(name, {std::move(node), ""});
    feed_.NodeChanged(name);
  }
  void DeleteNode(const std::string& name) {
    std::lock_guard lock(mu_);
    nodes_.Erase(name);
    feed_.NodeChanged(name);
  }
  void SetPod(PodBuilder b) {
    model::Pod pod = b.Build();
    std::string key = pod.meta.Key();
    std::lock_guard lock(mu_);
    pods_.Set(key, {std::make_shared<const model::Pod>(std::move(pod)), ""});
    feed_.PodChanged(key);
  }
  void DeletePod(const std::string& key) {
    std::lock_guard lock(mu_);
    pods_.Erase(key);
    feed_.PodChanged(key);
  }
  std::vector<std::string> NodeNames() { return Keys(nodes_); }
  std::vector<std::string> PodKeys() { return Keys(pods_); }

  // The caches now, in key order.
  struct Snapshot {
    SharedList<model::Pod> pods;
    SharedList<model::Node> nodes;
  };
  Snapshot Take() {
    std::lock_guard lock(mu_);
    return {SharedList<model::Pod>(pods_.List()), SharedList<model::Node>(nodes_.List())};
  }
  // Takes the caches and syncs the feed to them; the model, and in `seen` what it was synced to.
  sched::ClusterModel* Sync(Snapshot& seen) {
    seen = Take();
    return feed_.Sync({seen.pods, seen.nodes});
  }
  sched::ClusterModel* Sync() {
    Snapshot seen;
    return Sync(seen);
  }

  ModelFeed& feed() { return feed_; }

 private:
  template <typename T>
  std::shared_ptr<const T> Find(const kube::InformerCache& cache, const std::string& key) {
    std::lock_guard lock(mu_);
    const kube::InformerCache::Item* item = cache.Find(key);
    return item == nullptr ? nullptr : std::static_pointer_cast<const T>(item->value);
  }
  std::vector<std::string> Keys(const kube::InformerCache& cache) {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [key, _] : cache.items()) out.push_back(key);
    return out;
  }

  std::mutex mu_;
  kube::InformerCache nodes_;
  kube::InformerCache pods_;
  ModelFeed feed_;
};

// Every difference between the model and what it was synced to, in words; empty when it holds
// exactly that.
std::vector<std::string> Differences(const sched::ClusterModel& model,
                                     const Caches::Snapshot& seen) {
  std::vector<std::string> out;
  if (model.NodeCount() != seen.nodes.size()) out.push_back("node count");
  if (model.PodCount() != seen.pods.size()) out.push_back("pod count");
  std::set<std::string> nodes;
  for (const model::Node& node : seen.nodes) {
    nodes.insert(node.name());
    if (model.FindNode(node.name()) != &node) out.push_back("node " + node.name());
  }
  std::map<std::string, std::set<const model::Pod*>> placed;
  for (const model::Pod& pod : seen.pods) {
    if (model.FindPod(pod.meta.namespace_, pod.meta.name) != &pod) {
      out.push_back("pod " + pod.meta.Key());
    }
    if (!pod.IsTerminal() && nodes.contains(pod.node_name)) placed[pod.node_name].insert(&pod);
  }
  for (sched::NodeIndex i : model.NodesByName()) {
    const sched::NodeInfo& info = model.snapshot().Get(i);
    std::set<const model::Pod*> on(info.pods.begin(), info.pods.end());
    if (on != placed[info.node->name()]) out.push_back("pods on " + info.node->name());
  }
  return out;
}

PodBuilder Pod(const std::string& name, const std::string& node = "",
               const std::string& ns = "default") {
  PodBuilder b(name, ns);
  b.Requests({{"cpu", "100m"}});
  if (!node.empty()) b.NodeName(node).Phase(model::PodPhase::kRunning);
  return b;
}

// Syncs to the caches now and expects the model to hold exactly them.
#define EXPECT_SYNCED(caches)                                          \
  do {                                                                 \
    Caches::Snapshot seen;                                             \
    sched::ClusterModel* synced = (caches).Sync(seen);                 \
    ASSERT_NE(synced, nullptr);                                        \
    EXPECT_EQ(Differences(*synced, seen), std::vector<std::string>{}); \
  } while (0)

TEST(ModelFeed, HoldsExactlyTheViewAtEverySync) {
  Caches c;
  c.SetNode(NodeBuilder("n1"));
  c.SetPod(Pod("bound", "n1"));
  c.SetPod(Pod("pending"));
  c.SetPod(Pod("early", "n2"));  // bound to a node the cache has not seen yet
  EXPECT_SYNCED(c);
  sched::ClusterModel& model = c.feed().model();
  EXPECT_EQ(model.snapshot().PodCount(), 1);

  c.SetNode(NodeBuilder("n2"));                                     // "early" is placed now
  c.SetPod(Pod("pending", "n1"));                                   // bound by the scheduler
  c.SetPod(Pod("bound", "n1").Phase(model::PodPhase::kSucceeded));  // finished
  EXPECT_SYNCED(c);
  EXPECT_EQ(model.snapshot().PodCount(), 2);

  c.DeleteNode("n1");
  c.DeletePod("default/early");
  EXPECT_SYNCED(c);
  EXPECT_EQ(model.snapshot().PodCount(), 0);
  EXPECT_EQ(c.feed().stats().refused, 0u);
}

// What changes after the view was taken is not in this Sync, even when its key was marked
// before: the model never runs ahead of the view its pass plans on. The next Sync brings it.
TEST(ModelFeed, AChangeAfterTheViewWaitsForTheNextSync) {
  Caches c;
  c.SetNode(NodeBuilder("n1"));
  c.SetPod(Pod("a"));
  Caches::Snapshot view = c.Take();
  c.SetPod(Pod("a", "n1"));  // marked again, after the view
  c.SetPod(Pod("b", "n1"));  // marked only after the view
  c.DeleteNode("n1");
  sched::ClusterModel* model = c.feed().Sync({view.pods, view.nodes});
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(Differences(*model, view), std::vector<std::string>{});
  EXPECT_EQ(model->FindPod("default", "b"), nullptr);
  EXPECT_SYNCED(c);
  EXPECT_EQ(model->NodeCount(), 0u);
  EXPECT_NE(model->FindPod("default", "b"), nullptr);
}

TEST(ModelFeed, AnObjectAddedAndDeletedBetweenSyncsLeavesNoTrace) {
  Caches c;
  c.SetNode(NodeBuilder("brief"));
  c.SetPod(Pod("brief", "brief"));
  c.DeleteNode("brief");
  c.DeletePod("default/brief");
  sched::ClusterModel* model = c.Sync();
  ASSERT_NE(model, nullptr) << "a delete of what the model never held is no error";
  EXPECT_EQ(model->NodeCount(), 0u);
  EXPECT_EQ(model->PodCount(), 0u);
  EXPECT_EQ(c.feed().stats().applied, 2u) << "one delta per key, however often it changed";
}

TEST(ModelFeed, ARefusedDeltaHandsOutNoModelUntilItIsApplied) {
  Caches c;
  c.SetNode(NodeBuilder("n1"));
  EXPECT_SYNCED(c);

  // A pass that left a layer open: the model refuses, the change waits.
  c.SetPod(Pod("p", "n1"));
  {
    sched::ClusterModel::Layer open(c.feed().model());
    EXPECT_EQ(c.Sync(), nullptr);
  }
  EXPECT_SYNCED(c);  // the refused key was kept and is applied now

  // A malformed object (no name) is refused at every Sync until the cache drops it.
  c.SetPod(PodBuilder(""));
  EXPECT_EQ(c.Sync(), nullptr);
  EXPECT_EQ(c.Sync(), nullptr);
  EXPECT_EQ(c.feed().stats().refused, 3u);
  c.DeletePod("default/");
  EXPECT_SYNCED(c);
}

// Random changes, including relists (the informer marks each key whose object differs after the
// new list), with Syncs in between: the model holds exactly the view at every Sync.
TEST(ModelFeed, RandomChangesAndRelistsLeaveExactlyTheView) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    Caches c;
    auto node_name = [&] { return "n" + std::to_string(pick(6)); };
    // Namespaces whose keys sort around the slash ('-' and '.' before it, 'b' after), so that
    // finding a key in the view is checked where a prefix decides.
    const std::vector<std::string> namespaces = {"a", "a-b", "a.b", "ab"};
    auto pod_name = [&] { return "p" + std::to_string(pick(20)); };
    auto random_pod = [&] {
      PodBuilder b = Pod(pod_name(), pick(3) == 0 ? "" : node_name(), namespaces[pick(4)]);
      if (pick(6) == 0) b.Phase(model::PodPhase::kFailed);
      return b;
    };
    for (int step = 0; step < 120; ++step) {
      switch (pick(7)) {
        case 0:
          c.SetNode(NodeBuilder(node_name()).Zone("z" + std::to_string(pick(2))));
          break;
        case 1:
          c.DeleteNode(node_name());
          break;
        case 2:
        case 3:
          c.SetPod(random_pod());
          break;
        case 4:
          c.DeletePod(namespaces[pick(4)] + "/" + pod_name());
          break;
        case 5: {  // a relist: a fresh state of a few keys, the rest gone
          for (const std::string& key : c.PodKeys())
            if (pick(2) == 0) c.DeletePod(key);
          for (int k = pick(5); k > 0; --k) c.SetPod(random_pod());
          for (const std::string& name : c.NodeNames())
            if (pick(3) == 0) c.DeleteNode(name);
          break;
        }
        default:
          ASSERT_NO_FATAL_FAILURE(EXPECT_SYNCED(c)) << "step " << step;
      }
    }
    ASSERT_NO_FATAL_FAILURE(EXPECT_SYNCED(c));
  }
}

// Two informer threads change their caches while the pass thread takes views and Syncs: each
// Sync holds exactly its view, and no change is lost.
TEST(ModelFeed, ChangesFromInformerThreadsDuringSyncsLeaveExactlyTheView) {
  Caches c;
  std::atomic<bool> done{false};
  std::atomic<int> syncs{0};
  // The informers start once the pass thread has synced, so that they overlap.
  auto after_first_sync = [&] {
    while (syncs.load() == 0) std::this_thread::yield();
  };
  std::thread nodes([&] {
    after_first_sync();
    std::mt19937 rng(1);
    for (int i = 0; i < 3000; ++i) {
      std::string name = "n" + std::to_string(rng() % 8);
      if (rng() % 3 == 0) {
        c.DeleteNode(name);
      } else {
        c.SetNode(NodeBuilder(name));
      }
    }
  });
  std::thread pods([&] {
    after_first_sync();
    std::mt19937 rng(2);
    for (int i = 0; i < 6000; ++i) {
      std::string name = "p" + std::to_string(rng() % 40);
      if (rng() % 4 == 0) {
        c.DeletePod("default/" + name);
      } else {
        c.SetPod(Pod(name, "n" + std::to_string(rng() % 8)));
      }
    }
  });
  std::thread pass([&] {
    for (; !done.load(); ++syncs) EXPECT_SYNCED(c);
  });
  nodes.join();
  pods.join();
  done = true;
  pass.join();
  EXPECT_SYNCED(c);
}

}  // namespace
}  // namespace tidepool::controller
