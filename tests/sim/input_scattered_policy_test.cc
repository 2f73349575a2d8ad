// Pins input-scattered attention (§6.5, sim/src/policy/two_stage.cc:
// inputScatteredEntry, inputScatteredFfnExit) against SGLang's code:
// - layers/communicator/factories.py (_connect) @060c48f7: the stack input of
//   the INPUT_SCATTERED variant owes SumGroup.TP (VocabParallelEmbedding skips
//   its all-reduce inside maybe_input_scattered, sglang PR #10568), so layer
//   0's entry reduce-scatters it (ops.py tp_reduce_scatter, copy @0bca4c6f);
// - factories.py (_ffn_decl, INPUT_SCATTERED) and exit.py
//   (_ffn_leaves_sum_to_reduce_scatter) @060c48f7: the FFN leaves its sum to
//   that reduce-scatter only under rs / rs+rsv; under ar it all-reduces and
//   the next entry takes prepare.py's completed_step (_consumer_step
//   @96bbe18f), a slice;
// - TestBoundaryIntegrations.test_pipeline_preserves_declared_sum_for_one_receiver_completion:
//   across a pipeline cut the partial travels unreduced and the receiver
//   completes it with one reduce-scatter;
// - prepare.py (_hand_scattered_input_to_attention) @96bbe18f: the QKV hook
//   gathers the latents over tp inside the attention.
// Plus the FFN input that adds the residual slice into the sum, the batch
// padded to tp, the engine's refusals, and hand-made wrong plans the ledger
// catches.
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
  // DeepSeek's default (model_boundary_reduction @0fbe7e46: rs+rsv).
  f.reduction = BoundaryReduction::kRsRsv;
  return f;
}

TEST(TwoStageRules,
     InputScatteredAttentionReadsATpSliceAndTheFfnInputAddsTheResidualSliceIntoTheSum) {
  const Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  // The embedding's vocab-shard partial, reduce-scattered onto the slice.
  const std::vector<OpKind> layer0 = {OpKind::kReduceScatter, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 0, Phase::kEntry), layer0);
  const std::vector<OpKind> attention = {OpKind::kAllGather, OpKind::kCompute};  // the latents
  EXPECT_EQ(kindsAt(plan, 0, 0, Phase::kCompute), attention);
  const std::vector<OpKind> ffn_in = {OpKind::kAdd, OpKind::kAllReduce, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kEntry), ffn_in);
  EXPECT_TRUE(kindsAt(plan, 0, 1, Phase::kExit).empty());  // the dense FFN leaves its TP sum
  const std::vector<OpKind> layer1 = {OpKind::kReduceScatter, OpKind::kSlice, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 2, Phase::kEntry), layer1);
  EXPECT_EQ(kindsAt(plan, 0, 3, Phase::kExit),
            std::vector<OpKind>{OpKind::kAllReduce});  // terminal
  expectHolds(plan);
}

TEST(TwoStageRules, UnderReductionArAnInputScatteredFfnAllReducesAndTheNextEntryOnlySlices) {
  Flags f = inputScattered();
  f.reduction = BoundaryReduction::kAr;
  const Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, f));
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kExit), std::vector<OpKind>{OpKind::kAllReduce});
  const std::vector<OpKind> layer1 = {OpKind::kSlice, OpKind::kSlice, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 0, 2, Phase::kEntry), layer1);
  // Layer 0 still completes the embedding's partial: the strategy is the FFN's.
  EXPECT_EQ(kindsAt(plan, 0, 0, Phase::kEntry).front(), OpKind::kReduceScatter);
  expectHolds(plan);
}

TEST(TwoStageRules, AnInputScatteredFfnSendsItsPartialAcrossAPipelineCutForTheReceiverToComplete) {
  const Plan plan = mustBuild(twoStageCase("*-|*E", {.pp = 2, .tp = 2}, {4}, inputScattered()));
  // Rank 0 (pipeline stage 0) sends the unreduced output and the residual.
  EXPECT_EQ(kindsAt(plan, 0, 1, Phase::kExit), (std::vector<OpKind>{OpKind::kSend, OpKind::kSend}));
  // Rank 2 receives them and runs one reduce-scatter.
  const std::vector<OpKind> received = {OpKind::kRecv, OpKind::kRecv, OpKind::kReduceScatter,
                                        OpKind::kSlice, OpKind::kAddNorm};
  EXPECT_EQ(kindsAt(plan, 2, 2, Phase::kEntry), received);
  expectHolds(plan);
}

// ModelRunner's eager forward pads an input-scattered batch to a multiple of
// tp before the forward (prepare_attn_tp_scatter_input: forward_batch_info.py,
// index id 54487805952; called from _prepare_eager_forward_batch where the
// scheduler did not sync, model_runner.py, index id 54503666834), so
// tp_reduce_scatter's tokens % tp assert holds: 5 tokens at tp 4 run as 8
// rows, 2 per rank, and the collectives move equal chunks.
TEST(TwoStageRules, AnInputScatteredBatchThatTpDoesNotDivideRunsPaddedToTpWithEqualChunks) {
  const Case c = twoStageCase("*-*E", {.tp = 4, .moe_ep = 4}, {5}, inputScattered());
  const Plan plan = mustBuild(c);
  EXPECT_EQ(plan.attention_pad, AttentionPad::kAlignedEntry);
  EXPECT_EQ(plan.local_split, LocalSplit::kPaddedEqual);
  int moves = 0;
  for (int r = 0; r < plan.world(); ++r) {
    for (const Op& op : plan.ranks[r]) {
      if (op.kind != OpKind::kAllGather && op.kind != OpKind::kReduceScatter) continue;
      ++moves;
      const Rows local = op.kind == OpKind::kAllGather ? op.rows_in : op.rows_out;
      const Rows attention = op.kind == OpKind::kAllGather ? op.rows_out : op.rows_in;
      EXPECT_EQ(local, (Rows{RowKind::kLocal, 2}));
      EXPECT_EQ(attention, (Rows{RowKind::kAttention, 8}));
    }
  }
  EXPECT_GT(moves, 0);
  expectHolds(plan);
  expectHolds(mustBuild(twoStageCase("*-*E", {.tp = 2}, {3}, inputScattered())));
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

TEST(TwoStageWrongPlans, ALayer0EntryThatSlicesTheEmbeddingAsIfItWereCompleteNeverCompletesIt) {
  // What the plan was before the embedding's skipped all-reduce was modelled.
  Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  sliceInsteadEverywhere(plan, 0, Phase::kEntry, OpKind::kReduceScatter);
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(v.stage, 0);
  EXPECT_NE(v.term.find("e(t"), std::string::npos) << v.term;  // an embedding shard's part
}

TEST(TwoStageWrongPlans, AnEmbeddingAllReducedBeforeLayer0sReduceScatterIsCountedTwice) {
  // As if VocabParallelEmbedding all-reduced inside maybe_input_scattered.
  Plan plan = mustBuild(twoStageCase("*-*E", {.tp = 2}, {4}, inputScattered()));
  for (auto& ops : plan.ranks) {
    const int i = seam::testing::findOp(plan, static_cast<int>(&ops - plan.ranks.data()), 0,
                                        Phase::kEntry, OpKind::kReduceScatter);
    ASSERT_GE(i, 0);
    Op ar = ops[i];
    ar.kind = OpKind::kAllReduce;
    ar.rows_out = ar.rows_in;
    ops.insert(ops.begin() + i, ar);
  }
  const Violation v = firstViolation(plan);
  EXPECT_EQ(v.property, Property::kOwedOnce);
  EXPECT_EQ(v.cls, ViolationClass::kCountedTwice);
  EXPECT_EQ(v.stage, 0);
}

}  // namespace
}  // namespace seam
