// The fused all-reduce + add + RMSNorm kernel against NCCL plus the add+norm
// kernel (exact mode bit-identical, real mode within bf16 rounding, at bench
// sizes too), a step replayed from a CUDA graph against the eager step, and
// the one-op plan's all-reduce beside bare NCCL. Skipped without GPUs.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "../sim/case_builders.h"
#include "gpu_test_support.h"
#include "seam/backend/bench.h"
#include "seam/backend/executor.h"
#include "seam/sim/policy/policy.h"

namespace seam::backend {
namespace {

using gpu_testing::quick;
using seam::testing::patternCase;

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
    if (t.kind == OpKind::kArAddNorm && t.group_size > 1) {
      EXPECT_EQ(t.path, ArAddNormPath::kNccl);
    }
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
      EXPECT_TRUE(
          compareOutputs(p.fused.output, runReference(c, numeric::Mode::kExact, {})).identical);
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
  auto plan =
      buildPlan(patternCase("MEM*E", {.tp = 2, .attn_dp = 2}, {3, 2}), PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue());
  GpuRunOptions o = quick();
  o.graph_replays = 2;
  auto run = runPlanOnGpus(*plan, o);
  ASSERT_TRUE(run.hasValue()) << run.status().message();
  for (const GraphStep& g : run->graph) EXPECT_TRUE(g.identical) << "rank " << g.rank;
}

TEST(GpuExecutorOnGpus, OneOpPlanAllReduceRunsBesideBareNccl) {
  SEAM_NEED_GPUS(2);
  auto bench = benchAllReduce(1 << 20, 5);
  ASSERT_TRUE(bench.hasValue()) << bench.status().message();
  EXPECT_GT(bench->bare_busbw, 0);
  EXPECT_GT(bench->plan_busbw, 0);
}

}  // namespace
}  // namespace seam::backend
