// A plan's lanes (sim/plan/lane_rows.h): the batch's rows, and under
// two-batch overlap each half's, tokens numbered as in the batch (child A
// the first B_d / 2 tokens of each DP shard, each child padded, tbo.h); and the padding mode a
// count of full rows names. Expected rows come from RowMap and tboSplit.
#include "seam/sim/plan/lane_rows.h"

#include <gtest/gtest.h>

#include <vector>

#include "case_builders.h"
#include "seam/sim/plan/tbo.h"

namespace seam {
namespace {

using seam::testing::mustBuild;
using seam::testing::twoStageCase;

Flags tboFlags() {
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  f.tbo = true;
  return f;
}

TEST(LaneRows, APlanWithoutTboHasTheBatchsLaneOnlyInThePlansPaddingFirst) {
  const Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 4, .attn_dp = 2}, {3, 1}, {}));
  const Topology topo(plan.source.config);
  const std::vector<LaneRows> lanes = laneRowsOf(plan, topo);
  ASSERT_EQ(lanes.size(), 1u);
  // DP attention: prepare_mlp_sync_batch pads each shard to attn_tp, so local
  // rows are padded equal chunks, and under MAX_LEN to the longest entry.
  ASSERT_EQ(plan.local_split, LocalSplit::kPaddedEqual);
  ASSERT_EQ(plan.attention_pad, AttentionPad::kDpBuffer);
  const RowMap batch(topo, plan.source.batch, plan.padding, CpLayout::kReplicated, nullptr,
                     plan.local_split, plan.attention_pad);
  for (int r = 0; r < plan.world(); ++r) {
    for (int k = 0; k < kRowKindCount; ++k) {
      const RowKind kind = static_cast<RowKind>(k);
      EXPECT_EQ(lanes[0].rows.tokens(kind, r), batch.tokens(kind, r)) << "rank " << r;
    }
  }
  EXPECT_EQ(lanes[0].rows.padding(), plan.padding);
  EXPECT_NE(lanes[0].other_rows.padding(), plan.padding);
  EXPECT_EQ(&lanes[0].fullMap(plan.padding), &lanes[0].rows);
  EXPECT_EQ(&lanes[0].fullMap(lanes[0].other_rows.padding()), &lanes[0].other_rows);
}

TEST(LaneRows, AFullRowCountNamesThePaddingModeWhoseBufferHasThatManyRows) {
  // Shards of 3 and 1 tokens over attn_tp 2: MAX_LEN slots of 4 (8 rows),
  // SUM_LEN's aligned 4 + 2 (6 rows).
  const Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 4, .attn_dp = 2}, {3, 1}, {}));
  const std::vector<LaneRows> lanes = laneRowsOf(plan, Topology(plan.source.config));
  const LaneRows& lane = lanes.front();
  for (DpPadding mode : {DpPadding::kMaxLen, DpPadding::kSumLen}) {
    const int count = lane.fullMap(mode).count(RowKind::kFull, 0);
    ASSERT_TRUE(lane.modeOfCount(count, 0).has_value());
    EXPECT_EQ(*lane.modeOfCount(count, 0), mode);
  }
  EXPECT_EQ(lane.fullMap(DpPadding::kMaxLen).count(RowKind::kFull, 0), 8);
  EXPECT_EQ(lane.fullMap(DpPadding::kSumLen).count(RowKind::kFull, 0), 6);
  EXPECT_FALSE(lane.modeOfCount(7, 0).has_value());
}

TEST(LaneRows, ATboPlansHalvesCutThePaddedParentAndPadEachChildToAttnTp) {
  // tokens 3,2 at attn_tp 2, attn_dp 2, MAX_LEN: prepare_mlp_sync_batch pads
  // both shards to the longest aligned entry, 4 rows. prepare_raw cuts each
  // at B_d // 2 = 1 (child B keeps the parent's padding rows) and
  // filter_batch pads each child to ceil(len / 2) * 2: A 2 rows, B
  // ceil(3 / 2) * 2 = 4 (batch_overlap/two_batch_overlap.py @0099dee6).
  const Plan plan =
      mustBuild(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {3, 2}, tboFlags()));
  ASSERT_FALSE(plan.tbo_split.empty());
  const Topology topo(plan.source.config);
  const std::vector<LaneRows> lanes = laneRowsOf(plan, topo);
  ASSERT_EQ(lanes.size(), static_cast<size_t>(kHalfLanes));
  constexpr int P = kPaddingRow;
  const std::vector<std::vector<int>> whole{{0, 1, 2, P}, {3, 4, P, P}};
  const std::vector<std::vector<int>> a{{0, P}, {3, P}};
  const std::vector<std::vector<int>> b{{1, 2, P, P}, {4, P, P, P}};
  for (int r = 0; r < plan.world(); ++r) {
    const int d = topo.attnDpRank(r);
    EXPECT_EQ(lanes[0].rows.tokens(RowKind::kAttention, r), whole[d]) << "rank " << r;
    EXPECT_EQ(lanes[1].rows.tokens(RowKind::kAttention, r), a[d]) << "rank " << r;
    EXPECT_EQ(lanes[2].rows.tokens(RowKind::kAttention, r), b[d]) << "rank " << r;
    const HalfRows ha = halfRows(lanes, r, Half::kA);
    const HalfRows hb = halfRows(lanes, r, Half::kB);
    const HalfRows hw = halfRows(lanes, r, Half::kWhole);
    EXPECT_EQ(ha.offset, 0);
    EXPECT_EQ(ha.taken, 1);
    EXPECT_EQ(ha.count, 2);
    EXPECT_EQ(hb.offset, 1);
    EXPECT_EQ(hb.taken, 3);
    EXPECT_EQ(hb.count, 4);
    EXPECT_EQ(hw.offset, 0);
    EXPECT_EQ(hw.count, 4);
    EXPECT_EQ(ha.total, 4);
  }
}

}  // namespace
}  // namespace seam
