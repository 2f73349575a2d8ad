// The static judges read a rank whose ops repeat the rank before's no further
// (SameOps, check.h) only where their finding could not differ: a fault on
// such a rank, or on a rank whose ops repeat the rank before's but whose
// place (pipeline stage, row counts) does not, is still found there.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "../sim/case_builders.h"
#include "seam/properties/check.h"

namespace seam::properties {
namespace {

using seam::testing::mustBuild;
using seam::testing::presetCase;
using seam::testing::twoStageCase;

/// The index of the first op of `rank` that `which` picks (-1: none).
template <class Which>
int firstOp(const Plan& plan, int rank, Which which) {
  const auto& ops = plan.ranks[rank];
  const auto it = std::find_if(ops.begin(), ops.end(), which);
  return it == ops.end() ? -1 : static_cast<int>(it - ops.begin());
}

TEST(SameOps, MarksEachRankWhoseOpsRepeatTheRankBefore) {
  Plan plan = mustBuild(presetCase("nemotron-h-8b", {.tp = 4}, {4}));
  SameOps same(plan);
  // The four ranks of one TP group in one stage issue the same ops.
  for (int r = 1; r < 4; ++r) EXPECT_TRUE(same.asBefore(r)) << "rank " << r;
  plan.ranks[2].back().bytes += 2;  // rank 2 now differs from rank 1, and rank 3 from rank 2
  same.compare(plan);
  EXPECT_TRUE(same.asBefore(1));
  EXPECT_FALSE(same.asBefore(2));
  EXPECT_FALSE(same.asBefore(3));
  plan.ranks[3].pop_back();  // another length
  same.compare(plan);
  EXPECT_FALSE(same.asBefore(3));
}

TEST(SameOps, ASecondResidualAddOnTheLastRankAloneIsFound) {
  Plan plan = mustBuild(presetCase("nemotron-h-8b", {.tp = 4}, {4}));
  ASSERT_TRUE(checkResidualOnce(plan).empty());
  auto& ops = plan.ranks[3];
  const int add = firstOp(plan, 3, [](const Op& op) { return op.kind == OpKind::kAddNorm; });
  ASSERT_GE(add, 0);
  ops.insert(ops.begin() + add + 1, ops[add]);  // the same add_norm twice on rank 3 only
  const auto found = checkResidualOnce(plan);
  ASSERT_EQ(found.size(), 1u) << "rank 3 repeats an add: ranks 0-2 repeat each other, not it";
  EXPECT_EQ(found.front().rank, 3);
  EXPECT_EQ(found.front().op_index, add + 1);
}

TEST(SameOps, AFaultOnEveryRankIsReportedAtRankZero) {
  Plan plan = mustBuild(presetCase("nemotron-h-8b", {.tp = 4}, {4}));
  for (auto& ops : plan.ranks) {
    const auto it = std::find_if(ops.begin(), ops.end(),
                                 [](const Op& op) { return op.kind == OpKind::kAddNorm; });
    ASSERT_NE(it, ops.end());
    ops.insert(it + 1, *it);
  }
  const auto found = checkResidualOnce(plan);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.front().rank, 0);
}

TEST(SameOps, ARankWithTheOpsBeforeButOtherRowsIsStillSized) {
  // Two DP shards of 4 and 6 tokens on a TP group of 2 (attention TP 1),
  // SUM_LEN (no padding of the local DP buffer): rank 1 holds shard 1's 6
  // attention rows. Given rank 0's ops (sized for 4 rows), its ops repeat
  // the rank before's, but its rows do not: property 8 must still read it.
  Flags sum_len;
  sum_len.dp_padding = DpPadding::kSumLen;
  Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 2, .attn_dp = 2}, {4, 6}, sum_len));
  const JudgeGeometry g = judgeGeometry(plan.source);
  ASSERT_TRUE(checkCallSizes(plan, g).empty());
  ASSERT_EQ(g.count(RowKind::kAttention, 0), 4);
  ASSERT_EQ(g.count(RowKind::kAttention, 1), 6);
  plan.ranks[1] = plan.ranks[0];
  ASSERT_TRUE(SameOps(plan).asBefore(1));
  const auto found = checkCallSizes(plan, g);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.front().rank, 1);
  EXPECT_EQ(found.front().property, Property::kCallSizes);
}

TEST(SameOps, ARankWithTheOpsBeforeInAnotherPipelineStageStillOwesItsSnapshot) {
  // pp 2, tp 1 (a capture under pp is refused at start-up, so the capture
  // is planted on the plan): rank 1 runs the second pipeline stage, where
  // the requested capture lies, and is given rank 0's ops, which take no
  // snapshot. Its ops repeat the rank before's, rank 0 passes (the capture
  // is not its stage's), yet rank 1 owes the snapshot: property 6 must still
  // read it.
  Plan plan = mustBuild(twoStageCase("*-*-*-*-", {.pp = 2, .tp = 1}, {4}));
  const JudgeGeometry g = judgeGeometry(plan.source);
  int stage = -1;
  for (int s = 0; s < static_cast<int>(g.stages.size()) && stage < 0; ++s) {
    if (g.stages[s].stack == 0 && g.stages[s].pp_rank == 1) stage = s;
  }
  ASSERT_GE(stage, 0);
  plan.source.flags.capture = {stage};
  plan.ranks[1] = plan.ranks[0];
  ASSERT_TRUE(SameOps(plan).asBefore(1));
  const auto found = checkRequestedSnapshots(plan, g);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.front().rank, 1);
  EXPECT_EQ(found.front().stage, stage);
  EXPECT_EQ(found.front().cls, ViolationClass::kMissingSnapshot);
}

TEST(JudgeScratch, GroupsFollowTheConfiguration) {
  JudgeScratch scratch;
  EXPECT_EQ(scratch.groups({.tp = 2}).groupSize(Axis::kTp), 2);
  EXPECT_EQ(scratch.groups({.tp = 4}).groupSize(Axis::kTp), 4);
  EXPECT_EQ(scratch.groups({.tp = 4, .attn_dp = 2}).groupSize(Axis::kAttnTp), 2);
}

TEST(JudgeScratch, ASweepsScratchGivesTheVerdictsOfAFreshOne) {
  // One scratch over cases of two configurations in turn, as a sweep's
  // worker keeps it, judges each as scratch of its own does.
  JudgeScratch kept;
  Ledger ledger;
  for (const ParallelConfig& config :
       {ParallelConfig{.tp = 4}, ParallelConfig{.tp = 4, .attn_dp = 2}, ParallelConfig{.tp = 2}}) {
    Plan plan = mustBuild(twoStageCase("*-*E", config, std::vector<int>(config.attn_dp, 3)));
    auto& ops = plan.ranks[plan.world() - 1];
    const auto it = std::find_if(ops.rbegin(), ops.rend(),
                                 [](const Op& op) { return op.kind == OpKind::kAllReduce; });
    ASSERT_NE(it, ops.rend()) << config.describe();
    it->bytes += 2;  // a fault on the last rank only
    const PlanVerdict fresh = checkPlan(plan, ledger, Depth::kAll);
    const PlanVerdict reused = checkPlan(plan, ledger, kept, Depth::kAll);
    ASSERT_FALSE(fresh.holds());
    ASSERT_EQ(fresh.properties.size(), reused.properties.size());
    for (size_t p = 0; p < fresh.properties.size(); ++p) {
      EXPECT_EQ(fresh.properties[p].holds, reused.properties[p].holds) << config.describe();
      ASSERT_EQ(fresh.properties[p].first.has_value(), reused.properties[p].first.has_value());
      if (fresh.properties[p].first)
        EXPECT_EQ(fresh.properties[p].first->detail, reused.properties[p].first->detail);
    }
  }
}

}  // namespace
}  // namespace seam::properties
