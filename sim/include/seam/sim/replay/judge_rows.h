// The judges' own process groups and row contents (which token sits in which
// row of every layout on every rank), derived from the Case by code that
// shares nothing with the planner's Topology, groupMembers, RowMap,
// RowCounts, cpShardTokens or tboHalfBatch. The ledger (and every replay
// domain) places rows and forms groups with these, so a fault in the
// planner's copies that keeps every row count (tokens permuted inside a
// layout, a group's members reordered) no longer moves the judge with it.
//
// Written from the engine's rules as docs/modelling/sglang.md cites them,
// and on purpose differently from the planner's code: a rank is described by
// its coordinates in the two factorisations of its TP block
// (initialize_model_parallel: attention dp x cp x tp, MoE dp x ep x tp), a
// group is the ranks that agree on every coordinate but one; a CP shard is
// the tokens its owner rule gives the rank (interleave: t mod cp; zigzag: the
// 2cp blocks folded onto cp ranks), padded to pad_logical_token_to_physical.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/model/parallel_config.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/lane_rows.h"
#include "seam/sim/plan/rows.h"
#include "seam/sim/replay/judge_dp.h"
#include "seam/sim/replay/judge_geometry.h"

namespace seam {

/// The process groups of a valid config, as the judges derive them.
class JudgeGroups {
 public:
  explicit JudgeGroups(const ParallelConfig& config);

  const ParallelConfig& config() const { return config_; }
  int world() const { return config_.world(); }
  /// The ranks of `rank`'s group on `axis`, ordered by their coordinate on it.
  const std::vector<int>& groupOf(Axis axis, int rank) const {
    const Axes& a = axes_[static_cast<int>(axis)];
    return a.groups[a.group[rank]];
  }
  int groupSize(Axis axis) const { return static_cast<int>(groupOf(axis, 0).size()); }
  /// `rank`'s coordinate on `axis` (its position in groupOf).
  int rankIn(Axis axis, int rank) const { return axes_[static_cast<int>(axis)].coord[rank]; }
  /// The communicator of a collective on `axis` at `rank`: axis *
  /// kCommunicatorStride + the group's index (groups numbered by their lowest
  /// rank). SGLang hands every axis whose group is the whole TP group (but pp
  /// and attn_dp) the TP group object, so those share the TP axis's id.
  int communicator(Axis axis, int rank) const;
  static constexpr int kCommunicatorStride = 1'000'000;

 private:
  struct Axes {
    std::vector<std::vector<int>> groups;  // in the order of their lowest rank
    std::vector<int> group, coord;         // [rank]
  };
  ParallelConfig config_;
  std::array<Axes, kAxisCount> axes_;
};

/// The tokens of every rank in every layout for one batch (the case's, or a
/// two-batch-overlap half's), full rows in one padding mode. Token ids are
/// global over the DP shards of a TP group; kPaddingRow marks a padding row.
class JudgeTokens {
 public:
  /// `shard_tokens`: the tokens of each DP shard in this batch; `first_id`:
  /// the id of each DP shard's first token (a TBO half keeps the batch's ids);
  /// `held`: each shard's attention rows where fixed (a TBO child's), else empty.
  JudgeTokens(const JudgeGroups& groups, const std::vector<int>& shard_tokens,
              const std::vector<int>& first_id, DpPadding padding, CpLayout cp, LocalSplit split,
              AttentionPad pad, const std::vector<int>& held = {});

  const std::vector<int>& tokens(RowKind kind, int rank) const {
    const int k = static_cast<int>(kind);
    return rows_[k][list_of_[k][rank]];
  }
  int count(RowKind kind, int rank) const { return static_cast<int>(tokens(kind, rank).size()); }
  int shardTokens(int rank) const { return count(RowKind::kAttention, rank); }
  int totalTokens() const { return total_; }
  DpPadding padding() const { return padding_; }
  LocalSplit localSplit() const { return split_; }
  /// First row of DP shard `d` in the DP buffer.
  int fullSlot(int d) const { return slot_[d]; }
  /// First row of the rank's local rows inside its attention rows (padded).
  int localOffset(int rank) const { return local_start_[rank]; }
  /// Whether the rank's attention rows are a CP shard of its DP shard.
  bool cpSharded(int rank) const { return !seq_at_[seq_of_[rank]].empty(); }
  /// The row of the rank's cp_gathered rows holding sequence row `i`.
  int gatheredRowOfSequence(int rank, int i) const { return seq_at_[seq_of_[rank]][i]; }

 private:
  /// The dispatched rows: an EP group's members' local rows, one list per group.
  void shareDispatched(const JudgeGroups& groups);
  // rows_[kind][list_of_[kind][rank]]: ranks whose rows are the same list
  // (every rank's DP buffer, an EP group's dispatched rows, the sequence,
  // gathered and attention rows of the ranks of one DP shard) share one, so
  // a case holds them once, not once per rank (world x world tokens at world
  // 128, and a DP shard's whole sequence on each of its ranks under CP).
  std::vector<std::vector<int>> rows_[kRowKindCount];
  std::vector<int> list_of_[kRowKindCount];
  // seq_at_[seq_of_[rank]][sequence row]: empty where not CP-sharded.
  std::vector<std::vector<int>> seq_at_;
  std::vector<int> seq_of_;
  std::vector<int> slot_, local_start_;
  int total_ = 0;
  DpPadding padding_;
  LocalSplit split_;
};

/// One lane of a replay (the batch, or a TBO half): its tokens in both
/// padding modes (a plan may read either) and the DP buffers the lowering uses.
struct JudgeLane {
  JudgeLane(const Case& c, const JudgeGroups& groups, const std::vector<int>& shard_tokens,
            const std::vector<int>& first_id, DpPadding padding, CpLayout cp, LocalSplit split,
            AttentionPad pad, const std::vector<int>& held = {});
  JudgeTokens rows;
  JudgeTokens other_rows;
  JudgeDpBuffer dp_plan;   ///< the DP buffer in rows' padding mode
  JudgeDpBuffer dp_other;  ///< in the other mode

  /// The DP buffer of `full_rows` rows (rows' mode first); nullptr when neither has.
  const JudgeDpBuffer* dpOfFullRows(int full_rows) const;

  const JudgeTokens& fullMap(DpPadding mode) const {
    return mode == rows.padding() ? rows : other_rows;
  }
  /// The padding mode whose full rows on `rank` number `count` (the lane's first).
  std::optional<DpPadding> modeOfCount(int count, int rank) const {
    if (count == rows.count(RowKind::kFull, rank)) return rows.padding();
    if (count == other_rows.count(RowKind::kFull, rank)) return other_rows.padding();
    return std::nullopt;
  }
};

/// The lanes of case `c` under the judges' geometry `g`: the batch, then,
/// when `split` is not empty (the batch runs split at these tokens per DP
/// shard), half A (the first split[d] tokens of shard d) and half B, each
/// on its g.tbo_rows when the split is g's.
std::vector<JudgeLane> judgeLanes(const Case& c, const JudgeGroups& groups, const JudgeGeometry& g,
                                  const std::vector<int>& split);

/// Where a half's attention rows lie inside the batch's on `rank` (HalfRows
/// of lane_rows.h, a plain record); `half` kWhole or lanes without halves:
/// the batch's rows, offset 0.
HalfRows judgeHalfRows(const std::vector<JudgeLane>& lanes, int rank, Half half);

}  // namespace seam
