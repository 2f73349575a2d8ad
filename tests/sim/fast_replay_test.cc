// Proves that the fast replay's shortcuts (sim/src/replay/replay.h) keep what
// each rank holds its own: an all-reduce's sum shared by its group's members
// (Buffer::shared) is copied out before one member writes its hidden state,
// and a DP gather's zeroed buffer summed from the members' slots alone
// (DpWork::zeroed) counts every slot as often as the members wrote it. The
// fast replay is run directly, so that its own violations are seen (the
// ledger replaces them with the traced replay's).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "replay/replay.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/ledger.h"

namespace seam {
namespace {

using ledger_detail::ExactDomain;
using ledger_detail::FastDomain;
using ledger_detail::Replay;
using seam::testing::findOp;
using seam::testing::mustBuild;
using seam::testing::patternCase;

LedgerResult replayFast(const Plan& plan) {
  Replay<FastDomain> replay;
  return replay.run(plan, LedgerOptions{});
}

LedgerResult replayExact(const Plan& plan) {
  Replay<ExactDomain> replay;
  return replay.run(plan, LedgerOptions{.exact = true});
}

Flags noFusion() {
  Flags f;
  f.fusion = false;
  return f;
}

TEST(FastReplay, AZeroFillOfOneMembersAllReducedRowsLeavesTheOtherMembersSumsWhole) {
  // Unfused: the stage-1 entry all_reduce of the mixer's partials, then each
  // rank's add_norm reads the sum (declared_policy: communicate before the
  // next stage's norm).
  Plan plan = mustBuild(patternCase("M-*E-", {.tp = 4}, {4}, noFusion()));
  ASSERT_TRUE(replayFast(plan).holds());
  const int i = findOp(plan, 1, 1, Phase::kEntry, OpKind::kAllReduce);
  ASSERT_GE(i, 0);
  Op zero = plan.ranks[1][i];
  zero.kind = OpKind::kZeroFill;
  zero.tensor = Tensor::kHidden;
  plan.ranks[1].insert(plan.ranks[1].begin() + i + 1, zero);
  const LedgerResult fast = replayFast(plan);
  ASSERT_FALSE(fast.holds());
  // Rank 1's add_norm adds zero rows to its residual: the mixer's partials
  // are missing there and only there.
  const Violation& first = fast.violations.front();
  EXPECT_EQ(first.rank, 1);
  EXPECT_EQ(first.op, OpKind::kAddNorm);
  EXPECT_EQ(first.stage, 1);
  for (const Violation& v : fast.violations) {
    if (v.op == OpKind::kAddNorm && v.stage == 1 && v.phase == Phase::kEntry && v.layer == 0)
      EXPECT_EQ(v.rank, 1) << describeViolation(v);
  }
}

/// Plants `fault` in every DP op of `kind` on every rank.
void plant(Plan& plan, OpKind kind, DpFault fault) {
  for (auto& ops : plan.ranks) {
    for (Op& op : ops) {
      if (op.kind == kind) op.dp_fault = fault;
    }
  }
}

TEST(FastReplay, ADpGatherThroughAZeroedBufferFindsWhatTheExactReplayFinds) {
  // SUM_LEN gathers through a zeroed buffer and an all-reduce over tp
  // (dp_attention.py _dp_gather_via_all_reduce), attention TP 4: with the
  // writer rule swapped every attention-TP rank writes its copy of the
  // replicated rows into the shard's slot, four writers of one slot, and each
  // token is counted four times.
  Flags sum_len;
  sum_len.dp_padding = DpPadding::kSumLen;
  const Plan clean = mustBuild(patternCase("M-M", {.tp = 8, .attn_dp = 2}, {3, 1}, sum_len));
  ASSERT_EQ(clean.padding, DpPadding::kSumLen);
  ASSERT_TRUE(replayFast(clean).holds());
  Plan plan = clean;
  plant(plan, OpKind::kDpGatherReplicate, DpFault::kWriterRuleSwapped);
  const LedgerResult fast = replayFast(plan);
  const LedgerResult exact = replayExact(plan);
  ASSERT_FALSE(exact.holds());
  EXPECT_EQ(exact.violations.front().cls, ViolationClass::kCountedTwice);
  EXPECT_EQ(exact.violations.front().coefficient, 4);
  ASSERT_FALSE(fast.holds());
  EXPECT_EQ(fast.violations.front().rank, exact.violations.front().rank);
  EXPECT_EQ(fast.violations.front().op_index, exact.violations.front().op_index);
  EXPECT_EQ(fast.violations.front().token, exact.violations.front().token);
}

}  // namespace
}  // namespace seam
