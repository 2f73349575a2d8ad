// The judges that read a plan's ops against the case itself, not against the
// plan's own declarations: requested captures (property 6), call sizes
// (property 8), the plan's geometry (property 9), one residual add per stage
// (property 3) and the row hand-off of every boundary as the ops make it
// (property 1). Geometry comes from judge_geometry.h, never from the planner.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "op_violation.h"
#include "seam/properties/check.h"
#include "static_judges.h"

namespace seam::properties {

namespace {

int ppRankOf(const Plan& plan, int rank) { return rank / plan.source.config.tp; }

}  // namespace

std::vector<Violation> checkRequestedSnapshots(const Plan& plan, const JudgeGeometry& g) {
  return checkRequestedSnapshots(plan, g, SameOps(plan));
}

std::vector<Violation> checkRequestedSnapshots(const Plan& plan, const JudgeGeometry& g,
                                               const SameOps& same) {
  std::vector<Violation> out;
  std::vector<int> wanted = plan.source.flags.capture;
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  for (int r = 0; r < plan.world() && out.empty(); ++r) {
    // A rank of the same pipeline stage as the passed rank before, with its ops, passes too.
    if (same.asBefore(r) && ppRankOf(plan, r) == ppRankOf(plan, r - 1)) continue;
    const auto& ops = plan.ranks[r];
    std::map<int, int> first;  // requested stage -> index of its snapshot op
    for (int i = 0; i < static_cast<int>(ops.size()) && out.empty(); ++i) {
      const Op& op = ops[i];
      if (op.kind != OpKind::kSnapshot) continue;
      const bool requested = op.stack == 0 && op.phase == Phase::kEntry &&
                             std::binary_search(wanted.begin(), wanted.end(), op.stage);
      if (!requested) {
        out.push_back(
            opViolation(plan, r, i, Property::kSnapshots, ViolationClass::kMissingSnapshot,
                        "a snapshot at stack " + std::to_string(op.stack) + " stage " +
                            std::to_string(op.stage) + " " + std::string(phaseName(op.phase)) +
                            ", where the case requests no capture"));
      } else if (!first.emplace(op.stage, i).second) {
        out.push_back(opViolation(plan, r, i, Property::kSnapshots, ViolationClass::kCountedTwice,
                                  "a second snapshot before stage " + std::to_string(op.stage) +
                                      ": each requested capture yields exactly one"));
      }
    }
    for (int s : wanted) {
      if (!out.empty()) break;
      const int si = s < static_cast<int>(g.stages.size()) ? s : -1;
      if (si < 0 || g.stages[si].stack != 0) continue;  // validateCase refuses these
      if (g.stages[si].pp_rank != ppRankOf(plan, r) || first.count(s)) continue;
      Violation v = opViolation(plan, r, -1, Property::kSnapshots, ViolationClass::kMissingSnapshot,
                                "the case requests a capture before stage " + std::to_string(s) +
                                    " but rank " + std::to_string(r) + " takes no snapshot there");
      v.stage = v.layer = s;
      out.push_back(std::move(v));
    }
  }
  return out;
}

namespace {

/// The rows a collective (or local op) moves on `rank`, as the engine's call
/// sizes its buffer: the gathered output, the reduce-scattered input, the
/// dispatched rows of an all-to-all; LayerNorm SP's collectives move attn_tp
/// equal padded chunks (its group is the whole attention-TP group).
int callRows(const Plan& plan, const Op& op, const JudgeGeometry& g, int rank) {
  const Half lane = op.half;
  Half in_lane = lane, out_lane = lane;
  if (op.tbo_move) (op.kind == OpKind::kSlice ? in_lane : out_lane) = Half::kWhole;
  if (op.kind == OpKind::kAllToAll) return g.count(RowKind::kDispatched, rank, lane);
  const bool local_side = op.rows_in.kind == RowKind::kLocal || op.rows_out.kind == RowKind::kLocal;
  if (g.local_split == LocalSplit::kPaddedEqual && local_side &&
      (op.kind == OpKind::kAllGather || op.kind == OpKind::kReduceScatter)) {
    const ParallelConfig& k = plan.source.config;
    return k.tp / (k.attn_dp * k.attn_cp) * g.count(RowKind::kLocal, rank, lane);
  }
  return std::max(g.count(op.rows_in.kind, rank, in_lane),
                  g.count(op.rows_out.kind, rank, out_lane));
}

/// Whether the judges give `rank` (> 0) every row count the rank before has,
/// in every lane: what checkCallSizes reads of a rank besides its ops.
bool sameRowsAsBefore(const JudgeGeometry& g, int rank) {
  const auto r = static_cast<size_t>(rank);
  for (const JudgeRows& lane : g.rows) {
    if (lane.count.size() > r && lane.count[r] != lane.count[r - 1]) return false;
    if (lane.dp_local.size() > r && lane.dp_local[r] != lane.dp_local[r - 1]) return false;
  }
  return true;
}

}  // namespace

std::vector<Violation> checkCallSizes(const Plan& plan, const JudgeGeometry& g) {
  return checkCallSizes(plan, g, SameOps(plan));
}

std::vector<Violation> checkCallSizes(const Plan& plan, const JudgeGeometry& g,
                                      const SameOps& same) {
  std::vector<Violation> out;
  const KindFacts& kinds = kindFacts();
  const bool halves = !g.tbo_split.empty();
  for (int r = 0; r < plan.world(); ++r) {
    // The passed rank before's ops on the same rows in every lane pass too.
    if (same.asBefore(r) && sameRowsAsBefore(g, r)) continue;
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      if (op.half != Half::kWhole && !halves) continue;  // plan-geometry reports the split
      Half in_lane = op.half, out_lane = op.half;
      if (op.tbo_move) (op.kind == OpKind::kSlice ? in_lane : out_lane) = Half::kWhole;
      const int in = g.count(op.rows_in.kind, r, in_lane);
      // A reduce_scatterv from the DP buffer is the DP return: it writes the
      // rank's local DP buffer, its split size (tokens, then padding).
      const bool dp_return = op.kind == OpKind::kReduceScatterv &&
                             op.rows_in.kind == RowKind::kFull &&
                             op.rows_out.kind == RowKind::kAttention;
      const int outr = dp_return ? g.dpLocal(r, out_lane) : g.count(op.rows_out.kind, r, out_lane);
      std::string what;
      if (op.rows_in.count != in) {
        what = "reads " + std::to_string(op.rows_in.count) + " " +
               std::string(rowKindName(op.rows_in.kind)) + " rows where the case gives rank " +
               std::to_string(r) + " " + std::to_string(in);
      } else if (op.rows_out.count != outr) {
        what = "writes " + std::to_string(op.rows_out.count) + " " +
               std::string(rowKindName(op.rows_out.kind)) + " rows where the case gives rank " +
               std::to_string(r) + " " + std::to_string(outr);
      } else if (kinds.communicating(op.kind)) {
        const std::int64_t want = static_cast<std::int64_t>(callRows(plan, op, g, r)) * g.row_bytes;
        if (op.bytes != want) {
          what = "moves " + std::to_string(op.bytes) + " bytes where its rows, the hidden size " +
                 std::to_string(g.row_bytes / 2) + " and bf16 give " + std::to_string(want);
        }
      }
      if (what.empty()) continue;
      out.push_back(opViolation(plan, r, i, Property::kCallSizes, ViolationClass::kWrongSize,
                                std::string(opName(op.kind)) + " " + what));
      return out;
    }
  }
  return out;
}

std::vector<Violation> checkPlanGeometry(const Plan& plan, const JudgeGeometry& g) {
  std::vector<Violation> out;
  for (const GeometryDisagreement& d : planGeometryDisagreements(plan, g)) {
    Violation v;
    v.property = Property::kPlanGeometry;
    v.cls = ViolationClass::kGeometryDisagrees;
    v.detail = "plan field " + d.field + ": " + d.detail;
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

/// How an op adds the residual stream and the hidden state: absorbing the
/// incoming hidden state into the residual (residual += h, add_norm, the fused
/// all-reduce + add + norm), or folding the residual into the hidden state
/// (h += residual; residual := None, as an a2a MoE's exit and the
/// input-scattered FFN input do). A branch's fork or merge, a legacy
/// snapshot's add and a TBO merge are neither.
enum class ResidualAdd { kNone, kAbsorb, kFold };
ResidualAdd residualAddOf(const Op& op) {
  if (op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm) return ResidualAdd::kAbsorb;
  if (op.kind != OpKind::kAdd || op.tbo_move) return ResidualAdd::kNone;
  if (op.tensor == Tensor::kResidual) return ResidualAdd::kAbsorb;
  return op.tensor == Tensor::kHidden ? ResidualAdd::kFold : ResidualAdd::kNone;
}

}  // namespace

std::vector<Violation> checkResidualOnce(const Plan& plan) {
  return checkResidualOnce(plan, SameOps(plan));
}

std::vector<Violation> checkResidualOnce(const Plan& plan, const SameOps& same) {
  std::vector<Violation> out;
  // Per rank, every add as (key, op index), key = (stack, stage, half, absorb
  // or fold); sorted, equal keys sit together in op order, so the earliest
  // second add of a key is found without a map node per add.
  std::vector<std::pair<std::uint64_t, int>> adds;
  for (int r = 0; r < plan.world(); ++r) {
    if (same.asBefore(r)) continue;  // the passed rank before's ops
    const auto& ops = plan.ranks[r];
    adds.clear();
    bool zeroed[kHalfLanes] = {false, false, false};
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      bool& zero = zeroed[static_cast<int>(op.half)];
      if (op.kind == OpKind::kZeroFill && op.tensor == Tensor::kHidden) zero = true;
      const ResidualAdd how = residualAddOf(op);
      if (how == ResidualAdd::kNone) continue;
      if (how == ResidualAdd::kAbsorb && zero) {
        // Legacy's zero update: the FFN folded its complete input into the
        // residual, zeroed the hidden state and all-reduces the zeros into it.
        zero = false;
        continue;
      }
      const std::uint64_t key = std::uint64_t{op.stack} << 32 |
                                std::uint64_t{static_cast<std::uint16_t>(op.stage)} << 16 |
                                static_cast<std::uint64_t>(op.half) << 8 |
                                static_cast<std::uint64_t>(how);
      adds.emplace_back(key, i);
    }
    std::sort(adds.begin(), adds.end());
    int second = -1, first = -1;  // the earliest repeated add and the add it repeats
    for (size_t k = 1; k < adds.size(); ++k) {
      if (adds[k].first != adds[k - 1].first) continue;
      const bool repeat_of_first = k < 2 || adds[k - 2].first != adds[k].first;
      if (repeat_of_first && (second < 0 || adds[k].second < second)) {
        second = adds[k].second;
        first = adds[k - 1].second;
      }
    }
    if (second < 0) continue;
    const Op& op = ops[second];
    const char* what = residualAddOf(op) == ResidualAdd::kAbsorb
                           ? "adds the hidden state into the residual"
                           : "adds the residual into the hidden state";
    out.push_back(opViolation(
        plan, r, second, Property::kResidualFollows, ViolationClass::kCountedTwice,
        std::string(opName(op.kind)) + " " + what + " a second time at stage " +
            std::to_string(op.stage) + " (first by " + std::string(opName(ops[first].kind)) +
            ", op #" + std::to_string(first) + "): the residual is added exactly once per stage"));
    return out;
  }
  return out;
}

std::vector<Violation> checkOpBoundaries(const Plan& plan) {
  return checkOpBoundaries(plan, SameOps(plan));
}

std::vector<Violation> checkOpBoundaries(const Plan& plan, const SameOps& same) {
  std::vector<Violation> out;
  for (int r = 0; r < plan.world(); ++r) {
    if (same.asBefore(r)) continue;  // the passed rank before's ops
    const auto& ops = plan.ranks[r];
    int prev[kHalfLanes] = {-1, -1, -1};  // the last op on the hidden state, per half
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      if (op.tensor != Tensor::kHidden || op.tbo_move) continue;
      if (op.rows_in.kind == RowKind::kNone && op.rows_out.kind == RowKind::kNone) continue;
      int& p = prev[static_cast<int>(op.half)];
      const int before = p;
      p = i;
      if (before < 0) continue;
      const Op& last = ops[before];
      // A boundary: the hidden state leaves one stage and enters the next.
      if (last.stack != op.stack || last.stage == op.stage) continue;
      // An add on the hidden state keeps its rows; its rows_in name the
      // residual's (the input-scattered FFN input adds a local residual slice).
      const RowKind reads = op.kind == OpKind::kAdd ? op.rows_out.kind : op.rows_in.kind;
      if (last.rows_out.kind == reads || reads == RowKind::kNone) continue;
      out.push_back(opViolation(
          plan, r, i, Property::kBoundariesAgree, ViolationClass::kBoundaryDisagrees,
          "boundary " + std::to_string(last.stage) + " -> " + std::to_string(op.stage) +
              " as the ops make it: stage " + std::to_string(last.stage) + " hands on " +
              std::string(rowKindName(last.rows_out.kind)) + " rows (" +
              std::string(opName(last.kind)) + ", op #" + std::to_string(before) + ") but stage " +
              std::to_string(op.stage) + " reads " + std::string(rowKindName(reads)) + " rows"));
      return out;
    }
  }
  return out;
}

}  // namespace seam::properties
