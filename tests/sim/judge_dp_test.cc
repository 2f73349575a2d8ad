// The judges' DP lowering (judge_dp.h): hand-derived steps from
// dp_attention.py's paths, and agreement step for step with the executors'
// lowerDpOp on every DP op of the declared plans of the world-8 sweep space,
// each with every planted DpFault: two derivations that share no code.
#include "seam/sim/replay/judge_dp.h"

#include <gtest/gtest.h>

#include "judge_agreement.h"

namespace seam {
namespace {

Op dpOp(OpKind kind) {
  Op op;
  op.kind = kind;
  return op;
}

TEST(JudgeDp, AMaxLenReplicateGatherOverAttnTpZeroesReduceScattersAndGathersOverTp) {
  // tp 4, attn_dp 2 (attn_tp 2), shards of 3 and 1: entries 4 and 2, MAX_LEN
  // slots of 4 (8 rows). Attention-TP rank 1 of shard 0 pads 3 -> 4, zeroes
  // its copy (replicate), reduce-scatters 4 -> 2 over attn_tp, all-gathers 8 over tp.
  const ParallelConfig k{.tp = 4, .attn_dp = 2};
  const JudgeDpBuffer b =
      judgeDpBuffer(k, {3, 1}, DpPadding::kMaxLen, false, CpLayout::kReplicated);
  EXPECT_EQ(b.rows, 8);
  DpLowering out;
  judgeLowerDp(dpOp(OpKind::kDpGatherReplicate), k, b, 1, 0, 0, 10, &out);
  ASSERT_EQ(out.size(), 4);
  EXPECT_EQ(out[0].kind, DpStepKind::kPadLocal);
  EXPECT_EQ(out[1].kind, DpStepKind::kZeroLocal);
  EXPECT_EQ(out[2].kind, DpStepKind::kReduceScatter);
  EXPECT_EQ(out[2].rows_out, 2);
  EXPECT_EQ(out[3].kind, DpStepKind::kAllGather);
  EXPECT_EQ(out[3].rows_out, 8);
  EXPECT_EQ(out[3].bytes, 80);
}

TEST(JudgeDp, ASumLenScatterReadsTheShardsAlignedSlotAndTrimsItsPadRows) {
  // SUM_LEN: entries 4 and 2 end to end; shard 1's slot starts at row 4.
  const ParallelConfig k{.tp = 4, .attn_dp = 2};
  const JudgeDpBuffer b =
      judgeDpBuffer(k, {3, 1}, DpPadding::kSumLen, false, CpLayout::kReplicated);
  DpLowering out;
  judgeLowerDp(dpOp(OpKind::kDpScatter), k, b, 0, 0, 1, 10, &out);
  ASSERT_EQ(out.size(), 2);
  EXPECT_EQ(out[0].kind, DpStepKind::kReadSlot);
  EXPECT_EQ(out[0].offset, 4);
  EXPECT_EQ(out[0].rows_out, 2);
  EXPECT_EQ(out[1].kind, DpStepKind::kTrim);
  EXPECT_EQ(out[1].rows_out, 1);
  // The unaligned-slots fault starts it at the raw count, 3.
  Op faulty = dpOp(OpKind::kDpScatter);
  faulty.dp_fault = DpFault::kUnalignedSlots;
  judgeLowerDp(faulty, k, b, 0, 0, 1, 10, &out);
  EXPECT_EQ(out[0].offset, 3);
}

TEST(JudgeDp, LowersEveryDpOpOfTheWorld8SweepAsLowerDpOpDoesUnderEveryFault) {
  judge_agreement::expectDpAgreesOverSweep(8, 1000);
}

}  // namespace
}  // namespace seam
