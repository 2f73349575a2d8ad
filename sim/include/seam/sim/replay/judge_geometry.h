// The judges' own geometry of a case (DESIGN §3, §4): the padding mode, the
// CP layout, the local split, the two-batch-overlap split, the stages and the
// rows every rank holds in every layout, computed from the Case by code that
// shares nothing with the planner (no Topology, RowCounts, RowMap, DpGeometry,
// resolvePadding or weightAxis), written from the engine's rules as
// docs/modelling/sglang.md cites them. A plan's fields are checked against it
// (property 9, plan-geometry) and the bytes and row counts of its ops
// (property 8, call-sizes), so a fault in the planner's geometry cannot move
// the judge with it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/plan/rows.h"

namespace seam {

/// One stage as the judge derives it from the case's pattern.
struct JudgeStage {
  int stack = 0;
  LayerKind kind = LayerKind::kMamba;
  int weight_axis = kNoAxis;  ///< the group its weights are split over (kNoAxis: replicated)
  int shards = 1;
  int pp_rank = 0;
  bool terminal = false;
  int reads_norm_of = -1;
  int joins_at = -1;
};

/// Row counts of every rank in every layout, for one batch (the whole batch
/// or a two-batch-overlap half).
struct JudgeRows {
  std::vector<std::array<int, kRowKindCount>> count;  ///< [rank][RowKind]
  /// [rank]: the rows of the rank's local DP buffer, the DP return's
  /// reduce_scatterv output (its entry of get_dp_global_num_tokens()).
  std::vector<int> dp_local;
};

struct JudgeGeometry {
  DpPadding padding = DpPadding::kMaxLen;
  CpLayout cp_layout = CpLayout::kReplicated;
  LocalSplit local_split = LocalSplit::kTensorSplit;
  /// Whether the attention rows are the padded local DP buffer (MAX_LEN).
  AttentionPad attention_pad = AttentionPad::kTokens;
  /// The split the engine's TBO computes for each DP shard (child A's tokens);
  /// filled whenever the case asks for TBO (whether a plan runs split is the
  /// planner's range decision; a plan that runs split must split here).
  std::vector<int> tbo_split;
  /// Per DP shard, the rows child A and child B run on (tbo_padded_len of
  /// the padded parent's cut); filled with tbo_split.
  std::vector<int> tbo_rows[2];
  std::vector<JudgeStage> stages;  ///< stack 0, then stack 1
  std::int64_t row_bytes = 0;      ///< hidden * 2 (bf16 activations)
  JudgeRows rows[kHalfLanes];      ///< the batch, then (TBO) halves A and B

  int count(RowKind kind, int rank, Half half = Half::kWhole) const {
    return rows[static_cast<int>(half)].count[rank][static_cast<int>(kind)];
  }
  int dpLocal(int rank, Half half = Half::kWhole) const {
    return rows[static_cast<int>(half)].dp_local[rank];
  }
};

/// Whether the CP strategy of `layout` shards a DP shard of `tokens` tokens
/// over `cp` ranks (can_apply; kReplicated: never).
bool judgeCpShards(CpLayout layout, int tokens, int cp);

/// The judge's geometry of `c` (a case validateCase accepts).
JudgeGeometry judgeGeometry(const Case& c);

/// One field of a plan that disagrees with the judge's geometry: its name
/// ("padding", "stages[3].weight_axis", ...) and a sentence.
struct GeometryDisagreement {
  std::string field;
  std::string detail;
};
/// The plan's padding, cp_layout, local_split, attention_pad, tbo_split and
/// stages against `g`.
std::vector<GeometryDisagreement> planGeometryDisagreements(const Plan& plan,
                                                            const JudgeGeometry& g);

}  // namespace seam
