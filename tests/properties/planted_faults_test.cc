// Faults planted in a real plan as an engine trace of it would carry them
// (the ops edited, the policy's declarations not consulted): each must be
// reported by the property that owns it. A trace is the plan's ops with
// policy "trace" (reports/trace.cc imports exactly these fields).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../sim/case_builders.h"
#include "seam/properties/check.h"

namespace seam::properties {
namespace {

using seam::testing::mustBuild;
using seam::testing::presetCase;

Plan asTrace(Plan plan) {
  plan.policy = "trace";
  return plan;
}

/// The verdict of every property, and the violated property's first violation.
std::optional<Violation> violationOf(const Plan& plan, Property p) {
  Ledger ledger;
  const PlanVerdict verdict = checkPlan(plan, ledger, Depth::kAll);
  for (const PropertyVerdict& v : verdict.properties) {
    if (v.property == p && !v.holds) return v.first;
  }
  return std::nullopt;
}

bool holdsEverywhere(const Plan& plan) {
  Ledger ledger;
  return checkPlan(plan, ledger, Depth::kAll).holds();
}

int firstStageOf(const Case& c, LayerKind kind) {
  const auto& layers = c.model.pattern.layers;
  return static_cast<int>(std::find(layers.begin(), layers.end(), kind) - layers.begin());
}

void eraseOps(Plan& plan, bool (*which)(const Op&)) {
  for (auto& ops : plan.ranks) ops.erase(std::remove_if(ops.begin(), ops.end(), which), ops.end());
}

bool onSnapshot(const Op& op) {
  return op.kind == OpKind::kSnapshot || op.tensor == Tensor::kSnapshot;
}

TEST(PlantedFaults, ACaptureCaseWithEverySnapshotDroppedViolatesSnapshots) {
  Flags flags;
  flags.capture = {2, 5};
  const Case c = presetCase("nemotron-h-8b", {.tp = 2}, {4}, flags);
  Plan trace = asTrace(mustBuild(c));
  ASSERT_TRUE(holdsEverywhere(trace)) << "the unedited trace holds";
  eraseOps(trace, onSnapshot);
  const auto v = violationOf(trace, Property::kSnapshots);
  ASSERT_TRUE(v.has_value()) << "no snapshot left, yet property 6 holds";
  EXPECT_EQ(v->cls, ViolationClass::kMissingSnapshot);
  EXPECT_EQ(v->stage, 2);
}

TEST(PlantedFaults, ASnapshotMovedToAnotherStageViolatesSnapshots) {
  Flags flags;
  flags.capture = {2};
  const Case c = presetCase("nemotron-h-8b", {.tp = 2}, {4}, flags);
  Plan trace = asTrace(mustBuild(c));
  for (auto& ops : trace.ranks) {
    // The capture (the snapshot and the residual added to it) taken out, and
    // a snapshot of the residual put after stage 4's entry, where that is the
    // complete hidden state: only the capture list says it is in the wrong place.
    auto it = std::find_if(ops.begin(), ops.end(),
                           [](const Op& op) { return op.kind == OpKind::kSnapshot; });
    ASSERT_NE(it, ops.end());
    Op snap = *it;
    ops.erase(std::remove_if(ops.begin(), ops.end(), onSnapshot), ops.end());
    auto at = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
      return op.stage == 4 && op.phase == Phase::kCompute;
    });
    ASSERT_NE(at, ops.end());
    snap.stage = snap.layer = 4;
    snap.tensor = Tensor::kSnapshot;
    ops.insert(at, snap);
  }
  const auto v = violationOf(trace, Property::kSnapshots);
  ASSERT_TRUE(v.has_value()) << "a snapshot at stage 4 passes for the capture at stage 2";
  EXPECT_EQ(v->cls, ViolationClass::kMissingSnapshot);
}

TEST(PlantedFaults, ASnapshotBeforeAnA2aMoeDroppedViolatesSnapshots) {
  Flags flags;
  flags.a2a = A2aBackend::kDeepep;
  Case c = presetCase("nemotron-3-nano", {.tp = 4, .moe_ep = 4}, {8}, flags);
  const int moe = firstStageOf(c, LayerKind::kMoe);
  c.flags.capture = {moe};
  Plan trace = asTrace(mustBuild(c));
  ASSERT_TRUE(holdsEverywhere(trace));
  // The capture before an a2a MoE reads the stream before the entry moves it
  // onto local rows (stage.py capture_output): attention rows.
  const auto& ops0 = trace.ranks[0];
  ASSERT_TRUE(std::any_of(ops0.begin(), ops0.end(), [](const Op& op) {
    return op.kind == OpKind::kSnapshot && op.rows_out.kind == RowKind::kAttention;
  }));
  eraseOps(trace, onSnapshot);
  const auto v = violationOf(trace, Property::kSnapshots);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->stage, moe);
}

/// Every rank's first collective of `kind` has its bytes set by `resize`.
template <class Resize>
Plan withBytes(Plan plan, OpKind kind, Resize resize) {
  for (auto& ops : plan.ranks) {
    for (Op& op : ops) {
      if (op.kind != kind) continue;
      op.bytes = resize(op);
      break;
    }
  }
  return plan;
}

TEST(PlantedFaults, ACollectivesBytesDoubledOnEveryRankViolatesCallSizes) {
  const Case c = presetCase("nemotron-h-8b", {.tp = 4}, {6}, {});
  const Plan trace = asTrace(mustBuild(c));
  ASSERT_TRUE(holdsEverywhere(trace));
  const Plan doubled =
      withBytes(trace, OpKind::kArAddNorm, [](const Op& op) { return 2 * op.bytes; });
  EXPECT_TRUE(checkCollectiveSequences(doubled).empty()) << "every member agrees on the size";
  const auto v = violationOf(doubled, Property::kCallSizes);
  ASSERT_TRUE(v.has_value()) << "doubled bytes on every rank pass";
  EXPECT_EQ(v->cls, ViolationClass::kWrongSize);
}

TEST(PlantedFaults, ACollectivesBytesShrunkToTheLocalChunkViolatesCallSizes) {
  const Case c = presetCase("nemotron-h-8b", {.tp = 4}, {6}, {});
  const Plan trace = asTrace(mustBuild(c));
  const std::int64_t row = 2 * c.model.shape.hidden;
  // The all-reduce of 6 attention rows sized as if it moved each rank's 6/4 chunk.
  const Plan shrunk = withBytes(trace, OpKind::kArAddNorm, [row](const Op&) { return 2 * row; });
  const auto v = violationOf(shrunk, Property::kCallSizes);
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->detail.find("bytes"), std::string::npos) << v->detail;
}

// prepare_mlp_sync_batch (forward_batch_info.py @003bbaf9) makes every entry
// of get_dp_global_num_tokens() the longest under MAX_LEN, so the DP
// return's reduce_scatterv (ops.py @0bca4c6f) writes that many rows on every
// rank (3 and 1 tokens: 3 rows each). A trace that shows the shard's tokens
// instead has the call's output the wrong size.
TEST(PlantedFaults, AReduceScattervWritingOnlyTheTokensUnderMaxLenViolatesCallSizes) {
  Flags flags;
  flags.reduction = BoundaryReduction::kRsv;
  const Case c =
      seam::testing::patternCase("-*E", {.tp = 2, .attn_dp = 2, .moe_ep = 2}, {3, 1}, flags);
  Plan trace = asTrace(mustBuild(c));
  ASSERT_TRUE(holdsEverywhere(trace));
  for (Op& op : trace.ranks[1]) {
    if (op.kind == OpKind::kReduceScatterv) op.rows_out.count = 1;
  }
  const auto v = violationOf(trace, Property::kCallSizes);
  ASSERT_TRUE(v.has_value()) << "a reduce_scatterv of the tokens alone passes";
  EXPECT_NE(v->detail.find("writes 1 attention rows where the case gives rank 1 3"),
            std::string::npos)
      << v->detail;
}

TEST(PlantedFaults, TheResidualAddDuplicatedViolatesResidualFollows) {
  Flags flags;
  flags.fusion = false;
  const Case c = presetCase("nemotron-h-8b", {.tp = 2}, {4}, flags);
  Plan trace = asTrace(mustBuild(c));
  ASSERT_TRUE(holdsEverywhere(trace));
  bool planted = false;
  for (auto& ops : trace.ranks) {
    auto it = std::find_if(ops.begin() + 1, ops.end(),
                           [](const Op& op) { return op.kind == OpKind::kAddNorm; });
    ASSERT_NE(it, ops.end());
    ops.insert(it, *it);  // add_norm twice at one entry
    planted = true;
  }
  ASSERT_TRUE(planted);
  const auto v = violationOf(trace, Property::kResidualFollows);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->cls, ViolationClass::kCountedTwice);
}

TEST(PlantedFaults, AnA2aExitsResidualFoldDuplicatedViolatesResidualFollows) {
  // hs += residual twice: the second finds no residual (the ledger adds
  // nothing), so only the count per stage can see it.
  Flags flags;
  flags.a2a = A2aBackend::kDeepep;
  const Case c = presetCase("nemotron-3-nano", {.tp = 4, .moe_ep = 4}, {8}, flags);
  Plan trace = asTrace(mustBuild(c));
  for (auto& ops : trace.ranks) {
    auto it = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
      return op.kind == OpKind::kAdd && op.tensor == Tensor::kHidden && op.phase == Phase::kExit;
    });
    ASSERT_NE(it, ops.end());
    ops.insert(it, *it);
  }
  EXPECT_TRUE(replayPlan(trace).holds())
      << "the ledger alone now sees it; this test no longer shows the gap it was written for";
  const auto v = violationOf(trace, Property::kResidualFollows);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->cls, ViolationClass::kCountedTwice);
}

TEST(PlantedFaults, ATraceWhoseStageReadsOtherRowsThanTheLastWroteViolatesBoundariesAgree) {
  Flags flags;
  flags.a2a = A2aBackend::kDeepep;
  const Case c = presetCase("nemotron-3-nano", {.tp = 4, .moe_ep = 4}, {8}, flags);
  Plan trace = asTrace(mustBuild(c));
  ASSERT_TRUE(holdsEverywhere(trace));
  // The gather that brings an a2a MoE's local rows back to attention rows,
  // dropped on every rank: the next stage reads attention rows no op wrote.
  for (auto& ops : trace.ranks) {
    auto it = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
      return op.kind == OpKind::kAllGather && op.tensor == Tensor::kHidden &&
             op.rows_in.kind == RowKind::kLocal;
    });
    ASSERT_NE(it, ops.end());
    ops.erase(it);
  }
  const auto v = violationOf(trace, Property::kBoundariesAgree);
  ASSERT_TRUE(v.has_value()) << "property 1 on a trace only read the skeleton's declarations";
  EXPECT_EQ(v->cls, ViolationClass::kBoundaryDisagrees);
}

TEST(PlantedFaults, APlanWhosePaddingFieldIsNotTheEnginesViolatesPlanGeometryNamingIt) {
  Flags flags;
  flags.mode = ForwardMode::kExtend;
  const Case c = presetCase("deepseek-v3", {.tp = 4, .attn_dp = 2}, {3, 5}, flags);
  Plan plan = mustBuild(c);
  ASSERT_TRUE(holdsEverywhere(plan));
  plan.padding = plan.padding == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen;
  const auto v = violationOf(plan, Property::kPlanGeometry);
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->detail.find("plan field padding"), std::string::npos) << v->detail;
}

TEST(PlantedFaults, AStagesWeightAxisFieldNotTheCasesViolatesPlanGeometry) {
  const Case c = presetCase("nemotron-h-8b", {.tp = 4}, {6}, {});
  Plan plan = mustBuild(c);
  plan.stages[0].weight_axis = static_cast<std::int8_t>(Axis::kTp);  // a mixer: attn_tp
  const auto v = violationOf(plan, Property::kPlanGeometry);
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->detail.find("stages[0]"), std::string::npos) << v->detail;
}

}  // namespace
}  // namespace seam::properties
