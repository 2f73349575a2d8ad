// Plan-level mutation operators: each edits a built plan the way a buggy
// planner would, consistently on every rank it concerns. A site is found on
// the first rank that has one, in op order, and edited on the ranks of that
// op's group (a planner bug is the same on every member).
#include "plan_mutants.h"

#include <algorithm>
#include <optional>
#include <type_traits>

#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/lane_rows.h"
#include "seam/sim/plan/tbo.h"

namespace seam::mutants {

namespace {

/// Does the op complete a sum (a reduction a policy relies on)?
bool completes(const Op& op) {
  switch (op.kind) {
    case OpKind::kAllReduce:
    case OpKind::kArAddNorm:
    case OpKind::kReduceScatter:
    case OpKind::kReduceScatterv:
    case OpKind::kDpReduceScatter:
    case OpKind::kDpGatherPartial:
      return true;
    default:
      return false;
  }
}

/// The position of a site: the op's identity (stack, stage, phase, kind,
/// tensor and its occurrence among equal ops of that stage) so the same op is
/// found on every member rank even when their programs differ in length.
struct Site {
  int rank = -1;
  int index = -1;
  Op op;
  int occurrence = 0;
};

bool sameSlot(const Op& a, const Op& b) {
  return a.stack == b.stack && a.stage == b.stage && a.phase == b.phase && a.kind == b.kind &&
         a.tensor == b.tensor && a.axis == b.axis && a.half == b.half && a.tbo_move == b.tbo_move;
}

template <class Pred>
std::optional<Site> firstSite(const Plan& plan, Pred pred) {
  for (int r = 0; r < plan.world(); ++r) {
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (!pred(ops[i], r)) continue;
      Site s{r, i, ops[i], 0};
      for (int k = 0; k < i; ++k) s.occurrence += sameSlot(ops[k], ops[i]);
      return s;
    }
  }
  return std::nullopt;
}

/// Index of the site's op on `rank` (-1 if absent).
int findOn(const Plan& plan, int rank, const Site& s) {
  const auto& ops = plan.ranks[rank];
  int seen = 0;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (!sameSlot(ops[i], s.op)) continue;
    if (seen++ == s.occurrence) return i;
  }
  return -1;
}

/// A planner bug is the same on every rank: edit the site wherever it occurs.
template <class Edit>
bool editEverywhere(Plan& plan, const Site& s, Edit edit) {
  bool any = false;
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOn(plan, r, s);
    if (i < 0) continue;
    if constexpr (std::is_invocable_v<Edit, std::vector<Op>&, int, int>) {
      edit(plan.ranks[r], i, r);
    } else {
      edit(plan.ranks[r], i);
    }
    any = true;
  }
  return any;
}

int axisSize(const Plan& plan, Axis axis) { return Topology(plan.source.config).groupSize(axis); }

}  // namespace

bool DropCompletingCollective::apply(Plan& plan) const {
  auto s = firstSite(
      plan, [&](const Op& op, int) { return completes(op) && axisSize(plan, op.groupAxis()) > 1; });
  if (!s) return false;
  return editEverywhere(plan, *s, [](std::vector<Op>& ops, int i) {
    if (ops[i].kind == OpKind::kArAddNorm) {
      ops[i].kind = OpKind::kAddNorm;  // the fused kernel without its all-reduce
      ops[i].axis = kNoAxis;
    } else {
      ops.erase(ops.begin() + i);
    }
  });
}

bool DuplicateCompletingCollective::apply(Plan& plan) const {
  auto s = firstSite(plan, [&](const Op& op, int) {
    return (op.kind == OpKind::kAllReduce || op.kind == OpKind::kArAddNorm) &&
           axisSize(plan, op.groupAxis()) > 1;
  });
  if (!s) return false;
  return editEverywhere(plan, *s, [](std::vector<Op>& ops, int i) {
    Op extra = ops[i];
    if (extra.kind == OpKind::kArAddNorm) {
      // The producer also reduces before the fused kernel.
      extra.kind = OpKind::kAllReduce;
      ops.insert(ops.begin() + i, extra);
    } else {
      ops.insert(ops.begin() + i + 1, extra);
    }
  });
}

bool RegroupReduction::apply(Plan& plan) const {
  auto s = firstSite(plan, [&](const Op& op, int) {
    return (op.kind == OpKind::kAllReduce || op.kind == OpKind::kArAddNorm) && op.hasGroup() &&
           op.groupAxis() == from_ && axisSize(plan, from_) > 1;
  });
  if (!s) return false;
  // Every rank that runs this reduction now runs it over the other group.
  return editEverywhere(plan, *s, [this](std::vector<Op>& ops, int i) {
    ops[i].axis = static_cast<std::int8_t>(to_);
  });
}

bool ReduceScatterWithoutGather::apply(Plan& plan) const {
  // The all-gather that brings local rows back to attention rows after a
  // reduce-scatter to local rows.
  auto s = firstSite(plan, [](const Op& op, int) {
    return (op.kind == OpKind::kAllGather || op.kind == OpKind::kAllGatherv) &&
           op.tensor == Tensor::kHidden && op.rows_in.kind == RowKind::kLocal;
  });
  if (!s) return false;
  return editEverywhere(plan, *s, [](std::vector<Op>& ops, int i) { ops.erase(ops.begin() + i); });
}

bool SliceIndexOffByOne::apply(Plan& plan) const {
  const Topology topo(plan.source.config);
  if (topo.groupSize(Axis::kAttnTp) < 2) return false;
  auto s = firstSite(plan, [](const Op& op, int) { return op.kind == OpKind::kSlice; });
  if (!s) return false;
  return editEverywhere(plan, *s, [&](std::vector<Op>& ops, int i, int r) {
    ops[i].slice_of =
        static_cast<std::int8_t>((topo.attnTpRank(r) + 1) % topo.groupSize(Axis::kAttnTp));
  });
}

bool ResidualNotSliced::apply(Plan& plan) const {
  auto s = firstSite(plan, [](const Op& op, int) {
    return op.kind == OpKind::kSlice && op.tensor == Tensor::kResidual;
  });
  if (!s) return false;
  return editEverywhere(plan, *s, [](std::vector<Op>& ops, int i) { ops.erase(ops.begin() + i); });
}

bool ResidualNotGathered::apply(Plan& plan) const {
  // The exit that folds the residual into the output before gathering it back
  // to attention rows; without it the residual never returns.
  auto s = firstSite(plan, [](const Op& op, int) {
    return op.kind == OpKind::kAdd && op.tensor == Tensor::kHidden && op.phase == Phase::kExit;
  });
  if (!s) return false;
  return editEverywhere(plan, *s, [](std::vector<Op>& ops, int i) { ops.erase(ops.begin() + i); });
}

bool PaddingModeMismatch::apply(Plan& plan) const {
  // The scatter back from full rows assumes the other padding mode's layout.
  if (plan.source.config.attn_dp < 2) return false;
  const Batch& b = plan.source.batch;
  const int max_rows = DpGeometry::globalRows(plan.source.config, b, DpPadding::kMaxLen);
  const int sum_rows = DpGeometry::globalRows(plan.source.config, b, DpPadding::kSumLen);
  if (max_rows == sum_rows) return false;  // the two modes coincide
  auto s = firstSite(plan, [](const Op& op, int) {
    return op.rows_in.kind == RowKind::kFull && op.rows_out.kind == RowKind::kAttention &&
           (op.kind == OpKind::kDpScatter || op.kind == OpKind::kDpReduceScatter ||
            op.kind == OpKind::kReduceScatterv);
  });
  if (!s) return false;
  const int other = plan.padding == DpPadding::kMaxLen ? sum_rows : max_rows;
  return editEverywhere(plan, *s,
                        [other](std::vector<Op>& ops, int i) { ops[i].rows_in.count = other; });
}

bool IdleRankSkipsCollective::apply(Plan& plan) const {
  const RowMap rows(Topology(plan.source.config), plan.source.batch, plan.padding);
  auto s = firstSite(plan, [&](const Op& op, int r) {
    return rows.shardTokens(r) == 0 && communicates(op.kind) && op.kind != OpKind::kSend &&
           op.kind != OpKind::kRecv && op.hasGroup() && axisSize(plan, op.groupAxis()) > 1;
  });
  if (!s) return false;
  plan.ranks[s->rank].erase(plan.ranks[s->rank].begin() + s->index);
  return true;
}

bool SwapCollectivesOnOneRank::apply(Plan& plan) const {
  // On the first rank with two consecutive collectives (no local op between
  // them that the second depends on), issue them in the other order.
  for (int r = 0; r < plan.world(); ++r) {
    auto& ops = plan.ranks[r];
    int prev = -1;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      const bool coll = communicates(op.kind) && op.kind != OpKind::kSend &&
                        op.kind != OpKind::kRecv && op.hasGroup() &&
                        axisSize(plan, op.groupAxis()) > 1;
      if (!coll) continue;
      if (prev >= 0 && !(ops[prev] == op)) {
        std::swap(ops[prev], ops[i]);
        return true;
      }
      prev = i;
    }
  }
  return false;
}

bool PlantDpFault::apply(Plan& plan) const {
  // A fault in dp_attention.py is in every call: plant it in every DP op of
  // every rank whose lowering it changes (elsewhere the op stays as it was,
  // so a case where it changes nothing is not a differing plan). A TBO
  // half's DP ops gather that half's batch.
  std::optional<DpLayouts> lanes[kHalfLanes];
  const std::int64_t row_bytes = activationRowBytes(plan.source.model.shape);
  bool any = false;
  for (int r = 0; r < plan.world(); ++r) {
    for (Op& op : plan.ranks[r]) {
      if (!isDpOp(op.kind)) continue;
      std::optional<DpLayouts>& layouts = lanes[static_cast<int>(op.half)];
      if (!layouts) layouts.emplace(dpLayoutsOf(plan, op.half));
      const DpGeometry* geometry = layouts->ofFullRows(dpFullRowsOf(op));
      if (geometry == nullptr) continue;
      Op faulty = op;
      faulty.dp_fault = fault_;
      if (lowerDpOp(faulty, plan.source.config, *geometry, r, row_bytes) ==
          lowerDpOp(op, plan.source.config, *geometry, r, row_bytes)) {
        continue;
      }
      op.dp_fault = fault_;
      any = true;
    }
  }
  return any;
}

namespace {

bool isCollectiveOn(const Plan& plan, const Op& op) {
  return communicates(op.kind) && op.kind != OpKind::kSend && op.kind != OpKind::kRecv &&
         op.hasGroup() && axisSize(plan, op.groupAxis()) > 1;
}

}  // namespace

bool TboHalvesSwappedOnOneRank::apply(Plan& plan) const {
  // On the first rank where a run of half A's ops is followed by a run of
  // half B's, both issuing a collective, B's run goes first: each half's own
  // order is kept, the interleaving (B4) is not.
  for (int r = 0; r < plan.world(); ++r) {
    auto& ops = plan.ranks[r];
    const int n = static_cast<int>(ops.size());
    for (int i = 0; i < n;) {
      int j = i;
      bool coll_a = false;
      while (j < n && ops[j].half == Half::kA) coll_a = isCollectiveOn(plan, ops[j++]) || coll_a;
      if (j == i) {
        ++i;
        continue;
      }
      int k = j;
      bool coll_b = false;
      while (k < n && ops[k].half == Half::kB) coll_b = isCollectiveOn(plan, ops[k++]) || coll_b;
      if (coll_a && coll_b) {
        std::rotate(ops.begin() + i, ops.begin() + j, ops.begin() + k);
        return true;
      }
      i = j;
    }
  }
  return false;
}

bool TboSplitSkipsResidual::apply(Plan& plan) const {
  auto s = firstSite(plan, [](const Op& op, int) {
    return op.tbo_move && op.kind == OpKind::kSlice && op.half == Half::kB &&
           op.tensor == Tensor::kResidual;
  });
  if (!s) return false;
  return editEverywhere(plan, *s, [](std::vector<Op>& ops, int i) { ops.erase(ops.begin() + i); });
}

bool TboMergeDropsHalf::apply(Plan& plan) const {
  auto s = firstSite(plan, [](const Op& op, int) {
    return op.tbo_move && op.kind == OpKind::kAdd && op.half == Half::kB &&
           op.tensor == Tensor::kHidden;
  });
  if (!s) return false;
  return editEverywhere(plan, *s, [](std::vector<Op>& ops, int i) { ops.erase(ops.begin() + i); });
}

}  // namespace seam::mutants
