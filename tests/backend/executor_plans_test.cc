// Plans run on GPUs (backend/executor.h), skipped without them: in exact
// mode every plan must be bit-identical to the single-rank reference and to
// the CPU executor on every rank (world one, prefill CP, TP and DP attention,
// the DP ops, deepep, LongCat-Flash's branch, LayerNorm SP, two-batch
// overlap, routed MoE stages, pipeline stages); real mode deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../sim/case_builders.h"
#include "branch_tbo_cases.h"
#include "gpu_test_support.h"
#include "seam/backend/executor.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::backend {
namespace {

using gpu_testing::expectIdenticalToReference;
using gpu_testing::quick;
using seam::testing::patternCase;
using seam::testing::twoStageCase;

TEST(GpuExecutorOnGpus, WorldOnePlansAreBitIdenticalToTheReference) {
  SEAM_NEED_GPUS(1);
  for (const char* pattern : {"M-*E-", "MEM*E", "M-M*E/*E", "E*E-", "--M*"}) {
    SCOPED_TRACE(pattern);
    expectIdenticalToReference(patternCase(pattern, {}, {3}));
  }
}

TEST(GpuExecutorOnGpus, MlaPrefillCpOnInterleavedShardsIsBitIdenticalToTheReference) {
  SEAM_NEED_GPUS(2);
  // MLA prefill CP as _deepseek_family_overrides runs it (deepep, ep = tp,
  // fully-DP dense FFNs): token g on CP rank g mod 2, shards padded to equal
  // rows; every FFN runs on the shard, the model boundary gathers over attn_cp.
  for (BoundaryReduction red : {BoundaryReduction::kAr, BoundaryReduction::kRs}) {
    Flags f;
    f.mode = ForwardMode::kExtend;
    f.reduction = red;
    f.a2a = A2aBackend::kDeepep;
    f.dense_tp1 = true;
    for (int tokens : {5, 8, 1}) {
      SCOPED_TRACE(std::to_string(tokens) + " tokens, reduction " +
                   std::to_string(static_cast<int>(red)));
      const Case c = twoStageCase("*-*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {tokens}, f);
      auto plan = buildPlan(c, PolicyKind::kDeclared);
      ASSERT_TRUE(plan.hasValue()) << plan.status().message();
      // One token is fewer than the CP ranks: not sharded, the ranks hold replicas.
      EXPECT_EQ(plan->cp_layout, tokens >= 2 ? CpLayout::kInterleave : CpLayout::kReplicated);
      expectIdenticalToReference(c);
    }
  }
}

TEST(GpuExecutorOnGpus, GqaPrefillCpOnZigzagShardsIsBitIdenticalToTheReference) {
  SEAM_NEED_GPUS(2);
  // GQA prefill CP: rank r holds zigzag blocks r and 3 - r, padded to a
  // multiple of 4 rows; each FFN gathers the shards over the MoE-CP group
  // (aliased to attn_cp), all-reduces and takes its block back (or, with
  // moe_dp == attn_cp, the MoE runs on the shard); the model boundary
  // gathers and reorders the output.
  Flags f;
  f.mode = ForwardMode::kExtend;
  for (int tokens : {128, 131}) {
    for (int moe_dp : {1, 2}) {
      SCOPED_TRACE(std::to_string(tokens) + " tokens, moe_dp " + std::to_string(moe_dp));
      Case c = twoStageCase("*-*E", {.tp = 2, .attn_cp = 2, .moe_dp = moe_dp}, {tokens}, f);
      c.model.shape.q_lora_rank = kNotApplicable;  // GQA attention
      auto plan = buildPlan(c, PolicyKind::kDeclared);
      ASSERT_TRUE(plan.hasValue()) << plan.status().message();
      EXPECT_EQ(plan->cp_layout, CpLayout::kZigzag);
      expectIdenticalToReference(c);
    }
  }
}

TEST(GpuExecutorOnGpus, TensorAndDataParallelPlansAreBitIdenticalOnEveryRank) {
  SEAM_NEED_GPUS(2);
  for (const char* pattern : {"M-*E-", "MEM*E"}) {
    SCOPED_TRACE(pattern);
    expectIdenticalToReference(patternCase(pattern, {.tp = 2}, {4}));
    expectIdenticalToReference(patternCase(pattern, {.tp = 2}, {5}));
    expectIdenticalToReference(patternCase(pattern, {.tp = 2, .attn_dp = 2}, {3, 2}));
    expectIdenticalToReference(
        patternCase(pattern, {.tp = 2, .attn_dp = 2}, {4, 0}));  // an idle DP rank
  }
  Flags no_fusion;
  no_fusion.fusion = false;
  expectIdenticalToReference(patternCase("M-*E-", {.tp = 2}, {3}, no_fusion));
  Flags sum_len;
  sum_len.dp_padding = DpPadding::kSumLen;
  expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .attn_dp = 2}, {3, 1}, sum_len));
  for (BoundaryReduction red :
       {BoundaryReduction::kRs, BoundaryReduction::kRsv, BoundaryReduction::kRsRsv}) {
    Flags f;
    f.reduction = red;
    expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .attn_dp = 2}, {3, 2}, f));
    expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .attn_dp = 2}, {4, 4}, f));
  }
  expectIdenticalToReference(patternCase("M-M*E/*E", {.tp = 2}, {5}));  // the MTP step
  Flags capture;
  capture.capture = {2};
  expectIdenticalToReference(patternCase("M-*E-", {.tp = 2}, {3}, capture));  // an aux snapshot
}

TEST(GpuExecutorOnGpus, DpOpsRunSglangsCollectivesForTheirPaddingMode) {
  SEAM_NEED_GPUS(2);
  // tp=2 attn_dp=2 (attn_tp 1), shards of 3 and 2 tokens: MAX_LEN gathers
  // all-gather M=3 rows per rank and the DP reduce-scatter hands each rank
  // its 3-row slot; SUM_LEN gathers all-reduce the 3+2 rows.
  // SGLANG_DP_USE_GATHERV: SUM_LEN gathers as grouped broadcasts (pynccl's all_gatherv).
  struct Expect {
    DpPadding padding;
    BoundaryReduction reduction;
    bool gatherv;
    const char* gather_call;
    int gather_rows;
    const char* return_call;  // dp_reduce_scatter, when the plan has one
    int return_rows;
  };
  for (const Expect& e :
       {Expect{DpPadding::kMaxLen, BoundaryReduction::kRs, false, "all_gather", 3, "reduce_scatter",
               3},
        Expect{DpPadding::kSumLen, BoundaryReduction::kAr, false, "all_reduce", 5, "", 0},
        Expect{DpPadding::kSumLen, BoundaryReduction::kAr, true, "broadcast", 0, "", 0}}) {
    Flags f;
    f.dp_padding = e.padding;
    f.reduction = e.reduction;
    f.dp_gatherv = e.gatherv;
    const Case c = patternCase("MEM*E", {.tp = 2, .attn_dp = 2}, {3, 2}, f);
    SCOPED_TRACE(reproduceCommand(c, "declared"));
    expectIdenticalToReference(c);
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    ASSERT_TRUE(plan.hasValue());
    const GpuRunOptions o = quick();
    auto gpu = runPlanOnGpus(*plan, o);
    ASSERT_TRUE(gpu.hasValue()) << gpu.status().message();
    int gathers = 0, returns = 0;
    for (const OpTiming& t : gpu->timings) {
      if (t.kind == OpKind::kDpGatherPartial || t.kind == OpKind::kDpGatherReplicate) {
        ++gathers;
        EXPECT_EQ(t.nccl_call, e.gather_call) << "rank " << t.rank << " op " << t.op_index;
        EXPECT_EQ(t.nccl_count, static_cast<std::int64_t>(e.gather_rows) * o.shape.hidden);
      } else if (t.kind == OpKind::kDpReduceScatter) {
        ++returns;
        EXPECT_EQ(t.nccl_call, e.return_call) << "rank " << t.rank << " op " << t.op_index;
        EXPECT_EQ(t.nccl_count, static_cast<std::int64_t>(e.return_rows) * o.shape.hidden);
      } else if (t.kind == OpKind::kDpScatter) {
        EXPECT_EQ(t.nccl_call, "") << "dp_scatter is a copy";
      }
    }
    EXPECT_GT(gathers, 0);
    EXPECT_EQ(returns > 0, std::string(e.return_call) != "");
  }
}

TEST(GpuExecutorOnGpus, DeepepDispatchAndCombineAreBitIdentical) {
  SEAM_NEED_GPUS(2);
  Flags deepep;
  deepep.a2a = A2aBackend::kDeepep;
  expectIdenticalToReference(
      patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {5}, deepep));  // 5 tokens padded to 6
  expectIdenticalToReference(
      patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {4}, deepep));  // no padding
  deepep.capture = {1};  // a snapshot on local rows, gathered
  expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {5}, deepep));
}

// LongCat-Flash's MoE branch: each rank's branch buffer takes a copy of the
// normed input, computes the MoE on it, completes its sum (and under DP
// attention dp_scatters its own full rows), and is added into the hidden
// state after mlp1's sum, as replay.h defines it.
TEST(GpuBranchPlans, LongCatFlashOnOneGpuIsBitIdenticalToTheReference) {
  SEAM_NEED_GPUS(1);
  for (const Case& c : seam::testing::branchCases(1)) expectIdenticalToReference(c);
}

TEST(GpuBranchPlans, LongCatFlashUnderTpAndDpAttentionIsBitIdenticalOnEveryRank) {
  SEAM_NEED_GPUS(2);
  for (const Case& c : seam::testing::branchCases(2)) expectIdenticalToReference(c);
}

// LayerNorm SP: norms on padded equal chunks of the shard's rows, all_gather
// of the chunks narrowed to M before each mixer and FFN, reduce_scatter of
// the M rows padded to tp chunks after it, the final norm on the chunks and
// the exit gather's rows the output.
TEST(GpuLayerNormSp, PaddedEqualShardsOnTwoGpusAreBitIdenticalOnEveryRank) {
  SEAM_NEED_GPUS(2);
  for (const Case& c : seam::testing::layerNormSpCases()) expectIdenticalToReference(c);
}

// Two-batch overlap: each half runs on its own hidden state and residual and
// its own rows (its DP buffers too), split from and merged into the batch's;
// the halves' ops, collectives included, run in the plan's interleaved order.
TEST(GpuTboPlans, AWorldOneTboPlanIsBitIdenticalToTheReference) {
  SEAM_NEED_GPUS(1);
  for (const Case& c : seam::testing::tboCases(1)) expectIdenticalToReference(c);
}

TEST(GpuTboPlans, TboPlansOnTwoGpusAreBitIdenticalOnEveryRank) {
  SEAM_NEED_GPUS(2);
  for (const Case& c : seam::testing::tboCases(2)) expectIdenticalToReference(c);
}

TEST(GpuTboPlans, RealModeBranchAndTboPlansAreDeterministicAndReplayFromAGraph) {
  SEAM_NEED_GPUS(1);
  for (const Case& c :
       {seam::testing::branchCases(1).front(), seam::testing::tboCases(1).front()}) {
    SCOPED_TRACE(reproduceCommand(c, "declared"));
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    ASSERT_TRUE(plan.hasValue()) << plan.status().message();
    GpuRunOptions o = quick(numeric::Mode::kReal);
    o.shape = {.hidden = 256, .inner = 512};
    o.graph_replays = 2;
    auto first = runPlanOnGpus(*plan, o);
    auto second = runPlanOnGpus(*plan, o);
    ASSERT_TRUE(first.hasValue()) << first.status().message();
    ASSERT_TRUE(second.hasValue()) << second.status().message();
    ASSERT_FALSE(first->hung || second->hung) << first->hang_report << second->hang_report;
    EXPECT_EQ(first->device_hash, second->device_hash);
    for (const auto& stack : first->output.rows) {
      for (float v : stack) ASSERT_TRUE(std::isfinite(v));
    }
    // The lanes' swaps and the branch are captured with the step.
    for (const GraphStep& g : first->graph) EXPECT_TRUE(g.identical) << "rank " << g.rank;
    // Not bit-identical to the CPU (cuBLAS sums in another order; LongCat's
    // 28 routed layers may pick another expert on a near tie): recorded.
    const OutputDiff d =
        compareOutputs(first->output, runPlanNumeric(*plan, o.mode, o.shape).output);
    RecordProperty(plan->tbo_split.empty() ? "branch_real_mode_vs_cpu" : "tbo_real_mode_vs_cpu",
                   d.describe());
    if (!plan->tbo_split.empty()) {
      EXPECT_LT(d.max_abs, 0.5) << d.describe();
    }
  }
}

// MoE stages route (numeric::moeShard): router GEMM, the top-k kernel, a
// GEMM pair per owned expert, gated sums in ascending expert order.
TEST(GpuMoeRouting, ExactModeIsBitIdenticalToTheCpuOverEpMoeTpAndDeepep) {
  SEAM_NEED_GPUS(2);
  // nemotron-3-nano's shapes, shortened: EP group, MoE-TP group, DP attention with an idle rank.
  expectIdenticalToReference(patternCase("MEMEM*E", {.tp = 2, .moe_ep = 2}, {5}));
  expectIdenticalToReference(patternCase("MEMEM*E", {.tp = 2}, {5}));
  expectIdenticalToReference(patternCase("MEMEM*E", {.tp = 2, .attn_dp = 2, .moe_ep = 2}, {3, 0}));
  // deepseek-v3's shapes (two-stage, a dense first layer) with the deepep all-to-all.
  Flags deepep;
  deepep.a2a = A2aBackend::kDeepep;
  expectIdenticalToReference(twoStageCase("*-*E*E", {.tp = 2, .moe_ep = 2}, {5}, deepep));
  expectIdenticalToReference(
      twoStageCase("*-*E/*E", {.tp = 2, .moe_ep = 2}, {4}, deepep));  // and its MTP step
}

TEST(GpuMoeRouting, ExactModeAtNemotron3NanoSizesIsBitIdenticalToTheCpu) {
  SEAM_NEED_GPUS(2);
  // Hidden 2688, shared expert 3712, routed experts 1856 wide (the preset's).
  expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {3}),
                             {.hidden = 2688, .inner = 3712});
}

TEST(GpuMoeRouting, TheMergedTpGroupOfFourIsBitIdenticalToTheCpu) {
  SEAM_NEED_GPUS(4);
  // moe_ep 2 x moe_tp 2: the EP and MoE-TP sums merge into one TP all-reduce.
  expectIdenticalToReference(patternCase("MEMEM*E", {.tp = 4, .moe_ep = 2}, {5}));
  Flags deepep;
  deepep.a2a = A2aBackend::kDeepep;
  expectIdenticalToReference(patternCase("MEMEM*E", {.tp = 4, .moe_ep = 4}, {6}, deepep));
}

TEST(GpuMoeRouting, RealModeIsDeterministicAndCloseToTheCpu) {
  SEAM_NEED_GPUS(2);
  Flags deepep;
  deepep.a2a = A2aBackend::kDeepep;
  for (const Case& c : {patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {4}),
                        patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {5}, deepep)}) {
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    ASSERT_TRUE(plan.hasValue());
    GpuRunOptions o = quick(numeric::Mode::kReal);
    o.shape = {.hidden = 256, .inner = 512};
    auto first = runPlanOnGpus(*plan, o);
    auto second = runPlanOnGpus(*plan, o);
    ASSERT_TRUE(first.hasValue() && second.hasValue());
    ASSERT_FALSE(first->hung || second->hung);
    EXPECT_FALSE(first->ranks_disagree);
    // No atomics in the gated sums: the same plan gives the same bits.
    EXPECT_EQ(first->device_hash, second->device_hash);
    EXPECT_TRUE(compareOutputs(first->output, second->output).identical);
    for (const auto& stack : first->output.rows) {
      for (float v : stack) ASSERT_TRUE(std::isfinite(v));
    }
    // Not bit-identical to the CPU (cuBLAS sums in another order; a near tie
    // of router scores may even pick another expert), but close.
    const OutputDiff d =
        compareOutputs(first->output, runPlanNumeric(*plan, o.mode, o.shape).output);
    RecordProperty("moe_real_mode_vs_cpu", d.describe());
    EXPECT_LT(d.max_abs, 0.5) << d.describe();
  }
}

TEST(GpuExecutorOnGpus, PipelineStagesSendAndReceive) {
  SEAM_NEED_GPUS(2);
  expectIdenticalToReference(patternCase("M-|*E", {.pp = 2}, {3}));
}

TEST(GpuExecutorOnGpus, RealModeRanksAgreeAndStayFinite) {
  SEAM_NEED_GPUS(2);
  const Case c = patternCase("M-*E-", {.tp = 2}, {4});
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue());
  GpuRunOptions o = quick(numeric::Mode::kReal);
  o.shape = {.hidden = 256, .inner = 512};
  auto gpu = runPlanOnGpus(*plan, o);
  ASSERT_TRUE(gpu.hasValue()) << gpu.status().message();
  ASSERT_FALSE(gpu->hung) << gpu->hang_report;
  EXPECT_FALSE(gpu->ranks_disagree);
  for (const auto& stack : gpu->output.rows) {
    for (float v : stack) ASSERT_TRUE(std::isfinite(v));
  }
  // Not bit-identical to the CPU (cuBLAS sums in another order), but close.
  const OutputDiff d = compareOutputs(gpu->output, runPlanNumeric(*plan, o.mode, o.shape).output);
  RecordProperty("real_mode_vs_cpu", d.describe());
  EXPECT_LT(d.max_abs, 0.5) << d.describe();
}

}  // namespace
}  // namespace seam::backend
