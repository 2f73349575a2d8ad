// Two-batch overlap (sim/include/seam/sim/tbo.h; research note B1-B9): the
// split of each DP shard, the layer range, the engine's issue order of the
// halves' chunks, the refusals with SGLang's reasons, the split and merge
// ops of a plan (a batch held whole by attention-CP replicas included), the
// properties on TBO plans (both ledger domains and the numeric executor),
// and hand-made wrong TBO plans caught with the right violation class.
#include "seam/sim/plan/tbo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "case_builders.h"
#include "reference_check.h"
#include "seam/properties/check.h"
#include "seam/properties/engine_finding.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam {
namespace {

using seam::testing::firstViolationInBothDomains;
using seam::testing::mustBuild;
using seam::testing::twoStageCase;

Flags tbo(A2aBackend a2a = A2aBackend::kDeepep, ForwardMode mode = ForwardMode::kDecode) {
  Flags f;
  f.a2a = a2a;
  f.mode = mode;
  f.tbo = true;
  return f;
}

/// TBO flags under MLA prefill CP: deepep and a fully-DP dense FFN, as
/// _deepseek_family_overrides sets them (with ep = tp and attn_tp = 1).
Flags cpTboFlags(ForwardMode mode = ForwardMode::kDecode) {
  Flags f = tbo(A2aBackend::kDeepep, mode);
  f.dense_tp1 = true;
  return f;
}

std::string refusal(const Case& c) {
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  EXPECT_FALSE(plan.hasValue());
  return plan.hasValue() ? "" : plan.status().message();
}

// ---- split, halves, layer range, issue order -----------------------------------

TEST(TboSplit, RunsTheDeepSeekLayerRangeOfAPipelineStage) {
  // fkdr inside (start, end): the sparse layers; fkdr before start: the
  // engine's [0, end), PPMissingLayers first (the policy refuses it).
  EXPECT_EQ(tboLayers(3, 0, 61).first, 3);
  EXPECT_EQ(tboLayers(3, 0, 61).last, 61);
  EXPECT_EQ(tboLayers(3, 30, 61).first, 0);
  EXPECT_EQ(tboLayers(3, 30, 61).last, 61);
  // fkdr == start or fkdr >= end: the whole batch (DeepseekV2Model.forward).
  EXPECT_TRUE(tboLayers(0, 0, 4).empty());
  EXPECT_TRUE(tboLayers(4, 0, 4).empty());
}

TEST(TboSplit, IssuesADeltaOfChildAThenAlternatesThenEndsWithChildB) {
  auto ops = [](Half half, int chunks) {
    std::vector<Op> out(chunks);
    for (int i = 0; i < chunks; ++i) {
      out[i].half = half;
      out[i].layer = static_cast<std::int16_t>(i);
    }
    return out;
  };
  std::vector<int> chunk = {0, 1, 2, 3, 4};
  std::vector<Op> out;
  interleaveHalves(ops(Half::kA, 5), chunk, ops(Half::kB, 5), chunk, 5, 2, &out);
  std::string order;
  for (const Op& op : out) order += std::string(halfName(op.half)) + std::to_string(op.layer) + " ";
  EXPECT_EQ(order, "A0 A1 A2 B0 A3 B1 A4 B2 B3 B4 ");
  // _compute_moe_deepseek_blog_decode (operations_strategy.py @0e02cef9) yields
  // after attn.op_prepare, select_experts, shared_experts, combine_a and
  // combine_b (the layer output runs a chunk later, with the next layer's
  // first); prefill after dispatch_a and combine_a.
  const TboSchedule decode = tboSchedule(ForwardMode::kDecode);
  EXPECT_EQ(decode.delta, 2);
  EXPECT_EQ(decode.yields_per_layer, 5);
  EXPECT_EQ((std::vector<int>{decode.core, decode.dispatch, decode.experts}),
            (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(tboSchedule(ForwardMode::kExtend).delta, 0);
  EXPECT_EQ(tboSchedule(ForwardMode::kExtend).yields_per_layer, 2);
}

// ---- refusals ---------------------------------------------------------------

TEST(TboRefusal, WithoutAnAllToAllBackendOrDpAttentionIsSGLangsValueError) {
  const std::string why = refusal(twoStageCase("*-*E*E", {.tp = 4}, {4}, tbo(A2aBackend::kNone)));
  EXPECT_NE(why.find("ValueError"), std::string::npos) << why;
}

TEST(TboRefusal, OfLayersWithoutATboStrategyNamesTheModel) {
  Case nemotron;
  nemotron.model = *modelFromPreset(**findPreset("nemotron-3-nano"));
  nemotron.config = {.tp = 2, .moe_ep = 2};
  nemotron.batch.tokens = {4};
  nemotron.flags = tbo();
  EXPECT_NE(refusal(nemotron).find("NotImplementedError for nemotron-3-nano"), std::string::npos);
  Case next = nemotron;
  next.model = *modelFromPreset(**findPreset("qwen3-next-80b-a3b"));
  EXPECT_NE(refusal(next).find("qwen3-next-80b-a3b"), std::string::npos);
}

TEST(TboRefusal, OfADenseLayerInsideTheRangeIsDeepSeeksAssert) {
  const std::string why = refusal(twoStageCase("*-*E*-", {.tp = 2, .moe_ep = 2}, {4}, tbo()));
  EXPECT_NE(why.find("dense layer TBO not yet implemented"), std::string::npos) << why;
  EXPECT_NE(why.find("layer 2"), std::string::npos) << why;
}

TEST(TboRefusal, OfInputScatteredAttentionSaysTboTurnsItOff) {
  Flags f = tbo();
  f.input_scattered = true;
  f.mode = ForwardMode::kExtend;
  const std::string why = refusal(twoStageCase("*-*E", {.tp = 2, .moe_ep = 2}, {4}, f));
  EXPECT_NE(why.find("can_run_tbo"), std::string::npos) << why;
}

TEST(TboRefusal, OfAPipelineStageStartingAfterTheFirstSparseLayerIsInitNewTbosNotImplementedError) {
  // pp 2 splits 4 layers 2 + 2: stage 1 starts at layer 2 > fkdr 1, so
  // DeepseekV2Model.forward hands layers [0, 4) to the TBO path.
  const std::string why =
      refusal(twoStageCase("*-*E*E*E", {.pp = 2, .tp = 2, .moe_ep = 2}, {4}, tbo()));
  EXPECT_FALSE(isNotModelled(why)) << why;
  EXPECT_NE(why.find("PPMissingLayer"), std::string::npos) << why;
  EXPECT_NE(why.find("NotImplementedError"), std::string::npos) << why;
}

TEST(TboRefusal, OfACaptureInsideTheRangeSaysOnlyTheWholeBatchLoopCaptures) {
  Flags f = tbo();
  f.capture = {2};  // before layer 1, the first TBO layer
  const std::string why = refusal(twoStageCase("*-*E*E", {.tp = 2, .moe_ep = 2}, {4}, f));
  EXPECT_FALSE(isNotModelled(why)) << why;
  EXPECT_NE(why.find("whole-batch layer loop"), std::string::npos) << why;
}

// ---- the plan ---------------------------------------------------------------

TEST(TboPlan, SplitsOnceBeforeTheFirstSparseLayerAndMergesBeforeTheFinalNorm) {
  const Plan plan =
      mustBuild(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {3, 2}, tbo()));
  EXPECT_EQ(plan.tbo_split, (std::vector<int>{1, 1}));
  const std::vector<Op>& ops = plan.ranks[0];
  std::vector<const Op*> moves;
  for (const Op& op : ops) {
    if (op.tbo_move) moves.push_back(&op);
    // The dense layer and the final norm run on the whole batch, the sparse layers per half.
    if (!op.tbo_move) {
      EXPECT_EQ(op.half == Half::kWhole, op.layer == 0 || op.stage == 6) << op.stage;
    }
  }
  // Child A's hidden state and residual split, then child B's
  // (_model_forward_filter_inputs; attention rows: keep, keep), hidden
  // merged (the last a2a layer folds its residual in before the gather).
  // Rows: MAX_LEN pads both shards to 4 (3 aligned to attn_tp 2); the cut at
  // 1 leaves A ceil(1 / 2) * 2 = 2 rows and B ceil(3 / 2) * 2 = 4
  // (filter_batch's tbo_padded_len, two_batch_overlap.py @0099dee6).
  ASSERT_EQ(moves.size(), 6u);
  EXPECT_EQ(moves[0]->kind, OpKind::kSlice);
  EXPECT_EQ(moves[0]->stage, 2);
  EXPECT_EQ(moves[0]->rows_in.count, 4);
  EXPECT_EQ(moves[0]->rows_out.count, 2);
  EXPECT_EQ(moves[1]->half, Half::kA);
  EXPECT_EQ(moves[1]->tensor, Tensor::kResidual);
  EXPECT_EQ(moves[2]->half, Half::kB);
  EXPECT_EQ(moves[2]->rows_out.count, 4);
  EXPECT_EQ(moves[4]->kind, OpKind::kAdd);
  EXPECT_EQ(moves[4]->rows_in.count, 2);
  EXPECT_EQ(moves[4]->rows_out.count, 4);
  EXPECT_EQ(ops.back().kind, OpKind::kNorm);
  EXPECT_EQ(ops.back().half, Half::kWhole);
  // Child A runs two chunks ahead in decode: its first collective comes
  // before any op of child B.
  const auto first_b = std::find_if(
      ops.begin(), ops.end(), [](const Op& op) { return op.half == Half::kB && !op.tbo_move; });
  const auto first_a_coll = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
    return op.half == Half::kA && communicates(op.kind);
  });
  EXPECT_LT(first_a_coll - ops.begin(), first_b - ops.begin());
}

TEST(TboPlan, HandsAFullyDpDenseLayersOutputOnAttentionRowsOnceTboIsOn) {
  Flags f = tbo();
  f.dense_tp1 = true;
  const Plan with = mustBuild(twoStageCase("*-*E", {.tp = 4, .moe_ep = 4}, {4}, f));
  f.tbo = false;
  const Plan without = mustBuild(twoStageCase("*-*E", {.tp = 4, .moe_ep = 4}, {4}, f));
  EXPECT_EQ(with.boundaries[2].exit.rows, RowKind::kAttention);  // dense FFN (stage 1) -> stage 2
  EXPECT_FALSE(with.boundaries[2].exit.residual);
  EXPECT_EQ(without.boundaries[2].exit.rows, RowKind::kLocal);
}

TEST(TboPlan, RunsTheWholeBatchWhenTheRangeIsEmpty) {
  // fkdr == 0 (every layer sparse): DeepseekV2Model.forward runs no TBO.
  const Plan plan = mustBuild(twoStageCase("*E*E", {.tp = 2, .moe_ep = 2}, {4}, tbo()));
  EXPECT_TRUE(plan.tbo_split.empty());
  for (const Op& op : plan.ranks[0]) EXPECT_EQ(op.half, Half::kWhole);
}

TEST(TboPlan, RunsTheHalvesOnTheLastPipelineStageOnlyAndMergesBeforeTheFinalNorm) {
  // Layers 0-1 | 2-4, fkdr 3: stage 0 runs whole and sends the whole batch;
  // stage 1 receives it, runs layer 2 whole, splits before layer 3.
  const Plan plan =
      mustBuild(twoStageCase("*-*-|*-*E*E", {.pp = 2, .tp = 2, .moe_ep = 2}, {5}, tbo()));
  EXPECT_EQ(plan.tbo_split, (std::vector<int>{2}));
  for (const Op& op : plan.ranks[0]) EXPECT_EQ(op.half, Half::kWhole);
  const auto sends = [](const Op& op) { return op.kind == OpKind::kSend; };
  EXPECT_TRUE(std::any_of(plan.ranks[0].begin(), plan.ranks[0].end(), sends));
  const std::vector<Op>& ops = plan.ranks[2];
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops.front().kind, OpKind::kRecv);
  EXPECT_EQ(ops.front().half, Half::kWhole);
  const auto split = std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.tbo_move; });
  ASSERT_NE(split, ops.end());
  EXPECT_EQ(split->kind, OpKind::kSlice);
  EXPECT_EQ(split->stage, 6);
  for (auto it = ops.begin(); it != split; ++it) EXPECT_EQ(it->half, Half::kWhole);
  const auto crossesACut = [](const Op& op) {
    return op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
  };
  EXPECT_FALSE(std::any_of(split, ops.end(), crossesACut));
  EXPECT_EQ(ops.back().kind, OpKind::kNorm);
  EXPECT_EQ(ops.back().half, Half::kWhole);
}

TEST(TboPlan, KeepsACpShardedBatchWholeLikeTheEnginesRuntimeGate) {
  // No dense layer, so no moe_dense_tp_size to set (a fully-DP dense layer changes hands under
  // TBO).
  Flags f = tbo(A2aBackend::kDeepep, ForwardMode::kExtend);
  const Case c = twoStageCase("*E*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {6}, f);
  const Plan plan = mustBuild(c);
  EXPECT_TRUE(plan.tbo_split.empty());
  for (const Op& op : plan.ranks[0]) EXPECT_EQ(op.half, Half::kWhole);
  f.tbo = false;
  Case plain = c;
  plain.flags = f;
  EXPECT_EQ(plan.ranks, mustBuild(plain).ranks);
}

// A batch that is not CP-sharded under attn_cp > 1 (decode): every rank of
// an attn_cp group holds the DP shard's rows whole (token_axis_sizes with
// cp_active False), so each replica splits it at the same token and runs the
// halves as the ranks of an attn_tp group do (research note B7).
TEST(TboPlan, SplitsADecodeBatchEveryCpReplicaHoldsWholeTheSameWayOnEachReplica) {
  // tp 4, attn_cp 4 (attn_tp 1, as MLA prefill CP runs): one attn_cp group {0,1,2,3}.
  const Case c = twoStageCase("*-*E*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, {5}, cpTboFlags());
  const Plan plan = mustBuild(c);
  EXPECT_EQ(plan.tbo_split, (std::vector<int>{2}));
  EXPECT_EQ(plan.cp_layout, CpLayout::kReplicated);
  // The replicas issue the same program.
  for (int r = 1; r < 4; ++r) EXPECT_EQ(plan.ranks[0], plan.ranks[r]) << r;
  int splits = 0, halves_ops = 0;
  for (const Op& op : plan.ranks[2]) {
    // No CP move: nothing is gathered or reduced over attn_cp.
    EXPECT_NE(op.axis, static_cast<std::int8_t>(Axis::kAttnCp)) << opName(op.kind);
    if (op.tbo_move && op.kind == OpKind::kSlice && op.tensor == Tensor::kHidden) {
      // The split cuts the 5 attention rows the replica holds: 2 for A, 3 for B.
      EXPECT_EQ(op.rows_in.count, 5);
      EXPECT_EQ(op.rows_out.count, op.half == Half::kA ? 2 : 3);
      ++splits;
    }
    if (op.half != Half::kWhole && !op.tbo_move) {
      ++halves_ops;
      // The halves' all-to-all runs over moe_ep == tp, both replicas inside.
      if (op.kind == OpKind::kAllToAll) {
        EXPECT_EQ(groupMembers(c.config, op.groupAxis(), 2), (std::vector<int>{0, 1, 2, 3}));
      }
    }
  }
  EXPECT_EQ(splits, 2);
  EXPECT_GT(halves_ops, 0);
  // The same case without the flag runs the sparse layers on the batch.
  Case plain = c;
  plain.flags.tbo = false;
  EXPECT_TRUE(mustBuild(plain).tbo_split.empty());
}

TEST(TboPlan, UnderDpAttentionAndCpEveryFfnOfAHalfRunsOnItsOwnRowsAsTheEngineConfiguresMlaCp) {
  // tp 4, attn_dp 2, attn_cp 2 (attn_tp 1): _deepseek_family_overrides runs
  // the MoE on deepep with ep = tp and the dense FFN fully DP, so no half
  // gathers over DP or CP; the same case with a2a none is refused at start-up.
  const Case c = twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4}, {3, 2},
                              cpTboFlags());
  const Plan plan = mustBuild(c);
  EXPECT_EQ(plan.tbo_split, (std::vector<int>{1, 1}));
  for (const Op& op : plan.ranks[1]) {
    EXPECT_NE(op.kind, OpKind::kDpGatherReplicate);
    EXPECT_NE(op.axis, static_cast<std::int8_t>(Axis::kAttnCp)) << opName(op.kind);
  }
  EXPECT_TRUE(Ledger().replay(plan, LedgerOptions{.exact = true}).holds());
  Case asked = c;
  asked.flags = tbo(A2aBackend::kNone);
  asked.config.moe_ep = 1;
  EXPECT_NE(
      refusal(asked).find(
          "_deepseek_family_overrides runs MLA prefill CP only with --moe-a2a-backend deepep"),
      std::string::npos);
}

// ---- properties on TBO plans ----------------------------------------------------

std::vector<Case> tboCases() {
  std::vector<Case> out;
  for (ForwardMode mode : {ForwardMode::kDecode, ForwardMode::kExtend}) {
    out.push_back(
        twoStageCase("*-*E*E", {.tp = 4, .moe_ep = 4}, {5}, tbo(A2aBackend::kDeepep, mode)));
    out.push_back(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {3, 2},
                               tbo(A2aBackend::kDeepep, mode)));
    out.push_back(
        twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2}, {3, 0}, tbo(A2aBackend::kNone, mode)));
    out.push_back(twoStageCase("*-*E*E", {.tp = 8, .attn_dp = 4, .moe_ep = 2}, {1, 4, 0, 3},
                               tbo(A2aBackend::kNone, mode)));
    out.push_back(twoStageCase("*-*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {1, 1},
                               tbo(A2aBackend::kDeepep, mode)));
    Flags dense_dp = tbo(A2aBackend::kDeepep, mode);
    dense_dp.dense_tp1 = true;
    out.push_back(twoStageCase("*-*E*E", {.tp = 4, .moe_ep = 4}, {6}, dense_dp));
  }
  // pp 2, the halves on the last stage; a capture before the range.
  out.push_back(twoStageCase("*-*-|*-*E*E", {.pp = 2, .tp = 2, .moe_ep = 2}, {5}, tbo()));
  out.push_back(twoStageCase("*-*-|*-*E*E", {.pp = 2, .tp = 4, .attn_dp = 2}, {3, 2},
                             tbo(A2aBackend::kNone)));
  Flags capture = tbo();
  capture.capture = {2};
  out.push_back(twoStageCase("*-*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {3, 2}, capture));
  Flags rs = tbo(A2aBackend::kNone);
  rs.reduction = BoundaryReduction::kRsRsv;
  // attn_tp 1: the engine's reduce_scatterv (one size per DP shard) fits the
  // TP group; under attn_tp > 1 it cannot run (engine_findings_test.cc).
  out.push_back(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 4, .moe_ep = 4}, {3, 2, 1, 2}, rs));
  return out;
}

/// A declared half under DP attention without an a2a backend gathers its FFN
/// input into the child batch's global DP buffer, which the engine leaves
/// unset (engine_findings_test.cc): property 4's engine finding, first.
bool gathersWithoutABuffer(const Case& c, PolicyKind policy) {
  return policy == PolicyKind::kDeclared && c.flags.a2a == A2aBackend::kNone &&
         c.config.attn_dp > 1;
}

TEST(TboProperties, HoldOnTboPlansInBothLedgerDomainsUnderEveryPolicy) {
  Ledger ledger;
  for (const Case& c : tboCases()) {
    for (PolicyKind policy : {PolicyKind::kDeclared, PolicyKind::kLegacy, PolicyKind::kNaive}) {
      SCOPED_TRACE(reproduceCommand(c, policyName(policy)));
      const Plan plan = mustBuild(c, policy);
      EXPECT_FALSE(plan.tbo_split.empty());
      const auto verdict = properties::checkPlan(plan, ledger);
      if (gathersWithoutABuffer(c, policy)) {
        ASSERT_TRUE(verdict.firstViolation().has_value());
        const Violation& v = *verdict.firstViolation();
        EXPECT_EQ(v.property, Property::kCollectivesMatch);
        EXPECT_NE(properties::engineFindingSite(plan, v).find("get_global_dp_buffer"),
                  std::string::npos);
      } else {
        EXPECT_TRUE(verdict.holds())
            << (verdict.firstViolation() ? verdict.firstViolation()->detail : "");
      }
      EXPECT_TRUE(ledger.replay(plan, LedgerOptions{.exact = true}).holds());
    }
  }
}

TEST(TboProperties, TheNumericExecutorRunsTboPlansBitIdenticalToTheReference) {
  const numeric::Shape shape{.hidden = 8, .inner = 16};
  for (const Case& c : tboCases()) {
    SCOPED_TRACE(reproduceCommand(c, "declared"));
    const Plan plan = mustBuild(c);
    const NumericRun run = runPlanNumeric(plan, numeric::Mode::kExact, shape);
    ASSERT_TRUE(run.ran()) << run.failures.front().detail;
    EXPECT_FALSE(run.ranks_disagree);
    const OutputDiff diff =
        compareOutputs(runReference(c, numeric::Mode::kExact, shape), run.output);
    EXPECT_TRUE(diff.identical) << diff.describe();
  }
}

/// TBO cases of a batch that is not CP-sharded under attn_cp > 1: decode
/// (and an extend batch too short to shard: fewer tokens than attn_cp),
/// with and without DP attention, an idle DP shard, attn_cp 2 and 4, pp 2,
/// sum_len padding; all as _deepseek_family_overrides runs MLA prefill CP
/// (deepep, ep = tp, fully-DP dense FFNs, attn_tp 1). The classic tables
/// under CP are not modelled, so these run under the declared and naive policies.
std::vector<Case> tboCpCases() {
  std::vector<Case> out;
  const Flags cp = cpTboFlags();
  out.push_back(twoStageCase("*-*E*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, {5}, cp));
  out.push_back(twoStageCase("*-*E*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {4}, cp));
  out.push_back(
      twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4}, {3, 2}, cp));
  out.push_back(
      twoStageCase("*-*E*E", {.tp = 8, .attn_dp = 2, .attn_cp = 4, .moe_ep = 8}, {3, 0}, cp));
  out.push_back(
      twoStageCase("*-*E*E", {.tp = 8, .attn_dp = 4, .attn_cp = 2, .moe_ep = 8}, {3, 1, 0, 2}, cp));
  out.push_back(twoStageCase("*-*E*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, {6}, cp));
  Flags sum_len = cp;
  sum_len.dp_padding = DpPadding::kSumLen;
  out.push_back(
      twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4}, {3, 2}, sum_len));
  out.push_back(twoStageCase("*-*E*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, {1},
                             cpTboFlags(ForwardMode::kExtend)));
  out.push_back(
      twoStageCase("*-*-|*-*E*E", {.pp = 2, .tp = 4, .attn_cp = 4, .moe_ep = 4}, {5}, cp));
  return out;
}

TEST(TboProperties,
     HoldOnTboPlansOverCpReplicasInBothLedgerDomainsAndRunBitIdenticalToTheReference) {
  Ledger ledger;
  for (const Case& c : tboCpCases()) {
    for (PolicyKind policy : {PolicyKind::kDeclared, PolicyKind::kNaive}) {
      SCOPED_TRACE(reproduceCommand(c, policyName(policy)));
      const Plan plan = mustBuild(c, policy);
      EXPECT_FALSE(plan.tbo_split.empty());
      EXPECT_EQ(plan.cp_layout, CpLayout::kReplicated);
      seam::testing::expectHoldsAndMatchesTheReference(c, plan);
      EXPECT_TRUE(ledger.replay(plan, LedgerOptions{.exact = true}).holds());
    }
  }
}

// ---- hand-made wrong TBO plans ------------------------------------------------------

/// Erases the first op of every rank that `pred` picks.
template <class Pred>
void eraseFirst(Plan& plan, Pred pred) {
  for (auto& ops : plan.ranks) {
    const auto it = std::find_if(ops.begin(), ops.end(), pred);
    if (it != ops.end()) ops.erase(it);
  }
}

Plan deepepTbo() {
  return mustBuild(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {3, 2}, tbo()));
}

TEST(TboLedger, CatchesAMergeThatDropsAHalfAsAnIncompleteOutput) {
  Plan plan = deepepTbo();
  eraseFirst(plan, [](const Op& op) {
    return op.tbo_move && op.kind == OpKind::kAdd && op.half == Half::kB;
  });
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOutputComplete);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
}

TEST(TboLedger, CatchesAHalfMergedBeforeItsAttentionTpGatherAsALayoutMismatch) {
  Plan plan = deepepTbo();
  // The last a2a layer of half A gathers its local rows back over attention
  // TP before the merge; without it the merge finds local rows.
  for (auto& ops : plan.ranks) {
    const auto merge = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
      return op.tbo_move && op.kind == OpKind::kAdd;
    });
    const auto gather =
        std::find_if(std::make_reverse_iterator(merge), ops.rend(), [](const Op& op) {
          return op.half == Half::kA && op.rows_in.kind == RowKind::kLocal &&
                 op.rows_out.kind == RowKind::kAttention;
        });
    ASSERT_NE(gather, ops.rend());
    ops.erase(std::next(gather).base());
  }
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kLayoutMismatch);
}

TEST(TboLedger, CatchesASplitWithoutTheResidualAsASumNeverCompleted) {
  Plan plan = deepepTbo();
  eraseFirst(plan, [](const Op& op) {
    return op.tbo_move && op.kind == OpKind::kSlice && op.tensor == Tensor::kResidual;
  });
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
}

TEST(TboLedger, CatchesOneRankIssuingTheHalvesInTheOtherOrderAsACollectiveMismatch) {
  // Equal halves (2 tokens a shard: one each): the calls agree in kind and
  // bytes, so only the half tells them apart.
  Plan plan =
      mustBuild(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {2, 2}, tbo()));
  auto& ops = plan.ranks[1];
  const auto a = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
    return op.half == Half::kA && op.kind == OpKind::kAllToAll;
  });
  const auto b = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
    return op.half == Half::kB && op.kind == OpKind::kAllToAll;
  });
  ASSERT_NE(a, ops.end());
  ASSERT_NE(b, ops.end());
  ASSERT_EQ(a->bytes, b->bytes);
  std::iter_swap(a, b);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kCollectivesMatch);
  EXPECT_EQ(v.cls, ViolationClass::kCollectiveMismatch);
  EXPECT_NE(v.detail.find("half"), std::string::npos) << v.detail;
  const auto sequences = properties::checkCollectiveSequences(plan);
  ASSERT_FALSE(sequences.empty());
  EXPECT_NE(sequences.front().detail.find("half"), std::string::npos) << sequences.front().detail;
}

TEST(TboLedger, CatchesAPipelinedPlanWhoseLastStageDropsHalfBsMergeAsAnIncompleteOutput) {
  Plan plan = mustBuild(twoStageCase("*-*-|*-*E*E", {.pp = 2, .tp = 2, .moe_ep = 2}, {5}, tbo()));
  eraseFirst(plan, [](const Op& op) {
    return op.tbo_move && op.kind == OpKind::kAdd && op.half == Half::kB;
  });
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOutputComplete);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
}

// Property 4 lowers a half's DP ops on the judges' split of the case, not on
// the plan's tbo_split field: a wrong field leaves it able to match the
// half's gathers (main before this read the field, found no buffer of the
// ops' rows and skipped every half's DP op, so a dropped one went unseen).
TEST(TboLedger, SeesAHalfsDroppedDpGatherWhenThePlansSplitFieldIsWrong) {
  Plan plan = mustBuild(
      twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .moe_ep = 4}, {5, 3}, tbo(A2aBackend::kNone)));
  ASSERT_FALSE(plan.tbo_split.empty());
  ASSERT_TRUE(properties::checkCollectiveSequences(plan).empty());
  // Half A as the whole batch: its buffer no longer has the rows the ops name.
  plan.tbo_split = plan.source.batch.tokens;
  auto& ops = plan.ranks[1];
  const auto gather = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
    return op.half == Half::kA && isDpOp(op.kind) && communicates(op.kind);
  });
  ASSERT_NE(gather, ops.end());
  ops.erase(gather);
  const auto mismatch = properties::checkCollectiveSequences(plan);
  ASSERT_FALSE(mismatch.empty());
  EXPECT_EQ(mismatch.front().cls, ViolationClass::kCollectiveMismatch);
}

// CP replicas hold the same rows: a sum over attn_cp counts each term once
// per replica, and a replica that skips a half's DP gather leaves the tp
// group's all-reduce one member short.
/// tp 4, attn_dp 2, attn_cp 2 as MLA prefill CP runs it: DP shard 0 on the CP replicas {0, 1}.
Plan cpTbo() {
  return mustBuild(twoStageCase("*-*E*E", {.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4},
                                {3, 2}, cpTboFlags()));
}

TEST(TboLedger, CatchesAHalfsMoeOutputAlsoReducedOverCpReplicasAsCountedTwice) {
  Plan plan = cpTbo();
  for (auto& ops : plan.ranks) {
    // The combine all-to-all of half A's first MoE: its rows are complete on every CP replica.
    const auto combine = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
      return op.half == Half::kA && op.kind == OpKind::kAllToAll &&
             op.rows_out.kind == RowKind::kAttention;
    });
    ASSERT_NE(combine, ops.end());
    Op over_cp = *combine;
    over_cp.kind = OpKind::kAllReduce;
    over_cp.axis = static_cast<std::int8_t>(Axis::kAttnCp);
    over_cp.rows_in = over_cp.rows_out;
    ops.insert(std::next(combine), over_cp);
  }
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kCountedTwice);
}

// The ledger reads the data first: the dispatch's peers receive no rows from rank 1 (a term of
// another rank's slot in their place); the collective-sequence check names the skipped call.
TEST(TboLedger,
     CatchesACpReplicaSkippingAHalfsDispatchAsAForeignTermAndACollectiveSequenceMismatch) {
  Plan plan = cpTbo();
  auto& ops =
      plan.ranks[1];  // attn_cp rank 1 of DP shard 0: holds the same rows, still joins the dispatch
  const auto dispatch = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
    return op.half == Half::kB && op.kind == OpKind::kAllToAll;
  });
  ASSERT_NE(dispatch, ops.end());
  ops.erase(dispatch);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kForeignTerm);
  EXPECT_FALSE(properties::checkCollectiveSequences(plan).empty());
}

}  // namespace
}  // namespace seam
