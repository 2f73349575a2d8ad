#include "seam/sim/plan/rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "seam/sim/model/config_space.h"

namespace seam {
namespace {

using Tokens = std::vector<int>;
constexpr int P = kPaddingRow;

TEST(Rows, EveryRowKindNameParsesBackToItsKind) {
  const char* names[kRowKindCount] = {"none",       "attention", "local",      "full",
                                      "dispatched", "sequence",  "cp_gathered"};
  for (int i = 0; i < kRowKindCount; ++i) {
    const auto kind = static_cast<RowKind>(i);
    EXPECT_EQ(rowKindName(kind), names[i]);
    RowKind parsed = RowKind::kNone;
    ASSERT_TRUE(parseRowKind(names[i], &parsed)) << names[i];
    EXPECT_EQ(parsed, kind);
  }
  RowKind untouched = RowKind::kFull;
  EXPECT_FALSE(parseRowKind("Full", &untouched));
  EXPECT_FALSE(parseRowKind("", &untouched));
  EXPECT_EQ(untouched, RowKind::kFull);
}

// tp=4, attn_dp=2 (attn_tp=2): ranks 0,1 are DP shard 0 with 3 tokens,
// ranks 2,3 are the idle shard 1.
RowMap idleShardMap(DpPadding padding) {
  return RowMap(Topology({.tp = 4, .attn_dp = 2}), Batch{{3, 0}}, padding);
}

// _pad_inputs_to_size (prepare_mlp_sync_batch): under MAX_LEN every shard
// runs the longest entry aligned to attn_tp, M = 4 here: 3 tokens and a pad
// row on shard 0, four pad rows on the idle shard 1; the attention-TP chunks
// are M / 2 rows, and the sequence rows (the model's output) the tokens.
TEST(RowMap, UnderTheDpBufferPaddingEveryShardHoldsTheLongestAlignedEntry) {
  const Topology t({.tp = 4, .attn_dp = 2});
  const Batch b{{3, 0}};
  const RowMap m(t, b, DpPadding::kMaxLen, CpLayout::kReplicated, nullptr, LocalSplit::kPaddedEqual,
                 AttentionPad::kDpBuffer);
  const Tokens attention[] = {{0, 1, 2, P}, {0, 1, 2, P}, {P, P, P, P}, {P, P, P, P}};
  const Tokens local[] = {{0, 1}, {2, P}, {P, P}, {P, P}};
  const Tokens sequence[] = {{0, 1, 2}, {0, 1, 2}, {}, {}};
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(m.tokens(RowKind::kAttention, r), attention[r]);
    EXPECT_EQ(m.tokens(RowKind::kLocal, r), local[r]);
    EXPECT_EQ(m.localOffset(r), r % 2 * 2);
    EXPECT_EQ(m.tokens(RowKind::kSequence, r), sequence[r]);
    EXPECT_EQ(m.count(RowKind::kFull, r), 8);
  }
  const RowCounts counts(t.config(), b, DpPadding::kMaxLen, CpLayout::kReplicated,
                         LocalSplit::kPaddedEqual, AttentionPad::kDpBuffer);
  EXPECT_EQ(counts.count(RowKind::kAttention, 3), 4);
  EXPECT_EQ(counts.dpLocalRows(3), 4);
}

// prepare_mlp_sync_batch (forward_batch_info.py @003bbaf9) pads every synced
// batch: MAX_LEN under DP attention to the longest entry, SUM_LEN and a synced
// batch without DP attention (an a2a backend, moe_dense_tp_size 1) to its own
// entry aligned to attn_tp.
TEST(ResolveAttentionPad, SyncedBatchesWithoutCpShardsRunTheirPaddedEntryTboParentsToo) {
  Case c;
  c.config = ParallelConfig{.tp = 4, .attn_dp = 2};
  c.batch = Batch{{3, 1}};
  EXPECT_EQ(resolveAttentionPad(c, DpPadding::kMaxLen, CpLayout::kReplicated),
            AttentionPad::kDpBuffer);
  EXPECT_EQ(resolveAttentionPad(c, DpPadding::kSumLen, CpLayout::kReplicated),
            AttentionPad::kAlignedEntry);
  EXPECT_EQ(resolveAttentionPad(c, DpPadding::kMaxLen, CpLayout::kZigzag), AttentionPad::kTokens);
  // Two-batch overlap pads the parent before TboForwardBatchPreparer cuts it.
  c.flags.tbo = true;
  EXPECT_EQ(resolveAttentionPad(c, DpPadding::kMaxLen, CpLayout::kReplicated),
            AttentionPad::kDpBuffer);
  c.flags.tbo = false;
  c.config = ParallelConfig{.tp = 4};
  c.batch = Batch{{3}};
  EXPECT_EQ(resolveAttentionPad(c, DpPadding::kMaxLen, CpLayout::kReplicated),
            AttentionPad::kTokens);
  c.flags.a2a = A2aBackend::kDeepep;
  EXPECT_EQ(resolveAttentionPad(c, DpPadding::kMaxLen, CpLayout::kReplicated),
            AttentionPad::kAlignedEntry);
}

// Without DP attention a synced batch of 3 tokens at attn_tp 2 runs 4 rows:
// attention and full rows are the tokens then one padding row, local chunks 2.
TEST(RowCounts, ASyncedBatchWithoutDpAttentionCountsItsAlignedEntry) {
  const ParallelConfig k{.tp = 2};
  const Batch b{{3}};
  RowCounts counts(k, b, DpPadding::kMaxLen, CpLayout::kReplicated, LocalSplit::kPaddedEqual,
                   AttentionPad::kAlignedEntry);
  RowMap m(Topology(k), b, DpPadding::kMaxLen, CpLayout::kReplicated, nullptr,
           LocalSplit::kPaddedEqual, AttentionPad::kAlignedEntry);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(counts.count(RowKind::kAttention, r), 4);
    EXPECT_EQ(counts.count(RowKind::kFull, r), 4);
    EXPECT_EQ(counts.count(RowKind::kLocal, r), 2);
    EXPECT_EQ(counts.count(RowKind::kSequence, r), 3);
    EXPECT_EQ(m.tokens(RowKind::kAttention, r), (Tokens{0, 1, 2, kPaddingRow}));
    EXPECT_EQ(m.tokens(RowKind::kFull, r), (Tokens{0, 1, 2, kPaddingRow}));
  }
}

// Both modes align each shard to attn_tp (2) first: 3 tokens take 4 rows.
TEST(RowMap, MaxLenPadsTheIdleShardsSlotOfTheFullRows) {
  RowMap m = idleShardMap(DpPadding::kMaxLen);
  EXPECT_EQ(m.totalTokens(), 3);
  EXPECT_EQ(m.padding(), DpPadding::kMaxLen);
  const Tokens attention[] = {{0, 1, 2}, {0, 1, 2}, {}, {}};
  const Tokens local[] = {{0, 1}, {2}, {}, {}};
  const int local_offset[] = {0, 2, 0, 0};
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(m.tokens(RowKind::kNone, r), Tokens{});
    EXPECT_EQ(m.tokens(RowKind::kAttention, r), attention[r]);
    EXPECT_EQ(m.shardTokens(r), static_cast<int>(attention[r].size()));
    EXPECT_EQ(m.tokens(RowKind::kLocal, r), local[r]);
    EXPECT_EQ(m.localOffset(r), local_offset[r]);
    EXPECT_EQ(m.tokens(RowKind::kFull, r), (Tokens{0, 1, 2, P, P, P, P, P}));
    EXPECT_EQ(m.count(RowKind::kFull, r), 8);
    // moe_ep=1: each rank dispatches to itself only.
    EXPECT_EQ(m.tokens(RowKind::kDispatched, r), local[r]);
  }
  EXPECT_EQ(m.fullSlot(0), 0);
  EXPECT_EQ(m.fullSlot(1), 4);
}

TEST(RowMap, SumLenConcatenatesTheShardsAlignedToAttnTp) {
  RowMap m = idleShardMap(DpPadding::kSumLen);
  EXPECT_EQ(m.padding(), DpPadding::kSumLen);
  const Tokens attention[] = {{0, 1, 2}, {0, 1, 2}, {}, {}};
  const Tokens local[] = {{0, 1}, {2}, {}, {}};
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(m.tokens(RowKind::kNone, r), Tokens{});
    EXPECT_EQ(m.tokens(RowKind::kAttention, r), attention[r]);
    EXPECT_EQ(m.tokens(RowKind::kLocal, r), local[r]);
    EXPECT_EQ(m.tokens(RowKind::kFull, r), (Tokens{0, 1, 2, P}));
    EXPECT_EQ(m.tokens(RowKind::kDispatched, r), local[r]);
  }
  EXPECT_EQ(m.fullSlot(0), 0);
  EXPECT_EQ(m.fullSlot(1), 4);
}

TEST(RowMap, TokensAreNumberedGloballyAcrossDpShards) {
  // tp=4 attn_dp=4 (attn_tp=1), shards 2,0,3,1; MAX_LEN slots of 3 rows.
  RowMap m(Topology({.tp = 4, .attn_dp = 4}), Batch{{2, 0, 3, 1}}, DpPadding::kMaxLen);
  EXPECT_EQ(m.tokens(RowKind::kAttention, 0), (Tokens{0, 1}));
  EXPECT_EQ(m.tokens(RowKind::kAttention, 1), Tokens{});
  EXPECT_EQ(m.tokens(RowKind::kAttention, 2), (Tokens{2, 3, 4}));
  EXPECT_EQ(m.tokens(RowKind::kAttention, 3), (Tokens{5}));
  EXPECT_EQ(m.tokens(RowKind::kLocal, 2), (Tokens{2, 3, 4}));
  EXPECT_EQ(m.tokens(RowKind::kFull, 1), (Tokens{0, 1, P, P, P, P, 2, 3, 4, 5, P, P}));
  EXPECT_EQ(m.fullSlot(2), 6);
  EXPECT_EQ(m.fullSlot(3), 9);

  RowMap sum(Topology({.tp = 4, .attn_dp = 4}), Batch{{2, 0, 3, 1}}, DpPadding::kSumLen);
  EXPECT_EQ(sum.tokens(RowKind::kFull, 1), (Tokens{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(sum.fullSlot(1), 2);
  EXPECT_EQ(sum.fullSlot(2), 2);
  EXPECT_EQ(sum.fullSlot(3), 5);
}

TEST(RowMap, WithoutDpAttentionLocalRowsFollowTensorSplit) {
  // tp=4, 5 tokens: tensor_split gives 2,1,1,1.
  RowMap m(Topology({.tp = 4}), Batch{{5}}, DpPadding::kMaxLen);
  const Tokens local[] = {{0, 1}, {2}, {3}, {4}};
  const int local_offset[] = {0, 2, 3, 4};
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(m.tokens(RowKind::kAttention, r), (Tokens{0, 1, 2, 3, 4}));
    EXPECT_EQ(m.tokens(RowKind::kLocal, r), local[r]);
    EXPECT_EQ(m.localOffset(r), local_offset[r]);
    // Full rows equal attention rows when attn_dp=1, whatever the padding.
    EXPECT_EQ(m.tokens(RowKind::kFull, r), (Tokens{0, 1, 2, 3, 4}));
  }
  EXPECT_EQ(m.fullSlot(0), 0);
}

TEST(RowMap, UnderLayerNormSpLocalRowsAreTheShardPaddedToEqualChunks) {
  // shard_token_rows: 5 rows padded to 8, then 4 chunks of 2 (not tensor_split's 2,1,1,1).
  const ParallelConfig config{.tp = 4};
  RowMap m(Topology(config), Batch{{5}}, DpPadding::kMaxLen, CpLayout::kReplicated, nullptr,
           LocalSplit::kPaddedEqual);
  const RowCounts counts(config, Batch{{5}}, DpPadding::kMaxLen, CpLayout::kReplicated,
                         LocalSplit::kPaddedEqual);
  const Tokens local[] = {{0, 1}, {2, 3}, {4, P}, {P, P}};
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(m.tokens(RowKind::kLocal, r), local[r]);
    EXPECT_EQ(m.localOffset(r), 2 * r);
    EXPECT_EQ(counts.count(RowKind::kLocal, r), m.count(RowKind::kLocal, r));
    EXPECT_EQ(m.tokens(RowKind::kAttention, r), (Tokens{0, 1, 2, 3, 4}));
  }
  EXPECT_EQ(m.localSplit(), LocalSplit::kPaddedEqual);
}

TEST(RowMap, FewerTokensThanRanksLeaveTheLastLocalSlicesEmpty) {
  RowMap m(Topology({.tp = 4}), Batch{{2}}, DpPadding::kSumLen);
  EXPECT_EQ(m.tokens(RowKind::kLocal, 0), (Tokens{0}));
  EXPECT_EQ(m.tokens(RowKind::kLocal, 1), (Tokens{1}));
  EXPECT_EQ(m.tokens(RowKind::kLocal, 2), Tokens{});
  EXPECT_EQ(m.tokens(RowKind::kLocal, 3), Tokens{});
  EXPECT_EQ(m.localOffset(2), 2);
  EXPECT_EQ(m.localOffset(3), 2);
}

TEST(RowMap, DispatchedRowsGatherTheLocalRowsOfTheMoeEpGroup) {
  // moe_ep=4 over tp=4: one group of all ranks, local slices 2,1,1,1.
  RowMap all(Topology({.tp = 4, .moe_ep = 4}), Batch{{5}}, DpPadding::kMaxLen);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(all.tokens(RowKind::kDispatched, r), (Tokens{0, 1, 2, 3, 4}));

  // moe_ep=2 (moe_tp=2): groups {0,2} and {1,3}.
  RowMap pairs(Topology({.tp = 4, .moe_ep = 2}), Batch{{5}}, DpPadding::kMaxLen);
  EXPECT_EQ(pairs.tokens(RowKind::kDispatched, 0), (Tokens{0, 1, 3}));
  EXPECT_EQ(pairs.tokens(RowKind::kDispatched, 2), (Tokens{0, 1, 3}));
  EXPECT_EQ(pairs.tokens(RowKind::kDispatched, 1), (Tokens{2, 4}));
  EXPECT_EQ(pairs.tokens(RowKind::kDispatched, 3), (Tokens{2, 4}));

  // Under DP attention the group spans shards, idle ones included.
  RowMap dp(Topology({.tp = 4, .attn_dp = 2, .moe_ep = 4}), Batch{{3, 0}}, DpPadding::kMaxLen);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(dp.tokens(RowKind::kDispatched, r), (Tokens{0, 1, 2}));
}

TEST(RowMap, EveryPipelineStageHoldsTheSameBatch) {
  RowMap m(Topology({.pp = 2, .tp = 2, .attn_dp = 2}), Batch{{1, 2}}, DpPadding::kMaxLen);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    for (int k = 0; k < kRowKindCount; ++k) {
      EXPECT_EQ(m.tokens(static_cast<RowKind>(k), r), m.tokens(static_cast<RowKind>(k), r + 2));
    }
  }
  EXPECT_EQ(m.tokens(RowKind::kAttention, 1), (Tokens{1, 2}));
  EXPECT_EQ(m.tokens(RowKind::kFull, 3), (Tokens{0, P, 1, 2}));
}

Case paddingCase(const char* pattern, int attn_dp, std::vector<int> tokens, DpPadding requested) {
  Case c;
  c.model = modelFromPattern(pattern).value();
  c.config = {.tp = 4, .attn_dp = attn_dp};
  c.batch.tokens = std::move(tokens);
  c.flags.dp_padding = requested;
  return c;
}

TEST(ResolvePadding, AnExtendBatchOfAHybridModelWithAnIdleDpRankGetsMaxLen) {
  Case c = paddingCase("M-M*-", 2, {3, 0}, DpPadding::kSumLen);
  c.flags.mode = ForwardMode::kExtend;
  EXPECT_EQ(resolvePadding(c), DpPadding::kMaxLen);
  // Every single-stage (hybrid_override_pattern) model, with or without Mamba.
  Case d = paddingCase("*-*E", 2, {3, 0}, DpPadding::kSumLen);
  d.flags.mode = ForwardMode::kExtend;
  EXPECT_EQ(resolvePadding(d), DpPadding::kMaxLen);
}

TEST(ResolvePadding, AnExtendBatchWithoutAnIdleRankGetsSumLen) {
  Case c = paddingCase("M-M*-", 2, {3, 1}, DpPadding::kMaxLen);
  c.flags.mode = ForwardMode::kExtend;
  EXPECT_EQ(resolvePadding(c), DpPadding::kSumLen);
}

TEST(ResolvePadding, ADecodeBatchKeepsTheRequestedMode) {
  EXPECT_EQ(resolvePadding(paddingCase("M-M*-", 2, {3, 0}, DpPadding::kSumLen)),
            DpPadding::kSumLen);
  EXPECT_EQ(resolvePadding(paddingCase("M-M*-", 2, {3, 1}, DpPadding::kMaxLen)),
            DpPadding::kMaxLen);
  // No DP attention: padding does not matter and is left as requested.
  EXPECT_EQ(resolvePadding(paddingCase("M-M*-", 1, {3}, DpPadding::kSumLen)), DpPadding::kSumLen);
}

}  // namespace
}  // namespace seam

namespace seam {
namespace {

TEST(RowCounts, AgreeWithRowMapForEveryConfigOfWorldsUpTo16AndSeveralBatches) {
  int checked = 0;
  for (int world = 1; world <= 16; ++world) {
    auto space = ConfigSpace::build(world);
    ASSERT_TRUE(space.hasValue());
    for (const ParallelConfig& c : space->all()) {
      const Topology t(c);
      for (int variant = 0; variant < 3; ++variant) {
        Batch b;
        for (int d = 0; d < c.attn_dp; ++d)
          b.tokens.push_back(variant == 0 ? 1 : variant == 1 ? (d * 5 + 3) % 7 : d % 2);
        if (b.total() == 0) b.tokens[0] = 2;
        for (DpPadding pad : {DpPadding::kMaxLen, DpPadding::kSumLen}) {
          for (AttentionPad ap : {AttentionPad::kTokens, AttentionPad::kDpBuffer}) {
            if (ap == AttentionPad::kDpBuffer && c.attn_dp == 1) continue;
            const LocalSplit split =
                ap == AttentionPad::kDpBuffer ? LocalSplit::kPaddedEqual : LocalSplit::kTensorSplit;
            const RowMap map(t, b, pad, CpLayout::kReplicated, nullptr, split, ap);
            const RowCounts counts(c, b, pad, CpLayout::kReplicated, split, ap);
            for (int r = 0; r < world; ++r) {
              for (int k = 0; k < kRowKindCount; ++k) {
                ASSERT_EQ(counts.count(static_cast<RowKind>(k), r),
                          map.count(static_cast<RowKind>(k), r))
                    << c.describe() << " tokens " << b.describe() << " rank " << r << " "
                    << rowKindName(static_cast<RowKind>(k));
              }
            }
            ++checked;
          }
        }
      }
      // The CP-sharded layouts (one DP shard; interleave at attn_tp = 1).
      if (c.attn_dp != 1 || c.attn_cp == 1) continue;
      for (CpLayout cp : {CpLayout::kInterleave, CpLayout::kZigzag}) {
        if (cp == CpLayout::kInterleave && c.attnTp() != 1) continue;
        for (int tokens : {2 * c.attn_cp, 2 * c.attn_cp + 3, 131}) {
          const Batch b{{tokens}};
          const RowMap map(t, b, DpPadding::kMaxLen, cp);
          const RowCounts counts(c, b, DpPadding::kMaxLen, cp);
          for (int r = 0; r < world; ++r) {
            for (int k = 0; k < kRowKindCount; ++k) {
              ASSERT_EQ(counts.count(static_cast<RowKind>(k), r),
                        map.count(static_cast<RowKind>(k), r))
                  << c.describe() << " tokens " << tokens << " rank " << r << " "
                  << rowKindName(static_cast<RowKind>(k));
            }
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// ---- zigzag CP shards (ZigzagCPStrategy.build_metadata, pad_logical_token_to_physical) ----

/// The blocks of a zigzag split by hand: 2cp blocks, the first L % 2cp one longer.
std::vector<Tokens> zigzagBlocks(int tokens, int cp) {
  std::vector<Tokens> blocks(2 * cp);
  int t = 0;
  for (int b = 0; b < 2 * cp; ++b) {
    for (int k = 0; k < tokens / (2 * cp) + (b < tokens % (2 * cp) ? 1 : 0); ++k)
      blocks[b].push_back(t++);
  }
  return blocks;
}

TEST(ZigzagShards, CpRankRHoldsBlockRThenBlock2cpMinus1MinusRPaddedTo2cpAlignment) {
  for (int cp : {2, 3, 4, 8}) {
    for (int tokens : {128, 129, 131, 133, 135, 137, 143, 256, 2 * cp, 2 * cp + 1, 4 * cp - 1}) {
      const auto blocks = zigzagBlocks(tokens, cp);
      int longest = 0;
      for (int c = 0; c < cp; ++c) {
        longest = std::max<int>(longest, blocks[c].size() + blocks[2 * cp - 1 - c].size());
      }
      const int physical = (longest + 2 * cp - 1) / (2 * cp) * (2 * cp);
      EXPECT_EQ(cpShardRows(CpLayout::kZigzag, tokens, cp), physical) << tokens << " over " << cp;
      std::vector<int> seen(tokens, 0);
      for (int c = 0; c < cp; ++c) {
        Tokens want = blocks[c];
        want.insert(want.end(), blocks[2 * cp - 1 - c].begin(), blocks[2 * cp - 1 - c].end());
        want.resize(physical, P);
        const Tokens got = cpShardTokens(CpLayout::kZigzag, tokens, cp, c);
        EXPECT_EQ(got, want) << tokens << " over " << cp << ", CP rank " << c;
        for (int t : got) {
          if (t != P) ++seen[t];
        }
      }
      EXPECT_EQ(seen, std::vector<int>(tokens, 1)) << tokens << " over " << cp;
    }
  }
}

TEST(ZigzagShards, AnUnevenSplitGivesTheFirstRemBlocksOneMoreRow) {
  // 131 over cp = 2: 4 blocks of 33, 33, 33, 32 rows (rem 3); rank 0 holds
  // blocks 0 and 3 (65 rows), rank 1 blocks 1 and 2 (66); both padded to 68.
  EXPECT_EQ(cpShardRows(CpLayout::kZigzag, 131, 2), 68);
  const Tokens r0 = cpShardTokens(CpLayout::kZigzag, 131, 2, 0);
  const Tokens r1 = cpShardTokens(CpLayout::kZigzag, 131, 2, 1);
  EXPECT_EQ(r0[0], 0);
  EXPECT_EQ(r0[32], 32);
  EXPECT_EQ(r0[33], 99);
  EXPECT_EQ(r0[64], 130);
  EXPECT_EQ(r0[65], P);
  EXPECT_EQ(r1[0], 33);
  EXPECT_EQ(r1[65], 98);
  EXPECT_EQ(r1[66], P);
}

TEST(RowMap, AZigzagShardIsSplitOverAttnTpAndTheFullRowsAreTheShardsInCpRankOrder) {
  // tp = 4, attn_cp = 2 (attn_tp = 2): ranks 0, 1 hold CP rank 0's shard,
  // ranks 2, 3 CP rank 1's; 130 tokens: blocks of 33, 33, 32, 32 rows,
  // shards of 65 each padded to 68.
  const RowMap m(Topology({.tp = 4, .attn_cp = 2}), Batch{{130}}, DpPadding::kMaxLen,
                 CpLayout::kZigzag);
  const Tokens shard0 = cpShardTokens(CpLayout::kZigzag, 130, 2, 0);
  const Tokens shard1 = cpShardTokens(CpLayout::kZigzag, 130, 2, 1);
  EXPECT_EQ(m.tokens(RowKind::kAttention, 1), shard0);
  EXPECT_EQ(m.tokens(RowKind::kAttention, 2), shard1);
  EXPECT_EQ(m.tokens(RowKind::kLocal, 1), Tokens(shard0.begin() + 34, shard0.end()));
  EXPECT_EQ(m.localOffset(3), 34);
  Tokens full = shard0;
  full.insert(full.end(), shard1.begin(), shard1.end());
  EXPECT_EQ(m.tokens(RowKind::kFull, 3), full);
  for (int i = 0; i < 130; ++i) ASSERT_EQ(full[m.gatheredRowOfSequence(3, i)], i);
  Tokens sequence(130);
  for (int i = 0; i < 130; ++i) sequence[i] = i;
  EXPECT_EQ(m.tokens(RowKind::kSequence, 2), sequence);
}

}  // namespace
}  // namespace seam
