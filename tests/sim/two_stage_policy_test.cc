// Pins the two-stage decoder layers of the boundary policies
// (sim/src/declared_policy.cc) against reference/serving-boundaries.md §5
// (classic tables: legacy), §6 (declared equivalents) and §8/§10 (DeepSeek's
// first-k dense layers, Qwen3-Next, Falcon-H1's parallel mixer): every preset
// holds under every policy, each new rule's op sequence, and one hand-made
// wrong plan per new rule that the ledger catches with the right class.
// The full op lists of the table rows are the goldens of tests/tools/golden/.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "case_builders.h"
#include "reference_check.h"
#include "seam/properties/check.h"
#include "seam/sim/case.h"
#include "seam/sim/dp_gather.h"
#include "seam/sim/ledger.h"
#include "seam/sim/model.h"
#include "seam/sim/numeric_executor.h"
#include "seam/sim/plan.h"
#include "seam/sim/policy.h"

namespace seam {
namespace {

using seam::testing::patternCase;
using seam::testing::mustBuild;
using seam::testing::twoStageCase;

/// A refused plan has no ranks: the test stops here with the refusal (gtest
/// reports the exception as a failure) instead of reading past `ranks` later.
std::vector<OpKind> kindsAt(const Plan& plan, int rank, int stage, Phase phase) {
  std::vector<OpKind> out;
  for (const Op& op : plan.ranks[rank]) {
    if (op.stack == 0 && op.stage == stage && op.phase == phase) out.push_back(op.kind);
  }
  return out;
}

int findOp(const Plan& plan, int rank, int stage, Phase phase, OpKind kind, Tensor tensor = Tensor::kHidden) {
  const auto& ops = plan.ranks[rank];
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const Op& op = ops[i];
    if (op.stack == 0 && op.stage == stage && op.phase == phase && op.kind == kind && op.tensor == tensor) return i;
  }
  return -1;
}

/// The plan of `c` with `rank` taking back CP rank `block`'s block at stage 1's exit.
Plan wrongTakeBack(const Case& c, int rank, int block) {
  Plan plan = mustBuild(c);
  const int i = findOp(plan, rank, 1, Phase::kExit, OpKind::kSlice);
  EXPECT_GE(i, 0);
  if (i >= 0) plan.ranks[rank][i].slice_of = static_cast<std::int8_t>(block);
  return plan;
}

void eraseEverywhere(Plan& plan, int stage, Phase phase, OpKind kind, Tensor tensor = Tensor::kHidden) {
  int erased = 0;
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, stage, phase, kind, tensor);
    if (i < 0) continue;
    plan.ranks[r].erase(plan.ranks[r].begin() + i);
    ++erased;
  }
  ASSERT_GT(erased, 0) << opName(kind) << " at stage " << stage;
}

/// Turns the `kind` op at (stage, phase) of every rank into a slice: a
/// collective that should complete a sum, replaced by taking one's own rows.
void sliceInsteadEverywhere(Plan& plan, int stage, Phase phase, OpKind kind) {
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, stage, phase, kind);
    ASSERT_GE(i, 0) << opName(kind) << " at stage " << stage << " rank " << r;
    plan.ranks[r][i].kind = OpKind::kSlice;
    plan.ranks[r][i].axis = kNoAxis;
  }
}

Violation firstViolation(const Plan& plan) {
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger);
  EXPECT_FALSE(verdict.holds()) << "the wrong plan holds";
  auto v = verdict.firstViolation();
  return v ? *v : Violation{};
}

void expectHolds(const Plan& plan) {
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger);
  EXPECT_TRUE(verdict.holds()) << (verdict.firstViolation() ? verdict.firstViolation()->detail : "");
}

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
  EXPECT_GE(checked, 4 * 3 * 3);  // deepseek-v3, qwen3-8b, qwen3-next, four Falcon-H1 presets, longcat-flash
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

TEST(TwoStageRules, UnderDpAttentionTheFfnInputUsesThePartialOrderWithOnlyAttnTpRankZeroAddingTheResidual) {
  const Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}));
  const std::vector<OpKind> rank0 = {OpKind::kAdd, OpKind::kDpGatherPartial, OpKind::kDpScatter, OpKind::kNorm};
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
  const Plan moe = mustBuild(twoStageCase("*E*E", {.tp = 4, .attn_dp = 2}, {3, 2}), PolicyKind::kLegacy);
  EXPECT_EQ(kindsAt(moe, 0, 1, Phase::kExit), std::vector<OpKind>{OpKind::kDpReduceScatter});
  // Qwen3 dense (allow_reduce_scatter False): all-reduce then dp_scatter.
  const Plan dense = mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}), PolicyKind::kLegacy);
  const std::vector<OpKind> ar_scatter = {OpKind::kAllReduce, OpKind::kDpScatter};
  EXPECT_EQ(kindsAt(dense, 0, 1, Phase::kExit), ar_scatter);
  Flags sum_len;
  sum_len.dp_padding = DpPadding::kSumLen;
  const Plan moe_sum = mustBuild(twoStageCase("*E*E", {.tp = 4, .attn_dp = 2}, {3, 2}, sum_len), PolicyKind::kLegacy);
  EXPECT_EQ(kindsAt(moe_sum, 0, 1, Phase::kExit), ar_scatter);
}

TEST(TwoStageRules, AnA2aSparseLayerSlicesTheResidualOnceAndItStaysOnLocalRowsUntilTheLastLayerGathers) {
  const Plan plan = mustBuild(twoStageCase("*-*E*E", {.tp = 4, .moe_ep = 4}, {4}, a2a()));
  // Layer 1's FFN input: RS(attn_tp), the residual sliced from the dense layer's attention rows.
  const std::vector<OpKind> first_sparse = {OpKind::kReduceScatter, OpKind::kSlice, OpKind::kAddNorm};
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
  const std::vector<OpKind> into_ffn = {OpKind::kReduceScatterv, OpKind::kSlice, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), into_ffn);  // 3 tokens over attn_tp 2: the v variant
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

Flags inputScattered() {
  Flags f;
  f.mode = ForwardMode::kExtend;
  f.input_scattered = true;
  return f;
}

TEST(TwoStageRules, InputScatteredAttentionReadsATpSliceAndTheFfnInputAddsTheResidualSliceIntoTheSum) {
  const Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  const std::vector<OpKind> layer0 = {OpKind::kSlice, OpKind::kAddNorm, OpKind::kAllGather};
  EXPECT_EQ(kindsAt(plan, 0, 0, Phase::kEntry), layer0);
  const std::vector<OpKind> ffn_in = {OpKind::kAdd, OpKind::kAllReduce, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), ffn_in);
  EXPECT_TRUE(kindsAt(plan, 0, 1, Phase::kExit).empty());  // the dense FFN leaves its TP sum
  const std::vector<OpKind> layer1 = {OpKind::kReduceScatter, OpKind::kSlice, OpKind::kAddNorm, OpKind::kAllGather};
  EXPECT_EQ(kindsAt(plan, 0, 2, Phase::kEntry), layer1);
  EXPECT_EQ(kindsAt(plan, 0, 3, Phase::kExit), std::vector<OpKind>{OpKind::kAllReduce});  // terminal
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
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {4}, decode)).find("decode batch"), std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {3}, inputScattered())).find("tokens % tp_size == 0"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 4, .attn_dp = 2}, {2, 2}, inputScattered())).find("DP attention"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*-", {.tp = 2}, {4}, inputScattered())).find("q_lora_rank"), std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()), PolicyKind::kLegacy).find("Gen A"),
            std::string::npos);
}

Flags lnSp() {
  Flags f;
  f.mode = ForwardMode::kExtend;
  f.layernorm_sp = true;
  return f;
}

TEST(TwoStageRules, UnderLayerNormSpEveryStageGathersItsInputAndReduceScattersItsOutputOnLocalRows) {
  const Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 2}, {4}, lnSp()));
  const std::vector<OpKind> compute = {OpKind::kAllGather, OpKind::kCompute, OpKind::kReduceScatter};
  for (int stage = 0; stage < 4; ++stage) EXPECT_EQ(kindsAt(plan, 0, stage, Phase::kCompute), compute) << stage;
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), std::vector<OpKind>{OpKind::kAddNorm});
  EXPECT_EQ(kindsAt(plan, 0, 2, Phase::kEntry), std::vector<OpKind>{OpKind::kAddNorm});
  // The final norm runs on the shards; maybe_exit_gather gathers its output.
  EXPECT_TRUE(kindsAt(plan, 0, 3, Phase::kExit).empty());
  const std::vector<OpKind> final_entry = {OpKind::kAddNorm, OpKind::kAllGather};
  EXPECT_EQ(kindsAt(plan, 0, 4, Phase::kEntry), final_entry);
  expectHolds(plan);
  Flags decode = lnSp();
  decode.mode = ForwardMode::kDecode;
  auto refused = buildPlan(twoStageCase("*-*-", {.tp = 2}, {4}, decode), PolicyKind::kDeclared);
  ASSERT_FALSE(refused.hasValue());
  EXPECT_NE(refused.status().message().find("extend batches only"), std::string::npos);
}

TEST(TwoStageRules, LayerNormSpMovesEqualPaddedShardsWithThePlainCollectivesWhenTpDoesNotDivideTheTokens) {
  // M=5, tp=4: shard_token_rows pads to 8 rows, 2 per rank; all_gather_token_rows
  // and reduce_scatter_token_rows move tp * 2 rows with the plain collectives.
  const Case c = twoStageCase("*-*-", {.tp = 4}, {5}, lnSp());
  const Plan plan = mustBuild(c);
  EXPECT_EQ(plan.local_split, LocalSplit::kPaddedEqual);
  const std::int64_t row_bytes = activationRowBytes(c.model.shape);
  constexpr int kChunk = 2;
  for (int r = 0; r < plan.world(); ++r) {
    for (const Op& op : plan.ranks[r]) {
      EXPECT_NE(op.kind, OpKind::kAllGatherv);
      EXPECT_NE(op.kind, OpKind::kReduceScatterv);
      if (op.kind != OpKind::kAllGather && op.kind != OpKind::kReduceScatter) continue;
      EXPECT_EQ(op.axis, static_cast<std::int8_t>(Axis::kTp));
      EXPECT_EQ(op.bytes, 4 * kChunk * row_bytes);
      const Rows local = op.kind == OpKind::kAllGather ? op.rows_in : op.rows_out;
      const Rows attention = op.kind == OpKind::kAllGather ? op.rows_out : op.rows_in;
      EXPECT_EQ(local, (Rows{RowKind::kLocal, kChunk}));
      EXPECT_EQ(attention, (Rows{RowKind::kAttention, 5}));
    }
  }
  expectHolds(plan);
  for (int tokens : {1, 3, 5, 6, 7}) expectHolds(mustBuild(twoStageCase("*-*-", {.tp = 4}, {tokens}, lnSp())));
  expectHolds(mustBuild(twoStageCase("*-*-*-*-", {.pp = 2, .tp = 4}, {7}, lnSp())));
}

TEST(TwoStageRules, LayerNormSpPlansOnPaddedShardsAreBitIdenticalToTheReference) {
  for (const Case& c : {twoStageCase("*-*-", {.tp = 4}, {5}, lnSp()), twoStageCase("*-*-", {.tp = 2}, {3}, lnSp()),
                        twoStageCase("*-*-*-", {.tp = 8}, {3}, lnSp()),
                        twoStageCase("*-*-*-*-", {.pp = 2, .tp = 4}, {6}, lnSp())}) {
    const Plan plan = mustBuild(c);
    const NumericOutput ref = runReference(c, numeric::Mode::kExact, {});
    const NumericRun run = runPlanNumeric(plan, numeric::Mode::kExact, {});
    ASSERT_TRUE(run.ran()) << reproduceCommand(c, "declared");
    EXPECT_FALSE(run.ranks_disagree);
    const OutputDiff d = compareOutputs(ref, run.output);
    EXPECT_TRUE(d.identical) << d.describe() << "\n" << reproduceCommand(c, "declared");
  }
}

TEST(TwoStageRules, LayerNormSpIsRefusedAsValidateLayernormSpRefusesIt) {
  // arg_groups/layernorm_sp_hook.py: Qwen3ForCausalLM only, tp > 1, no
  // attention DP, no speculative decoding; checked at startup, so ahead of
  // the per-batch extend gate.
  const auto why = [](const Case& c) {
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    EXPECT_FALSE(plan.hasValue()) << reproduceCommand(c, "declared");
    if (plan.hasValue()) return std::string();
    EXPECT_FALSE(isNotModelled(plan.status().message())) << plan.status().message();
    return plan.status().message();
  };
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {4}, lnSp())).find("Qwen3ForCausalLM"), std::string::npos);
  EXPECT_NE(why(twoStageCase("GE*E", {.tp = 2}, {4}, lnSp())).find("Qwen3ForCausalLM"), std::string::npos);
  EXPECT_NE(why(patternCase("M-M*", {.tp = 2}, {4}, lnSp())).find("Qwen3ForCausalLM"), std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*-", {.tp = 1}, {4}, lnSp())).find("tp_size > 1"), std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {2, 2}, lnSp())).find("attention DP"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*-/*-", {.tp = 2}, {4}, lnSp())).find("speculative decoding"), std::string::npos);
  Flags capture = lnSp();
  capture.capture = {2};
  EXPECT_NE(why(twoStageCase("*-*-", {.tp = 2}, {4}, capture)).find("speculative decoding"), std::string::npos);
  Flags decode = lnSp();
  decode.mode = ForwardMode::kDecode;
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {4}, decode)).find("Qwen3ForCausalLM"), std::string::npos);
}

TEST(TwoStageRules, TheRefusalsSayWhatSeamDoesNotModelYetAndWhatTheEngineRefuses) {
  auto ep = buildPlan(twoStageCase("*E*E", {.tp = 4, .moe_ep = 2}, {3}, a2a()), PolicyKind::kDeclared);
  ASSERT_FALSE(ep.hasValue());
  EXPECT_NE(ep.status().message().find("moe_ep == tp"), std::string::npos);
  auto legacy = buildPlan(twoStageCase("*-*-", {.tp = 4, .attn_cp = 2}, {3}), PolicyKind::kLegacy);
  ASSERT_FALSE(legacy.hasValue());
  EXPECT_TRUE(isNotModelled(legacy.status().message()));
}

// ---- attention context parallel ----------------------------------------------------

Flags extend() {
  Flags f;
  f.mode = ForwardMode::kExtend;
  return f;
}

/// The case with GQA attention (bare MoE patterns borrow DeepSeek-V3's MLA shape).
Case gqa(Case c) {
  c.model.shape.q_lora_rank = kNotApplicable;
  return c;
}

/// `f` as _deepseek_family_overrides runs MLA prefill CP: deepep (with ep =
/// tp in the config) and moe_dense_tp_size 1.
Flags mlaCp(Flags f) {
  f.a2a = A2aBackend::kDeepep;
  f.dense_tp1 = true;
  return f;
}

Case deepseekCase(ParallelConfig config, std::vector<int> tokens, Flags flags) {
  return seam::testing::presetCase("deepseek-v3", config, std::move(tokens), std::move(flags));
}

TEST(AttentionCp, OnABatchNotShardedOverCpTheCpRanksAreReplicasAndTheGqaFfnNeverLeavesItsSum) {
  // Decode: token_axis_sizes(cp_active=False) makes ATTN_CP size 1. GQA CP
  // moves have no reduce-scatter, so may_leave is false: every FFN exit
  // completes its own sum (no deferral into the next attention's fused entry).
  const Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_cp = 2}, {3}));
  for (int r = 0; r < plan.world(); ++r) {
    EXPECT_EQ(kindsAt(plan, r, 1, Phase::kExit), std::vector<OpKind>{OpKind::kAllReduce}) << r;
  }
  expectHolds(plan);
  // The same stack without CP defers the FFN's sum into the next entry.
  const Plan no_cp = mustBuild(twoStageCase("*-*-", {.tp = 4}, {3}));
  EXPECT_TRUE(kindsAt(no_cp, 0, 1, Phase::kExit).empty());
  // A GQA extend batch shorter than max(128, 2cp) per sequence is not
  // sharded either (ZigzagCPStrategy.can_apply).
  expectHolds(mustBuild(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2}, {5}, extend()))));
}

TEST(AttentionCp, UnderDpAttentionOnlyCpRankZeroWritesItsShardIntoTheDpGather) {
  // _dp_gather_via_all_reduce without cp_shard_counts: writers are attn-TP
  // rank 0 of CP rank 0; a CP replica writing too would count the shard twice.
  const Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 8, .attn_dp = 2, .attn_cp = 2}, {3, 2}));
  EXPECT_EQ(plan.ranks[0].size(), plan.ranks[2].size());
  expectHolds(plan);
}

TEST(AttentionCp, GqaUnderDpAttentionGathersEachShardIntoItsDpSlotAndTakesTheOwnShardBackAfterTheSum) {
  // tp 8, attn_dp 2, attn_cp 2 (attn_tp 2): DP shard 0 (ranks 0-3) is
  // CP-sharded, shard 1 (ranks 4-7) idle. The FFN entry is the partial-order
  // DP gather (cp_shard_counts in its lowering, dp_gather_test.cc), the exit
  // completes the sum, then dp_scatter takes the own CP shard back
  // (dp_cp_take_back_output does not sum); the model boundary gathers the CP
  // shards of a sharded DP shard onto cp_gathered rows and reorders them.
  for (const char* pattern : {"*-*-", "*E*E"}) {
    SCOPED_TRACE(pattern);
    const Plan plan = mustBuild(gqa(twoStageCase(pattern, {.tp = 8, .attn_dp = 2, .attn_cp = 2}, {130, 0}, extend())));
    EXPECT_EQ(plan.cp_layout, CpLayout::kZigzag);
    for (int r : {0, 4}) {  // attention-TP rank 0 adds the residual before the gather
      EXPECT_EQ(kindsAt(plan, r, 1, Phase::kEntry),
                (std::vector<OpKind>{OpKind::kAdd, OpKind::kDpGatherPartial, OpKind::kDpScatter, OpKind::kNorm}))
          << r;
      EXPECT_EQ(kindsAt(plan, r, 1, Phase::kExit), (std::vector<OpKind>{OpKind::kAllReduce, OpKind::kDpScatter})) << r;
    }
    const Op& gathered = plan.ranks[1][plan.ranks[1].size() - 2];
    EXPECT_EQ(gathered.kind, OpKind::kAllGather);
    EXPECT_EQ(gathered.rows_out.kind, RowKind::kCpGathered);
    EXPECT_EQ(gathered.rows_out.count, 2 * 68);  // two shards of 65 token rows, padded to 68
    EXPECT_EQ(plan.ranks[1].back().rows_out.kind, RowKind::kSequence);
    EXPECT_NE(plan.ranks[5].back().kind, OpKind::kSlice);  // the idle shard gathers nothing
    expectHolds(plan);
  }
}

void expectRefusedWith(const Case& c, const std::string& reason) {
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  ASSERT_FALSE(plan.hasValue()) << c.config.describe();
  EXPECT_EQ(plan.status().code(), StatusCode::kRefused) << plan.status().message();
  EXPECT_NE(plan.status().message().find(reason), std::string::npos) << plan.status().message();
}

TEST(AttentionCp, AMoeDpThatIsNeitherOneNorAttnCpIsRefusedAtStartUpForEveryBatchWithTheEnginesAssertion) {
  // ServerArgs._handle_context_parallelism: moe_dp wider than attn_cp (the
  // GQA zigzag case seam used to count as not modelled), narrower but not 1,
  // and moe_dp without CP at all; on a CP-sharded extend batch and on decode.
  const std::string unequal = "attn_cp_size != moe_dp_size is only supported when moe_dp_size == 1";
  expectRefusedWith(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_dp = 4}, {130}, extend())), unequal);
  expectRefusedWith(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_dp = 4}, {3}, {})), unequal);
  expectRefusedWith(gqa(twoStageCase("*-*E", {.tp = 8, .attn_cp = 4, .moe_dp = 2}, {130}, extend())), unequal);
  expectRefusedWith(gqa(twoStageCase("*-*E", {.tp = 4, .moe_dp = 2}, {3}, {})), unequal);
  expectRefusedWith(patternCase("MEM", {.tp = 4, .moe_dp = 2}, {4}), unequal);
  // The same function's other moe_dp asserts.
  expectRefusedWith(gqa(twoStageCase("*-*E*-*E", {.pp = 2, .tp = 4, .attn_cp = 2, .moe_dp = 2}, {3}, {})),
                    "PP is not supported with context parallelism");
  expectRefusedWith(gqa(twoStageCase("*-*E", {.tp = 8, .attn_cp = 2, .moe_ep = 2, .moe_dp = 2}, {3}, {})),
                    "ep_size * moe_dp_size must be equal to tp_size");
  // moe_dp == attn_cp, with or without an EP group tiling the TP group, plans.
  expectHolds(mustBuild(gqa(twoStageCase("*-*E", {.tp = 8, .attn_cp = 2, .moe_ep = 4, .moe_dp = 2}, {130},
                                         extend()))));
  expectHolds(mustBuild(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_dp = 2}, {3}, {}))));
}

TEST(AttentionCp, TheEnginesCpRefusalsKeepTheirReasons) {
  // _reject_unsupported_cp_moe: an a2a MoE under attention DP and GQA CP.
  Flags deepep = a2a();
  deepep.mode = ForwardMode::kExtend;
  auto a2a_dp = buildPlan(gqa(twoStageCase("*-*E", {.tp = 8, .attn_dp = 2, .attn_cp = 2, .moe_ep = 8}, {130, 130},
                                           deepep)),
                          PolicyKind::kDeclared);
  ASSERT_FALSE(a2a_dp.hasValue());
  EXPECT_EQ(a2a_dp.status().code(), StatusCode::kRefused);
  EXPECT_NE(a2a_dp.status().message().find("a MoE dispatched per DP shard under attention DP and GQA prefill CP"),
            std::string::npos);
  // attn_cp_gather asserts attn_dp == 1 on a sharded batch: DP attention
  // under MLA CP as _deepseek_family_overrides configures it (attn_tp 1).
  Flags engine_extend = mlaCp(extend());
  auto mla_dp = buildPlan(deepseekCase({.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4}, {4, 4}, engine_extend),
                          PolicyKind::kDeclared);
  ASSERT_FALSE(mla_dp.hasValue());
  EXPECT_EQ(mla_dp.status().code(), StatusCode::kRefused);
  EXPECT_NE(mla_dp.status().message().find("attn_cp_gather asserts"), std::string::npos);
  // Any other MLA CP ask (a MoE on the TP group, attn_tp > 1) is rewritten at
  // start-up, for every batch: refused with what the engine runs instead.
  for (const ParallelConfig& asked : {ParallelConfig{.tp = 4, .attn_cp = 2}, ParallelConfig{.tp = 4, .attn_cp = 2,
                                                                                             .moe_dp = 2}}) {
    auto rewritten = buildPlan(deepseekCase(asked, {1}, {}), PolicyKind::kDeclared);
    ASSERT_FALSE(rewritten.hasValue());
    EXPECT_EQ(rewritten.status().code(), StatusCode::kRefused);
    EXPECT_NE(rewritten.status().message().find("_deepseek_family_overrides runs MLA prefill CP only with "
                                                "--moe-a2a-backend deepep"),
              std::string::npos);
  }
  // The engine's MLA stack on a decode batch plans and holds.
  expectHolds(mustBuild(deepseekCase({.tp = 4, .attn_cp = 4, .moe_ep = 4}, {3}, mlaCp({}))));
}

Flags rs(Flags f) {
  f.reduction = BoundaryReduction::kRs;
  return f;
}

TEST(AttentionCp, AnMlaExtendBatchIsInterleavedOverCpEveryFfnRunsOnTheShardAndTheOutputIsGatheredOverCp) {
  // 5 tokens over cp = 2: CP rank 0 holds tokens 0, 2, 4, rank 1 tokens 1, 3;
  // both shards are padded to ceil(3 / 2) * 2 = 4 rows.
  const Case c = twoStageCase("*-*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {5}, mlaCp(extend()));
  const Plan plan = mustBuild(c);
  EXPECT_EQ(plan.cp_layout, CpLayout::kInterleave);
  const RowMap rows(Topology(c.config), c.batch, plan.padding, plan.cp_layout);
  EXPECT_EQ(rows.tokens(RowKind::kAttention, 0), (std::vector<int>{0, 2, 4, kPaddingRow}));
  EXPECT_EQ(rows.tokens(RowKind::kAttention, 1), (std::vector<int>{1, 3, kPaddingRow, kPaddingRow}));
  EXPECT_EQ(rows.tokens(RowKind::kFull, 1), (std::vector<int>{0, 2, 4, kPaddingRow, 1, 3, kPaddingRow, kPaddingRow}));
  for (int r = 0; r < 2; ++r) {
    // The fully-DP dense FFN and the deepep MoE run on the shard: nothing gathered, nothing owed.
    EXPECT_EQ(kindsAt(plan, r, 1, Phase::kEntry), std::vector<OpKind>{OpKind::kAddNorm}) << r;
    EXPECT_TRUE(kindsAt(plan, r, 1, Phase::kExit).empty()) << r;
    EXPECT_EQ(kindsAt(plan, r, 3, Phase::kExit), std::vector<OpKind>{OpKind::kAdd}) << r;
    // The model boundary gathers the interleaved shards over attn_cp and takes the sequence back.
    EXPECT_EQ(kindsAt(plan, r, 4, Phase::kEntry),
              (std::vector<OpKind>{OpKind::kNorm, OpKind::kAllGather, OpKind::kSlice})) << r;
  }
  expectHolds(plan);
  // The rs strategy has no sum to scatter: the same plan.
  EXPECT_EQ(mustBuild(twoStageCase("*-*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {5}, rs(mlaCp(extend())))).ranks,
            plan.ranks);
  // attn_cp 4, and DeepSeek-V3's first-k dense layers and MTP.
  expectHolds(mustBuild(twoStageCase("*-*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, {9}, mlaCp(extend()))));
  expectHolds(mustBuild(deepseekCase({.tp = 2, .attn_cp = 2, .moe_ep = 2}, {7}, mlaCp(extend()))));
}

TEST(AttentionCp, TheLedgerCatchesAWrongInterleavedHandBack) {
  const Case c = twoStageCase("*-*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {5}, mlaCp(extend()));
  {
    // The output gather turned into a take-back: the sequence slice reads full rows off a shard.
    Plan plan = mustBuild(c);
    sliceInsteadEverywhere(plan, 4, Phase::kEntry, OpKind::kAllGather);
    EXPECT_EQ(firstViolation(plan).cls, ViolationClass::kLayoutMismatch);
  }

  {
    // No gather: the sequence is read from the shard where every CP rank's rows are expected.
    Plan plan = mustBuild(c);
    eraseEverywhere(plan, 4, Phase::kEntry, OpKind::kAllGather);
    EXPECT_EQ(firstViolation(plan).cls, ViolationClass::kLayoutMismatch);
  }
}

TEST(AttentionCp, AnInterleavedTpFfnIsNeverPlannedTheEngineRunsEveryMlaCpFfnOnTheShard) {
  // MLA CP with a TP FFN (a2a none, or a TP dense FFN) is what
  // _deepseek_family_overrides rewrites: the reduce-scatter over attn_cp a
  // TP FFN's sum would need is never planned; the engine's configuration owes no sum at all.
  for (const ParallelConfig& config : {ParallelConfig{.tp = 4, .attn_cp = 4}, ParallelConfig{.tp = 4, .attn_cp = 4,
                                                                                              .moe_ep = 2}}) {
    SCOPED_TRACE(config.describe());
    auto asked = buildPlan(twoStageCase("*-*E", config, {9}, rs(extend())), PolicyKind::kDeclared);
    ASSERT_FALSE(asked.hasValue());
    EXPECT_NE(asked.status().message().find("_deepseek_family_overrides"), std::string::npos);
  }
  const Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, {9}, rs(mlaCp(extend()))));
  for (const Op& op : plan.ranks[0]) {
    EXPECT_NE(op.kind, OpKind::kReduceScatter);
    EXPECT_NE(op.kind, OpKind::kAllReduce);
  }
  expectHolds(plan);
}

// ---- GQA (zigzag) prefill CP ---------------------------------------------------------

/// The ops of one rank at (stage, phase) with their groups, for the zigzag tests.
std::vector<std::pair<OpKind, std::int8_t>> opsAt(const Plan& plan, int rank, int stage, Phase phase) {
  std::vector<std::pair<OpKind, std::int8_t>> out;
  for (const Op& op : plan.ranks[rank]) {
    if (op.stack == 0 && op.stage == stage && op.phase == phase) out.emplace_back(op.kind, op.axis);
  }
  return out;
}

constexpr std::int8_t ax(Axis a) { return static_cast<std::int8_t>(a); }

TEST(GqaCp, AZigzaggedBatchCompletesOnTheShardGathersOverTheMoeCpGroupAndTakesTheMoeOutputBack) {
  // tp = 4, attn_cp = 2 (attn_tp = 2), moe_dp = 1 < attn_cp: the MoE-CP group
  // is the attn_cp group. 131 tokens: shards of 65 and 66 rows, padded to 68.
  const Case c = gqa(twoStageCase("*E*E", {.tp = 4, .attn_cp = 2}, {131}, extend()));
  const Plan plan = mustBuild(c);
  EXPECT_EQ(plan.cp_layout, CpLayout::kZigzag);
  const std::int8_t none = kNoAxis;
  for (int r = 0; r < 4; ++r) {
    // _then_moe_cp_gather: fused AR(attn_tp) + add + norm on the shard, then the gather.
    EXPECT_EQ(opsAt(plan, r, 1, Phase::kEntry),
              (std::vector<std::pair<OpKind, std::int8_t>>{{OpKind::kArAddNorm, ax(Axis::kAttnTp)},
                                                           {OpKind::kAllGather, ax(Axis::kMoeDp)}}))
        << r;
    // AR over the MoE output group on the gathered rows, then moe_cp_take_back_output.
    EXPECT_EQ(opsAt(plan, r, 1, Phase::kExit),
              (std::vector<std::pair<OpKind, std::int8_t>>{{OpKind::kAllReduce, ax(Axis::kMoeTp)},
                                                           {OpKind::kSlice, none}}))
        << r;
    // cp_gather_after_forward at the model boundary: gather over attn_cp, reorder.
    EXPECT_EQ(opsAt(plan, r, 4, Phase::kEntry),
              (std::vector<std::pair<OpKind, std::int8_t>>{{OpKind::kAddNorm, none},
                                                           {OpKind::kAllGather, ax(Axis::kAttnCp)},
                                                           {OpKind::kSlice, none}}))
        << r;
  }
  const Op& gather = plan.ranks[0][findOp(plan, 0, 1, Phase::kEntry, OpKind::kAllGather)];
  EXPECT_EQ(gather.rows_in.count, 68);
  EXPECT_EQ(gather.rows_out.count, 136);
  EXPECT_EQ(gather.bytes, 136 * activationRowBytes(c.model.shape));
  const Op& out = plan.ranks[3].back();
  EXPECT_EQ(out.rows_out.kind, RowKind::kSequence);
  EXPECT_EQ(out.rows_out.count, 131);
  expectHolds(plan);
  // Unfused, naive, dense layers (they gather too: their rows do not shard
  // ATTN_CP), an a2a MoE on the shard's local rows, fully-DP dense FFNs, MTP.
  Flags unfused = extend();
  unfused.fusion = false;
  expectHolds(mustBuild(gqa(twoStageCase("*E*E", {.tp = 4, .attn_cp = 2}, {131}, unfused))));
  expectHolds(mustBuild(c, PolicyKind::kNaive));
  expectHolds(mustBuild(gqa(twoStageCase("*-*-*E", {.tp = 8, .attn_cp = 4, .moe_ep = 2}, {137}, extend()))));
  Flags deepep = a2a();
  deepep.mode = ForwardMode::kExtend;
  expectHolds(mustBuild(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_ep = 4}, {130}, deepep))));
  Flags dense_tp1 = extend();
  dense_tp1.dense_tp1 = true;
  expectHolds(mustBuild(gqa(twoStageCase("*-*-", {.tp = 4, .attn_cp = 2}, {129}, dense_tp1))));
  expectHolds(mustBuild(gqa(twoStageCase("*E*E/*E", {.tp = 4, .attn_cp = 4}, {133}, extend()))));
  // The legacy policy under CP stays not modelled.
  auto legacy = buildPlan(c, PolicyKind::kLegacy);
  ASSERT_FALSE(legacy.hasValue());
  EXPECT_TRUE(isNotModelled(legacy.status().message()));
}

TEST(GqaCp, AMoeWithMoeDpEqualToAttnCpRunsOnTheShardAndMayDeferItsSumWhileDenseLayersGather) {
  // on_cp_shards: nothing gathered for the MoE; its exit keeps the output and
  // the next attention entry completes the deferred sum.
  const Plan plan = mustBuild(gqa(twoStageCase("*-*E*E", {.tp = 4, .attn_cp = 2, .moe_dp = 2}, {130}, extend())));
  EXPECT_EQ(plan.cp_layout, CpLayout::kZigzag);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(kindsAt(plan, r, 1, Phase::kEntry), (std::vector<OpKind>{OpKind::kArAddNorm, OpKind::kAllGather})) << r;
    EXPECT_EQ(kindsAt(plan, r, 3, Phase::kEntry), std::vector<OpKind>{OpKind::kArAddNorm}) << r;
    EXPECT_TRUE(kindsAt(plan, r, 3, Phase::kExit).empty()) << r;
    EXPECT_EQ(kindsAt(plan, r, 4, Phase::kEntry), std::vector<OpKind>{OpKind::kArAddNorm}) << r;
  }
  expectHolds(plan);
}

TEST(GqaCp, TheLedgerCatchesAWrongZigzagTakeBackASkippedGatherAndASumCountedTwice) {
  const Case c = gqa(twoStageCase("*E*E", {.tp = 4, .attn_cp = 2}, {131}, extend()));
  {
    // Rank 2 (CP rank 1) takes back CP rank 0's block: other tokens' values.
    EXPECT_EQ(firstViolation(wrongTakeBack(c, 2, 0)).cls, ViolationClass::kForeignTerm);
  }
  {
    // No MoE-CP gather: the MoE computes on the shard where it expects the gathered rows.
    Plan plan = mustBuild(c);
    eraseEverywhere(plan, 1, Phase::kEntry, OpKind::kAllGather);
    EXPECT_EQ(firstViolation(plan).cls, ViolationClass::kLayoutMismatch);
  }
  {
    // The sum completed on the gathered rows, then again over attention TP
    // after the take-back (the attn_tp ranks hold the same shard).
    Plan plan = mustBuild(c);
    for (int r = 0; r < plan.world(); ++r) {
      const int i = findOp(plan, r, 1, Phase::kExit, OpKind::kSlice);
      ASSERT_GE(i, 0);
      Op again = plan.ranks[r][i - 1];
      again.axis = ax(Axis::kAttnTp);
      again.rows_in = again.rows_out = plan.ranks[r][i].rows_out;
      plan.ranks[r].insert(plan.ranks[r].begin() + i + 1, again);
    }
    EXPECT_EQ(firstViolation(plan).cls, ViolationClass::kCountedTwice);
  }
  {
    // No model-boundary gather: the output never reaches sequence rows.
    Plan plan = mustBuild(c);
    eraseEverywhere(plan, 4, Phase::kEntry, OpKind::kAllGather);
    const Violation v = firstViolation(plan);
    EXPECT_EQ(v.property, Property::kOutputComplete);
  }
  {
    // Neither the gather nor the reorder: the output stays on the shard.
    Plan plan = mustBuild(c);
    eraseEverywhere(plan, 4, Phase::kEntry, OpKind::kAllGather);
    eraseEverywhere(plan, 4, Phase::kEntry, OpKind::kSlice);
    const Violation v = firstViolation(plan);
    EXPECT_EQ(v.property, Property::kOutputComplete);
    EXPECT_EQ(v.cls, ViolationClass::kMissingOutput);
  }
}

TEST(GqaCp, ZigzagPlansAreBitIdenticalToTheReferenceInExactMode) {
  auto identical = [](const Case& c) {
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    ASSERT_TRUE(plan.hasValue()) << plan.status().message();
    ASSERT_EQ(plan->cp_layout, CpLayout::kZigzag);
    const NumericOutput ref = runReference(c, numeric::Mode::kExact, {});
    const NumericRun run = runPlanNumeric(*plan, numeric::Mode::kExact, {});
    ASSERT_TRUE(run.ran());
    EXPECT_FALSE(run.ranks_disagree);
    const OutputDiff d = compareOutputs(ref, run.output);
    EXPECT_TRUE(d.identical) << c.config.describe() << ": " << d.describe();
  };
  identical(gqa(twoStageCase("*E*E", {.tp = 4, .attn_cp = 2}, {131}, extend())));
  identical(gqa(twoStageCase("*-*E", {.tp = 8, .attn_cp = 4, .moe_ep = 2}, {135}, extend())));
  identical(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_dp = 2}, {130}, extend())));
  identical(gqa(twoStageCase("*-*E", {.tp = 8, .attn_cp = 2, .moe_ep = 4, .moe_dp = 2}, {133}, extend())));
  identical(gqa(twoStageCase("*E/*E", {.tp = 2, .attn_cp = 2}, {129}, extend())));
  // A wrong take-back block shows in the output.
  const Case c = gqa(twoStageCase("*E*E", {.tp = 4, .attn_cp = 2}, {131}, extend()));
  const NumericRun run = runPlanNumeric(wrongTakeBack(c, 2, 0), numeric::Mode::kExact, {});
  EXPECT_FALSE(compareOutputs(runReference(c, numeric::Mode::kExact, {}), run.output).identical);
}

// ---- LongCat-Flash branches ------------------------------------------------------------

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
  EXPECT_EQ(plan.ranks[0][findOp(plan, 0, 1, Phase::kCompute, OpKind::kCompute, Tensor::kBranch)].tensor,
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
    EXPECT_TRUE(compareOutputs(runReference(c, numeric::Mode::kExact, shape), run.output).identical);
  }
}

Case longcatDp(std::vector<int> tokens, DpPadding padding, BoundaryReduction reduction, int tp = 4) {
  Case c = longcat(tp);
  c.config.attn_dp = 2;
  c.batch.tokens = std::move(tokens);
  c.flags.dp_padding = padding;
  c.flags.reduction = reduction;
  return c;
}

TEST(BranchLayers, UnderDpAttentionTheMoeBranchRunsOnFullRowsAndIsScatteredBackBeforeTheMerge) {
  const Plan plan = mustBuild(longcatDp({3, 2}, DpPadding::kMaxLen, BoundaryReduction::kAr, /*tp=*/2));
  // The MoE boundary gathers over DP; the branch copies the gathered input,
  // the MoE all-reduces its own output and branch_output cuts it to this
  // shard's rows (move_rows: dp_scatter).
  const std::vector<OpKind> fork = {OpKind::kAddNorm, OpKind::kDpGatherReplicate, OpKind::kAdd};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), fork);
  const Op& moe = plan.ranks[0][findOp(plan, 0, 1, Phase::kCompute, OpKind::kCompute, Tensor::kBranch)];
  EXPECT_EQ(moe.rows_in.kind, RowKind::kFull);
  const std::vector<OpKind> out = {OpKind::kAllReduce, OpKind::kDpScatter};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kExit), out);
  // mlp1's sum returns over DP (all-reduce + dp_scatter), then the merge on attention rows.
  const std::vector<OpKind> merge = {OpKind::kAllReduce, OpKind::kDpScatter, OpKind::kAdd};
  EXPECT_EQ(kindsAt(plan, 0, 4, Phase::kExit), merge);
  expectHolds(plan);
}

TEST(BranchLayers, UnderDpAttentionEveryPaddingModeReductionAndIdleShardHoldsAndMatchesTheReference) {
  for (DpPadding padding : {DpPadding::kMaxLen, DpPadding::kSumLen}) {
    for (BoundaryReduction red : {BoundaryReduction::kAr, BoundaryReduction::kRs, BoundaryReduction::kRsv}) {
      for (const std::vector<int>& tokens : {std::vector<int>{3, 2}, std::vector<int>{4, 0}, std::vector<int>{1, 5}}) {
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

// ---- hand-made wrong plans, one per new rule -----------------------------------------

TEST(TwoStageWrongPlans, EveryAttnTpRankAddingTheResidualBeforeTheGatherSumCountsItTwice) {
  const Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}), PolicyKind::kDeclared,
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

TEST(TwoStageWrongPlans, AnInputScatteredFfnInputThatForgetsTheResidualSliceLeavesItOnLocalRows) {
  Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  eraseEverywhere(plan, 1, Phase::kEntry, OpKind::kAdd);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kResidualFollows);  // the add+norm meets a residual slice
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
  EXPECT_EQ(v.stage, 1);
}

TEST(TwoStageWrongPlans, AnInputScatteredEntryThatSlicesTheFfnsPartialInsteadOfReduceScatteringNeverCompletesIt) {
  Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  sliceInsteadEverywhere(plan, 2, Phase::kEntry, OpKind::kReduceScatter);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(v.stage, 2);
}

TEST(TwoStageWrongPlans, ALayerNormSpRowLinearThatSlicesItsShardInsteadOfReduceScatteringNeverCompletesItsSum) {
  // Even shards (tp 2, 4 tokens) and padded ones (tp 4, 5 tokens: the last chunks hold padding).
  struct Wrong {
    int tp, tokens, stage;
  };
  for (const Wrong w : {Wrong{2, 4, 1}, Wrong{4, 5, 0}}) {
    Plan plan = mustBuild(twoStageCase("*-*-", {.tp = w.tp}, {w.tokens}, lnSp()));
    sliceInsteadEverywhere(plan, w.stage, Phase::kCompute, OpKind::kReduceScatter);
    const Violation v = firstViolation(plan);
    EXPECT_EQ(v.property, Property::kOwedOnce);
    EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
    EXPECT_EQ(v.stage, w.stage + 1);
  }
}

TEST(TwoStageWrongPlans, ALayerNormSpGatherThatSkipsTheNarrowHandsPaddingRowsToTheGemmAsTokens) {
  // all_gather_token_rows without output[:total_rows]: 8 rows for 5 tokens.
  Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4}, {5}, lnSp()));
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, 1, Phase::kCompute, OpKind::kAllGather);
    ASSERT_GE(i, 0);
    plan.ranks[r][i].rows_out.count = 8;
  }
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kPaddingLeak);
  EXPECT_EQ(v.stage, 1);
  EXPECT_EQ(v.op, OpKind::kCompute);
}

TEST(TwoStageWrongPlans, ALayerNormSpPlanOnTensorSplitRowsIssuesPlainCollectivesOfUnequalChunks) {
  // The padded plan replayed on tensor_split's 2,1,1,1 rows: ncclAllGather of unequal sizes.
  Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4}, {5}, lnSp()));
  plan.local_split = LocalSplit::kTensorSplit;
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kCollectivesMatch);
  EXPECT_EQ(v.cls, ViolationClass::kCollectiveMismatch);
  EXPECT_EQ(v.op, OpKind::kAllGather);
}

TEST(TwoStageWrongPlans, ALayerNormSpFinalGatherBeforeTheFinalNormLeavesTheOutputUnnormed) {
  Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4}, {5}, lnSp()));
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, 4, Phase::kEntry, OpKind::kAllGather);
    ASSERT_GE(i, 1);
    std::swap(plan.ranks[r][i - 1], plan.ranks[r][i]);
  }
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOutputComplete);
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
