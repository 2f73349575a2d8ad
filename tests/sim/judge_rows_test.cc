// The judges' groups and row contents (judge_rows.h): hand-derived layouts
// from SGLang's rules (initialize_model_parallel's groups, the CP strategies'
// shards, _dp_gather's buffer), and agreement with the planner's own copies
// (Topology, RowMap through laneRowsOf) on every geometry of the world-8
// sweep space: two derivations that share no code, so a fault in either
// that keeps the row counts (tokens permuted, members reordered) fails here.
#include "seam/sim/replay/judge_rows.h"

#include <gtest/gtest.h>

#include <vector>

#include "judge_agreement.h"

namespace seam {
namespace {

constexpr int P = kPaddingRow;

TEST(JudgeGroups, AttentionAndExpertGroupsFollowInitializeModelParallelsLayout) {
  // tp 8, attention DP 2 (attn_tp 4), moe_ep 4 (moe_tp 2): attention TP in
  // contiguous blocks, attention DP across them, expert parallel at stride moe_tp.
  const JudgeGroups g({.tp = 8, .attn_dp = 2, .moe_ep = 4});
  EXPECT_EQ(g.groupOf(Axis::kAttnTp, 6), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(g.groupOf(Axis::kAttnDp, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(g.groupOf(Axis::kMoeEp, 3), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(g.groupOf(Axis::kMoeTp, 3), (std::vector<int>{2, 3}));
  EXPECT_EQ(g.rankIn(Axis::kAttnDp, 5), 1);
  EXPECT_EQ(g.rankIn(Axis::kAttnTp, 5), 1);
  EXPECT_EQ(g.rankIn(Axis::kMoeEp, 5), 2);
  // Groups of four are their own communicators; the second attention-TP group is index 1.
  EXPECT_EQ(g.communicator(Axis::kAttnTp, 6),
            static_cast<int>(Axis::kAttnTp) * JudgeGroups::kCommunicatorStride + 1);
}

TEST(JudgeGroups, AnAxisSpanningTheWholeTpGroupUsesTheTpCommunicator) {
  const JudgeGroups g({.pp = 2, .tp = 4, .moe_ep = 4});
  EXPECT_EQ(g.communicator(Axis::kMoeEp, 5), g.communicator(Axis::kTp, 5));
  EXPECT_EQ(g.communicator(Axis::kAttnTp, 1), g.communicator(Axis::kTp, 1));
  EXPECT_NE(g.communicator(Axis::kTp, 1), g.communicator(Axis::kTp, 5));
  EXPECT_EQ(g.groupOf(Axis::kPp, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(g.rankIn(Axis::kPp, 5), 1);
}

TEST(JudgeGroups, MoeDpIsTheAttentionCpGroupWhenAttentionCpIsWider) {
  const JudgeGroups g({.tp = 4, .attn_cp = 2});
  EXPECT_EQ(g.groupOf(Axis::kMoeDp, 3), g.groupOf(Axis::kAttnCp, 3));
  EXPECT_EQ(g.groupOf(Axis::kAttnCp, 3), (std::vector<int>{1, 3}));
}

TEST(JudgeTokens, InterleaveDealsTokensRoundRobinAndPadsEachShardToCp) {
  // InterleaveCPStrategy over cp 2 (attn_tp 1): 5 tokens, CP rank 0 holds
  // 0, 2, 4 and rank 1 holds 1, 3; ceil(5 / 2) = 3 rounded up to 2 is 4 rows.
  const JudgeGroups g({.tp = 2, .attn_cp = 2});
  const JudgeTokens t(g, {5}, {0}, DpPadding::kSumLen, CpLayout::kInterleave,
                      LocalSplit::kTensorSplit, AttentionPad::kTokens);
  EXPECT_EQ(t.tokens(RowKind::kAttention, 0), (std::vector<int>{0, 2, 4, P}));
  EXPECT_EQ(t.tokens(RowKind::kAttention, 1), (std::vector<int>{1, 3, P, P}));
  EXPECT_EQ(t.tokens(RowKind::kCpGathered, 1), (std::vector<int>{0, 2, 4, P, 1, 3, P, P}));
  EXPECT_EQ(t.tokens(RowKind::kFull, 0), t.tokens(RowKind::kCpGathered, 0));
  EXPECT_EQ(t.tokens(RowKind::kSequence, 1), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(t.gatheredRowOfSequence(1, 3), 5);
  EXPECT_TRUE(t.cpSharded(0));
}

TEST(JudgeTokens, ZigzagGivesEachCpRankABlockFromEachEndOfTheSequence) {
  // ZigzagCPStrategy over cp 2: 130 tokens in 4 blocks of 33, 33, 32, 32;
  // rank 0 holds blocks 0 and 3, rank 1 blocks 1 and 2 (65 rows each,
  // padded to 68, a multiple of 2cp).
  const JudgeGroups g({.tp = 2, .attn_cp = 2});
  const JudgeTokens t(g, {130}, {0}, DpPadding::kSumLen, CpLayout::kZigzag,
                      LocalSplit::kTensorSplit, AttentionPad::kTokens);
  std::vector<int> r0, r1;
  for (int b = 0; b < 130; ++b) (b < 33 || b >= 98 ? r0 : r1).push_back(b);
  r0.resize(68, P);
  r1.resize(68, P);
  EXPECT_EQ(t.tokens(RowKind::kAttention, 0), r0);
  EXPECT_EQ(t.tokens(RowKind::kAttention, 1), r1);
}

TEST(JudgeTokens, DpBufferSlotsAreAlignedEntriesUnderSumLenAndLongestUnderMaxLen) {
  // Shards of 3 and 1 tokens over attn_tp 2: entries aligned to 4 and 2.
  const JudgeGroups g({.tp = 4, .attn_dp = 2});
  const JudgeTokens sum(g, {3, 1}, {0, 3}, DpPadding::kSumLen, CpLayout::kReplicated,
                        LocalSplit::kPaddedEqual, AttentionPad::kTokens);
  EXPECT_EQ(sum.tokens(RowKind::kFull, 2), (std::vector<int>{0, 1, 2, P, 3, P}));
  EXPECT_EQ(sum.fullSlot(1), 4);
  const JudgeTokens max(g, {3, 1}, {0, 3}, DpPadding::kMaxLen, CpLayout::kReplicated,
                        LocalSplit::kPaddedEqual, AttentionPad::kTokens);
  EXPECT_EQ(max.tokens(RowKind::kFull, 0), (std::vector<int>{0, 1, 2, P, 3, P, P, P}));
  // shard_token_rows: chunks of ceil(3 / 2) = 2; rank 1 holds token 2 and a pad row.
  EXPECT_EQ(max.tokens(RowKind::kLocal, 1), (std::vector<int>{2, P}));
  EXPECT_EQ(max.localOffset(1), 2);
}

TEST(JudgeTokens, APaddedLocalBatchHoldsTheLongestAlignedEntryOnEveryShard) {
  // DP attention under MAX_LEN: prepare_mlp_sync_batch makes every entry of
  // global_num_tokens the longest, aligned to attn_tp (3 -> 4), and
  // _pad_inputs_to_size pads each shard's inputs to it, so shard 1 (one
  // token) runs 4 rows and its second attention-TP rank's chunk is padding only
  // (model_executor/forward_batch_info.py @003bbaf9).
  const JudgeGroups g({.tp = 4, .attn_dp = 2});
  const JudgeTokens t(g, {3, 1}, {0, 3}, DpPadding::kMaxLen, CpLayout::kReplicated,
                      LocalSplit::kPaddedEqual, AttentionPad::kDpBuffer);
  EXPECT_EQ(t.tokens(RowKind::kAttention, 0), (std::vector<int>{0, 1, 2, P}));
  EXPECT_EQ(t.tokens(RowKind::kAttention, 3), (std::vector<int>{3, P, P, P}));
  EXPECT_EQ(t.tokens(RowKind::kSequence, 3), (std::vector<int>{3}));
  EXPECT_EQ(t.tokens(RowKind::kLocal, 2), (std::vector<int>{3, P}));
  EXPECT_EQ(t.tokens(RowKind::kLocal, 3), (std::vector<int>{P, P}));
}

TEST(JudgeTokens, AgreeWithThePlannersRowMapAndTopologyOnEveryGeometryOfTheWorld8Sweep) {
  judge_agreement::expectRowsAgreeOverSweep(8, 100);
}

}  // namespace
}  // namespace seam
