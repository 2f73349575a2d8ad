// Two-batch overlap's children (sim/include/seam/sim/plan/tbo.h): where each
// DP shard splits, the tokens each child takes and the rows it runs on (the
// padded parent cut at the split, each child padded to tbo_padded_len).
// Expected values from batch_overlap/two_batch_overlap.py @0099dee6.
#include <gtest/gtest.h>

#include <vector>

#include "seam/sim/plan/tbo.h"

namespace seam {
namespace {

TEST(TboSplit, GivesChildATheFirstHalfOfEveryShardAndChildBTheRest) {
  const Batch batch{{5, 0, 1, 4}};
  const std::vector<int> split = tboSplit(batch);
  EXPECT_EQ(split, (std::vector<int>{2, 0, 0, 2}));
  const ParallelConfig k{.tp = 4, .attn_dp = 4};
  EXPECT_EQ(tboHalfBatch(k, batch, AttentionPad::kTokens, split, Half::kA).tokens,
            (std::vector<int>{2, 0, 0, 2}));
  EXPECT_EQ(tboHalfBatch(k, batch, AttentionPad::kTokens, split, Half::kB).tokens,
            (std::vector<int>{3, 0, 1, 2}));
  EXPECT_EQ(tboHalfBatch(k, batch, AttentionPad::kTokens, split, Half::kWhole).tokens,
            batch.tokens);
  // Tokens keep the batch's numbering: shard d starts at the sum of B_<d.
  EXPECT_EQ(tboFirstTokens(batch, split, Half::kA), (std::vector<int>{0, 5, 5, 6}));
  EXPECT_EQ(tboFirstTokens(batch, split, Half::kB), (std::vector<int>{2, 5, 5, 8}));
}

TEST(TboSplit, CutsThePaddedParentAndPadsEachChildToAttnTp) {
  // prepare_mlp_sync_batch pads the parent first; prepare_raw cuts it at the
  // split token taken from the unpadded batch, so child B keeps every padding
  // row; filter_batch pads each child to ceil(len / attn_tp) * attn_tp
  // (batch_overlap/two_batch_overlap.py @0099dee6).
  const Batch batch{{8, 6}};
  const std::vector<int> split = tboSplit(batch);  // 4, 3
  const ParallelConfig k{.tp = 8, .attn_dp = 2};   // attn_tp 4
  // MAX_LEN: both shards run 8 rows. A: ceil(4/4)*4, ceil(3/4)*4; B: 8-4, 8-3 -> 8.
  EXPECT_EQ(tboHalfBatch(k, batch, AttentionPad::kDpBuffer, split, Half::kA).rows,
            (std::vector<int>{4, 4}));
  EXPECT_EQ(tboHalfBatch(k, batch, AttentionPad::kDpBuffer, split, Half::kB).rows,
            (std::vector<int>{4, 8}));
  // SUM_LEN: each shard its entry aligned, 8 and 8 (6 -> 8); the same here.
  EXPECT_EQ(tboHalfBatch(k, batch, AttentionPad::kAlignedEntry, split, Half::kB).rows,
            (std::vector<int>{4, 8}));
  // An idle MAX_LEN shard splits at 0: A runs 0 rows, B every padded row.
  const Batch idle{{5, 0}};
  const std::vector<int> at = tboSplit(idle);  // 2, 0
  EXPECT_EQ(tboHalfBatch(k, idle, AttentionPad::kDpBuffer, at, Half::kA).rows,
            (std::vector<int>{4, 0}));
  EXPECT_EQ(tboHalfBatch(k, idle, AttentionPad::kDpBuffer, at, Half::kB).rows,
            (std::vector<int>{8, 8}));
  // Without DP attention (DeepEP at attn_tp 2): 5 tokens pad to 6, A 2, B 4.
  const ParallelConfig ep{.tp = 2, .moe_ep = 2};
  EXPECT_EQ(tboHalfBatch(ep, Batch{{5}}, AttentionPad::kAlignedEntry, {2}, Half::kA).rows,
            (std::vector<int>{2}));
  EXPECT_EQ(tboHalfBatch(ep, Batch{{5}}, AttentionPad::kAlignedEntry, {2}, Half::kB).rows,
            (std::vector<int>{4}));
}

}  // namespace
}  // namespace seam
