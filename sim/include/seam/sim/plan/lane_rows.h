// The row geometry of a plan's lanes: which tokens every rank holds in every
// layout, in both padding modes, and the DP buffers, for the whole batch and
// (two-batch overlap) each half. Built once per plan; the replay and the GPU
// backend read the same maps, so both place every row alike.
#pragma once

#include <optional>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/model/parallel_config.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/plan/rows.h"

namespace seam {

/// The rows of one lane of a plan: the batch (lane 0) or, in a two-batch
/// overlap plan, one half (lanes 1 and 2 = Half::kA, Half::kB; tbo.h), its
/// tokens numbered as in the batch.
struct LaneRows {
  /// The rows of `batch` (the case's, or a TBO half's) under the padding, CP
  /// layout and local split given: a plan's fields (laneRowsOf(plan)), or the
  /// judges' geometry of the case (the ledger). `first_tokens`: the token id
  /// of each DP shard's first row (nullptr: the batch's own numbering), as
  /// RowMap takes it.
  LaneRows(const Topology& topo, const Case& c, DpPadding padding, CpLayout cp_layout,
           LocalSplit local_split, AttentionPad pad, const Batch& batch,
           const std::vector<int>* first_tokens);

  RowMap rows;        ///< every layout, full rows in the plan's padding mode
  RowMap other_rows;  ///< full rows in the other mode (a plan may read either)
  DpLayouts dp;       ///< the DP buffers of both padding modes (the lowering's geometry)

  /// The row map whose full rows are in padding `mode`.
  const RowMap& fullMap(DpPadding mode) const { return mode == rows.padding() ? rows : other_rows; }
  /// The padding mode a full-rows op of `count` rows on `rank` assumes (its
  /// row count says it, the plan's mode first); nullopt when `count` is
  /// neither mode's size.
  std::optional<DpPadding> modeOfCount(int count, int rank) const {
    if (count == rows.count(RowKind::kFull, rank)) return rows.padding();
    if (count == other_rows.count(RowKind::kFull, rank)) return other_rows.padding();
    return std::nullopt;
  }
};

/// The lanes of `plan`: the batch, then, when the plan splits it
/// (plan.tbo_split set), its halves A and B.
std::vector<LaneRows> laneRowsOf(const Plan& plan, const Topology& topo);
/// The lanes of case `c` under the given padding, CP layout, local split,
/// attention rows and TBO split (empty: the batch runs whole).
std::vector<LaneRows> laneRowsOf(const Case& c, DpPadding padding, CpLayout cp_layout,
                                 LocalSplit local_split, AttentionPad pad,
                                 const std::vector<int>& tbo_split, const Topology& topo);

/// The DP buffers of one lane of `plan` (Half::kWhole: the batch), in the
/// plan's attention rows (plan.attention_pad): the geometry the planner
/// lowered its DP ops on, for readers that lower one op at a time (the plan
/// view, the DP-fault mutant) without building every row map.
DpLayouts dpLayoutsOf(const Plan& plan, Half half);

/// Where a TBO half's attention rows lie inside the batch's on one rank:
/// child A takes rows [0, split) of the shard's (padded) attention rows, B
/// the rest; each is then zero-padded to its own rows, tbo_padded_len
/// (_model_forward_filter_inputs), and the merge copies back only the rows
/// it took (_model_forward_tbo_merge_outputs).
struct HalfRows {
  int offset = 0;  ///< first row the half takes from the batch's attention rows
  int taken = 0;   ///< rows it takes (and merges back)
  int count = 0;   ///< the half's attention rows (taken, then zero padding)
  int total = 0;   ///< the batch's attention rows
};
/// `half` kWhole (or a plan without halves): the batch's rows, offset 0.
HalfRows halfRows(const std::vector<LaneRows>& lanes, int rank, Half half);

}  // namespace seam
