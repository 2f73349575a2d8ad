// Every planner-decision mutant of policy.h is killed by checkPlan on a case
// chosen for it, with the property and class it should report, while the
// unmutated plan of the same case holds; the decisions checkPlan cannot
// kill are named with the reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "case_builders.h"
#include "seam/properties/check.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam {
namespace {

using seam::testing::mustBuild;
using seam::testing::patternCase;

Flags deepep() {
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  return f;
}

Flags capturing(std::vector<int> stages) {
  Flags f;
  f.capture = std::move(stages);
  return f;
}

struct Kill {
  Decision decision;
  const char* why;
  std::function<Case()> make;
  Property property;  // the property checkPlan reports first
  ViolationClass cls;
};

std::vector<Kill> kills() {
  using D = Decision;
  using P = Property;
  using V = ViolationClass;
  return {
      {D::kMixerKeepsFusedSum, "mixer -> mixer carried at tp=2",
       [] { return patternCase("MM", {.tp = 2}, {4}); }, P::kBoundariesAgree,
       V::kBoundaryDisagrees},
      {D::kResidualNotSliced, "DeepEP MoE after a mixer",
       [] { return patternCase("*E", {.tp = 2, .moe_ep = 2}, {4}, deepep()); }, P::kResidualFollows,
       V::kLayoutMismatch},
      {D::kFfnKeepsSumFromMixer, "FFN -> mixer deferral at tp=2",
       [] { return patternCase("-M", {.tp = 2}, {4}); }, P::kBoundariesAgree,
       V::kBoundaryDisagrees},
      {D::kSnapshotNotCompleted, "capture before a mixer that completes a carried FFN sum",
       [] { return patternCase("-M", {.tp = 2}, {4}, capturing({1})); }, P::kSnapshots,
       V::kNeverCompleted},
      {D::kStackStartFfnWithResidual, "a pattern that starts with an FFN",
       [] { return patternCase("-M", {.tp = 2}, {4}); }, P::kOwedOnce, V::kCountedTwice},
      {D::kStackNeverEntered, "layer 0 never sets the residual",
       [] { return patternCase("M-", {.tp = 2}, {4}); }, P::kOwedOnce, V::kNeverCompleted},
      {D::kFfnReducesOverAttnTp, "dense FFN under attn_dp=2, attn_tp=2",
       [] {
         return patternCase("M-M", {.tp = 4, .attn_dp = 2}, {2, 2});
       },
       P::kOwedOnce, V::kNeverCompleted},
      {D::kTerminalDefers, "the last FFN defers into the final norm",
       [] { return patternCase("M-", {.tp = 2}, {4}); }, P::kOutputComplete, V::kNeverCompleted},
      {D::kMtpNotMarkedLast, "an MTP step *E after the main stack",
       [] { return patternCase("M*E/*E", {.tp = 2}, {4}); }, P::kOutputComplete,
       V::kNeverCompleted},
      {D::kDpGatherSumResidualEveryRank, "partial-order DP gather with attn_tp=2",
       [] {
         return patternCase("M-", {.tp = 4, .attn_dp = 2}, {2, 2});
       },
       P::kOwedOnce, V::kCountedTwice},
      {D::kMixerWeightsOverTp, "a mixer under attn_dp=2, attn_tp=2",
       [] {
         return patternCase("M-M", {.tp = 4, .attn_dp = 2}, {2, 2});
       },
       P::kOwedOnce, V::kForeignTerm},
      // Fused or not, the sum is completed once; but FlashInfer's kernel
      // asserts at most 2048 rows, so the fused call cannot run (property 4).
      {D::kFusionTokenBoundMoved, "2049 tokens at tp 2",
       [] { return patternCase("M-", {.tp = 2}, {kFuseMaxTokens + 1}); }, P::kCollectivesMatch,
       V::kCollectiveMismatch},
      // The ledger replays the judges' stages (weights over tp: four shards),
      // so the reduction over the EP pair leaves the other pair's shards out.
      {D::kPostExpertsNotMerged,
       "a MoE at ep=2, moe_tp=2 (unfused: the fused case is an "
       "engine finding)",
       [] {
         Flags f;
         f.fusion = false;
         return patternCase("E*", {.tp = 4, .moe_ep = 2}, {4}, f);
       },
       P::kOwedOnce, V::kNeverCompleted},
  };
}

/// The decisions checkPlan cannot kill, and why.
bool killedElsewhere(Decision d) {
  switch (d) {
    case Decision::kFusionIgnoresDpAttention:
      // Under DP attention no declared boundary asks the fusion gate; the
      // legacy policy's pipeline cut does (the test below).
      return true;
    default:
      return false;
  }
}

TEST(LedgerKills, EveryPlannerDecisionHasACaseOnWhichCheckPlanFails) {
  const std::vector<Kill> all = kills();
  std::vector<bool> covered(kDecisionCount, false);
  Ledger ledger;
  for (const Kill& k : all) {
    SCOPED_TRACE(std::string("decision ") + std::to_string(static_cast<int>(k.decision)) + ": " +
                 k.why);
    covered[static_cast<int>(k.decision)] = true;
    const Case c = k.make();
    // The unmutated plan of the same case holds: the kill is the decision's.
    const Plan clean = mustBuild(c);
    const auto baseline = properties::checkPlan(clean, ledger);
    ASSERT_TRUE(baseline.holds()) << describeViolation(*baseline.firstViolation());
    const Plan mutated = mustBuild(c, PolicyKind::kDeclared, Schema::with(k.decision));
    const auto verdict = properties::checkPlan(mutated, ledger);
    ASSERT_FALSE(verdict.holds()) << "survives: " << reproduceCommand(c, "declared");
    const auto first = verdict.firstViolation();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->property, k.property) << describeViolation(*first);
    EXPECT_EQ(first->cls, k.cls) << describeViolation(*first);
  }
  for (int d = 0; d < kDecisionCount; ++d) {
    if (killedElsewhere(static_cast<Decision>(d))) continue;
    EXPECT_TRUE(covered[d]) << "decision " << d << " has no killing case";
  }
}

TEST(LedgerKills, TheFusionGateUnderDpAttentionIsAskedOnlyAtALegacyPipelineCutAndKilledThere) {
  // Every declared call of the fusion gate sits under attn_dp == 1 (the DP
  // paths gather and scatter instead), so the declared planner never asks
  // the decision; the legacy policy's cut rule (legacyCutKeepsFusion) asks
  // it at attn_dp 2, and the fused sum it keeps is never completed.
  const Case c = patternCase("M-M-", {.pp = 2, .tp = 4, .attn_dp = 2}, {3, 2});
  ASSERT_TRUE(c.flags.fusion);
  std::uint32_t reached = 0;
  Schema flipped = Schema::with(Decision::kFusionIgnoresDpAttention);
  flipped.reached = &reached;
  const std::uint32_t bit = 1u << static_cast<int>(Decision::kFusionIgnoresDpAttention);
  mustBuild(c, PolicyKind::kDeclared, flipped);
  EXPECT_EQ(reached & bit, 0u);
  Ledger ledger;
  const Plan clean = mustBuild(c, PolicyKind::kLegacy);
  ASSERT_TRUE(properties::checkPlan(clean, ledger).holds());
  reached = 0;
  const Plan mutated = mustBuild(c, PolicyKind::kLegacy, flipped);
  EXPECT_NE(reached & bit, 0u);
  const auto first = properties::checkPlan(mutated, ledger).firstViolation();
  ASSERT_TRUE(first.has_value()) << "survives: " << reproduceCommand(c, "legacy");
  EXPECT_EQ(first->property, Property::kOwedOnce) << describeViolation(*first);
  EXPECT_EQ(first->cls, ViolationClass::kNeverCompleted) << describeViolation(*first);
}

}  // namespace
}  // namespace seam
