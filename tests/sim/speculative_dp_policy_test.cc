// Under DP attention an EAGLE-family speculative run keeps an FFN's
// all-reduce return at its exit, while a reduce-scatter return still leaves
// for the next layer. Expected plans from SGLang's code, not from seam:
// layers/communicator/exit.py @060c48f7, `_ffn_sum_can_move_to_next_layer`
// (false under DP attention when the speculative algorithm is EAGLE-family;
// MTP runs as EAGLE, EAGLE3 takes the aux captures) gates only the fused
// all-reduce path of `_select_ffn_completion`; its reduce-scatter branch has
// no speculative clause.
#include <gtest/gtest.h>

#include <vector>

#include "case_builders.h"
#include "plan_probes.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"

namespace seam {
namespace {

using seam::testing::expectHolds;
using seam::testing::kindsAt;
using seam::testing::mustBuild;
using seam::testing::patternCase;

using Kinds = std::vector<OpKind>;

Flags speculativeFlags(std::vector<int> capture, BoundaryReduction reduction) {
  Flags f;
  f.capture = std::move(capture);
  f.reduction = reduction;
  return f;
}

const ParallelConfig kTp2Dp2{.tp = 2, .attn_dp = 2};

TEST(SpeculativeDp, WithACaptureTheFfnsAllReduceReturnRunsAtItsOwnExit) {
  const Plan plan = mustBuild(
      patternCase("M-M*", kTp2Dp2, {4, 4}, speculativeFlags({2}, BoundaryReduction::kAr)));
  for (int r = 0; r < plan.world(); ++r) {
    EXPECT_EQ(kindsAt(plan, r, 1, Phase::kExit), (Kinds{OpKind::kAllReduce, OpKind::kDpScatter}));
    // Nothing left owed: the capture (stage.py capture_output) takes the
    // output plus the residual, then the entry adds and norms.
    EXPECT_EQ(kindsAt(plan, r, 2, Phase::kEntry),
              (Kinds{OpKind::kSnapshot, OpKind::kAdd, OpKind::kAddNorm}))
        << "rank " << r;
  }
  expectHolds(plan);
}

TEST(SpeculativeDp, WithAnMtpStepTheFfnsAllReduceReturnRunsAtItsOwnExit) {
  const Plan plan = mustBuild(patternCase("M-M*/*E", kTp2Dp2, {4, 4}));
  for (int r = 0; r < plan.world(); ++r) {
    EXPECT_EQ(kindsAt(plan, r, 1, Phase::kExit), (Kinds{OpKind::kAllReduce, OpKind::kDpScatter}));
  }
  expectHolds(plan);
}

TEST(SpeculativeDp, AReduceScatterReturnStillLeavesForTheNextLayersEntry) {
  const Plan plan = mustBuild(
      patternCase("M-M*", kTp2Dp2, {4, 4}, speculativeFlags({2}, BoundaryReduction::kRs)));
  for (int r = 0; r < plan.world(); ++r) {
    EXPECT_TRUE(kindsAt(plan, r, 1, Phase::kExit).empty()) << "rank " << r;
    EXPECT_EQ(kindsAt(plan, r, 2, Phase::kEntry).front(), OpKind::kDpReduceScatter);
  }
  expectHolds(plan);
}

TEST(SpeculativeDp, WithoutSpeculationTheAllReduceReturnLeavesForTheNextLayersEntry) {
  const Plan plan =
      mustBuild(patternCase("M-M*", kTp2Dp2, {4, 4}, speculativeFlags({}, BoundaryReduction::kAr)));
  for (int r = 0; r < plan.world(); ++r) {
    EXPECT_TRUE(kindsAt(plan, r, 1, Phase::kExit).empty()) << "rank " << r;
    const Kinds entry = kindsAt(plan, r, 2, Phase::kEntry);
    ASSERT_GE(entry.size(), 2u);
    EXPECT_EQ(Kinds(entry.begin(), entry.begin() + 2),
              (Kinds{OpKind::kAllReduce, OpKind::kDpScatter}));
  }
  expectHolds(plan);
}

}  // namespace
}  // namespace seam
