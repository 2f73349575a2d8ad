#include "seam/properties/gpu_verdict.h"

#include <gtest/gtest.h>

#include <cmath>

namespace seam::properties {
namespace {

/// A run of two ranks whose every comparison is bit-identical.
GpuRunRecord identicalRun(const char* mode) {
  GpuRunRecord run;
  run.numeric.mode = mode;
  run.cpu_ran = true;
  run.ranks = {GpuRankRecord{0, {}, {}}, GpuRankRecord{1, {}, {}}};
  return run;
}

NumericOutput output(float value) {
  NumericOutput out;
  out.rows = {{1.0f, value}};
  return out;
}

TEST(GpuVerdict, ExactModeIsIdenticalOnlyWhenEveryComparisonIsBitIdentical) {
  GpuRunRecord run = identicalRun("exact");
  GpuRunJudgement j = judgeGpuRun(run, output(2.0f));
  EXPECT_TRUE(j.ok);
  EXPECT_EQ(j.verdict, "identical");
  run.ranks[1].vs_reference.identical = false;
  j = judgeGpuRun(run, output(2.0f));
  EXPECT_FALSE(j.ok);
  EXPECT_EQ(j.verdict, "differs");
  // No rank produced a final output: nothing was compared.
  run = identicalRun("exact");
  run.ranks.clear();
  EXPECT_EQ(judgeGpuRun(run, output(2.0f)).verdict, "differs");
  // The CPU executor refused the plan.
  run = identicalRun("exact");
  run.cpu_ran = false;
  EXPECT_EQ(judgeGpuRun(run, output(2.0f)).verdict, "differs");
}

TEST(GpuVerdict, RealModeCompletesWithOtherBitsButNotWithANonFiniteOutput) {
  GpuRunRecord run = identicalRun("real");
  run.vs_cpu.identical = false;  // cuBLAS sums in another order
  EXPECT_EQ(judgeGpuRun(run, output(2.0f)).verdict, "completed");
  EXPECT_EQ(judgeGpuRun(run, output(NAN)).verdict, "failed");
  run.ranks_disagree = true;
  EXPECT_EQ(judgeGpuRun(run, output(2.0f)).verdict, "failed");
}

TEST(GpuVerdict, AGraphReplayThatDiffersFailsTheRunWhateverItsVerdict) {
  GpuRunRecord run = identicalRun("exact");
  run.graph = {GpuGraphRecord{}};
  run.graph[0].identical = false;
  const GpuRunJudgement j = judgeGpuRun(run, output(2.0f));
  EXPECT_EQ(j.verdict, "identical");
  EXPECT_FALSE(j.graph_identical);
  EXPECT_FALSE(j.ok);
}

TEST(GpuVerdict, TheFusedKernelMustMatchTheUnfusedOneBitForBitInExactModeOnly) {
  GpuRunRecord run = identicalRun("exact");
  run.fused_vs_unfused = OutputDiff{.identical = false};
  EXPECT_FALSE(judgeGpuRun(run, output(2.0f)).ok);
  run.numeric.mode = "real";
  EXPECT_TRUE(judgeGpuRun(run, output(2.0f)).ok);
}

TEST(GpuVerdict, AHungRunIsHung) {
  GpuRunRecord run = identicalRun("exact");
  run.hung = true;
  const GpuRunJudgement j = judgeGpuRun(run, NumericOutput{});
  EXPECT_EQ(j.verdict, "hung");
  EXPECT_FALSE(j.ok);
}

TEST(GpuVerdict, ABenchFailsOnADifferingReplayOrAnExactModeDifferenceOfTheFusedKernel) {
  GpuBenchRecord bench;
  EXPECT_EQ(judgeGpuBench(bench), "completed");
  bench.fused = {GpuFusedRecord{}};
  bench.fused->front().exact_identical = true;
  bench.fused->front().real_identical = false;  // bf16 rounding: reported, not judged
  EXPECT_EQ(judgeGpuBench(bench), "completed");
  bench.graph = {GpuGraphRecord{}};
  EXPECT_EQ(judgeGpuBench(bench), "failed");
}

}  // namespace
}  // namespace seam::properties
