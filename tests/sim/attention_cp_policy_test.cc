// Pins attention context parallel (prefill CP) in two-stage layers
// (sim/src/policy/two_stage.cc: cpShardedFfnExit, the CP gathers of the FFN
// input; decide.cc: the model boundary's gather; refusals.cc: the engine's CP
// refusals) against reference/serving-boundaries.md and layers/cp/: replicas
// on a batch not sharded over CP, MLA's interleaved and GQA's zigzagged
// shards, the engine's refusals, bit-identity with the reference, and
// hand-made wrong plans the ledger catches.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "seam/sim/model/case.h"
#include "seam/sim/model/model.h"
#include "seam/sim/plan/dp_gather.h"
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
using seam::testing::kindsAt;
using seam::testing::mustBuild;
using seam::testing::patternCase;
using seam::testing::sliceInsteadEverywhere;
using seam::testing::twoStageCase;

Flags a2a() {
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  return f;
}

/// The plan of `c` with `rank` taking back CP rank `block`'s block at stage 1's exit.
Plan wrongTakeBack(const Case& c, int rank, int block) {
  Plan plan = mustBuild(c);
  const int i = findOp(plan, rank, 1, Phase::kExit, OpKind::kSlice);
  EXPECT_GE(i, 0);
  if (i >= 0) plan.ranks[rank][i].slice_of = static_cast<std::int8_t>(block);
  return plan;
}

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

TEST(AttentionCp,
     GqaUnderDpAttentionGathersEachShardIntoItsDpSlotAndTakesTheOwnShardBackAfterTheSum) {
  // tp 8, attn_dp 2, attn_cp 2 (attn_tp 2): DP shard 0 (ranks 0-3) is
  // CP-sharded, shard 1 (ranks 4-7) idle. The FFN entry is the partial-order
  // DP gather (cp_shard_counts in its lowering, dp_gather_test.cc), the exit
  // completes the sum, then dp_scatter takes the own CP shard back
  // (dp_cp_take_back_output does not sum); the model boundary gathers the CP
  // shards of a sharded DP shard onto cp_gathered rows and reorders them.
  for (const char* pattern : {"*-*-", "*E*E"}) {
    SCOPED_TRACE(pattern);
    const Plan plan = mustBuild(
        gqa(twoStageCase(pattern, {.tp = 8, .attn_dp = 2, .attn_cp = 2}, {130, 0}, extend())));
    EXPECT_EQ(plan.cp_layout, CpLayout::kZigzag);
    for (int r : {0, 4}) {  // attention-TP rank 0 adds the residual before the gather
      EXPECT_EQ(kindsAt(plan, r, 1, Phase::kEntry),
                (std::vector<OpKind>{OpKind::kAdd, OpKind::kDpGatherPartial, OpKind::kDpScatter,
                                     OpKind::kNorm}))
          << r;
      EXPECT_EQ(kindsAt(plan, r, 1, Phase::kExit),
                (std::vector<OpKind>{OpKind::kAllReduce, OpKind::kDpScatter}))
          << r;
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

TEST(AttentionCp,
     AMoeDpThatIsNeitherOneNorAttnCpIsRefusedAtStartUpForEveryBatchWithTheEnginesAssertion) {
  // ServerArgs._handle_context_parallelism: moe_dp wider than attn_cp (the
  // GQA zigzag case seam used to count as not modelled), narrower but not 1,
  // and moe_dp without CP at all; on a CP-sharded extend batch and on decode.
  const std::string unequal = "attn_cp_size != moe_dp_size is only supported when moe_dp_size == 1";
  expectRefusedWith(
      gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_dp = 4}, {130}, extend())), unequal);
  expectRefusedWith(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_dp = 4}, {3}, {})),
                    unequal);
  expectRefusedWith(
      gqa(twoStageCase("*-*E", {.tp = 8, .attn_cp = 4, .moe_dp = 2}, {130}, extend())), unequal);
  expectRefusedWith(gqa(twoStageCase("*-*E", {.tp = 4, .moe_dp = 2}, {3}, {})), unequal);
  expectRefusedWith(patternCase("MEM", {.tp = 4, .moe_dp = 2}, {4}), unequal);
  // The same function's other moe_dp asserts.
  expectRefusedWith(
      gqa(twoStageCase("*-*E*-*E", {.pp = 2, .tp = 4, .attn_cp = 2, .moe_dp = 2}, {3}, {})),
      "PP is not supported with context parallelism");
  expectRefusedWith(
      gqa(twoStageCase("*-*E", {.tp = 8, .attn_cp = 2, .moe_ep = 2, .moe_dp = 2}, {3}, {})),
      "ep_size * moe_dp_size must be equal to tp_size");
  // moe_dp == attn_cp, with or without an EP group tiling the TP group, plans.
  expectHolds(mustBuild(gqa(
      twoStageCase("*-*E", {.tp = 8, .attn_cp = 2, .moe_ep = 4, .moe_dp = 2}, {130}, extend()))));
  expectHolds(mustBuild(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_dp = 2}, {3}, {}))));
}

TEST(AttentionCp, TheEnginesCpRefusalsKeepTheirReasons) {
  // _reject_unsupported_cp_moe: an a2a MoE under attention DP and GQA CP.
  Flags deepep = a2a();
  deepep.mode = ForwardMode::kExtend;
  auto a2a_dp =
      buildPlan(gqa(twoStageCase("*-*E", {.tp = 8, .attn_dp = 2, .attn_cp = 2, .moe_ep = 8},
                                 {130, 130}, deepep)),
                PolicyKind::kDeclared);
  ASSERT_FALSE(a2a_dp.hasValue());
  EXPECT_EQ(a2a_dp.status().code(), StatusCode::kRefused);
  EXPECT_NE(a2a_dp.status().message().find(
                "a MoE dispatched per DP shard under attention DP and GQA prefill CP"),
            std::string::npos);
  // attn_cp_gather asserts attn_dp == 1 on a sharded batch: DP attention
  // under MLA CP as _deepseek_family_overrides configures it (attn_tp 1).
  Flags engine_extend = mlaCp(extend());
  auto mla_dp = buildPlan(
      deepseekCase({.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4}, {4, 4}, engine_extend),
      PolicyKind::kDeclared);
  ASSERT_FALSE(mla_dp.hasValue());
  EXPECT_EQ(mla_dp.status().code(), StatusCode::kRefused);
  EXPECT_NE(mla_dp.status().message().find("attn_cp_gather asserts"), std::string::npos);
  // Any other MLA CP ask (a MoE on the TP group, attn_tp > 1) is rewritten at
  // start-up, for every batch: refused with what the engine runs instead.
  for (const ParallelConfig& asked : {ParallelConfig{.tp = 4, .attn_cp = 2},
                                      ParallelConfig{.tp = 4, .attn_cp = 2, .moe_dp = 2}}) {
    auto rewritten = buildPlan(deepseekCase(asked, {1}, {}), PolicyKind::kDeclared);
    ASSERT_FALSE(rewritten.hasValue());
    EXPECT_EQ(rewritten.status().code(), StatusCode::kRefused);
    EXPECT_NE(rewritten.status().message().find(
                  "_deepseek_family_overrides runs MLA prefill CP only with "
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

TEST(AttentionCp,
     AnMlaExtendBatchIsInterleavedOverCpEveryFfnRunsOnTheShardAndTheOutputIsGatheredOverCp) {
  // 5 tokens over cp = 2: CP rank 0 holds tokens 0, 2, 4, rank 1 tokens 1, 3;
  // both shards are padded to ceil(3 / 2) * 2 = 4 rows.
  const Case c = twoStageCase("*-*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {5}, mlaCp(extend()));
  const Plan plan = mustBuild(c);
  EXPECT_EQ(plan.cp_layout, CpLayout::kInterleave);
  const RowMap rows(Topology(c.config), c.batch, plan.padding, plan.cp_layout);
  EXPECT_EQ(rows.tokens(RowKind::kAttention, 0), (std::vector<int>{0, 2, 4, kPaddingRow}));
  EXPECT_EQ(rows.tokens(RowKind::kAttention, 1),
            (std::vector<int>{1, 3, kPaddingRow, kPaddingRow}));
  EXPECT_EQ(rows.tokens(RowKind::kFull, 1),
            (std::vector<int>{0, 2, 4, kPaddingRow, 1, 3, kPaddingRow, kPaddingRow}));
  for (int r = 0; r < 2; ++r) {
    // The fully-DP dense FFN and the deepep MoE run on the shard: nothing gathered, nothing owed.
    EXPECT_EQ(kindsAt(plan, r, 1, Phase::kEntry), std::vector<OpKind>{OpKind::kAddNorm}) << r;
    EXPECT_TRUE(kindsAt(plan, r, 1, Phase::kExit).empty()) << r;
    EXPECT_EQ(kindsAt(plan, r, 3, Phase::kExit), std::vector<OpKind>{OpKind::kAdd}) << r;
    // The model boundary gathers the interleaved shards over attn_cp and takes the sequence back.
    EXPECT_EQ(kindsAt(plan, r, 4, Phase::kEntry),
              (std::vector<OpKind>{OpKind::kNorm, OpKind::kAllGather, OpKind::kSlice}))
        << r;
  }
  expectHolds(plan);
  // The rs strategy has no sum to scatter: the same plan.
  EXPECT_EQ(mustBuild(twoStageCase("*-*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {5},
                                   rs(mlaCp(extend()))))
                .ranks,
            plan.ranks);
  // attn_cp 4, and DeepSeek-V3's first-k dense layers and MTP.
  expectHolds(
      mustBuild(twoStageCase("*-*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, {9}, mlaCp(extend()))));
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
  for (const ParallelConfig& config : {ParallelConfig{.tp = 4, .attn_cp = 4},
                                       ParallelConfig{.tp = 4, .attn_cp = 4, .moe_ep = 2}}) {
    SCOPED_TRACE(config.describe());
    auto asked = buildPlan(twoStageCase("*-*E", config, {9}, rs(extend())), PolicyKind::kDeclared);
    ASSERT_FALSE(asked.hasValue());
    EXPECT_NE(asked.status().message().find("_deepseek_family_overrides"), std::string::npos);
  }
  const Plan plan = mustBuild(
      twoStageCase("*-*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, {9}, rs(mlaCp(extend()))));
  for (const Op& op : plan.ranks[0]) {
    EXPECT_NE(op.kind, OpKind::kReduceScatter);
    EXPECT_NE(op.kind, OpKind::kAllReduce);
  }
  expectHolds(plan);
}

// ---- GQA (zigzag) prefill CP ---------------------------------------------------------

/// The ops of one rank at (stage, phase) with their groups, for the zigzag tests.
std::vector<std::pair<OpKind, std::int8_t>> opsAt(const Plan& plan, int rank, int stage,
                                                  Phase phase) {
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
  expectHolds(mustBuild(
      gqa(twoStageCase("*-*-*E", {.tp = 8, .attn_cp = 4, .moe_ep = 2}, {137}, extend()))));
  Flags deepep = a2a();
  deepep.mode = ForwardMode::kExtend;
  expectHolds(
      mustBuild(gqa(twoStageCase("*-*E", {.tp = 4, .attn_cp = 2, .moe_ep = 4}, {130}, deepep))));
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
  const Plan plan =
      mustBuild(gqa(twoStageCase("*-*E*E", {.tp = 4, .attn_cp = 2, .moe_dp = 2}, {130}, extend())));
  EXPECT_EQ(plan.cp_layout, CpLayout::kZigzag);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(kindsAt(plan, r, 1, Phase::kEntry),
              (std::vector<OpKind>{OpKind::kArAddNorm, OpKind::kAllGather}))
        << r;
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
  identical(gqa(
      twoStageCase("*-*E", {.tp = 8, .attn_cp = 2, .moe_ep = 4, .moe_dp = 2}, {133}, extend())));
  identical(gqa(twoStageCase("*E/*E", {.tp = 2, .attn_cp = 2}, {129}, extend())));
  // A wrong take-back block shows in the output.
  const Case c = gqa(twoStageCase("*E*E", {.tp = 4, .attn_cp = 2}, {131}, extend()));
  const NumericRun run = runPlanNumeric(wrongTakeBack(c, 2, 0), numeric::Mode::kExact, {});
  EXPECT_FALSE(compareOutputs(runReference(c, numeric::Mode::kExact, {}), run.output).identical);
}

}  // namespace
}  // namespace seam
