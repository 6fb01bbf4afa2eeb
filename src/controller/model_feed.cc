#include "controller/model_feed.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "model/key_order.h"

namespace tidepool::controller {

ModelFeed::ModelFeed(PodLookup pods, NodeLookup nodes)
    : pods_(std::move(pods)), nodes_(std::move(nodes)) {}

void ModelFeed::PodChanged(const std::string& key) {
  std::lock_guard lock(mu_);
  changed_pods_.insert(key);
}

void ModelFeed::NodeChanged(const std::string& name) {
  std::lock_guard lock(mu_);
  changed_nodes_.insert(name);
}

namespace {

// The view's object under `key`, or null. `objects` is in key order.
template <typename T>
std::shared_ptr<const T> Find(const SharedList<T>& objects, std::string_view key) {
  size_t lo = 0, hi = objects.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (model::CompareKey(objects[mid].meta, key) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < objects.size() && model::CompareKey(objects[lo].meta, key) == 0 ? objects.Share(lo)
                                                                              : nullptr;
}

}  // namespace

sched::ClusterModel* ModelFeed::Sync(View view) {
  std::set<std::string> pods, nodes;
  {
    std::lock_guard lock(mu_);
    pods.swap(changed_pods_);
    nodes.swap(changed_nodes_);
  }
  // Nodes first, so that pods bound to a new node are placed as they come.
  std::set<std::string> again_nodes, again_pods;
  for (const std::string& name : nodes) {
    bool again = false;
    if (!ApplyNode(name, view, again) || again) again_nodes.insert(name);
  }
  for (const std::string& key : pods) {
    bool again = false;
    if (!ApplyPod(key, view, again) || again) again_pods.insert(key);
  }
  if (!again_nodes.empty() || !again_pods.empty()) {
    std::lock_guard lock(mu_);
    changed_nodes_.merge(again_nodes);
    changed_pods_.merge(again_pods);
  }
  return refused_.empty() ? &model_ : nullptr;
}

bool ModelFeed::ApplyNode(const std::string& name, View view, bool& again) {
  std::shared_ptr<const model::Node> seen = Find(view.nodes, name);
  again = nodes_(name) != seen;
  return Applied(seen != nullptr ? model_.SetNode(std::move(seen)) : model_.DeleteNode(name),
                 "node", name);
}

bool ModelFeed::ApplyPod(const std::string& key, View view, bool& again) {
  std::shared_ptr<const model::Pod> seen = Find(view.pods, key);
  again = pods_(key) != seen;
  if (seen != nullptr) return Applied(model_.SetPod(std::move(seen)), "pod", key);
  std::string_view k = key;
  size_t slash = k.find('/');
  std::string_view ns = slash == std::string_view::npos ? std::string_view() : k.substr(0, slash);
  std::string_view name = slash == std::string_view::npos ? k : k.substr(slash + 1);
  return Applied(model_.DeletePod(ns, name), "pod", key);
}

bool ModelFeed::Applied(const Result<void>& done, std::string_view kind, const std::string& key) {
  // An object added and deleted between two Syncs was never in the model: nothing to delete.
  if (done || done.error().code() == Error::Code::kNotFound) {
    ++stats_.applied;
    refused_.erase(key);
    return true;
  }
  ++stats_.refused;
  if (refused_.insert(key).second) {
    spdlog::warn(
        "cluster model: {} {} not applied; passes build their own snapshot until it is: {}", kind,
        key, done.error().message());
  }
  return false;
}

}  // namespace tidepool::controller
