// The MTP step's input projection as SGLang runs it. Expected plans from
// SGLang's code, not from seam:
// - models/nemotron_h_mtp.py @008b79d2 (NemotronHMTPAttentionDecoderLayer and
//   NemotronHMTPMoEDecoderLayer: __init__, forward): eh_proj is a
//   ColumnParallelLinear; without DP attention gather_output all-gathers its
//   columns over tp; under DP attention it is split over attention TP and the
//   forward all-gathers the hidden dimension over attention TP (a one-rank
//   group returns its input).
// - models/deepseek_nextn.py (eh_proj: ReplicatedLinear, research note C1 for
//   LongCat's): a complete projection, no collective.
// The ledger holds each rank's columns until the gather joins them, so a plan
// without the gather leaves the next norm a column shard.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "seam/properties/engine_finding.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"

namespace seam {
namespace {

using seam::testing::expectHolds;
using seam::testing::firstViolation;
using seam::testing::mustBuild;
using seam::testing::patternCase;
using seam::testing::presetCase;

/// The MTP input projection's ops of one rank (stack 1, stage -1).
std::vector<Op> projectionOps(const Plan& plan, int rank) {
  std::vector<Op> out;
  for (const Op& op : plan.ranks[rank])
    if (op.stack == 1 && op.stage == -1) out.push_back(op);
  return out;
}

/// The gathers among them.
std::vector<Op> gathers(const Plan& plan, int rank) {
  std::vector<Op> out;
  for (const Op& op : projectionOps(plan, rank))
    if (op.kind == OpKind::kAllGather) out.push_back(op);
  return out;
}

Flags arReduction() {
  Flags f;
  f.reduction = BoundaryReduction::kAr;
  return f;
}

TEST(MtpProjection, NemotronHsEhProjGathersItsColumnsOverTpWithoutDpAttention) {
  const Plan plan = mustBuild(patternCase("M-/*E", {.tp = 2}, {4}));
  for (int r = 0; r < plan.world(); ++r) {
    const std::vector<Op> g = gathers(plan, r);
    ASSERT_EQ(g.size(), 1U) << "rank " << r;
    EXPECT_EQ(g[0].groupAxis(), Axis::kTp);
    EXPECT_EQ(g[0].phase, Phase::kCompute);
    EXPECT_EQ(g[0].rows_in, (Rows{RowKind::kAttention, 4}));
    EXPECT_EQ(g[0].rows_out, (Rows{RowKind::kAttention, 4}));
  }
  expectHolds(plan);
}

TEST(MtpProjection, UnderDpAttentionTheColumnsAreGatheredOverAttentionTp) {
  const Plan plan = mustBuild(patternCase("M-/*E", {.tp = 4, .attn_dp = 2}, {2, 2}, arReduction()));
  for (int r = 0; r < plan.world(); ++r) {
    const std::vector<Op> g = gathers(plan, r);
    ASSERT_EQ(g.size(), 1U) << "rank " << r;
    EXPECT_EQ(g[0].groupAxis(), Axis::kAttnTp);
  }
  // The projection is sound; the step's MoE then sums the attention output
  // twice, an engine finding (engine_findings_test.cc).
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.stage, 1);
  EXPECT_NE(properties::engineFindingSite(plan, v).find("NemotronHMTPMoEDecoderLayer"),
            std::string::npos);
}

TEST(MtpProjection, UnderDpAttentionWithAttentionTpOneNothingIsGathered) {
  const Plan plan = mustBuild(patternCase("M-/*E", {.tp = 2, .attn_dp = 2}, {2, 2}, arReduction()));
  for (int r = 0; r < plan.world(); ++r) EXPECT_TRUE(gathers(plan, r).empty()) << "rank " << r;
  expectHolds(plan);
}

TEST(MtpProjection, DeepSeeksReplicatedEhProjNeedsNoGather) {
  const Plan plan = mustBuild(presetCase("deepseek-v3", {.tp = 2}, {4}));
  for (int r = 0; r < plan.world(); ++r) {
    EXPECT_FALSE(projectionOps(plan, r).empty());
    EXPECT_TRUE(gathers(plan, r).empty()) << "rank " << r;
  }
}

TEST(MtpWrongPlans, AnEhProjWithoutItsColumnGatherHandsTheMtpStepAColumnShard) {
  Plan plan = mustBuild(patternCase("M-/*E", {.tp = 2}, {4}));
  for (auto& ops : plan.ranks) {
    const size_t before = ops.size();
    std::erase_if(ops, [](const Op& op) {
      return op.stack == 1 && op.stage == -1 && op.kind == OpKind::kAllGather;
    });
    ASSERT_EQ(ops.size() + 1, before);
  }
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.stack, 1);
  EXPECT_EQ(v.stage, 0);
  EXPECT_NE(v.term.find("s-1"), std::string::npos) << v.term;  // the projection's column term
}

TEST(MtpWrongPlans, AColumnGatherOverTheWrongGroupJoinsForeignColumns) {
  // Under DP attention the columns are split over attention TP; a gather over
  // tp joins the other DP shard's rows too.
  Plan plan = mustBuild(patternCase("M-/*E", {.tp = 4, .attn_dp = 2}, {2, 2}, arReduction()));
  for (auto& ops : plan.ranks) {
    for (Op& op : ops) {
      if (op.stack == 1 && op.stage == -1 && op.kind == OpKind::kAllGather)
        op.axis = static_cast<std::int8_t>(Axis::kTp);
    }
  }
  const Violation v = firstViolation(plan);
  EXPECT_NE(v.property, Property::kBoundariesAgree);
}

}  // namespace
}  // namespace seam
