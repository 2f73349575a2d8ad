// Calls SGLang makes that cannot do what the boundary needs, modelled as
// the engine makes them so that the properties find them. Expected plans
// from SGLang's code, not from seam:
// - layers/communicator/fusions/allreduce.py @060c48f7 (complete_attention_input)
//   completes a sum left for an attention input with
//   forward_with_allreduce_fusion(use_attn_tp_group=False) when the owed
//   group is post_experts_reduction_group(); layers/flashinfer_comm_fusion.py
//   @00f6ebe5 (ensure_workspace_initialized) then runs the kernel on the MoE
//   EP group's workspace when moe_ep > 1, else the MoE TP group's. At tp 4,
//   ep 2 the owed group is the whole TP group (the EP and MoE-TP reductions
//   merge), so the kernel sums 2 of the 4 partial sums.
// - layers/communicator/ops.py @0bca4c6f (_reduce_and_redistribute_output_varlen)
//   calls tp_group.reduce_scatterv with sizes=get_dp_global_num_tokens(), one
//   per attention-DP rank; distributed/parallel_state.py @0005973a
//   (GroupCoordinator.reduce_scatterv) asserts len(sizes) == world_size.
// - models/nemotron_h_mtp.py @008b79d2 (NemotronHMTPMoEDecoderLayer.forward)
//   all-reduces an attention layer's output over attention TP under DP
//   attention before NemotronHMoEDecoderLayer.forward, whose prepare_mlp
//   (models/nemotron_h.py @02c60328) completes the same sum again.
// - batch_overlap/two_batch_overlap.py @0099dee6 (TboForwardBatchPreparer.
//   filter_batch) gives each TBO child global_dp_buffer_len None (its own
//   token range, end - start, under moe_dense_tp_size 1) and no global token
//   list; batch_overlap/operations.py @04bb08ae (_StageExecutor.next)
//   publishes that with set_dp_buffer_len before every stage; the DeepSeek
//   layer's op_comm_prepare_mlp then gathers the FFN input over DP
//   (layers/layer_boundary/ops.py @01b5f572, dp_gather ->
//   get_global_dp_buffer), torch.empty of None rows (layers/dp_attention.py
//   @00161092).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "seam/properties/call_arguments.h"
#include "seam/properties/engine_finding.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam {
namespace {

using seam::testing::expectHolds;
using seam::testing::findOp;
using seam::testing::firstViolation;
using seam::testing::mustBuild;
using seam::testing::patternCase;
using seam::testing::twoStageCase;

// `E*`: the MoE defers its sum, the attention's entry completes it fused.
constexpr int kAttentionStage = 1;

TEST(AttentionInputFusion, RunsOnTheMoeEpGroupsWorkspaceWhenEpIsMoreThanOne) {
  const Plan plan = mustBuild(patternCase("E*", {.tp = 4, .moe_ep = 2}, {4}));
  const int i = findOp(plan, 0, kAttentionStage, Phase::kEntry, OpKind::kArAddNorm);
  ASSERT_GE(i, 0);
  EXPECT_EQ(plan.ranks[0][i].groupAxis(), Axis::kMoeEp);
  EXPECT_EQ(plan.ranks[0][i].site, EngineSite::kAttentionInputFusion);
}

TEST(AttentionInputFusion, RunsOnTheMoeTpGroupsWorkspaceAtEpOne) {
  // There the MoE TP group is the whole TP group, the owed one (a plan names
  // it as the owed group), so the case holds.
  const Plan plan = mustBuild(patternCase("E*", {.tp = 4}, {4}));
  const int i = findOp(plan, 0, kAttentionStage, Phase::kEntry, OpKind::kArAddNorm);
  ASSERT_GE(i, 0);
  EXPECT_EQ(plan.ranks[0][i].groupAxis(), Axis::kMoeTp);
  expectHolds(plan);
}

TEST(AttentionInputFusion, LeavesHalfTheSumUncompletedAtTp4Ep2AndIsAnEngineFinding) {
  const Plan plan = mustBuild(patternCase("E*", {.tp = 4, .moe_ep = 2}, {4}));
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  const std::string site = properties::engineFindingSite(plan, v);
  EXPECT_NE(site.find("complete_attention_input"), std::string::npos) << site;
}

TEST(AttentionInputFusion, AtTp4Ep2TheEngineComputesOtherValuesThanTheSingleRankModel) {
  // A second witness, numeric: the exact-mode executor runs the plan as the
  // engine would and its output is not the reference's.
  const Case c = patternCase("E*", {.tp = 4, .moe_ep = 2}, {4});
  const NumericRun run = runPlanNumeric(mustBuild(c), numeric::Mode::kExact, {});
  ASSERT_TRUE(run.ran());
  EXPECT_FALSE(compareOutputs(runReference(c, numeric::Mode::kExact, {}), run.output).identical);
}

TEST(AttentionInputFusion, WithoutTheFusedKernelTheSameCaseHolds) {
  Flags unfused;
  unfused.fusion = false;
  expectHolds(mustBuild(patternCase("E*", {.tp = 4, .moe_ep = 2}, {4}, unfused)));
}

Flags rsv() {
  Flags f;
  f.reduction = BoundaryReduction::kRsv;
  return f;
}

TEST(DpReduceScatterv, IsPassedOneSizePerDpShard) {
  const Plan plan =
      mustBuild(patternCase("*E*", {.tp = 2, .attn_dp = 2, .moe_ep = 2}, {3, 5}, rsv()));
  int found = 0;
  for (const Op& op : plan.ranks[0]) {
    if (op.kind != OpKind::kReduceScatterv) continue;
    ++found;
    EXPECT_EQ(op.sizes, SplitSizes::kPerDpShard);
    EXPECT_EQ(op.site, EngineSite::kDpReduceScatterv);
  }
  EXPECT_GT(found, 0);
}

TEST(DpReduceScatterv, FitsItsGroupWhenEveryDpShardIsOneRank) {
  const Plan plan =
      mustBuild(patternCase("*E*", {.tp = 2, .attn_dp = 2, .moe_ep = 2}, {3, 5}, rsv()));
  EXPECT_TRUE(properties::checkCallArguments(plan).empty());
  expectHolds(plan);
}

TEST(DpReduceScatterv, CannotRunUnderAttentionTpAndIsAnEngineFinding) {
  // tp 4 = attn_dp 2 x attn_tp 2; should_use_dp_reduce_scatterv holds (ep == attn_dp).
  const Plan plan =
      mustBuild(patternCase("*E*", {.tp = 4, .attn_dp = 2, .moe_ep = 2}, {3, 5}, rsv()));
  const std::vector<Violation> found = properties::checkCallArguments(plan);
  ASSERT_EQ(found.size(), 1u);  // one call site
  const Violation& v = found.front();
  EXPECT_EQ(v.property, Property::kCollectivesMatch);
  EXPECT_EQ(v.op, OpKind::kReduceScatterv);
  EXPECT_NE(v.detail.find("tp (4 ranks) is passed 2 sizes"), std::string::npos) << v.detail;
  EXPECT_EQ(firstViolation(plan).property, Property::kCollectivesMatch);
  const std::string site = properties::engineFindingSite(plan, v);
  EXPECT_NE(site.find("_reduce_and_redistribute_output_varlen"), std::string::npos) << site;
}

TEST(DpReduceScatterv, WritesEveryRankTheLongestEntryUnderMaxLenAndItsOwnUnderSumLen) {
  // prepare_mlp_sync_batch (forward_batch_info.py @003bbaf9): under MAX_LEN
  // get_dp_global_num_tokens() is [max] * dp, so member i's split is 5 rows
  // (its tokens, then padding); under SUM_LEN it is each shard's own count.
  Flags sum_len = rsv();
  sum_len.dp_padding = DpPadding::kSumLen;
  sum_len.mode = ForwardMode::kExtend;
  for (const auto& [flags, want] :
       {std::pair{rsv(), std::vector<int>{5, 5}}, std::pair{sum_len, std::vector<int>{3, 5}}}) {
    const Plan plan =
        mustBuild(patternCase("*E*", {.tp = 2, .attn_dp = 2, .moe_ep = 2}, {3, 5}, flags));
    for (int r = 0; r < 2; ++r) {
      const int i = findOp(plan, r, 2, Phase::kEntry, OpKind::kReduceScatterv);
      ASSERT_GE(i, 0);
      EXPECT_EQ(plan.ranks[r][i].rows_in.count, want[0] + want[1]);
      EXPECT_EQ(plan.ranks[r][i].rows_out.count, want[r]) << "rank " << r;
    }
    expectHolds(plan);
  }
}

// models/nemotron_h_mtp.py @008b79d2 (NemotronHMTPMoEDecoderLayer.forward):
// under DP attention, after an attention layer, the MTP MoE layer runs
// attn_tp_all_reduce itself; the communicator's FFN input (prepare_mlp,
// models/nemotron_h.py @02c60328) then reduces the same attention-TP sum.
TEST(MtpMoeAttnTpAllReduce, SumsTheAttentionOutputTwiceUnderAttentionTpAndIsAnEngineFinding) {
  Flags ar;
  ar.reduction = BoundaryReduction::kAr;
  const Plan plan = mustBuild(patternCase("M-/*E", {.tp = 4, .attn_dp = 2}, {2, 2}, ar));
  int own = 0;
  for (const Op& op : plan.ranks[0]) {
    if (op.stack != 1 || op.stage != 1 || op.kind != OpKind::kAllReduce) continue;
    if (op.phase == Phase::kEntry) own += op.site == EngineSite::kMtpMoeAttnTpAllReduce;
  }
  EXPECT_EQ(own, 1);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kCountedTwice);
  const std::string site = properties::engineFindingSite(plan, v);
  EXPECT_NE(site.find("NemotronHMTPMoEDecoderLayer.forward"), std::string::npos) << site;
}

TEST(MtpMoeAttnTpAllReduce, IsNoCallOnAOneRankAttentionTpGroup) {
  Flags ar;
  ar.reduction = BoundaryReduction::kAr;
  const Plan plan = mustBuild(patternCase("M-/*E", {.tp = 2, .attn_dp = 2}, {2, 2}, ar));
  for (const Op& op : plan.ranks[0]) EXPECT_NE(op.site, EngineSite::kMtpMoeAttnTpAllReduce);
  expectHolds(plan);
}

// layers/layer_boundary/ops.py @51c248bd (attn_tp_reduce_scatter) takes this
// rank's output chunk by tensor_split over attn_tp and reduce-scatters into
// it; layers/cp/padding.py @9fea3e9b (pad_logical_token_to_physical) aligns a
// zigzag CP shard to 2 x attn_cp only. 131 tokens over attn_cp 2: each CP
// rank holds ceil(66 / 4) * 4 = 68 rows, and tensor_split gives attn_tp 8
// ranks chunks of 9 and 8.
Case cpShardOverAttnTp8() {
  Flags f;
  f.dense_tp1 = true;
  f.mode = ForwardMode::kExtend;
  return seam::testing::twoStageCase("*-", {.tp = 16, .attn_cp = 2}, {131}, f);
}

TEST(AttnTpReduceScatter, TakesTensorSplitsChunkOfACpShard) {
  const Plan plan = mustBuild(cpShardOverAttnTp8());
  int found = 0;
  for (const Op& op : plan.ranks[0]) {
    if (op.kind != OpKind::kReduceScatter || op.groupAxis() != Axis::kAttnTp) continue;
    ++found;
    EXPECT_EQ(op.site, EngineSite::kAttnTpReduceScatter);
    EXPECT_EQ(op.rows_in.count, 68);
    EXPECT_EQ(op.rows_out.count, 9);
  }
  EXPECT_GT(found, 0);
}

TEST(AttnTpReduceScatter, OfUnequalChunksIsAnEngineFinding) {
  const Plan plan = mustBuild(cpShardOverAttnTp8());
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kCollectivesMatch);
  const std::string site = properties::engineFindingSite(plan, v);
  EXPECT_NE(site.find("attn_tp_reduce_scatter"), std::string::npos) << site;
}

// `seam check` judges every property (Depth::kAll) and so also sees what the
// unequal reduce-scatter's rows do later (a foreign term at the next compute,
// property 2); the violation it names first is still the cause a sweep names,
// so that a sweep's reproduce line shows the same engine finding.
TEST(AttnTpReduceScatter, SeamCheckNamesTheSameFirstViolationAsASweep) {
  const Plan plan = mustBuild(cpShardOverAttnTp8());
  Ledger ledger;
  const auto all = properties::checkPlan(plan, ledger, properties::Depth::kAll);
  const auto first = properties::checkPlan(plan, ledger, properties::Depth::kFirst);
  ASSERT_TRUE(all.firstViolation() && first.firstViolation());
  EXPECT_EQ(all.firstViolation()->property, Property::kCollectivesMatch);
  EXPECT_EQ(all.firstViolation()->op, OpKind::kReduceScatter);
  EXPECT_EQ(describeViolation(*all.firstViolation()), describeViolation(*first.firstViolation()));
}

Flags tboWithoutA2a(ForwardMode mode) {
  Flags f;
  f.tbo = true;
  f.mode = mode;
  return f;
}

TEST(TboDpGather, AHalfsFfnGatherIsPassedNoGlobalBufferAndIsAnEngineFinding) {
  for (ForwardMode mode : {ForwardMode::kDecode, ForwardMode::kExtend}) {
    const Plan plan =
        mustBuild(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2}, {4, 4}, tboWithoutA2a(mode)));
    int whole = 0, halves = 0;
    for (const Op& op : plan.ranks[0]) {
      if (op.kind != OpKind::kDpGatherPartial && op.kind != OpKind::kDpGatherReplicate) continue;
      if (op.half == Half::kWhole) {
        ++whole;
        EXPECT_EQ(op.dp_buffer, DpBuffer::kGathered);
      } else {
        ++halves;
        EXPECT_EQ(op.dp_buffer, DpBuffer::kUnset);
        EXPECT_EQ(op.site, EngineSite::kTboDpGather);
      }
    }
    EXPECT_EQ(whole, 1);   // the dense layer before the range
    EXPECT_EQ(halves, 4);  // two sparse layers, each half
    const Violation v = firstViolation(plan);
    EXPECT_EQ(v.property, Property::kCollectivesMatch);
    EXPECT_EQ(plan.ranks[v.rank][v.op_index].half, Half::kA);  // child A runs first
    const std::string site = properties::engineFindingSite(plan, v);
    EXPECT_NE(site.find("get_global_dp_buffer"), std::string::npos) << site;
  }
}

TEST(TboDpGather, UnderFullyDpDenseFfnsIsPassedTheHalfsOwnRangeAndStillCannotRun) {
  Flags f = tboWithoutA2a(ForwardMode::kDecode);
  f.dense_tp1 = true;
  const Plan plan = mustBuild(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2}, {4, 4}, f));
  const auto found = properties::checkCallArguments(plan);
  ASSERT_FALSE(found.empty());
  const Op& op = plan.ranks[found.front().rank][found.front().op_index];
  EXPECT_EQ(op.dp_buffer, DpBuffer::kChildRows);
}

TEST(TboDpGather, LeavesDeepEpHalvesAndTheLegacyPolicyAlone) {
  // DeepEP halves run the MoE on local rows: no DP gather in a half.
  Flags deepep = tboWithoutA2a(ForwardMode::kDecode);
  deepep.a2a = A2aBackend::kDeepep;
  expectHolds(
      mustBuild(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {4, 4}, deepep)));
  // The parent-era stage executor kept the parent's buffer when the child's
  // length was None (the guard sglang PR #13730 removed).
  const Plan legacy = mustBuild(
      twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2}, {4, 4}, tboWithoutA2a(ForwardMode::kDecode)),
      PolicyKind::kLegacy);
  EXPECT_TRUE(properties::checkCallArguments(legacy).empty());
}

TEST(EngineFinding, OnlyTheDeclaredPolicyWithNothingPlantedModelsTheEngineAsRun) {
  EXPECT_TRUE(properties::modelsEngineAsRun(PolicyKind::kDeclared, {}));
  EXPECT_FALSE(properties::modelsEngineAsRun(PolicyKind::kLegacy, {}));
  EXPECT_FALSE(properties::modelsEngineAsRun(PolicyKind::kNaive, {}));
  EXPECT_FALSE(properties::modelsEngineAsRun(PolicyKind::kDeclared,
                                             Schema::with(Decision::kTerminalDefers)));
}

TEST(EngineFinding, ItsWordsSplitBackIntoTheViolationAndTheCall) {
  Violation v;
  v.detail = "a sum never completed";
  const std::string plain = properties::failureText(v, "");
  EXPECT_FALSE(properties::isEngineFinding(plain));
  const std::string finding = properties::failureText(v, "f() at x.py (f) @abc");
  EXPECT_TRUE(properties::isEngineFinding(finding));
  const auto [violation, call] = properties::splitFailureText(finding);
  EXPECT_EQ(violation, plain);
  EXPECT_EQ(call, "f() at x.py (f) @abc");
}

}  // namespace
}  // namespace seam
