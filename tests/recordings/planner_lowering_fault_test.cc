// A recording's owed calls come from the judges' own DP lowering
// (judgeLowerDp, judge_dp.h), never from the planner's lowerDpOp: a fault
// planted in lowerDpOp itself must not move the recording's judge. The fault
// is planted at link time: this binary is linked with GNU ld's
// --wrap=<lowerDpOp's symbol> (tests/CMakeLists.txt), so every call of the
// planner's lowering from another object file, the recordings library's
// included, reaches __wrap_... below, which runs the real lowering and, while
// a test holds the fault planted, drops the attn_tp reduce-scatter of every
// DP gather (as a seam executor running a broken lowering would).
#include <gtest/gtest.h>

#include <string>

#include "recording_test_support.h"
#include "seam/recordings/alignment.h"
#include "seam/sim/plan/dp_gather.h"

#ifdef SEAM_WRAP_LOWER_DP
namespace {

bool g_drop_gather_reduce_scatter = false;

bool isPlantedStep(const seam::Op& op, const seam::DpStep& s) {
  return (op.kind == seam::OpKind::kDpGatherPartial ||
          op.kind == seam::OpKind::kDpGatherReplicate) &&
         s.kind == seam::DpStepKind::kReduceScatter &&
         s.axis == static_cast<std::int8_t>(seam::Axis::kAttnTp);
}

}  // namespace

// seam::lowerDpOp(const Op&, const ParallelConfig&, const DpGeometry&, const
// DpPlace&, std::int64_t, DpLowering*), by its mangled name.
extern "C" void
__real__ZN4seam9lowerDpOpERKNS_2OpERKNS_14ParallelConfigERKNS_10DpGeometryERKNS_7DpPlaceElPNS_10DpLoweringE(
    const seam::Op& op, const seam::ParallelConfig& config, const seam::DpGeometry& geometry,
    const seam::DpPlace& place, std::int64_t row_bytes, seam::DpLowering* out);

extern "C" void
__wrap__ZN4seam9lowerDpOpERKNS_2OpERKNS_14ParallelConfigERKNS_10DpGeometryERKNS_7DpPlaceElPNS_10DpLoweringE(
    const seam::Op& op, const seam::ParallelConfig& config, const seam::DpGeometry& geometry,
    const seam::DpPlace& place, std::int64_t row_bytes, seam::DpLowering* out) {
  __real__ZN4seam9lowerDpOpERKNS_2OpERKNS_14ParallelConfigERKNS_10DpGeometryERKNS_7DpPlaceElPNS_10DpLoweringE(
      op, config, geometry, place, row_bytes, out);
  if (!g_drop_gather_reduce_scatter) return;
  const seam::DpLowering real = *out;
  out->clear();
  for (const seam::DpStep& s : real)
    if (!isPlantedStep(op, s)) out->push_back(s);
}
#endif

namespace seam::recordings {
namespace {

using test_support::dpCasePlan;
using test_support::mustRead;

#ifdef SEAM_WRAP_LOWER_DP
/// Holds the fault planted in the planner's lowering while it lives.
struct PlantedLoweringFault {
  PlantedLoweringFault() { g_drop_gather_reduce_scatter = true; }
  ~PlantedLoweringFault() { g_drop_gather_reduce_scatter = false; }
};

/// How many steps the planner's lowering gives rank 0's first DP gather.
int plannerGatherSteps(const Plan& plan) {
  const ParallelConfig& k = plan.source.config;
  for (const Op& op : plan.ranks[0]) {
    if (op.kind != OpKind::kDpGatherPartial && op.kind != OpKind::kDpGatherReplicate) continue;
    const DpLayouts layouts(k, plan.source.batch, plan.padding, plan.source.flags.dp_gatherv,
                            plan.cp_layout, plan.attention_pad);
    const DpGeometry* g = layouts.ofFullRows(dpFullRowsOf(op));
    EXPECT_NE(g, nullptr);
    if (g == nullptr) return -1;
    DpLowering steps;
    lowerDpOp(op, k, *g, dpPlaceOf(k, 0), activationRowBytes(plan.source.model.shape), &steps);
    return steps.size();
  }
  ADD_FAILURE() << "no DP gather on rank 0";
  return -1;
}
#endif

TEST(RecordingsJudgeLowering, AFaultPlantedInThePlannersDpLoweringDoesNotMoveTheJudge) {
#ifndef SEAM_WRAP_LOWER_DP
  GTEST_SKIP() << "the planner's lowering can be wrapped only by GNU ld or lld (--wrap)";
#else
  const Plan plan = dpCasePlan();
  const int real_steps = plannerGatherSteps(plan);
  PlantedLoweringFault planted;
  // The fault is live: the planner's lowering now skips the gather's
  // reduce-scatter over attention TP.
  ASSERT_EQ(plannerGatherSteps(plan), real_steps - 1);

  // SGLang's own calls (fr/correct, derived by hand from dp_attention.py:
  // the attn_tp reduce-scatter, then the tp all-gather) are still explained
  // call by call, as without the fault.
  auto v = judgeRecording(mustRead("fr/correct"), plan, 1);
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_TRUE(v->holds());
  EXPECT_EQ(v->explained, 20);
  EXPECT_EQ(v->owed, 20);

  // What an executor running the faulty lowering records: each rank's
  // gather without its reduce-scatter (entry 1), on every member alike, so
  // fr_trace's rules pass it. The judge owes SGLang's calls and names it.
  Recording faulty = mustRead("fr/correct");
  for (auto& calls : faulty.ranks) {
    ASSERT_GE(calls.size(), 2u);
    ASSERT_EQ(calls[1].kind, CallKind::kReduceScatter);
    calls.erase(calls.begin() + 1);
  }
  EXPECT_TRUE(crossRankFindings(faulty).empty());
  v = judgeRecording(faulty, plan, 1);
  ASSERT_TRUE(v) << v.status().message();
  ASSERT_EQ(v->findings.size(), 4u);  // one per rank
  const Finding& f = v->findings.front();
  EXPECT_EQ(f.kind, FindingKind::kMissing);
  EXPECT_EQ(f.rank, 0);
  EXPECT_NE(f.expected.find("(its reduce_scatter) over attn_tp"), std::string::npos) << f.expected;
#endif
}

}  // namespace
}  // namespace seam::recordings