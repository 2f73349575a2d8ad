// The CUDA/NCCL executor's parts that run everywhere (backend/executor.h):
// options, bandwidth formulas, percentiles, the watchdog's stall rule and
// report, the hash fold, per-rank comparison, and the refusal of a world
// larger than the visible GPUs or of a plan with a planted rank order,
// chunk or reduction scale.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../sim/case_builders.h"
#include "gpu_test_support.h"
#include "seam/backend/executor.h"
#include "seam/sim/policy/policy.h"

namespace seam::backend {
namespace {

using gpu_testing::visibleGpus;
using seam::testing::patternCase;

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

TEST(GpuExecutorOptions,
     TheLlProtocolCarriesSmallCallsOfRowsUpTo4096WideAndTheFlagProtocolTheRest) {
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
  EXPECT_FALSE(d.update({1, 0}, 5.0));  // rank 0 advanced: the clock restarts
  EXPECT_FALSE(d.update({1, 0}, 14.9));
  EXPECT_FALSE(d.update({1, 3}, 14.95));  // rank 1 advanced
  EXPECT_FALSE(d.update({1, 3}, 24.9));
  EXPECT_TRUE(d.update({1, 3}, 24.95));
  EXPECT_NEAR(d.idleSeconds(), 10.0, 1e-9);
}

TEST(GpuExecutorWatchdog, ReportNamesEveryRanksOpAndGroup) {
  Flags flags;
  flags.a2a = A2aBackend::kDeepep;
  auto plan =
      buildPlan(patternCase("MEM*E", {.tp = 2, .moe_ep = 2}, {5}, flags), PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue()) << plan.status().message();
  ASSERT_EQ(plan->ranks[0][2].kind, OpKind::kReduceScatter);
  ASSERT_EQ(plan->ranks[1][5].kind, OpKind::kAllToAll);
  const std::string report = formatHangReport(
      *plan,
      {{.rank = 0, .op_index = 2, .iteration = 0}, {.rank = 1, .op_index = 5, .iteration = 0}},
      10.04, 12);
  EXPECT_EQ(report.rfind("no progress for 10.0 s:", 0), 0u) << report;
  EXPECT_NE(
      report.find(
          "rank 0 waits in op 2 (reduce_scatter on attn_tp [0,1], stack 0 layer 1 stage 1 entry) "
          "in iteration 1 of 12"),
      std::string::npos)
      << report;
  EXPECT_NE(report.find("rank 1 waits in op 5 (all_to_all on moe_ep [0,1]"), std::string::npos)
      << report;
  const std::string setup = formatHangReport(
      *plan, {{.rank = 0, .setting_up = true}, {.rank = 1, .finished = true}}, 60, 12);
  EXPECT_NE(setup.find("rank 0 is creating its communicators; rank 1 has finished"),
            std::string::npos)
      << setup;
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

TEST(GpuExecutor, RefusesAWorldLargerThanTheVisibleGpus) {
  const int visible = visibleGpus();
  Plan plan;
  plan.source.config = ParallelConfig{.tp = visible + 1};
  plan.source.batch.tokens = {1};
  plan.ranks.resize(visible + 1);
  auto run = runPlanOnGpus(plan, {});
  ASSERT_FALSE(run.hasValue());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(run.status().message(), "world " + std::to_string(visible + 1) + " needs " +
                                        std::to_string(visible + 1) + " GPUs, " +
                                        std::to_string(visible) + " visible");
}

TEST(GpuExecutor, RefusesAPlantedReductionScaleOrChunkBeforeTouchingADevice) {
  // The device code runs every reduction as a sum of the members' own chunks;
  // a plan a mutant gave another divisor or chunk is the simulator's to check.
  Plan plan = seam::testing::mustBuild(patternCase("M-", {.tp = 2}, {4}));
  for (auto& ops : plan.ranks) {
    for (Op& op : ops) {
      if (op.kind == OpKind::kAllReduce || op.kind == OpKind::kArAddNorm) op.divide_by = 2;
    }
  }
  auto run = runPlanOnGpus(plan, {});
  ASSERT_FALSE(run.hasValue());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(run.status().message().find("divide_by 2"), std::string::npos)
      << run.status().message();
}

}  // namespace
}  // namespace seam::backend
