// Pins LongCat-Flash's branch layers and its MTP layer
// (sim/src/policy/branch_layers.cc) against SGLang's models/longcat_flash.py,
// longcat_flash_nextn.py and layer_boundary/adapters/branch.py
// (docs/research/serving-longcat.md): the fork and merge on shared rows, under
// attention DP and under an all-to-all MoE backend, the op sequence of each
// boundary around the branch, bit-identity with the single-rank reference in
// exact mode, and hand-made wrong plans the ledger catches with the right
// class.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "reference_check.h"
#include "seam/properties/check.h"
#include "seam/sim/model/case.h"
#include "seam/sim/model/model.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam {
namespace {

using seam::testing::eraseEverywhere;
using seam::testing::expectHolds;
using seam::testing::findOp;
using seam::testing::firstViolation;
using seam::testing::firstViolationInBothDomains;
using seam::testing::kindsAt;
using seam::testing::mustBuild;

constexpr int kStagesPerLayer = 5;
/// Two branch layers: the first hands on to another branch layer, the
/// second to the final norm; enough for every boundary, and small to replay.
constexpr int kLayers = 2;

/// LongCat-Flash cut to kLayers layers (its MTP layer kept), moe_ep == tp
/// and the deepep backend.
Case longcatA2a(int tp, int attn_dp, std::vector<int> tokens,
                ForwardMode mode = ForwardMode::kDecode) {
  Case c;
  c.model = *modelFromPreset(**findPreset("longcat-flash"));
  c.model.pattern.layers.resize(kLayers * kStagesPerLayer);
  c.config = {.tp = tp, .attn_dp = attn_dp, .moe_ep = tp};
  c.batch.tokens = std::move(tokens);
  c.flags.a2a = A2aBackend::kDeepep;
  c.flags.mode = mode;
  return c;
}

/// (kind, tensor) of rank `rank`'s ops at one stage and phase of `stack`.
using Step = std::pair<OpKind, Tensor>;
std::vector<Step> stepsAt(const Plan& plan, int rank, int stage, Phase phase, int stack = 0) {
  std::vector<Step> out;
  for (const Op& op : plan.ranks[rank]) {
    if (op.stack == stack && op.stage == stage && op.phase == phase)
      out.emplace_back(op.kind, op.tensor);
  }
  return out;
}

/// Erases the (stage, phase, kind, tensor) op of every rank; it must exist on each.
void eraseOnEveryRank(Plan& plan, int stage, Phase phase, OpKind kind, Tensor tensor) {
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, stage, phase, kind, tensor);
    ASSERT_GE(i, 0) << opName(kind) << " at stage " << stage << " rank " << r;
    plan.ranks[r].erase(plan.ranks[r].begin() + i);
  }
}

// ---- without an all-to-all backend: shared rows -----------------------------------------

Case longcat(int tp) {
  Case c;
  c.model = *modelFromPreset(**findPreset("longcat-flash"));
  c.config = {.tp = tp};
  c.batch.tokens = {3};
  return c;
}

TEST(BranchLayers, TheMoeBranchForksFromTheNormedInputAndIsMergedAfterTheSecondMlpsSum) {
  const Plan plan = mustBuild(longcat(2));
  // Stage 1 (the MoE): the boundary's add+norm, then the branch copies the input.
  const std::vector<OpKind> fork = {OpKind::kArAddNorm, OpKind::kAdd};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), fork);
  EXPECT_EQ(
      plan.ranks[0][findOp(plan, 0, 1, Phase::kCompute, OpKind::kCompute, Tensor::kBranch)].tensor,
      Tensor::kBranch);
  // mlp0 reads the same input: no entry of its own.
  EXPECT_TRUE(kindsAt(plan, 0, 2, Phase::kEntry).empty());
  EXPECT_EQ(plan.stages[2].reads_norm_of, 1);
  EXPECT_EQ(plan.stages[1].joins_at, 5);
  // mlp1's exit: its all-reduce (export completes it), then the merge.
  const std::vector<OpKind> merge = {OpKind::kAllReduce, OpKind::kAdd};
  EXPECT_EQ(kindsAt(plan, 0, 4, Phase::kExit), merge);
  expectHolds(plan);
}

TEST(BranchLayers, MergingTheBranchBeforeTheSecondMlpsSumIsCompleteCountsTheMoeTwice) {
  Plan plan = mustBuild(longcat(2));
  for (int r = 0; r < plan.world(); ++r) {
    const int ar = findOp(plan, r, 4, Phase::kExit, OpKind::kAllReduce);
    const int add = findOp(plan, r, 4, Phase::kExit, OpKind::kAdd, Tensor::kBranch);
    ASSERT_GE(ar, 0);
    ASSERT_EQ(add, ar + 1);
    std::swap(plan.ranks[r][ar], plan.ranks[r][add]);
  }
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kCountedTwice);
  EXPECT_EQ(v.stage, 5);
}

TEST(BranchLayers, ABranchNeverMergedDropsTheMoeContribution) {
  Plan plan = mustBuild(longcat(2));
  eraseEverywhere(plan, 4, Phase::kExit, OpKind::kAdd, Tensor::kBranch);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(v.stage, 5);
}

TEST(BranchLayers, AMoeBranchThatKeepsItsSumOpenLeavesItNeverCompleted) {
  Plan plan = mustBuild(longcat(2));
  eraseEverywhere(plan, 1, Phase::kExit, OpKind::kAllReduce, Tensor::kBranch);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(v.stage, 5);
}

TEST(BranchLayers, TheNumericReferenceRunsTheMoeOnTheInputMlp0ReadsAndMergesItAfterMlp1) {
  // The reference is the model, not a chain of stages: a plan that runs the
  // branch as branch.py does is bit-identical to it in exact mode.
  const numeric::Shape shape{.hidden = 8, .inner = 16};
  for (int tp : {1, 2, 4}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    const Case c = longcat(tp);
    const NumericRun run = runPlanNumeric(mustBuild(c), numeric::Mode::kExact, shape);
    ASSERT_TRUE(run.ran());
    EXPECT_TRUE(
        compareOutputs(runReference(c, numeric::Mode::kExact, shape), run.output).identical);
  }
}

Case longcatDp(std::vector<int> tokens, DpPadding padding, BoundaryReduction reduction,
               int tp = 4) {
  Case c = longcat(tp);
  c.config.attn_dp = 2;
  c.batch.tokens = std::move(tokens);
  c.flags.dp_padding = padding;
  c.flags.reduction = reduction;
  return c;
}

TEST(BranchLayers, UnderDpAttentionTheMoeBranchRunsOnFullRowsAndIsScatteredBackBeforeTheMerge) {
  const Plan plan =
      mustBuild(longcatDp({3, 2}, DpPadding::kMaxLen, BoundaryReduction::kAr, /*tp=*/2));
  // The MoE boundary gathers over DP; the branch copies the gathered input,
  // the MoE all-reduces its own output and branch_output cuts it to this
  // shard's rows (move_rows: dp_scatter).
  const std::vector<OpKind> fork = {OpKind::kAddNorm, OpKind::kDpGatherReplicate, OpKind::kAdd};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), fork);
  const Op& moe =
      plan.ranks[0][findOp(plan, 0, 1, Phase::kCompute, OpKind::kCompute, Tensor::kBranch)];
  EXPECT_EQ(moe.rows_in.kind, RowKind::kFull);
  const std::vector<OpKind> out = {OpKind::kAllReduce, OpKind::kDpScatter};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kExit), out);
  // mlp1's sum returns over DP (all-reduce + dp_scatter), then the merge on attention rows.
  const std::vector<OpKind> merge = {OpKind::kAllReduce, OpKind::kDpScatter, OpKind::kAdd};
  EXPECT_EQ(kindsAt(plan, 0, 4, Phase::kExit), merge);
  expectHolds(plan);
}

TEST(BranchLayers,
     UnderDpAttentionEveryPaddingModeReductionAndIdleShardHoldsAndMatchesTheReference) {
  for (DpPadding padding : {DpPadding::kMaxLen, DpPadding::kSumLen}) {
    for (BoundaryReduction red :
         {BoundaryReduction::kAr, BoundaryReduction::kRs, BoundaryReduction::kRsv}) {
      for (const std::vector<int>& tokens :
           {std::vector<int>{3, 2}, std::vector<int>{4, 0}, std::vector<int>{1, 5}}) {
        Case c = longcatDp(tokens, padding, red);
        c.model.pattern.layers.resize(10);  // two layers are enough for the numeric run
        SCOPED_TRACE(reproduceCommand(c, "declared"));
        seam::testing::expectHoldsAndMatchesTheReference(c, mustBuild(c));
      }
    }
  }
}

TEST(BranchLayers, UnderDpAttentionABranchNotScatteredBackIsMergedOnTheWrongRows) {
  Plan plan = mustBuild(longcatDp({3, 2}, DpPadding::kMaxLen, BoundaryReduction::kAr));
  eraseEverywhere(plan, 1, Phase::kExit, OpKind::kDpScatter, Tensor::kBranch);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
  EXPECT_EQ(v.stage, 4);
}

// ---- under an all-to-all backend: local rows ---------------------------------------------

constexpr Tensor kH = Tensor::kHidden, kR = Tensor::kResidual, kB = Tensor::kBranch;

TEST(BranchLayersA2a, TheMoeBranchRunsOnLocalRowsOwesNoAllReduceAndMeetsMlp1OnLocalRows) {
  const Plan plan = mustBuild(longcatA2a(2, 1, {4}));
  // The MoE boundary: the attention partial reduce-scattered onto local rows,
  // the residual sliced, add+norm, then the branch's copy.
  const std::vector<Step> fork = {{OpKind::kReduceScatter, kH},
                                  {OpKind::kSlice, kR},
                                  {OpKind::kAddNorm, kH},
                                  {OpKind::kAdd, kB}};
  EXPECT_EQ(stepsAt(plan, 0, 1, Phase::kEntry), fork);
  // Dispatch and combine over moe_ep on the branch; no all-reduce after the combine.
  const std::vector<Step> moe = {
      {OpKind::kAllToAll, kB}, {OpKind::kCompute, kB}, {OpKind::kAllToAll, kB}};
  EXPECT_EQ(stepsAt(plan, 0, 1, Phase::kCompute), moe);
  EXPECT_TRUE(stepsAt(plan, 0, 1, Phase::kExit).empty());
  // branch_input: mlp0 reads the MoE's input gathered over attention TP, and the residual with it.
  const std::vector<Step> mlp0_in = {{OpKind::kAllGather, kH}, {OpKind::kAllGather, kR}};
  EXPECT_EQ(stepsAt(plan, 0, 2, Phase::kEntry), mlp0_in);
  // merge_branch: mlp1's sum completed, hidden and residual cut to the local
  // rows the MoE's layer hands on, the branch added there.
  const std::vector<Step> merge = {
      {OpKind::kAllReduce, kH}, {OpKind::kSlice, kH}, {OpKind::kSlice, kR}, {OpKind::kAdd, kB}};
  EXPECT_EQ(stepsAt(plan, 0, 4, Phase::kExit), merge);
  // The next layer's attention reads the local rows: add+norm there, then gather.
  const std::vector<Step> attn = {{OpKind::kAddNorm, kH}, {OpKind::kAllGather, kH}};
  EXPECT_EQ(stepsAt(plan, 0, 5, Phase::kEntry), attn);
  // The next MoE boundary finds the residual on local rows already: no slice.
  const std::vector<Step> fork2 = {
      {OpKind::kReduceScatter, kH}, {OpKind::kAddNorm, kH}, {OpKind::kAdd, kB}};
  EXPECT_EQ(stepsAt(plan, 0, 6, Phase::kEntry), fork2);
  // The last layer hands attention rows to the final norm: branch_output
  // gathers the MoE output, and the merge moves nothing.
  const std::vector<Step> last_out = {{OpKind::kAllGather, kB}};
  EXPECT_EQ(stepsAt(plan, 0, 6, Phase::kExit), last_out);
  const std::vector<Step> last_merge = {{OpKind::kAllReduce, kH}, {OpKind::kAdd, kB}};
  EXPECT_EQ(stepsAt(plan, 0, 9, Phase::kExit), last_merge);
  EXPECT_EQ(plan.stages[7].reads_norm_of, 6);
  expectHolds(plan);
}

TEST(BranchLayersA2a, UnderDpAttentionWithAnIdleShardMlp0ReadsTheMoeInputGatheredOverAttnTpThenDp) {
  for (ForwardMode mode : {ForwardMode::kDecode, ForwardMode::kExtend}) {
    SCOPED_TRACE(std::string(modeName(mode)));
    const Plan plan = mustBuild(longcatA2a(4, 2, {3, 0}, mode));
    for (int rank : {0, 2}) {  // a rank of the busy shard, one of the idle shard
      SCOPED_TRACE("rank " + std::to_string(rank));
      // The MoE stays on this shard's local rows (no DP gather before the dispatch).
      const Op& dispatch =
          plan.ranks[rank][findOp(plan, rank, 1, Phase::kCompute, OpKind::kAllToAll, kB)];
      EXPECT_EQ(dispatch.rows_in.kind, RowKind::kLocal);
      // move_rows(local -> full): attn_tp gather, then the DP gather; the
      // residual to attention rows. (The busy shard's 3 rows were padded to
      // 4 by prepare_mlp_sync_batch: the plain gather of equal chunks.)
      const OpKind gather = OpKind::kAllGather;
      const std::vector<Step> mlp0_in = {
          {gather, kH}, {OpKind::kDpGatherReplicate, kH}, {gather, kR}};
      EXPECT_EQ(stepsAt(plan, rank, 2, Phase::kEntry), mlp0_in);
      // mlp1's sum returns over DP, then the cut to local rows and the merge.
      const std::vector<Step> merge = {{OpKind::kAllReduce, kH},
                                       {OpKind::kDpScatter, kH},
                                       {OpKind::kSlice, kH},
                                       {OpKind::kSlice, kR},
                                       {OpKind::kAdd, kB}};
      EXPECT_EQ(stepsAt(plan, rank, 4, Phase::kExit), merge);
    }
    expectHolds(plan);
  }
}

TEST(BranchLayersA2a,
     EveryConfigModePaddingReductionAndIdleShardHoldsAndIsBitIdenticalToTheReference) {
  int checked = 0;
  for (int tp : {2, 4}) {
    for (int dp : {1, 2, tp}) {
      for (ForwardMode mode : {ForwardMode::kDecode, ForwardMode::kExtend}) {
        for (BoundaryReduction red :
             {BoundaryReduction::kAr, BoundaryReduction::kRs, BoundaryReduction::kRsv}) {
          for (DpPadding padding : {DpPadding::kMaxLen, DpPadding::kSumLen}) {
            if (dp == 1 && (red != BoundaryReduction::kAr || padding != DpPadding::kMaxLen))
              continue;
            std::vector<int> tokens(dp, 3);
            if (dp > 1) tokens[1] = 0;  // an idle shard
            Case c = longcatA2a(tp, dp, tokens, mode);
            c.flags.reduction = red;
            c.flags.dp_padding = padding;
            SCOPED_TRACE(reproduceCommand(c, "declared"));
            seam::testing::expectHoldsAndMatchesTheReference(c, mustBuild(c));
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 2 * 2 + 2 * 2 * 2 * 3 * 2);
}

TEST(BranchLayersA2a, TheMtpLayerIsADenseTwoStageLayerWhoseSumIsCompletedBeforeTheFinalNorm) {
  const Plan plan = mustBuild(longcatA2a(2, 1, {4}));
  // One nextn decoder layer: MLA attention, then a dense MLP (LongcatFlashDenseDecoderLayer).
  const std::vector<LayerKind> mtp = {LayerKind::kAttention, LayerKind::kDenseMlp};
  EXPECT_EQ(plan.source.model.pattern.mtp, mtp);
  // The MLP's TP sum is completed once, before the final norm of the step.
  const std::vector<Step> exit = {{OpKind::kAllReduce, kH}};
  EXPECT_EQ(stepsAt(plan, 0, 1, Phase::kExit, /*stack=*/1), exit);
  const std::vector<Step> final_norm = {{OpKind::kAddNorm, kH}};
  EXPECT_EQ(stepsAt(plan, 0, 2, Phase::kEntry, /*stack=*/1), final_norm);
}

TEST(BranchLayersA2a, ABranchForkedAfterTheLastMergeAndNeverMergedIsReportedAtThePlanEnd) {
  Plan plan = mustBuild(longcatA2a(2, 1, {4}));
  for (std::vector<Op>& ops : plan.ranks) {
    auto fork = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
      return op.kind == OpKind::kAdd && op.tensor == Tensor::kBranch;
    });
    ASSERT_NE(fork, ops.end());
    const Op copy = *fork;
    ops.push_back(copy);  // forks again after the plan's last op; nothing merges it
  }
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_NE(v.detail.find("never merged"), std::string::npos) << v.detail;
}

TEST(BranchLayersA2a, TheMtpLayerThatLeavesItsSumForANextLayerNeverCompletesIt) {
  Case c = longcatA2a(2, 1, {4});
  auto plan = buildPlan(c, PolicyKind::kDeclared, Schema::with(Decision::kMtpNotMarkedLast));
  ASSERT_TRUE(plan.hasValue());
  const Violation v = firstViolationInBothDomains(*plan);
  EXPECT_EQ(v.property, Property::kOutputComplete);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(v.stack, 1);
}

/// The plan of `c` with an all-reduce of the branch over moe_ep right after the combine, on every
/// rank.
Plan alsoAllReducedAfterTheCombine(const Case& c) {
  Plan plan = mustBuild(c);
  for (int r = 0; r < plan.world(); ++r) {
    const int combine = findOp(plan, r, 1, Phase::kCompute, OpKind::kAllToAll, kB) + 2;
    EXPECT_EQ(plan.ranks[r][combine].kind, OpKind::kAllToAll);
    Op ar = plan.ranks[r][combine];
    ar.kind = OpKind::kAllReduce;
    ar.phase = Phase::kExit;
    ar.rows_in = ar.rows_out;
    plan.ranks[r].insert(plan.ranks[r].begin() + combine + 1, ar);
  }
  return plan;
}

TEST(BranchLayersA2a, AMoeBranchAlsoAllReducedAfterTheCombineCountsTheExpertsTwiceOnCpReplicas) {
  // attn_tp = 1 under attention CP (decode): both moe_ep ranks hold the same
  // tokens, so the extra all-reduce adds the complete MoE output to itself.
  Case c = longcatA2a(2, 1, {3});
  c.config.attn_cp = 2;
  const Violation v = firstViolationInBothDomains(alsoAllReducedAfterTheCombine(c));
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kCountedTwice);
  EXPECT_EQ(v.stage, kStagesPerLayer);  // the merged output, read by the next layer's norm
}

TEST(BranchLayersA2a, AMoeBranchAlsoAllReducedAfterTheCombineMixesTheOtherSlicesTokens) {
  const Violation v =
      firstViolationInBothDomains(alsoAllReducedAfterTheCombine(longcatA2a(2, 1, {4})));
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kForeignTerm);
  EXPECT_EQ(v.stage, kStagesPerLayer);
}

TEST(BranchLayersA2a, ABranchMergedOnAttentionRowsWithoutTheCutIsALayoutMismatch) {
  Plan plan = mustBuild(longcatA2a(2, 1, {4}));
  for (Tensor t : {kH, kR}) eraseOnEveryRank(plan, 4, Phase::kExit, OpKind::kSlice, t);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
  EXPECT_EQ(v.stage, 4);
  EXPECT_EQ(v.op, OpKind::kAdd);
}

TEST(BranchLayersA2a, ABranchMergedOntoAnotherRanksSliceAddsAForeignTokensExperts) {
  Plan plan = mustBuild(longcatA2a(2, 1, {4}));
  // Rank 0 cuts hidden state and residual to rank 1's rows, then adds its own branch there.
  for (Tensor t : {kH, kR}) {
    const int i = findOp(plan, 0, 4, Phase::kExit, OpKind::kSlice, t);
    ASSERT_GE(i, 0);
    plan.ranks[0][i].slice_of = 1;
  }
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kForeignTerm);
  EXPECT_EQ(v.stage, kStagesPerLayer);
  EXPECT_EQ(v.rank, 0);
}

TEST(BranchLayersA2a,
     Mlp0ReadingTheBranchInputWithoutItsResidualGatheredBreaksTheResidualFollowing) {
  Plan plan = mustBuild(longcatA2a(2, 1, {4}));
  eraseOnEveryRank(plan, 2, Phase::kEntry, OpKind::kAllGather, kR);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kResidualFollows);
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
  EXPECT_EQ(v.stage, 3);  // attn1's input adds the residual to mlp0's output
}

TEST(BranchLayersA2a, BranchLayersWithoutTheDeepepExpertGroupAreRefusedAsTheEngineDoes) {
  Case c = longcatA2a(4, 1, {4});
  c.config.moe_ep = 2;
  auto plan = buildPlan(c, PolicyKind::kDeclared, Schema{});
  ASSERT_FALSE(plan.hasValue());
  EXPECT_EQ(plan.status().code(), StatusCode::kRefused);
}

// Input-scattered: StagePlan.branch_rows refuses the batch variant. LayerNorm
// SP never gets that far: validate_layernorm_sp refuses LongCat-Flash at
// startup (Qwen3ForCausalLM only).
TEST(BranchLayers, OnAnInputScatteredOrLayerNormSpBatchTheyAreRefusedWithTheEnginesReason) {
  Case c;
  c.model = *modelFromPreset(**findPreset("longcat-flash"));
  c.config = {.tp = 2};
  c.batch.tokens = {4};
  c.flags.mode = ForwardMode::kExtend;
  for (int variant = 0; variant < 2; ++variant) {
    Case v = c;
    (variant == 0 ? v.flags.input_scattered : v.flags.layernorm_sp) = true;
    auto plan = buildPlan(v, PolicyKind::kDeclared, Schema{});
    ASSERT_FALSE(plan.hasValue());
    EXPECT_EQ(plan.status().code(), StatusCode::kRefused) << plan.status().message();
    EXPECT_EQ(plan.status().message().rfind(kNotModelledPrefix, 0),
              std::string::npos);  // the engine's refusal
    EXPECT_NE(
        plan.status().message().find(variant == 0 ? "StagePlan.branch_rows" : "Qwen3ForCausalLM"),
        std::string::npos)
        << plan.status().message();
  }
  // Fully-DP dense MLPs run on the ordinary batch: seam does not model them yet.
  c.flags.dense_tp1 = true;
  auto plan = buildPlan(c, PolicyKind::kDeclared, Schema{});
  ASSERT_FALSE(plan.hasValue());
  EXPECT_EQ(plan.status().message().rfind(kNotModelledPrefix, 0), 0u) << plan.status().message();
}

}  // namespace
}  // namespace seam
