// A Pod's usually empty parts (PodExtras) live behind one pointer: a plain pod does not carry
// them, reads them as empty, and a copy copies them.
#include "model/pod.h"

#include <gtest/gtest.h>

#include <utility>

namespace tidepool::model {
namespace {

// The parts a plain pod leaves empty are not in the Pod itself. A cluster model holds a million
// pods: 856 bytes each before the split, 560 after (libstdc++, 64-bit). A field added inline
// should be one most pods set, and this bound moved on purpose.
TEST(PodTest, APlainPodIsSmall) { EXPECT_LE(sizeof(Pod), 560u); }

TEST(PodTest, APlainPodReadsItsExtrasAsEmptyWithoutCarryingThem) {
  Pod p;
  p.meta.name = "plain";
  p.Finalize();
  EXPECT_FALSE(p.affinity().node_required.has_value());
  EXPECT_TRUE(p.affinity().pod_affinity_required.empty());
  EXPECT_TRUE(p.init_containers().empty());
  EXPECT_TRUE(p.overhead().IsZero());
  EXPECT_TRUE(p.topology_spread_constraints().empty());
  EXPECT_TRUE(p.resource_claims().empty());
  EXPECT_TRUE(p.resource_claim_statuses().empty());
  EXPECT_TRUE(p.priority_class_name().empty());
  p.ClearNomination();
  EXPECT_FALSE(p.HasExtras());
}

TEST(PodTest, AWrittenPartIsCarriedAndCopiedByValue) {
  Pod p;
  p.mutable_affinity().pod_anti_affinity_required.emplace_back().topology_key = "zone";
  p.mutable_overhead().Set(kCpu, 250);
  p.mutable_nominated_node_name() = "node-1";
  p.Finalize();
  ASSERT_TRUE(p.HasExtras());
  EXPECT_TRUE(p.has_required_anti_affinity);
  EXPECT_EQ(p.requests.cpu_milli(), 250);

  Pod copy = p;
  copy.mutable_affinity().pod_anti_affinity_required.clear();
  copy.ClearNomination();
  EXPECT_EQ(p.affinity().pod_anti_affinity_required.size(), 1u);
  EXPECT_EQ(p.nominated_node_name(), "node-1");
  EXPECT_TRUE(copy.nominated_node_name().empty());

  Pod assigned;
  assigned = p;
  EXPECT_EQ(assigned.affinity().pod_anti_affinity_required.front().topology_key, "zone");
  assigned = Pod();
  EXPECT_FALSE(assigned.HasExtras());

  Pod moved = std::move(p);
  EXPECT_EQ(moved.overhead().cpu_milli(), 250);
}

}  // namespace
}  // namespace tidepool::model
