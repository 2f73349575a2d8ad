// Pins LayerNorm sequence parallel (§6.5 SEQUENCE_PARALLEL,
// sim/src/policy/two_stage.cc: layerNormSpBoundary; emission.cc: the stages'
// gather and reduce-scatter) against reference/serving-boundaries.md and
// arg_groups/layernorm_sp_hook.py: every stage on padded equal shards, the
// plain collectives, bit-identity with the reference, validate_layernorm_sp's
// refusals, and hand-made wrong plans the ledger catches.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "seam/properties/check.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam {
namespace {

using seam::testing::expectHolds;
using seam::testing::findOp;
using seam::testing::firstViolation;
using seam::testing::kindsAt;
using seam::testing::mustBuild;
using seam::testing::patternCase;
using seam::testing::sliceInsteadEverywhere;
using seam::testing::twoStageCase;

Flags lnSp() {
  Flags f;
  f.mode = ForwardMode::kExtend;
  f.layernorm_sp = true;
  return f;
}

TEST(TwoStageRules,
     UnderLayerNormSpEveryStageGathersItsInputAndReduceScattersItsOutputOnLocalRows) {
  const Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 2}, {4}, lnSp()));
  const std::vector<OpKind> compute = {OpKind::kAllGather, OpKind::kCompute,
                                       OpKind::kReduceScatter};
  for (int stage = 0; stage < 4; ++stage)
    EXPECT_EQ(kindsAt(plan, 0, stage, Phase::kCompute), compute) << stage;
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

TEST(TwoStageRules,
     LayerNormSpMovesEqualPaddedShardsWithThePlainCollectivesWhenTpDoesNotDivideTheTokens) {
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
  for (int tokens : {1, 3, 5, 6, 7})
    expectHolds(mustBuild(twoStageCase("*-*-", {.tp = 4}, {tokens}, lnSp())));
  expectHolds(mustBuild(twoStageCase("*-*-*-*-", {.pp = 2, .tp = 4}, {7}, lnSp())));
}

TEST(TwoStageRules, LayerNormSpPlansOnPaddedShardsAreBitIdenticalToTheReference) {
  for (const Case& c :
       {twoStageCase("*-*-", {.tp = 4}, {5}, lnSp()), twoStageCase("*-*-", {.tp = 2}, {3}, lnSp()),
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
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {4}, lnSp())).find("Qwen3ForCausalLM"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("GE*E", {.tp = 2}, {4}, lnSp())).find("Qwen3ForCausalLM"),
            std::string::npos);
  EXPECT_NE(why(patternCase("M-M*", {.tp = 2}, {4}, lnSp())).find("Qwen3ForCausalLM"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*-", {.tp = 1}, {4}, lnSp())).find("tp_size > 1"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*-", {.tp = 4, .attn_dp = 2}, {2, 2}, lnSp())).find("attention DP"),
            std::string::npos);
  EXPECT_NE(why(twoStageCase("*-*-/*-", {.tp = 2}, {4}, lnSp())).find("speculative decoding"),
            std::string::npos);
  Flags capture = lnSp();
  capture.capture = {2};
  EXPECT_NE(why(twoStageCase("*-*-", {.tp = 2}, {4}, capture)).find("speculative decoding"),
            std::string::npos);
  Flags decode = lnSp();
  decode.mode = ForwardMode::kDecode;
  EXPECT_NE(why(twoStageCase("*-*E", {.tp = 2}, {4}, decode)).find("Qwen3ForCausalLM"),
            std::string::npos);
}
// ---- hand-made wrong plans ---------------------------------------------------------

TEST(TwoStageWrongPlans,
     ALayerNormSpRowLinearThatSlicesItsShardInsteadOfReduceScatteringNeverCompletesItsSum) {
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

TEST(TwoStageWrongPlans, ALayerNormSpPlanClaimingTensorSplitRowsIsCaughtByItsGeometryNotReplayed) {
  // The ledger replays the case's own split (SP's padded equal chunks), not
  // the plan's field: the plan's ops hold there, and property 9 names the
  // field that disagrees with the case.
  Plan plan = mustBuild(twoStageCase("*-*-", {.tp = 4}, {5}, lnSp()));
  plan.local_split = LocalSplit::kTensorSplit;
  Ledger ledger;
  EXPECT_TRUE(ledger.replay(plan).holds());
  const auto v = properties::checkPlan(plan, ledger).firstViolation();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, Property::kPlanGeometry);
  EXPECT_EQ(v->cls, ViolationClass::kGeometryDisagrees);
  EXPECT_NE(v->detail.find("tensor_split"), std::string::npos) << v->detail;
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

}  // namespace
}  // namespace seam
