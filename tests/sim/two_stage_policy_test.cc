// Pins the two-stage decoder layers of the boundary policies
// (sim/src/policy/two_stage.cc, boundary.cc) against
// reference/serving-boundaries.md §5 (classic tables: legacy), §6 (declared
// equivalents) and §8/§10 (DeepSeek's first-k dense layers, Qwen3-Next,
// Falcon-H1's parallel mixer): every preset holds under every policy, each
// new rule's op sequence, and one hand-made wrong plan per new rule that the
// ledger catches with the right class. The full op lists of the table rows
// are the goldens of tests/tools/golden/. Attention CP, LayerNorm SP,
// input-scattered attention and LongCat-Flash's branches have files of their own.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "seam/sim/model/case.h"
#include "seam/sim/model/model.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam {
namespace {

using seam::testing::eraseEverywhere;
using seam::testing::expectHolds;
using seam::testing::findOp;
using seam::testing::firstViolation;
using seam::testing::kindsAt;
using seam::testing::mustBuild;
using seam::testing::twoStageCase;

Flags a2a() {
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  return f;
}

// ---- every preset ------------------------------------------------------------------

TEST(TwoStagePresets, EveryTwoStageAndParallelHybridPresetHoldsUnderEveryPolicyAtTp1To8) {
  int checked = 0;
  for (const ModelPreset& p : presets()) {
    if (p.family == LayerFamily::kSingleStage) continue;
    auto model = modelFromPreset(p);
    ASSERT_TRUE(model.hasValue()) << model.status().message();
    for (int tp : {1, 2, 4, 8}) {
      Case c;
      c.model = *model;
      c.config = {.tp = tp};
      c.batch.tokens = {3};
      if (!fitsModel(p, c.config)) continue;
      for (PolicyKind policy : {PolicyKind::kDeclared, PolicyKind::kLegacy, PolicyKind::kNaive}) {
        SCOPED_TRACE(reproduceCommand(c, policyName(policy)));
        // The classic LongCat-Flash communicator is not modelled (refused as such).
        if (p.family == LayerFamily::kBranchMerge && policy == PolicyKind::kLegacy) continue;
        expectHolds(mustBuild(c, policy));
        ++checked;
      }
    }
  }
  EXPECT_GE(checked,
            4 * 3 * 3);  // deepseek-v3, qwen3-8b, qwen3-next, four Falcon-H1 presets, longcat-flash
}

TEST(TwoStagePresets, DeepSeekV3StagesAreTwoPerLayerAndItsOpsNameTheDecoderLayer) {
  auto model = modelFromPreset(**findPreset("deepseek-v3"));
  ASSERT_TRUE(model.hasValue());
  Case c;
  c.model = *model;
  c.config = {.tp = 2};
  c.batch.tokens = {2};
  const Plan plan = mustBuild(c);
  ASSERT_EQ(plan.stackSize(0), 122);
  ASSERT_EQ(plan.stackSize(1), 2);
  for (const Op& op : plan.ranks[0]) {
    if (op.stage >= 0) {
      EXPECT_EQ(op.layer, op.stage / 2);
    }
  }
  // First-k dense: layers 0-2 compute over tp (dense MLP), layer 3 over the MoE group.
  EXPECT_EQ(plan.stages[plan.stageIndex(0, 5)].kind, LayerKind::kDenseMlp);
  EXPECT_EQ(plan.stages[plan.stageIndex(0, 7)].kind, LayerKind::kMoe);
}

// ---- the rules, op by op -------------------------------------------------------------

TEST(TwoStageRules,
     UnderDpAttentionTheFfnInputUsesThePartialOrderWithOnlyAttnTpRankZeroAddingTheResidual) {
  const Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}));
  const std::vector<OpKind> rank0 = {OpKind::kAdd, OpKind::kDpGatherPartial, OpKind::kDpScatter,
                                     OpKind::kNorm};
  const std::vector<OpKind> rank1 = {OpKind::kDpGatherPartial, OpKind::kDpScatter, OpKind::kNorm};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), rank0);
  EXPECT_EQ(kindsAt(plan, 1, 1, Phase::kEntry), rank1);
  EXPECT_EQ(kindsAt(plan, 2, 1, Phase::kEntry), rank0);  // attn-TP rank 0 of DP shard 1
  expectHolds(plan);
}

TEST(TwoStageRules, WithAttnTpOneUnderDpDeclaredGathersReplicasAndLegacyNormsBeforeAGatherSum) {
  const Case c = twoStageCase("*-*-", {.tp = 2, .attn_dp = 2}, {2, 1});
  const std::vector<OpKind> declared = {OpKind::kAddNorm, OpKind::kDpGatherReplicate};
  const std::vector<OpKind> legacy = {OpKind::kAddNorm, OpKind::kDpGatherPartial};
  EXPECT_EQ(kindsAt(mustBuild(c), 0, 1, Phase::kEntry), declared);
  EXPECT_EQ(kindsAt(mustBuild(c, PolicyKind::kLegacy), 0, 1, Phase::kEntry), legacy);
}

TEST(TwoStageRules, TheLegacyLayerOutputReduceScattersOnlyWhenTheModelAllowsItAndPaddingIsMaxLen) {
  // DeepSeek-like MoE (allow_reduce_scatter) with MAX_LEN: dp_reduce_scatter at the exit.
  const Plan moe =
      mustBuild(twoStageCase("*E*E", {.tp = 4, .attn_dp = 2}, {3, 2}), PolicyKind::kLegacy);
  EXPECT_EQ(kindsAt(moe, 0, 1, Phase::kExit), std::vector<OpKind>{OpKind::kDpReduceScatter});
  // Qwen3 dense (allow_reduce_scatter False): all-reduce then dp_scatter.
  const Plan dense =
      mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}), PolicyKind::kLegacy);
  const std::vector<OpKind> ar_scatter = {OpKind::kAllReduce, OpKind::kDpScatter};
  EXPECT_EQ(kindsAt(dense, 0, 1, Phase::kExit), ar_scatter);
  Flags sum_len;
  sum_len.dp_padding = DpPadding::kSumLen;
  const Plan moe_sum = mustBuild(twoStageCase("*E*E", {.tp = 4, .attn_dp = 2}, {3, 2}, sum_len),
                                 PolicyKind::kLegacy);
  EXPECT_EQ(kindsAt(moe_sum, 0, 1, Phase::kExit), ar_scatter);
}

TEST(TwoStageRules,
     AnA2aSparseLayerSlicesTheResidualOnceAndItStaysOnLocalRowsUntilTheLastLayerGathers) {
  const Plan plan = mustBuild(twoStageCase("*-*E*E", {.tp = 4, .moe_ep = 4}, {4}, a2a()));
  // Layer 1's FFN input: RS(attn_tp), the residual sliced from the dense layer's attention rows.
  const std::vector<OpKind> first_sparse = {OpKind::kReduceScatter, OpKind::kSlice,
                                            OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 3, Phase::kEntry), first_sparse);
  // Layer 2's attention input: add+norm on the slice, AG(attn_tp) of the normed rows.
  const std::vector<OpKind> attn_in = {OpKind::kAddNorm, OpKind::kAllGather};
  EXPECT_EQ(kindsAt(plan, 0, 4, Phase::kEntry), attn_in);
  // Layer 2's FFN input: the residual is already sliced.
  const std::vector<OpKind> next_sparse = {OpKind::kReduceScatter, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 5, Phase::kEntry), next_sparse);
  // The last layer's _gather: hs += residual, AG(attn_tp); the final norm has no residual.
  const std::vector<OpKind> gather = {OpKind::kAdd, OpKind::kAllGather};
  EXPECT_EQ(kindsAt(plan, 0, 5, Phase::kExit), gather);
  EXPECT_EQ(kindsAt(plan, 0, 6, Phase::kEntry), std::vector<OpKind>{OpKind::kNorm});
  expectHolds(plan);
}

TEST(TwoStageRules, ADenseFfnAfterALocalRowsLayerGathersTheResidualFirst) {
  const Plan plan = mustBuild(twoStageCase("*E*-", {.tp = 4, .moe_ep = 4}, {4}, a2a()));
  const int i = findOp(plan, 0, 3, Phase::kEntry, OpKind::kAllGather, Tensor::kResidual);
  ASSERT_GE(i, 0);
  EXPECT_EQ(plan.ranks[0][i + 1].kind, OpKind::kArAddNorm);
  expectHolds(plan);
}

TEST(TwoStageRules, FullyDpDenseFfnsRunOnLocalRowsWithReplicatedWeightsAndOweNoSum) {
  Flags f;
  f.dense_tp1 = true;
  const Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}, f));
  // 3 tokens over attn_tp 2: prepare_mlp_sync_batch (forward_batch_info.py)
  // padded the shard to 4 rows, so the plain reduce-scatter of equal chunks.
  const std::vector<OpKind> into_ffn = {OpKind::kReduceScatter, OpKind::kSlice, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), into_ffn);
  EXPECT_EQ(plan.stages[1].weight_axis, kNoAxis);
  EXPECT_TRUE(kindsAt(plan, 0, 1, Phase::kExit).empty());
  for (const Op& op : plan.ranks[0]) {
    EXPECT_NE(op.kind, OpKind::kDpGatherPartial);  // no DP gather: every rank runs its own rows
  }
  expectHolds(plan);
  // Nemotron-H declares dense_tp_size = tp: the flag changes nothing there.
  Case nemotron = seam::testing::patternCase("M-M-", {.tp = 2}, {4}, f);
  Case plain = nemotron;
  plain.flags.dense_tp1 = false;
  EXPECT_EQ(mustBuild(nemotron).ranks, mustBuild(plain).ranks);
}

TEST(TwoStageRules, TheRefusalsSayWhatSeamDoesNotModelYetAndWhatTheEngineRefuses) {
  auto ep =
      buildPlan(twoStageCase("*E*E", {.tp = 4, .moe_ep = 2}, {3}, a2a()), PolicyKind::kDeclared);
  ASSERT_FALSE(ep.hasValue());
  EXPECT_NE(ep.status().message().find("moe_ep == tp"), std::string::npos);
  auto legacy = buildPlan(twoStageCase("*-*-", {.tp = 4, .attn_cp = 2}, {3}), PolicyKind::kLegacy);
  ASSERT_FALSE(legacy.hasValue());
  EXPECT_TRUE(isNotModelled(legacy.status().message()));
}
// ---- hand-made wrong plans, one per new rule -----------------------------------------

TEST(TwoStageWrongPlans, EveryAttnTpRankAddingTheResidualBeforeTheGatherSumCountsItTwice) {
  const Plan plan =
      mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}), PolicyKind::kDeclared,
                Schema::with(Decision::kDpGatherSumResidualEveryRank));
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kCountedTwice);
  EXPECT_EQ(v.stage, 1);
}

TEST(TwoStageWrongPlans, AResidualNeverScatteredBackAfterTheGatherSumLosesTheResidual) {
  Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}));
  eraseEverywhere(plan, 1, Phase::kEntry, OpKind::kDpScatter, Tensor::kResidual);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(v.stage, 2);  // the next attention input reads a value without the residual
  EXPECT_EQ(v.rank, 0);   // rank 0 folded its residual into the gather; the others kept theirs
}

TEST(TwoStageWrongPlans, AnAttentionInputThatDoesNotGatherTheLocalRowsComputesOnASlice) {
  Plan plan = mustBuild(twoStageCase("*E*E", {.tp = 4, .moe_ep = 4}, {4}, a2a()));
  eraseEverywhere(plan, 2, Phase::kEntry, OpKind::kAllGather);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
  EXPECT_EQ(v.stage, 3);  // the FFN input's reduce-scatter expects attention rows
}

TEST(TwoStageWrongPlans, ASecondSparseLayerSlicingTheResidualAgainIsALayoutMismatch) {
  Plan plan = mustBuild(twoStageCase("*E*E", {.tp = 4, .moe_ep = 4}, {4}, a2a()));
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, 3, Phase::kEntry, OpKind::kReduceScatter);
    ASSERT_GE(i, 0);
    Op slice = plan.ranks[r][findOp(plan, r, 1, Phase::kEntry, OpKind::kSlice, Tensor::kResidual)];
    slice.stage = 3;
    slice.layer = 1;
    plan.ranks[r].insert(plan.ranks[r].begin() + i + 1, slice);
  }
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
  EXPECT_EQ(v.stage, 3);
}

TEST(TwoStageWrongPlans, ALastLayerGatherWithoutTheResidualAddLeavesTheOutputIncomplete) {
  Plan plan = mustBuild(twoStageCase("*E*E", {.tp = 4, .moe_ep = 4}, {4}, a2a()));
  eraseEverywhere(plan, 3, Phase::kExit, OpKind::kAdd);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOutputComplete);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
}

TEST(TwoStageWrongPlans, ADenseFfnAfterALocalLayerThatSkipsTheResidualGatherBreaksResidualFollows) {
  Plan plan = mustBuild(twoStageCase("*E*-", {.tp = 4, .moe_ep = 4}, {4}, a2a()));
  eraseEverywhere(plan, 3, Phase::kEntry, OpKind::kAllGather, Tensor::kResidual);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kResidualFollows);
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
}
TEST(TwoStageWrongPlans, ALegacyReduceScatterTurnedIntoAPlainScatterNeverCompletesTheMoeSum) {
  Plan plan = mustBuild(twoStageCase("*E*E", {.tp = 4, .attn_dp = 2}, {3, 2}), PolicyKind::kLegacy);
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, 1, Phase::kExit, OpKind::kDpReduceScatter);
    ASSERT_GE(i, 0);
    Op& op = plan.ranks[r][i];
    op.kind = OpKind::kDpScatter;
    op.axis = kNoAxis;
  }
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(v.stage, 2);
}

}  // namespace
}  // namespace seam
