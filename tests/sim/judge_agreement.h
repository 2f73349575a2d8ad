// The judges' geometry held to the planner's copies, as plain comparisons
// the agreement tests share: the groups (JudgeGroups against Topology), the
// rows of every layout on every rank (JudgeTokens against RowMap through
// laneRowsOf) and the DP lowering (judgeLowerDp against lowerDpOp), over a
// world's sweep space or one generated case. Each returns the first
// disagreement in words, empty when the two derivations agree; the sweep
// comparisons also run as a gtest body.
#pragma once

#include <set>
#include <string>
#include <tuple>

#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/judge_geometry.h"

namespace seam::judge_agreement {

/// JudgeGroups against Topology on `config`: every axis's group, position
/// and communicator of every rank.
std::string groupsDisagreement(const ParallelConfig& config);

/// The judges' lanes against laneRowsOf for case `c` under `g` (its TBO
/// split included): every token of every layout in both padding modes on
/// every rank, local offsets, CP sequence rows, and the judges' row counts
/// against `g`'s.
std::string rowsDisagreement(const Case& c, const JudgeGeometry& g);

/// What a DP-lowering comparison covered.
struct DpCounts {
  int lowerings = 0;   ///< (op, fault) pairs lowered by both
  int cp_sharded = 0;  ///< DP ops on a CP-sharded shard
  int gatherv = 0;     ///< DP ops through all_gatherv
};
/// (geometry key, rank, op kind and lane, full rows): one DP op lowered once.
using DpSeen = std::set<std::tuple<std::string, int, int, int>>;

/// Every DP op of `plan` (the declared plan of `c`), with every DpFault,
/// lowered by judgeLowerDp on the judges' buffers and by lowerDpOp on the
/// planner's; ops already in `seen` (when given) are skipped.
std::string dpDisagreement(const Case& c, const Plan& plan, DpCounts* counts,
                           DpSeen* seen = nullptr);

/// What a sweep-space comparison covered.
struct SweepAgreement {
  std::string disagreement;  ///< the first one, with its model; empty when none
  int configs = 0;
  int geometries = 0;  ///< distinct geometries whose rows were compared
  int cp_sharded = 0;  ///< of which CP-sharded
  int tbo_split = 0;   ///< of which split for two-batch overlap
  DpCounts dp;
};

/// Groups and rows on every distinct geometry of the `world` sweep space.
SweepAgreement rowsOverSweep(int world);
/// The DP lowering of every DP op of the declared plans of the `world` sweep space.
SweepAgreement dpOverSweep(int world);

/// rowsOverSweep(world) as a test's body: no disagreement, more than
/// `min_geometries` geometries, CP-sharded and split ones among them; the
/// counts recorded as the test's properties.
void expectRowsAgreeOverSweep(int world, int min_geometries);
/// dpOverSweep(world) as a test's body: no disagreement, more than
/// `min_lowerings` lowerings, CP-sharded and all_gatherv ops among them.
void expectDpAgreesOverSweep(int world, int min_lowerings);

}  // namespace seam::judge_agreement
