// The comparisons of judge_agreement.h: two derivations of the same rows,
// groups and DP steps that share no code, compared element by element.
#include "judge_agreement.h"

#include <gtest/gtest.h>

#include <vector>

#include "seam/properties/sweep.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/lane_rows.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/judge_dp.h"
#include "seam/sim/replay/judge_rows.h"

namespace seam::judge_agreement {

namespace {

std::string text(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

/// Two token lists that differ, in a few words: their lengths and the first
/// row where they part (token kPaddingRow is a padding row).
std::string difference(const std::vector<int>& mine, const std::vector<int>& theirs) {
  size_t i = 0;
  while (i < mine.size() && i < theirs.size() && mine[i] == theirs[i]) ++i;
  const auto at = [i](const std::vector<int>& v) {
    return i < v.size() ? std::to_string(v[i]) : std::string("none");
  };
  return "judges " + std::to_string(mine.size()) + " rows, planner " +
         std::to_string(theirs.size()) + "; first difference at row " + std::to_string(i) +
         ": judges " + at(mine) + ", planner " + at(theirs);
}

/// A key of everything the rows depend on, so that each geometry is compared once.
std::string geometryKey(const Case& c, const JudgeGeometry& g) {
  std::string key = c.config.describe() + "|" + c.batch.describe() + "|";
  key += std::to_string(static_cast<int>(g.padding)) +
         std::to_string(static_cast<int>(g.cp_layout)) +
         std::to_string(static_cast<int>(g.local_split)) +
         std::to_string(static_cast<int>(g.attention_pad)) + (c.flags.dp_gatherv ? "v" : "-");
  for (int s : g.tbo_split) key += "," + std::to_string(s);
  return key;
}

std::string laneDisagreement(const JudgeLane& mine, const LaneRows& theirs, int world) {
  for (int r = 0; r < world; ++r) {
    const std::string at = "rank " + std::to_string(r) + " ";
    for (int k = 0; k < kRowKindCount; ++k) {
      const RowKind kind = static_cast<RowKind>(k);
      const std::string name(rowKindName(kind));
      if (mine.rows.tokens(kind, r) != theirs.rows.tokens(kind, r))
        return at + name + ": " +
               difference(mine.rows.tokens(kind, r), theirs.rows.tokens(kind, r));
      if (mine.other_rows.tokens(kind, r) != theirs.other_rows.tokens(kind, r))
        return at + name + " (other padding): " +
               difference(mine.other_rows.tokens(kind, r), theirs.other_rows.tokens(kind, r));
    }
    if (mine.rows.localOffset(r) != theirs.rows.localOffset(r))
      return at + "local offset: judges " + std::to_string(mine.rows.localOffset(r)) +
             ", planner " + std::to_string(theirs.rows.localOffset(r));
    if (mine.rows.cpSharded(r) != theirs.rows.cpSharded(r)) return at + "CP-sharded differs";
    for (int i = 0; mine.rows.cpSharded(r) && i < mine.rows.count(RowKind::kSequence, r); ++i) {
      if (mine.rows.gatheredRowOfSequence(r, i) != theirs.rows.gatheredRowOfSequence(r, i))
        return at + "gathered row of sequence row " + std::to_string(i) + " differs";
    }
  }
  if (mine.rows.totalTokens() != theirs.rows.totalTokens()) return "total tokens differ";
  return "";
}

}  // namespace

std::string groupsDisagreement(const ParallelConfig& config) {
  const JudgeGroups groups(config);
  const Topology topo(config);
  for (Axis a : kAllAxes) {
    for (int r = 0; r < config.world(); ++r) {
      const std::string at =
          config.describe() + " " + std::string(axisName(a)) + " rank " + std::to_string(r) + ": ";
      if (groups.groupOf(a, r) != topo.groupOf(a, r))
        return at + "group " + text(groups.groupOf(a, r)) + " vs " + text(topo.groupOf(a, r));
      if (groups.rankIn(a, r) != topo.rankIn(a, r)) return at + "position differs";
      if (groups.communicator(a, r) != topo.communicator(a, r)) return at + "communicator differs";
    }
  }
  return "";
}

std::string rowsDisagreement(const Case& c, const JudgeGeometry& g) {
  const JudgeGroups groups(c.config);
  const Topology topo(c.config);
  const std::vector<JudgeLane> mine = judgeLanes(c, groups, g, g.tbo_split);
  const std::vector<LaneRows> theirs =
      laneRowsOf(c, g.padding, g.cp_layout, g.local_split, g.attention_pad, g.tbo_split, topo);
  const std::string at = geometryKey(c, g) + " ";
  if (mine.size() != theirs.size()) return at + "lane counts differ";
  for (size_t lane = 0; lane < mine.size(); ++lane) {
    const std::string in = at + "lane " + std::to_string(lane) + " ";
    const std::string d = laneDisagreement(mine[lane], theirs[lane], c.config.world());
    if (!d.empty()) return in + d;
    for (int r = 0; r < c.config.world(); ++r) {
      for (int k = 1; k < kRowKindCount; ++k) {
        const RowKind kind = static_cast<RowKind>(k);
        if (kind == RowKind::kFull) continue;  // g counts them in its own mode only
        if (mine[lane].rows.count(kind, r) != g.count(kind, r, static_cast<Half>(lane)))
          return in + "rank " + std::to_string(r) + " " + std::string(rowKindName(kind)) +
                 ": the judges' tokens and their geometry's count differ";
      }
    }
  }
  return "";
}

std::string dpDisagreement(const Case& c, const Plan& plan, DpCounts* counts, DpSeen* seen) {
  constexpr DpFault kFaults[] = {
      DpFault::kNone,           DpFault::kSkipZeroFill,         DpFault::kWriterRuleSwapped,
      DpFault::kUnalignedSlots, DpFault::kCpShardOffsetDropped, DpFault::kCpPeerShard};
  constexpr std::int64_t kRowBytes = 7;
  const JudgeGeometry g = judgeGeometry(c);
  const JudgeGroups groups(c.config);
  const std::vector<JudgeLane> lanes = judgeLanes(c, groups, g, plan.tbo_split);
  const std::vector<LaneRows> theirs = laneRowsOf(plan, Topology(c.config));
  const std::string key = geometryKey(c, g);
  for (int r = 0; r < plan.world(); ++r) {
    for (const Op& op : plan.ranks[r]) {
      if (!isDpOp(op.kind)) continue;
      const int lane = static_cast<int>(op.half);
      if (seen != nullptr &&
          !seen->insert({key, r, static_cast<int>(op.kind) * 1000 + lane, dpFullRowsOf(op)}).second)
        continue;
      const std::string at = key + " rank " + std::to_string(r) + " " +
                             std::string(opName(op.kind)) + " lane " + std::to_string(lane);
      const JudgeDpBuffer* mine = lanes[lane].dpOfFullRows(dpFullRowsOf(op));
      const DpGeometry* geometry = theirs[lane].dp.ofFullRows(dpFullRowsOf(op));
      if ((mine == nullptr) != (geometry == nullptr))
        return at + ": only one side has a buffer of " + std::to_string(dpFullRowsOf(op)) + " rows";
      if (mine == nullptr) continue;
      counts->cp_sharded += mine->entries[groups.rankIn(Axis::kAttnDp, r)].cp_rows > 0 ? 1 : 0;
      counts->gatherv += mine->gatherv ? 1 : 0;
      for (DpFault fault : kFaults) {
        Op o = op;
        o.dp_fault = fault;
        DpLowering a;
        judgeLowerDp(o, c.config, *mine, groups.rankIn(Axis::kAttnTp, r),
                     groups.rankIn(Axis::kAttnCp, r), groups.rankIn(Axis::kAttnDp, r), kRowBytes,
                     &a);
        if (!(a == lowerDpOp(o, c.config, *geometry, r, kRowBytes)))
          return at + " fault " + std::to_string(static_cast<int>(fault)) + ": steps differ";
        ++counts->lowerings;
      }
    }
  }
  return "";
}

SweepAgreement rowsOverSweep(int world) {
  SweepAgreement out;
  std::set<std::string> seen, configs;
  for (const properties::SweepModel& m : properties::defaultSweepModels()) {
    if (!m.model) continue;
    for (const Case& c : properties::enumerateCases(*m.model, world)) {
      if (!validateCase(c).isOk()) continue;
      const JudgeGeometry g = judgeGeometry(c);
      if (!seen.insert(geometryKey(c, g)).second) continue;
      if (configs.insert(c.config.describe()).second) {
        out.disagreement = groupsDisagreement(c.config);
        if (!out.disagreement.empty()) return out;
        ++out.configs;
      }
      out.disagreement = rowsDisagreement(c, g);
      if (!out.disagreement.empty()) {
        out.disagreement = m.name + " " + out.disagreement;
        return out;
      }
      ++out.geometries;
      out.cp_sharded += g.cp_layout != CpLayout::kReplicated ? 1 : 0;
      out.tbo_split += g.tbo_split.empty() ? 0 : 1;
    }
  }
  return out;
}

SweepAgreement dpOverSweep(int world) {
  SweepAgreement out;
  DpSeen seen;
  for (const properties::SweepModel& m : properties::defaultSweepModels()) {
    if (!m.model) continue;
    for (const Case& c : properties::enumerateCases(*m.model, world)) {
      if (c.config.attn_dp == 1 || !validateCase(c).isOk()) continue;
      auto plan = buildPlan(c, PolicyKind::kDeclared);
      if (!plan) continue;
      out.disagreement = dpDisagreement(c, *plan, &out.dp, &seen);
      if (!out.disagreement.empty()) {
        out.disagreement = m.name + " " + out.disagreement;
        return out;
      }
    }
  }
  return out;
}

void expectRowsAgreeOverSweep(int world, int min_geometries) {
  const SweepAgreement a = rowsOverSweep(world);
  ASSERT_EQ(a.disagreement, "");
  ::testing::Test::RecordProperty("configs", a.configs);
  ::testing::Test::RecordProperty("geometries", a.geometries);
  ::testing::Test::RecordProperty("cp_sharded", a.cp_sharded);
  ::testing::Test::RecordProperty("tbo_split", a.tbo_split);
  // The space holds CP-sharded and split batches, so both paths were compared.
  EXPECT_GT(a.geometries, min_geometries);
  EXPECT_GT(a.cp_sharded, 0);
  EXPECT_GT(a.tbo_split, 0);
}

void expectDpAgreesOverSweep(int world, int min_lowerings) {
  const SweepAgreement a = dpOverSweep(world);
  ASSERT_EQ(a.disagreement, "");
  ::testing::Test::RecordProperty("lowerings", a.dp.lowerings);
  ::testing::Test::RecordProperty("cp_sharded_ops", a.dp.cp_sharded);
  ::testing::Test::RecordProperty("gatherv_ops", a.dp.gatherv);
  EXPECT_GT(a.dp.lowerings, min_lowerings);
  EXPECT_GT(a.dp.cp_sharded, 0);
  EXPECT_GT(a.dp.gatherv, 0);
}

}  // namespace seam::judge_agreement
