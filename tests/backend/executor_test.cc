// The CUDA/NCCL executor (backend/executor.h). The first group runs
// everywhere: the pure parts (options, bandwidth formulas, percentiles, the
// watchdog's stall rule and report, the hash fold, per-rank comparison) and
// the refusal of a world larger than the visible GPUs. The second group needs
// GPUs and skips with a message without them: plans run in exact mode must be
// bit-identical to the single-rank reference on every rank, and a planted
// swap of two collectives must end as a reported hang, not a hung test.
#include "seam/backend/executor.h"

#include <gtest/gtest.h>

#include "seam/backend/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../sim/case_builders.h"
#include "branch_tbo_cases.h"
#include "seam/backend/device.h"
#include "seam/sim/numeric_executor.h"
#include "seam/sim/policy.h"

namespace seam::backend {
namespace {

using seam::testing::patternCase;
using seam::testing::twoStageCase;

// ---- everywhere ------------------------------------------------------------------

TEST(GpuExecutorOptions, RefuseSizesAndCountsThatCannotRun) {
  EXPECT_TRUE(validateRunOptions({}).isOk());
  GpuRunOptions o;
  o.iters = 0;
  EXPECT_EQ(validateRunOptions(o).code(), StatusCode::kInvalidInput);
  o = {};
  o.warmup = -1;
  EXPECT_EQ(validateRunOptions(o).code(), StatusCode::kInvalidInput);
  o = {};
  o.shape.hidden = 0;
  EXPECT_NE(validateRunOptions(o).message().find("hidden"), std::string::npos);
  o = {};
  o.shape.inner = -3;
  EXPECT_NE(validateRunOptions(o).message().find("inner"), std::string::npos);
  o = {};
  o.watchdog_seconds = 0;
  EXPECT_EQ(validateRunOptions(o).code(), StatusCode::kInvalidInput);
  o = {};
  o.graph_replays = -1;
  EXPECT_NE(validateRunOptions(o).message().find("graph replays"), std::string::npos);
}

TEST(GpuExecutorOptions, ArAddNormPathsHaveNames) {
  EXPECT_STREQ(arAddNormPathName(ArAddNormPath::kFused), "fused");
  EXPECT_STREQ(arAddNormPathName(ArAddNormPath::kNccl), "nccl+add_norm");
  EXPECT_STREQ(arAddNormPathName(ArAddNormPath::kLocal), "add_norm");
  EXPECT_STREQ(arAddNormPathName(ArAddNormPath::kFusedLl), "fused-ll");
  EXPECT_STREQ(arAddNormPathName(ArAddNormPath::kNotArAddNorm), "-");
}

TEST(GpuExecutorOptions, TheLlProtocolCarriesSmallCallsOfRowsUpTo4096WideAndTheFlagProtocolTheRest) {
  for (PeerProtocol p : {PeerProtocol::kAuto, PeerProtocol::kFlag, PeerProtocol::kLl}) {
    PeerProtocol back = PeerProtocol::kFlag;
    ASSERT_TRUE(parsePeerProtocol(peerProtocolName(p), &back));
    EXPECT_EQ(back, p);
  }
  PeerProtocol unused;
  EXPECT_FALSE(parsePeerProtocol("LL", &unused));
  EXPECT_FALSE(parsePeerProtocol("", &unused));
  // 64 tokens of 4096 fp32 values are exactly kFusedLlMaxBytes.
  const int max_rows = static_cast<int>(kFusedLlMaxBytes / sizeof(float) / 4096);
  EXPECT_EQ(max_rows, 64);
  EXPECT_TRUE(fusedSendsLl(PeerProtocol::kAuto, 1, 4096));
  EXPECT_TRUE(fusedSendsLl(PeerProtocol::kLl, max_rows, 4096));
  EXPECT_FALSE(fusedSendsLl(PeerProtocol::kLl, max_rows + 1, 4096));
  EXPECT_TRUE(fusedSendsLl(PeerProtocol::kLl, 1, 4095)) << "an odd width pads its last line";
  EXPECT_TRUE(fusedSendsLl(PeerProtocol::kLl, 512, 250)) << "a narrow row takes one line set";
  EXPECT_FALSE(fusedSendsLl(PeerProtocol::kLl, 513, 250));
  EXPECT_TRUE(fusedSendsLl(PeerProtocol::kLl, 85, 2688)) << "2688 values take 6 line sets of 512";
  EXPECT_FALSE(fusedSendsLl(PeerProtocol::kLl, 86, 2688));
  // kAuto: kLl up to kFusedLlAutoBytes (12 rows of 4096, 18 of 2688), as measured.
  EXPECT_TRUE(fusedSendsLl(PeerProtocol::kAuto, 12, 4096));
  EXPECT_FALSE(fusedSendsLl(PeerProtocol::kAuto, 13, 4096));
  EXPECT_TRUE(fusedSendsLl(PeerProtocol::kAuto, 18, 2688));
  EXPECT_FALSE(fusedSendsLl(PeerProtocol::kAuto, 19, 2688));
  EXPECT_FALSE(fusedSendsLl(PeerProtocol::kLl, 1, 4097)) << "rows wider than the registers hold";
  EXPECT_FALSE(fusedSendsLl(PeerProtocol::kFlag, 1, 4096));
}

TEST(GpuExecutorBandwidth, BusFactorsAreNcclTestsDefinitions) {
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kArAddNorm, 4), 1.5);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kAllGatherv, 2), 0.5);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kSend, 2), 1.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kNorm, 8), 0.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(OpKind::kAllReduce, 1), 0.0);
  // 1 GB in 1 s is 1 GB/s; in 1 ms, 1000 GB/s.
  EXPECT_DOUBLE_EQ(algBandwidthGBs(1'000'000'000, 1e6), 1.0);
  EXPECT_DOUBLE_EQ(algBandwidthGBs(1'000'000'000, 1e3), 1000.0);
  EXPECT_DOUBLE_EQ(algBandwidthGBs(1024, 0), 0.0);
}

TEST(GpuExecutorTiming, SummarizesMedianAndTenthPercentiles) {
  const TimingSummary t = summarizeTimes({10, 1, 9, 2, 8, 3, 7, 4, 6, 5, 11});
  EXPECT_DOUBLE_EQ(t.median, 6);
  EXPECT_DOUBLE_EQ(t.p10, 2);
  EXPECT_DOUBLE_EQ(t.p90, 10);
  const TimingSummary one = summarizeTimes({3.5});
  EXPECT_DOUBLE_EQ(one.median, 3.5);
  EXPECT_DOUBLE_EQ(one.p10, 3.5);
  EXPECT_DOUBLE_EQ(summarizeTimes({1, 2}).median, 1.5);
}

TEST(GpuExecutorWatchdog, StallsOnlyAfterTheCountersStopForTheTimeout) {
  StallDetector d(10);
  EXPECT_FALSE(d.update({0, 0}, 0.0));
  EXPECT_FALSE(d.update({1, 0}, 5.0));   // rank 0 advanced: the clock restarts
  EXPECT_FALSE(d.update({1, 0}, 14.9));
  EXPECT_FALSE(d.update({1, 3}, 14.95));  // rank 1 advanced
  EXPECT_FALSE(d.update({1, 3}, 24.9));
  EXPECT_TRUE(d.update({1, 3}, 24.95));
  EXPECT_NEAR(d.idleSeconds(), 10.0, 1e-9);
}

TEST(GpuExecutorWatchdog, ReportNamesEveryRanksOpAndGroup) {
  Flags flags;
  flags.a2a = A2aBackend::kDeepep;
  auto plan = buildPlan(patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {5}, flags), PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue()) << plan.status().message();
  ASSERT_EQ(plan->ranks[0][2].kind, OpKind::kReduceScatterv);
  ASSERT_EQ(plan->ranks[1][5].kind, OpKind::kAllToAll);
  const std::string report = formatHangReport(
      *plan, {{.rank = 0, .op_index = 2, .iteration = 0}, {.rank = 1, .op_index = 5, .iteration = 0}}, 10.04, 12);
  EXPECT_EQ(report.rfind("no progress for 10.0 s:", 0), 0u) << report;
  EXPECT_NE(report.find("rank 0 waits in op 2 (reduce_scatterv on attn_tp [0,1], stack 0 layer 1 stage 1 entry) "
                        "in iteration 1 of 12"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("rank 1 waits in op 5 (all_to_all on moe_ep [0,1]"), std::string::npos) << report;
  const std::string setup = formatHangReport(*plan, {{.rank = 0, .setting_up = true}, {.rank = 1, .finished = true}},
                                             60, 12);
  EXPECT_NE(setup.find("rank 0 is creating its communicators; rank 1 has finished"), std::string::npos) << setup;
}

TEST(GpuExecutorHash, FoldsLikeNumericOutputHash) {
  NumericOutput out;
  out.hidden = 3;
  out.tokens = 2;
  out.rows = {{1, -2, 0.5f, 1e6f, -0.0f, 3}, {7, 8, 9, 10, 11, 12}};
  std::uint64_t h = kFnvOffsetBasis;
  // Shard by shard, stack by stack, as the devices fold it.
  h = fnv1aFloats(h, out.rows[0].data(), 3);
  h = fnv1aFloats(h, out.rows[0].data() + 3, 3);
  h = fnv1aFloats(h, out.rows[1].data(), 6);
  EXPECT_EQ(h, out.hash());
}

TEST(GpuExecutorCompare, FindsTheFirstDifferingElementOfARanksRows) {
  NumericOutput expected;
  expected.hidden = 2;
  expected.tokens = 3;
  expected.rows = {{0, 1, 2, 3, 4, 5}};
  RankFinals f;
  f.rank = 1;
  f.tokens = {{1, 2}};
  f.rows = {{2, 3, 4, 5}};
  EXPECT_TRUE(compareRankFinals(f, expected).identical);
  f.rows[0][3] = 5.5f;
  const OutputDiff d = compareRankFinals(f, expected);
  EXPECT_FALSE(d.identical);
  EXPECT_EQ(d.token, 2);
  EXPECT_EQ(d.element, 1);
  EXPECT_DOUBLE_EQ(d.max_abs, 0.5);
}

int visibleGpus() {
  auto d = listDevices();
  return d ? static_cast<int>(d->size()) : 0;
}

TEST(GpuExecutor, RefusesAWorldLargerThanTheVisibleGpus) {
  const int visible = visibleGpus();
  Plan plan;
  plan.source.config = ParallelConfig{.tp = visible + 1};
  plan.source.batch.tokens = {1};
  plan.ranks.resize(visible + 1);
  auto run = runPlanOnGpus(plan, {});
  ASSERT_FALSE(run.hasValue());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(run.status().message(), "world " + std::to_string(visible + 1) + " needs " + std::to_string(visible + 1) +
                                        " GPUs, " + std::to_string(visible) + " visible");
}

// ---- on GPUs ------------------------------------------------------------------------

#define SEAM_NEED_GPUS(n)                                                                                   \
  do {                                                                                                      \
    const int seam_visible_ = visibleGpus();                                                                \
    if (seam_visible_ < (n)) {                                                                              \
      GTEST_SKIP() << "needs " << (n) << " CUDA GPU(s), " << seam_visible_                                  \
                   << " visible (GPU tests run on the lent GPU machine: tools/gpu_check.sh)";              \
    }                                                                                                       \
  } while (0)

/// Few iterations: these tests check values, not speed.
GpuRunOptions quick(numeric::Mode mode = numeric::Mode::kExact) {
  GpuRunOptions o;
  o.mode = mode;
  o.warmup = 1;
  o.iters = 2;
  return o;
}

/// Runs the declared plan of `c` on the GPUs in exact mode and expects the
/// output, and every rank's own rows, bit-identical to the reference and to
/// the CPU executor.
void expectIdenticalToReference(const Case& c, const numeric::Shape& shape = {}) {
  const std::string repro = reproduceCommand(c, "declared");
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue()) << plan.status().message() << "\n" << repro;
  GpuRunOptions o = quick();
  o.shape = shape;
  auto gpu = runPlanOnGpus(*plan, o);
  ASSERT_TRUE(gpu.hasValue()) << gpu.status().message() << "\n" << repro;
  ASSERT_FALSE(gpu->hung) << gpu->hang_report << "\n" << repro;
  const NumericOutput ref = runReference(c, o.mode, o.shape);
  const NumericRun cpu = runPlanNumeric(*plan, o.mode, o.shape);
  ASSERT_TRUE(cpu.ran()) << repro;
  EXPECT_FALSE(gpu->ranks_disagree) << repro;
  const OutputDiff d = compareOutputs(gpu->output, ref);
  EXPECT_TRUE(d.identical) << d.describe() << "\n" << repro;
  EXPECT_EQ(gpu->device_hash, ref.hash()) << repro;
  EXPECT_TRUE(compareOutputs(gpu->output, cpu.output).identical) << repro;
  ASSERT_FALSE(gpu->finals.empty()) << repro;
  for (const RankFinals& f : gpu->finals) {
    const OutputDiff rd = compareRankFinals(f, ref);
    EXPECT_TRUE(rd.identical) << "rank " << f.rank << ": " << rd.describe() << "\n" << repro;
  }
  size_t ops = 0;
  for (const auto& r : plan->ranks) ops += r.size();
  EXPECT_EQ(gpu->timings.size(), ops);
  for (const OpTiming& t : gpu->timings) {
    EXPECT_GE(t.median_us, 0);
    EXPECT_LE(t.p10_us, t.median_us);
    EXPECT_LE(t.median_us, t.p90_us);
  }
}

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
      SCOPED_TRACE(std::to_string(tokens) + " tokens, reduction " + std::to_string(static_cast<int>(red)));
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
    expectIdenticalToReference(patternCase(pattern, {.tp = 2, .attn_dp = 2}, {4, 0}));  // an idle DP rank
  }
  Flags no_fusion;
  no_fusion.fusion = false;
  expectIdenticalToReference(patternCase("M-*E-", {.tp = 2}, {3}, no_fusion));
  Flags sum_len;
  sum_len.dp_padding = DpPadding::kSumLen;
  expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .attn_dp = 2}, {3, 1}, sum_len));
  for (BoundaryReduction red : {BoundaryReduction::kRs, BoundaryReduction::kRsv, BoundaryReduction::kRsRsv}) {
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
       {Expect{DpPadding::kMaxLen, BoundaryReduction::kRs, false, "all_gather", 3, "reduce_scatter", 3},
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
  expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {5}, deepep));  // uneven: the v collectives
  expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {4}, deepep));  // even: NCCL's own
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
  for (const Case& c : {seam::testing::branchCases(1).front(), seam::testing::tboCases(1).front()}) {
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
    const OutputDiff d = compareOutputs(first->output, runPlanNumeric(*plan, o.mode, o.shape).output);
    RecordProperty(plan->tbo_split.empty() ? "branch_real_mode_vs_cpu" : "tbo_real_mode_vs_cpu", d.describe());
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
  expectIdenticalToReference(twoStageCase("*-*E/*E", {.tp = 2, .moe_ep = 2}, {4}, deepep));  // and its MTP step
}

TEST(GpuMoeRouting, ExactModeAtNemotron3NanoSizesIsBitIdenticalToTheCpu) {
  SEAM_NEED_GPUS(2);
  // Hidden 2688, shared expert 3712, routed experts 1856 wide (the preset's).
  expectIdenticalToReference(patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {3}), {.hidden = 2688, .inner = 3712});
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
    const OutputDiff d = compareOutputs(first->output, runPlanNumeric(*plan, o.mode, o.shape).output);
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

// ---- the fused all-reduce + add + RMSNorm and graph capture -----------------------

/// The declared plan of `c` run twice, ar_add_norm fused and unfused: the
/// fused run must really have used the kernel for every ar_add_norm op.
struct FusedPair {
  GpuRunResult fused, unfused;
};
FusedPair runFusedAndUnfused(const Case& c, GpuRunOptions o) {
  FusedPair out;
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  EXPECT_TRUE(plan.hasValue()) << plan.status().message();
  if (!plan) return out;
  for (bool fuse : {true, false}) {
    o.fuse_ar_add_norm = fuse;
    auto run = runPlanOnGpus(*plan, o);
    EXPECT_TRUE(run.hasValue()) << run.status().message();
    if (!run) return out;
    EXPECT_FALSE(run->hung) << run->hang_report;
    (fuse ? out.fused : out.unfused) = std::move(*run);
  }
  int fused_ops = 0;
  for (const OpTiming& t : out.fused.timings) {
    if (t.kind != OpKind::kArAddNorm || t.group_size < 2) continue;
    const ArAddNormPath want =
        fusedSendsLl(o.fused_protocol, static_cast<int>(t.bytes / 4 / o.shape.hidden),
                     o.shape.hidden)
            ? ArAddNormPath::kFusedLl
            : ArAddNormPath::kFused;
    EXPECT_EQ(t.path, want) << "rank " << t.rank << " op " << t.op_index;
    ++fused_ops;
  }
  for (const OpTiming& t : out.unfused.timings) {
    if (t.kind == OpKind::kArAddNorm && t.group_size > 1) EXPECT_EQ(t.path, ArAddNormPath::kNccl);
  }
  EXPECT_GT(fused_ops, 0) << "the plan has no ar_add_norm over two GPUs";
  return out;
}

TEST(GpuFusedArAddNorm, ExactModeIsBitIdenticalToNcclPlusAddNormWithEitherProtocol) {
  SEAM_NEED_GPUS(2);
  for (PeerProtocol protocol : {PeerProtocol::kFlag, PeerProtocol::kLl}) {
    for (const char* pattern : {"M-*E-", "M-M*E/*E"}) {
      SCOPED_TRACE(std::string(pattern) + " " + peerProtocolName(protocol));
      const Case c = patternCase(pattern, {.tp = 2}, {5});
      GpuRunOptions o = quick();
      o.fused_protocol = protocol;
      const FusedPair p = runFusedAndUnfused(c, o);
      const OutputDiff d = compareOutputs(p.fused.output, p.unfused.output);
      EXPECT_TRUE(d.identical) << d.describe();
      EXPECT_TRUE(compareOutputs(p.fused.output, runReference(c, numeric::Mode::kExact, {})).identical);
      EXPECT_FALSE(p.fused.ranks_disagree);
    }
  }
  // A hidden size that is no multiple of 4 (the kernel's scalar path) and
  // more rows than the kernel has blocks (each block takes several rows).
  GpuRunOptions o = quick();
  o.shape = {.hidden = 250, .inner = 64};
  const Case many = patternCase("M-*E-", {.tp = 2}, {300});
  const FusedPair p = runFusedAndUnfused(many, o);
  EXPECT_TRUE(compareOutputs(p.fused.output, p.unfused.output).identical);
  EXPECT_TRUE(compareOutputs(p.fused.output, runReference(many, o.mode, o.shape)).identical);
}

TEST(GpuFusedArAddNorm, RealModeIsWithinBf16RoundingOfNcclPlusAddNorm) {
  SEAM_NEED_GPUS(2);
  GpuRunOptions o = quick(numeric::Mode::kReal);
  o.shape = {.hidden = 512, .inner = 1024};
  const FusedPair p = runFusedAndUnfused(patternCase("M-*E-", {.tp = 2}, {8}), o);
  const OutputDiff d = compareOutputs(p.fused.output, p.unfused.output);
  RecordProperty("fused_vs_unfused_real", d.describe());
  // Two members: NCCL's sum and the kernel's are the same fp32 addition.
  EXPECT_LE(d.max_ulps, 1) << d.describe();
  EXPECT_FALSE(p.fused.ranks_disagree);
}

TEST(GpuFusedArAddNorm, KernelMatchesItsUnfusedTwinAtBenchSizesWithEitherProtocol) {
  SEAM_NEED_GPUS(2);
  for (PeerProtocol protocol : {PeerProtocol::kFlag, PeerProtocol::kAuto}) {
    auto rows = benchFusedArAddNorm({250, 2688}, {1, 7, 300, 400}, 3, protocol);
    ASSERT_TRUE(rows.hasValue()) << rows.status().message();
    ASSERT_EQ(rows->size(), 8u);
    for (const FusedBench& b : *rows) {
      SCOPED_TRACE(std::to_string(b.hidden) + " x " + std::to_string(b.tokens) + " " +
                   peerProtocolName(b.protocol));
      // auto: LL up to kFusedLlAutoBytes: 1 and 7 rows at either width, and
      // 300 rows of 250 values (300 KB) no longer.
      const bool ll = protocol == PeerProtocol::kAuto && b.tokens < 300;
      EXPECT_EQ(b.protocol, ll ? PeerProtocol::kLl : PeerProtocol::kFlag);
      EXPECT_TRUE(b.exact_identical);
      EXPECT_LE(b.real_max_ulps, 1);
      EXPECT_TRUE(b.trace_error.empty()) << b.trace_error;
      EXPECT_GT(b.fused_kernels.median, 0) << "CUPTI recorded no kernels";
      EXPECT_GT(b.fused.median, 0);
      EXPECT_GT(b.unfused.median, 0);
    }
  }
}

TEST(GpuGraphCapture, AReplayedStepIsBitIdenticalToTheEagerStep) {
  SEAM_NEED_GPUS(2);
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    const Case c = patternCase("M-*E-", {.tp = 2}, {4});
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    ASSERT_TRUE(plan.hasValue());
    GpuRunOptions o = quick(numeric::Mode::kReal);
    o.shape = {.hidden = 256, .inner = 512};
    o.graph_replays = 3;
    o.fuse_ar_add_norm = fuse;
    auto run = runPlanOnGpus(*plan, o);
    ASSERT_TRUE(run.hasValue()) << run.status().message();
    ASSERT_FALSE(run->hung) << run->hang_report;
    ASSERT_EQ(run->graph.size(), 2u);
    std::string notes;
    for (const std::string& n : run->notes) notes += n + "\n";
    for (const GraphStep& g : run->graph) {
      EXPECT_TRUE(g.identical) << "rank " << g.rank;
      EXPECT_GT(g.graph_median_us, 0);
      EXPECT_GT(g.eager_median_us, 0);
      EXPECT_GT(g.kernel_sum_us, 0) << "CUPTI recorded no kernels\n" << notes;
      EXPECT_GE(g.kernels, g.ops / 2);
      EXPECT_LE(g.kernel_sum_us, g.graph_median_us * 1.5) << "kernels outlast the replay";
      EXPECT_GT(g.op_sum_us, 0);
      EXPECT_EQ(g.ops, static_cast<int>(plan->ranks[g.rank].size()));
    }
  }
  // Exact mode with DP attention: gathers and scatters inside the graph.
  auto plan = buildPlan(patternCase("MEM*E", {.tp = 2, .attn_dp = 2}, {3, 2}), PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue());
  GpuRunOptions o = quick();
  o.graph_replays = 2;
  auto run = runPlanOnGpus(*plan, o);
  ASSERT_TRUE(run.hasValue()) << run.status().message();
  for (const GraphStep& g : run->graph) EXPECT_TRUE(g.identical) << "rank " << g.rank;
}

TEST(GpuFusedArAddNorm, AKernelWaitingForAPeerThatNeverComesEndsAsAReportedHang) {
  SEAM_NEED_GPUS(2);
  const Case c = patternCase("M-*E-", {.tp = 2}, {4});
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue());
  // Rank 1 runs its last ar_add_norm and the plain all_reduce in the other
  // order: rank 0's kernel waits for rank 1's flag, rank 1 in NCCL for rank 0.
  auto& ops = plan->ranks[1];
  int fused = -1, plain = -1;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (ops[i].kind == OpKind::kArAddNorm) fused = i;
    if (ops[i].kind == OpKind::kAllReduce && ops[i].hasGroup()) plain = i;
  }
  ASSERT_GE(fused, 0);
  ASSERT_GE(plain, 0);
  std::swap(ops[fused], ops[plain]);
  GpuRunOptions o = quick();
  o.watchdog_seconds = 10;
  auto run = runPlanOnGpus(*plan, o);
  ASSERT_TRUE(run.hasValue()) << run.status().message();
  EXPECT_TRUE(run->hung) << "the swapped plan completed";
  RecordProperty("hang_report", run->hang_report);
  expectIdenticalToReference(c);  // the devices are usable afterwards
}

TEST(GpuExecutorOnGpus, OneOpPlanAllReduceRunsBesideBareNccl) {
  SEAM_NEED_GPUS(2);
  auto bench = benchAllReduce(1 << 20, 5);
  ASSERT_TRUE(bench.hasValue()) << bench.status().message();
  EXPECT_GT(bench->bare_busbw, 0);
  EXPECT_GT(bench->plan_busbw, 0);
}

/// Swaps, on rank 1, the last pair of consecutive group collectives of which
/// exactly one is an all-to-all: the all-to-all is grouped send/recv, the
/// other a collective kernel, so the two ranks wait on each other for good.
bool plantSwap(Plan& plan) {
  auto& ops = plan.ranks[1];
  int prev = -1, a = -1, b = -1;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (!communicates(ops[i].kind) || !ops[i].hasGroup()) continue;
    if (prev >= 0 && ((ops[prev].kind == OpKind::kAllToAll) != (ops[i].kind == OpKind::kAllToAll))) {
      a = prev;
      b = i;
    }
    prev = i;
  }
  if (a < 0) return false;
  std::swap(ops[a], ops[b]);
  return true;
}

TEST(GpuExecutorOnGpus, APlantedCollectiveSwapEndsAsAReportedHang) {
  SEAM_NEED_GPUS(2);
  Flags deepep;
  deepep.a2a = A2aBackend::kDeepep;
  const Case c = patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {4}, deepep);
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue());
  ASSERT_TRUE(plantSwap(*plan));
  GpuRunOptions o = quick();
  o.watchdog_seconds = 10;
  const auto t0 = std::chrono::steady_clock::now();
  auto run = runPlanOnGpus(*plan, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(run.hasValue()) << run.status().message();
  EXPECT_TRUE(run->hung) << "the swapped plan completed";
  EXPECT_NE(run->hang_report.find("rank 0 waits in op"), std::string::npos) << run->hang_report;
  EXPECT_NE(run->hang_report.find("rank 1 waits in op"), std::string::npos) << run->hang_report;
  // Setup (contexts, communicators) plus the 10 s without progress, with room.
  EXPECT_LT(seconds, 60) << run->hang_report;
  RecordProperty("hang_report", run->hang_report);

  // The aborted communicators leave the devices usable.
  expectIdenticalToReference(c);
}

}  // namespace
}  // namespace seam::backend
