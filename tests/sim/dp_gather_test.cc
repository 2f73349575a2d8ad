// The DP ops as SGLang's dp_attention.py implements them (dp_gather.h;
// research note docs/research/serving-dp-gather-tbo.md A1-A8): the buffer
// lengths of each padding mode, the steps each DP op lowers to on each rank
// (groups, rows, bytes), that the ledger, property 4 and the numeric
// executor run that lowering on correct plans without a violation, and that
// hand-made wrong lowerings are caught with the right class.
#include "seam/sim/plan/dp_gather.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "case_builders.h"
#include "seam/properties/check.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam {
namespace {

using seam::testing::firstViolationInBothDomains;
using seam::testing::mustBuild;
using seam::testing::patternCase;
using seam::testing::twoStageCase;

constexpr auto kTp = static_cast<std::int8_t>(Axis::kTp);
constexpr auto kAttnTp = static_cast<std::int8_t>(Axis::kAttnTp);
constexpr auto kAttnCp = static_cast<std::int8_t>(Axis::kAttnCp);

Flags padding(DpPadding mode) {
  Flags f;
  f.dp_padding = mode;
  return f;
}

Batch batchOf(std::vector<int> tokens) {
  Batch b;
  b.tokens = std::move(tokens);
  return b;
}

/// A DP op of `kind` whose rows name `geometry`'s padding mode.
Op dpOp(OpKind kind, const DpGeometry& geometry, int tokens) {
  Op op;
  op.kind = kind;
  op.axis = kTp;
  const bool gather = kind == OpKind::kDpGatherPartial || kind == OpKind::kDpGatherReplicate;
  op.rows_in =
      gather ? Rows{RowKind::kAttention, tokens} : Rows{RowKind::kFull, geometry.globalRows()};
  op.rows_out =
      gather ? Rows{RowKind::kFull, geometry.globalRows()} : Rows{RowKind::kAttention, tokens};
  return op;
}

/// The steps as "kind(axis) in->out@offset bytes" strings, for readable diffs.
std::vector<std::string> show(const DpLowering& steps) {
  std::vector<std::string> out;
  for (const DpStep& s : steps) {
    std::string t(dpStepName(s.kind));
    if (s.axis != kNoAxis) t += "(" + std::string(axisName(static_cast<Axis>(s.axis))) + ")";
    t += " " + std::to_string(s.rows_in) + "->" + std::to_string(s.rows_out);
    if (s.kind == DpStepKind::kWriteSlot || s.kind == DpStepKind::kReadSlot)
      t += "@" + std::to_string(s.offset);
    t += " " + std::to_string(s.bytes);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> lowered(OpKind kind, const ParallelConfig& config,
                                 const std::vector<int>& tokens, DpPadding mode, int rank,
                                 DpFault fault = DpFault::kNone) {
  const DpGeometry g(config, batchOf(tokens), mode);
  Op op = dpOp(kind, g, tokens[dpPlaceOf(config, rank).attn_dp_rank]);
  op.dp_fault = fault;
  return show(lowerDpOp(op, config, g, rank, /*row_bytes=*/10));
}

using Steps = std::vector<std::string>;

/// The same under GQA zigzag prefill CP (the DP shards long enough are CP-sharded).
std::vector<std::string> loweredZigzag(OpKind kind, const ParallelConfig& config,
                                       const std::vector<int>& tokens, DpPadding mode, int rank) {
  const DpGeometry g(config, batchOf(tokens), mode, /*gatherv_env=*/false, CpLayout::kZigzag);
  const Op op = dpOp(kind, g, tokens[dpPlaceOf(config, rank).attn_dp_rank]);
  return show(lowerDpOp(op, config, g, rank, /*row_bytes=*/10));
}

/// An extend case with GQA attention, so that prefill CP takes the zigzag path.
Case gqaExtend(Case c) {
  c.flags.mode = ForwardMode::kExtend;
  c.model.shape.q_lora_rank = kNotApplicable;
  return c;
}

// ---- lengths (A1) -------------------------------------------------------------

TEST(DpGeometry, AlignsEveryShardToAttnTpAndPadsMaxLenSlotsToTheLargest) {
  const ParallelConfig c{.tp = 4, .attn_dp = 2};  // attn_tp 2
  const DpGeometry max_len(c, batchOf({3, 0}), DpPadding::kMaxLen);
  EXPECT_EQ(max_len.localRows(0), 4);  // ceil_align(3, 2)
  EXPECT_EQ(max_len.localRows(1), 4);  // the idle shard pads to M too
  EXPECT_EQ(max_len.slot(1), 4);
  EXPECT_EQ(max_len.globalRows(), 8);
  EXPECT_EQ(max_len.rawSlot(1), 3);  // what an unaligned lowering would use
  const DpGeometry sum_len(c, batchOf({3, 1}), DpPadding::kSumLen);
  EXPECT_EQ(sum_len.localRows(0), 4);
  EXPECT_EQ(sum_len.localRows(1), 2);
  EXPECT_EQ(sum_len.slot(1), 4);
  EXPECT_EQ(sum_len.rawSlot(1), 3);
  EXPECT_EQ(sum_len.globalRows(), 6);
  EXPECT_EQ(DpGeometry::globalRows(c, batchOf({3, 1}), DpPadding::kSumLen), 6);
  EXPECT_EQ(DpGeometry::globalRows(c, batchOf({3, 0}), DpPadding::kMaxLen), 8);
  EXPECT_EQ(dpAlignedTokens(0, 4), 0);
}

TEST(DpGeometry, WithoutDpAttentionNothingIsAligned) {
  const DpGeometry g({.tp = 4}, batchOf({3}), DpPadding::kMaxLen);
  EXPECT_EQ(g.localRows(0), 3);
  EXPECT_EQ(g.globalRows(), 3);
}

TEST(DpGeometry, TheFullRowsPutEachShardsTokensAtItsAlignedSlotAndPaddingAfter) {
  const ParallelConfig c{.tp = 4, .attn_dp = 2};
  const Topology topo(c);
  const RowMap max_len(topo, batchOf({3, 1}), DpPadding::kMaxLen);
  EXPECT_EQ(max_len.tokens(RowKind::kFull, 0), (std::vector<int>{0, 1, 2, -1, 3, -1, -1, -1}));
  const RowMap sum_len(topo, batchOf({3, 1}), DpPadding::kSumLen);
  EXPECT_EQ(sum_len.tokens(RowKind::kFull, 0), (std::vector<int>{0, 1, 2, -1, 3, -1}));
  EXPECT_EQ(sum_len.fullSlot(1), 4);
  EXPECT_EQ(RowCounts(c, batchOf({3, 1}), DpPadding::kMaxLen).count(RowKind::kFull, 3), 8);
  EXPECT_EQ(RowCounts(c, batchOf({3, 1}), DpPadding::kSumLen).count(RowKind::kFull, 3), 6);
}

// ---- the lowering, rank by rank (A4-A8); row bytes 10 --------------------------

TEST(DpLowering, MaxLenWithOneAttentionTpRankAllGathersMaxRowSlotsOverTp) {
  const ParallelConfig c{.tp = 2, .attn_dp = 2};
  EXPECT_EQ(lowered(OpKind::kDpGatherReplicate, c, {3, 1}, DpPadding::kMaxLen, 1),
            (Steps{"pad_local 1->3 20", "all_gather(tp) 3->6 60"}));
  // An idle rank still sends its M pad rows.
  EXPECT_EQ(lowered(OpKind::kDpGatherPartial, c, {3, 0}, DpPadding::kMaxLen, 1),
            (Steps{"pad_local 0->3 30", "all_gather(tp) 3->6 60"}));
  EXPECT_EQ(lowered(OpKind::kDpGatherReplicate, c, {3, 1}, DpPadding::kMaxLen, 0),
            (Steps{"all_gather(tp) 3->6 60"}));
}

TEST(DpLowering, MaxLenReplicateZeroesTheOtherAttentionTpRanksThenReduceScattersAndAllGathers) {
  // tp 4, attn_dp 2, attn_tp 2; shard 0 has 3 tokens (not a multiple of 2),
  // shard 1 is idle: M = 4, each rank's split M/a = 2 rows.
  const ParallelConfig c{.tp = 4, .attn_dp = 2};
  const std::vector<int> t{3, 0};
  EXPECT_EQ(
      lowered(OpKind::kDpGatherReplicate, c, t, DpPadding::kMaxLen, 0),
      (Steps{"pad_local 3->4 10", "reduce_scatter(attn_tp) 4->2 40", "all_gather(tp) 2->8 80"}));
  EXPECT_EQ(lowered(OpKind::kDpGatherReplicate, c, t, DpPadding::kMaxLen, 1),
            (Steps{"pad_local 3->4 10", "zero_local 4->4 40", "reduce_scatter(attn_tp) 4->2 40",
                   "all_gather(tp) 2->8 80"}));
  // The idle shard's ranks join the reduce-scatter and the all-gather with M/a rows.
  EXPECT_EQ(
      lowered(OpKind::kDpGatherReplicate, c, t, DpPadding::kMaxLen, 2),
      (Steps{"pad_local 0->4 40", "reduce_scatter(attn_tp) 4->2 40", "all_gather(tp) 2->8 80"}));
  EXPECT_EQ(lowered(OpKind::kDpGatherReplicate, c, t, DpPadding::kMaxLen, 3),
            (Steps{"pad_local 0->4 40", "zero_local 4->4 40", "reduce_scatter(attn_tp) 4->2 40",
                   "all_gather(tp) 2->8 80"}));
  // A partial gather keeps every rank's rows: the reduce-scatter completes the attn_tp sum.
  EXPECT_EQ(
      lowered(OpKind::kDpGatherPartial, c, t, DpPadding::kMaxLen, 1),
      (Steps{"pad_local 3->4 10", "reduce_scatter(attn_tp) 4->2 40", "all_gather(tp) 2->8 80"}));
}

TEST(DpLowering, SumLenZeroesTheBufferLetsTheWritersCopyAtAlignedOffsetsAndAllReducesOverTp) {
  const ParallelConfig c{.tp = 4, .attn_dp = 2};
  const std::vector<int> t{3, 1};  // aligned 4, 2: slots 0 and 4 of 6 rows
  EXPECT_EQ(lowered(OpKind::kDpGatherPartial, c, t, DpPadding::kSumLen, 1),
            (Steps{"pad_local 3->4 10", "zero_global 4->6 60", "write_slot 4->6@0 40",
                   "all_reduce(tp) 6->6 60"}));
  // Replicate: attention-TP rank 0 writes, the others only join the all-reduce.
  EXPECT_EQ(lowered(OpKind::kDpGatherReplicate, c, t, DpPadding::kSumLen, 3),
            (Steps{"pad_local 1->2 10", "zero_global 2->6 60", "all_reduce(tp) 6->6 60"}));
  EXPECT_EQ(lowered(OpKind::kDpGatherReplicate, c, t, DpPadding::kSumLen, 2),
            (Steps{"pad_local 1->2 10", "zero_global 2->6 60", "write_slot 2->6@4 20",
                   "all_reduce(tp) 6->6 60"}));
  // An idle shard has no local rows and writes nothing.
  EXPECT_EQ(lowered(OpKind::kDpGatherPartial, c, {3, 0}, DpPadding::kSumLen, 2),
            (Steps{"zero_global 0->4 40", "all_reduce(tp) 4->4 40"}));
}

TEST(DpLowering, UnderAttentionCpEveryGatherTakesTheAllReducePathAndOnlyCpRankZeroWrites) {
  const ParallelConfig c{.tp = 4, .attn_dp = 2, .attn_cp = 2};  // attn_tp 1
  EXPECT_EQ(lowered(OpKind::kDpGatherReplicate, c, {2, 1}, DpPadding::kMaxLen, 0),
            (Steps{"zero_global 2->4 40", "write_slot 2->4@0 20", "all_reduce(tp) 4->4 40"}));
  EXPECT_EQ(lowered(OpKind::kDpGatherPartial, c, {2, 1}, DpPadding::kMaxLen, 1),
            (Steps{"zero_global 2->4 40", "all_reduce(tp) 4->4 40"}));
  EXPECT_EQ(lowered(OpKind::kDpGatherPartial, c, {2, 1}, DpPadding::kMaxLen, 2),
            (Steps{"pad_local 1->2 10", "zero_global 2->4 40", "write_slot 2->4@2 20",
                   "all_reduce(tp) 4->4 40"}));
}

TEST(DpLowering, DpScatterCopiesTheOwnSlotAndDropsThePadRowsWithoutACollective) {
  const ParallelConfig c{.tp = 4, .attn_dp = 2};
  EXPECT_EQ(lowered(OpKind::kDpScatter, c, {3, 1}, DpPadding::kMaxLen, 2),
            (Steps{"read_slot 8->4@4 40", "trim 4->1 0"}));
  EXPECT_EQ(lowered(OpKind::kDpScatter, c, {3, 1}, DpPadding::kSumLen, 2),
            (Steps{"read_slot 6->2@4 20", "trim 2->1 0"}));
}

TEST(DpLowering, OnTheDpBufferPaddingAGatherPadsNothingAndAScatterTrimsNothing) {
  // prepare_mlp_sync_batch under MAX_LEN: the shard already holds its local
  // DP buffer (M = 4 rows for 1 token and for none), so the lowering neither
  // pads before a gather nor trims after a scatter or a reduce-scatter.
  const ParallelConfig c{.tp = 4, .attn_dp = 2};
  const DpGeometry g(c, batchOf({1, 0}), DpPadding::kMaxLen, false, CpLayout::kReplicated,
                     AttentionPad::kDpBuffer);
  ASSERT_EQ(g.attentionRows(0), 2);
  ASSERT_EQ(g.attentionRows(1), 2);
  auto steps = [&](OpKind kind, int rank) {
    return show(lowerDpOp(dpOp(kind, g, g.attentionRows(dpPlaceOf(c, rank).attn_dp_rank)), c, g,
                          rank, /*row_bytes=*/10));
  };
  EXPECT_EQ(steps(OpKind::kDpGatherReplicate, 2),
            (Steps{"reduce_scatter(attn_tp) 2->1 20", "all_gather(tp) 1->4 40"}));
  EXPECT_EQ(steps(OpKind::kDpScatter, 2), (Steps{"read_slot 4->2@2 20"}));
  EXPECT_EQ(steps(OpKind::kDpReduceScatter, 0),
            (Steps{"reduce_scatter(tp) 4->1 40", "all_gather(attn_tp) 1->2 20"}));
}

TEST(DpLowering, DpReduceScatterFollowsTheGroupShapes) {
  // tp == attn_dp: one reduce-scatter over tp into the M-row slot.
  EXPECT_EQ(
      lowered(OpKind::kDpReduceScatter, {.tp = 2, .attn_dp = 2}, {3, 1}, DpPadding::kMaxLen, 1),
      (Steps{"reduce_scatter(tp) 6->3 60", "trim 3->1 0"}));
  // attn_tp > 1: reduce-scatter to the 1/tp chunk, all-gather it back over attn_tp.
  EXPECT_EQ(
      lowered(OpKind::kDpReduceScatter, {.tp = 4, .attn_dp = 2}, {3, 0}, DpPadding::kMaxLen, 3),
      (Steps{"reduce_scatter(tp) 8->2 80", "all_gather(attn_tp) 2->4 40", "trim 4->0 0"}));
  // attn_cp > 1 with rows % tp != 0: all-reduce and narrow to the slot.
  EXPECT_EQ(lowered(OpKind::kDpReduceScatter, {.tp = 4, .attn_dp = 2, .attn_cp = 2}, {1, 1},
                    DpPadding::kMaxLen, 2),
            (Steps{"all_reduce(tp) 2->2 20", "read_slot 2->1@1 10"}));
  // attn_cp > 1 with rows % tp == 0: reduce-scatter, then attn_tp and attn_cp all-gathers.
  EXPECT_EQ(lowered(OpKind::kDpReduceScatter, {.tp = 8, .attn_dp = 2, .attn_cp = 2}, {3, 4},
                    DpPadding::kMaxLen, 5),
            (Steps{"reduce_scatter(tp) 8->1 80", "all_gather(attn_tp) 1->2 20",
                   "all_gather(attn_cp) 2->4 40"}));
}

TEST(DpLowering, EveryCollectiveStepNamesItsGroupAndTheOpKindItIssues) {
  const ParallelConfig c{.tp = 4, .attn_dp = 2};
  const DpGeometry g(c, batchOf({3, 0}), DpPadding::kMaxLen);
  const DpLowering steps = lowerDpOp(dpOp(OpKind::kDpGatherReplicate, g, 3), c, g, 1, 10);
  ASSERT_EQ(steps.size(), 4);
  EXPECT_EQ(steps[2].axis, kAttnTp);
  EXPECT_EQ(steps[2].opKind(), OpKind::kReduceScatter);
  EXPECT_EQ(steps[3].axis, kTp);
  EXPECT_EQ(steps[3].opKind(), OpKind::kAllGather);
  EXPECT_NE(kAttnCp, kAttnTp);
}

// ---- SGLANG_DP_USE_GATHERV (A6) --------------------------------------------------

TEST(DpLowering, GathervTurnsASumLenGatherIntoOneTpAllGathervOfTheShardsRows) {
  const ParallelConfig c{.tp = 2, .attn_dp = 2};
  const DpGeometry g(c, batchOf({3, 1}), DpPadding::kSumLen, /*gatherv_env=*/true);
  ASSERT_TRUE(g.gatherv());
  for (OpKind kind : {OpKind::kDpGatherReplicate, OpKind::kDpGatherPartial}) {
    // Each rank sends its own rows; all members name the same gathered size.
    EXPECT_EQ(show(lowerDpOp(dpOp(kind, g, 3), c, g, 0, 10)), (Steps{"all_gatherv(tp) 3->4 40"}));
    EXPECT_EQ(show(lowerDpOp(dpOp(kind, g, 1), c, g, 1, 10)), (Steps{"all_gatherv(tp) 1->4 40"}));
  }
  // dp_scatter is the same copy of the own slot.
  EXPECT_EQ(show(lowerDpOp(dpOp(OpKind::kDpScatter, g, 1), c, g, 1, 10)),
            (Steps{"read_slot 4->1@3 10"}));
}

TEST(DpLowering, GathervIsInactiveWhereTheEngineDoesNotApplyIt) {
  // is_dp_gatherv_active: the env flag, attn_tp 1, tp == attn_dp, SUM_LEN.
  EXPECT_FALSE(
      DpGeometry({.tp = 2, .attn_dp = 2}, batchOf({3, 1}), DpPadding::kMaxLen, true).gatherv());
  EXPECT_FALSE(
      DpGeometry({.tp = 4, .attn_dp = 2}, batchOf({3, 1}), DpPadding::kSumLen, true).gatherv());
  EXPECT_FALSE(
      DpGeometry({.tp = 2, .attn_dp = 2}, batchOf({3, 1}), DpPadding::kSumLen, false).gatherv());
  EXPECT_FALSE(DpGeometry({.tp = 2}, batchOf({3}), DpPadding::kSumLen, true).gatherv());
}

// ---- correct plans replay clean through the lowering ---------------------------

std::string firstViolation(const properties::PlanVerdict& v) {
  const auto first = v.firstViolation();
  return first ? first->detail : "";
}

struct CleanCase {
  const char* name;
  Case c;
  PolicyKind policy = PolicyKind::kDeclared;
};

/// SGLANG_DP_USE_GATHERV with SUM_LEN padding (where it applies).
Flags gatherv(bool rsv = false) {
  Flags f = padding(DpPadding::kSumLen);
  f.dp_gatherv = true;
  if (rsv) f.reduction = BoundaryReduction::kRsv;
  return f;
}

std::vector<CleanCase> cleanCases() {
  Flags rs = padding(DpPadding::kMaxLen);
  rs.reduction = BoundaryReduction::kRs;
  return {
      {"replicate max_len attn_tp 2 idle", patternCase("M-M*E", {.tp = 4, .attn_dp = 2}, {3, 0})},
      {"replicate max_len attn_tp 4 uneven", patternCase("M-M*E", {.tp = 8, .attn_dp = 2}, {5, 2})},
      {"replicate sum_len attn_tp 2",
       patternCase("M-M*E", {.tp = 4, .attn_dp = 2}, {3, 1}, padding(DpPadding::kSumLen))},
      {"partial max_len", twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2})},
      {"partial sum_len",
       twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}, padding(DpPadding::kSumLen))},
      {"partial legacy idle", twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {0, 3}),
       PolicyKind::kLegacy},
      {"dp_reduce_scatter", twoStageCase("*E*E", {.tp = 4, .attn_dp = 2}, {3, 2}, rs)},
      {"dp_reduce_scatter legacy", twoStageCase("*E*E", {.tp = 4, .attn_dp = 2}, {3, 2}),
       PolicyKind::kLegacy},
      {"attention cp", twoStageCase("*-*-", {.tp = 8, .attn_dp = 2, .attn_cp = 2}, {3, 1})},
      {"attn_tp 1", twoStageCase("*-*-", {.tp = 2, .attn_dp = 2}, {2, 1})},
      {"gatherv", patternCase("M-M*E", {.tp = 2, .attn_dp = 2}, {3, 1}, gatherv())},
      {"gatherv idle", twoStageCase("*E*E", {.tp = 4, .attn_dp = 4}, {3, 0, 2, 5}, gatherv())},
      {"gatherv two-stage rsv",
       twoStageCase("*-*E", {.tp = 2, .attn_dp = 2, .moe_ep = 2}, {2, 4}, gatherv(true))},
      // GQA zigzag prefill CP under attention DP: uneven shards, an idle one,
      // one too short to shard, attn_tp 1 and 2, dense and MoE FFNs.
      {"zigzag cp dense idle",
       gqaExtend(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2, .attn_cp = 2}, {130, 0}))},
      {"zigzag cp dense attn_tp 2",
       gqaExtend(twoStageCase("*-*-", {.tp = 8, .attn_dp = 2, .attn_cp = 2}, {133, 257}))},
      {"zigzag cp moe short shard",
       gqaExtend(twoStageCase("*E*E", {.tp = 8, .attn_dp = 2, .attn_cp = 2}, {140, 5}))},
      {"zigzag cp moe ep",
       gqaExtend(
           twoStageCase("*-*E", {.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 2}, {0, 131}))},
  };
}

TEST(DpLoweredReplay, CorrectPlansHoldEveryPropertyInBothLedgerDomains) {
  Ledger ledger;
  for (const CleanCase& k : cleanCases()) {
    SCOPED_TRACE(k.name);
    const Plan plan = mustBuild(k.c, k.policy);
    const auto verdict = properties::checkPlan(plan, ledger);
    EXPECT_TRUE(verdict.holds()) << firstViolation(verdict);
    EXPECT_TRUE(ledger.replay(plan, LedgerOptions{.exact = true}).holds());
  }
}

TEST(DpLoweredReplay, TheNumericExecutorRunsTheLoweringBitIdenticalToTheReference) {
  const numeric::Shape shape{.hidden = 8, .inner = 16};
  for (const CleanCase& k : cleanCases()) {
    SCOPED_TRACE(k.name);
    const Plan plan = mustBuild(k.c, k.policy);
    const NumericRun run = runPlanNumeric(plan, numeric::Mode::kExact, shape);
    ASSERT_TRUE(run.ran()) << run.failures.front().detail;
    EXPECT_FALSE(run.ranks_disagree);
    const OutputDiff diff =
        compareOutputs(runReference(k.c, numeric::Mode::kExact, shape), run.output);
    EXPECT_TRUE(diff.identical) << diff.describe();
  }
}

// ---- wrong lowerings, caught with the right class -------------------------------

/// Plants `fault` in every DP op of `kind` on every rank (a bug in
/// dp_attention.py is in every call).
void plant(Plan& plan, OpKind kind, DpFault fault) {
  for (auto& ops : plan.ranks) {
    for (Op& op : ops) {
      if (op.kind == kind) op.dp_fault = fault;
    }
  }
}

TEST(DpLoweringFault, AReplicateGatherWithoutTheZeroFillCountsEveryTokenAttnTpTimes) {
  for (int tp : {4, 8}) {  // attn_tp 2 and 4
    const int a = tp / 2;
    SCOPED_TRACE("attn_tp " + std::to_string(a));
    Plan plan = mustBuild(patternCase("M-M", {.tp = tp, .attn_dp = 2}, {3, 1}));
    ASSERT_EQ(plan.padding, DpPadding::kMaxLen);
    plant(plan, OpKind::kDpGatherReplicate, DpFault::kSkipZeroFill);
    const Violation v = firstViolationInBothDomains(plan);
    EXPECT_EQ(v.property, Property::kOwedOnce);
    EXPECT_EQ(v.cls, ViolationClass::kCountedTwice) << v.detail;
    EXPECT_EQ(v.coefficient, a) << v.detail;
    EXPECT_EQ(v.stage, 1);  // read by the MLP on the gathered rows
    // The collectives are the same: property 4 has nothing to say.
    EXPECT_TRUE(properties::checkCollectiveSequences(plan).empty());
  }
}

TEST(DpLoweringFault,
     ASumLenReplicateGatherWrittenByEveryAttentionTpRankCountsItsTokensAttnTpTimes) {
  Plan plan =
      mustBuild(patternCase("M-M", {.tp = 4, .attn_dp = 2}, {3, 1}, padding(DpPadding::kSumLen)));
  ASSERT_EQ(plan.padding, DpPadding::kSumLen);
  plant(plan, OpKind::kDpGatherReplicate, DpFault::kWriterRuleSwapped);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kCountedTwice) << v.detail;
  EXPECT_EQ(v.coefficient, 2);
}

TEST(DpLoweringFault, ASumLenPartialGatherWrittenByAttentionTpRankZeroOnlyNeverCompletesTheSum) {
  Plan plan =
      mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}, padding(DpPadding::kSumLen)));
  plant(plan, OpKind::kDpGatherPartial, DpFault::kWriterRuleSwapped);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted) << v.detail;
  EXPECT_NE(v.term.find("j1"), std::string::npos) << v.term;  // attention-TP rank 1's share is lost
}

TEST(DpLoweringFault, SumLenSlotOffsetsWithoutTheAlignmentMixAnotherTokensRowsIn) {
  Plan plan =
      mustBuild(patternCase("M-M", {.tp = 4, .attn_dp = 2}, {3, 2}, padding(DpPadding::kSumLen)));
  plant(plan, OpKind::kDpGatherReplicate, DpFault::kUnalignedSlots);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kForeignTerm) << v.detail;
  EXPECT_EQ(v.token, 3);  // shard 1's first token, written one row early
}

TEST(DpLoweringFault, AMaxLenScatterAtAnUnalignedSlotReadsAPadRowAsAToken) {
  Plan plan = mustBuild(patternCase("M-M", {.tp = 4, .attn_dp = 2}, {3, 2}));
  ASSERT_EQ(plan.padding, DpPadding::kMaxLen);
  plant(plan, OpKind::kDpScatter, DpFault::kUnalignedSlots);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kPaddingLeak) << v.detail;
  EXPECT_EQ(v.rank, 2);  // shard 1 reads from row 3 (the pad row of slot 0) instead of 4
}

TEST(DpLoweringFault, AScatterInTheOtherPaddingModeThanTheGatherStillLeaksWithAlignedSlots) {
  Plan plan = mustBuild(patternCase("M-M", {.tp = 4, .attn_dp = 2}, {1, 3}));
  ASSERT_EQ(plan.padding, DpPadding::kMaxLen);
  const Batch& b = plan.source.batch;
  const int sum_rows = DpGeometry::globalRows(plan.source.config, b, DpPadding::kSumLen);
  ASSERT_EQ(sum_rows, 6);  // aligned 2 + 4; MAX_LEN has 8
  for (auto& ops : plan.ranks) {
    for (Op& op : ops) {
      if (op.kind == OpKind::kDpScatter) op.rows_in.count = sum_rows;
    }
  }
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_TRUE(v.cls == ViolationClass::kPaddingLeak || v.cls == ViolationClass::kForeignTerm)
      << v.detail;
}

TEST(DpLoweringFault,
     OneRankGatheringReplicateAmongPartialPeersIssuesTheSameCollectivesButLosesItsTerms) {
  Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {3, 2}));
  bool changed = false;
  for (Op& op : plan.ranks[1]) {
    if (op.kind == OpKind::kDpGatherPartial && !changed) {
      op.kind = OpKind::kDpGatherReplicate;
      changed = true;
    }
  }
  ASSERT_TRUE(changed);
  // The lowered collectives agree (the real run does not hang) ...
  EXPECT_TRUE(properties::checkCollectiveSequences(plan).empty());
  // ... but rank 1 zeroes its share of the attention sum before the reduce-scatter.
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted) << v.detail;
}

TEST(DpLoweringFault,
     AGatherWhoseRowsNameTheOtherModeOnOneRankIsACollectiveMismatchOfTheLoweredCalls) {
  // Same op kind and bytes on every rank, so the abstract calls agree; the
  // rows of rank 0's op name SUM_LEN, whose lowering all-reduces over tp
  // where its peers reduce-scatter over attn_tp.
  Plan plan = mustBuild(patternCase("M-M", {.tp = 4, .attn_dp = 2}, {3, 1}));
  const int sum_rows =
      DpGeometry::globalRows(plan.source.config, plan.source.batch, DpPadding::kSumLen);
  for (Op& op : plan.ranks[0]) {
    if (op.kind == OpKind::kDpGatherReplicate) {
      op.rows_out.count = sum_rows;
      break;
    }
  }
  const auto violations = properties::checkCollectiveSequences(plan);
  ASSERT_FALSE(violations.empty());
  EXPECT_EQ(violations.front().cls, ViolationClass::kCollectiveMismatch);
  EXPECT_NE(violations.front().detail.find("(of dp_gather_replicate)"), std::string::npos)
      << violations.front().detail;
}

// ---- GQA zigzag prefill CP under attention DP (cp_shard_counts) -----------------

TEST(DpLoweringUnderZigzagCp, EveryCpRankWritesItsShardsTokenRowsBesideItsPeersInBothPaddingModes) {
  // tp 4, attn_dp 2, attn_cp 2 (attn_tp 1); 130 tokens on shard 0: zigzag
  // blocks 33, 33, 32, 32, so CP rank 0 holds blocks 0 and 3 (65 token rows)
  // and CP rank 1 blocks 1 and 2 (65), each padded to 68 rows; shard 1 idle.
  const ParallelConfig c{.tp = 4, .attn_dp = 2, .attn_cp = 2};
  for (DpPadding mode : {DpPadding::kSumLen, DpPadding::kMaxLen}) {
    SCOPED_TRACE(mode == DpPadding::kSumLen ? "sum_len" : "max_len");
    const int G = mode == DpPadding::kSumLen ? 130 : 260;
    const std::string g = std::to_string(G), gb = std::to_string(G * 10);
    // _dp_gather_via_all_reduce whatever the padding, the shards at
    // dp_start + the counts before them; only the shard's token rows.
    EXPECT_EQ(loweredZigzag(OpKind::kDpGatherReplicate, c, {130, 0}, mode, 0),
              (Steps{"zero_global 68->" + g + " " + gb, "write_slot 65->" + g + "@0 650",
                     "all_reduce(tp) " + g + "->" + g + " " + gb}));
    EXPECT_EQ(loweredZigzag(OpKind::kDpGatherReplicate, c, {130, 0}, mode, 1),
              (Steps{"zero_global 68->" + g + " " + gb, "write_slot 65->" + g + "@65 650",
                     "all_reduce(tp) " + g + "->" + g + " " + gb}));
    // The idle shard is not CP-sharded: nothing to write (MAX_LEN pads its
    // slot to 130 rows first), the same all-reduce.
    const Steps idle = mode == DpPadding::kSumLen
                           ? Steps{"zero_global 0->130 1300", "all_reduce(tp) 130->130 1300"}
                           : Steps{"pad_local 0->130 1300", "zero_global 130->260 2600",
                                   "all_reduce(tp) 260->260 2600"};
    EXPECT_EQ(loweredZigzag(OpKind::kDpGatherReplicate, c, {130, 0}, mode, 3), idle);
    // dp_cp_take_back_output: the own shard's token rows, padded back to 68.
    EXPECT_EQ(loweredZigzag(OpKind::kDpScatter, c, {130, 0}, mode, 1),
              (Steps{"read_slot " + g + "->65@65 650", "pad_local 65->68 30"}));
  }
}

TEST(DpLoweringUnderZigzagCp,
     APartialGatherIsWrittenByEveryAttentionTpRankAndAReplicateOneByRankZeroOnly) {
  // tp 8, attn_dp 2, attn_cp 2 (attn_tp 2); shard 1 (ranks 4-7) of 131
  // tokens: blocks 33, 33, 33, 32; CP rank 1 (ranks 6, 7) holds 66 rows at
  // its slot (132, aligned) + 65.
  const ParallelConfig c{.tp = 8, .attn_dp = 2, .attn_cp = 2};
  const Steps partial =
      loweredZigzag(OpKind::kDpGatherPartial, c, {130, 131}, DpPadding::kSumLen, 7);
  EXPECT_EQ(partial, (Steps{"zero_global 68->262 2620", "write_slot 66->262@195 660",
                            "all_reduce(tp) 262->262 2620"}));
  const Steps replicate =
      loweredZigzag(OpKind::kDpGatherReplicate, c, {130, 131}, DpPadding::kSumLen, 7);
  EXPECT_EQ(replicate, (Steps{"zero_global 68->262 2620", "all_reduce(tp) 262->262 2620"}));
}

/// A GQA zigzag case under attention DP whose plan holds, for hand-made faults.
Plan zigzagDpPlan() {
  return mustBuild(
      gqaExtend(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2, .attn_cp = 2}, {130, 0})));
}

TEST(DpLoweringUnderZigzagCp, CpShardsWrittenAtTheDpSlotsStartMixAnotherTokensRowsIn) {
  Plan plan = zigzagDpPlan();
  plant(plan, OpKind::kDpGatherReplicate, DpFault::kCpShardOffsetDropped);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kForeignTerm) << v.detail;
  EXPECT_EQ(v.stage, 1);  // read by the MLP on the gathered rows
}

TEST(DpLoweringUnderZigzagCp, ATakeBackOfThePeersShardPutsAnotherTokensValueOnTheShard) {
  Plan plan = zigzagDpPlan();
  plant(plan, OpKind::kDpScatter, DpFault::kCpPeerShard);
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kForeignTerm) << v.detail;
}

TEST(DpLoweringUnderZigzagCp, AnFfnSumCompletedTwiceBeforeTheTakeBackIsCountedTpTimes) {
  // dp_cp_take_back_output does not complete the sum: the exit's all-reduce
  // does; a second one counts every term tp (4) times.
  Plan plan = zigzagDpPlan();
  for (auto& ops : plan.ranks) {
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].phase == Phase::kExit && ops[k].kind == OpKind::kAllReduce) {
        ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(k), ops[k]);
        break;
      }
    }
  }
  const Violation v = firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kCountedTwice) << v.detail;
  EXPECT_EQ(v.coefficient, 4) << v.detail;
}

}  // namespace
}  // namespace seam
