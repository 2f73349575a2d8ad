// Pins input-scattered attention (§6.5, sim/src/policy/two_stage.cc:
// inputScatteredEntry, inputScatteredFfnExit) against
// reference/serving-boundaries.md: the TP slice an MLA attention with
// q_lora_rank reads, the FFN input that adds the residual slice into the
// sum, the engine's refusals, and hand-made wrong plans the ledger catches.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam {
namespace {

using seam::testing::eraseEverywhere;
using seam::testing::expectHolds;
using seam::testing::firstViolation;
using seam::testing::kindsAt;
using seam::testing::mustBuild;
using seam::testing::sliceInsteadEverywhere;
using seam::testing::twoStageCase;

Flags inputScattered() {
  Flags f;
  f.mode = ForwardMode::kExtend;
  f.input_scattered = true;
  return f;
}

TEST(TwoStageRules,
     InputScatteredAttentionReadsATpSliceAndTheFfnInputAddsTheResidualSliceIntoTheSum) {
  const Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  const std::vector<OpKind> layer0 = {OpKind::kSlice, OpKind::kAddNorm, OpKind::kAllGather};
  EXPECT_EQ(kindsAt(plan, 0, 0, Phase::kEntry), layer0);
  const std::vector<OpKind> ffn_in = {OpKind::kAdd, OpKind::kAllReduce, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), ffn_in);
  EXPECT_TRUE(kindsAt(plan, 0, 1, Phase::kExit).empty());  // the dense FFN leaves its TP sum
  const std::vector<OpKind> layer1 = {OpKind::kReduceScatter, OpKind::kSlice, OpKind::kAddNorm,
                                      OpKind::kAllGather};
  EXPECT_EQ(kindsAt(plan, 0, 2, Phase::kEntry), layer1);
  EXPECT_EQ(kindsAt(plan, 0, 3, Phase::kExit),
            std::vector<OpKind>{OpKind::kAllReduce});  // terminal
  expectHolds(plan);
}

TEST(TwoStageRules, InputScatteredAttentionIsRefusedWhereTheEngineDoesNotRunIt) {
  auto why = [](Case c, PolicyKind p = PolicyKind::kDeclared) {
    auto plan = buildPlan(c, p);
    EXPECT_FALSE(plan.hasValue());
    return plan ? std::string() : plan.status().message();
  };
  Flags decode = inputScattered();
  decode.mode = ForwardMode::kDecode;
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {4}, decode)).find("decode batch"),
            std::string::npos);
  EXPECT_NE(
      why(twoStageCase("*-*E", {.tp = 2}, {3}, inputScattered())).find("tokens % tp_size == 0"),
      std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 4, .attn_dp = 2}, {2, 2}, inputScattered()))
                .find("DP attention"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*-", {.tp = 2}, {4}, inputScattered())).find("q_lora_rank"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()), PolicyKind::kLegacy)
                .find("Gen A"),
            std::string::npos);
}
// ---- hand-made wrong plans ---------------------------------------------------------

TEST(TwoStageWrongPlans, AnInputScatteredFfnInputThatForgetsTheResidualSliceLeavesItOnLocalRows) {
  Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  eraseEverywhere(plan, 1, Phase::kEntry, OpKind::kAdd);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kResidualFollows);  // the add+norm meets a residual slice
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
  EXPECT_EQ(v.stage, 1);
}

TEST(TwoStageWrongPlans,
     AnInputScatteredEntryThatSlicesTheFfnsPartialInsteadOfReduceScatteringNeverCompletesIt) {
  Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  sliceInsteadEverywhere(plan, 2, Phase::kEntry, OpKind::kReduceScatter);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(v.stage, 2);
}

}  // namespace
}  // namespace seam
