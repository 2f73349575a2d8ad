// The judges' DP lowering (judge_dp.h): hand-derived steps from
// dp_attention.py's paths, and agreement step for step with the executors'
// lowerDpOp on every DP op of the declared plans of the world-8 sweep space,
// each with every planted DpFault: two derivations that share no code.
#include "seam/sim/replay/judge_dp.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "seam/properties/sweep.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/judge_rows.h"

namespace seam {
namespace {

Op dpOp(OpKind kind) {
  Op op;
  op.kind = kind;
  return op;
}

TEST(JudgeDp, AMaxLenReplicateGatherOverAttnTpZeroesReduceScattersAndGathersOverTp) {
  // tp 4, attn_dp 2 (attn_tp 2), shards of 3 and 1: entries 4 and 2, MAX_LEN
  // slots of 4 (8 rows). Attention-TP rank 1 of shard 0 pads 3 -> 4, zeroes
  // its copy (replicate), reduce-scatters 4 -> 2 over attn_tp, all-gathers 8 over tp.
  const ParallelConfig k{.tp = 4, .attn_dp = 2};
  const JudgeDpBuffer b =
      judgeDpBuffer(k, {3, 1}, DpPadding::kMaxLen, false, CpLayout::kReplicated);
  EXPECT_EQ(b.rows, 8);
  DpLowering out;
  judgeLowerDp(dpOp(OpKind::kDpGatherReplicate), k, b, 1, 0, 0, 10, &out);
  ASSERT_EQ(out.size(), 4);
  EXPECT_EQ(out[0].kind, DpStepKind::kPadLocal);
  EXPECT_EQ(out[1].kind, DpStepKind::kZeroLocal);
  EXPECT_EQ(out[2].kind, DpStepKind::kReduceScatter);
  EXPECT_EQ(out[2].rows_out, 2);
  EXPECT_EQ(out[3].kind, DpStepKind::kAllGather);
  EXPECT_EQ(out[3].rows_out, 8);
  EXPECT_EQ(out[3].bytes, 80);
}

TEST(JudgeDp, ASumLenScatterReadsTheShardsAlignedSlotAndTrimsItsPadRows) {
  // SUM_LEN: entries 4 and 2 end to end; shard 1's slot starts at row 4.
  const ParallelConfig k{.tp = 4, .attn_dp = 2};
  const JudgeDpBuffer b =
      judgeDpBuffer(k, {3, 1}, DpPadding::kSumLen, false, CpLayout::kReplicated);
  DpLowering out;
  judgeLowerDp(dpOp(OpKind::kDpScatter), k, b, 0, 0, 1, 10, &out);
  ASSERT_EQ(out.size(), 2);
  EXPECT_EQ(out[0].kind, DpStepKind::kReadSlot);
  EXPECT_EQ(out[0].offset, 4);
  EXPECT_EQ(out[0].rows_out, 2);
  EXPECT_EQ(out[1].kind, DpStepKind::kTrim);
  EXPECT_EQ(out[1].rows_out, 1);
  // The unaligned-slots fault starts it at the raw count, 3.
  Op faulty = dpOp(OpKind::kDpScatter);
  faulty.dp_fault = DpFault::kUnalignedSlots;
  judgeLowerDp(faulty, k, b, 0, 0, 1, 10, &out);
  EXPECT_EQ(out[0].offset, 3);
}

TEST(JudgeDp, LowersEveryDpOpOfTheWorld8SweepAsLowerDpOpDoesUnderEveryFault) {
  std::set<std::tuple<std::string, int, int, int>> seen;
  int compared = 0, cp_sharded = 0, gatherv = 0;
  const DpFault faults[] = {
      DpFault::kNone,           DpFault::kSkipZeroFill,         DpFault::kWriterRuleSwapped,
      DpFault::kUnalignedSlots, DpFault::kCpShardOffsetDropped, DpFault::kCpPeerShard};
  for (const properties::SweepModel& m : properties::defaultSweepModels()) {
    if (!m.model) continue;
    for (const Case& c : properties::enumerateCases(*m.model, 8)) {
      if (c.config.attn_dp == 1 || !validateCase(c).isOk()) continue;
      auto plan = buildPlan(c, PolicyKind::kDeclared);
      if (!plan) continue;
      const JudgeGeometry g = judgeGeometry(c);
      const JudgeGroups groups(c.config);
      const std::vector<JudgeLane> lanes = judgeLanes(c, groups, g, plan->tbo_split);
      const std::vector<LaneRows> theirs = laneRowsOf(*plan, Topology(c.config));
      const std::string key =
          c.config.describe() + c.batch.describe() + std::to_string(static_cast<int>(g.cp_layout)) +
          std::to_string(static_cast<int>(g.attention_pad)) + (c.flags.dp_gatherv ? "v" : "-");
      for (int r = 0; r < plan->world(); ++r) {
        for (const Op& op : plan->ranks[r]) {
          if (!isDpOp(op.kind)) continue;
          const int lane = static_cast<int>(op.half);
          if (!seen.insert({key, r, static_cast<int>(op.kind) * 1000 + lane, dpFullRowsOf(op)})
                   .second)
            continue;
          const JudgeDpBuffer* mine = lanes[lane].dpOfFullRows(dpFullRowsOf(op));
          const DpGeometry* geometry = theirs[lane].dp.ofFullRows(dpFullRowsOf(op));
          ASSERT_EQ(mine == nullptr, geometry == nullptr) << key;
          if (mine == nullptr) continue;
          cp_sharded += mine->entries[groups.rankIn(Axis::kAttnDp, r)].cp_rows > 0 ? 1 : 0;
          gatherv += mine->gatherv ? 1 : 0;
          for (DpFault fault : faults) {
            Op o = op;
            o.dp_fault = fault;
            DpLowering a;
            judgeLowerDp(o, c.config, *mine, groups.rankIn(Axis::kAttnTp, r),
                         groups.rankIn(Axis::kAttnCp, r), groups.rankIn(Axis::kAttnDp, r), 7, &a);
            const DpLowering b = lowerDpOp(o, c.config, *geometry, r, 7);
            ASSERT_TRUE(a == b) << m.name << " " << key << " rank " << r << " " << opName(op.kind)
                                << " fault " << static_cast<int>(fault);
            ++compared;
          }
        }
      }
    }
  }
  RecordProperty("lowerings", compared);
  RecordProperty("cp_sharded_ops", cp_sharded);
  RecordProperty("gatherv_ops", gatherv);
  EXPECT_GT(compared, 1000);
}

}  // namespace
}  // namespace seam
