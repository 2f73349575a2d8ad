// The systematic plan operators: every op a predicate accepts is a site.
#include "site_mutants.h"

#include <cstdint>
#include <unordered_set>

namespace seam::mutants {

namespace {

/// The identity of an op across ranks: the fields that place it (stack,
/// stage, phase, kind, buffer, group, TBO half and move) and its occurrence
/// among equal ops of its rank, packed into one integer.
std::uint64_t slotKey(const Op& op, int occurrence) {
  std::uint64_t k = op.stack;
  k = (k << 16) | static_cast<std::uint16_t>(op.stage);
  k = (k << 2) | static_cast<std::uint64_t>(op.phase);
  k = (k << 5) | static_cast<std::uint64_t>(op.kind);
  k = (k << 2) | static_cast<std::uint64_t>(op.tensor);
  k = (k << 4) | static_cast<std::uint64_t>(op.axis + 1);
  k = (k << 2) | static_cast<std::uint64_t>(op.half);
  k = (k << 1) | static_cast<std::uint64_t>(op.tbo_move);
  return (k << 16) | static_cast<std::uint16_t>(occurrence);
}

bool sameSlot(const Op& a, const Op& b) { return slotKey(a, 0) == slotKey(b, 0); }

/// The occurrence of op `i` among the equal-slot ops before it on its rank.
int occurrenceOf(const std::vector<Op>& ops, int i) {
  int n = 0;
  for (int k = 0; k < i; ++k) n += sameSlot(ops[k], ops[i]);
  return n;
}

/// Index of the op of slot `key` on `ops` (-1 if absent).
int findSlot(const std::vector<Op>& ops, std::uint64_t key) {
  int seen_before = 0;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (slotKey(ops[i], 0) != (key & ~std::uint64_t{0xffff})) continue;
    if (static_cast<std::uint64_t>(seen_before++) == (key & 0xffff)) return i;
  }
  return -1;
}

struct SiteRef {
  std::uint64_t key = 0;
  int variant = 0;
};

/// The sites of `plan` in their fixed order; stops once site `wanted` is
/// known (-1: list them all).
template <class Variants>
std::vector<SiteRef> listSites(const Plan& plan, Variants variants, int wanted = -1) {
  std::vector<SiteRef> out;
  std::unordered_set<std::uint64_t> seen;
  const Topology topo(plan.source.config);
  for (int r = 0; r < plan.world(); ++r) {
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const int n = variants(topo, ops, i);
      if (n <= 0) continue;
      const std::uint64_t key = slotKey(ops[i], occurrenceOf(ops, i));
      if (!seen.insert(key).second) continue;
      for (int v = 0; v < n; ++v) out.push_back({key, v});
      if (wanted >= 0 && static_cast<int>(out.size()) > wanted) return out;
    }
  }
  return out;
}

bool isCollective(const Topology& topo, const Op& op) {
  return communicates(op.kind) && op.kind != OpKind::kSend && op.kind != OpKind::kRecv &&
         op.hasGroup() && topo.groupSize(op.groupAxis()) > 1;
}

bool isRegroupable(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
    case OpKind::kArAddNorm:
    case OpKind::kReduceScatter:
    case OpKind::kReduceScatterv:
    case OpKind::kAllGather:
    case OpKind::kAllGatherv:
    case OpKind::kAllToAll:
      return true;
    default:
      return false;
  }
}

/// The axes a regroup of `op` may move it to: a group of another size, of
/// more than one rank (a group of one would be a dropped collective, which
/// DropCollectiveAt plants), pipeline groups aside.
std::vector<Axis> regroupTargets(const Topology& topo, const Op& op) {
  std::vector<Axis> out;
  if (!isRegroupable(op.kind) || !isCollective(topo, op)) return out;
  const int size = topo.groupSize(op.groupAxis());
  for (Axis a : kAllAxes) {
    if (a == Axis::kPp || topo.groupSize(a) <= 1 || topo.groupSize(a) == size) continue;
    out.push_back(a);
  }
  return out;
}

bool gathers(OpKind kind) { return kind == OpKind::kAllGather || kind == OpKind::kAllGatherv; }
bool reduceScatters(OpKind kind) {
  return kind == OpKind::kReduceScatter || kind == OpKind::kReduceScatterv;
}
/// The collectives whose reduction op the engine passes (a DP op's is its
/// lowering's, which a plan does not choose).
bool sums(OpKind kind) {
  return kind == OpKind::kAllReduce || kind == OpKind::kArAddNorm || reduceScatters(kind);
}

bool foldsResidual(const Op& op) {
  return !op.tbo_move &&
         (op.kind == OpKind::kAdd || op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm);
}

}  // namespace

int SiteMutant::sites(const Plan& plan) const {
  auto v = [this](const Topology& t, const std::vector<Op>& ops, int i) {
    return variants(t, ops, i);
  };
  return static_cast<int>(listSites(plan, v).size());
}

bool SiteMutant::applyAt(Plan& plan, int site) const {
  if (site < 0) return false;
  auto v = [this](const Topology& t, const std::vector<Op>& ops, int i) {
    return variants(t, ops, i);
  };
  const std::vector<SiteRef> list = listSites(plan, v, site);
  if (site >= static_cast<int>(list.size())) return false;
  const SiteRef s = list[site];
  const Topology topo(plan.source.config);
  bool any = false;
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findSlot(plan.ranks[r], s.key);
    if (i < 0) continue;
    edit(topo, plan.ranks[r], i, r, s.variant);
    any = true;
  }
  return any;
}

int DropCollectiveAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return isCollective(topo, ops[i]) ? 1 : 0;
}
void DropCollectiveAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  if (ops[i].kind == OpKind::kArAddNorm) {
    ops[i].kind = OpKind::kAddNorm;  // the fused kernel without its all-reduce
    ops[i].axis = kNoAxis;
  } else {
    ops.erase(ops.begin() + i);
  }
}

int DuplicateCollectiveAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return isCollective(topo, ops[i]) ? 1 : 0;
}
void DuplicateCollectiveAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  Op extra = ops[i];
  if (extra.kind == OpKind::kArAddNorm) {
    extra.kind = OpKind::kAllReduce;  // the producer also reduces before the fused kernel
    ops.insert(ops.begin() + i, extra);
  } else {
    ops.insert(ops.begin() + i + 1, extra);
  }
}

int SwapWithNextAt::variants(const Topology&, const std::vector<Op>& ops, int i) const {
  const int n = static_cast<int>(ops.size());
  return i + 1 < n && ops[i].tensor == ops[i + 1].tensor && !(ops[i] == ops[i + 1]) ? 1 : 0;
}
void SwapWithNextAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  if (i + 1 < static_cast<int>(ops.size())) std::swap(ops[i], ops[i + 1]);
}

int RegroupAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return static_cast<int>(regroupTargets(topo, ops[i]).size());
}
void RegroupAt::edit(const Topology& topo, std::vector<Op>& ops, int i, int, int variant) const {
  const std::vector<Axis> targets = regroupTargets(topo, ops[i]);
  if (variant < static_cast<int>(targets.size()))
    ops[i].axis = static_cast<std::int8_t>(targets[variant]);
}

int RowsOffByOneAt::variants(const Topology&, const std::vector<Op>& ops, int i) const {
  return (ops[i].rows_in.kind != RowKind::kNone) + (ops[i].rows_out.kind != RowKind::kNone);
}
void RowsOffByOneAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int variant) const {
  // Variant 0 is the first layout the op has (what it reads, else what it writes).
  const bool reads = ops[i].rows_in.kind != RowKind::kNone;
  Rows& rows = variant == 0 && reads ? ops[i].rows_in : ops[i].rows_out;
  if (rows.kind != RowKind::kNone) ++rows.count;
}

int BytesDoubledAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return isCollective(topo, ops[i]) && ops[i].bytes > 0 ? 1 : 0;
}
void BytesDoubledAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  ops[i].bytes *= 2;
}

int SliceOtherAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  const bool spread = topo.groupSize(Axis::kAttnTp) > 1 || topo.groupSize(Axis::kAttnCp) > 1;
  return ops[i].kind == OpKind::kSlice && !ops[i].tbo_move && spread ? 1 : 0;
}
void SliceOtherAt::edit(const Topology& topo, std::vector<Op>& ops, int i, int rank, int) const {
  // The replay reads slice_of as an attention-TP position, or a CP one when
  // the slice is over attention CP; the next position is wrong for either.
  const int tp = topo.groupSize(Axis::kAttnTp);
  const int cp = topo.groupSize(Axis::kAttnCp);
  const int own = tp > 1 ? topo.attnTpRank(rank) : topo.attnCpRank(rank);
  ops[i].slice_of = static_cast<std::int8_t>((own + 1) % (tp > 1 ? tp : cp));
}

int ResidualAddedTwiceAt::variants(const Topology&, const std::vector<Op>& ops, int i) const {
  return foldsResidual(ops[i]) ? 1 : 0;
}
void ResidualAddedTwiceAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  Op again = ops[i];
  if (again.kind == OpKind::kArAddNorm) {
    again.kind = OpKind::kAddNorm;
    again.axis = kNoAxis;
  }
  ops.insert(ops.begin() + i + 1, again);
}

int ResidualNotAddedAt::variants(const Topology&, const std::vector<Op>& ops, int i) const {
  return foldsResidual(ops[i]) ? 1 : 0;
}
void ResidualNotAddedAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  Op& op = ops[i];
  if (op.kind == OpKind::kAdd) {
    ops.erase(ops.begin() + i);
  } else if (op.kind == OpKind::kAddNorm) {
    op.kind = OpKind::kNorm;
  } else {
    // The fused kernel's all-reduce stays; only the norm follows it.
    Op norm = op;
    norm.kind = OpKind::kNorm;
    norm.axis = kNoAxis;
    op.kind = OpKind::kAllReduce;
    ops.insert(ops.begin() + i + 1, norm);
  }
}

int SnapshotDroppedAt::variants(const Topology&, const std::vector<Op>& ops, int i) const {
  return ops[i].kind == OpKind::kSnapshot ? 1 : 0;
}
void SnapshotDroppedAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  ops.erase(ops.begin() + i);
}

int SnapshotMovedAt::variants(const Topology&, const std::vector<Op>& ops, int i) const {
  if (ops[i].kind != OpKind::kSnapshot) return 0;
  return (i > 0) + (i + 1 < static_cast<int>(ops.size()));
}
void SnapshotMovedAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int variant) const {
  // Variant 0 is the earlier move where there is an op before it, else the later one.
  const int other = variant == 0 && i > 0 ? i - 1 : i + 1;
  if (other < static_cast<int>(ops.size())) std::swap(ops[i], ops[other]);
}

int GatherRankOrderAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return gathers(ops[i].kind) && isCollective(topo, ops[i]) ? 1 : 0;
}
void GatherRankOrderAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  ops[i].chunk_shift = 1;
}

int ReduceScatterOtherChunkAt::variants(const Topology& topo, const std::vector<Op>& ops,
                                        int i) const {
  return reduceScatters(ops[i].kind) && isCollective(topo, ops[i]) ? 1 : 0;
}
void ReduceScatterOtherChunkAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  ops[i].chunk_shift = 1;
}

int AllToAllOtherChunkAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return ops[i].kind == OpKind::kAllToAll && isCollective(topo, ops[i]) ? 1 : 0;
}
void AllToAllOtherChunkAt::edit(const Topology&, std::vector<Op>& ops, int i, int, int) const {
  ops[i].chunk_shift = 1;
}

int ReduceAveragedAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return sums(ops[i].kind) && isCollective(topo, ops[i]) ? 1 : 0;
}
void ReduceAveragedAt::edit(const Topology& topo, std::vector<Op>& ops, int i, int, int) const {
  ops[i].divide_by = static_cast<std::int16_t>(topo.groupSize(ops[i].groupAxis()));
}

int ReduceScaledTwiceAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return sums(ops[i].kind) && isCollective(topo, ops[i]) ? 1 : 0;
}
void ReduceScaledTwiceAt::edit(const Topology& topo, std::vector<Op>& ops, int i, int, int) const {
  const int n = topo.groupSize(ops[i].groupAxis());
  ops[i].divide_by = static_cast<std::int16_t>(n * n);
}

int RowsShrunkToChunkAt::variants(const Topology& topo, const std::vector<Op>& ops, int i) const {
  return isCollective(topo, ops[i]) && ops[i].bytes > 0 ? 1 : 0;
}
void RowsShrunkToChunkAt::edit(const Topology& topo, std::vector<Op>& ops, int i, int, int) const {
  // What a call sized by a per-rank chunk instead of the whole buffer
  // passes: every count and the bytes over the group size, rounded up.
  const int n = topo.groupSize(ops[i].groupAxis());
  auto shrink = [n](auto v) { return (v + n - 1) / n; };
  ops[i].rows_in.count = shrink(ops[i].rows_in.count);
  ops[i].rows_out.count = shrink(ops[i].rows_out.count);
  ops[i].bytes = shrink(ops[i].bytes);
}

}  // namespace seam::mutants
