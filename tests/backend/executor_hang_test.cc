// Hangs end as reports (backend/executor.h's watchdog), skipped without
// GPUs: a planted swap of two collectives, and a fused kernel waiting for a
// peer that never comes, each end as a reported hang, not a hung test, and
// leave the devices usable.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>

#include "../sim/case_builders.h"
#include "gpu_test_support.h"
#include "seam/backend/executor.h"
#include "seam/sim/policy/policy.h"

namespace seam::backend {
namespace {

using gpu_testing::expectIdenticalToReference;
using gpu_testing::quick;
using seam::testing::patternCase;

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

/// Swaps, on rank 1, the last pair of consecutive group collectives of which
/// exactly one is an all-to-all: the all-to-all is grouped send/recv, the
/// other a collective kernel, so the two ranks wait on each other for good.
bool plantSwap(Plan& plan) {
  auto& ops = plan.ranks[1];
  int prev = -1, a = -1, b = -1;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (!communicates(ops[i].kind) || !ops[i].hasGroup()) continue;
    if (prev >= 0 &&
        ((ops[prev].kind == OpKind::kAllToAll) != (ops[i].kind == OpKind::kAllToAll))) {
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
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
