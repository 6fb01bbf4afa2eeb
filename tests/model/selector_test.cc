#include "model/selector.h"

#include <gtest/gtest.h>

#include "model/pdb.h"
#include "model/pod.h"

namespace tidepool::model {
namespace {

TEST(LabelSelector, MatchLabelsAndExpressions) {
  Labels labels = {{"app", "train"}, {"tier", "gpu"}};
  LabelSelector s;
  EXPECT_TRUE(s.Matches(labels));  // empty selector matches everything
  s.match_labels = {{"app", "train"}};
  EXPECT_TRUE(s.Matches(labels));
  s.match_expressions.push_back({"tier", SelectorOp::kIn, {"cpu", "gpu"}});
  EXPECT_TRUE(s.Matches(labels));
  s.match_expressions.push_back({"zone", SelectorOp::kDoesNotExist, {}});
  EXPECT_TRUE(s.Matches(labels));
  s.match_expressions.push_back({"tier", SelectorOp::kNotIn, {"gpu"}});
  EXPECT_FALSE(s.Matches(labels));
}

TEST(LabelSelector, ExistsAndNotInOnMissingKey) {
  Labels labels = {{"a", "1"}};
  EXPECT_TRUE(RequirementMatches({"b", SelectorOp::kNotIn, {"x"}}, labels));
  EXPECT_FALSE(RequirementMatches({"b", SelectorOp::kExists, {}}, labels));
  EXPECT_FALSE(RequirementMatches({"b", SelectorOp::kIn, {"x"}}, labels));
}

TEST(NodeSelectorTerm, GtLtCompareIntegers) {
  Labels labels = {{"gpus", "8"}, {"name", "abc"}};
  EXPECT_TRUE(RequirementMatches({"gpus", SelectorOp::kGt, {"4"}}, labels));
  EXPECT_FALSE(RequirementMatches({"gpus", SelectorOp::kGt, {"8"}}, labels));
  EXPECT_TRUE(RequirementMatches({"gpus", SelectorOp::kLt, {"16"}}, labels));
  EXPECT_FALSE(RequirementMatches({"name", SelectorOp::kGt, {"1"}}, labels));
  EXPECT_FALSE(RequirementMatches({"missing", SelectorOp::kLt, {"1"}}, labels));
}

TEST(NodeSelector, TermsAreOredAndEmptyMatchesNothing) {
  Labels labels = {{"pool", "gpu"}};
  NodeSelector none;
  EXPECT_FALSE(none.Matches(labels, "n1"));
  NodeSelector empty_term;
  empty_term.terms.emplace_back();
  EXPECT_FALSE(empty_term.Matches(labels, "n1"));
  NodeSelector s;
  s.terms.push_back({{{"pool", SelectorOp::kIn, {"cpu"}}}, {}});
  EXPECT_FALSE(s.Matches(labels, "n1"));
  s.terms.push_back({{{"pool", SelectorOp::kIn, {"gpu"}}}, {}});
  EXPECT_TRUE(s.Matches(labels, "n1"));
}

TEST(NodeSelector, MatchFieldsOnMetadataName) {
  NodeSelector s;
  s.terms.push_back({{}, {{"metadata.name", SelectorOp::kIn, {"n1"}}}});
  EXPECT_TRUE(s.Matches({}, "n1"));
  EXPECT_FALSE(s.Matches({}, "n2"));
  NodeSelector other_field;
  other_field.terms.push_back({{}, {{"metadata.uid", SelectorOp::kIn, {"n1"}}}});
  EXPECT_FALSE(other_field.Matches({}, "n1"));
}

TEST(Toleration, EqualExistsAndEffects) {
  Taint spot{"kubernetes.azure.com/scalesetpriority", "spot", TaintEffect::kNoSchedule};
  EXPECT_TRUE((Toleration{spot.key, TolerationOp::kEqual, "spot", TaintEffect::kNoSchedule})
                  .Tolerates(spot));
  EXPECT_FALSE((Toleration{spot.key, TolerationOp::kEqual, "regular", {}}).Tolerates(spot));
  EXPECT_TRUE((Toleration{spot.key, TolerationOp::kExists, "", {}}).Tolerates(spot));
  EXPECT_FALSE(
      (Toleration{spot.key, TolerationOp::kExists, "", TaintEffect::kNoExecute}).Tolerates(spot));
}

TEST(Toleration, EmptyKeyWithExistsToleratesEverything) {
  Toleration all{"", TolerationOp::kExists, "", {}};
  EXPECT_TRUE(all.Tolerates({"a", "b", TaintEffect::kNoSchedule}));
  EXPECT_TRUE(all.Tolerates({"x", "", TaintEffect::kNoExecute}));
  Toleration empty_key_equal{"", TolerationOp::kEqual, "", {}};
  EXPECT_FALSE(empty_key_equal.Tolerates({"a", "", TaintEffect::kNoSchedule}));
}

TEST(FindUntoleratedTaint, SkipsPreferNoSchedule) {
  std::vector<Taint> taints = {{"soft", "", TaintEffect::kPreferNoSchedule},
                               {"gpu", "true", TaintEffect::kNoSchedule},
                               {"evict", "", TaintEffect::kNoExecute}};
  const Taint* t = FindUntoleratedTaint(taints, {});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->key, "gpu");
  EXPECT_EQ(t->ToString(), "{gpu: true}");
  std::vector<Toleration> tols = {{"gpu", TolerationOp::kExists, "", {}}};
  t = FindUntoleratedTaint(taints, tols);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->key, "evict");
  tols.push_back({"evict", TolerationOp::kExists, "", TaintEffect::kNoExecute});
  EXPECT_EQ(FindUntoleratedTaint(taints, tols), nullptr);
}

TEST(Pdb, IntOrPercentAndSelection) {
  EXPECT_EQ((IntOrPercent{3, false}).Resolve(10, true), 3);
  EXPECT_EQ((IntOrPercent{50, true}).Resolve(5, true), 3);
  EXPECT_EQ((IntOrPercent{50, true}).Resolve(5, false), 2);
  PodDisruptionBudget pdb;
  pdb.meta.namespace_ = "ml";
  ObjectMeta pod;
  pod.namespace_ = "ml";
  pod.labels = {{"app", "x"}};
  EXPECT_FALSE(pdb.Selects(pod));  // no selector selects nothing
  pdb.selector = LabelSelector{};
  EXPECT_TRUE(pdb.Selects(pod));  // empty selector selects the whole namespace
  pod.namespace_ = "other";
  EXPECT_FALSE(pdb.Selects(pod));
}

TEST(Pod, DaemonSetMirrorAndHostPorts) {
  Pod p;
  p.meta.owner_references.push_back({"apps/v1", "DaemonSet", "kube-proxy", "u", true});
  EXPECT_TRUE(p.IsDaemonSetPod());
  EXPECT_FALSE(p.IsMirrorPod());
  p.meta.annotations["kubernetes.io/config.mirror"] = "x";
  EXPECT_TRUE(p.IsMirrorPod());
  Container c;
  c.ports = {{80, 0, "TCP", ""}, {9090, 9090, "TCP", ""}};
  p.containers.push_back(c);
  auto ports = p.HostPorts();
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0].host_port, 9090);
}

}  // namespace
}  // namespace tidepool::model
