// The parallel configuration of a serving deployment (DESIGN §2.1) and the
// process groups SGLang builds from it (reference: serving-boundaries.md §2).
// Every planner, executor and property asks Topology which ranks form a group.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/base/status.h"

namespace seam {

/// The leaves of a configuration. Derived sizes are computed, never stored,
/// so a config cannot disagree with itself.
struct ParallelConfig {
  int pp = 1;       ///< pipeline stages; world = pp * tp
  int tp = 1;       ///< ranks per pipeline stage (SGLang's tp_size)
  int attn_dp = 1;  ///< attention data parallel (1 unless DP attention is on)
  int attn_cp = 1;  ///< attention context parallel
  int moe_ep = 1;   ///< MoE expert parallel
  int moe_dp = 1;   ///< MoE data parallel

  int world() const { return pp * tp; }
  /// attn_tp = tp / (attn_dp * attn_cp); meaningful only for a valid config.
  int attnTp() const { return tp / (attn_dp * attn_cp); }
  /// moe_tp = tp / (moe_ep * moe_dp); meaningful only for a valid config.
  int moeTp() const { return tp / (moe_ep * moe_dp); }
  bool dpAttention() const { return attn_dp > 1; }

  /// "pp=1 tp=8 attn_dp=2 attn_cp=1 moe_ep=1 moe_dp=1"
  std::string describe() const;

  friend bool operator==(const ParallelConfig&, const ParallelConfig&) = default;
};

/// Checks the divisibility rules of SGLang's initialize_model_parallel and
/// derive_attn_tp_size; the message names the offending values, e.g.
/// "attn_dp*attn_cp=6 does not divide tp=4".
Status validate(const ParallelConfig& config);

/// The moe_dp asserts of ServerArgs._handle_context_parallelism
/// (server_args.py @001067fffe33), at start-up, for every model and batch:
/// a MoE data-parallel group wider than 1 must be the attention-CP group
/// itself (attn_cp == moe_dp), without PP, and with an EP group it must tile
/// the TP group (moe_ep * moe_dp == tp). Status::refused with the engine's
/// message, else ok. (So parallel_state's MoE-CP alias, _MOE_DP = _ATTN_CP
/// when attn_cp > moe_dp, is reached only with moe_dp = 1.)
Status serverArgsMoeDp(const ParallelConfig& config);

/// The process-group axes. kMoeDp is the MoE-CP group (the attn_cp group)
/// whenever attn_cp > moe_dp, exactly as SGLang aliases it.
enum class Axis : std::uint8_t { kTp, kAttnTp, kAttnCp, kAttnDp, kMoeEp, kMoeTp, kMoeDp, kPp };
inline constexpr int kAxisCount = 8;
inline constexpr std::array<Axis, kAxisCount> kAllAxes = {
    Axis::kTp,    Axis::kAttnTp, Axis::kAttnCp, Axis::kAttnDp,
    Axis::kMoeEp, Axis::kMoeTp,  Axis::kMoeDp,  Axis::kPp};

/// The axis name used in plans and JSON (`attn_tp`, `moe_ep`, ...).
std::string_view axisName(Axis axis);
/// Inverse of axisName; false when the name is not an axis.
bool parseAxis(std::string_view name, Axis* axis);

/// The group of `rank` on `axis`, ascending, computed directly from the
/// config (what Topology holds for every rank, without building it all).
std::vector<int> groupMembers(const ParallelConfig& config, Axis axis, int rank);
/// The size of every group on `axis`.
int groupSizeOf(const ParallelConfig& config, Axis axis);

/// All groups of every axis for one valid config, over the whole world.
/// Rank lists are ascending; every rank is in exactly one group per axis.
class Topology {
 public:
  /// `config` must be valid (validate() returned ok).
  explicit Topology(const ParallelConfig& config);

  const ParallelConfig& config() const { return config_; }
  int world() const { return config_.world(); }

  /// The groups of one axis, in the order of their lowest rank.
  const std::vector<std::vector<int>>& groups(Axis axis) const {
    return axes_[static_cast<int>(axis)].groups;
  }
  /// The group that `rank` belongs to on `axis`.
  const std::vector<int>& groupOf(Axis axis, int rank) const {
    const AxisGroups& a = axes_[static_cast<int>(axis)];
    return a.groups[a.group_of[rank]];
  }
  /// Index of groupOf(axis, rank) within groups(axis).
  int groupIndex(Axis axis, int rank) const { return axes_[static_cast<int>(axis)].group_of[rank]; }
  /// Position of `rank` inside its group on `axis` (its rank in that group).
  int rankIn(Axis axis, int rank) const { return axes_[static_cast<int>(axis)].rank_in[rank]; }
  int groupSize(Axis axis) const { return static_cast<int>(groups(axis).front().size()); }
  /// The axis whose group object a collective on `axis` uses: SGLang reuses
  /// the TP group object for every axis whose group is the whole TP group
  /// (attn_tp == tp, moe_ep == tp, ...); any other axis has its own.
  Axis communicatorAxis(Axis axis) const {
    if (axis != Axis::kPp && axis != Axis::kAttnDp && groupSize(axis) == config_.tp)
      return Axis::kTp;
    return axis;
  }
  /// The communicator a collective on `axis` uses at `rank`, as an id (the
  /// axes that share a group object share one id).
  int communicator(Axis axis, int rank) const {
    axis = communicatorAxis(axis);
    return static_cast<int>(axis) * kCommunicatorStride + groupIndex(axis, rank);
  }
  static constexpr int kCommunicatorStride = 1'000'000;

  /// Attention coordinates of a rank (reference §2, rank mapping).
  int attnTpRank(int rank) const { return rankIn(Axis::kAttnTp, rank); }
  int attnCpRank(int rank) const { return rankIn(Axis::kAttnCp, rank); }
  int attnDpRank(int rank) const { return rankIn(Axis::kAttnDp, rank); }
  int ppRank(int rank) const { return rankIn(Axis::kPp, rank); }

 private:
  struct AxisGroups {
    std::vector<std::vector<int>> groups;
    std::vector<int> group_of;
    std::vector<int> rank_in;
  };
  void set(Axis axis, std::vector<std::vector<int>> groups);

  ParallelConfig config_;
  std::array<AxisGroups, kAxisCount> axes_;
};

}  // namespace seam
