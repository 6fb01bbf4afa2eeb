// InterPodAffinity: the incoming pod's required affinity and anti-affinity, placed pods'
// anti-affinity against it, namespaces, the first-pod-of-a-group rule and pool templates.
#include <gtest/gtest.h>

#include "sched/fit.h"
#include "tests/sched/builders.h"

namespace tidepool::sched {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Term;
using testing::TestCluster;

constexpr std::string_view kHost = model::kLabelHostname;
constexpr std::string_view kZone = model::kLabelZone;

// a1, a2 in zone a; b1 in zone b; c1 in zone c.
class InterPodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.AddNode(NodeBuilder("a1").Zone("a").Build());
    c_.AddNode(NodeBuilder("a2").Zone("a").Build());
    c_.AddNode(NodeBuilder("b1").Zone("b").Build());
    c_.AddNode(NodeBuilder("c1").Zone("c").Build());
  }
  FitResult FitOn(const model::Pod& pod, std::string_view node) {
    return Fits(pod, c_.Index(node), c_.snapshot());
  }
  TestCluster c_;
};

TEST_F(InterPodTest, ExistingAntiAffinityOnHostnameBlocksThatNodeOnly) {
  c_.AddPod(PodBuilder("db-0")
                .Label("app", "db")
                .AntiAffinity(Term(std::string(kHost), {{"app", "db"}}))
                .Build(),
            "a1");
  EXPECT_EQ(c_.snapshot().PodsWithRequiredAntiAffinity(), 1);
  auto db1 = PodBuilder("db-1").Label("app", "db").Build();
  FitResult r = FitOn(db1, "a1");
  EXPECT_EQ(r.code, FitCode::kExistingAntiAffinity);
  EXPECT_EQ(r.reason, "node(s) didn't satisfy existing pods anti-affinity rules");
  EXPECT_FALSE(r.unresolvable());
  EXPECT_TRUE(FitOn(db1, "a2").fits());
  EXPECT_TRUE(FitOn(PodBuilder("web").Label("app", "web").Build(), "a1").fits());
}

TEST_F(InterPodTest, ExistingAntiAffinityOnZoneBlocksTheWholeZone) {
  c_.AddPod(PodBuilder("db-0")
                .Label("app", "db")
                .AntiAffinity(Term(std::string(kZone), {{"app", "db"}}))
                .Build(),
            "a1");
  auto db1 = PodBuilder("db-1").Label("app", "db").Build();
  EXPECT_EQ(FitOn(db1, "a1").code, FitCode::kExistingAntiAffinity);
  EXPECT_EQ(FitOn(db1, "a2").code, FitCode::kExistingAntiAffinity);
  EXPECT_TRUE(FitOn(db1, "b1").fits());
}

TEST_F(InterPodTest, ExistingAntiAffinityNamespaces) {
  auto term = Term(std::string(kHost), {{"app", "db"}});
  // Empty namespaces and no selector: the declaring pod's own namespace only.
  c_.AddPod(PodBuilder("own", "team-a").AntiAffinity(term).Build(), "a1");
  // Listed namespaces.
  auto listed = term;
  listed.namespaces = {"team-b"};
  c_.AddPod(PodBuilder("listed", "team-a").AntiAffinity(listed).Build(), "a2");
  // An empty namespace selector selects all namespaces.
  auto all = term;
  all.namespace_selector = model::LabelSelector{};
  c_.AddPod(PodBuilder("all", "team-a").AntiAffinity(all).Build(), "b1");
  // A non-empty one selects no namespace (there are no Namespace objects to match).
  auto labeled = term;
  labeled.namespace_selector = model::LabelSelector{};
  labeled.namespace_selector->match_labels = {{"team", "b"}};
  c_.AddPod(PodBuilder("labeled", "team-a").AntiAffinity(labeled).Build(), "c1");

  auto in_a = PodBuilder("x", "team-a").Label("app", "db").Build();
  auto in_b = PodBuilder("y", "team-b").Label("app", "db").Build();
  EXPECT_EQ(FitOn(in_a, "a1").code, FitCode::kExistingAntiAffinity);
  EXPECT_TRUE(FitOn(in_b, "a1").fits());
  EXPECT_TRUE(FitOn(in_a, "a2").fits());
  EXPECT_EQ(FitOn(in_b, "a2").code, FitCode::kExistingAntiAffinity);
  EXPECT_EQ(FitOn(in_a, "b1").code, FitCode::kExistingAntiAffinity);
  EXPECT_EQ(FitOn(in_b, "b1").code, FitCode::kExistingAntiAffinity);
  EXPECT_TRUE(FitOn(in_a, "c1").fits());
  EXPECT_TRUE(FitOn(in_b, "c1").fits());
}

TEST_F(InterPodTest, IncomingAntiAffinity) {
  c_.AddPod(PodBuilder("web-0").Label("app", "web").Build(), "a1");
  auto per_host = PodBuilder("web-1")
                      .Label("app", "web")
                      .AntiAffinity(Term(std::string(kHost), {{"app", "web"}}))
                      .Build();
  FitResult r = FitOn(per_host, "a1");
  EXPECT_EQ(r.code, FitCode::kPodAntiAffinity);
  EXPECT_EQ(r.reason, "node(s) didn't match pod anti-affinity rules");
  EXPECT_FALSE(r.unresolvable());
  EXPECT_TRUE(FitOn(per_host, "a2").fits());

  auto per_zone = PodBuilder("web-2")
                      .Label("app", "web")
                      .AntiAffinity(Term(std::string(kZone), {{"app", "web"}}))
                      .Build();
  EXPECT_EQ(FitOn(per_zone, "a2").code, FitCode::kPodAntiAffinity);
  EXPECT_TRUE(FitOn(per_zone, "b1").fits());
  // A node without the topology key is never in a conflicting domain.
  c_.AddNode(NodeBuilder("nozone").Build());
  EXPECT_TRUE(FitOn(per_zone, "nozone").fits());
}

TEST_F(InterPodTest, IncomingAffinityFollowsMatchingPods) {
  c_.AddPod(PodBuilder("cache").Label("app", "cache").Build(), "b1");
  auto pod = PodBuilder("worker").Affinity(Term(std::string(kZone), {{"app", "cache"}})).Build();
  FitResult r = FitOn(pod, "a1");
  EXPECT_EQ(r.code, FitCode::kPodAffinity);
  EXPECT_EQ(r.reason, "node(s) didn't match pod affinity rules");
  EXPECT_FALSE(r.unresolvable());  // a node in zone b could help
  EXPECT_TRUE(FitOn(pod, "b1").fits());

  // Pods of other namespaces do not match a term without namespaces.
  auto elsewhere =
      PodBuilder("w2", "other").Affinity(Term(std::string(kZone), {{"app", "cache"}})).Build();
  FitResult r2 = FitOn(elsewhere, "b1");
  EXPECT_EQ(r2.code, FitCode::kPodAffinity);
  EXPECT_TRUE(r2.unresolvable());
}

TEST_F(InterPodTest, FirstPodOfAGroupMayGoAnywhere) {
  auto term = Term(std::string(kZone), {{"job", "train"}});
  auto first = PodBuilder("train-0").Label("job", "train").Affinity(term).Build();
  EXPECT_TRUE(FitOn(first, "a1").fits());
  EXPECT_TRUE(FitOn(first, "c1").fits());
  // ...but only on nodes that have the topology key.
  c_.AddNode(NodeBuilder("nozone").Build());
  FitResult missing = FitOn(first, "nozone");
  EXPECT_EQ(missing.code, FitCode::kPodAffinity);
  EXPECT_TRUE(missing.unresolvable());

  // A pod that does not match its own term gets no such exception.
  auto stranger = PodBuilder("other").Label("job", "eval").Affinity(term).Build();
  FitResult r = FitOn(stranger, "a1");
  EXPECT_EQ(r.code, FitCode::kPodAffinity);
  EXPECT_TRUE(r.unresolvable());

  // Once one member is placed, the rest follow it.
  c_.AddPod(first, "b1");
  auto second = PodBuilder("train-1").Label("job", "train").Affinity(term).Build();
  EXPECT_EQ(FitOn(second, "a1").code, FitCode::kPodAffinity);
  EXPECT_FALSE(FitOn(second, "a1").unresolvable());
  EXPECT_TRUE(FitOn(second, "b1").fits());
  EXPECT_TRUE(FitOn(stranger, "b1").fits());
}

TEST_F(InterPodTest, AffinityCountsOnlyPodsMatchingAllTerms) {
  auto pod = PodBuilder("p")
                 .Affinity(Term(std::string(kZone), {{"app", "cache"}}))
                 .Affinity(Term(std::string(kHost), {{"tier", "hot"}}))
                 .Build();
  c_.AddPod(PodBuilder("cache").Label("app", "cache").Build(), "b1");
  c_.AddPod(PodBuilder("hot").Label("tier", "hot").Build(), "b1");
  EXPECT_EQ(FitOn(pod, "b1").code, FitCode::kPodAffinity);
  EXPECT_TRUE(FitOn(pod, "b1").unresolvable());
  c_.AddPod(PodBuilder("both").Label("app", "cache").Label("tier", "hot").Build(), "b1");
  EXPECT_TRUE(FitOn(pod, "b1").fits());
  EXPECT_EQ(FitOn(pod, "a1").code, FitCode::kPodAffinity);
}

TEST_F(InterPodTest, TermWithoutLabelSelectorMatchesNoPods) {
  c_.AddPod(PodBuilder("web").Label("app", "web").Build(), "a1");
  model::PodAffinityTerm term;
  term.topology_key = std::string(kHost);  // has_label_selector stays false
  auto anti = PodBuilder("p").AntiAffinity(term).Build();
  EXPECT_TRUE(FitOn(anti, "a1").fits());
  auto aff = PodBuilder("q").Affinity(term).Build();
  EXPECT_EQ(FitOn(aff, "a1").code, FitCode::kPodAffinity);
}

TEST_F(InterPodTest, AffinityIsCheckedBeforeAntiAffinity) {
  c_.AddPod(PodBuilder("web").Label("app", "web").Build(), "a1");
  c_.AddPod(PodBuilder("db")
                .Label("app", "db")
                .AntiAffinity(Term(std::string(kHost), {{"app", "p"}}))
                .Build(),
            "a1");
  PodBuilder b("p");
  b.Label("app", "p")
      .Affinity(Term(std::string(kHost), {{"app", "cache"}}))
      .AntiAffinity(Term(std::string(kHost), {{"app", "web"}}));
  EXPECT_EQ(FitOn(b.Build(), "a1").code, FitCode::kPodAffinity);
  PodBuilder b2("p2");
  b2.Label("app", "p").AntiAffinity(Term(std::string(kHost), {{"app", "web"}}));
  EXPECT_EQ(FitOn(b2.Build(), "a1").code, FitCode::kPodAntiAffinity);
  EXPECT_EQ(FitOn(PodBuilder("p3").Label("app", "p").Build(), "a1").code,
            FitCode::kExistingAntiAffinity);
}

TEST_F(InterPodTest, TemplatesSeeTheirZoneButAreANewHost) {
  c_.AddPod(PodBuilder("db-0")
                .Label("app", "db")
                .AntiAffinity(Term(std::string(kZone), {{"app", "db"}}))
                .AntiAffinity(Term(std::string(kHost), {{"app", "db"}}))
                .Build(),
            "a1");
  c_.AddPod(PodBuilder("cache").Label("app", "cache").Build(), "b1");
  auto zone_a = NodeBuilder("a1").Zone("a").Build();  // even a copied hostname is a new host
  auto zone_b = NodeBuilder("tmpl-b").Zone("b").Build();
  auto no_zone = NodeBuilder("tmpl").Build();

  auto db = PodBuilder("db-1").Label("app", "db").Build();
  FitChecker db_checker(db, c_.snapshot());
  EXPECT_EQ(db_checker.CheckTemplate(zone_a, {}, 0).code, FitCode::kExistingAntiAffinity);
  EXPECT_TRUE(db_checker.CheckTemplate(zone_b, {}, 0).fits());
  EXPECT_TRUE(db_checker.CheckTemplate(no_zone, {}, 0).fits());

  auto worker = PodBuilder("w").Affinity(Term(std::string(kZone), {{"app", "cache"}})).Build();
  FitChecker w_checker(worker, c_.snapshot());
  EXPECT_EQ(w_checker.CheckTemplate(zone_a, {}, 0).code, FitCode::kPodAffinity);
  EXPECT_TRUE(w_checker.CheckTemplate(zone_b, {}, 0).fits());
  EXPECT_TRUE(w_checker.CheckTemplate(no_zone, {}, 0).unresolvable());

  // Hostname affinity can never be met by a new node (it has no pods)...
  auto near_cache = PodBuilder("n").Affinity(Term(std::string(kHost), {{"app", "cache"}})).Build();
  FitChecker n_checker(near_cache, c_.snapshot());
  EXPECT_EQ(n_checker.CheckTemplate(zone_b, {}, 0).code, FitCode::kPodAffinity);
  // ...and hostname anti-affinity never blocks one.
  auto spread_web = PodBuilder("s")
                        .Label("app", "web")
                        .AntiAffinity(Term(std::string(kHost), {{"app", "cache"}}))
                        .Build();
  FitChecker s_checker(spread_web, c_.snapshot());
  EXPECT_TRUE(s_checker.CheckTemplate(NodeBuilder("b1").Zone("b").Build(), {}, 0).fits());
  EXPECT_EQ(s_checker.Check(c_.Index("b1")).code, FitCode::kPodAntiAffinity);
}

}  // namespace
}  // namespace tidepool::sched
