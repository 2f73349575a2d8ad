// What the GPU tests of backend/ share: the GPUs visible, the skip of a
// test that needs more, quick run options, and the check that a case's
// declared plan runs on the GPUs bit-identical to the single-rank reference
// and to the CPU executor, on every rank.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "seam/backend/device.h"
#include "seam/backend/executor.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::backend::gpu_testing {

inline int visibleGpus() {
  auto d = listDevices();
  return d ? static_cast<int>(d->size()) : 0;
}

#define SEAM_NEED_GPUS(n)                                                                     \
  do {                                                                                        \
    const int seam_visible_ = ::seam::backend::gpu_testing::visibleGpus();                    \
    if (seam_visible_ < (n)) {                                                                \
      GTEST_SKIP() << "needs " << (n) << " CUDA GPU(s), " << seam_visible_                    \
                   << " visible (GPU tests run on the lent GPU machine: tools/gpu_check.sh)"; \
    }                                                                                         \
  } while (0)

/// Few iterations: these tests check values, not speed.
inline GpuRunOptions quick(numeric::Mode mode = numeric::Mode::kExact) {
  GpuRunOptions o;
  o.mode = mode;
  o.warmup = 1;
  o.iters = 2;
  return o;
}

/// Runs the declared plan of `c` on the GPUs in exact mode and expects the
/// output, and every rank's own rows, bit-identical to the reference and to
/// the CPU executor.
inline void expectIdenticalToReference(const Case& c, const numeric::Shape& shape = {}) {
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

}  // namespace seam::backend::gpu_testing
