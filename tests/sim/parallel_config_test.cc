#include "seam/sim/model/parallel_config.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "seam/sim/model/config_space.h"

namespace seam {
namespace {

using Groups = std::vector<std::vector<int>>;

TEST(ParallelConfig, DerivesAttentionAndMoeTpFromTheLeaves) {
  ParallelConfig c{.pp = 2, .tp = 8, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4, .moe_dp = 1};
  EXPECT_TRUE(validate(c).isOk());
  EXPECT_EQ(c.world(), 16);
  EXPECT_EQ(c.attnTp(), 2);
  EXPECT_EQ(c.moeTp(), 2);
}

TEST(ParallelConfig, RefusesAttentionSplitThatDoesNotDivideTpNamingTheValues) {
  ParallelConfig c{.tp = 4, .attn_dp = 3, .attn_cp = 2};
  Status st = validate(c);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(st.message(), "attn_dp*attn_cp=6 does not divide tp=4");
}

TEST(ParallelConfig, RefusesMoeSplitThatDoesNotDivideTp) {
  ParallelConfig c{.tp = 4, .moe_ep = 8};
  EXPECT_EQ(validate(c).message(), "moe_ep*moe_dp=8 does not divide tp=4");
}

TEST(ParallelConfig, RefusesNonPositiveLeaves) {
  ParallelConfig c{.tp = 0};
  EXPECT_EQ(validate(c).message(), "tp=0 must be >= 1");
}

// ServerArgs._handle_context_parallelism: moe_dp is 1 or attn_cp, without PP,
// tiling TP with an EP group; every config of world 8 the engine starts with
// a moe_dp > 1 has attn_cp == moe_dp.
TEST(ParallelConfig, ServerArgsAcceptsAMoeDpOnlyAsTheAttentionCpGroupWithoutPpAndTilingTpWithEp) {
  auto refused = [](ParallelConfig c) {
    const Status st = serverArgsMoeDp(c);
    EXPECT_EQ(st.code(), StatusCode::kRefused) << c.describe();
    return st.message();
  };
  EXPECT_NE(refused({.tp = 4, .attn_cp = 2, .moe_dp = 4})
                .find("attn_cp_size != moe_dp_size is only supported when "
                      "moe_dp_size == 1"),
            std::string::npos);
  EXPECT_NE(refused({.tp = 4, .moe_dp = 2}).find("attn_cp=1 moe_dp=2"), std::string::npos);
  EXPECT_NE(refused({.tp = 8, .attn_cp = 4, .moe_dp = 2}).find("attn_cp=4 moe_dp=2"),
            std::string::npos);
  EXPECT_NE(refused({.pp = 2, .tp = 4, .attn_cp = 2, .moe_dp = 2}).find("PP is not supported"),
            std::string::npos);
  EXPECT_NE(refused({.tp = 8, .attn_cp = 2, .moe_ep = 2, .moe_dp = 2})
                .find("ep_size * moe_dp_size must be equal"),
            std::string::npos);
  EXPECT_TRUE(serverArgsMoeDp({.tp = 8, .attn_cp = 2, .moe_ep = 4, .moe_dp = 2}).isOk());
  EXPECT_TRUE(serverArgsMoeDp({.pp = 2, .tp = 4, .attn_cp = 4, .moe_ep = 2}).isOk());
  auto space = ConfigSpace::build(8, nullptr, {});
  ASSERT_TRUE(space.hasValue());
  int accepted = 0;
  for (const ParallelConfig& c : space->all()) {
    if (c.moe_dp > 1 && serverArgsMoeDp(c).isOk()) {
      ++accepted;
      EXPECT_EQ(c.attn_cp, c.moe_dp) << c.describe();
      EXPECT_EQ(c.pp, 1) << c.describe();
    }
  }
  EXPECT_GT(accepted, 0);
}

// The worked example of SGLang's parallel_state.py docstring (reference §2):
// 8 GPUs, attn_cp=2, attn_tp=4, moe_dp=2, moe_ep=4 => tp=8.
TEST(Topology, ReproducesTheEightGpuExampleOfTheReferenceGroupByGroup) {
  ParallelConfig c{.pp = 1, .tp = 8, .attn_dp = 1, .attn_cp = 2, .moe_ep = 4, .moe_dp = 2};
  ASSERT_TRUE(validate(c).isOk());
  ASSERT_EQ(c.attnTp(), 4);
  ASSERT_EQ(c.moeTp(), 1);
  Topology t(c);
  EXPECT_EQ(t.groups(Axis::kTp), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(t.groups(Axis::kAttnCp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(t.groups(Axis::kAttnTp), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(t.groups(Axis::kMoeEp), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(t.groups(Axis::kMoeDp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(t.groups(Axis::kMoeTp), (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  EXPECT_EQ(t.groups(Axis::kAttnDp), (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  EXPECT_EQ(t.groups(Axis::kPp), (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
}

TEST(Topology, AliasesMoeDpToTheAttentionCpGroupWhenCpExceedsMoeDp) {
  ParallelConfig c{.tp = 8, .attn_cp = 4, .moe_ep = 2, .moe_dp = 1};
  Topology t(c);
  EXPECT_EQ(t.groups(Axis::kMoeDp), t.groups(Axis::kAttnCp));
  EXPECT_EQ(t.groups(Axis::kAttnCp), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(Topology, BuildsDpAttentionGroupsAsContiguousAttentionTpBlocks) {
  // TP = 4, DP = 2 (the ScatterMode docstring): attention rows [ab, ab, cd, cd].
  ParallelConfig c{.tp = 4, .attn_dp = 2};
  Topology t(c);
  EXPECT_EQ(t.groups(Axis::kAttnTp), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(t.groups(Axis::kAttnDp), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(t.attnDpRank(3), 1);
  EXPECT_EQ(t.attnTpRank(3), 1);
}

TEST(Topology, PipelineGroupsStrideByTheTpSize) {
  ParallelConfig c{.pp = 2, .tp = 4, .attn_dp = 2};
  Topology t(c);
  EXPECT_EQ(t.groups(Axis::kPp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(t.groups(Axis::kTp), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(t.groups(Axis::kAttnTp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

// Brute force over every valid configuration of worlds 1..64: each rank is in
// exactly one group of each kind, the sizes are the derived ones, and the
// members sit at the strides SGLang builds them with.
TEST(Topology, EveryConfigOfWorldsUpTo64HasConsistentGroups) {
  int checked = 0;
  for (int world = 1; world <= 64; ++world) {
    auto space = ConfigSpace::build(world);
    ASSERT_TRUE(space.hasValue());
    for (const ParallelConfig& c : space->all()) {
      SCOPED_TRACE(c.describe());
      Topology t(c);
      const int expected_size[kAxisCount] = {c.tp,
                                             c.attnTp(),
                                             c.attn_cp,
                                             c.attn_dp,
                                             c.moe_ep,
                                             c.moeTp(),
                                             c.attn_cp > c.moe_dp ? c.attn_cp : c.moe_dp,
                                             c.pp};
      const int expected_stride[kAxisCount] = {
          1,
          1,
          c.attnTp(),
          c.attnTp() * c.attn_cp,
          c.moeTp(),
          1,
          c.attn_cp > c.moe_dp ? c.attnTp() : c.moeTp() * c.moe_ep,
          c.tp};
      for (Axis axis : kAllAxes) {
        const int a = static_cast<int>(axis);
        std::vector<int> seen(world, 0);
        for (const auto& g : t.groups(axis)) {
          ASSERT_EQ(static_cast<int>(g.size()), expected_size[a]) << axisName(axis);
          for (size_t i = 0; i < g.size(); ++i) {
            ++seen[g[i]];
            if (i > 0) {
              ASSERT_EQ(g[i] - g[i - 1], expected_stride[a]) << axisName(axis);
            }
            ASSERT_EQ(t.rankIn(axis, g[i]), static_cast<int>(i));
            ASSERT_EQ(t.groupOf(axis, g[i]), g);
          }
          // Every group but pp stays inside one TP group.
          if (axis != Axis::kPp) {
            ASSERT_EQ(g.front() / c.tp, g.back() / c.tp) << axisName(axis);
          }
        }
        for (int r = 0; r < world; ++r) {
          ASSERT_EQ(seen[r], 1) << axisName(axis) << " rank " << r;
        }
      }
      // attn_tp x attn_cp x attn_dp tiles the TP group: the coordinates are unique.
      std::set<std::tuple<int, int, int, int>> coords;
      for (int r = 0; r < world; ++r) {
        coords.insert({t.ppRank(r), t.attnDpRank(r), t.attnCpRank(r), t.attnTpRank(r)});
        ASSERT_EQ(t.attnDpRank(r), (r % c.tp) / (c.attnTp() * c.attn_cp));
      }
      ASSERT_EQ(static_cast<int>(coords.size()), world);
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(Axis, NamesRoundTrip) {
  for (Axis axis : kAllAxes) {
    Axis parsed;
    ASSERT_TRUE(parseAxis(axisName(axis), &parsed));
    EXPECT_EQ(parsed, axis);
  }
  Axis unused;
  EXPECT_FALSE(parseAxis("dp", &unused));
}

}  // namespace
}  // namespace seam

namespace seam {
namespace {

TEST(GroupMembers, AgreesWithTopologyForEveryRankAxisAndConfigOfWorldsUpTo64) {
  for (int world = 1; world <= 64; ++world) {
    auto space = ConfigSpace::build(world);
    ASSERT_TRUE(space.hasValue());
    for (const ParallelConfig& c : space->all()) {
      const Topology t(c);
      for (Axis axis : kAllAxes) {
        ASSERT_EQ(groupSizeOf(c, axis), t.groupSize(axis)) << c.describe() << " " << axisName(axis);
        for (int r = 0; r < world; ++r) {
          ASSERT_EQ(groupMembers(c, axis, r), t.groupOf(axis, r))
              << c.describe() << " " << axisName(axis) << " rank " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace seam
