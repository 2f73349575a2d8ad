#include "seam/sim/model/config_space.h"

#include <gtest/gtest.h>

#include <set>

namespace seam {
namespace {

// Independent count: for each tp | world, (#pairs (dp, cp) with dp*cp | tp) *
// (#pairs (ep, mdp) with ep*mdp | tp).
int pairsDividing(int n) {
  int count = 0;
  for (int a = 1; a <= n; ++a)
    for (int b = 1; a * b <= n; ++b)
      if (n % (a * b) == 0) ++count;
  return count;
}

TEST(ConfigSpace, CountsEveryFactorizationOfTheWorld) {
  for (int world : {1, 2, 6, 8, 12, 16, 64}) {
    int expected = 0;
    for (int tp = 1; tp <= world; ++tp)
      if (world % tp == 0) expected += pairsDividing(tp) * pairsDividing(tp);
    auto space = ConfigSpace::build(world);
    ASSERT_TRUE(space.hasValue());
    EXPECT_EQ(space->size(), expected) << "world " << world;
  }
}

TEST(ConfigSpace, EnumeratesInAFixedOrderWithoutDuplicates) {
  auto a = ConfigSpace::build(16);
  auto b = ConfigSpace::build(16);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->all(), b->all());
  std::set<std::string> seen;
  for (const ParallelConfig& c : a->all()) {
    EXPECT_TRUE(validate(c).isOk());
    EXPECT_TRUE(seen.insert(c.describe()).second) << c.describe();
  }
  EXPECT_EQ((*a)[0], (ParallelConfig{.pp = 1, .tp = 16}));
}

TEST(ConfigSpace, ShardsPartitionTheSpace) {
  auto space = ConfigSpace::build(24);
  ASSERT_TRUE(space.hasValue());
  for (int n : {1, 2, 3, 7}) {
    std::vector<int> all;
    for (int i = 0; i < n; ++i) {
      auto part = space->shardIndices({.index = i, .count = n});
      all.insert(all.end(), part.begin(), part.end());
    }
    std::sort(all.begin(), all.end());
    ASSERT_EQ(static_cast<int>(all.size()), space->size());
    for (int i = 0; i < space->size(); ++i) EXPECT_EQ(all[i], i);
  }
}

TEST(ConfigSpace, ParsesShardSpecsAndRefusesBadOnes) {
  auto s = parseShard("2/5");
  ASSERT_TRUE(s.hasValue());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 5);
  for (const char* bad : {"5/5", "-1/2", "1", "a/b", "1/0", "1/2/3", ""}) {
    auto r = parseShard(bad);
    ASSERT_FALSE(r.hasValue()) << bad;
    EXPECT_NE(r.status().message().find("--shard"), std::string::npos);
  }
}

TEST(ConfigSpace, RefusesAFixedTpThatDoesNotDivideTheWorld) {
  auto r = ConfigSpace::build(8, nullptr, {.tp = 3});
  ASSERT_FALSE(r.hasValue());
  EXPECT_EQ(r.status().message(), "tp=3 does not divide world=8");
}

TEST(ConfigSpace, RefusesAFixedSplitThatCanNeverBeValid) {
  auto r = ConfigSpace::build(8, nullptr, {.tp = 4, .attn_dp = 8});
  ASSERT_FALSE(r.hasValue());
  EXPECT_EQ(r.status().message(), "attn_dp*attn_cp=8 does not divide tp=4");
}

TEST(ConfigSpace, RefusesWorldsOutOfRange) {
  EXPECT_FALSE(ConfigSpace::build(0).hasValue());
  EXPECT_FALSE(ConfigSpace::build(kMaxWorld + 1).hasValue());
}

TEST(ConfigSpace, FiltersByTheModelsShapes) {
  auto nano = findPreset("nemotron-3-nano");
  ASSERT_TRUE(nano.hasValue());
  auto space = ConfigSpace::build(8, *nano);
  ASSERT_TRUE(space.hasValue());
  ASSERT_GT(space->size(), 0);
  for (const ParallelConfig& c : space->all())
    EXPECT_TRUE(fitsModel(**nano, c).isOk()) << c.describe();
  // A dense model never enumerates MoE axes.
  auto dense = findPreset("nemotron-h-8b");
  auto dspace = ConfigSpace::build(8, *dense);
  ASSERT_TRUE(dspace.hasValue());
  for (const ParallelConfig& c : dspace->all()) {
    EXPECT_EQ(c.moe_ep, 1);
    EXPECT_EQ(c.moe_dp, 1);
  }
}

}  // namespace
}  // namespace seam
