// The host-side planning of the CUDA executor for branch and two-batch-
// overlap plans (rank_executor.h): the lanes' rows every op of a half runs
// on, where a half's rows lie in the batch's, the buffers' capacity. Also
// checks, without a GPU, that the cases the GPU tests run (branch_tbo_cases.h)
// plan, hold and run bit-identical to the reference on the CPU executor.
// Runs without a GPU (planning only).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "branch_tbo_cases.h"
#include "rank_executor.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::backend::detail {
namespace {

using seam::testing::branchCases;
using seam::testing::mustBuild;
using seam::testing::tboCases;

std::vector<Case> allTboCases() {
  std::vector<Case> all = tboCases(1);
  for (const Case& c : tboCases(2)) all.push_back(c);
  return all;
}

TEST(PlanLanes, ABranchPlanOrAPlanWithoutTboHasTheBatchsLaneOnly) {
  const Plan plan = mustBuild(branchCases(2).front());
  SharedRun s(plan, GpuRunOptions{}, plan.world());
  EXPECT_EQ(s.lanes.size(), 1u);
  EXPECT_EQ(&s.rows, &s.lanes.front().rows);
  const HalfRows whole = halfRows(s.lanes, 0, Half::kWhole);
  EXPECT_EQ(whole.offset, 0);
  EXPECT_EQ(whole.count, whole.total);
}

TEST(PlanLanes, EveryOpOfAHalfFindsTheRowCountsThePlanNamesInItsLane) {
  for (const Case& c : allTboCases()) {
    SCOPED_TRACE(reproduceCommand(c, "declared"));
    const Plan plan = mustBuild(c);
    ASSERT_FALSE(plan.tbo_split.empty());
    SharedRun s(plan, GpuRunOptions{}, plan.world());
    ASSERT_EQ(s.lanes.size(), static_cast<size_t>(kHalfLanes));
    int checked = 0;
    for (int r = 0; r < plan.world(); ++r) {
      for (size_t i = 0; i < plan.ranks[r].size(); ++i) {
        const Op& op = plan.ranks[r][i];
        if (op.tbo_move) continue;  // batch rows on one side: the next test
        const LaneRows& lane = s.lanes[static_cast<int>(op.half)];
        for (const Rows& rows : {op.rows_in, op.rows_out}) {
          if (rows.kind == RowKind::kNone) continue;
          // Full rows: in either padding mode's size (an op's count names its mode).
          const bool ok = rows.kind == RowKind::kFull
                              ? rows.count == lane.rows.count(RowKind::kFull, r) ||
                                    rows.count == lane.other_rows.count(RowKind::kFull, r)
                              : rows.count == lane.rows.count(rows.kind, r);
          EXPECT_TRUE(ok) << "rank " << r << " op " << i << " (" << opName(op.kind) << " on half "
                          << halfName(op.half) << ") names " << rows.count << " "
                          << rowKindName(rows.kind) << " rows; its lane has "
                          << lane.rows.count(rows.kind, r);
          ++checked;
        }
      }
    }
    EXPECT_GT(checked, 0);
  }
}

TEST(PlanLanes, TheHalvesTakeRowsThatTileTheBatchsAttentionRowsEachPaddedToAttnTp) {
  // prepare_raw cuts the padded parent at the split token; filter_batch pads
  // each child to its length aligned up to attn_tp (two_batch_overlap.py @0099dee6).
  for (const Case& c : allTboCases()) {
    SCOPED_TRACE(reproduceCommand(c, "declared"));
    const Plan plan = mustBuild(c);
    SharedRun s(plan, GpuRunOptions{}, plan.world());
    const int atp = c.config.attnTp();
    for (int r = 0; r < plan.world(); ++r) {
      const HalfRows a = halfRows(s.lanes, r, Half::kA);
      const HalfRows b = halfRows(s.lanes, r, Half::kB);
      EXPECT_EQ(a.offset, 0);
      EXPECT_EQ(b.offset, a.taken);
      EXPECT_EQ(a.taken + b.taken, a.total) << "rank " << r;
      EXPECT_EQ(a.count, (a.taken + atp - 1) / atp * atp) << "rank " << r;
      EXPECT_EQ(b.count, (b.taken + atp - 1) / atp * atp) << "rank " << r;
      EXPECT_EQ(a.total, s.rows.count(RowKind::kAttention, r));
      int moves = 0;
      for (const Op& op : plan.ranks[r]) {
        if (!op.tbo_move) continue;
        ++moves;
        const HalfRows h = halfRows(s.lanes, r, op.half);
        // The split reads the batch's rows into the half's, the merge the other way.
        const Rows& batch = op.kind == OpKind::kSlice ? op.rows_in : op.rows_out;
        const Rows& half = op.kind == OpKind::kSlice ? op.rows_out : op.rows_in;
        EXPECT_EQ(batch.count, h.total);
        EXPECT_EQ(half.count, h.count);
        EXPECT_EQ(batch.kind, RowKind::kAttention);
        EXPECT_EQ(half.kind, RowKind::kAttention);
      }
      EXPECT_GE(moves, 4) << "rank " << r << ": hidden and residual split, hidden merged per half";
    }
  }
}

TEST(PlanLanes, EveryRowBufferHoldsTheRowsOfEveryLane) {
  for (const Case& c : allTboCases()) {
    SCOPED_TRACE(reproduceCommand(c, "declared"));
    const Plan plan = mustBuild(c);
    SharedRun s(plan, GpuRunOptions{}, plan.world());
    const int cap = capacityRows(s);
    for (int r = 0; r < plan.world(); ++r) {
      for (const LaneRows& lane : s.lanes) {
        for (int k = 0; k < kRowKindCount; ++k)
          EXPECT_LE(lane.rows.count(static_cast<RowKind>(k), r), cap);
        EXPECT_LE(lane.other_rows.count(RowKind::kFull, r), cap);
      }
    }
  }
}

TEST(PlanLanes, ALayerNormSpPlanBuildsThePaddedShardsAndItsBuffersHoldTheGatheredChunks) {
  // M=5 over tp=4: the lane rows are shard_token_rows' chunks of 2, the last
  // all padding; the all_gather lands tp * 2 = 8 rows before the narrow to 5,
  // and the reduce_scatter pads the 5 rows to 8.
  Flags f;
  f.mode = ForwardMode::kExtend;
  f.layernorm_sp = true;
  const Plan plan = mustBuild(seam::testing::twoStageCase("*-*-", {.tp = 4}, {5}, f));
  SharedRun s(plan, GpuRunOptions{}, plan.world());
  EXPECT_EQ(s.rows.localSplit(), LocalSplit::kPaddedEqual);
  EXPECT_EQ(s.rows.tokens(RowKind::kLocal, 3), (std::vector<int>{kPaddingRow, kPaddingRow}));
  EXPECT_GE(capacityRows(s), 8);
}

TEST(PlanLanes, TheCasesTheGpuTestsRunHoldAndAreBitIdenticalOnTheCpuExecutor) {
  // A GPU test of these cases compares the GPU with the CPU executor and the
  // reference: the comparison means something only if these agree.
  std::vector<Case> cases = allTboCases();
  for (int world : {1, 2}) {
    for (const Case& c : branchCases(world)) cases.push_back(c);
  }
  for (const Case& c : seam::testing::layerNormSpCases()) cases.push_back(c);
  Ledger ledger;
  const GpuRunOptions o;
  for (const Case& c : cases) {
    SCOPED_TRACE(reproduceCommand(c, "declared"));
    const Plan plan = mustBuild(c);
    EXPECT_TRUE(ledger.replay(plan, LedgerOptions{.exact = true}).holds());
    const NumericRun cpu = runPlanNumeric(plan, o.mode, o.shape);
    ASSERT_TRUE(cpu.ran()) << cpu.failures.front().detail;
    EXPECT_FALSE(cpu.ranks_disagree);
    const OutputDiff d = compareOutputs(cpu.output, runReference(c, o.mode, o.shape));
    EXPECT_TRUE(d.identical) << d.describe();
  }
}

}  // namespace
}  // namespace seam::backend::detail
